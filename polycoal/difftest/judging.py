"""The judge's pieces below the runner: the option sets, running `polycoal transform`
in process, nvcc, the checksums and their tolerances, and the verdict of a run. Read by
the runner (one program) and by the project judge (a program as a project); the failure
classes are described in runner.py."""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field

from polycoal.runtime.cpu_program import find_launches, tokens

@dataclass
class Check:
    """How an array's checksums are compared: `kind` "exact" (bit-identical), or
    "reduction" (floating-point additions or divisions reassociated by a transformation,
    `terms` the longest reduction of the program, `ctype` float or double)."""
    kind: str = "exact"
    terms: int = 0
    ctype: str = "float"



# option name -> `polycoal transform` arguments ("default" is --reduction auto)
OPTION_SETS: dict[str, list[str]] = {
    "default": [],
    # every pass's form as proposed, whatever the performance model predicts: the
    # generated programs are small, and the model keeps most of their kernels
    "no-model": ["--no-model"],
    "reduction=warp": ["--reduction", "warp"],
    "reduction=split": ["--reduction", "split"],
    "reduction=block": ["--reduction", "block"],
    "reduction=tiles": ["--reduction", "tiles"],
    "reduction=none": ["--reduction", "none"],
    "no-promotion": ["--no-promotion"],
    # products in tall tiles (256 x 128 in the warp layout: the full tiles unclamped,
    # the others clamped, in one kernel; with four operands, two kernels) whatever the
    # sizes of the outputs; in square tiles of 128 in the warp layout
    "tall-tiles": ["--sizes", "tile=128,tall=256,chunk=8,blocks=1"],
    "square-warps": ["--sizes", "tile=128,tall=128,chunk=8,blocks=2"],
    "collapse": ["--collapse-redundant-threads"],
    # the register window wherever it applies (small grids, rows sharing nothing)
    "window": ["--no-model", "--window-always"],
    # staged sweeps of one row a warp and of sixteen (the default is 4 or 8)
    "sweep-rows=1": ["--no-model", "--sweep-rows", "1"],
    "sweep-rows=16": ["--no-model", "--sweep-rows", "16"],
    "layout=soa": ["--layout", "soa"],
    "layout=none": ["--layout", "none"],
    "reorganise=none": ["--reorganise", "none"],
    # `polycoal place` instead of transform: data placement of the original's arrays
    "place": ["place"],
    "place-trace": ["place", "--trace"],
    "placement": ["--placement"],
}


def command(args: list[str]) -> tuple[str, list[str]]:
    """(the polycoal command, its options) of an option set: `transform` unless the set
    names another first."""
    if args and args[0] == "place":
        return "place", args[1:]
    return "transform", args

TRANSFORM_TIMEOUT = 120          # seconds per transform
RUN_TIMEOUT = 60                 # seconds per CPU run


@dataclass
class Failure:
    cls: str                     # the failure class
    options: list[str]           # the option sets that produced it
    message: str                 # the first lines of what was wrong
    output: str | None = None    # the transformed text, when there is one


@dataclass
class ProgramResult:
    seed: int
    family: str
    variant: str
    shape: str
    failures: list[Failure] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)   # option -> ok/changed/class
    distinct_outputs: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    source: str = ""
    constructs: list[str] = field(default_factory=list)     # C++ constructs (cxx.py)

    def to_json(self) -> dict:
        d = asdict(self)
        for f in d["failures"]:
            f.pop("output", None)
        d.pop("source", None)
        return d


# ------------------------------------------------------------------------- transform

_read_cache: dict = {}


def install_read_cache() -> None:
    """Memoize polycoal's front end (read_program) by file text and options in this
    process: the eight transforms of a program read the same input, and their validations
    often the same output (about five times faster under load). The front end does not
    mutate what it returns (testsuite/conftest.py caches programs the same way); failures
    are confirmed by a `polycoal transform` subprocess before they are saved
    (main.confirm_with_cli)."""
    import polycoal.frontend as frontend
    original = getattr(frontend.read_program, "__wrapped__", frontend.read_program)

    def read_program(path, options=frontend.PreprocessorOptions(), text=None, source=None,
                     constants=None, constant_types=None):
        if source is not None:
            return original(path, options, text, source, constants, constant_types)
        if text is None:
            try:
                with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                    content = f.read()
            except OSError:
                return original(path, options)
        else:
            content = text
        given = None if constants is None else (tuple(sorted(constants.items())), tuple(
            sorted((constant_types or {}).items())))
        key = (path, options, content, text is None, given)
        if key not in _read_cache:
            _read_cache[key] = original(path, options, text, constants=constants,
                                        constant_types=constant_types)
        return _read_cache[key]

    read_program.__wrapped__ = original
    frontend.read_program = read_program       # read_again reads through it too


