"""Does the output compile? (issue 32: never a broken build)

Before `transform` writes a program, the program is compiled as its translation unit
would be, syntax and semantics, no linking, and so is the input: only an error the
output has and the input does not (its message, whatever its line) is the output's.
Two compilers can judge:

- `clang`: libclang in CUDA mode, with the arguments the front end reads the file with
  (frontend/clang.py: CUDA's declarations from grammars/clang_cuda.h, the user's -I, -D,
  -U, -std and forced includes, the input's directory on the include path). A parse, 0.1 to 0.6 s. The
  default wherever libclang is installed.
- `nvcc`: `nvcc -arch=sm_90 -fdevice-syntax-only -c`, CUDA's own front ends on CUDA's
  own headers (about a second): asked for by name.

The text is compiled as the file it replaces (its path, for `#include "..."` beside it),
never written over it. A compiler that cannot judge the input at all (not installed, a
header it cannot find, a fatal error) judges nothing: None. This module reads text and
runs compilers; which kernel an error belongs to is the driver's (transform.py).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from collections.abc import Callable, Hashable, Sequence

from polycoal.frontend import clang
from polycoal.frontend.preprocess import PreprocessorOptions

@dataclass(frozen=True)
class CompileError:
    line: int          # in the compiled text; 0 when the error is in another file
    message: str       # the compiler's message, without its location

    def describe(self, checker: str, text: str = "the output") -> str:
        """`clang: line 57 of the output: use of undeclared identifier 'gy'`, where
        `text` names what was compiled."""
        where = f"line {self.line} of {text}: " if self.line else ""
        return f"{checker}: {where}{self.message}"


def available(checker: str) -> bool:
    """Whether `checker` can run here (`none` never does)."""
    if checker == "clang":
        return clang.available()
    if checker == "nvcc":
        return shutil.which("nvcc") is not None
    return False


def compile_errors(checker: str, path: str, text: str, options: PreprocessorOptions
                   ) -> tuple[CompileError, ...] | None:
    """The errors `checker` finds in `text` compiled as the file `path`, in the
    compiler's order; None when it cannot judge the text (see the module's doc)."""
    if checker == "clang":
        return _clang_errors(os.path.abspath(path), text, options)
    if checker == "nvcc":
        return _nvcc_errors(os.path.abspath(path), text, options)
    return None


def new_errors(before: tuple[CompileError, ...], after: tuple[CompileError, ...]
               ) -> list[CompileError]:
    """The errors of `after` whose message no error of `before` has. An error the input
    has stays the input's wherever the output has it, and as often: a kernel the output
    keeps beside its transformed copy repeats the input's errors."""
    known = {e.message for e in before}
    return [e for e in after if e.message not in known]


def culprits(units: Sequence[Hashable], found: list[CompileError],
             errors_without: Callable[[list], list[CompileError] | None]
             ) -> dict[Hashable, CompileError]:
    """Which changes (`units`, in the order to try them) the errors `found` are due to,
    each with the first error it caused. Each unit is left out in turn, along with those
    found so far (`errors_without(left_out)`: the new errors of the output without them,
    None when it cannot be judged): a unit whose absence removes errors is one. Errors
    that no unit left out alone explains (changes that fail only together, or a failure
    outside every change) make every unit not yet found one, named by the first of
    them. Costs one compile per unit tried, none once the errors are gone."""
    out: dict[Hashable, CompileError] = {}
    for unit in units:
        if not found:
            break
        left = errors_without([*out, unit])
        if left is None or len(left) >= len(found):
            continue
        removed = Counter(e.message for e in found) - Counter(e.message for e in left)
        out[unit] = next(e for e in found if e.message in removed)
        found = left
    if found:
        out.update({unit: found[0] for unit in units if unit not in out})
    return out


# ---- Clang ----

@functools.lru_cache(maxsize=8)
def _clang_errors(path: str, text: str, options: PreprocessorOptions
                  ) -> tuple[CompileError, ...] | None:
    ci = clang._cindex()
    if ci is None:
        return None
    args = clang.arguments(path, options) + ["-ferror-limit=0"]
    try:
        tu = ci.Index.create().parse(path, args=args,
                                     unsaved_files=[(path, clang.encoded(clang.closed_up(text)))])
    except ci.TranslationUnitLoadError:
        return None
    errors = []
    for d in tu.diagnostics:
        if d.severity < 3:                 # notes and warnings
            continue
        if d.severity >= 4:                # fatal: a header not found, nothing judged
            return None
        here = d.location.file is not None and \
            os.path.abspath(d.location.file.name) == path
        errors.append(CompileError(d.location.line if here else 0, d.spelling))
    return tuple(errors)


# ---- nvcc ----

# `file(line): error: message` (cudafe++), `file:line:col: error: message` (the host
# compiler)
_NVCC_ERROR = re.compile(r"^(?P<file>.*?)(?:\((?P<line>\d+)\)|:(?P<line2>\d+):\d+):\s*"
                         r"(?P<kind>(?:catastrophic |fatal )?error):\s*(?P<message>.*)$")


@functools.lru_cache(maxsize=8)
def _nvcc_errors(path: str, text: str, options: PreprocessorOptions
                 ) -> tuple[CompileError, ...] | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory(prefix="polycoal-compiles-") as directory:
        source = os.path.join(directory, os.path.basename(path))
        with open(source, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(text)
        command = [nvcc, "-arch=sm_90", "-fdevice-syntax-only", "-c", source,
                   "-o", os.path.join(directory, "out.o"), f"-std={_nvcc_std(options.std)}",
                   f"-I{os.path.dirname(path)}"]
        command += [f"-I{d}" for d in options.include_dirs]
        command += [f"-D{d}" for d in options.defines] + [f"-U{u}" for u in options.undefines]
        command += [a for f in options.forced_includes for a in ("-include", f)]
        # nvcc has no -imacros: its host compiler, which preprocesses both passes, does
        command += [a for f in options.imacros for a in ("-Xcompiler", f"-imacros,{f}")]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return _nvcc_output(proc.returncode, proc.stderr + proc.stdout, source)


def _nvcc_std(std: str) -> str:
    """nvcc's spelling of a language standard (it has no GNU dialects)."""
    return std.replace("gnu++", "c++")


def _nvcc_output(returncode: int, output: str, source: str
                 ) -> tuple[CompileError, ...] | None:
    """nvcc's errors read from its output (None where it could not judge: a fatal
    error, a failure with no error it names)."""
    errors = []
    for line in output.splitlines():
        m = _NVCC_ERROR.match(line.strip())
        if m is None:
            continue
        if m["kind"] != "error":
            return None
        number = int(m["line"] or m["line2"])
        here = os.path.abspath(m["file"]) == source
        errors.append(CompileError(number if here else 0, m["message"].strip()))
    if returncode != 0 and not errors:
        return None
    return tuple(errors)
