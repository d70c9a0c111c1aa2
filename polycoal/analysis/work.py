"""The work of a kernel's forms for the performance model (analysis/roofline.py).

`form_work` counts, at the launch's sizes (unknown sizes taken as DEFAULT_EXTENT and
reported), what one launch of a form does: every statement's instances (analysis/
counting.py), their arithmetic weighted by the issue slots of each operation, a request
per reference, the sectors each global reference touches per warp request, the bytes
beyond the L1 and to memory, and one warp's dependent path. A form is the kernel as
written (`AS_WRITTEN`: the lanes of a warp are its own thread indices), or a `Geometry`
a pass plans: the dim whose consecutive values a warp's lanes take, the threads it
launches, its blocks, whether its accumulators live in registers; passes add what their
forms do beyond it (shared-memory tiles, further launches) to the Work this returns.

Memory: a reference whose lanes share one element is served by the L1 (a broadcast);
any other brings its sectors from the L2 each request. Memory traffic is each
reference's footprint (its distinct elements: the instances over the loops whose
counters it does not read are re-reads) unless the reference scatters and the
footprints exceed the L2, when every sector it touches comes from memory again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pycparser import c_ast

from polycoal.analysis.coalescing import dynamic_offset, warp_sectors
from polycoal.analysis.counting import count_statement
from polycoal.analysis.roofline import Machine, Work
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel, Statement
from polycoal.model.poly import Poly

DEFAULT_EXTENT = 4096
WARP = 32
LOOP_CONTROL = 2          # issue slots a statement's instance pays for its loop's control
ADDRESS = 1               # issue slots of one reference's address arithmetic
# trips whose loads the compiler overlaps in a loop: by four, by eight where the trip
# count is a compile-time constant (fitted on the H200: a column sum over 4096 constant
# rows waits 67 clocks a trip for loads of 500-600)
UNROLL, CONSTANT_UNROLL = 4, 8
# loads from memory a loop of unknown trip count overlaps on a warp's path, its body
# unrolled UNROLL times behind a test of the trips left (fitted on the H200: a column
# sum of 2048 trips from memory, one warp an SM, 193 clocks a trip at 500 clocks'
# latency; from the L2, gramschmidt's norm of one column, 76 clocks a trip at 300)
RUNTIME_OVERLAP = 2.6
HEAVY_CALL = 4.0          # issue slots past which a call is not interleaved with another


@dataclass(frozen=True)
class Geometry:
    """How a form runs the kernel's statement instances on threads."""

    x: str | None = None             # dim a warp's lanes run along (None: as written)
    threads: float | None = None     # threads launched (None: from `axes`, or as written)
    axes: tuple[str, ...] = ()       # dims on the threads: a thread per `per_thread`
    per_thread: float = 1.0          # points of their ranges
    block_threads: int | None = None
    registers: bool = False          # accumulators in registers (no wait on a store)
    coalesced: bool = False          # every global reference at its fewest sectors
    resident: float | None = None    # warps a multiprocessor holds (None: full)
    launches: int = 1
    # tiles: a global read serves `reuse` instances from shared memory, each instance's
    # read costing `staged` wavefronts and issue slots there; `ilp` independent
    # accumulators a thread (its dependent path is shared among them)
    reuse: float = 1.0
    staged: float = 0.0
    ilp: float = 1.0
    # loops unrolled whole (no control per trip), and scalar parameters that scale a
    # sum applied once outside it
    unrolled: bool = False
    hoisted: frozenset = frozenset()
    # arrays read from another memory (placement.py): (array, "readonly" | "constant" |
    # "shared"), each only read by the kernel; "ideal" bounds what any memory could give
    placed: tuple[tuple[str, str], ...] = ()
    unroll: int = 0                  # trips whose loads overlap (0: as the compiler does)
    # arrays a register window serves (optimize/window.py): (array, the references its
    # loads replace, per load); each load is issued once for that many reads as written
    windowed: tuple[tuple[str, float], ...] = ()


AS_WRITTEN = Geometry()


