"""What each array a kernel reads costs in each memory of a specification
(model/memory_spec.py): PORPLE's cost model, from the polyhedral access relations.

For every global read of an array, the warps of one block (the launch's block shape,
the kernel's own geometry) give each request's active lanes (analysis/warp_cost.py); an
affine subscript gives their byte offsets, and the memory's serialisation rule turns
them into transactions (sectors, distinct constant addresses, bank conflicts). A
subscript that is not affine (a lookup through data, `table[key[i]]`) has its lanes
drawn at random over the array's footprint (the bytes the kernel may read of it):
random keys are what a lookup table is read with. Where a trace of the kernel is given
(`polycoal place --trace`, dynamic/collect.py), such a reference's requests are the
traced ones instead: a subscript computed from the thread's index (`c[i / n]`, a hash)
shows its lanes' addresses as they are. Each request costs the memory's request cost plus its transactions at the
cached or uncached price (the footprint against the memory's cache), and each reference
makes `instances / active lanes per warp` requests per launch (its statement's dynamic
instances, analysis/counting.py; a size the launch does not fix taken as
NOMINAL_PARAMETER). A placement's cost is the sum over the array's
references, spread over the device's multiprocessors, plus the memory's cost to fill
it (a copy into constant memory) shared by the launches that reuse the copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from polycoal.analysis.counting import count_statement, with_values
from polycoal.analysis.warp_cost import lane_offsets, warp_lanes
from polycoal.model.isl_helpers import value_range
from polycoal.model.kernel_model import KernelModel
from polycoal.model.memory_spec import Memory
from polycoal.model.poly import Poly

DEFAULT_BLOCK = (256, 1, 1)
SAMPLE_WARPS = 8          # warps of block 0 priced per reference (the rest alike)
NOMINAL_PARAMETER = 1 << 16   # a size the launch does not fix (read at run time)


@dataclass(frozen=True)
class Reference:
    text: str
    line: int
    requests: float                        # warp requests per launch
    warps: tuple[tuple[int, ...], ...]     # sampled requests' lane byte offsets
    affine: bool
    instances: Poly | None = None          # its statement's instances, in the parameters
    lanes: float = 32.0                    # active lanes per live warp
    statement: str = ""
    trips: float = 1.0                     # its statement's trips per thread
    traced: bool = False                   # its warps' offsets come from a trace
    indexed: bool = True                   # its address depends on the thread (or data)

    def requests_at(self, values: dict[str, int]) -> float:
        """Warp requests per launch at these parameter values."""
        if self.instances is None:
            return self.requests
        try:
            return max(float(self.instances.value(values)), 0.0) / self.lanes
        except (ValueError, TypeError):
            return self.requests


@dataclass(frozen=True)
class ArrayReads:
    """The reads of one array in one kernel."""

    array: str
    element_type: str
    element_size: int
    references: tuple[Reference, ...]
    first: int | None          # lowest element read, when the launch's values fix it
    last: int | None           # highest
    written: bool              # the kernel also writes it
    # staging in shared memory: every read is A[gx + o], o in [low, high] (constants),
    # of a one-dimensional kernel: each block's reads lie in blockDim.x + high - low
    # elements from its first thread's gx + low; and the range read over the launch,
    # as isl values of the parameters (lowest, highest)
    halo: tuple[int, int] | None = None
    bounds: tuple | None = field(default=None, compare=False)
    # two-dimensional staging: every read is A[(gy + di) W + gx + dj] of a kernel of
    # threads (gx, gy), W a constant, gx + dj proven a column (0 <= gx + dj < W): `halo`
    # is then dj's range, `rows` (W, lowest di, highest di), and `shifts` each read's
    # ((line, column) of its reference, di, dj) in the text's order (di, dj: Polys of
    # the loops' counters by their source names, constants for fixed offsets)
    rows: tuple[int, int, int] | None = None
    shifts: tuple = ()
    # the parameters' values for which every gx + dj is a column (sizes the launch
    # gives: PolyBench's loop bounds `nj` against its row width NJ), checked at launch
    assumed: object = field(default=None, compare=False)

    @property
    def footprint(self) -> int | None:
        """Bytes from the first to the last element read (None: not known)."""
        if self.first is None or self.last is None:
            return None
        return (self.last - self.first + 1) * self.element_size

    @property
    def uniform(self) -> float:
        """The share of its requests whose active lanes all read one address (the
        broadcast constant memory serves in one pass)."""
        total = sum(r.requests for r in self.references)
        same = sum(r.requests * sum(len(set(w)) == 1 for w in r.warps) / max(len(r.warps), 1)
                   for r in self.references)
        return same / total if total else 0.0


def _element_range(model: KernelModel, uses) -> tuple[int | None, int | None, bool]:
    """(lowest, highest) element the affine reads `uses` [(statement, access)] touch at
    the launch's parameter values, or (None, None); and whether those are exact: every
    parameter's value known (else the range is the union over the values the unknown
    ones may take, which may run past what a launch reads)."""
    exact = True
    if not uses or any(a.flat is None or not a.flat.is_affine() for _, a in uses):
        return None, None, all(p in model.parameter_values for p in model.parameters)
    lo = hi = None
    for s, a in uses:
        values = value_range(model, [s], a.flat)
        values = with_values(model, values, dict(model.parameter_values)) \
            if values is not None else None
        if values is None or values.is_empty():
            continue
        # exact where the bounds do not depend on a size known only at run time
        exact = exact and all(bound.is_cst() for bound in (values.dim_min(0).coalesce(),
                                                           values.dim_max(0).coalesce()))
        values = values.project_out(isl.dim_type.param, 0, values.dim(isl.dim_type.param))
        low, high = values.dim_min_val(0), values.dim_max_val(0)
        if not (low.is_int() and high.is_int()):
            return None, None, exact
        low, high = int(low.to_python()), int(high.to_python())
        lo = low if lo is None else min(lo, low)
        hi = high if hi is None else max(hi, high)
    return lo, hi, exact


def _instances(model: KernelModel, s) -> tuple[float | None, Poly]:
    """The statement's dynamic instances per launch, its parameters unknown at the
    launch taken as NOMINAL_PARAMETER; and their formula in the parameters."""
    count = count_statement(model, s)
    if count.value is not None:
        return float(count.value), count.formula
    values = {p: model.parameter_values.get(p, NOMINAL_PARAMETER) for p in model.parameters}
    try:
        value = float(count.formula.value(values))
    except (ValueError, TypeError):
        return None, count.formula
    return (value if value > 0 else None), count.formula


def _halo(model: KernelModel, uses) -> tuple[tuple[int, int] | None, tuple | None]:
    """((low, high) of o over every read A[gx + o], the range read as isl values), or
    (None, None) where the reads are not so (see ArrayReads.halo)."""
    dims = model.thread_dims
    if len(dims) != 1 or dims[0].name != "gx" or dims[0].strided:
        return None, None
    offsets = _offsets(model, uses, Poly.var("gx"))
    if offsets is None:
        return None, None
    return (min(lo for lo, _ in offsets), max(hi for _, hi in offsets)), _bounds(model, uses)


def _offsets(model: KernelModel, uses, base: Poly) -> list[tuple[int, int]] | None:
    """The constant range [lo, hi] of o of each read A[base + o] (a loop may move o);
    None where a read is not so."""
    out = []
    for s, a in uses:
        if a.flat is None or not a.flat.is_affine() or \
                any(a.flat.coefficient(v) != base.coefficient(v) for v in base.variables):
            return None
        bounds = _constant_range(model, s, a.flat - base)
        if bounds is None:
            return None
        out.append(bounds)
    return out or None


def _bounds(model: KernelModel, uses) -> tuple:
    """The lowest and highest element the reads `uses` touch, as isl values of the
    parameters."""
    values = None
    for s, a in uses:
        image = value_range(model, [s], a.flat)
        values = image if values is None else values.union(image)
    values = values.coalesce()
    return values.dim_min(0).coalesce(), values.dim_max(0).coalesce()


def split_offset(offset: Poly, width: int) -> tuple[Poly, Poly] | None:
    """(row, column) parts of an offset o = row W + column: each integer coefficient
    (of a loop counter, and the constant) c = q W + r, r in [-W/2, W/2), gives q to the
    row and r to the column; None where o is not affine with integer coefficients."""
    if not offset.is_affine():
        return None
    row, column = Poly(), Poly()
    for monomial, c in offset.terms.items():
        if c.denominator != 1:
            return None
        q = (int(c) + width // 2) // width
        unit = Poly.var(monomial[0]) if monomial else Poly.const(1)
        row, column = row + unit * q, column + unit * (int(c) - q * width)
    return row, column


def _constant_range(model: KernelModel, s, value: Poly) -> tuple[int, int] | None:
    """The lowest and highest value of `value` over the statement's instances, where
    both are constants."""
    values = value_range(model, [s], value)
    if values is None or values.is_empty():
        return None
    lo, hi = values.dim_min(0).coalesce(), values.dim_max(0).coalesce()
    if not (lo.is_cst() and hi.is_cst()):      # a bound that moves with a parameter
        return None
    lo, hi = _constant(lo), _constant(hi)
    return None if lo is None or hi is None else (lo, hi)


def _rows(model: KernelModel, uses):
    """(halo, bounds, rows, shifts, assumed) of a kernel of threads (gx, gy) whose
    every read of the array is A[(gy + di) W + gx + dj] (ArrayReads.rows), else None.
    di and dj may move with loop counters within constant bounds (a filter's loops over
    its radius): each offset o = di W + dj is split by split_offset, and the split is
    the element's row and column only where gx + dj is a column of the row over the
    read's instances: isl gives the parameters' values for which it is (`assumed`,
    checked at each launch; none: the reads wrap into other rows, and the array is not
    staged). `shifts`: each read's ((line, column), di, dj), the parts in the loops'
    source names (the counters the kernel's text reads)."""
    dims = {d.name: d for d in model.thread_dims}
    if set(dims) != {"gx", "gy"} or any(d.strided for d in dims.values()):
        return None
    width = next((a.flat.coefficient("gy") for _, a in uses
                  if a.flat is not None and a.flat.is_affine()), None)
    if width is None or not width.is_constant() or int(width.constant()) < 2:
        return None
    w = int(width.constant())
    base = Poly.var("gx") + Poly.var("gy") * w
    shifts, assumed, rows, columns = [], None, [], []
    for s, a in uses:
        if a.flat is None or not a.flat.is_affine():
            return None
        counters = {loop.counter: loop for loop in s.loops}
        offset = a.flat - base
        parts = split_offset(offset, w)
        if parts is None or not offset.variables <= set(counters) or \
                any(counters[v].step != 1 for v in offset.variables):
            return None
        row, column = parts
        row_range = _constant_range(model, s, row)
        column_range = _constant_range(model, s, column)
        span = value_range(model, [s], Poly.var("gx") + column)
        if row_range is None or column_range is None or span is None:
            return None
        where = _within(span, 0, w - 1)
        assumed = where if assumed is None else assumed.intersect(where)
        if assumed.is_empty():
            return None
        rows.append(row_range)
        columns.append(column_range)
        names = {c: Poly.var(loop.source_name) for c, loop in counters.items()}
        shifts.append(((a.location.line, a.location.col), row.substitute(names),
                       column.substitute(names)))
    if not shifts:
        return None
    return (min(lo for lo, _ in columns), max(hi for _, hi in columns)), \
        _bounds(model, uses), (w, min(lo for lo, _ in rows), max(hi for _, hi in rows)), \
        tuple(sorted(shifts, key=lambda x: x[0])), assumed.coalesce()


def _within(values: isl.Set, low: int, high: int) -> isl.Set:
    """The values of the parameters for which every value of the one-dimensional set
    lies in [low, high]."""
    params = [values.get_dim_name(isl.dim_type.param, k)
              for k in range(values.dim(isl.dim_type.param))]
    outside = isl.Set(f"[{', '.join(params)}] -> {{ [x] : x < {low} or x > {high} }}")
    bad = values.intersect(outside.align_params(values.get_space())).params()
    return bad.complement()


def _constant(value: isl.PwAff) -> int | None:
    """The integer a constant piecewise value takes (None: not one integer)."""
    found = []
    value.foreach_piece(lambda _, aff: found.append(aff.get_constant_val()))
    if not found or any(not v.is_int() or v.to_python() != found[0].to_python()
                        for v in found):
        return None
    return int(found[0].to_python())


def _random_offsets(lanes: int, elements: int, size: int, seed: int) -> tuple[int, ...]:
    """`lanes` byte offsets drawn uniformly over `elements` elements (a fixed LCG: the
    same figure every run)."""
    state, out = seed * 2654435761 + 12345, []
    for _ in range(lanes):
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append((state >> 33) % max(elements, 1) * size)
    return tuple(out)


def array_reads(model: KernelModel, allocated: dict[str, int] | None = None,
                observed: dict[tuple[str, int], list[tuple[int, ...]]] | None = None
                ) -> dict[str, ArrayReads]:
    """The global reads of every array of the kernel, priced per request. `allocated`:
    the elements of an array's allocation where the host code tells them (the footprint
    of an array read only through data); `observed`: traced warp requests (their active
    lanes' byte offsets) of the references at (array, line), used for the references
    whose subscripts are not affine."""
    observed = observed or {}
    block = model.block_shape or DEFAULT_BLOCK
    allocated = allocated or {}
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    reads: dict[str, list] = {}
    for s, a in model.accesses():
        if a.kind == "read" and a.space == "global" and not a.member and not a.atomic:
            reads.setdefault(a.array, []).append((s, a))
    out = {}
    threads = {d.name for d in model.thread_dims}
    for array, uses in reads.items():
        first, last, exact = _element_range(model, uses)
        size = uses[0][1].element_size
        if not exact and first is not None:
            # a range over sizes known only at run time: bounded by the allocation the
            # launches pass (every element a launch reads lies in it), else unknown
            whole = allocated.get(array)
            first, last = (max(first, 0), min(last, whole - 1)) if whole else (None, None)
            if first is not None and first > last:
                first = last = None
        elements = (last - first + 1) if first is not None else allocated.get(array)
        if first is None and elements:        # the whole allocation the launches pass
            first, last = 0, elements - 1
        references = []
        for k, (s, a) in enumerate(uses):
            warps, trips = warp_lanes(model, s, block)
            count, formula = _instances(model, s)
            if not warps or not count:
                continue
            lanes = sum(len(w) for w in warps) / len(warps)
            sample = warps[:SAMPLE_WARPS]
            offsets = [lane_offsets(model, s, a, w) for w in sample]
            affine = all(o is not None for o in offsets)
            traced = not affine and bool(observed.get((array, a.location.line)))
            if traced:
                offsets = observed[(array, a.location.line)]
            elif not affine:
                if not elements:
                    offsets = [tuple(range(0, len(w) * 4096, 4096)) for w in sample]
                else:
                    offsets = [_random_offsets(len(w), elements, size, 31 * k + j)
                               for j, w in enumerate(sample)]
            indexed = a.flat is None or not a.flat.is_affine() or \
                bool(set(a.flat.variables) & threads)
            references.append(Reference(a.text, a.location.line, count / lanes,
                                        tuple(tuple(o) for o in offsets), affine, formula,
                                        lanes, s.name, max(trips, 1.0), traced, indexed))
        if references:
            halo, bounds = _halo(model, uses)
            rows = _rows(model, uses) if halo is None else None
            staging = (halo, bounds) if rows is None else rows
            out[array] = ArrayReads(array, uses[0][1].element_type, size, tuple(references),
                                    first, last, array in written, *staging)
    return out


@dataclass(frozen=True)
class Wait:
    """A statement in a loop that stores to global memory and reads `arrays`: while any
    of them is read from an ordered memory (the compiler not told it is distinct from the
    store's), each trip waits for the store (the memory specification's store_wait)."""

    statement: str
    arrays: frozenset[str]
    cost: float                    # per launch, per multiprocessor
    per_request: float             # the same per warp request (trip) of the statement
    instances: Poly | None
    lanes: float


def store_waits(model: KernelModel, reads: dict[str, ArrayReads], spec, distinct: set[str],
                values: dict[str, int] | None = None) -> list[Wait]:
    """The waits of the kernel's statements that store to global memory in a loop and
    read other arrays, where a placement can lift them (the loop stores to one array the
    compiler cannot tell apart from others, not two); `distinct`: arrays the compiler already knows distinct from every
    store (__restrict__ parameters, where the stored one is too); `values`: the
    parameters to price at (default: the launch's or nominal ones)."""
    out = []
    # the arrays each innermost loop stores to: two that may alias each other keep its
    # trips waiting whatever the reads (each store may change what the other loads)
    by_loop: dict = {}
    for s in model.statements:
        if s.loops:
            by_loop.setdefault(s.loops[-1].location, set()).update(
                a.array for a in s.accesses if a.kind == "write" and a.space == "global"
                and not a.atomic and a.array not in distinct)
    for s in model.statements:
        stored = {a.array for a in s.accesses if a.kind == "write" and a.space == "global"
                  and not a.atomic}
        if not s.loops or not stored or stored <= distinct or \
                len(by_loop[s.loops[-1].location]) > 1:
            continue
        arrays = frozenset(a.array for a in s.accesses if a.kind == "read" and
                           a.space == "global" and a.array not in stored and
                           a.array in reads and a.array not in distinct)
        refs = [r for x in arrays for r in reads[x].references if r.statement == s.name]
        if not refs:
            continue
        r = refs[0]
        requests = r.requests if values is None else r.requests_at(values)
        sms = max(spec.multiprocessors, 1)
        warps = requests / r.trips / sms                 # live warps per SM
        per_request = spec.store_wait / min(max(warps, 1.0), spec.latency_hiding) / sms
        out.append(Wait(s.name, arrays, requests * per_request, per_request, r.instances,
                        r.lanes))
    return out


def request_cost(reads: ArrayReads, r: Reference, memory: Memory) -> float:
    """The mean cost of one of r's warp requests from `memory`. An array read A[i + o]
    (reads.halo) is read again by the block's other threads and trips: its requests hit
    in the cache, their first touches priced apart (staging_cost)."""
    footprint = reads.footprint
    if reads.halo is not None and memory.spelling != "shared":
        footprint = 0
    return sum(memory.request(w, footprint, r.indexed) for w in r.warps) / len(r.warps)


def tile_shape(reads: ArrayReads, block: tuple[int, int]) -> tuple[int, int]:
    """(rows, columns) of the tile a block of block = (x, y) threads stages: its
    blockDim.x + the reads' spread of columns, and blockDim.y + their spread of rows
    (one row for a one-dimensional kernel)."""
    low, high = reads.halo
    rows = 1 if reads.rows is None else block[1] + reads.rows[2] - reads.rows[1]
    return rows, block[0] + high - low


def staging_cost(reads: ArrayReads, memory: Memory, source: Memory, block: tuple[int, int],
                 values: dict[str, int] | None = None) -> float:
    """The loads that stage the array in `memory` (shared), per launch: each block reads
    its tile from `source` (global memory), each row contiguously, once (its warps'
    requests after the first warp's sectors are L1 hits), and pays the memory's
    block_cost (its barrier and fill loop)."""
    rows, columns = tile_shape(reads, block)
    warps = 0.0
    for r in reads.references:
        requests = r.requests if values is None else r.requests_at(values)
        warps = max(warps, requests / r.trips)
    blocks = warps / max(block[0] * block[1] / 32.0, 1.0)
    row = tuple(range(0, 32 * reads.element_size, reads.element_size))
    per_block = rows * -(-columns // 32) * source.request(row, None)
    if "staging" in memory.needs:
        per_block += memory.block_cost
    return blocks * per_block


def placement_cost(reads: ArrayReads, memory: Memory, multiprocessors: int,
                   fill_share: float = 1.0, values: dict[str, int] | None = None,
                   source: Memory | None = None, block: tuple[int, int] | None = None
                   ) -> float:
    """The predicted cost of the array's reads from `memory` per launch, per
    multiprocessor, plus the cost of filling it before the share `fill_share` of the
    launches that fill it (a copy kept while its source is unchanged). `values`: the
    parameters' values to price at (default: the launch's, else nominal). A staged
    array (shared memory) adds its staging loads from `source` for blocks of `block`
    = (x, y) threads."""
    total = 0.0
    for r in reads.references:
        requests = r.requests if values is None else r.requests_at(values)
        total += requests * request_cost(reads, r, memory)
    if reads.halo is not None and block:
        # a tile's elements loaded once per block: into shared memory from global, or,
        # read in place, the cache's first touches of them
        total += staging_cost(reads, memory, source if memory.spelling == "shared" and
                              source is not None else memory, block, values)
    return total / max(multiprocessors, 1) + memory.fill_cost * fill_share
