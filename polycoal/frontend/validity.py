"""Clang is the judge of what is valid CUDA (issue 32).

The C parser (pycparser) rejects much valid CUDA C++, and the function-alone check of
frontend/syntax.py compiles a function without the rest of its file, so a type from an
included header (`FloatComplex z2 = ...`) looks to it like a syntax error. A syntax
error stands only when Clang, reading the whole translation unit in CUDA mode with the
file's flags (frontend/clang.py), also reports a parse error inside that function,
between its first line and the line where the function-alone check stopped (not an
unknown name: polycoal's declarations of CUDA's headers are not all of them); it is
then reported with Clang's location and message. When Clang accepts the function, it is C++
outside the C subset polycoal parses: the function is left as written with a warning
and the rest of the file is transformed. Without libclang the function-alone verdict
stands, as before.
"""

from __future__ import annotations

import re
from dataclasses import replace

from polycoal.diagnostics import Diagnostic, Location
from polycoal.output import same_file


def judge_syntax_errors(path: str, options, text: str, kernels: list, functions: dict,
                        diagnostics: list[Diagnostic]) -> tuple[list, list[Diagnostic]]:
    """The kernels and diagnostics with each `syntax-error` confirmed by Clang (its
    location and message) or turned into an `unsupported-construct` warning."""
    suspects = [d for d in diagnostics if d.code == "syntax-error" and d.severity == "error"]
    if not suspects:
        return kernels, diagnostics
    from polycoal.frontend import clang
    if not clang.available():
        return kernels, diagnostics
    try:
        sites = [site for site in clang.error_sites(path, options, text)
                 if _syntactic(site[3], site[4])]
    except Exception:             # noqa: BLE001 - a failure of Clang's refuses nothing
        sites = []
    starts = {f.name: f.location for f in (*kernels, *functions.values()) if f.location}
    judged: dict[int, Diagnostic] = {}
    for d in suspects:
        confirmed = _clang_error_in(sites, starts.get(d.kernel), d.location)
        if confirmed is not None:
            file, line, column, message = confirmed[:4]
            judged[id(d)] = replace(d, message=d.message.split(":")[0] + f": {message}",
                                    location=Location(_as_named(file, path), line, column))
        else:
            what = d.message.split(":")[0].removeprefix("syntax error in ")
            reason = ("C++ outside the C subset polycoal parses (Clang accepts it in the "
                      "whole translation unit)")
            judged[id(d)] = Diagnostic("warning", "unsupported-construct",
                                       f"{what}: {reason}; left unchanged", d.location,
                                       d.kernel)
    kernels = [replace(k, unsupported=judged_reason(judged, suspects, k.name))
               if k.unsupported == "syntax error" else k for k in kernels]
    return kernels, [judged.get(id(d), d) for d in diagnostics]


def judged_reason(judged: dict, suspects: list[Diagnostic], name: str) -> str:
    for d in suspects:
        if d.kernel == name and judged[id(d)].code == "unsupported-construct":
            return judged[id(d)].message.split(": ", 1)[1].removesuffix("; left unchanged")
    return "syntax error"


# Clang's messages that name what is not declared: polycoal's declarations of CUDA's
# headers (grammars/clang_cuda.h) are not all of them, so these prove nothing of the file
_UNDECLARED = re.compile(r"undeclared|unknown type name|no (template|type|member) named|"
                         r"not a (class|namespace|template)|incomplete type|"
                         r"file not found|no matching|cannot initialize|no viable")


def _syntactic(message: str, category: str) -> bool:
    """Whether a Clang error shows the text is not C++, whatever the declarations: a
    parse or lexical error that is not about an unknown name."""
    return category in ("Parse Issue", "Lexical or Preprocessor Issue") and \
        not _UNDECLARED.search(message)


def _clang_error_in(sites, start: Location | None, stop: Location | None):
    """Clang's first error in the function that starts at `start`, at or before the
    line `stop` where the function-alone check stopped (same file)."""
    if start is None or stop is None:
        return None
    for site in sites:
        if same_file(site[0], start.file) and start.line <= site[1] <= stop.line:
            return site
    return None


def _as_named(file: str, path: str) -> str:
    """Clang's absolute name of the input as the user named it."""
    return path if same_file(file, path) else file
