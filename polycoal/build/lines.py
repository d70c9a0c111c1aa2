"""`#line` directives, so that a transformed file reads as its original to the compiler.

The transformed text differs from the original only where kernels and launches were
replaced: a line diff finds the unchanged runs, and a directive in front of each run (and
of each replaced block, which then points at the original lines it replaces) keeps every
compiler message on the user's file and line.
"""

from __future__ import annotations

import difflib

from polycoal.frontend.lexer import continued_lines, line_ending, split_lines


def line_directive(line: int, path: str, ending: str = "\n") -> str:
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line {line} "{quoted}"{ending}'


def with_line_directives(original: str, transformed: str, path: str) -> str:
    """`transformed` with directives that give each line its line in `original` (at
    `path`); lines of generated code carry the lines of the code they replace."""
    old = split_lines(original, keepends=True)
    new = split_lines(transformed, keepends=True)
    blocked = continued_lines(transformed)
    ending = line_ending(original)
    out = [line_directive(1, path, ending)]
    current = 1                      # the line number the compiler gives the next line
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, _i2, j1, j2 in matcher.get_opcodes():
        for k, j in enumerate(range(j1, j2)):
            # unchanged lines keep their own line; generated code is numbered on from
            # the first original line it replaces
            wanted = i1 + 1 + k if tag == "equal" else (i1 + 1 if k == 0 else None)
            if wanted is not None and wanted != current and (j + 1) not in blocked:
                out.append(line_directive(wanted, path, ending))
                current = wanted
            out.append(new[j])
            current += 1
    return "".join(out)
