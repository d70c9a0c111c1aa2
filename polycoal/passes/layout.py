"""The layout pass, over the whole program: arrays of structs that kernels read with a
stride are stored in a new layout (structure of arrays, or grouped fields:
optimize/layout.py and layout_plan.py choose it, codegen/layout.py rewrites the kernels,
their launches and the host's allocation and copies through a runtime). A layout is
taken for every kernel of its arrays or for none; validate/layout.py checks each kernel
in it."""

from __future__ import annotations

from dataclasses import replace

from polycoal.analysis.roofline import MARGIN, Choice, predict, shipped_machine
from polycoal.analysis.work import form_work
from polycoal.codegen.layout import (NotRewritable, definition_end, rewrite_call,
                                     rewrite_kernel, runtime)
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.diagnostics import Diagnostic
from polycoal.frontend.program import JUDGED, Program, Span
from polycoal.optimize.layout_plan import LayoutDecision, plan_layouts, unroll_factors


def layout_host_edits(program: Program, decisions: list[KernelDecision]
                       ) -> list[tuple[Span, str]]:
    """The host side of each layout in the output (made with the plan): the runtime
    after the struct's definition, the runtime calls on its arrays through it."""
    plans: list[LayoutDecision] = []
    for d in decisions:
        if d.action == "layout" and all(p is not d.layout for p in plans):
            plans.append(d.layout)
    out = []
    for k, plan in enumerate(plans):       # the runtime's shared part with the first
        out.append((Span(plan.insert_at, plan.insert_at), "\n" + plan.runtimes[k > 0]))
        out += plan.host_edits
    return out


def plan_program_layouts(program: Program, decisions: list[KernelDecision],
                  options: TransformOptions, errors: list[Diagnostic]) -> list[LayoutDecision]:
    """The layouts of the program's arrays of structs (optimize/layout.py), each with the
    text of its kernels in the new layout, or the reason it stays."""
    if options.kernel is not None or options.layout == "none":
        return []
    analyses = [d.analysis for d in decisions if d.analysis and d.analysis.model]
    try:
        plans = plan_layouts(program, analyses, options.layout)
    except Exception as error:          # confined: the layouts stay, the kernels go on
        errors.append(Diagnostic("error", "internal-error", "internal error in polycoal "
                                 f"while choosing data layouts ({type(error).__name__}: "
                                 f"{error}); every layout is left as it is",
                                 program.kernels[0].location if program.kernels else None))
        return []
    by_name = {d.kernel: d for d in decisions}
    for plan in plans:
        if not plan.changes:
            continue
        plan.texts = {}
        name = None
        try:
            for name, params in plan.kernels.items():
                d = by_name.get(name)
                if d is None or d.analysis is None or d.analysis.model is None:
                    raise NotRewritable(f"kernel '{name}' is not modelled")
                if JUDGED in name:          # its kernel is read, and written, as it is
                    raise NotRewritable(f"kernel '{name.split(JUDGED)[0]}' is read only "
                                        "to judge it")
                model = d.analysis.model
                plan.unrolled[name] = unroll_factors(model, plan.layout, set(params))
                plan.texts[name] = rewrite_kernel(program, program.kernel(name), params,
                                                  plan.unrolled[name])
            name = None
            plan.host_edits = [(call.span, rewrite_call(call, plan.layout))
                               for call in plan.calls]
            plan.runtimes = (runtime(plan.layout, True), runtime(plan.layout, False))
            plan.description = f"{plan.layout.describe()}: {plan.summary()}"
        except NotRewritable as error:
            plan.reason = f"kernel '{name}': {error}" if name else str(error)
            continue
        except Exception as error:        # confined: this struct's arrays stay as they are
            what = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
            where = program.kernel(name) if name else program.kernel(next(iter(plan.kernels)))
            errors.append(Diagnostic("error", "internal-error", "internal error in polycoal "
                                     f"while rewriting the arrays of {plan.struct.name} "
                                     f"({what}); their layout is left as it is",
                                     where.location if where else None, name))
            plan.reason = f"internal error ({what})"
            continue
        at = definition_end(program, plan.struct.name)
        first_use = min([program.kernel(n).span.start for n in plan.kernels] +
                        [c.span.start for c in plan.calls])
        plan.insert_at = at if at is not None else None
        if at is None or at > first_use:
            plan.reason = (f"struct {plan.struct.name} is not defined in this file before "
                           "its arrays are used")
    return plans


