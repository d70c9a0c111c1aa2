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
from polycoal.decisions import KernelDecision, internal_error
from polycoal.diagnostics import Diagnostic
from polycoal.frontend.program import JUDGED, Program, Span
from polycoal.optimize.reorganise import (Reorganisation, host_writes, plan_program,
                                          watched_arrays, written_parameters)

def plan_all(program: Program, decisions: list[KernelDecision], errors: list[Diagnostic],
             preprocessor=None) -> list[KernelDecision]:
    """The decisions with kernels kept by the other passes reorganised where planned
    and rewritable; a failure is confined to its kernel (the kernel stays)."""
    candidates = [d.analysis for d in decisions if d.action == "unchanged" and
                  d.analysis is not None and d.analysis.model is not None and
                  d.code != "internal-error" and JUDGED not in d.kernel]
    if not candidates:
        return decisions
    failed: list[tuple[str, Exception]] = []
    plans = plan_program(program, candidates, [d.analysis for d in decisions
                                               if d.analysis is not None], failed)
    for kernel, error in failed:             # confined: reported, the kernel stays
        _internal(program, kernel, error, "planning its irregular references", errors)
    out = []
    for d in decisions:
        plan = plans.get(d.kernel)
        if plan is None or not plan.applied:
            out.append(_noted(d, plan))
            continue
        try:
            plan.preprocessor = preprocessor
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
    return replace(d, reorganisation=plan, reason=f"{d.reason}; its irregular references "
                   f"stay: {plan.reason}" if plan.reason else d.reason)


def _internal(program: Program, kernel: str, error: Exception, stage: str,
              errors: list[Diagnostic]) -> None:
    errors.append(internal_error(kernel, program.kernel(kernel).location, error, stage)[0])


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
    watched = set().union(*(watched_arrays(program, d.reorganisation, d.reorganisation.applied)
                            for d in chosen))
    writes = host_writes(program, watched, written_parameters(
        d.analysis.kernel for d in decisions if d.analysis is not None))
    replaced = {s.start for s, _ in out}
    marks = [m for m in writes.marks if not (m[1] == "call" and m[0].start in replaced)]
    out += mark_writes(marks)
    first = min(min(program.kernel(d.kernel).span.start for d in chosen),
                min(s.start for s, _ in out))
    out.append((Span(runtime_position(program, first), runtime_position(program, first)),
                runtime(site)))
    return out