def clear_read_cache() -> None:
    _read_cache.clear()


def uninstall_read_cache() -> None:
    """Put the front end's own read_program back (a run in the caller's process, such as
    --replay from a test session, must not leave its memo behind)."""
    import polycoal.frontend as frontend
    original = getattr(frontend.read_program, "__wrapped__", None)
    if original is not None:
        frontend.read_program = original
    _read_cache.clear()


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


@dataclass
class TransformOutcome:
    status: int | None           # exit status (None: an exception or a timeout)
    text: str | None             # the output, when written
    stderr: str
    cls: str | None = None       # failure class, None when the transform is acceptable
    detail: str = ""


def traceback_class(error: BaseException) -> str:
    """traceback:<type>@<file>:<function> of the innermost frame inside polycoal (or the
    innermost frame at all)."""
    frames = traceback.extract_tb(error.__traceback__)
    inner = [f for f in frames if f"{os.sep}polycoal{os.sep}" in f.filename and
             f"{os.sep}difftest{os.sep}" not in f.filename] or frames
    where = f"{os.path.basename(inner[-1].filename)}:{inner[-1].name}" if inner else "?"
    return f"traceback:{type(error).__name__}@{where}"


@contextlib.contextmanager
def _quiet_stdout():
    """Solvers print on file descriptor 1 (HiGHS' banner): send it to /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    # a temporary file rather than /dev/null: a test run as root elsewhere on the machine
    # has been seen to replace /dev/null (issue 12)
    sink = tempfile.TemporaryFile()
    os.dup2(sink.fileno(), 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        sink.close()


def dispatch(argv: list[str], timeout: int, what: str
             ) -> tuple[int | None, str, "TransformOutcome | None"]:
    """`polycoal argv` in this process (below main's last-resort handler, so that an
    exception escaping the command is seen with its traceback), its standard output
    discarded: (exit status, standard error, the failure's outcome where it timed out
    or raised, else None)."""
    from polycoal.cli import _dispatch as main
    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    quiet = _quiet_stdout()
    quiet.__enter__()          # outside the try: a failure here is the tester's own
    try:
        with contextlib.redirect_stderr(err):
            status = main(argv)
    except _Timeout:
        return None, err.getvalue(), TransformOutcome(
            None, None, err.getvalue(), "transform-timeout", f"{what} ran past {timeout} s")
    except SystemExit as e:             # argparse
        status = e.code if isinstance(e.code, int) else 2
    except BaseException as e:          # noqa: BLE001 - any exception is the finding
        if isinstance(e, KeyboardInterrupt):
            raise
        return None, err.getvalue(), TransformOutcome(
            None, None, err.getvalue(), traceback_class(e),
            "".join(traceback.format_exception(e))[-3000:])
    finally:
        quiet.__exit__(None, None, None)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return status, err.getvalue(), None


def run_transform(path: str, out: str, args: list[str],
                  timeout: int = TRANSFORM_TIMEOUT) -> TransformOutcome:
    """`polycoal transform path -o out args` in this process (see dispatch)."""
    if os.path.exists(out):
        os.unlink(out)
    name, rest = command(args)
    status, stderr, failed = dispatch([name, path, "-o", out] + rest, timeout, "transform")
    if failed is not None:
        return failed
    text = None
    if os.path.exists(out):
        with open(out, encoding="utf-8", errors="replace") as f:
            text = f.read()
    if status == 0:
        if text is None:
            return TransformOutcome(status, None, stderr, "no-output", "exit 0 but no output")
        return TransformOutcome(status, text, stderr)
    if status == 1 and "[internal-error]" in stderr:     # caught and confined to a kernel
        return TransformOutcome(status, text, stderr, "internal-error",
                                _first_lines(stderr, "internal error"))
    if status == 1 and "validation failed" in stderr:
        return TransformOutcome(status, text, stderr, "validation-rejected",
                                _first_lines(stderr, "validation failed"))
    return TransformOutcome(status, text, stderr, f"exit-{status}", stderr[-2000:])


def _errors(compiler_output: str, n: int = 6) -> str:
    """A compiler's error lines first (at most n), then the end of its output."""
    lines = compiler_output.splitlines()
    errors = [l for l in lines if "error" in l]
    return "\n".join(errors[:n]) + "\n...\n" + "\n".join(lines[-10:])


