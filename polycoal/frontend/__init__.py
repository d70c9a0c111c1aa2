"""Front end: a .cu file in, its kernels and launch sites out (see `read_program`)."""

from __future__ import annotations

import os
import re
import stat

from dataclasses import replace

from polycoal.diagnostics import InputError, Location
from polycoal.frontend.structs import struct_types
from polycoal.frontend.host import allocation_sites, kernel_references
from polycoal.frontend.kernels import read_functions
from polycoal.frontend.launches import find_launches
from polycoal.frontend.lexer import tokenize
from polycoal.frontend.limits import integer_type, received_value
from polycoal.frontend.preprocess import PreprocessedSource, PreprocessorOptions, preprocess
from polycoal.frontend.program import Program
from polycoal.frontend.validity import judge_syntax_errors
from polycoal.output import decode


def read_source(path: str) -> str:
    """The text of a source file, bytes kept (surrogate escapes: a Latin-1 comment is
    written back as the same bytes), newlines as they are. OSError when it cannot be
    read; InputError for a binary file."""
    with open(path, "rb") as f:
        text = decode(f.read())
    _require_text(path, text)
    return text


def _require_text(path: str, text: str) -> None:
    """A NUL byte never occurs in source text: the file is binary (or UTF-16)."""
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise InputError(f"{path}: a binary file, not a CUDA source (a NUL byte on "
                         f"line {line})")


def _check_input_path(path: str) -> None:
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a CUDA source")
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if not (os.path.isfile(path) or stat.S_ISFIFO(os.stat(path).st_mode)):
        raise InputError(f"{path}: not a regular file or a pipe")     # /dev/zero...


_CLOSING = {")": "(", "]": "[", "}": "{"}


def _require_balanced(source: PreprocessedSource, tokens: list) -> None:
    """Brackets of the preprocessed user code (`tokens`) match, or the file has a syntax
    error (InputError at the unmatched bracket's line in its own file)."""
    stack = []
    for t in tokens:
        if t.text in ("(", "[", "{"):
            stack.append(t)
        elif t.text in _CLOSING:
            if stack and stack[-1].text == _CLOSING[t.text]:
                stack.pop()
            else:
                _unbalanced(source, t, f"'{t.text}' without a matching '{_CLOSING[t.text]}'")
    if stack:
        _unbalanced(source, stack[-1], f"'{stack[-1].text}' is never closed")


def _unbalanced(source: PreprocessedSource, token, what: str):
    file, line = source.origin_of_line(token.line)
    raise InputError(f"syntax error: {what}", Location(file, line))


def _received(kernel, constants: dict) -> dict:
    """A launch's known argument values (by position) as its kernel's parameters (by
    name) receive them: an integer converted to the parameter's built-in integer type
    (an unsigned 4294967236 passed to an int is -60; a fraction passed to an int
    dropped), any other value as it is."""
    out = {}
    for i, v in constants.items():
        if int(i) >= len(kernel.parameters):
            continue
        parameter = kernel.parameters[int(i)]
        if integer_type(parameter.type) is not None:
            v = received_value(v, parameter.type)
        if v is not None:
            out[parameter.name] = v
    return out


