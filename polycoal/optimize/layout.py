"""Data layout of arrays of structs: candidates and their cost (the n-body paper's steps).

An array of structs (`Body *p`, then `p[i].x`) stores the fields of one element next to
each other, so a warp that reads `p[i].x` for 32 consecutive i strides by the struct's
size and touches up to one sector per lane. The candidates:

- `aos`: the original layout;
- `soa`: a struct of arrays, every scalar slot (leaf) its own array: unit stride;
- `grouped`: the leaves the kernels read together (same loop body, same element index)
  packed into aligned groups of 8 or 16 bytes (`float4 {x, y, z, m}`, a group of three
  padded to four), each group an array, the other leaves arrays of their own: one
  128-bit load brings a whole group.

In a new layout the array's storage holds one segment per group, largest alignment
first, each `count` groups long (the element count of the allocation): leaf f of
element i sits at byte `count * segment(f) + i * size(group(f)) + offset in group(f)`.

Cost: every warp-level request costs one, plus the 32-byte sectors its 32 lanes touch
(the paper's sectors per request, with the instruction that issues them), weighted by
how often the request runs; plus, weighted by DRAM_WEIGHT, the sectors that move to and
from memory: each kernel's distinct elements once, with the sectors the fields it reads
(and those it writes) occupy in the layout, so that re-reads served by the caches (a
window over neighbours) do not count as memory traffic twice. Leaves of one group read at the same element in the same
loop body are one request; in `aos` and in `soa` every leaf is a request of its own.
Counts are the statements' execution counts at the launches' values (each unknown size
taken as DEFAULT_EXTENT).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polycoal.analysis.coalescing import lane_stride, request_sectors
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.structs import Leaf, StructType
from polycoal.model.poly import Poly

DEFAULT_EXTENT = 4096
_VECTORS = {("float", 2): "float2", ("float", 4): "float4", ("int", 2): "int2",
            ("int", 4): "int4", ("unsigned int", 2): "uint2", ("unsigned int", 4): "uint4",
            ("double", 2): "double2"}


@dataclass(frozen=True)
class Group:
    """Leaves stored together, one group per element, in a segment of their own."""

    leaves: tuple[Leaf, ...]
    type: str                    # C type of one group: the leaf's, a vector type, the struct
    size: int                    # bytes per element (padded)
    align: int
    components: tuple[str, ...] = ()   # the vector's component of each leaf ("" scalar)

    def slot(self, path: str) -> tuple[int, str] | None:
        """(byte offset in the group, vector component or "") of leaf `path`."""
        for k, leaf in enumerate(self.leaves):
            if leaf.path == path:
                if self.components:           # where the component named sits
                    comp = self.components[k]
                    return "xyzw".index(comp) * leaf.size, comp
                return (0 if len(self.leaves) == 1 else leaf.offset), ""
        return None


@dataclass(frozen=True)
class Layout:
    struct: StructType
    kind: str                    # "aos" | "soa" | "grouped"
    groups: tuple[Group, ...]    # in segment order (largest alignment first)

    @property
    def element_bytes(self) -> int:
        return sum(g.size for g in self.groups)

    def group_of(self, path: str) -> tuple[int, Group]:
        for k, g in enumerate(self.groups):
            if any(leaf.path == path for leaf in g.leaves):
                return k, g
        raise KeyError(path)

    def segment_bytes(self, k: int) -> int:
        """Bytes per element before segment k (times the element count: its start)."""
        return sum(g.size for g in self.groups[:k])

    def address(self, path: str, index: int, count: int) -> int:
        """Byte address of leaf `path` of element `index` in an array of `count`."""
        k, g = self.group_of(path)
        inner = g.slot(path)[0]
        return count * self.segment_bytes(k) + index * g.size + inner

    def describe(self) -> str:
        if self.kind == "aos":
            return f"array of structs ({self.struct.size} bytes per element)"
        parts = []
        for g in self.groups:
            names = ", ".join(leaf.path for leaf in g.leaves)
            parts.append(f"{g.type} {{{names}}}" if len(g.leaves) > 1 else
                         f"{g.type} {names}")
        return ("struct of arrays" if self.kind == "soa" else "aligned groups") + \
            ": " + "; ".join(parts)


def aos(struct: StructType) -> Layout:
    return Layout(struct, "aos", (Group(struct.leaves(), struct.name, struct.size,
                                        struct.align),))


def _ordered(groups: list[Group]) -> tuple[Group, ...]:
    """Segments by alignment, largest first (every segment starts aligned), then in the
    order of the struct's first leaf of each."""
    return tuple(sorted(groups, key=lambda g: (-g.align, g.leaves[0].offset)))


