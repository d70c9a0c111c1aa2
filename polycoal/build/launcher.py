"""The compiler launcher (`polycoal launch <compiler> ...`, `polycoal-nvcc`) and the
explicit per-source step of the CMake package (`polycoal prepare`).

The launcher reads the compile command, prepares each CUDA source in it (see
`polycoal.build.prepare`), writes the transformed ones into the build tree beside the
object (`<object dir>/.polycoal/<hash>/<source name>`: the name is kept, so the driver's
default output and dependency-file names do not change), runs the real compiler on them
with the originals' directories first on the include path, and rewrites the dependency
file to name the original sources. Commands without a CUDA source (links, host C++) and
commands that compile nothing (-E, -M, --version) run unchanged.

Environment: POLYCOAL_DISABLE=1 runs every command unchanged; POLYCOAL_STRICT=1 stops the
build where a kernel is not transformed; POLYCOAL_VERBOSE=1 says what was transformed and
whether the cache answered; POLYCOAL_CACHE_DIR moves the cache (default: `.polycoal/cache`
beside the object); POLYCOAL_OPTIONS holds `polycoal transform` options (`--block 32,8
--assume-no-alias`...); POLYCOAL_NVCC names the real nvcc for `polycoal-nvcc`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from polycoal.build.command import parse_command, rewrite_command
from polycoal.build.lines import with_line_directives
from polycoal.build.prepare import prepare_source, report
from polycoal.build.settings import BuildOptions, build_options
from polycoal.diagnostics import InputError
from polycoal.frontend import read_source
from polycoal.frontend.preprocess import DEFAULT_STD, PreprocessorOptions
from polycoal.output import write_atomically

USAGE = "usage: polycoal launch <compiler> [compiler arguments...]"


def _flag(environ, name: str) -> bool:
    return environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def _build_options(environ, preprocessor: PreprocessorOptions) -> BuildOptions:
    """The one options value of this command (see build/settings.py)."""
    from polycoal.options import transform_options_from
    transform = transform_options_from(environ.get("POLYCOAL_OPTIONS", "").split(),
                                       preprocessor, environ)
    return build_options(environ, transform)


def _run(argv: list[str], environ, copies: dict[str, str] | None = None) -> int:
    """Run the real compiler; polycoal inside it (a wrapper calling the launcher again)
    passes through. With `copies` (original -> copy), its messages name the originals."""
    try:
        proc = subprocess.run(argv, env={**environ, "POLYCOAL_DISABLE": "1"},
                              stderr=subprocess.PIPE if copies else None)
    except OSError as error:
        print(f"polycoal: error: cannot run {argv[0]}: {error.strerror}", file=sys.stderr)
        return 127
    if copies:
        messages = proc.stderr
        for original, copy in copies.items():
            messages = messages.replace(os.fsencode(copy), os.fsencode(original))
        sys.stderr.flush()
        sys.stderr.buffer.write(messages)
        sys.stderr.buffer.flush()
    return proc.returncode


def _cache_dir(environ, build_dir: str) -> str:
    """$POLYCOAL_CACHE_DIR, else .polycoal/cache in the directory of the build's output."""
    return environ.get("POLYCOAL_CACHE_DIR") or os.path.join(build_dir, ".polycoal", "cache")


def _prepare(path: str, options, cache_dir: str, environ):
    """Prepare one source and print its report; (prepared, stop the build?)."""
    prepared = prepare_source(path, options, cache_dir)
    lines, stop = report(prepared, _flag(environ, "POLYCOAL_STRICT"),
                         _flag(environ, "POLYCOAL_VERBOSE"))
    for line in lines:
        print(line, file=sys.stderr)
    return prepared, stop


def _make_escape(path: str) -> str:
    """`path` as a dependency file writes it."""
    return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#") \
        .replace("$", "$$")


