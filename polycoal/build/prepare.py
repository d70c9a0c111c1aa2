"""One source of a build: transformed for coalescing, or left as it is and why.

`prepare_source` preprocesses the file (as the compile command would), looks the result
up in the cache, and on a miss runs the front end and `transform_program` on it. The
transformed text carries `#line` directives to the original. Whatever polycoal cannot
do (a file it cannot read, an internal failure, a kernel it cannot prove legal to
transform) leaves the original to be compiled, and `report` turns that into warnings,
or errors in strict mode.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace

from polycoal.build import cache
from polycoal.build.lines import with_line_directives
from polycoal.build.settings import BuildOptions
from polycoal.diagnostics import InputError
from polycoal.frontend import read_program, read_source
from polycoal.frontend.preprocess import PreprocessedSource, preprocess, stub_include_dir
from polycoal.decisions import FINE_AS_IS
from polycoal.transform import TransformOptions, transform_program


@dataclass(frozen=True)
class KernelOutcome:
    kernel: str
    file: str
    line: int
    action: str                      # as KernelDecision.action: "unchanged", "restructured"...
    reason: str
    code: str = ""                   # as KernelDecision.code

    @property
    def fine_as_is(self) -> bool:
        """Unchanged because nothing would be better (not because polycoal could not),
        or read through copies (a header's or a template's kernel: `lowered`), whose
        own outcomes say what became of them."""
        return self.code in FINE_AS_IS or self.code == "lowered"


@dataclass(frozen=True)
class Prepared:
    source: str                      # the path as the build gave it
    text: str | None                 # what to compile instead; None: the original
    kernels: tuple[KernelOutcome, ...] = ()
    error: str | None = None         # why polycoal could not work on the file at all
    cached: bool = False
    dependencies: tuple[str, ...] = ()   # the source and every file it includes


def prepare_source(path: str, options: BuildOptions, cache_dir: str) -> Prepared:
    """Transform `path` with `options` (its preprocessor options those of the build); the
    cache key covers the source, everything it includes, and `options` whole."""
    try:
        original = read_source(path)
        source = preprocess(path, options.preprocessor)
    except (OSError, InputError) as error:
        return Prepared(path, None, error=_first_line(error))
    dependencies = _dependencies(source.origins) + tuple(   # -imacros: no line of it shows
        f for f in options.preprocessor.imacros if os.path.isfile(f))
    absolute = os.path.abspath(path)
    key = cache.cache_key([absolute, original, source.text, options.key_part()])
    record = cache.load(cache_dir, key)
    if record is not None:
        return replace(_from_record(path, record), cached=True, dependencies=dependencies)
    prepared = _transform(path, absolute, original, source, options.transform)
    try:
        cache.store(cache_dir, key, {"text": prepared.text, "error": prepared.error,
                                     "kernels": [asdict(k) for k in prepared.kernels]})
    except (OSError, InputError):
        pass                         # the cache only saves time: a build goes on without it
    return replace(prepared, dependencies=dependencies)


def _transform(path: str, absolute: str, original: str, source: PreprocessedSource,
               options: TransformOptions) -> Prepared:
    try:
        program = read_program(path, options.preprocessor, text=original, source=source)
        result = transform_program(program, options)
    except InputError as error:
        return Prepared(path, None, error=_first_line(error))
    except Exception as error:  # a bug in polycoal must not break the user's build
        return Prepared(path, None, error=f"internal error ({type(error).__name__}: "
                        f"{_first_line(error)})")
    kernels = tuple(KernelOutcome(d.kernel, *_location(d.kernel, result, program), d.action,
                                  d.reason, d.code)
                    for d in result.decisions)
    text = None
    if result.text != original:
        text = with_line_directives(original, result.text, absolute)
    return Prepared(path, text, kernels)


def _location(kernel: str, result, program) -> tuple[str, int]:
    """(file, line) of a decision's kernel: where its diagnostics place it (a transformed
    copy of a header's or a template's kernel, `row_scale__pc_float`, which the input
    does not define: at the definition it copies), else where the input or the
    transformed program defines it."""
    for x in result.diagnostics:
        if x.kernel == kernel and x.location is not None:
            return x.location.file, x.location.line
    for p in (program, result.program):
        k = p.kernel(kernel) if p is not None else None
        if k is not None:
            return k.location.file, k.location.line
    return program.path, 0


def _from_record(path: str, record: dict) -> Prepared:
    return Prepared(path, record["text"], tuple(KernelOutcome(**k) for k in record["kernels"]),
                    record["error"])


def _dependencies(origins: list[tuple[str, int]]) -> tuple[str, ...]:
    """The files the preprocessor read, in order, without polycoal's own stub headers."""
    stubs = str(stub_include_dir())
    seen: dict[str, None] = {}
    for name, _ in origins:
        if name not in seen and os.path.isfile(name) and not name.startswith(stubs):
            seen[name] = None
    return tuple(seen)


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


def report(prepared: Prepared, strict: bool, verbose: bool) -> tuple[list[str], bool]:
    """The lines to print on standard error for a prepared source, and whether the build
    must stop (strict mode and something polycoal could not transform)."""
    severity = "error" if strict else "warning"
    lines = []
    if verbose:
        lines.append(f"polycoal: {prepared.source}: cache "
                     + ("hit" if prepared.cached else "miss")
                     + ("" if prepared.text else "; the original is compiled"))
    if prepared.error:
        lines.append(f"polycoal: {severity}: {prepared.source}: not transformed: "
                     f"{prepared.error}")
    problems = bool(prepared.error)
    for k in prepared.kernels:
        where = f"{k.file}:{k.line}"
        if k.action != "unchanged":
            if verbose:
                lines.append(f"polycoal: {where}: kernel {k.kernel} {k.action}: {k.reason}")
        elif not k.fine_as_is:
            problems = True
            lines.append(f"polycoal: {severity}: {where}: kernel {k.kernel} left unchanged: "
                         f"{k.reason}")
        elif verbose:
            lines.append(f"polycoal: {where}: kernel {k.kernel} left unchanged: {k.reason}")
    if strict and problems:
        lines.append(f"polycoal: error: {prepared.source}: POLYCOAL_STRICT=1 stops the build "
                     "where a kernel is not transformed")
    return lines, strict and problems
