"""Run the system C preprocessor over a .cu file, keeping the map back to the sources.

The preprocessor is the host compiler's (`g++ -E`, C++ mode since host code may be C++),
with the driver's `-I/-D/-U` options and its forced includes (`-include FILE`, nvcc's
`--pre-include`, read before the source's first line; `-imacros FILE`, only its macros). CUDA's own headers are replaced by the empty stubs
under grammars/include (their declarations are never needed: only macros matter, and
the CUDA headers would turn `__global__` into attributes). A header that cannot be found
is replaced by an empty stub and reported: host code may include libraries polycoal
has no use for (cuBLAS, Thrust), and the kernels rarely depend on them.

The output keeps linemarkers (`# 12 "file.cu"`), from which `origins` maps every output
line to the (file, line) it came from.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from polycoal.diagnostics import Diagnostic, InputError, Location
from polycoal.frontend import toolkit
from polycoal.output import decode, encode

LINEMARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')
_MISSING = re.compile(r'^(.*?):(\d+):(\d+): fatal error: ([^:]+): No such file or directory', re.M)
_ERROR = re.compile(r'^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$', re.M)
_COMMAND_LINE_ERROR = re.compile(r'^<command-line>: (?:fatal )?error: (.*)$', re.M)

PREDEFINED = ("__CUDACC__", "__NVCC__", "__CUDACC_VER_MAJOR__=13", "__CUDACC_VER_MINOR__=0")


DEFAULT_STD = "c++17"


@dataclass(frozen=True)
class PreprocessorOptions:
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()       # "NAME" or "NAME=VALUE"
    undefines: tuple[str, ...] = ()
    std: str = DEFAULT_STD              # the language standard, as the build's -std
    # files read before the source's first line, in order, as the build's `-include`
    # (nvcc's `--pre-include`) names them; `imacros`: `-imacros` files, only their
    # macros kept (the compiler reads them before every `-include`)
    forced_includes: tuple[str, ...] = ()
    imacros: tuple[str, ...] = ()

    def forced_arguments(self) -> list[str]:
        """The forced includes as a gcc or Clang command line writes them."""
        return [a for f in self.imacros for a in ("-imacros", f)] + \
            [a for f in self.forced_includes for a in ("-include", f)]


@dataclass
class PreprocessedSource:
    path: str
    text: str                           # preprocessor output, linemarkers included
    origins: list[tuple[str, int]]      # output line (0-based) -> (file, 1-based line)
    system: list[bool]                  # output line (0-based) came from a system header
    diagnostics: list[Diagnostic]

    def user_text(self) -> str:
        """The output with system-header lines blanked: only the user's code, same lines."""
        lines = self.text.split("\n")
        return "\n".join("" if sys_line else line for line, sys_line in zip(lines, self.system))

    def origin_of_line(self, line: int) -> tuple[str, int]:
        """(file, line) of 1-based output line `line`."""
        return self.origins[min(max(line - 1, 0), len(self.origins) - 1)]


def stub_include_dir() -> Path:
    return Path(str(resources.files("polycoal.grammars") / "include"))


def preprocessor_command(environ=None) -> list[str] | None:
    """The preprocessor: $POLYCOAL_CPP, else the first of g++, c++, clang++, cpp on PATH
    (None when there is none)."""
    environ = os.environ if environ is None else environ
    override = environ.get("POLYCOAL_CPP")
    if override:
        return override.split()
    for exe in ("g++", "c++", "clang++", "cpp"):
        if shutil.which(exe, path=environ.get("PATH")):
            return [exe, "-E", "-x", "c++"] if exe != "cpp" else [exe, "-x", "c++"]
    return None


def _preprocessor() -> list[str]:
    command = preprocessor_command()
    if command is None:
        raise InputError("no C preprocessor found (need g++, clang++ or cpp on PATH, or "
                         "POLYCOAL_CPP)")
    return command


