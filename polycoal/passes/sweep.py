"""The staged-sweep pass: a thread that walks its row in a loop whose trips depend on
each other runs its loop on shared-memory tiles its warp fills and writes back
coalesced (optimize/sweep.py plans it, codegen/sweep.py emits it)."""

from __future__ import annotations

from dataclasses import replace

from pycparser import c_ast

from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.sweep import generate_lanes, generate_sweep
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.normalise import walk
from polycoal.frontend.program import Kernel, Program
from polycoal.model.isl_helpers import known_extent
from polycoal.optimize.sweep import (VECTOR_CHUNK, SweepPlan, sweep_geometry, sweep_plan,
                                     vector_geometry, vector_obstacle, vector_warps)
from polycoal.passes.base import Candidate, Pass, mapping_of


# Measured on the H200 (BENCHMARKS.md): the staged sweep gains where a trip's own work
# is long (ADI's sweeps and a tridiagonal elimination, a division a trip) at every size
# measured; a trip of an addition or a multiply-add gains from 1024 rows, the fewest
# measured (1024 x 1024: a prefix sum per row 0.113 -> 0.032 ms, a backward filter 0.181
# -> 0.043; 4096 x 4096: 1.10 -> 0.18, 0.71 -> 0.15), where the first form of the sweep
# (a warp of 32 rows, no loads ahead) ran slower than as written (0.107 -> 0.212 ms at
# 1024 x 1024: the L1 serves the thread's next element a trip apart).
MANY_ROWS = 1024
# A warp runs the rows of its first lanes one trip at a time, each trip waiting on the
# last (a chain of dependent steps), and between chunks on its tiles' loads: with one
# warp a multiprocessor nothing hides either. Fewer rows a warp give more warps for the
# same rows, whose loads and chains the schedulers interleave; each warp's loads stay
# coalesced (a row's window is one load of the warp). Measured on the H200
# (tools/explore_sweep_forms.py, BENCHMARKS.md): 8 rows a warp the fastest or within 15%
# of it at 16384 and 65536 rows (a prefix sum per row 0.093 -> 0.061 ms at 65536 x 256
# against 32 rows a warp, a tridiagonal elimination 0.365 -> 0.268), 4 at 4096 rows
# (the prefix sum 0.93 -> 0.14 ms at 4096 x 4096; 2 rows or 1 no faster).
FEW_ROWS = 8192
WARP_ROWS = (4, 8)      # rows a warp runs below FEW_ROWS rows, and otherwise
# warps a row of the vectorised sweep, whatever the rows (None: vector_warps decides;
# tools/explore_sweep_forms.py sets it)
FORCED_WARPS: int | None = None


def warp_rows(rows: int | None, forced: int | None) -> int:
    """Rows a warp runs: `forced`, else by the rows' count (unknown: many)."""
    if forced is not None:
        return forced
    return WARP_ROWS[0] if rows is not None and rows < FEW_ROWS else WARP_ROWS[1]


def long_trips(model) -> bool:
    """Whether a trip divides (a division costs some 16 fused multiply-adds' issue)."""
    return any(isinstance(n, c_ast.BinaryOp) and n.op == "/"
               for s in model.statements for n in walk(s.node))


def propose(program: Program, kernel: Kernel, d: KernelDecision,
            options: TransformOptions) -> Candidate | None:
    if not options.sweep:
        return None
    model = d.analysis.model
    plan = sweep_plan(model, d.analysis)
    if not isinstance(plan, SweepPlan):
        return None
    rows = known_extent(model, plan.row, {**dict(options.price_at), **model.parameter_values})
    if not long_trips(model) and (rows is None or rows < MANY_ROWS):
        return None
    plan = replace(plan, warp_rows=warp_rows(rows, options.sweep_rows))
    return Candidate(d.change(
        "swept", f"its trips along {describe_dim(model, plan.counter)} depend on each "
        f"other: {plan.describe}",
        generated=generate_sweep(program.text, kernel, model, plan),
        mapping=mapping_of(d, (plan.row,), (plan.counter,))), sweep_geometry(plan))


def propose_lanes(program: Program, kernel: Kernel, d: KernelDecision,
                  options: TransformOptions) -> Candidate | None:
    """The vectorised sweep: where no trip of a row reads what an earlier trip wrote, the
    row's trips across a warp's lanes (optimize/sweep.vector_obstacle)."""
    if not options.sweep:
        return None
    model = d.analysis.model
    plan = sweep_plan(model, d.analysis)
    if not isinstance(plan, SweepPlan) or vector_obstacle(plan) is not None:
        return None
    values = {**dict(options.price_at), **model.parameter_values}
    warps = FORCED_WARPS or vector_warps(known_extent(model, plan.row, values),
                                         known_extent(model, plan.counter, values))
    who = "a warp" if warps == 1 else f"a block of {warps} warps"
    return Candidate(d.change(
        "vectorised", f"its trips along {describe_dim(model, plan.counter)} read what "
        f"later trips write, never what earlier ones wrote: {who} a row, its trips "
        f"{VECTOR_CHUNK * warps} at a time across the lanes, each chunk's reads before "
        "its stores",
        generated=generate_lanes(program.text, kernel, model, plan, warps),
        mapping=mapping_of(d, (plan.row,), (plan.counter,))), vector_geometry(plan, warps))


PASS = Pass("sweep", propose)
LANES = Pass("lanes", propose_lanes)
