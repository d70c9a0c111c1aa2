"""The cost of a data layout over a program (optimize/layout.py's candidates).

Each kernel is priced, per warp, on the three resources a layout changes, and takes as
long as the busiest (a roofline, in clocks of one multiprocessor):
- L1 wavefronts: a warp request moves one 128-byte line per clock, and at least one
  quarter-warp's bytes per clock (a 128-bit load takes four, even when every lane reads
  the same 16 bytes): the wavefronts of the accesses to the array under the layout, plus
  those of the kernel's other references;
- issue: four warp instructions per clock (four schedulers): the kernel's arithmetic
  (counted on its statements) and its memory requests, fewer where one 128-bit load
  brings a group;
- L2: L2_WEIGHT clocks per sector the requests touch where lanes read different
  elements (a strided request brings whole sectors from L2 of which it uses a part;
  the weight assumes half of them still in L1 when the next field is read);
- memory: DRAM_WEIGHT clocks per 32-byte sector to or from memory (RANDOM_DRAM_WEIGHT
  for a sector at an address no neighbouring lane shares: a gather), each kernel's
  distinct elements once (re-reads of a window or of a loop-invariant element come from
  the caches), with the sectors the fields it reads (and writes) occupy in the layout,
  padding included.
Kernels are weighted by their launches (host loops with constant bounds by their trip
counts, other host loops by HOST_LOOP_TRIPS); a new layout adds its conversions: each
copy across the host/device boundary packs or unpacks the array (read and written once).
Counts are the statements' execution counts at the launches' values (unknown sizes taken
as DEFAULT_EXTENT). Sectors per request, the paper's figure, are reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pycparser import c_ast

from polycoal.analysis.coalescing import lane_stride, request_sectors
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import matching
from polycoal.model.poly import Poly
from polycoal.optimize.layout import Layout

DEFAULT_EXTENT = 4096
HOST_LOOP_TRIPS = 10
ISSUE_PER_CLOCK = 4
# memory moves about 16 bytes per clock per multiprocessor on the H200 (4.2 TB/s over
# 132 SMs at 1.98 GHz): two clocks per 32-byte sector
DRAM_WEIGHT = 2
# a sector at an unrelated address costs about four times a streamed one (measured on
# the H200: a gather of 16-byte elements through a random index runs at a quarter of the
# copy bandwidth)
RANDOM_DRAM_WEIGHT = 8
L2_WEIGHT = 0.5
LINE_BYTES = 128
RANDOM = -1          # the lane stride of an index the model cannot follow


@dataclass(frozen=True)
class Use:
    """The accesses of one kernel to one struct array at one element index in one loop
    body: what one layout serves with one request per group."""

    kernel: str
    array: str                   # the kernel's parameter
    kind: str                    # "read" | "write"
    leaves: frozenset[str]
    stride: int                  # elements between neighbouring lanes (along x)
    count: float                 # executions
    lines: tuple[int, ...] = ()
    elements: float = 0.0        # distinct elements per launch (executions over the
    #                              trips of the loops it stays in)


def _value(count, model) -> float:
    if count.value is not None:
        return float(count.value)
    values = {p: model.parameter_values.get(p, DEFAULT_EXTENT)
              for p in count.formula.variables}
    try:
        return max(float(count.formula.value(values)), 1.0)
    except (ValueError, ZeroDivisionError):
        return float(DEFAULT_EXTENT)


def trip(model, loop) -> float:
    """Iterations of `loop` at the launch's values (unknown sizes: DEFAULT_EXTENT)."""
    from polycoal.model.isl_helpers import known_extent
    values = {p: model.parameter_values.get(p, DEFAULT_EXTENT) for p in model.parameters}
    n = known_extent(model, loop.counter, values)
    return float(max(n, 1)) if n is not None else float(DEFAULT_EXTENT)


def _hoisted(model, statement, access, index: Poly, written: set) -> tuple[tuple, float]:
    """The loops a read stays in once hoisted out of the innermost loops it does not
    vary in (loop-invariant code motion: nvcc hoists such loads, the layout's read-only
    groups are `__restrict__`), and the factor its count shrinks by."""
    loops, factor = tuple(statement.loops), 1.0
    if access.kind != "read":
        return loops, factor
    while loops:
        inner = loops[-1]
        if inner.counter in index.variables or \
                (access.array, access.member, inner.counter) in written:
            break
        factor /= trip(model, inner)
        loops = loops[:-1]
    return loops, factor


