"""The placement pass, over the whole program after the kernel passes: an array a
kernel only reads is read from the memory that serves its pattern best, read-only
(`__ldg`), a `__constant__` copy, or a tile staged in shared memory (polycoal/placement.py
plans with the memory specification's costs and rewrites the kernel and its launches).

Two judges, as for a permutation: the planner prices each array in each memory (its
requests, the store waits a read-only path removes, the fills: optimize/placement.py)
and keeps a placement only above its MIN_GAIN; then the performance model prices the
kernel as written and placed at the launch's sizes (analysis/work.py, `placed`), and the
placement is taken only where it too predicts MARGIN (the driver's margin for every
form). The output with the placements is compiled where a compiler is there, and kept
as it was where it would not compile.
"""

from __future__ import annotations

from dataclasses import replace

from polycoal.analysis import analyze_kernel
from polycoal.analysis.roofline import MARGIN, predict, shipped_machine, slower_in_words
from polycoal.analysis.work import Geometry, form_work
from polycoal.decisions import TransformOptions
from polycoal.diagnostics import Diagnostic
from polycoal.frontend.program import Program
from polycoal.validate import compiles


def model_veto(options: TransformOptions):
    """The performance model's judgement of a placement (placement.place_program's
    `veto`): why it is not taken, or None."""
    m = shipped_machine()
    values = dict(options.price_at)

    def veto(program: Program, kernel, placement) -> str | None:
        analysis = analyze_kernel(kernel, program)
        if analysis.model is None:
            return "the performance model cannot read the kernel"
        placed = tuple((a.reads.array, a.chosen) for a in placement.arrays
                       if a.chosen != "global")
        before = predict(form_work(analysis, m, values=values), m)
        after = predict(form_work(analysis, m, Geometry(placed=placed), values), m)
        placement.predicted = (before.time_us, after.time_us)
        if after.time_us * MARGIN > before.time_us:
            how = slower_in_words(after.time_us / before.time_us)
            return (f"the performance model predicts it {how} ({before.bound}; "
                    f"{before.time_us:.4g} us as written, {after.time_us:.4g} us placed)")
        return None
    return veto


def candidates(decisions, options: TransformOptions) -> set[str]:
    """The kernels the placement pass plans: those the kernel passes left as written
    (a form they generated is placed by its own design), where even an ideal placement
    (every array the kernel only reads served by no memory's pipes) is predicted MARGIN
    faster: a bound that spares the planner the kernels no memory would speed up."""
    m = shipped_machine()
    values = dict(options.price_at)
    out = set()
    for d in decisions:
        a = d.analysis
        if d.action != "unchanged" or a is None or a.model is None or d.code in (
                "internal-error", "unparsed"):
            continue
        written = {x.array for _, x in a.model.accesses() if x.kind == "write"}
        read = {x.array for _, x in a.model.accesses()
                if x.kind == "read" and x.space == "global" and x.array not in written}
        if not read:
            continue
        try:
            before = predict(form_work(a, m, values=values), m)
            bound = predict(form_work(a, m, Geometry(placed=tuple(
                (name, "ideal") for name in sorted(read))), values), m)
        except Exception:            # noqa: BLE001 - not bounded: the planner judges it
            out.add(d.kernel)
            continue
        if bound.time_us * MARGIN <= before.time_us:
            out.add(d.kernel)
    return out


def place(program: Program, text: str, options: TransformOptions,
          errors: list[Diagnostic], only: set[str] | None = None):
    """The placement of the transformed program `text` (of the kernels `only`, None:
    all): (the ProgramPlacement, or None where it did not run, and the text with the
    placements taken)."""
    from polycoal.frontend import read_again
    from polycoal.model.memory_spec import load_spec
    from polycoal.placement import place_program
    if only is not None and not only:
        return None, text
    try:
        transformed = program if text == program.text else read_again(
            program, options.preprocessor, text)
        placed = place_program(transformed, load_spec(), {}, options.preprocessor,
                               veto=model_veto(options), only=only)
    except Exception as error:          # noqa: BLE001 - confined: every array stays
        errors.append(Diagnostic("error", "internal-error", "internal error in polycoal "
                                 f"while placing the program's arrays ({type(error).__name__}"
                                 f": {error}); every array is left where it is",
                                 program.kernels[0].location if program.kernels else None))
        return None, text
    # the transformed text's kernels sit on other lines: each at its definition as written
    errors.extend(replace(d, location=program.kernel(d.kernel).location)
                  if d.kernel and program.kernel(d.kernel) else d for d in placed.diagnostics)
    if placed.text == text:
        return placed, text
    checker = options.compile_check
    after = compiles.compile_errors(checker, program.path, placed.text,
                                    options.preprocessor) if compiles.available(checker) else ()
    if after != ():                   # errors, or no compile at all: against the text's
        before = compiles.compile_errors(checker, program.path, text, options.preprocessor)
        new = None if after is None else compiles.new_errors(before or (), after)
        if before is not None and (new is None or new):
            why = new[0].describe(checker) if new else "it cannot be compiled at all"
            errors.append(Diagnostic("error", "output-rejected", "the program with its "
                                     f"arrays placed does not compile ({why}); every array "
                                     "is left where it is", program.kernels[0].location
                                     if program.kernels else None))
            for k in placed.kernels:
                if k.applied:
                    k.applied, k.reason = False, f"the placed program does not compile ({why})"
            return placed, text
    for k in placed.kernels:
        if k.applied:
            kernel = program.kernel(k.kernel)
            arrays = ", ".join(f"{a.reads.array} in {a.chosen} memory" for a in k.arrays
                               if a.chosen != "global")
            times = k.predicted
            errors.append(Diagnostic(
                "note", "placed", f"kernel '{k.kernel}': arrays placed: {arrays}" + (
                    f" (predicted {times[0]:.4g} us as written, {times[1]:.4g} us placed)"
                    if times else ""), kernel.location if kernel else None, k.kernel))
    return placed, placed.text
