"""The staging pass: a kernel whose references coalesce along two different dims (a
transpose) reads and writes through 32 x 32 tiles in shared memory, both sides
coalesced (optimize/staging.py plans it, codegen/staged.py emits it)."""

from __future__ import annotations

from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.staged import generate_staged
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.staging import StagingPlan, staging_geometry, staging_plan
from polycoal.passes.base import Candidate, Pass, mapping_of


def propose(program: Program, kernel: Kernel, d: KernelDecision,
            options: TransformOptions) -> Candidate | None:
    if not options.staging:
        return None
    model = d.analysis.model
    plan = staging_plan(model, d.analysis)
    if not isinstance(plan, StagingPlan):
        return None
    return Candidate(d.change(
        "staged", f"its references coalesce along {describe_dim(model, plan.x)} and "
        f"{describe_dim(model, plan.y)}: {plan.describe}, both sides coalesced",
        generated=generate_staged(program.text, kernel, model, plan),
        mapping=mapping_of(d, (plan.x, plan.y), ())), staging_geometry(model, plan))


PASS = Pass("staging", propose)