@dataclass(frozen=True)
class Work:
    """What a kernel does per launch besides its accesses to arrays of structs, in warp
    terms: arithmetic instructions, and the requests, wavefronts and memory sectors of
    its other global references."""

    arithmetic: float = 0.0
    requests: float = 0.0
    wavefronts: float = 0.0
    dram: float = 0.0
    l2: float = 0.0


def _operations(n) -> int:
    """Instructions node `n` itself stands for (not its children)."""
    if isinstance(n, (c_ast.BinaryOp, c_ast.FuncCall, c_ast.TernaryOp)):
        return 1
    if isinstance(n, c_ast.UnaryOp):
        return int(n.op in ("-", "!", "~", "++", "--", "p++", "p--"))
    if isinstance(n, c_ast.Assignment):
        return int(n.op != "=")
    return 0


def arithmetic(node) -> int:
    """Arithmetic instructions of a statement: operators and calls (a compound
    assignment counts its operator; subscripts, address arithmetic, do not)."""
    if node is None:
        return 0
    children = [node.name] if isinstance(node, c_ast.ArrayRef) else \
        [child for _, child in node.children()]
    return _operations(node) + sum(arithmetic(c) for c in children)


def kernel_work(analysis) -> Work:
    """The kernel's arithmetic and its references to anything but arrays of structs."""
    model = analysis.model
    if model is None:
        return Work()
    lanes = cuda_dialect().warp_size
    ops = sum(_value(count_of(analysis, s), model) / lanes * arithmetic(s.node)
              for s in model.statements)
    requests = wavefronts = dram = l2 = 0.0
    for r in analysis.global_references:
        if r.access.struct is not None:
            continue
        warps = _value(r.count, model) / lanes
        requests += warps
        width = r.access.element_size
        wavefronts += warps * max(-(-(r.sectors or 32) // 4), width // 4, 1)
        if any(v is None or v != Poly() for v in r.strides.values()):
            l2 += warps * (r.sectors or 32)
        if r.access.flat is not None and r.ideal_sectors:
            trips = 1.0
            for loop in r.statement.loops:
                if loop.counter not in r.access.flat.variables:
                    trips *= trip(model, loop)
            dram += warps / trips * r.ideal_sectors
    return Work(ops, requests, wavefronts, dram, l2)


def count_of(analysis, statement):
    """The execution count of `statement` (from its references, else counted)."""
    for r in analysis.references:
        if r.statement is statement:
            return r.count
    from polycoal.analysis.counting import count_statement
    return count_statement(analysis.model, statement)


def kernel_uses(analysis, structs: dict) -> dict[str, list[Use]]:
    """Per struct name, the uses a kernel's analysis shows (references to fields of an
    array of structs), grouped by loop body, element index and kind."""
    model = analysis.model
    if model is None:
        return {}
    keyed: dict[tuple, dict] = {}
    written = {(a.array, a.member, l.counter) for s in model.statements for a in s.accesses
               if a.kind == "write" for l in s.loops}
    for r in analysis.references:
        a = r.access
        if a.struct is None or a.member is None:
            continue
        struct = structs[a.struct]
        per = struct.size // struct.unit
        leaf = struct.leaf(a.member)
        if a.flat is None:
            # an index the model cannot follow (`p[nbr[i]].x`): lanes at unrelated
            # elements; the index as written tells the fields read together
            loops, count, stride = tuple(r.statement.loops), 1.0, RANDOM
            index = a.element_index
        else:
            index = a.flat - Poly.const(leaf.offset // struct.unit) if leaf else a.flat
            stride_units = lane_stride(model, index, "x")
            stride = stride_units.constant() / per if stride_units.is_constant() \
                else 1 << 20
            loops, count = _hoisted(model, r.statement, a, index, written)
        key = (a.struct, a.array, a.kind, tuple(l.counter for l in loops), str(index))
        entry = keyed.setdefault(key, {"leaves": set(), "count": 0.0, "stride": stride,
                                       "lines": set(), "elements": 0.0})
        entry["leaves"].add(a.member)
        executions = count * _value(r.count, model)
        entry["count"] = max(entry["count"], executions)
        trips = 1.0
        for loop in loops:
            trips *= trip(model, loop)
        entry["elements"] = max(entry["elements"], executions / trips)
        entry["lines"].add(a.location.line)
    out: dict[str, list[Use]] = {}
    for (struct, array, kind, _, _), e in keyed.items():
        out.setdefault(struct, []).append(Use(
            analysis.kernel.name, array, kind, frozenset(e["leaves"]),
            int(e["stride"]) if float(e["stride"]).is_integer() else 1 << 20, e["count"],
            tuple(sorted(e["lines"])), e["elements"]))
    return out


@dataclass(frozen=True)
class Price:
    requests: float              # warp requests to the array
    sectors: float               # 32-byte sectors those requests touch (L1)
    wavefronts: float = 0.0      # L1 wavefronts of those requests
    dram: float = 0.0            # sectors to and from memory: each distinct element's once
    l2: float = 0.0              # sectors of requests whose lanes read different elements
    clocks: float = 0.0          # the roofline over the program, conversions included
    conversions: float = 0.0     # of which the conversions at the host boundary

    @property
    def total(self) -> float:
        return self.clocks

    def per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0


def _requests(layout: Layout, use: Use) -> list[tuple[int, int, int]]:
    """(stride in bytes between lanes, first byte, width) of each request of `use`."""
    if layout.kind == "aos":
        g = layout.groups[0]
        return [(use.stride * g.size, layout.struct.leaf(p).offset, layout.struct.leaf(p).size)
                for p in sorted(use.leaves)]
    out = []
    for g in layout.groups:
        touched = [leaf for leaf in g.leaves if leaf.path in use.leaves]
        if not touched:
            continue
        if len(g.leaves) == 1 or not g.components:
            out.extend((use.stride * g.size, g.slot(leaf.path)[0], leaf.size)
                       for leaf in touched)
        else:
            out.append((use.stride * g.size, 0, g.size))
    return out


def price(layout: Layout, use: Use) -> Price:
    lanes = cuda_dialect().warp_size
    warps = use.count / lanes            # counts are per thread; requests per warp
    requests = sectors = wavefronts = 0.0
    if use.stride == RANDOM:
        # each lane at an element of its own: a sector and a line per lane and request;
        # from L2 each element's sectors once (its other fields then hit in L1)
        n = len(_requests(layout, use))
        l2 = warps * lanes * element_sectors(layout, set(use.leaves))
        return Price(warps * n, warps * n * lanes, warps * n * lanes, l2=l2)
    for stride, first, width in _requests(layout, use):
        offsets = {first + lane * stride for lane in range(lanes)}
        sectors += warps * request_sectors(offsets, width)[0]
        lines = {b // LINE_BYTES for o in offsets for b in (o, o + width - 1)}
        wavefronts += warps * max(1, len(lines), width // 4)
        requests += warps
    return Price(requests, sectors, wavefronts, l2=sectors if use.stride else 0.0)


def _touched(layout: Layout, leaves: set[str], elements) -> set[tuple[int, int]]:
    """(segment, sector) pairs the fields `leaves` of `elements` (their indices from
    a sector-aligned start) occupy: as it is, the struct's bytes; in a new layout,
    their groups' (padding included)."""
    touched = set()
    for e in elements:
        for path in leaves:
            if layout.kind == "aos":
                leaf = layout.struct.leaf(path)
                start, size, segment = e * layout.struct.size + leaf.offset, leaf.size, 0
            else:
                k, g = layout.group_of(path)
                start, size, segment = e * g.size, g.size, k
            touched.update((segment, b // 32) for b in range(start, start + size))
    return touched


def memory_sectors(layout: Layout, leaves: set[str]) -> int:
    """Sectors 32 consecutive elements occupy in memory for the fields `leaves`."""
    return len(_touched(layout, leaves, range(cuda_dialect().warp_size)))


def element_sectors(layout: Layout, leaves: set[str]) -> float:
    """Sectors one element's fields `leaves` occupy, on average over the positions an
    element takes in its sectors (an element of 28 bytes straddles two now and then)."""
    lanes = cuda_dialect().warp_size
    return sum(len(_touched(layout, leaves, [e])) for e in range(lanes)) / lanes


def total_price(layout: Layout, uses: list[Use], profile: "Profile | None" = None
                ) -> Price:
    """The program's cost under `layout`: per kernel the roofline of its wavefronts, its
    issue and its memory traffic (memory once per kernel, array and kind: the fields it
    reads, those it writes, of its distinct elements), weighted by its launches; plus
    the conversions of a new layout."""
    profile = profile or Profile()
    lanes = cuda_dialect().warp_size
    per_kernel: dict[str, list] = {}
    footprint: dict[tuple, tuple[set, float]] = {}
    for u in uses:
        p = price(layout, u)
        k = per_kernel.setdefault(u.kernel, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        k[0] += p.requests
        k[1] += p.sectors
        k[2] += p.wavefronts
        k[4] += p.l2
        if u.stride == RANDOM:          # no reuse: memory as L2, at random addresses
            k[3] += p.l2
            k[5] += p.l2
            continue
        leaves, elements = footprint.get((u.kernel, u.array, u.kind), (set(), 0.0))
        footprint[(u.kernel, u.array, u.kind)] = (leaves | set(u.leaves),
                                                  max(elements, u.elements))
    for (kernel, _, _), (leaves, elements) in footprint.items():
        per_kernel[kernel][3] += elements / lanes * memory_sectors(layout, leaves)
    clocks = 0.0
    for kernel, (requests, _, wavefronts, dram, l2, scattered) in per_kernel.items():
        work = profile.work.get(kernel, Work())
        time = max(wavefronts + work.wavefronts,
                   (work.arithmetic + requests + work.requests) / ISSUE_PER_CLOCK,
                   L2_WEIGHT * (l2 + work.l2),
                   DRAM_WEIGHT * (dram - scattered + work.dram) +
                   RANDOM_DRAM_WEIGHT * scattered)
        clocks += profile.launches.get(kernel, 1.0) * time
    conversions = 0.0
    if layout.kind != "aos" and profile.conversions:
        elements = max((u.elements for u in uses), default=0.0)
        sectors = elements * (layout.struct.size + layout.element_bytes) / 32
        conversions = profile.conversions * DRAM_WEIGHT * sectors
    totals = [sum(v[n] for v in per_kernel.values()) for n in range(5)]
    return Price(totals[0], totals[1], totals[2], totals[3], totals[4], clocks + conversions,
                 conversions)


@dataclass
class Profile:
    """What the program does besides the array's own accesses: each kernel's other
    work, its launches, and how many conversions a new layout adds (weighted)."""

    work: dict[str, Work] = field(default_factory=dict)
    launches: dict[str, float] = field(default_factory=dict)
    conversions: float = 0.0


def host_loops(tokens, outside: list) -> list[tuple[int, int, float]]:
    """Loops of the host code: (first, last) character offsets of each body and its
    trips (a `for` from one integer literal to another, else HOST_LOOP_TRIPS)."""
    out = []
    for k, t in enumerate(tokens):
        if t.text not in ("for", "while", "do") or any(s.start <= t.start < s.end
                                                       for s in outside):
            continue
        try:
            out.append(_host_loop(tokens, k))
        except (ValueError, IndexError):
            # brackets of the text as written need not match (`#ifdef` branches each
            # opening a loop, one closing brace): such a loop is not counted
            continue
    return [loop for loop in out if loop is not None]


def _host_loop(tokens, k: int) -> tuple[int, int, float] | None:
    """The loop whose keyword is tokens[k], as host_loops gives it (None: no loop)."""
    t = tokens[k]
    trips = float(HOST_LOOP_TRIPS)
    at = k + 1
    if t.text != "do":
        if at >= len(tokens) or tokens[at].text != "(":
            return None
        close = matching(tokens, at)
        if t.text == "for":
            trips = _for_trips(tokens[at + 1:close]) or trips
        at = close + 1
    if at >= len(tokens):
        return None
    if tokens[at].text == "{":
        end = tokens[matching(tokens, at)].end
    else:
        j = at
        while j < len(tokens) and tokens[j].text != ";":
            j += 1
        end = tokens[min(j, len(tokens) - 1)].end
    return tokens[at].start, end, trips


def _for_trips(header) -> float | None:
    """Trips of `for (v = A; v < B; v++)` with integer literals A, B (<=, != too)."""
    texts = [t.text for t in header]
    if texts.count(";") != 2:
        return None
    first = texts.index(";")
    init, cond = texts[:first], texts[first + 1:texts.index(";", first + 1)]
    step = texts[texts.index(";", first + 1) + 1:]
    if len(init) < 3 or init[-2] != "=" or not init[-1].isdigit() or len(cond) != 3 or \
            cond[0] != init[-3] or not cond[2].isdigit() or \
            step not in ([cond[0], "++"], ["++", cond[0]]):
        return None
    lo, hi = int(init[-1]), int(cond[2])
    trips = {"<": hi - lo, "<=": hi - lo + 1, "!=": hi - lo}.get(cond[1])
    return float(max(trips, 0)) if trips is not None else None


def weight_at(loops: list[tuple[int, int, float]], position: int) -> float:
    """How often code at `position` runs: the product of its host loops' trips."""
    weight = 1.0
    for start, end, trips in loops:
        if start <= position < end:
            weight *= trips
    return weight
