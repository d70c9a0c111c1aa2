"""The staged-sweep pass: a thread that walks its row in a loop whose trips depend on
each other runs its loop on shared-memory tiles its warp fills and writes back
coalesced (optimize/sweep.py plans it, codegen/sweep.py emits it)."""

from __future__ import annotations

from pycparser import c_ast

from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.sweep import generate_sweep
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.normalise import walk
from polycoal.frontend.program import Kernel, Program
from polycoal.model.isl_helpers import known_extent
from polycoal.optimize.sweep import SweepPlan, sweep_geometry, sweep_plan
from polycoal.passes.base import Candidate, Pass, mapping_of


# Measured on the H200 (BENCHMARKS.md, "Host loops and sweeps"): the staged sweep gains
# where a trip's own work is long (ADI's sweeps and a tridiagonal elimination, a
# division a trip: 1.3-2.2x) or where rows are many (65536 rows: 1.3-4.3x); a trip of an
# addition or a multiply-add over a few thousand rows runs faster as written (0.3-0.7x),
# its uncoalesced loads served by the L1 a trip apart while the tiles' fills and
# write-backs add latency a chunk.
MANY_ROWS = 32768


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
    return Candidate(d.change(
        "swept", f"its trips along {describe_dim(model, plan.counter)} depend on each "
        f"other: {plan.describe}",
        generated=generate_sweep(program.text, kernel, model, plan),
        mapping=mapping_of(d, (plan.row,), (plan.counter,))), sweep_geometry(plan))


PASS = Pass("sweep", propose)