def _first_lines(text: str, needle: str, n: int = 3) -> str:
    lines = [l for l in text.splitlines() if needle in l] or text.splitlines()
    return "\n".join(lines[:n])


# ------------------------------------------------------------------------- nvcc

class Nvcc:
    """nvcc -arch=sm_90 on one file: `-cubin` (the default: the whole translation unit
    through the CUDA front end, which checks host code too, device code through ptxas;
    about a third of the time of -c) or `-c` (also the host compiler)."""

    def __init__(self, mode: str = "cubin", nvcc: str | None = None):
        self.mode = mode
        self.nvcc = nvcc or os.environ.get("NVCC", "nvcc")

    def command(self, src: str, out: str, extra: tuple[str, ...] = ()) -> list[str]:
        flag = "-cubin" if self.mode == "cubin" else "-c"
        return [self.nvcc, "-arch=sm_90", flag, *extra, src, "-o", out]

    def check(self, source: str, directory: str, name: str) -> str | None:
        """None when it compiles, else nvcc's first error lines."""
        src = os.path.join(directory, name + ".cu")
        with open(src, "w") as f:
            f.write(source)
        try:
            r = subprocess.run(self.command(src, os.path.join(directory, name + ".o"),
                                            relaxed_constexpr(source, directory)),
                               capture_output=True, text=True, errors="replace", timeout=600)
        except subprocess.TimeoutExpired:
            return "nvcc ran past 600 s"
        if r.returncode == 0:
            return None
        out = (r.stdout + r.stderr).splitlines()
        keep: list[str] = []
        for n, line in enumerate(out):          # each error with its detail lines
            if "error" in line.lower() and len(keep) < 12:
                keep += out[n:n + 4]
        return "\n".join(keep) or "\n".join(out[-20:])


def relaxed_constexpr(source: str, directory: str | None = None) -> tuple[str, ...]:
    """nvcc's `--expt-relaxed-constexpr` for a program whose kernels call
    `std::numeric_limits<T>::max()` and its kin (cxx: numeric-limits), constexpr host
    functions that device code may call only under it (the flag such code is built
    with); () for any other program, which must build with plain `nvcc -arch=sm_90`.
    The headers it includes from `directory` count."""
    texts = [source]
    if directory:
        for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', source, re.M):
            try:
                with open(os.path.join(directory, name)) as f:
                    texts.append(f.read())
            except OSError:
                pass
    return ("--expt-relaxed-constexpr",) if any("numeric_limits" in t for t in texts) else ()


# ------------------------------------------------------------------------- comparing

def parse_checks(stdout: str) -> dict[str, tuple[float, float]]:
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "CHECK":
            out[parts[1]] = (float(parts[2]), float(parts[3]))
    return out


def tolerance(check: Check) -> float:
    """Relative tolerance of an array's checksum against its magnitude checksum.

    exact (no floating-point reduction in the program, and every integer array): 0, the
    same bits. A float reduction of L terms reassociated (warp shuffles, split columns,
    atomics): each result's rounding error is at most about L * u * (sum of |terms|)
    (u = 2^-24 for float, 2^-53 for double); with the generator's inputs (dyadic, below
    8 in magnitude, so that most sums are exact anyway) the sum of |terms| stays within a
    small factor of the result's magnitude, hence 16 * L * u relative to the magnitude
    checksum (a weighted sum of |result|), at least 1e-5 for float (1e-12 for double):
    about 1e-4 at L = 100 for float, relative 1e-4 per hundred terms.
    """
    if check.kind == "exact":
        return 0.0
    u = 2.0 ** -24 if check.ctype == "float" else 2.0 ** -53
    floor = 1e-5 if check.ctype == "float" else 1e-12
    return max(floor, 16.0 * check.terms * u)


