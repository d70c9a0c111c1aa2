"""The reduction forms: a loop that accumulates into one place per thread, restructured
so that more threads share its trips. One warp a row (the lanes split the loop, a
shuffle tree adds up), a column reduction split over row groups (register sums, a
shared-memory combine, atomicAdd) or over a block per 32 columns, a column kernel in
phases, or the core paper's tiles (optimize/reduction.py says which shapes allow which,
codegen/column.py and codegen/kernel.py emit them). Each reassociates floating-point
additions."""

from __future__ import annotations

from polycoal.codegen.column import (generate_column_blocks, generate_column_phases,
                                     generate_column_split, generate_tiled_reduction,
                                     split_extents)
from polycoal.codegen.kernel import generate_kernel
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.model.isl_helpers import known_extent
from polycoal.optimize.phases import MIN_SPLIT_TRIPS, PhasePlan, plan_phases
from polycoal.optimize.reduction import (Obstacle, column_reduction_obstacle, one_thread,
                                         row_reduction_obstacle, row_warps)
from polycoal.passes.base import mapping_of


def plan_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                    options: TransformOptions, loop) -> KernelDecision:
    """Restructure a reduction as options.reduction says (auto: one warp per row for an
    uncoalesced row reduction, a split for a coalesced but starved column reduction);
    the changed decision, or the kernel kept with why not."""
    model, analysis = d.analysis.model, d.analysis
    if options.reduction == "none":
        return d.keep("reduction-disabled", "reduction restructuring disabled (--reduction "
                      "none)")
    row = row_reduction_obstacle(model, analysis)
    if options.reduction in ("auto", "warp") and row is None:
        return _plan_row_reduction(program, kernel, d, options, loop)
    shape = column_reduction_obstacle(model, analysis)
    if options.reduction == "tiles":
        refusal = row or shape
        if refusal is not None:
            return d.keep(refusal.code, refusal.text)
        try:
            tiled = generate_tiled_reduction(program.text, kernel, model, loop.loop.counter)
        except ValueError as e:
            return d.keep("reduction-shape", f"a reduction not tiled: {e}")
        return d.change(
            "tiled", f"row reduction over '{loop.loop.source_name}' (into {loop.reduction}): "
            "the core paper's partial sums in 16x16 tiles, shared memory and atomicAdd; "
            "floating-point additions are reassociated",
            generated=tiled,
            mapping=mapping_of(d, (loop.loop.counter, model.thread_dims[0].name), ()))
    if options.reduction in ("auto", "block") and row is not None and (
            row.code == "reduction-shape" or
            (row.code == "coalesced-along-threads" and shape is not None)):
        plan = phase_plan(d, options)
        if not isinstance(plan, Obstacle):
            return plan_column_phases(program, kernel, d, options, plan)
        if row.code == "reduction-shape" and plan.code != "reduction-shape":
            return d.keep(plan.code, plan.text)
    if options.reduction in ("auto", "block", "split") and row is not None and \
            row.code == "coalesced-along-threads":
        if shape is not None:
            return d.keep(shape.code, shape.text)
        extents = split_extents(model, loop.loop.counter)
        if extents[1] is not None and extents[1] < 1024:   # does not pay for its launches
            return d.keep("short-loop", f"its loop runs {extents[1]} times: too short to split")
        return _plan_column_reduction(program, kernel, d, options, extents, loop)
    if row is None:
        return d.keep("row-reduction", f"a row reduction, which --reduction "
                      f"{options.reduction} does not restructure")
    return d.keep(row.code, row.text)


