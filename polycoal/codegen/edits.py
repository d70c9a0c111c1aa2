"""The text edits a program's decisions make: each changed kernel's definition and its
launches (or a layout's kernels and launches), spliced into the source with the
file's line endings."""

from __future__ import annotations

import re

from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.launch import rewrite_launch
from polycoal.codegen.layout import rewrite_launch as rewrite_layout_launch
from polycoal.codegen.permute import permute_kernel, permute_launch, reads_indirectly
from polycoal.decisions import GENERATED, KernelDecision
from polycoal.frontend.launches import known_values
from polycoal.frontend.lexer import line_ending, with_line_ending
from polycoal.frontend.program import Program, Span
from polycoal.optimize.assumptions import decided
from polycoal.optimize.restructure import Mapping


def axis_descriptions(model, mapping: Mapping) -> list[tuple[str, str]]:
    return [(a, describe_dim(model, dim)) for a, dim in zip("xyz", mapping.axes)]


def splice(text: str, replacements: list[tuple[Span, str]]) -> str:
    """`text` with the replacements, their lines ended as the file's (CRLF stays CRLF)."""
    ending = line_ending(text)
    out = []
    pos = 0
    for span, new in sorted(replacements, key=lambda r: (r[0].start, r[0].end)):
        if span.start < pos:
            raise ValueError("overlapping replacements")
        out.append(text[pos:span.start])
        out.append(with_line_ending(new, ending))
        pos = span.end
    out.append(text[pos:])
    return "".join(out)


def replacements(program: Program, decisions: list[KernelDecision]) -> list[tuple[Span, str]]:
    out = []
    for d in decisions:
        if d.action == "layout":
            out.append((program.kernel(d.kernel).span, d.layout_text))
            for launch, positions in d.layout.launches:
                if launch.kernel == d.kernel:
                    out.append((launch.span, rewrite_layout_launch(program, launch,
                                                                   positions)))
        if d.action == "permuted":
            kernel = program.kernel(d.kernel)
            if d.indirect is None and reads_indirectly(program, kernel):
                raise ValueError(f"kernel {kernel.name} reads thread indices through "
                                 "macros or helpers, and their expansions are not known")
            permuted = permute_kernel(program.text, kernel, d.permutation, d.emitted,
                                      d.indirect)
            if d.emitted != d.kernel:          # the original stays for the launches'
                permuted = program.text[kernel.span.start:kernel.span.end] + "\n\n" + permuted
            out.append((kernel.span, permuted))
            for launch in program.launches_of(d.kernel):
                text = permute_launch(program.text, launch, d.permutation, d.emitted)
                if text is not None:        # None: the launch never takes the copy
                    out.append((launch.span, text))
        if d.action not in GENERATED:
            continue
        kernel = program.kernel(d.kernel)
        generated = d.generated.text
        if d.emitted != d.kernel:      # a copy under a run-time check; the original stays
            generated = program.text[kernel.span.start:kernel.span.end] + "\n\n" + re.sub(
                rf"\b{re.escape(d.kernel)}(?=\s*\()", d.emitted, generated)
        out.append((kernel.span, generated))
        note = {"reduced": "one warp per row: " if d.generated.per_block[0] != 1 or
                d.generated.block[0] == 32 else "one block per row: ", "split": "column reduction split: ",
                "columns": "one block per 32 columns: ",
                "tiled": "row reduction in tiles: ",
                "staged": "32x32 tiles staged in shared memory: ",
                "windowed": "several rows or elements a thread, loads in registers: ",
                "swept": "the row's loop on shared-memory tiles: ",
                "vectorised": "a warp a row, its trips across the lanes: ",
                "product": "a product in register and shared-memory tiles: "}.get(
            d.action, "restructured geometry: ") + ", ".join(
            f"{a} = {what.split(' (')[0]}" for a, what in
            axis_descriptions(d.analysis.model, d.mapping))
        for launch in program.launches_of(d.kernel):
            assumption = d.assumption
            if assumption is not None:
                verdict = decided(assumption, known_values(launch))
                if verdict is False:
                    continue        # never runs the copy: the launch stays as written
                assumption = None if verdict else assumption
            out.append((launch.span, rewrite_launch(
                program.text, launch, kernel, d.generated.stages, d.generated.hidden, note,
                assumption, d.emitted if d.emitted != d.kernel else None, d.disjoint)))
    return out
