"""The staged-sweep pass: a thread that walks its row in a loop whose trips depend on
each other runs its loop on shared-memory tiles its warp fills and writes back
coalesced (optimize/sweep.py plans it, codegen/sweep.py emits it)."""

from __future__ import annotations

from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.sweep import generate_sweep
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.sweep import SweepPlan, sweep_geometry, sweep_plan
from polycoal.passes.base import Candidate, Pass, mapping_of


def propose(program: Program, kernel: Kernel, d: KernelDecision,
            options: TransformOptions) -> Candidate | None:
    if not options.sweep:
        return None
    model = d.analysis.model
    plan = sweep_plan(model, d.analysis)
    if not isinstance(plan, SweepPlan):
        return None
    return Candidate(d.change(
        "swept", f"its trips along {describe_dim(model, plan.counter)} depend on each "
        f"other: {plan.describe}",
        generated=generate_sweep(program.text, kernel, model, plan),
        mapping=mapping_of(d, (plan.row,), (plan.counter,))), sweep_geometry(plan))


PASS = Pass("sweep", propose)