def _value(formula: Poly, exact_value, model: KernelModel, assumed: set) -> float:
    """A count at the launch's values; parameters it does not know are sizes of
    DEFAULT_EXTENT, unless that empties the count (an offset such as a host loop's `k`
    in `k + 1 <= j < n`): then such a parameter is taken as 0."""
    if exact_value is not None:
        return float(exact_value)
    known = dict(model.parameter_values)
    unknown = sorted(v for v in formula.variables if v not in known)

    def at(zeros: frozenset) -> float:
        values = {**known, **{v: 0 if v in zeros else DEFAULT_EXTENT for v in unknown}}
        try:
            return float(formula.value(values))
        except (ValueError, ZeroDivisionError):
            return 0.0
    best = at(frozenset())
    if best <= 0:
        best = max([at(frozenset({v})) for v in unknown] + [best])
    assumed.update(unknown)
    return max(0.0, best)


def instances(model: KernelModel, s: Statement, assumed: set) -> float:
    c = count_statement(model, s)
    return _value(c.formula, c.value, model, assumed)


def _kind(s: Statement) -> str:
    types = {a.element_type for a in s.accesses}
    if any("double" in t for t in types):
        return "double"
    if any(t in ("float", "half", "__half") or "float" in t for t in types):
        return "float"
    return "int"


def _product(node) -> bool:
    return isinstance(node, c_ast.BinaryOp) and node.op == "*"


def _scalar(node, scalars: frozenset) -> bool:
    return isinstance(node, c_ast.ID) and node.name in scalars


def operations(node, kind: str, m: Machine, tally: dict[str, float],
               scalars: frozenset = frozenset()) -> float:
    """Issue slots of the arithmetic of a statement's node, each operation's slots added
    to `tally` by name. An addition of a product is fused with it (one FMA), as the
    compiler contracts them; a product by one of `scalars` (a factor the form applies
    once, outside its sum) costs nothing."""
    if node is None:
        return 0.0
    slots = 0.0
    name = None
    if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID):
        name = node.name.name
        slots = m.operation(name)
    elif isinstance(node, (c_ast.BinaryOp, c_ast.Assignment)):
        op = node.op.rstrip("=") if isinstance(node, c_ast.Assignment) else node.op
        right = node.rvalue if isinstance(node, c_ast.Assignment) else node.right
        left = node.lvalue if isinstance(node, c_ast.Assignment) else node.left
        if op in ("/", "%"):
            name = {"double": "ddiv", "float": "fdiv"}.get(kind, "idiv") if op == "/" \
                else "imod"
            slots = m.operation(name)
        elif op == "*" and (_scalar(left, scalars) or _scalar(right, scalars)):
            slots = 0.0
        elif op in ("+", "-") and kind != "int" and (_product(left) or _product(right)):
            slots = 0.0                   # contracted with the product into an FMA
        elif op:
            slots = m.operation("double") if kind == "double" else 1.0
    elif isinstance(node, c_ast.TernaryOp) or \
            isinstance(node, c_ast.UnaryOp) and node.op in ("-", "!", "~"):
        slots = 1.0
    if name:
        tally[name] = tally.get(name, 0.0) + slots
    children = [node.name] if isinstance(node, c_ast.ArrayRef) else \
        [child for _, child in node.children()]
    return slots + sum(operations(c, kind, m, tally, scalars) for c in children)


def _threads(model: KernelModel, assumed: set) -> float:
    threads = 1.0
    whole = {d.axis for d in model.thread_dims if d.kind == "global"}
    for d in model.thread_dims:
        if d.kind == "block" and d.axis in whole:
            continue              # counted by the axis's global index
        span = isl_helpers.known_span(model, d.name)
        if span is None:
            span = DEFAULT_EXTENT
            assumed.add(d.name)
        threads *= max(1, span)
    return threads


def _extent(model: KernelModel, dim: str, assumed: set) -> float:
    """The number of values of `dim`: where the launch's values fix it, else from its
    bounds at DEFAULT_EXTENT for the sizes they leave open (reported)."""
    span = isl_helpers.known_span(model, dim)
    if span is not None:
        return float(max(1, span))
    lowers, uppers = isl_helpers.dim_bounds(model, dim)
    if not lowers or not uppers:
        assumed.add(dim)
        return float(DEFAULT_EXTENT)
    lo = max(_value(b, None, model, assumed) for b in lowers)
    hi = min(_value(b, None, model, assumed) for b in uppers)
    if hi < lo:            # an offset taken as a size (p in p <= j < n): taken as 0
        known = dict(model.parameter_values)
        lo = max(float(b.value({**known, **{v: 0 for v in b.variables if v not in known}}))
                 for b in lowers)
    return max(1.0, hi - lo + 1)


