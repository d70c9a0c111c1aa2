"""The register-window pass: a stencil whose threads read overlapping windows of rows
runs several rows a thread, each element of the window loaded once into a register; a
kernel of one element a thread that shares nothing runs several elements a thread, its
loads in flight together (optimize/window.py plans it, codegen/window.py emits it)."""

from __future__ import annotations

from polycoal.analysis.roofline import shipped_machine
from polycoal.analysis.work import form_work
from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.window import generate_window
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.window import WindowPlan, window_geometry, window_plan
from polycoal.passes.base import Candidate, Pass, mapping_of


def propose(program: Program, kernel: Kernel, d: KernelDecision,
            options: TransformOptions) -> Candidate | None:
    if not options.window:
        return None
    # fewer, longer threads gain only on grids of many waves (measured: 1.3-1.5x at
    # 8192 x 8192, 0.88x at 1000 x 1000): proposed only where the launch's sizes are
    # known, for the model to price it at them
    if not options.window_always and \
            form_work(d.analysis, shipped_machine(), values=dict(options.price_at)).assumed:
        return None
    model = d.analysis.model
    # the lanes along the dim the restructuring ILP puts on x (the writes coalesce along it)
    x = d.mapping.axes[0] if d.mapping is not None and d.mapping.axes else None
    plan = window_plan(model, d.analysis, x)
    if not isinstance(plan, WindowPlan):
        return None
    # rows that share nothing gain only by the bytes they put in flight, past the L2
    # and over many waves: the model's to price, not a form to take unpriced
    if not plan.shares and not options.model and not options.window_always:
        return None
    y = describe_dim(model, plan.y)
    why = f"neighbouring values of {y} read the same elements" if plan.shares else \
        f"more bytes in flight: each thread runs several values of {y}, its loads " \
        "issued before its stores"
    return Candidate(d.change(
        "windowed", f"{why}: {plan.describe}",
        generated=generate_window(program.text, kernel, model, plan),
        mapping=mapping_of(d, tuple(dict.fromkeys((plan.x, plan.y))), ())),
        window_geometry(plan))


PASS = Pass("window", propose)