def _plan_column_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                           options: TransformOptions, extents: tuple[int | None, int | None],
                           loop) -> KernelDecision:
    """A coalesced but starved column reduction: split over row chunks (2-D blocks,
    atomicAdd), or block-cooperative when asked (`--reduction block`: one launch, a block
    per 32 columns, no atomics, so the sums come out the same on every run; it keeps fewer
    loads in flight and measured 10% slower at n = 16384 on the H200)."""
    model = d.analysis.model
    fallback = ""
    if options.reduction == "block":
        try:
            generated = generate_column_blocks(program.text, kernel, model, loop.loop.counter,
                                               options.column_groups)
        except ValueError as e:
            fallback = f" (not one block per 32 columns: {e})"
        else:
            return d.change(
                "columns", f"column reduction over '{loop.loop.source_name}' (into "
                f"{loop.reduction}): a block of {generated.block[0]}x{generated.block[1]} "
                "threads per 32 columns, its rows split the loop and add up in shared "
                "memory; floating-point additions are reassociated", generated=generated,
                mapping=mapping_of(d, (model.thread_dims[0].name,), (loop.loop.counter,)))
    # one launch keeps its blocks' sums in the kernel's own device memory: a launch at a
    # time (every launch on the default stream, as written)
    one_stream = all(l.stream is None or l.stream.strip() in ("0", "NULL", "nullptr")
                     for l in program.launches_of(kernel.name))
    try:
        generated = generate_column_split(program.text, kernel, model, loop.loop.counter,
                                          extents, options.split, finish=one_stream)
    except ValueError as e:
        return d.keep("reduction-shape", f"a column reduction not split: {e}")
    columns, rows = generated.per_block[:2]
    finished = "__pc_done[" in generated.text
    return d.change(
        "split", f"column reduction over '{loop.loop.source_name}' (into {loop.reduction}) "
        f"split over more threads: {columns} columns x {rows} rows per block "
        f"({columns // 32} per thread), register sums, a shared-memory combine and " + (
            "the last block of each column adding the blocks' sums in order, then the "
            "statements before and after the loop, in one launch" if finished else
            "atomicAdd") + "; floating-point additions are reassociated" + fallback,
        generated=generated,
        mapping=mapping_of(d, (model.thread_dims[0].name, loop.loop.counter), ()))


def phase_plan(d: KernelDecision, options: TransformOptions) -> PhasePlan | Obstacle | None:
    """The kernel's phases (optimize/phases.py) where options allow the form; asked for
    by name (--reduction block), it is made for short loops too."""
    if options.reduction not in ("auto", "block"):
        return None
    return plan_phases(d.analysis.model, d.analysis,
                       0 if options.reduction == "block" else MIN_SPLIT_TRIPS)


def plan_column_phases(program: Program, kernel: Kernel, d: KernelDecision,
                        options: TransformOptions, plan: PhasePlan) -> KernelDecision:
    """A column kernel whose thread runs a sequence of loops, one of them a reduction
    (optimize/phases.py): a block per 32 columns, its rows splitting each loop in turn."""
    model = d.analysis.model
    try:
        generated = generate_column_phases(program.text, kernel, plan, options.column_groups)
    except ValueError as e:
        return d.keep("reduction-shape", f"not one block per 32 columns: {e}")
    return d.change(
        "columns", f"a column kernel in phases: a block of {generated.block[0]}x"
        f"{generated.block[1]} threads per 32 columns; {plan.describe()}; floating-point "
        "additions are reassociated", generated=generated,
        mapping=mapping_of(d, (model.thread_dims[0].name,), ("c0",)))


def _plan_row_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                        options: TransformOptions, loop) -> KernelDecision:
    """One warp per row: the reduction loop split over the lanes (see codegen.kernel)."""
    model = d.analysis.model
    mapping = mapping_of(d, (model.thread_dims[-1].name,), (loop.loop.counter,))
    block = options.block if options.block and options.block[0] % 32 == 0 and \
        options.block[1:] == (1, 1) else (256, 1, 1)     # whole warps along x only
    values = {**dict(options.price_at), **model.parameter_values}
    warps = 1 if options.block else row_warps(
        known_extent(model, model.thread_dims[-1].name, values),
        known_extent(model, loop.loop.counter, values))
    if warps > 1:
        block = (32 * warps, 1, 1)
    single = one_thread(model, [s for s in model.statements if s.loops])
    if warps > 1:
        how = (f"{'a single thread ran it' if single else 'few rows'}: a block of "
               f"{32 * warps} threads a row splits the loop, each warp adds up with a "
               "shuffle tree and thread 0 the warps' sums")
    elif single:
        how = ("a single thread ran it: one warp splits the loop (32 loads in flight "
               "instead of one) and adds up with a shuffle tree")
    else:
        how = "one warp per row, the lanes split the loop (coalesced) and add up with a shuffle tree"
    return d.change(
        "reduced", f"row reduction over '{loop.loop.source_name}' (into {loop.reduction}): "
        f"{how}; floating-point additions are reassociated",
        mapping=mapping,
        generated=generate_kernel(program.text, kernel, model, mapping, block,
                                  warp_reduction=loop.loop.counter, row_warps=warps))
