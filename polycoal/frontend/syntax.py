"""Is a function that pycparser rejects a syntax error, or C++ that polycoal does not parse?

pycparser parses C99; kernels are CUDA C++. When it rejects a kernel or a device
function, the host C++ compiler decides: the function alone (after preprocessing, as the
front end sees it) is compiled with `-fsyntax-only`, with CUDA's qualifiers defined away
and its builtins, vector types and intrinsics declared (so that the parser knows them),
and a launch inside it (`k<<<g, b>>>(a)`) written as a call (`k(g, b)(a)`).

The function is compiled without the rest of the file, so names from elsewhere (a type
from a header polycoal does not read, a device function of the file, a user template)
are unknown to the compiler, and an unknown name can make the compiler report parse
errors that are only its consequence (`thrust::device_vector<float> v;` gives "expected
primary-expression before 'float'") or hide real ones. Hence the rule:

- a parse error ("expected ...", "stray ...", an unterminated literal, "'else' without
  a previous 'if'"...) is a syntax error when no other error precedes it in its own
  statement (since the last `;`, `{` or `}`): the code up to it is complete C++ that
  the compiler understood, so the file would not compile with any declarations;
- when the compiler accepts the function, it is C++ outside polycoal's C subset;
- anything else (only errors about names and types, or no C++ compiler) is undecided:
  the function is reported as not parsed, never as a syntax error.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import Token, tokenize

_DIAGNOSTIC = re.compile(r"^polycoal-function:(\d+):(\d+): (?:fatal )?error: (.*)$", re.M)
_PARSE_ERROR = re.compile(
    r"^(expected\b|stray\b|missing terminating|unterminated|extraneous|unbalanced"
    r"|'\w+' without a previous|a function-definition is not allowed here)")
_LINEMARKER = re.compile(r"^\s*#\s*(?:line\s+)?\d+(\s+\".*)?$")
_COMPILERS = ("g++", "c++", "clang++")

_VECTORS = {"char": "char", "uchar": "unsigned char", "short": "short", "ushort":
            "unsigned short", "int": "int", "uint": "unsigned int", "long": "long",
            "ulong": "unsigned long", "longlong": "long long", "float": "float",
            "double": "double"}


@dataclass(frozen=True)
class Verdict:
    """The compiler's answer: "syntax" (with the 1-based line in the function's text and
    the message), "accepted" (valid C++), or "undecided" (with why)."""

    kind: str
    line: int = 0
    message: str = ""


def compiler(environ=None) -> list[str] | None:
    """The C++ compiler driver: the preprocessor's when POLYCOAL_CPP names a C++ driver,
    else the first of g++, c++, clang++ on PATH; None when there is none."""
    environ = os.environ if environ is None else environ
    path = environ.get("PATH")
    override = environ.get("POLYCOAL_CPP", "").split()
    if override and "++" in os.path.basename(override[0]) and shutil.which(override[0],
                                                                          path=path):
        return [override[0]]
    for exe in _COMPILERS:
        if shutil.which(exe, path=path):
            return [exe]
    return None


@functools.lru_cache(maxsize=1)
def _prelude() -> str:
    """CUDA, as much as parsing a function needs: the qualifiers as empty macros; the
    scalar, vector and half types; the index builtins; the intrinsics (of any arguments)."""
    dialect = cuda_dialect()
    lines = [f"#define {q}" for q in sorted(dialect.erase | set(dialect.memory_spaces))]
    lines += [f"#define {q}(...)" for q in sorted(dialect.erase_with_arguments)
              if q != "__attribute__"]
    lines += ["typedef unsigned int uint; typedef unsigned char uchar; "
              "typedef unsigned short ushort;",
              "typedef unsigned long size_t; typedef long ptrdiff_t;"]
    for bits, c_type in (("8", "signed char"), ("16", "short"), ("32", "int"),
                         ("64", "long")):
        lines.append(f"typedef {c_type} int{bits}_t; typedef unsigned {c_type.split()[-1]} "
                     f"uint{bits}_t;")
    for name, c_type in _VECTORS.items():
        for n, members in ((1, "x"), (2, "x, y"), (3, "x, y, z"), (4, "x, y, z, w")):
            lines.append(f"struct {name}{n} {{ {c_type} {members}; }};")
    lines += ["struct __half { unsigned short x; }; typedef __half half;",
              "struct __half2 { __half x, y; }; typedef __half2 half2;",
              "struct __nv_bfloat16 { unsigned short x; };",
              "struct dim3 { unsigned int x, y, z; dim3(unsigned = 1, unsigned = 1, "
              "unsigned = 1); };",
              f"extern const uint3 {dialect.thread_index}, {dialect.block_index};",
              f"extern const dim3 {dialect.block_dim}, {dialect.grid_dim};",
              "extern const int warpSize;"]
    intrinsics = (dialect.pure_functions | dialect.atomic_functions
                  | dialect.barrier_functions | dialect.warp_functions)
    lines += [f"template <typename... T> long long {f}(T...);" for f in sorted(intrinsics)]
    return "\n".join(lines) + "\n"


def _as_cxx(text: str) -> str:
    """The function's text for the compiler, character for character where it matters:
    linemarkers of the preprocessor's output blanked, tabs and characters outside ASCII
    made single columns (so that the compiler's columns are offsets), and the
    configuration of a launch blanked (`k<<<g, b>>>(a)` reads as the call `k(a)`)."""
    lines = ["" if _LINEMARKER.match(line) else line for line in text.split("\n")]
    text = "\n".join(lines).replace("\t", " ")
    chars = list(_ascii(text))
    opened = None
    depth = 0
    for t in tokenize("".join(chars)):
        if t.text == "<<<" and opened is None:
            opened, depth = t.start, 0
        elif opened is not None and t.text in ("(", "[", "{"):
            depth += 1
        elif opened is not None and t.text in (")", "]", "}"):
            depth -= 1
        elif opened is not None and t.text == ">>>" and depth == 0:
            chars[opened:t.end] = [c if c == "\n" else " " for c in chars[opened:t.end]]
            opened = None
    return "".join(chars)


def _ascii(text: str) -> str:
    return "".join(c if ord(c) < 128 else "_" for c in text)


def function_declarations(names) -> str:
    """Declarations that let the compiler take `names` (the file's other kernels and
    device functions) as functions of any arguments."""
    return "".join(f"template <typename... T> long long {name}(T...);\n"
                   for name in sorted(set(names)))


def _offsets(text: str) -> list[int]:
    """Offset of the start of each line (1-based line n at index n - 1)."""
    starts = [0]
    for k, c in enumerate(text):
        if c == "\n":
            starts.append(k + 1)
    return starts


def _statement_start(tokens: list[Token], offset: int) -> int:
    """Offset just past the last `;`, `{` or `}` before `offset` (0 if none)."""
    start = 0
    for t in tokens:
        if t.start >= offset:
            break
        if t.text in (";", "{", "}"):
            start = t.end
    return start


def _genuine(error: tuple[int, int, str], errors: list[tuple[int, int, str]],
             tokens: list[Token]) -> bool:
    """A parse error that no other error of its statement precedes (nor an error about
    something else at the same place: an unknown name the parser stumbled on)."""
    offset, _, message = error
    if not _PARSE_ERROR.match(message):
        return False
    begin = _statement_start(tokens, offset)
    for other in errors:
        if other is error:
            continue
        where, _, what = other
        if begin <= where < offset or (where == offset and not _PARSE_ERROR.match(what)):
            return False
    return True


def classify(text: str, stderr: str, returncode: int) -> Verdict:
    """The verdict on a compiler's output for `text` (see the module's docstring)."""
    if returncode == 0:
        return Verdict("accepted")
    starts = _offsets(text)
    tokens = tokenize(text)
    errors = []
    for m in _DIAGNOSTIC.finditer(stderr):
        line, column = int(m.group(1)), int(m.group(2))
        offset = starts[min(max(line, 1), len(starts)) - 1] + column - 1
        errors.append((offset, line, m.group(3).strip()))
    for error in errors:
        if _genuine(error, errors, tokens):
            return Verdict("syntax", error[1], error[2])
    first = errors[0][2] if errors else (stderr.strip().splitlines() or ["failed"])[0]
    return Verdict("undecided", message=first)


@functools.lru_cache(maxsize=256)
def check_function(text: str, std: str, declarations: str = "") -> Verdict:
    """Compile the function `text` (a kernel or device function as preprocessed) alone,
    after `declarations` (the file's types and other functions, see
    `function_declarations`), and classify the result."""
    command = compiler()
    if command is None:
        return Verdict("undecided", message="no C++ compiler (g++, c++ or clang++) on PATH")
    source = _as_cxx(text)
    unit = (_prelude() + _ascii(declarations) + '#line 1 "polycoal-function"\n' + source
            + "\n")
    with tempfile.TemporaryDirectory(prefix="polycoal-syntax-") as directory:
        path = os.path.join(directory, "function.cpp")
        with open(path, "w", encoding="ascii") as f:
            f.write(unit)
        try:
            proc = subprocess.run([*command, "-fsyntax-only", "-w", "-x", "c++",
                                   f"-std={std}", "-fno-diagnostics-show-caret", path],
                                  capture_output=True, text=True, errors="replace",
                                  env={**os.environ, "LC_ALL": "C"}, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            return Verdict("undecided", message=f"{command[0]}: {error}")
    return classify(source, proc.stderr, proc.returncode)
