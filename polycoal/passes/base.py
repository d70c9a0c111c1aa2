"""What every pass proposes: a candidate form (the change and how it runs), and the
pass itself (its name and its `propose`)."""


from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from polycoal.analysis.roofline import Prediction, predict, shipped_machine
from polycoal.analysis.work import Geometry, form_work
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.restructure import Mapping


@dataclass(frozen=True)
class Candidate:
    """A form a pass proposes: the change, and how it runs (for its price)."""

    decision: KernelDecision
    geometry: Geometry


@dataclass(frozen=True)
class Pass:
    name: str
    propose: Callable[[Program, Kernel, KernelDecision, TransformOptions], "Candidate | None"]


def mapping_of(d: KernelDecision, axes: tuple[str, ...], sequential: tuple[str, ...]
               ) -> Mapping:
    """The restructuring ILP's mapping with the axes a form puts on threads."""
    return Mapping(axes, sequential, d.mapping.costs, d.mapping.parallel, d.mapping.ilp)


def decided_note(launches, takes: list[bool | None], verdicts=(
        (True, "always passes it (no check written)", "always pass it (no check written)"),
        (False, "always fails it (left as written)", "always fail it (left as written)"))
        ) -> str:
    """`; the launch at line 40 always passes it...`: the launches whose known values
    decide a run-time check, by verdict (`verdicts`: the verdict and what one launch, or
    several, with it do)."""
    note = ""
    for verdict, one, several in verdicts:
        lines = [str(l.location.line) for l, t in zip(launches, takes) if t is verdict]
        if lines:
            many = len(lines) > 1
            note += (f"; the launch{'es' if many else ''} at line{'s' if many else ''} "
                     f"{', '.join(lines)} {several if many else one}")
    return note


def price_forms(d: KernelDecision, options: TransformOptions,
            forms: list[tuple[str, Geometry]]) -> tuple[Prediction, list, tuple[str, ...]]:
    """The kernel as written and each form (name, geometry) priced by the performance
    model at the launch's sizes (and polycoal bench's, `price_at`), with the sizes it
    took without knowing them."""
    m = shipped_machine()
    values = dict(options.price_at)
    work = form_work(d.analysis, m, values=values)
    return (predict(work, m),
            [(form, predict(form_work(d.analysis, m, g, values), m)) for form, g in forms],
            work.assumed)