def compare(checks: dict[str, Check], want: dict[str, tuple[float, float]],
            got: dict[str, tuple[float, float]]) -> str | None:
    """None when every array agrees, else what differs."""
    problems = []
    for name in sorted(set(want) | set(got)):
        if name not in got or name not in want:
            problems.append(f"{name}: checksum line missing in the "
                            f"{'output' if name not in got else 'original'}")
            continue
        (s1, a1), (s2, a2) = want[name], got[name]
        check = checks.get(name, Check())
        tol = tolerance(check)
        for what, x, y, scale in (("sum", s1, s2, max(abs(a1), abs(a2))),
                                  ("magnitude", a1, a2, max(abs(a1), abs(a2)))):
            if math.isnan(x) and math.isnan(y):
                continue
            if x == y:
                continue
            if tol > 0 and math.isfinite(x) and math.isfinite(y) and \
                    abs(x - y) <= tol * scale:
                continue
            problems.append(f"{name}: {what} {x!r} (original) vs {y!r} (output)"
                            f"{f', tolerance {tol:.1e} relative' if tol else ', exact'}")
            break
    return "; ".join(problems) or None


def _closing(toks, k: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket toks[k] (len(toks) when unbalanced)."""
    depth = 0
    for c in range(k, len(toks)):
        if toks[c].text == open_:
            depth += 1
        elif toks[c].text == close:
            depth -= 1
            if depth == 0:
                return c
    return len(toks)


def kernel_definitions(text: str) -> dict[str, str]:
    """name -> text of each __global__ function definition."""
    toks = tokens(text)
    out = {}
    for n, t in enumerate(toks):
        if t.text != "__global__":
            continue
        j = n
        while j < len(toks) and toks[j].text != "(":
            j += 1
        if j >= len(toks) or toks[j - 1].kind != "id":
            continue
        name = toks[j - 1].text
        e = _closing(toks, j, "(", ")")
        b = e + 1
        while b < len(toks) and toks[b].text not in ("{", ";"):
            b += 1
        if b >= len(toks) or toks[b].text != "{":
            continue
        c = _closing(toks, b, "{", "}")
        out[name] = text[t.start:toks[min(c, len(toks) - 1)].end]
    return out


def kept_unchanged(original: str, output: str, kernels: list[str]) -> str | None:
    """None when every kernel in `kernels` and its launches are byte-identical, or the
    kernel stays byte-identical beside a copy `k__pc_checked` that its launches run only
    where a run-time check holds (pointers that do not overlap at that launch): the
    original runs where they do, and the execution of the output judges that."""
    a, b = kernel_definitions(original), kernel_definitions(output)
    try:
        la, lb = find_launches(original), find_launches(output)
    except ValueError as e:
        return f"launches cannot be read: {e}"
    for k in kernels:
        if a.get(k) != b.get(k):
            return f"kernel '{k}' changed"
        # the check's copy of the kernel, or of the copy read from a header or a
        # template (`k__pc__pc_checked`, `k__pc_float__pc_checked`), beside a copy of
        # the original for where the check fails
        if f"{k}__pc_checked" in b or any(n.startswith(f"{k}__pc") and
                                           n.endswith("__pc_checked") for n in b):
            continue
        if [(l.config, l.args) for l in la if l.kernel == k] != \
                [(l.config, l.args) for l in lb if l.kernel == k]:
            return f"a launch of kernel '{k}' changed"
    return None


# ------------------------------------------------------------------------- one program



def run_verdict(cpu, exe: str, checks, want, want_reverse, timed
                ) -> tuple[str, str] | None:
    """A transformed program's executable run on the CPU runtime in both orders of its
    blocks and threads: None where it prints the original's checks both times, else
    (kind, detail): a run-time failure, a mismatch, or a race the transformation
    introduced (the result depends on the order in which blocks and threads run).
    `timed(stage, started)` accounts for each run."""
    t = time.monotonic()
    run = cpu.run(exe, RUN_TIMEOUT)
    timed("run", t)
    if run.failure:
        return f"runtime:{run.failure}", run.stderr[-1500:]
    diff = compare(checks, want, parse_checks(run.stdout))
    if diff:
        return "mismatch", diff
    t = time.monotonic()
    rev = cpu.run(exe, RUN_TIMEOUT, reverse=True)
    timed("run", t)
    if rev.failure:
        return f"runtime:{rev.failure}", "in the reverse order: " + rev.stderr[-1500:]
    diff = compare(checks, want_reverse, parse_checks(rev.stdout))
    if diff:
        return "race", "blocks and threads in the reverse order: " + diff
    return None


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]
