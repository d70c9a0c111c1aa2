"""What every pass proposes: a candidate form (the change and how it runs), and the
pass itself (its name and its `propose`)."""


from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from polycoal.analysis.work import Geometry
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
