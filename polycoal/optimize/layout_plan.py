"""The data layout of each struct type over a whole program (`plan_layouts`): which
candidate of optimize/layout.py, priced by optimize/layout_cost.py, each struct's device
arrays take, whether it can be applied (every array followed in the host code, every
kernel that receives one rewritable), and which loops of the kernels in a new layout are
unrolled. Reports read `summary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polycoal.analysis.coalescing import lane_stride
from polycoal.frontend.structs import StructType
from polycoal.model.poly import Poly
from polycoal.optimize.layout import Layout, candidates
from polycoal.optimize.layout_cost import (Price, Profile, Use, host_loops, kernel_uses,
                                           kernel_work, total_price, weight_at)

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


def choose(struct: StructType, uses: list[Use], forced: str | None = None,
           profile: Profile | None = None) -> tuple[Layout, list[tuple[Layout, Price]]]:
    """The cheapest candidate (the original unless a new layout saves MIN_GAIN), and
    every candidate with its price; `forced`: a kind asked for by the user."""
    together = [(u.leaves, u.count) for u in uses]
    priced = [(c, total_price(c, uses, profile)) for c in candidates(struct, together)]
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
    host_edits: list = field(default_factory=list)   # (span, text) of the host calls
    runtimes: tuple[str, str] = ("", "")   # the runtime's text, first in the file or not
    description: str = ""              # the layout and its predicted effect, in words

    @property
    def changes(self) -> bool:
        return self.reason is None and self.layout.kind != "aos"

    def summary(self) -> str:
        """The predicted effect over the program, against the array of structs."""
        before = self.priced[0][1]
        after = next(p for c, p in self.priced if c is self.layout)
        return (f"predicted {before.per_request():.1f} -> {after.per_request():.1f} sectors "
                f"per request, {before.requests:.3g} -> {after.requests:.3g} requests, "
                f"{before.wavefronts:.3g} -> {after.wavefronts:.3g} L1 wavefronts, "
                f"{before.dram:.3g} -> {after.dram:.3g} sectors of memory traffic, "
                f"{before.clocks:.3g} -> {after.clocks:.3g} multiprocessor clocks "
                f"({after.conversions:.3g} of them converting): "
                f"{100 * (1 - after.total / before.total) if before.total else 0:.0f}% less")


def plan_layouts(program, analyses, forced: str | None = None) -> list[LayoutDecision]:
    """Per struct type whose arrays kernels read by field: the layout over all kernels
    (weighted by execution counts) and whether it can be applied: every device array
    of the type allocated and followed in the host code, every kernel that receives one
    rewritable. `forced`: "soa" / "grouped" / "none" (keep), as the user asks."""
    from polycoal.frontend.struct_arrays import COPY, struct_array_uses
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
    loops = host_loops(program.tokens, [k.span for k in program.kernels if k.span])
    launches: dict[str, float] = {}
    for launch in program.launches:
        at = launch.span.start if launch.span else -1
        launches[launch.kernel] = launches.get(launch.kernel, 0.0) + weight_at(loops, at)
    work = {a.kernel.name: kernel_work(a) for a in analyses}
    out = []
    for name, found in uses.items():
        struct = next(s for s in structs.values() if s.name == name)
        arrays = host.get(name)
        conversions = sum(weight_at(loops, c.span.start) for c in (arrays.calls if arrays
                                                                    else [])
                          if c.function in COPY and c.tracked != (0, 1))
        profile = Profile(work, launches, conversions)
        layout, priced = choose(struct, found, None if forced in (None, "auto", "none")
                                else forced, profile)
        d = LayoutDecision(struct, layout, priced, found)
        out.append(d)
        if forced == "none":
            d.reason = "layouts kept (--layout none)"
            continue
        if layout.kind == "aos":
            d.reason = (f"no layout saves {int(MIN_GAIN * 100)}% of the predicted time of "
                        "the kernels that use the array, conversions included")
            continue
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
        bad = [c for c in d.calls if c.function in COPY and
               len(c.arguments) not in ((4, 5) if c.function.endswith("Async") else (4,))]
        if bad:
            d.reason = (f"a {bad[0].function} with {len(bad[0].arguments)} arguments "
                        f"(line {bad[0].line})")
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
                        "sectors": p.sectors, "sectors_per_request": p.per_request(),
                        "wavefronts": p.wavefronts, "memory_sectors": p.dram,
                        "clocks": p.clocks, "conversion_clocks": p.conversions}
                       for c, p in d.priced],
        "chosen": d.layout.kind, "applied": d.changes, "reason": d.reason,
        "fields": [{"field": f, "kernel": k, "sectors": s, "ideal": i, "wasted": s - i}
                   for f, k, s, i in field_waste(analyses, d.struct)],
    }