# Preprocessed sources of this process, by what was asked (the command, the file or the
# text), each with the files its output came from (name, size, modification time): a
# source read again (the same program in several tests, a project's units sharing
# headers) is preprocessed again only when one of them changed. The oldest go first.
_MEMO: dict = {}
MEMO_SIZE = 256


def preprocess(path: str | os.PathLike, options: PreprocessorOptions = PreprocessorOptions(),
               text: str | None = None) -> PreprocessedSource:
    """Preprocess `path` (or `text`, reported as `path`) and map the output back."""
    path = str(path)
    if text is None and not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    # (the path as given, too: the output names its file so, and diagnostics with it)
    key = (path, os.path.abspath(path), text, options, tuple(_preprocessor()), os.getcwd(),
           toolkit.read_directory(), str(stub_include_dir()))
    hit = _MEMO.get(key)
    if hit is not None and _stamps(hit[1]) == hit[1]:
        return _copy(hit[0])
    result = _preprocess(path, options, text)
    read = sorted({m.group(2).encode().decode("unicode_escape")
                   for m in _MARKERS.finditer(result.text)} -
                  {"<built-in>", "<command-line>"} - ({path} if text is not None else set()))
    stamps = _stamps(tuple((name, None) for name in read))
    if all(stamp is not None for _, stamp in stamps):
        if len(_MEMO) >= MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = (result, stamps)
        return _copy(result)
    return result


def _copy(found: PreprocessedSource) -> PreprocessedSource:
    """A reader's own copy of a memoized source (its lists may be changed)."""
    return PreprocessedSource(found.path, found.text, list(found.origins),
                              list(found.system), list(found.diagnostics))


_MARKERS = re.compile(LINEMARKER.pattern, re.M)


def _stamps(files: tuple) -> tuple:
    """(name, stamp) of each file, the stamp None where it cannot be read: its size and
    modification time, and its contents' hash unless it is an installed header (a file
    rewritten within the clock's granularity keeps its time)."""
    installed = ("/usr/", toolkit.read_directory(), str(stub_include_dir()))
    out = []
    for name, _ in files:
        try:
            st = os.stat(name)
            stamp: tuple = (st.st_size, st.st_mtime_ns)
            if not os.path.abspath(name).startswith(installed):
                with open(name, "rb") as f:
                    stamp += (hashlib.sha1(f.read()).hexdigest(),)
            out.append((name, stamp))
        except OSError:
            out.append((name, None))
    return tuple(out)


def _preprocess(path: str, options: PreprocessorOptions, text: str | None
                ) -> PreprocessedSource:
    diagnostics: list[Diagnostic] = []
    with tempfile.TemporaryDirectory(prefix="polycoal-cpp-") as stubs:
        cmd = [*_preprocessor(), f"-std={options.std}", "-w"]
        cmd += [f"-D{d}" for d in PREDEFINED]
        for d in options.defines:
            cmd.append(f"-D{d}")
        for u in options.undefines:
            cmd.append(f"-U{u}")
        for inc in options.include_dirs:
            cmd.append(f"-I{inc}")
        cmd += [f"-I{stub_include_dir()}", f"-I{stubs}", "-isystem", toolkit.read_directory()]
        cmd += options.forced_arguments()
        source_arg = path
        if text is not None:
            source_arg = "-"
            if os.path.dirname(path):
                cmd.append(f"-I{os.path.dirname(path)}")
        for _ in range(64):
            proc = _run(cmd + [source_arg], text)
            if proc.returncode == 0:
                break
            missing = _MISSING.search(proc.stderr)
            if not missing:
                raise _preprocessor_error(proc.stderr, path)
            header = missing.group(4).strip()
            stub, above = _stub_path(Path(stubs), header)
            if stub is None or stub.exists():
                raise _preprocessor_error(proc.stderr, path)
            if above and f"-I{above}" not in cmd:
                above.mkdir(parents=True, exist_ok=True)
                cmd.append(f"-I{above}")
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text("")
            quiet = toolkit.is_library_header(header)
            diagnostics.append(Diagnostic(
                "note" if quiet else "warning", "missing-header",
                f"header '{header}' not found; preprocessed as empty"
                + ("" if quiet else " (add -I so kernels see its macros)"),
                Location(_display(missing.group(1), path, text), int(missing.group(2)),
                         int(missing.group(3)))))
        else:
            raise InputError(f"{path}: too many missing headers")
    output = proc.stdout
    if text is not None:
        output = output.replace('"<stdin>"', '"' + path + '"')
    origins, system = _origins(output, path)
    return PreprocessedSource(path, output, origins, system, diagnostics)


