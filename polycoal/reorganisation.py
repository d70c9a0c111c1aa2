"""The irregular-reference pass of `transform`: for the kernels the affine passes keep,
read their gathers and segment loops from reorganised copies where launches reuse them
(optimize/reorganise.py plans, codegen/irregular.py writes, validate/irregular.py
checks). It sits beside the driver (polycoal.transform), which calls it and renders its
edits; it imports nothing of the driver.
"""

from __future__ import annotations

from dataclasses import replace

from polycoal.codegen.irregular import (NotRewritable, groups, mark_writes, rewrite_kernel,
                                        rewrite_launch, runtime, runtime_position)
from polycoal.decisions import KernelDecision
from polycoal.diagnostics import Diagnostic
from polycoal.frontend.program import Program, Span
from polycoal.optimize.layout_cost import host_loops
from polycoal.optimize.reorganise import Reorganisation, host_writes, plan_reorganisation

SIZES = {"float": 4, "int": 4, "unsigned": 4, "double": 8, "long": 8, "short": 2,
         "char": 1, "bool": 1, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8,
         "size_t": 8, "half": 2, "__half": 2, "int8_t": 1, "uint8_t": 1, "int16_t": 2,
         "uint16_t": 2}


def _written(decisions: list[KernelDecision]):
    models = {d.kernel: d.analysis.model for d in decisions
              if d.analysis is not None and d.analysis.model is not None}

    def written(kernel: str):
        model = models.get(kernel)
        if model is None:
            return None
        return {a.array for _, a in model.accesses() if a.kind == "write"}
    return written


def _watched(program: Program, plan: Reorganisation) -> set[str]:
    kernel = program.kernel(plan.kernel)
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    out = set()
    for launch in program.launches_of(plan.kernel):
        for r in plan.found:
            for a in (r.array, r.index_array, r.length_array):
                if a and a in position and position[a] < len(launch.arguments):
                    out.add(launch.arguments[position[a]].strip())
    return out


def plan_all(program: Program, decisions: list[KernelDecision], errors: list[Diagnostic]
             ) -> list[KernelDecision]:
    """The decisions with kernels kept by the other passes reorganised where planned
    and rewritable; a failure is confined to its kernel (the kernel stays)."""
    candidates = [d for d in decisions if d.action == "unchanged" and d.analysis is not None
                  and d.analysis.model is not None and d.code != "internal-error"]
    if not candidates:
        return decisions
    loops = host_loops(program.tokens, [k.span for k in program.kernels if k.span])
    plans: dict[str, Reorganisation] = {}
    for d in candidates:
        try:
            plans[d.kernel] = plan_reorganisation(program, d.analysis, loops)
        except Exception as error:              # confined: reported, the kernel stays
            _internal(program, d.kernel, error, "planning its irregular references", errors)
    eligible = [p for p in plans.values() if any(r.obstacle is None for r in p.found)]
    watched = set().union(*(_watched(program, p) for p in eligible)) if eligible else set()
    if not watched:
        return [_noted(d, plans.get(d.kernel)) for d in decisions]
    writes = host_writes(program, watched, _written(decisions))
    out = []
    for d in decisions:
        plan = plans.get(d.kernel)
        if plan is None or plan not in eligible:
            out.append(_noted(d, plan))
            continue
        try:
            plan = plan_reorganisation(program, d.analysis, loops, writes)
            bad = [r for r in plan.applied if r.element_type not in SIZES]
            if plan.changes and bad:
                plan.reason = f"'{bad[0].array}' has elements of type '{bad[0].element_type}'"
            if plan.changes:
                plan.text = rewrite_kernel(program, program.kernel(d.kernel),
                                           groups(plan.applied))
        except NotRewritable as error:
            plan.reason = str(error)
        except Exception as error:
            _internal(program, d.kernel, error, "rewriting its irregular references", errors)
            out.append(d)
            continue
        if not plan.changes:
            out.append(_noted(d, plan))
            continue
        out.append(replace(d, action="reorganised", code="reorganised",
                           reason=f"irregular references reorganised: {plan.describe()}",
                           reorganisation=plan))
    return out


def _noted(d: KernelDecision, plan: Reorganisation | None) -> KernelDecision:
    """A kept kernel with its irregular references, and why they stay, in its reason."""
    if plan is None or not plan.found or d.action != "unchanged":
        return d
    return replace(d, reorganisation=plan)


def _internal(program: Program, kernel: str, error: Exception, stage: str,
              errors: list[Diagnostic]) -> None:
    message = (str(error).splitlines() or [""])[0]
    errors.append(Diagnostic("error", "internal-error",
                             f"kernel '{kernel}': internal error in polycoal while {stage} "
                             f"({type(error).__name__}: {message}); the kernel is left "
                             "unchanged", program.kernel(kernel).location, kernel))


def edits(program: Program, decisions: list[KernelDecision]) -> list[tuple[Span, str]]:
    """Every edit of the reorganised kernels: kernels, launches, marks of the host's
    writes, the runtime."""
    chosen = [d for d in decisions if d.action == "reorganised"]
    if not chosen:
        return []
    out: list[tuple[Span, str]] = []
    site = 0
    for d in chosen:
        plan = d.reorganisation
        kernel = program.kernel(d.kernel)
        out.append((kernel.span, plan.text))
        plan_groups = groups(plan.applied)
        for s in plan.sites:
            out.append((s.launch.span, rewrite_launch(
                program, s.launch, kernel, plan_groups,
                s.bounds if s.why_not is None else None, s.reuse, site)))
            if s.why_not is None:
                site += len(plan_groups)
    watched = set().union(*(_watched(program, d.reorganisation) for d in chosen))
    writes = host_writes(program, watched, _written(decisions))
    replaced = {s.start for s, _ in out}
    marks = [m for m in writes.marks if not (m[1] == "call" and m[0].start in replaced)]
    out += mark_writes(marks)
    first = min(min(program.kernel(d.kernel).span.start for d in chosen),
                min(s.start for s, _ in out))
    out.append((Span(runtime_position(program, first), runtime_position(program, first)),
                runtime(site)))
    return out
