"""The program-level pass after the kernels: host loops of launches.

1. A loop of one launch whose trips touch the same elements only from the same threads
   runs as one launch, each thread running the trips (optimize/launch_trips.py).
2. A loop of launches waits for the device once, after the loop, instead of after every
   launch (optimize/launch_waits.py).

Both read the transformed text (its launch statements as polycoal rewrote them); the
kernels they read are the result's, unchanged by the kernel passes. The output must
compile wherever its input did: a rewrite that does not is left out, with a warning.
"""

from __future__ import annotations

import re
from dataclasses import replace

from polycoal.analysis.aliasing import distinct_arrays
from polycoal.codegen.launch import trips_kernels, trips_launch, waits_after_loops
from polycoal.decisions import TransformOptions, TransformResult
from polycoal.diagnostics import Diagnostic, Location
from polycoal.frontend.lexer import apply_edits, tokenize
from polycoal.frontend.program import Program
from polycoal.model.extract import extract_model
from polycoal.model.kernel_model import KernelModel, reserved_argument
from polycoal.optimize.launch_trips import trip_loops, trips_obstacle
from polycoal.optimize.launch_waits import launch_loops, loop_lines
from polycoal.validate import compiles


def host_loops(program: Program, result: TransformResult, options: TransformOptions
               ) -> TransformResult:
    """The result with its host loops of launches rewritten (the module's doc), and a
    note for each loop changed or kept (at the input's line)."""
    lines = loop_lines(list(program.tokens) or tokenize(program.text))

    def at(loop) -> Location:
        return Location(program.path, lines.get(loop.key, loop.line))
    text, notes = result.text, []
    if options.launch_trips:
        text, notes = _fused(result, text, at)
    waited, kept = launch_loops(text, tokenize(text)) if options.launch_waits else ([], [])
    notes += [Diagnostic("note", "waits-kept", "host loop: its waits for the device stay "
                         f"({k.why})", at(k)) for k in kept]
    text = waits_after_loops(text, waited)
    notes += [Diagnostic("note", "waits-moved",
                         f"host loop: its {len(l.waits)} wait{'s' if len(l.waits) > 1 else ''}"
                         f" for the device between its {l.launches} launch"
                         f"{'es' if l.launches > 1 else ''} dropped, one wait after the "
                         "loop (launches into one stream run in order; nothing else in "
                         "the loop touches the device)", at(l)) for l in waited]
    if text == result.text:
        return replace(result, diagnostics=result.diagnostics + notes) if notes else result
    if compiles.available(options.compile_check):
        def errors(t: str):
            return compiles.compile_errors(options.compile_check, program.path, t,
                                           options.preprocessor)
        after = errors(text)                # an output without errors is all it costs
        before = errors(result.text) if after != () else ()
        found = None if before is None else \
            [compiles.CompileError(0, "the output cannot be compiled at all")] \
            if after is None else compiles.new_errors(before, after)
        if found:
            return replace(result, diagnostics=result.diagnostics + [Diagnostic(
                "warning", "output-rejected", "host loops: left as written: the program "
                "with its host loops rewritten does not compile where the input does "
                f"({found[0].describe(options.compile_check)})",
                Location(program.path, 1))])
    return replace(result, text=text, diagnostics=result.diagnostics + notes)


def _unsigned_model(program: Program, kernel, d) -> KernelModel | None:
    """The kernel's model with nothing assumed of the signs of its int arguments (the
    decision's own takes them non-negative, KernelModel.signed, which the loop's trips
    need not be: a loop from -20 to 0). None where it cannot be modelled."""
    model = d.analysis.model if d.analysis else None
    if model is None or not model.signed:
        return model
    try:
        return extract_model(kernel, program, signed=False)
    except Exception:        # noqa: BLE001 - then the loop stays as written
        return None


def _literal(text: str) -> int | None:
    """The integer a loop bound spells as a literal (None: any other expression)."""
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    return int(t) if re.fullmatch(r"-?\d+", t) else None


def _fused(result: TransformResult, text: str, at) -> tuple[str, list[Diagnostic]]:
    """The text with each host loop of one launch that can run in the kernel so
    (optimize/launch_trips.py), and the notes."""
    program = result.program
    decisions = {d.kernel: d for d in result.decisions}
    edits, notes, made = [], [], {}
    for loop in trip_loops(text, tokenize(text)):
        kernel = program.kernel(loop.kernel) if program else None
        d = decisions.get(loop.kernel)
        if kernel is None or kernel.span is None or kernel.is_template or d is None or \
                d.action != "unchanged" or loop.position >= len(kernel.parameters):
            continue
        parameter = kernel.parameters[loop.position]
        if parameter.is_pointer:
            continue
        source = program.text[kernel.span.start:kernel.span.end]
        model = _unsigned_model(program, kernel, d)
        why = reserved_argument(kernel) or trips_obstacle(
            model, source, parameter.name, parameter.type, _literal(loop.lo),
            _literal(loop.hi), loop.inclusive)
        if why is None:
            distinct, evidence = distinct_arrays(program, kernel, model)
            why = None if distinct else f"its pointer arguments may alias ({evidence})"
        if why is None and (text.count(source) != 1 or
                            sum(k.name == kernel.name for k in program.kernels) != 1):
            why = "its definition is not found once in the output"
        elif why is None and text.index(source) > loop.start:
            why = "the loop comes before the kernel's definition"
        made_kernels = None
        if why is None:
            made_kernels = trips_kernels(source, kernel.name,
                                         [p.name for p in kernel.parameters], parameter.name,
                                         loop.inclusive)
            why = None if made_kernels else "its definition's head is not a plain kernel's"
        if why is not None:
            notes.append(Diagnostic("note", "trips-kept", f"host loop over {loop.var}: its "
                                    f"launches of {loop.kernel} stay one a trip ({why})",
                                    at(loop)))
            continue
        trips, device, definition = made_kernels
        # after the kernel: its device function once, then each trips kernel (`<` and
        # `<=` loops) once
        after = made.setdefault(kernel.name, (text.index(source) + len(source), [device]))
        if definition not in after[1]:
            after[1].append(definition)
        first = text.rfind("\n", 0, loop.start) + 1
        indent = text[first:loop.start][:len(text[first:loop.start]) -
                                        len(text[first:loop.start].lstrip())]
        edits.append((loop.start, loop.end, trips_launch(loop, trips, indent)))
        notes.append(Diagnostic("note", "trips-fused", f"host loop over {loop.var}: its "
                                f"launches of {loop.kernel} made one launch of {trips}, "
                                "each thread running the trips in order (no two threads "
                                "touch one element in different trips; the pointer "
                                f"arguments are distinct: {evidence})", at(loop)))
    edits += [(end, end, "".join("\n\n" + d for d in definitions))
              for end, definitions in made.values()]
    return apply_edits(text, edits), notes