def _stub_path(stubs: Path, header: str) -> tuple[Path | None, Path | None]:
    """Where the empty stand-in for a missing header goes, inside `stubs` whatever the
    name, and the include directory that finds it there: `../common/x.h` (n leading
    `..`) lies at stubs/root/common/x.h, found through stubs/root/up/.../up (n deep);
    (None, None) for a name that climbs elsewhere or is absolute."""
    parts = Path(header).parts
    up = next((n for n, part in enumerate(parts) if part != ".."), len(parts))
    rest = parts[up:]
    if not rest or Path(header).is_absolute() or ".." in rest:
        return None, None
    if not up:
        return stubs.joinpath(*rest), None
    return stubs.joinpath("root", *rest), stubs.joinpath("root", *(["up"] * up))


def _run(cmd: list[str], text: str | None) -> subprocess.CompletedProcess:
    """Run the preprocessor on `text` (or the file named in `cmd`). Text travels as the
    bytes of the file (a Latin-1 comment stays the same bytes, see polycoal.output), and
    the output's line ends are read as universal newlines."""
    proc = subprocess.run(cmd, input=None if text is None else encode(text),
                          capture_output=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, _text(proc.stdout),
                                       _text(proc.stderr))


def _text(data: bytes) -> str:
    return decode(data).replace("\r\n", "\n").replace("\r", "\n")


def _display(name: str, path: str, text: str | None) -> str:
    return path if (text is not None and name == "<stdin>") else name


def _preprocessor_error(stderr: str, path: str) -> InputError:
    m = _COMMAND_LINE_ERROR.search(stderr)
    if m:                           # a forced include (-include, -imacros) not found
        return InputError(f"{path}: preprocessor: {m.group(1)} (a file read before the "
                          "source: -include, -imacros)", None, stderr.splitlines()[:8])
    m = _ERROR.search(stderr)
    if m:
        return InputError(f"preprocessor: {m.group(4)}",
                          Location(m.group(1).replace("<stdin>", path), int(m.group(2)),
                                   int(m.group(3))),
                          [line for line in stderr.splitlines()[:8]])
    return InputError(f"{path}: preprocessor failed", None, stderr.splitlines()[:8])


def _origins(output: str, path: str) -> tuple[list[tuple[str, int]], list[bool]]:
    """Origin (file, line) and system-header flag (linemarker flag 3) of each output line.
    A file entered without flag 3 is the user's: a marker that names it with flag 3 is
    the expansion of a system header's macro in the user's code (`assert(i < n)` is
    printed as lines of <assert.h>'s tokens marked `# 20 "k.cu" 3 4` between lines of
    the argument's), which is the user's code at that line, not a header's."""
    origins: list[tuple[str, int]] = []
    system: list[bool] = []
    current_file, current_line, in_system = path, 1, False
    users = {path}
    for raw in output.split("\n"):
        m = LINEMARKER.match(raw)
        if m:
            origins.append((current_file, current_line))
            system.append(True)
            current_file = m.group(2).encode().decode("unicode_escape")
            current_line = int(m.group(1))
            flags = raw[m.end():].split()
            if "3" not in flags and current_file not in ("<built-in>", "<command-line>"):
                users.add(current_file)
            in_system = current_file not in users
            continue
        origins.append((current_file, current_line))
        system.append(in_system)
        current_line += 1
    return origins, system
