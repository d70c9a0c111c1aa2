"""Analysis: dependences and races, coalescing per reference, suggestions (`analyze_kernel`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from polycoal.analysis.coalescing import ReferenceReport, analyze_reference, permutation_cost
from polycoal.analysis.counting import Count, count_statement
from polycoal.analysis.dependences import (Dependence, Race, carried_by, compute_dependences,
                                           detect_races)
from polycoal.diagnostics import Diagnostic, InputError
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.program import Kernel, Program
from polycoal.model.extract import extract_model
from polycoal.model.kernel_model import KernelModel, Loop, OutsideModel


@dataclass
class LoopReport:
    loop: Loop
    depth: int
    parallel: bool
    reduction: str | None          # "tmp[i] (+)" when the loop carries only a reduction


@dataclass
class KernelAnalysis:
    kernel: Kernel
    model: KernelModel | None
    references: list[ReferenceReport] = field(default_factory=list)
    races: list[Race] = field(default_factory=list)
    dependences: list[Dependence] = field(default_factory=list)
    loops: list[LoopReport] = field(default_factory=list)
    best_x: str | None = None
    axis_costs: dict[str, int] = field(default_factory=dict)
    suggestions: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def global_references(self) -> list[ReferenceReport]:
        return [r for r in self.references if r.access.space in ("global", "constant")]

    def totals(self) -> tuple[int | None, int | None, bool]:
        """(total accesses, uncoalesced accesses, exact) over global references."""
        total = unco = 0
        exact = True
        for r in self.global_references:
            if r.count.value is None:
                return None, None, False
            exact = exact and r.count.exact
            total += r.count.value
            if r.coalesced is False:
                unco += r.count.value
        return total, unco, exact


@dataclass
class ProgramAnalysis:
    program: Program
    kernels: list[KernelAnalysis]


def analyze_program(program: Program, kernel_name: str | None = None) -> ProgramAnalysis:
    """Analyse every kernel of `program` (or only `kernel_name`)."""
    kernels = [k for k in program.kernels if kernel_name is None or k.name == kernel_name]
    if kernel_name is not None and not kernels:
        known = ", ".join(k.name for k in program.kernels) or "none"
        raise InputError(f"{program.path}: no kernel named '{kernel_name}' "
                         f"(kernels: {known})")
    return ProgramAnalysis(program, [analyze_kernel(k, program) for k in kernels])


# the most statements a kernel's dependences are computed for (see analyze_kernel)
STATEMENT_BUDGET = 150


def analyze_kernel(kernel: Kernel, program: Program,
                   collapse: frozenset[str] = frozenset(),
                   assumed: tuple[str, ...] = (),
                   signed: "bool | frozenset[str]" = True) -> KernelAnalysis:
    """The analysis of one kernel; `collapse` names thread axes to model one thread wide
    (the copies along an axis the kernel never reads, see transform's
    --collapse-redundant-threads); `assumed`: constraints on the parameters the analysis
    may take as true (checked at run time, optimize/assumptions.py); `signed`: the int
    arguments taken non-negative, all or a set (KernelModel.signed)."""
    result = KernelAnalysis(kernel, None)
    if kernel.ast is None:
        return result
    model = extract_model(kernel, program, collapse, signed, assumed)
    result.model = model
    result.diagnostics += model.notes
    counts: dict[str, Count] = {s.name: count_statement(model, s) for s in model.statements}
    for s in model.statements:
        for a in s.accesses:
            if a.space in ("private", "local", "shared"):
                continue
            result.references.append(analyze_reference(model, s, a, counts[s.name]))
    if len(model.statements) > STATEMENT_BUDGET:
        # dependences and races cost the square of the statements (a kernel unrolled by
        # hand, hundreds of updates of private scalars): judged by its references alone
        model.outside.append(OutsideModel(
            "size", kernel.location, f"{len(model.statements)} statements, more than the "
            f"{STATEMENT_BUDGET} whose dependences polycoal computes",
            "analysis only; the kernel is left unchanged"))
        _suggest(result)
        return result
    barrier = model.synchronises
    if not barrier:
        result.races = detect_races(model)
    if model.is_affine:
        result.dependences = compute_dependences(model)
        result.loops = _loops(model, result.dependences)
    _suggest(result)
    return result


def _loops(model: KernelModel, deps: list[Dependence]) -> list[LoopReport]:
    seen: list[tuple[Loop, int]] = []
    for s in model.statements:
        for k, loop in enumerate(s.loops):
            if (loop, k) not in seen:
                seen.append((loop, k))
    by_name = {s.name: s for s in model.statements}
    reports = []
    for loop, k in seen:
        carried = carried_by(model, deps, loop, k)
        reduction = None
        if carried and all(d.source == d.sink for d in carried):
            # every carried dependence is a statement updating one element across the
            # loop (X op= e, X independent of the loop counter): a reduction per statement
            targets = []
            for name in sorted({d.source for d in carried}):
                s = by_name[name]
                arrays = {d.array for d in carried if d.source == name}
                target = next((a for a in s.accesses if a.kind == "write"), None)
                if not (s.update in ("+", "*", "min", "max") and target is not None and
                        arrays == {target.array} and target.subscripts is not None and
                        all(f"c{k}" not in p.variables for p in target.subscripts)):
                    targets = []
                    break
                targets.append(f"{target.text} ({s.update})")
            reduction = ", ".join(targets) or None
        reports.append(LoopReport(loop, k, not carried, reduction))
    return reports


def _suggest(result: KernelAnalysis) -> None:
    model = result.model
    refs = result.global_references
    axes = [a for a in cuda_dialect().axes if a in model.used_axes
            and any(d.axis == a for d in model.thread_dims)]
    if refs and len(axes) > 1 and not result.races:
        penalty = 2 * len(refs) + 1
        for axis in axes:
            result.axis_costs[axis] = sum(
                permutation_cost(r, axis, penalty) * (r.count.value or 1) for r in refs)
        best = min(axes, key=lambda a: (result.axis_costs[a], a != "x", a))
        result.best_x = best
        if best != "x" and result.axis_costs[best] < result.axis_costs.get("x", 1 << 62):
            result.suggestions.append(
                f"make thread axis {best} the new x: references along {best} are "
                f"unit-stride (weighted cost {result.axis_costs[best]} vs "
                f"{result.axis_costs.get('x')})")
    elif axes:
        result.best_x = "x" if "x" in axes else axes[0]
    for lr in result.loops:
        name = lr.loop.source_name
        if lr.reduction:
            result.suggestions.append(
                f"loop '{name}' (line {lr.loop.location.line}) carries a reduction into "
                f"{lr.reduction}: needs reduction restructuring (no permutation fixes it)")
        elif lr.parallel:
            unit = [r.access.text for r in refs if r.statement.loops[lr.depth:lr.depth + 1]
                    == (lr.loop,) and r.access.flat is not None and
                    abs(r.access.flat.coefficient(lr.loop.counter).constant()) == 1 and
                    r.access.flat.coefficient(lr.loop.counter).is_constant()]
            why = (f"; it is unit-stride in {', '.join(sorted(set(unit)))}" if unit else "")
            result.suggestions.append(
                f"loop '{name}' (line {lr.loop.location.line}) is parallel: it could become "
                f"a thread dimension{why}")