def _scalar(leaf: Leaf) -> Group:
    return Group((leaf,), leaf.type, leaf.size, leaf.size)


def soa(struct: StructType) -> Layout:
    return Layout(struct, "soa", _ordered([_scalar(leaf) for leaf in struct.leaves()]))


def _vector(leaves: list[Leaf]) -> Group | None:
    """The aligned vector group of `leaves` (one scalar type, 2 to 4 of them): three
    are padded to four."""
    ty = leaves[0].type
    width = 4 if len(leaves) == 3 else len(leaves)
    name = _VECTORS.get((ty, width))
    if name is None or any(leaf.type != ty for leaf in leaves):
        return None
    size = leaves[0].size * width
    return Group(tuple(leaves), name, size, size, tuple("xyzw"[:len(leaves)]))


def grouped(struct: StructType, together: list[tuple[frozenset[str], float]]) -> Layout:
    """Groups of the leaves read together, heaviest sets first: each set's leaves not yet
    placed, by type, in struct order, cut into vectors of up to 16 bytes."""
    placed: set[str] = set()
    groups: list[Group] = []
    by_path = {leaf.path: leaf for leaf in struct.leaves()}
    for paths, _ in sorted(together, key=lambda t: (-t[1], sorted(t[0]))):
        free = [by_path[p] for p in sorted(paths, key=lambda p: by_path[p].offset)
                if p not in placed and p in by_path]
        for ty in dict.fromkeys(leaf.type for leaf in free):
            same = [leaf for leaf in free if leaf.type == ty]
            per = max(1, 16 // same[0].size)
            for k in range(0, len(same), per):
                chunk = same[k:k + per]
                g = _vector(chunk) if len(chunk) > 1 else None
                if g is None:
                    continue
                groups.append(g)
                placed.update(leaf.path for leaf in chunk)
    groups += [_scalar(leaf) for leaf in struct.leaves() if leaf.path not in placed]
    return Layout(struct, "grouped", _ordered(groups))


# ---------------------------------------------------------------- usage and cost


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


@dataclass
class Usage:
    struct: StructType
    uses: list[Use] = field(default_factory=list)

    def together(self) -> list[tuple[frozenset[str], float]]:
        return [(u.leaves, u.count) for u in self.uses]


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
    from polycoal.model.isl_helpers import dim_bounds
    lowers, uppers = dim_bounds(model, loop.counter)
    values = {}
    for b in lowers + uppers:
        for p in b.variables:
            values[p] = model.parameter_values.get(p, DEFAULT_EXTENT)
    try:
        lo = max(float(b.value(values)) for b in lowers)
        hi = min(float(b.value(values)) for b in uppers)
    except ValueError:
        return float(DEFAULT_EXTENT)
    return max(hi - lo + 1, 1.0)


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
        if a.struct is None or a.member is None or a.flat is None:
            continue
        struct = structs[a.struct]
        per = struct.size // struct.unit
        leaf = struct.leaf(a.member)
        index = a.flat - Poly.const(leaf.offset // struct.unit) if leaf else a.flat
        stride_units = lane_stride(model, index, "x")
        stride = stride_units.constant() / per if stride_units.is_constant() else 1 << 20
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


# A sector from DRAM costs about this many sectors through L1: the H200's L1 moves about
# 128 bytes per clock on each of 132 multiprocessors (33 TB/s), its memory 4.2 TB/s.
DRAM_WEIGHT = 8


@dataclass(frozen=True)
class Price:
    requests: float              # warp requests
    sectors: float               # 32-byte sectors those requests touch (L1)
    dram: float = 0.0            # sectors to and from memory: each distinct element's once

    @property
    def total(self) -> float:
        return self.requests + self.sectors + DRAM_WEIGHT * self.dram

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
    requests = sectors = 0.0
    for stride, first, width in _requests(layout, use):
        offsets = {first + lane * stride for lane in range(lanes)}
        sectors += warps * request_sectors(offsets, width)[0]
        requests += warps
    return Price(requests, sectors)


def memory_sectors(layout: Layout, leaves: set[str]) -> int:
    """Sectors 32 consecutive elements occupy in memory for the fields `leaves`: the
    whole struct's sectors where the fields share them (as it is), their groups'
    (padding included) in a new layout."""
    touched = set()
    for e in range(cuda_dialect().warp_size):
        for path in leaves:
            if layout.kind == "aos":
                leaf = layout.struct.leaf(path)
                start, size, segment = e * layout.struct.size + leaf.offset, leaf.size, 0
            else:
                k, g = layout.group_of(path)
                start, size, segment = e * g.size, g.size, k
            touched.update((segment, b // 32) for b in range(start, start + size))
    return len(touched)


def total_price(layout: Layout, uses: list[Use]) -> Price:
    """Requests and sectors of every use; memory traffic once per kernel, array and kind
    (the fields it reads, the fields it writes, of its distinct elements)."""
    r = s = 0.0
    footprint: dict[tuple, tuple[set, float]] = {}
    for u in uses:
        p = price(layout, u)
        r, s = r + p.requests, s + p.sectors
        leaves, elements = footprint.get((u.kernel, u.array, u.kind), (set(), 0.0))
        footprint[(u.kernel, u.array, u.kind)] = (leaves | set(u.leaves),
                                                  max(elements, u.elements))
    lanes = cuda_dialect().warp_size
    dram = sum(elements / lanes * memory_sectors(layout, leaves)
               for leaves, elements in footprint.values())
    return Price(r, s, dram)


def candidates(struct: StructType, uses: list[Use]) -> list[Layout]:
    out = [aos(struct), soa(struct)]
    g = grouped(struct, [(u.leaves, u.count) for u in uses])
    if g.groups != out[1].groups:
        out.append(g)
    return out


# ---------------------------------------------------------------- unrolling

MAX_UNROLL = 16
FULL_UNROLL = 16          # constant trip counts up to this are unrolled completely
LOAD_REGISTERS = 64       # registers the unrolled iterations' vector loads may hold


def unroll_factors(model, layout: Layout, params: set[str]) -> dict[int, tuple[int, str]]:
    """The innermost loops of a kernel in a new layout worth unrolling, by the line of
    their `for`: (factor, or 0 for completely; why). A loop without stores to global
    memory is unrolled completely when its trip count is a constant of at most
    FULL_UNROLL (the field and neighbour loops: no counter, no address arithmetic);
    a loop that streams through a group of the array at the same element for the whole
    warp (the all-pairs shape: `p[j]` in every thread) is unrolled so that the loads of
    several iterations are in flight together, as many as LOAD_REGISTERS registers hold
    (16 for one float4 per iteration). A loop with a pragma of its own is left alone."""
    from polycoal.model.isl_helpers import dim_bounds
    loops: dict[str, object] = {}
    for s in model.statements:
        for l in s.loops:
            loops.setdefault(l.counter, l)
    out = {}
    for counter, loop in loops.items():
        inside = [s for s in model.statements if any(l.counter == counter for l in s.loops)]
        if loop.pragmas or any(s.loops[-1].counter != counter for s in inside):
            continue
        if any(a.kind == "write" and a.space == "global" for s in inside for a in s.accesses):
            continue
        lowers, uppers = dim_bounds(model, counter)
        if lowers and uppers and all(b.is_constant() for b in lowers + uppers):
            n = int(min(b.constant() for b in uppers) - max(b.constant() for b in lowers) + 1)
            if 1 < n <= FULL_UNROLL:
                out[loop.location.line] = (0, f"loop '{loop.source_name}' has {n} "
                                              "iterations: unrolled completely")
            continue
        registers = set()
        for s in inside:
            for a in s.accesses:
                if a.array not in params or a.member is None or a.flat is None:
                    continue
                k, g = layout.group_of(a.member)
                stride = lane_stride(model, a.flat, "x")
                if g.components and counter in a.flat.variables and stride == Poly():
                    registers.add((a.array, k, g.size // 4))
        if registers:
            held = sum(r for _, _, r in registers)
            factor = MAX_UNROLL
            while factor > 2 and factor * held > LOAD_REGISTERS:
                factor //= 2
            out[loop.location.line] = (factor, f"loop '{loop.source_name}' reads the same "
                                          f"element in every thread ({held} registers of "
                                          f"vector loads per iteration): unrolled {factor} "
                                          "times")
    return out


# a new layout must save this fraction of the original's cost (never slower; conversions
# at the host boundary cost a pass over the array each)
MIN_GAIN = 0.10


def choose(struct: StructType, uses: list[Use], forced: str | None = None
           ) -> tuple[Layout, list[tuple[Layout, Price]]]:
    """The cheapest candidate (the original unless a new layout saves MIN_GAIN), and
    every candidate with its price; `forced`: a kind asked for by the user."""
    priced = [(c, total_price(c, uses)) for c in candidates(struct, uses)]
    if forced is not None:
        chosen = next((c for c, _ in priced if c.kind == forced), priced[0][0])
        return chosen, priced
    base = priced[0][1].total
    best = min(priced, key=lambda cp: (cp[1].total, cp[0].kind != "aos"))
    if best[0].kind != "aos" and best[1].total > (1 - MIN_GAIN) * base:
        best = priced[0]
    return best[0], priced


# ---------------------------------------------------------------- the whole program


@dataclass
class LayoutDecision:
    """The layout chosen for the device arrays of one struct type, and what it touches.
    `reason`: why the layout stays (refused or no gain); None when it changes."""

    struct: StructType
    layout: Layout
    priced: list[tuple[Layout, Price]]
    uses: list[Use]
    kernels: dict[str, dict[str, Layout]] = field(default_factory=dict)  # kernel -> params
    launches: list[tuple[object, dict[int, Layout]]] = field(default_factory=list)
    calls: list = field(default_factory=list)         # struct_arrays.HostCall
    variables: tuple[str, ...] = ()
    reason: str | None = None
    texts: dict[str, str] = field(default_factory=dict)   # kernel -> its new text
    unrolled: dict[str, dict] = field(default_factory=dict)   # kernel -> unroll_factors
    insert_at: int | None = None       # where the layout runtime goes in the file

    @property
    def changes(self) -> bool:
        return self.reason is None and self.layout.kind != "aos"

    def summary(self) -> str:
        """The predicted effect over the program, against the array of structs."""
        before = self.priced[0][1]
        after = next(p for c, p in self.priced if c is self.layout)
        return (f"predicted {before.per_request():.1f} -> {after.per_request():.1f} sectors "
                f"per request, {before.requests:.3g} -> {after.requests:.3g} requests, "
                f"{before.dram:.3g} -> {after.dram:.3g} sectors of memory traffic: "
                f"{100 * (1 - after.total / before.total):.0f}% less over the program")


def plan_layouts(program, analyses, forced: str | None = None) -> list[LayoutDecision]:
    """Per struct type whose arrays kernels read by field: the layout over all kernels
    (weighted by execution counts) and whether it can be applied: every device array
    of the type allocated and followed in the host code, every kernel that receives one
    rewritable. `forced`: "soa" / "grouped" / "none" (keep), as the user asks."""
    from polycoal.frontend.struct_arrays import struct_array_uses
    structs = program.structs
    uses: dict[str, list[Use]] = {}
    for a in analyses:
        for name, found in kernel_uses(a, structs).items():
            uses.setdefault(structs[name].name, []).extend(found)
    if not uses:
        return []
    names = {spelling: s.name for spelling, s in structs.items()
             if s.plain and not s.vector}
    host = struct_array_uses(program, names)
    out = []
    for name, found in uses.items():
        struct = next(s for s in structs.values() if s.name == name)
        layout, priced = choose(struct, found, None if forced in (None, "auto", "none")
                                else forced)
        d = LayoutDecision(struct, layout, priced, found)
        out.append(d)
        if forced == "none":
            d.reason = "layouts kept (--layout none)"
            continue
        if layout.kind == "aos":
            d.reason = ("no layout saves " f"{int(MIN_GAIN * 100)}% of the sectors and "
                        "requests of the array of structs")
            continue
        arrays = host.get(name)
        if arrays is None or not arrays.variables:
            d.reason = (f"no device array of {name} is allocated with cudaMalloc in this "
                        "file (its storage may be shared with code polycoal cannot see)")
            continue
        if arrays.escapes:
            line, what = arrays.escapes[0]
            d.reason = f"{what} (line {line})"
            continue
        d.variables = tuple(sorted(arrays.variables))
        d.calls = list(arrays.calls)
        bad = [c for c in d.calls if c.function == "cudaMemcpy" and len(c.arguments) != 4]
        if bad:
            d.reason = f"a cudaMemcpy with {len(bad[0].arguments)} arguments (line {bad[0].line})"
            continue
        # kernels: every S* parameter of a kernel that receives a tracked array
        by_kernel: dict[str, dict[int, Layout]] = {}
        for launch, position in arrays.launches:
            by_kernel.setdefault(launch.kernel, {})[position] = layout
        for kernel_name, positions in by_kernel.items():
            kernel = program.kernel(kernel_name)
            if kernel is None or kernel.span is None:
                d.reason = f"kernel '{kernel_name}' is not defined in this file"
                break
            if program.references.get(kernel_name):
                d.reason = (f"kernel '{kernel_name}' is also named outside its launches "
                            f"(line {program.references[kernel_name][0]})")
                break
            params = {kernel.parameters[n].name: layout for n in positions
                      if n < len(kernel.parameters)}
            for launch in program.launches_of(kernel_name):
                taken = {n for lz, n in arrays.launches if lz is launch}
                if taken != set(positions):
                    d.reason = (f"a launch of '{kernel_name}' (line {launch.location.line}) "
                                "passes it an array polycoal does not follow")
                    break
            if d.reason:
                break
            d.kernels[kernel_name] = params
        if d.reason:
            continue
        d.launches = [(launch, by_kernel[launch.kernel]) for launch, _ in arrays.launches]
        seen, unique = set(), []
        for launch, positions in d.launches:
            if id(launch) not in seen:
                seen.add(id(launch))
                unique.append((launch, positions))
        d.launches = unique
    return out


def field_waste(analyses, struct: StructType) -> list[tuple[str, str, int, int]]:
    """(field, kernel, sectors, ideal) of the worst request of each field of `struct` in
    each kernel, as the arrays are (the wasted sectors: sectors - ideal)."""
    worst: dict[tuple[str, str], tuple[int, int]] = {}
    for a in analyses:
        for r in a.references:
            acc = r.access
            if acc.struct != struct.name or acc.member is None or r.sectors is None:
                continue
            key = (acc.member, a.kernel.name)
            if key not in worst or r.sectors - r.ideal_sectors > worst[key][0] - worst[key][1]:
                worst[key] = (r.sectors, r.ideal_sectors)
    order = {leaf.path: k for k, leaf in enumerate(struct.leaves())}
    return [(f, k, s, i) for (f, k), (s, i) in
            sorted(worst.items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0][1]))]


def summary(decision: LayoutDecision, analyses) -> dict:
    """Plain data for reports: the fields read together, each candidate's price, the
    choice and whether it applies."""
    d = decision
    return {
        "struct": d.struct.name, "bytes": d.struct.size,
        "kernels": sorted({u.kernel for u in d.uses}),
        "arrays": list(d.variables),
        "read_together": [{"kernel": u.kernel, "array": u.array, "kind": u.kind,
                           "fields": sorted(u.leaves, key=lambda p: d.struct.leaf(p).offset),
                           "lane_stride": u.stride, "requests": u.count / 32,
                           "lines": list(u.lines)} for u in d.uses],
        "candidates": [{"kind": c.kind, "layout": c.describe(),
                        "element_bytes": c.element_bytes, "requests": p.requests,
                        "sectors": p.sectors, "sectors_per_request": p.per_request()}
                       for c, p in d.priced],
        "chosen": d.layout.kind, "applied": d.changes, "reason": d.reason,
        "fields": [{"field": f, "kernel": k, "sectors": s, "ideal": i, "wasted": s - i}
                   for f, k, s, i in field_waste(analyses, d.struct)],
    }