def copy_path(build_dir: str, source: str, output: str | None) -> str:
    """Where the transformed copy of `source` compiled into `output` goes."""
    tag = hashlib.sha256(f"{os.path.abspath(source)}\n{os.path.abspath(output or '')}"
                         .encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(build_dir, ".polycoal", tag, os.path.basename(source))


def fix_depfile(path: str, copies: dict[str, str]) -> None:
    """Name the original sources instead of their copies in a compiler's dependency file."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError:
        return
    for original, copy in copies.items():
        text = text.replace(_make_escape(copy), _make_escape(original))
    write_atomically(path, text)


def launch(argv: list[str], environ=None) -> int:
    """`polycoal launch`: transform the CUDA sources of a compile command, then compile."""
    environ = dict(os.environ if environ is None else environ)
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + __doc__.split("\n\n", 1)[1].strip())
        return 0
    compiler, args = argv[0], argv[1:]
    if _flag(environ, "POLYCOAL_DISABLE"):
        return _run(argv, environ)
    try:
        command = parse_command(args)
    except InputError:
        return _run(argv, environ)          # the compiler says what is wrong
    if not command.compiles or not command.sources:
        return _run(argv, environ)
    preprocessor = PreprocessorOptions(command.include_dirs, command.defines,
                                       command.undefines, command.std or DEFAULT_STD,
                                       command.forced_includes, command.imacros)
    build_dir = os.path.dirname(os.path.abspath(command.output)) if command.output \
        else os.getcwd()
    copies: dict[str, str] = {}
    stop = False
    try:
        options = _build_options(environ, preprocessor)
        for path in command.source_paths:
            prepared, stop_here = _prepare(path, options, _cache_dir(environ, build_dir),
                                           environ)
            stop = stop or stop_here
            if prepared.text is not None:
                copy = copy_path(build_dir, path, command.output)
                os.makedirs(os.path.dirname(copy), exist_ok=True)
                write_atomically(copy, prepared.text)
                copies[path] = copy
    except InputError as error:             # POLYCOAL_OPTIONS, a missing build directory
        print(error, file=sys.stderr)
        return 2
    except OSError as error:                # an unwritable build tree
        print(f"polycoal: error: {error}", file=sys.stderr)
        return 2
    if stop:
        return 1
    if not copies:
        return _run(argv, environ)
    status = _run([compiler, *rewrite_command(command, copies)], environ, copies)
    if status == 0 and command.depfile:
        fix_depfile(command.depfile, copies)
    return status


def prepare_file(source: str, output: str, preprocessor: PreprocessorOptions,
                 depfile: str | None = None, environ=None) -> int:
    """`polycoal prepare`: the launcher's work on one source, for a build step of its own
    (the CMake package's `polycoal_transform_sources`): `output` gets the transformed
    text, or the original, both with `#line` directives to `source`; `depfile` (make
    syntax) lists every file read."""
    environ = dict(os.environ if environ is None else environ)
    if _flag(environ, "POLYCOAL_DISABLE"):
        prepared, stop = None, False
    else:
        prepared, stop = _prepare(source, _build_options(environ, preprocessor),
                                  _cache_dir(environ, os.path.dirname(os.path.abspath(output))),
                                  environ)
    if stop:
        return 1
    text = prepared.text if prepared is not None else None
    if text is None:
        try:
            original = read_source(source)
        except OSError as error:
            raise InputError(f"{source}: cannot read: {error.strerror}") from error
        text = with_line_directives(original, original, os.path.abspath(source))
    write_atomically(output, text)
    if depfile:
        dependencies = prepared.dependencies if prepared and prepared.dependencies \
            else (source,)
        write_atomically(depfile, _make_escape(output) + ": " + " \\\n  ".join(
            _make_escape(d) for d in dependencies) + "\n")
    return 0


def _real_nvcc(environ, self_path: str) -> str | None:
    """$POLYCOAL_NVCC, else the first nvcc on PATH that is not this script."""
    if environ.get("POLYCOAL_NVCC"):
        return environ["POLYCOAL_NVCC"]
    for directory in environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(directory or ".", "nvcc")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and not (
                os.path.exists(self_path) and os.path.samefile(candidate, self_path)):
            return candidate
    return None


def nvcc_main(argv: list[str] | None = None) -> int:
    """`polycoal-nvcc`: nvcc through the launcher, for Make (`make NVCC=polycoal-nvcc`)."""
    argv = sys.argv[1:] if argv is None else argv
    real = _real_nvcc(os.environ, os.path.abspath(sys.argv[0]))
    if real is None:
        print("polycoal-nvcc: error: no nvcc on PATH (set POLYCOAL_NVCC)", file=sys.stderr)
        return 127
    return launch([real, *argv])