def _stride_along(model: KernelModel, s: Statement, flat: Poly, x: str) -> int | None:
    """Elements between the references of two consecutive lanes when lanes run along
    dim `x` (a thread dim or a loop counter c_k): None where it is not a number."""
    offset = dynamic_offset(s, flat) if any(d.name == x for d in model.thread_dims) else flat
    stride = offset.coefficient(x).substitute(dict(model.parameter_values))
    if not stride.is_constant():
        return None
    value = stride.constant()
    return int(value) if value.denominator == 1 else None


def _sectors(model: KernelModel, s: Statement, a, report, geometry: Geometry
             ) -> tuple[float, float, bool]:
    """(sectors a warp request touches, the fewest it needs, whether the lanes share one
    element) under `geometry`."""
    ideal = float(report.ideal_sectors or max(1, -(-WARP * a.element_size // 32)))
    if geometry.coalesced:
        return ideal, ideal, False
    if geometry.x is None:
        if report.sectors is None:
            return float(WARP), ideal, False
        shared = all(st is not None and st == Poly() for st in report.strides.values())
        return float(report.sectors), float(report.ideal_sectors or 1), shared
    if a.flat is None:
        return float(WARP), ideal, False
    stride = _stride_along(model, s, a.flat, geometry.x)
    if stride is None:
        stride = 1 << 20
    sectors, fewest = warp_sectors({"x": stride, "y": 0, "z": 0}, (WARP, 1, 1),
                                   a.element_size, a.unit_bytes)
    return float(sectors), float(fewest), stride == 0


def _reuse_trips(model: KernelModel, s: Statement, a, assumed: set) -> float:
    """Instances of `s` per distinct element of `a`: the extents of the dims (thread
    indices and loop counters) its subscript does not read."""
    trips = 1.0
    if a.flat is None:
        return trips
    read = a.flat.variables
    dims = [(d.name, d.name) for d in model.thread_dims] + \
        [(loop.counter, loop.source_name) for loop in s.loops]
    for name, shown in dims:
        if name in read:
            continue
        extent = isl_helpers.known_span(model, name)
        if extent is None:
            extent = DEFAULT_EXTENT
            assumed.add(shown)
        trips *= max(1, extent)
    return trips


def _span(model: KernelModel, s: Statement, a, assumed: set, extents: dict
          ) -> tuple[Poly, float] | None:
    """The subscript of `a` less its constant term, and the number of elements between
    its least and greatest values over the dims it reads (1 + sum of |coefficient| x
    (extent - 1)); None where a coefficient is not a number."""
    if a.flat is None:
        return None
    known = dict(model.parameter_values)
    flat = a.flat.substitute(known)
    loops = {loop.counter for loop in s.loops}
    dims = {d.name for d in model.thread_dims} | loops
    span = 1.0
    for v in flat.variables:
        step = flat.coefficient(v)
        if v not in dims or not step.is_constant():
            return None
        if v not in extents:
            extents[v] = _extent(model, v, assumed)
        span += abs(float(step.constant())) * (extents[v] - 1)
    return flat - Poly.const(flat.substitute({v: 0 for v in flat.variables}).constant()), span


def _footprint(model: KernelModel, refs: list, assumed: set, extents: dict) -> float:
    """Bytes of one array a launch reaches: what each reference's instances reach (their
    distinct elements), at most what its subscripts span. References that differ by a
    constant (a stencil's a[i - 1], a[i], a[i + 1]) span one range, widened by their
    offsets: a window sliding along a loop (a[i + k]) reads each element once."""
    reached = sum(b for _, _, b in refs)
    groups: dict = {}
    for s, a, _ in refs:
        span = _span(model, s, a, assumed, extents)
        if span is None:
            return reached
        base, width = span
        offset = float((a.flat.substitute(dict(model.parameter_values)) - base).constant())
        lo, hi, widest, size = groups.get(base, (offset, offset, 0.0, a.unit_bytes))
        groups[base] = (min(lo, offset), max(hi, offset), max(widest, width), size)
    spanned = sum((widest + hi - lo) * size for lo, hi, widest, size in groups.values())
    # whole sectors: a span reaches at least the sectors its elements fill
    return min(reached, max(32.0, spanned))


def _constant_trips(model: KernelModel, s: Statement) -> bool:
    """Whether the innermost loop of `s` runs a number of trips known when compiling."""
    return bool(s.loops) and isl_helpers.known_extent(model, s.loops[-1].counter, {}) \
        is not None


def _promoted(s: Statement, a) -> bool:
    """Whether `a` is the accumulator of an update `s` a promoted form keeps in a
    register: the element the update writes, the same for every trip of its loop."""
    if not s.update or not s.loops or a.flat is None or a.space != "global":
        return False
    written = [w for w in s.accesses if w.kind == "write" and w.array == a.array]
    return any(w.flat == a.flat for w in written) and \
        s.loops[-1].counter not in a.flat.variables


def _accumulates_in_memory(s: Statement, restrict: frozenset) -> bool:
    """`X[...] op= e` inside a loop whose counter X's subscript does not read, or
    `X[f(j)] = X[f(j - 1)] op e` (a recurrence along the loop): each trip loads what the
    trip before stored, unless X is a `__restrict__` pointer (the compiler then keeps
    the element in a register)."""
    if not s.loops:
        return False
    counter = s.loops[-1].counter
    written = [a for a in s.accesses if a.kind == "write" and a.space == "global"
               and a.array not in restrict and a.flat is not None]
    if s.update and any(counter not in a.flat.variables for a in written):
        return True
    step = s.loops[-1].step
    before = {(a.array, a.flat.substitute({counter: Poly.var(counter) - step}))
              for a in written if counter in a.flat.variables}
    return any(a.kind == "read" and (a.array, a.flat) in before for a in s.accesses
               if a.flat is not None)


def _load_wait(model: KernelModel, s: Statement, latency: float, x: str | None,
               only=None) -> float:
    """Clocks a trip of `s`'s innermost loop waits for its loads: the `latency`
    for a read whose lanes reach a new sector every trip, a share of it for one that
    steps within a sector (a new sector every 32 / (step * size) trips), none for a
    read the loop does not move. Where the lanes split the loop (`x` its counter), a
    trip steps a warp's width."""
    if not s.loops:
        return latency
    counter = s.loops[-1].counter
    wait = 0.0
    for a in s.accesses:
        if a.kind != "read" or a.space not in ("global", "constant") or \
                (only is not None and not only(a)):
            continue
        if a.flat is None:
            wait = latency
            continue
        step = a.flat.coefficient(counter).substitute(dict(model.parameter_values))
        if step == Poly():
            continue
        bytes_ = abs(float(step.constant())) * a.unit_bytes if step.is_constant() else 1e9
        if x == counter:
            bytes_ *= WARP
        wait = max(wait, latency * min(1.0, bytes_ / 32))
    return wait


def form_work(analysis, m: Machine, geometry: Geometry = AS_WRITTEN,
              values: dict[str, int] | None = None) -> Work:
    """The Work of one launch of the kernel of `analysis` under `geometry`, at the
    launch's values and `values` (sizes the program is run at, `--arg`)."""
    model = analysis.model
    if values:
        model = replace(model, parameter_values={**values, **model.parameter_values})
    assumed: set = set()
    threads = geometry.threads or (
        max(float(geometry.block_threads or 1),
            math.prod(_extent(model, a, assumed) for a in geometry.axes) / geometry.per_thread)
        if geometry.axes else _threads(model, assumed))
    warps = max(1.0, threads / WARP)
    reports = {}
    for r in analysis.references:
        reports.setdefault(id(r.statement), []).append(r)
    issue = l1 = shared = l2 = chain = 0.0
    tally: dict[str, float] = {}
    footprint_bytes = scattered = 0.0
    spans: dict[str, list] = {}     # array -> (statement, access, bytes its instances reach)
    placed = dict(geometry.placed)
    windowed = dict(geometry.windowed)
    # a placed array is read through a path the compiler knows no store reaches
    restrict = frozenset(p.name for p in analysis.kernel.parameters if p.is_restrict) | \
        frozenset(placed)
    paths = []              # (statement, trips a thread, its issue slots, reads memory)
    for s in model.statements:
        n = instances(model, s, assumed)
        if n <= 0:
            continue
        warp_n = max(n / WARP, n / threads)
        kind = _kind(s)
        own: dict[str, float] = {}
        ops = operations(s.node, kind, m, own, geometry.hoisted)
        for k, v in own.items():
            tally[k] = tally.get(k, 0.0) + v * warp_n
        requests = 0
        reads_global = False
        for r in reports.get(id(s), []):
            a = r.access
            if geometry.registers and _promoted(s, a):
                continue                  # the accumulator, in a register
            if a.space not in ("global", "constant"):
                requests += 1 + ADDRESS
                if a.space == "shared":
                    shared += warp_n
                continue
            memory = placed.get(a.array) if a.kind == "read" else None
            if memory == "ideal":         # a bound: the read served by no memory's pipes
                requests += 1 + ADDRESS
                continue
            if memory in ("constant", "shared"):
                requests += 1 + ADDRESS
                sectors, fewest, broadcast = _sectors(model, s, a, r, geometry)
                if memory == "shared":
                    # a tile filled once a block: the reads from shared memory, the
                    # global traffic as before (the fill's)
                    shared += warp_n
                    l2 += warp_n * sectors * 32
                    spans.setdefault(a.array, []).append(
                        (s, a, warp_n / _reuse_trips(model, s, a, assumed) * fewest * 32))
                elif not broadcast:
                    # the constant cache serves one address a pass: the lanes' others wait
                    l1 += warp_n * WARP
                continue
            reuse = geometry.reuse if a.kind == "read" else 1.0
            if a.kind == "read" and a.array in windowed:
                reuse = windowed[a.array]
            requests += (1 + ADDRESS) / reuse + (geometry.staged if reuse > 1 else 0.0)
            shared += warp_n * geometry.staged if reuse > 1 else 0.0
            reads_global = reads_global or (a.kind == "read" and reuse == 1)
            sectors, fewest, broadcast = _sectors(model, s, a, r, geometry)
            l1 += warp_n / reuse * (sectors if sectors > fewest else max(1.0, sectors / 4))
            if not broadcast:
                l2 += warp_n / reuse * sectors * 32
            distinct = warp_n / _reuse_trips(model, s, a, assumed) * fewest * 32
            spans.setdefault(a.array, []).append((s, a, distinct))
            if sectors > fewest:
                scattered += max(0.0, warp_n / reuse * sectors * 32 - distinct)
        control = LOOP_CONTROL if s.loops and not geometry.unrolled else 0
        issue += warp_n * (ops + requests + control)
        paths.append((s, n / threads, ops, reads_global))
    extents: dict[str, float] = {}     # each dim's number of values, read once
    footprint_bytes = sum(_footprint(model, refs, assumed, extents)
                          for refs in spans.values())
    # a load's latency: the L2's where the kernel's data fits in a quarter of it (it
    # stays there between launches, beside the data of the kernels around it, and a
    # launch reads what the one before wrote), else memory's
    latency = m.l2_latency if footprint_bytes <= m.l2_bytes / 4 else m.memory_latency
    # a loop that stores through a pointer that is not __restrict__ keeps its loads of
    # other such pointers (which may alias it) after the stores before them: where the
    # stored value waits for a load, the compiler overlaps none of its trips' loads
    stored: dict = {}                 # innermost loop -> arrays stored in it
    for s in model.statements:
        if s.loops:
            stored.setdefault(s.loops[-1], set()).update(
                a.array for a in s.accesses if a.kind == "write" and a.space == "global"
                and a.array not in restrict)
    ordered = {loop for loop, arrays in stored.items() if arrays and any(
        a.kind == "read" and a.space == "global" and a.array not in restrict
        and a.array not in arrays
        for s in model.statements if s.loops and s.loops[-1] == loop
        for a in s.accesses)}
    for s, trips, ops, reads_global in paths:
        wait = _load_wait(model, s, latency, geometry.x)
        if _accumulates_in_memory(s, restrict) and not geometry.registers:
            # each trip loads what the trip before stored (store_wait), and its loads
            # of other arrays through pointers that may alias the store wait behind
            # it; loads through __restrict__ (or read-only) pointers are issued before
            # it and overlap
            stored = {a.array for a in s.accesses if a.kind == "write"}
            behind = _load_wait(model, s, latency, geometry.x,
                                lambda a: a.array not in restrict and a.array not in stored)
            free = _load_wait(model, s, latency, geometry.x, lambda a: a.array in restrict)
            per_trip = max(m.store_wait + behind, free)
        else:
            # a statement outside loops waits for its loads from memory once, whole
            # (nothing overlaps them; with the data in the L2, the fitted overlap stays)
            alone = not s.loops and latency == m.memory_latency
            unroll = geometry.unroll or (
                1 if alone or s.loops and s.loops[-1] in ordered else
                CONSTANT_UNROLL if _constant_trips(model, s) else UNROLL)
            # a loop of unknown trip count is unrolled UNROLL times; its loads from
            # memory overlap less deep (RUNTIME_OVERLAP), those from the L2 all
            overlap = RUNTIME_OVERLAP if not geometry.unroll and unroll == UNROLL and \
                latency == m.memory_latency else unroll
            per_trip = ops * m.alu_latency / unroll + (wait / overlap if reads_global else 0.0)
        chain += trips * per_trip / geometry.ilp
    dram = footprint_bytes + (scattered if footprint_bytes > m.l2_bytes else 0.0)
    block_threads = geometry.block_threads or _block_threads(model)
    block_warps = max(1.0, block_threads / WARP)
    resident = geometry.resident or min(float(m.max_warps), m.max_blocks * block_warps)
    heaviest = max(tally, key=tally.get) if tally else ""
    # the accumulators of a tile are interleaved, up to four, unless a term calls a
    # function of many instructions (its branches keep the calls apart)
    calls = max((m.operation(k) for k in tally), default=1.0)
    ilp = 1.0 if calls > HEAVY_CALL else min(geometry.ilp, 4.0)
    return Work(issue=issue, l1_wavefronts=l1, ilp=ilp, shared_wavefronts=shared, l2_bytes=l2,
                dram_bytes=dram, chain=chain, warps=warps, block_warps=block_warps,
                resident=resident, launches=geometry.launches, heaviest=heaviest,
                heaviest_share=(tally[heaviest] / issue if heaviest and issue else 0.0),
                round_trip=bool(paths) and not any(s.loops for s, *_ in paths)
                and latency == m.memory_latency,
                assumed=tuple(sorted(assumed)))


def _block_threads(model: KernelModel) -> int:
    if model.block_shape is not None:
        return max(1, math.prod(model.block_shape))
    return 256


@dataclass(frozen=True)
class Least:
    """The least any form of a kernel must do in one launch (the roofline's bound):
    each element it reads brought from memory once and each it writes stored once, and
    its floating-point arithmetic (a multiply-add two operations)."""

    bytes: float
    flops: float
    assumed: tuple[str, ...] = ()

    def bound(self, bytes_per_unit: float, flops_per_unit: float) -> float:
        """The roofline's time: the bytes at the bandwidth or the operations at the
        peak, whichever takes longer (in the unit the rates are per)."""
        return max(self.bytes / bytes_per_unit, self.flops / flops_per_unit)


def least_work(analysis, values: dict[str, int] | None = None) -> Least:
    """The compulsory traffic and the floating-point operations of one launch of the
    kernel of `analysis` at the launch's values and `values`: each global array's
    distinct elements read, and those written, at most what its subscripts span."""
    model = analysis.model
    if values:
        model = replace(model, parameter_values={**values, **model.parameter_values})
    assumed: set = set()
    reads: dict[str, list] = {}
    writes: dict[str, list] = {}
    flops = 0.0
    # a product by a scalar argument (GEMM's alpha) can be applied once, outside a sum
    scalars = frozenset(p.name for p in analysis.kernel.parameters if not p.is_pointer)
    for s in model.statements:
        n = instances(model, s, assumed)
        if n <= 0:
            continue
        flops += n * _flops(s.node, _kind(s), scalars)
        for a in s.accesses:
            if a.space not in ("global", "constant"):
                continue
            distinct = n / _reuse_trips(model, s, a, assumed) * a.element_size
            (reads if a.kind == "read" else writes).setdefault(a.array, []).append(
                (s, a, distinct))
    # every element one reference reaches is moved: the most any reference of an array
    # reaches bounds what the array moves from below (their union may be more)
    extents: dict[str, float] = {}
    moved = sum(max(_footprint(model, [ref], assumed, extents) for ref in refs)
                for table in (reads, writes) for refs in table.values())
    return Least(moved, flops, tuple(sorted(assumed)))


def _flops(node, kind: str, scalars: frozenset) -> float:
    """Floating-point operations of one instance of a statement's node (none where its
    values are integers; subscripts are addresses, not arithmetic; a product by one of
    `scalars` none; a function call none beyond its arguments' arithmetic)."""
    if node is None or kind == "int":
        return 0.0
    count = 0.0
    if isinstance(node, c_ast.Assignment) and node.op != "=":
        count = 1.0
    elif isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/"):
        count = 0.0 if node.op == "*" and (_scalar(node.left, scalars) or
                                           _scalar(node.right, scalars)) else 1.0
    children = [node.name] if isinstance(node, c_ast.ArrayRef) else \
        [child for _, child in node.children()]
    return count + sum(_flops(c, kind, scalars) for c in children)
