"""The restructuring pass: the restructuring ILP's mapping (optimize/restructure.py) puts
the dims that coalesce on the thread axes, and the kernel is generated from the isl AST
(codegen/kernel.py). Where the mapping gains nothing, a reduction loop may still take a
reduction form (passes/reduction.py), or a column kernel its phases; otherwise the order
is kept, with a reason true of the references."""

from __future__ import annotations

import math

from polycoal.analysis.work import Geometry
from polycoal.codegen.edits import axis_descriptions
from polycoal.codegen.kernel import default_block, describe_dim, generate_kernel
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.model import isl_helpers
from polycoal.optimize.phases import PhasePlan
from polycoal.optimize.reduction import reduction_geometry
from polycoal.optimize.restructure import mapping_geometry, original_axes
from polycoal.passes.reduction import phase_plan, plan_column_phases, plan_reduction


def plan_mapped(program: Program, kernel: Kernel, d: KernelDecision,
                options: TransformOptions) -> KernelDecision:
    """The decision along the restructuring ILP's mapping (`d.mapping`): restructured, a
    reduction form, phases, or kept."""
    model, mapping = d.analysis.model, d.mapping
    old = original_axes(model)
    old_cost = mapping.costs.get(old[0]) if old else None
    new_cost = mapping.costs[mapping.axes[0]]
    # a new x with a single value (a loop of one iteration) runs one lane per warp: no gain
    single = isl_helpers.known_extent(model, mapping.axes[0]) == 1
    no_gain = tuple(mapping.axes) == old or (old_cost is not None and new_cost >= old_cost) \
        or single
    reductions = [l for l in d.analysis.loops if l.reduction]
    starved = _starved(model, old, mapping) if old_cost is not None and \
        new_cost <= old_cost and not single else None
    if no_gain and starved is None:
        kept = kept_order(d)
        if not reductions:
            # a reduction beside statements its loop carries other dependences for may
            # still be distributed from them (optimize/phases.py)
            plan = phase_plan(d, options) if any(s.update for s in model.statements) \
                else None
            if isinstance(plan, PhasePlan):
                return plan_column_phases(program, kernel, d, options, plan)
            return kept
        reduced = plan_reduction(program, kernel, d, options, reductions[0])
        if reduced.action != "unchanged":
            return reduced
        return kept.keep(kept.code, f"{kept.reason}; loop '{reductions[0].loop.source_name}' "
                         f"carries a reduction ({reduced.reason})")
    unbounded = [a for a in mapping.axes if not all(isl_helpers.dim_bounds(model, a))]
    if unbounded:
        return d.keep("unbounded-range", f"the range of {unbounded[0]} has no affine bound, "
                      "so no grid can be computed for it")
    block = options.block or default_block(len(mapping.axes))
    return d.change("restructured", "new geometry: " + ", ".join(
        f"{a} = {what}" for a, what in axis_descriptions(model, mapping)) + (
        f"; {starved}" if starved else ""),
        generated=generate_kernel(program.text, kernel, model, mapping, block))


def form_geometry(d: KernelDecision, options: TransformOptions) -> Geometry:
    """How the form `plan_mapped` chose runs, for the performance model."""
    if d.action == "restructured":
        return mapping_geometry(d.analysis.model, d.mapping, d.generated.block,
                                options.promote)
    launches = len(d.generated.stages) if d.generated else 1
    loops = [l.loop.counter for l in d.analysis.loops if l.reduction]
    # one warp a row, or a block of 32 x 32 threads a 32 columns: 32 threads a row or
    # column of the dims the reduction leaves
    if d.action in ("reduced", "columns") and d.mapping is not None and loops:
        rows = tuple(a for a in d.mapping.axes if a != loops[0])
        # warps a row: a block's warps over the rows one block covers
        warps = d.generated.block[0] // 32 // d.generated.per_block[0] \
            if d.action == "reduced" and d.generated else 1
        return reduction_geometry(launches, rows, loops[0] if d.action == "reduced" else None,
                                  max(1, warps))
    return reduction_geometry(launches)


# A launch of fewer threads than this leaves most of an H100/H200 idle (132
# multiprocessors: under 4 warps each); a mapping that puts a parallel loop on threads
# as well, at no higher coalescing cost, is taken when it gives STARVED_GAIN times more.
STARVED_THREADS = 16384


STARVED_GAIN = 8


def _starved(model, old: tuple[str, ...], mapping) -> str | None:
    """Why the mapping pays although it coalesces no better (the original runs too few
    threads and the mapping adds parallel loops as thread axes), else None. Known counts
    only: the launch's values must fix the ranges."""
    threads_dims = [t.name for t in model.thread_dims]
    extra = [a for a in mapping.axes if a not in threads_dims]
    if not old or not extra:
        return None
    spans = [isl_helpers.known_span(model, a) for a in threads_dims]
    more = [isl_helpers.known_span(model, a) for a in extra]
    if None in spans or None in more:
        return None
    threads = math.prod(spans)
    if threads >= STARVED_THREADS or threads * math.prod(more) < STARVED_GAIN * threads:
        return None
    loops = ", ".join(describe_dim(model, a) for a in extra)
    return (f"the original runs {threads} threads, too few to fill the GPU: the parallel "
            f"{loops} on threads as well ({threads * math.prod(more)} threads)")


def kept_order(d: KernelDecision) -> KernelDecision:
    """The order of the dims is kept, with a reason true of the references as analyze
    reports them ("already coalesced" only when no global reference is uncoalesced)."""
    bad = [r for r in d.analysis.global_references if r.coalesced is False]
    if not bad:
        return d.keep("already-coalesced", "already coalesced: no permutation lowers the cost")
    return d.keep("no-better-order", (
        f"no permutation lowers the cost ({len(bad)} uncoalesced reference"
        f"{'s' if len(bad) > 1 else ''} stay{'' if len(bad) > 1 else 's'} so: "
        f"{bad[0].access.text} at line {bad[0].access.location.line})"))