def layout_notes(program: Program, plans: list[LayoutDecision]) -> list[Diagnostic]:
    """Why an array of structs that kernels read with a stride keeps its layout."""
    out = []
    for plan in plans:
        if plan.changes or plan.layout.kind == "aos" and not plan.reason:
            continue
        kernel = program.kernel(plan.uses[0].kernel)
        out.append(Diagnostic("note", "layout-kept", f"arrays of {plan.struct.name} keep "
                              f"their layout: {plan.reason}",
                              kernel.location if kernel else None, kernel.name if kernel
                              else None))
    return out


def with_layouts(decisions: list[KernelDecision], plans: list[LayoutDecision]
                  ) -> list[KernelDecision]:
    out = []
    for d in decisions:
        plan = next((p for p in plans if p.changes and d.kernel in p.kernels), None)
        if plan is None:
            out.append(d)
            continue
        params = ", ".join(f"'{p}'" for p in plan.kernels[d.kernel])
        unrolled = "".join(f"; {why}" for _, why in
                           sorted(plan.unrolled.get(d.kernel, {}).values()))
        out.append(replace(d, action="layout", code="layout", layout=plan,
                           layout_text=plan.texts[d.kernel], reason=(
                               f"its array of {plan.struct.name} ({params}) is stored as "
                               f"{plan.description}{unrolled}"),
                           generated=None, mapping=None, assumption=None, disjoint=()))
    return out


def price_layouts(program: Program, text: str, decisions: list[KernelDecision],
                  plans: list[LayoutDecision], options: TransformOptions
                  ) -> list[KernelDecision]:
    """Each kernel of a layout priced by the performance model as written and as `text`
    (the program in its layouts) reads back (its `predicted`, for the reports). The
    layout is chosen by its own costs (optimize/layout_cost.py: wavefronts of vector
    loads and the conversions, measured to choose the best layout of every fixture);
    the model is a second judge: a layout it predicts MARGIN times slower over its
    kernels, at the launch's sizes, is not taken (`plan.reason` says why)."""
    from polycoal.analysis import analyze_kernel
    from polycoal.frontend import read_again
    laid = [d for d in decisions if d.action == "layout"]
    if not laid:
        return decisions
    try:
        new_program = read_again(program, options.preprocessor, text)
    except Exception:              # noqa: BLE001 - unpriced: the validators judge it
        return decisions
    m = shipped_machine()
    values = dict(options.price_at)
    priced: dict[str, Choice] = {}
    for d in laid:
        kernel = new_program.kernel(d.kernel)
        if kernel is None or d.analysis is None or d.analysis.model is None:
            continue
        try:
            after = analyze_kernel(kernel, new_program)
            if after.model is None:
                continue
            work = form_work(d.analysis, m, values=values)
            priced[d.kernel] = Choice(predict(work, m), (
                ("layout", predict(form_work(after, m, values=values), m)),), "layout",
                work.assumed)
        except Exception:          # noqa: BLE001 - unpriced: the layout's costs decide
            continue
    for plan in plans:
        mine = [priced[k] for k in plan.kernels if k in priced]
        if not plan.changes or not mine or options.layout != "auto":
            continue
        before = sum(c.original.time_us for c in mine)
        after = sum(c.candidates[0][1].time_us for c in mine)
        if after > before * MARGIN:
            plan.reason = (f"the performance model predicts its kernels {after / before:.3g}x "
                           f"slower in it ({before:.4g} us as written, {after:.4g} us)")
    return [replace(d, predicted=priced[d.kernel]) if d.kernel in priced else d
            for d in decisions]