def read_program(path: str, options: PreprocessorOptions = PreprocessorOptions(),
                 text: str | None = None, source: PreprocessedSource | None = None,
                 constants: dict[str, int] | None = None,
                 constant_types: dict[str, str] | None = None) -> Program:
    """Preprocess and read `path` (or `text` given for it, e.g. from stdin; with `source`
    as well, the text already preprocessed with `options`). `constants` and
    `constant_types`: the file-scope constants and their types when already known (a
    read-back of polycoal's output, whose declarations outside kernels are the
    input's), else read by Clang (file_constants)."""
    if text is None:
        _check_input_path(path)
        try:
            text = read_source(path)
        except OSError as error:
            raise InputError(f"{path}: cannot read: {error.strerror}") from error
        # a pipe (`<(...)`) can be read only once: preprocess the text read
        source = preprocess(path, options, text=None if os.path.isfile(path) else text)
    else:
        _require_text(path, text)
        if source is None:
            source = preprocess(path, options, text=text)
    # the text and the preprocessed user code are tokenized once, here
    user_tokens = tokenize(source.user_text())
    original_tokens = tokenize(text)
    _require_balanced(source, user_tokens)
    kernels, device_functions, variables, diagnostics = read_functions(
        source, text, options.std, user_tokens, original_tokens)
    kernels, diagnostics = judge_syntax_errors(path, options, text, kernels,
                                               device_functions, diagnostics)
    if constants is None:
        constants, constant_types = file_constants(path, options, text)
    launches = find_launches(source, text, constants, user_tokens, original_tokens)
    by_name = {k.name: k for k in kernels}
    launches = [replace(launch, constant_arguments=_received(
        by_name[launch.kernel], launch.constant_arguments))
        if launch.kernel in by_name else launch for launch in launches]
    original = tuple(original_tokens)
    return Program(path, text, kernels, launches, device_functions, variables,
                   source.diagnostics + diagnostics, constants, original,
                   allocation_sites(original), kernel_references(original, kernels, launches),
                   struct_types(user_tokens), constant_types or {})


def read_again(program: Program, options: PreprocessorOptions, text: str) -> Program:
    """`text` read as the program `program` was (its path), with the file-scope
    constants and their types already known (the text being polycoal's edit of it,
    whose declarations outside kernels are the input's)."""
    return read_program(program.path, options, text=text, constants=program.constants,
                        constant_types=program.constant_types)


# a declaration of a named integer constant at the start of a line (file and namespace
# scope, as such constants are written; a kernel's local `const int i = ...` is
# indented), or a class's `static constexpr` member (indented), the only text that makes
# Clang worth a parse
_CONSTANT = re.compile(r"^(?:[ \t]*static\s+(?:inline\s+)?(?=const)|(?:static\s+|inline\s+)*)"
                       r"(?:constexpr|const)\s+(?:static\s+)?"
                       r"(?:(?:unsigned|signed|long|short|int|size_t|std::size_t|auto|char)\s*)+"
                       r"[A-Za-z_]\w*\s*(?:=|\{)", re.M)
# the same with a type of the program's own or a library's alias (`constexpr u32 W = 8;`,
# `const uint32_t N = 64;`): an alias the text declares, or a `_t` name
_ALIASED_CONSTANT = re.compile(
    r"^(?:[ \t]*static\s+(?:inline\s+)?(?=const)|(?:static\s+|inline\s+)*)"
    r"(?:constexpr|const)\s+(?:static\s+)?(?:std\s*::\s*)?([A-Za-z_]\w*)\s+"
    r"[A-Za-z_]\w*\s*(?:=|\{)", re.M)
_ALIAS = re.compile(r"\b(?:typedef\s+[\w\s:]+?\s([A-Za-z_]\w*)\s*;|"
                    r"using\s+([A-Za-z_]\w*)\s*=)")


def _declares_constants(text: str) -> bool:
    """Whether the text may declare a named integer constant (the only text that makes
    Clang worth a parse)."""
    if _CONSTANT.search(text):
        return True
    words = {m.group(1) for m in _ALIASED_CONSTANT.finditer(text)}
    if any(w.endswith("_t") or w in ("uint", "ushort", "ulong") for w in words):
        return True
    return bool(words & {a or b for a, b in _ALIAS.findall(text)})


def file_constants(path: str, options: PreprocessorOptions, text: str
                   ) -> tuple[dict[str, int], dict[str, str]]:
    """The file-scope integer constants of the program (`constexpr int ROWS = 512;`),
    their values and their declared types, read by Clang (frontend/clang.py) when the
    text declares any and libclang is installed (none otherwise); a constant whose
    declaration Clang finds invalid is left out."""
    from polycoal.frontend import clang
    if not _declares_constants(text) or not clang.available():
        return {}, {}
    try:
        unit = clang.read(path, options, text)
    except Exception:             # noqa: BLE001 - Clang is an improvement, never a failure
        return {}, {}
    return unit.constants, unit.constant_types
