"""What every pass proposes: a candidate form (the change and how it runs), and the
pass itself (its name and its `propose`)."""


from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from polycoal.analysis.occupancy import compiled_resources, resident_warps
from polycoal.analysis.roofline import Prediction, occupancy_decides, predict, shipped_machine
from polycoal.analysis.work import Geometry, form_work
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.restructure import Mapping
from polycoal.validate.experiment import program_declarations


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


@dataclass(frozen=True)
class FormCode:
    """The code of the kernel as written and of each form, for the compiler to read
    their registers and shared memory: the program's declarations its kernels need,
    and (kernel name, text) of the original then of each form (None: a form without
    code of its own, as a permutation of the original)."""

    declarations: tuple[str, ...]
    kernels: tuple[tuple[str, str] | None, ...]

    def module(self) -> str:
        """One module of every form, each in a namespace of its own (forms may name
        their kernels alike): `pc_form0` the original, `pc_form1` the first form..."""
        return "\n".join([*self.declarations, *(
            f"namespace pc_form{k} {{\n{code[1]}\n}}"
            for k, code in enumerate(self.kernels) if code is not None)])

    def entry(self, k: int) -> str | None:
        """How the mangled symbol of form k's kernel (a C++ function of its namespace)
        begins: its parameters' types follow."""
        if self.kernels[k] is None:
            return None
        space, name = f"pc_form{k}", self.kernels[k][0]
        return f"_ZN{len(space)}{space}{len(name)}{name}E"


def form_code(program: Program, kernel: Kernel, forms: list[KernelDecision]) -> FormCode:
    """The code of the kernel as written and of each form (its generated kernels)."""
    return FormCode(tuple(program_declarations(program)), (
        (kernel.name, kernel.expanded) if kernel.expanded else None,
        *((d.generated.name, d.generated.text)
                                          if d.generated is not None else None
                                          for d in forms)))


@dataclass(frozen=True)
class Priced:
    original: Prediction
    forms: list                      # (form, Prediction), in the forms' order
    assumed: tuple[str, ...]         # sizes the model took without knowing them
    occupancy: tuple = ()            # (form, warps, Resources) ptxas decided


def price_forms(d: KernelDecision, options: TransformOptions,
                forms: list[tuple[str, Geometry]], code: FormCode | None = None) -> Priced:
    """The kernel as written and each form (name, geometry) priced by the performance
    model at the launch's sizes (and polycoal bench's, `price_at`), with the sizes it
    took without knowing them. Where the warps a multiprocessor holds could change the
    choice (roofline.occupancy_decides) and nvcc is present, the registers and shared
    memory ptxas allocates each form's `code` decide them instead of the estimate."""
    m = shipped_machine()
    values = dict(options.price_at)
    works = [form_work(d.analysis, m, values=values),
             *(form_work(d.analysis, m, g, values) for _, g in forms)]
    read: tuple = ()
    if code is not None and options.model and options.occupancy == "ptxas" and \
            occupancy_decides(works[0], works[1:], m):
        works, read = _compiled_occupancy(works, ["original", *(f for f, _ in forms)], code, m)
    return Priced(predict(works[0], m), [(form, predict(w, m)) for (form, _), w
                                         in zip(forms, works[1:])], works[0].assumed, read)


def _compiled_occupancy(works: list, names: list[str], code: FormCode, m) -> tuple[list, tuple]:
    """`works` with the occupancy of each form whose kernel ptxas compiled (the others
    keep the estimate), and (form, warps, Resources) of those."""
    found = compiled_resources(code.module())
    out, read = [], []
    for k, (w, name) in enumerate(zip(works, names)):
        entry = code.entry(k)
        r = next((r for symbol, r in found if entry and symbol.startswith(entry)), None)
        warps = resident_warps(r, round(w.block_warps * 32), m) if r else 0
        if warps:
            w = replace(w, resident=float(warps))
            read.append((name, warps, r))
        out.append(w)
    return out, tuple(read)
