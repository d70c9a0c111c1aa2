"""Whole CUDA programs on the CPU: compile a .cu file as C++ with g++ against the CUDA
emulation of templates/cpu_program.h (host API, dim3, thread indices, barriers, warp
shuffles, atomics) and run it.

Every launch `k<<<g, b[, shm[, stream]]>>>(args)` is rewritten into
`pc_launch(sync, "k", dim3(g), dim3(b), shm, [pc_a0 = (arg0), ...] { k(pc_a0, ...); })`:
the arguments are evaluated once, at the launch, and the lambda runs each thread. A
kernel whose body (or a function in the file) uses a barrier or a warp intrinsic (or a
cooperative group's thread block: STUB_TEXTS's <cooperative_groups.h>) is launched with
sync = true, which runs the threads of a block as fibers meeting at
barriers (see the header); any other kernel runs thread by thread.

The launch scanner is a small tokenizer of its own (comments, strings, preprocessor lines
skipped), independent of polycoal's front end, so that the programs polycoal writes are
run as a compiler would see them. This module sits below the transform driver: it must
not import polycoal.transform.
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

from polycoal.frontend import toolkit

HEADER = "cpu_program.h"
TYPES = "cuda_types.h"           # included by HEADER, shared with validate --cpu
RUNTIME = "cpu_program_rt.cpp"
STUB_HEADERS = ("cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "device_launch_parameters.h",
                "device_functions.h", "cuda_fp16.h", "math_functions.h", "vector_types.h",
                "driver_types.h", "sm_60_atomic_functions.h", "cooperative_groups.h",
                "cooperative_groups/reduce.h", "cooperative_groups/memcpy_async.h",
                "cooperative_groups/scan.h")
# stubs with contents (the others are empty): a thread block's cooperative group over the
# runtime's barrier and thread indices, enough to run a kernel that synchronises through
# one (`cg::thread_block b = cg::this_thread_block(); b.sync();`, `cg::sync(b)`,
# `cg::this_thread_block().sync()`); nothing else of the API (tiles, grids, reduce)
STUB_TEXTS = {"cooperative_groups.h": """#pragma once
// polycoal's CPU runtime (cpu_program.py): a thread block's cooperative group only. A
// kernel naming this_thread_block or thread_block runs as a synchronising one (fibers).
namespace cooperative_groups {
class thread_block {
 public:
  void sync() const { __syncthreads(); }
  unsigned long long thread_rank() const {
    return threadIdx.x + (unsigned long long)blockDim.x *
        (threadIdx.y + (unsigned long long)blockDim.y * threadIdx.z); }
  unsigned long long size() const {
    return (unsigned long long)blockDim.x * blockDim.y * blockDim.z; }
  unsigned long long num_threads() const { return size(); }
  dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  dim3 group_dim() const { return blockDim; }
  dim3 dim_threads() const { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }
template <typename Group> inline void sync(const Group &g) { g.sync(); }
}  // namespace cooperative_groups
"""}
CXXFLAGS = ("-std=c++17", "-O0", "-w", "-ffp-contract=off")

# exit statuses of the runtime (cpu_program.h, PC_EXIT_*)
EXIT_STATUSES = {88: "deadlock", 87: "invalid-launch", 86: "memory-fault",
                 85: "out-of-bounds-write", 84: "sync-in-sequential-kernel",
                 83: "cuda-api-misuse",
                 82: "cuda-error"}           # the GPU runner's (gpu_program.py)

SYNC_WORDS = re.compile(r"^(__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any_sync|"
                        r"__all_sync|__activemask|__match\w*|__reduce\w*_sync|"
                        r"this_thread_block|thread_block)$")    # (cooperative groups)

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
      | (?P<num>\.?\d(?:[\w.]|[eEpP][+-])*)
      | (?P<id>[A-Za-z_]\w*)
      | (?P<spaced><<[ \t]+<|>>[ \t]+>)
      | (?P<punct><<<|>>>|::|->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|.)""",
    re.S | re.X)


@dataclass(frozen=True)
class Tok:
    kind: str
    text: str
    start: int
    end: int


def tokens(text: str) -> list[Tok]:
    """Significant tokens of C/C++/CUDA text: no whitespace, comments or preprocessor
    lines (a `#` first on its line runs to the end of the line, with continuations)."""
    out: list[Tok] = []
    pos, n = 0, len(text)
    line_start = True
    in_launch = False           # nvcc's spaced `k << < g, b >> > (a)`: one `<<<`, `>>>`
    while pos < n:
        m = _TOKEN.match(text, pos)
        kind = m.lastgroup
        value = m.group(0)
        if kind == "punct" and value == "#" and line_start:
            pos = _directive_end(text, pos)
            continue
        end = m.end()
        if kind == "spaced":
            if value.startswith("<") or in_launch:
                kind, value = "punct", value[0] * 3
            else:                   # `vector<vector<int>> >`: `>>`, then `>`
                kind, value, end = "punct", ">>", pos + 2
        if kind == "punct" and value in ("<<<", ">>>"):
            in_launch = value == "<<<"
        if kind == "ws":
            if "\n" in value:
                line_start = True
        elif kind != "comment":
            out.append(Tok(kind, value, pos, end))
            line_start = False
        pos = end
    return out


def _directive_end(text: str, pos: int) -> int:
    """End of the preprocessor line that runs on from `pos` (backslash continuations
    included), before its newline."""
    end = pos
    while True:
        nl = text.find("\n", end)
        if nl < 0:
            return len(text)
        if text[nl - 1] == "\\" or text[nl - 2:nl] == "\\\r":
            end = nl + 1
            continue
        return nl


_OPEN = {"(": ")", "[": "]", "{": "}"}


def _match(toks: list[Tok], k: int) -> int:
    """Index of the bracket closing the one at toks[k]."""
    depth = 0
    for j in range(k, len(toks)):
        t = toks[j].text
        if t in _OPEN:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced '{toks[k].text}' at offset {toks[k].start}")


def _split_top(toks: list[Tok], lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi) split at commas outside brackets, as (start, end) token ranges."""
    parts, depth, first = [], 0, lo
    for j in range(lo, hi):
        t = toks[j].text
        if t in _OPEN:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
        elif t == "," and depth == 0:
            parts.append((first, j))
            first = j + 1
    if first < hi or parts:
        parts.append((first, hi))
    return parts


@dataclass
class LaunchSite:
    kernel: str            # the kernel's name (last identifier of the callee)
    callee: str            # the callee's text (`k`, `ns::k<float>`)
    config: list[str]      # grid, block[, shared[, stream]]
    args: list[str]
    start: int             # offsets of the whole `callee<<<...>>>(...)` in the text
    end: int


def find_launches(text: str, toks: list[Tok] | None = None) -> list[LaunchSite]:
    toks = tokens(text) if toks is None else toks
    sites = []
    for k, t in enumerate(toks):
        if t.text != "<<<":
            continue
        # the callee: identifier (:: identifier)* [<template arguments>]
        j = k - 1
        if j >= 0 and toks[j].text == ">":
            depth = 0
            while j >= 0:
                if toks[j].text == ">":
                    depth += 1
                elif toks[j].text == ">>":
                    depth += 2
                elif toks[j].text == "<":
                    depth -= 1
                if depth == 0:
                    break
                j -= 1
            j -= 1
        if j < 0 or toks[j].kind != "id":
            raise ValueError(f"a launch at offset {t.start} has no kernel name before '<<<'")
        name = toks[j].text
        while j >= 2 and toks[j - 1].text == "::" and toks[j - 2].kind == "id":
            j -= 2
        if j >= 1 and toks[j - 1].text == "::":
            j -= 1
        first = j
        # the configuration, up to the matching >>>
        depth, e = 0, k + 1
        while e < len(toks):
            x = toks[e].text
            if x in _OPEN:
                depth += 1
            elif x in (")", "]", "}"):
                depth -= 1
            elif x == ">>>" and depth == 0:
                break
            e += 1
        if e >= len(toks) or e + 1 >= len(toks) or toks[e + 1].text != "(":
            raise ValueError(f"a launch at offset {t.start} has no '>>>(' ")
        close = _match(toks, e + 1)
        config = [text[toks[a].start:toks[b - 1].end] for a, b in _split_top(toks, k + 1, e)]
        args = [text[toks[a].start:toks[b - 1].end] for a, b in _split_top(toks, e + 2, close)
                if b > a]
        sites.append(LaunchSite(name, text[toks[first].start:toks[k - 1].end], config, args,
                                toks[first].start, toks[close].end))
    return sites


def function_bodies(text: str, toks: list[Tok] | None = None) -> dict[str, list[str]]:
    """Name -> tokens of the body, for every function definition at namespace scope (the
    last definition of a name wins, overloads are merged)."""
    toks = tokens(text) if toks is None else toks
    out: dict[str, list[str]] = {}
    k = 0
    while k < len(toks):
        t = toks[k]
        if t.text == "{":
            end = _match(toks, k)
            # a function body follows `name(...)` [qualifiers]
            j = k - 1
            while j >= 0 and toks[j].kind == "id" and toks[j].text in (
                    "const", "noexcept", "override", "final", "volatile"):
                j -= 1
            if j >= 0 and toks[j].text == ")":
                depth = 0
                while j >= 0:
                    if toks[j].text == ")":
                        depth += 1
                    elif toks[j].text == "(":
                        depth -= 1
                        if depth == 0:
                            break
                    j -= 1
                if j >= 1 and toks[j - 1].kind == "id":
                    out.setdefault(toks[j - 1].text, []).extend(
                        x.text for x in toks[k + 1:end])
                    k = end + 1
                    continue
            k += 1          # a namespace, class or initializer: look inside
            continue
        k += 1
    return out


def synchronising_kernels(text: str, toks: list[Tok] | None = None) -> set[str]:
    """Names of the functions that use a barrier or warp intrinsic, directly or through a
    function they call."""
    bodies = function_bodies(text, toks)
    sync = {name for name, body in bodies.items() if any(SYNC_WORDS.match(w) for w in body)}
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name not in sync and sync.intersection(body):
                sync.add(name)
                changed = True
    return sync


_PARENTHESISED = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"      # three levels deep
_EXTERN_SHARED = re.compile(rf"\bextern\s+__shared__\s+((?:[^;\[\]{{}}()]|{_PARENTHESISED})*?)"
                            r"\b(\w+)\s*\[[^\[\];]*\]\s*;")
_ALIGNMENT = re.compile(r"__align__\s*\([^()]*\)|__attribute__\s*\(\([^()]*(?:\([^()]*\))?\)\)")


def dynamic_shared_for_cpu(text: str) -> str:
    """Each `extern __shared__ T name[];` (a block's dynamic shared memory) as a pointer
    `T *const name` to the CPU runtimes' one buffer (cuda_types.h's pc_dynamic_shared,
    aligned): every such array of a kernel starts at the same address, as on the
    device. (With `#define __shared__ static`, `extern static` would not compile.)"""
    def pointer(m: re.Match) -> str:
        element = " ".join(_ALIGNMENT.sub(" ", m.group(1)).split())
        return f"{element} *const {m.group(2)} = ({element} *)pc_dynamic_shared;"
    return _EXTERN_SHARED.sub(pointer, text)


def rewrite_for_cpu(text: str) -> str:
    """The program with each launch rewritten into a call of the emulated launcher,
    launches written in the bodies of `#define`s included, and dynamic shared memory
    made the runtime's buffer (dynamic_shared_for_cpu)."""
    text = dynamic_shared_for_cpu(text)
    toks = tokens(text)
    sites = find_launches(text, toks)
    sync = synchronising_kernels(text, toks)
    out, pos = [], 0
    for s in sites:
        shared, stream = _shared_and_stream(s)
        captures = ", ".join(f"pc_a{i} = ({a})" for i, a in enumerate(s.args))
        call_args = ", ".join(f"pc_a{i}" for i in range(len(s.args)))
        out.append(text[pos:s.start])
        out.append(f"({stream}pc_launch({'true' if s.kernel in sync else 'false'}, "
                   f"\"{s.kernel}\", dim3({s.config[0]}), dim3({s.config[1]}), "
                   f"(size_t)({shared}), [{captures}]() mutable {{ {s.callee}({call_args}); }}))")
        pos = s.end
    out.append(text[pos:])
    return _rewrite_macro_launches("".join(out), sync)


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w+(?:\(([^)]*)\))?", re.M)


def _rewrite_macro_launches(text: str, sync: set[str]) -> str:
    """Launches in the bodies of `#define`s (`#define LAUNCH(k, g, b, ...) k<<<g,
    b>>>(__VA_ARGS__)`), rewritten into pc_launch_args calls (the arguments may be
    __VA_ARGS__, so they are passed on, not captured one by one). A kernel named by a
    macro parameter is run as a synchronising one (the safe choice) and named by
    stringification. The kernel is called through a generic lambda, so that a kernel
    template's arguments are deduced from the launch's arguments, as nvcc does."""
    out, pos = [], 0
    for m in _DEFINE.finditer(text):
        end = _directive_end(text, m.end())
        body = text[m.end():end]
        if "<<<" not in body:
            continue
        parameters = {p.strip().rstrip(".").strip() for p in (m.group(1) or "").split(",")}
        parameters = {p or "__VA_ARGS__" for p in parameters}
        try:
            sites = find_launches(body)
        except ValueError:          # `<<<g, b>>>` alone (`k KERNEL_ARGS(g, b)(a)`): kept
            continue
        pieces, at = [], 0
        for s in sites:
            shared, stream = _shared_and_stream(s)
            by_parameter = s.kernel in parameters
            pieces.append(body[at:s.start])
            pieces.append(
                f"({stream}pc_launch_args({'true' if by_parameter or s.kernel in sync else 'false'}"
                f", {'#' + s.kernel if by_parameter else chr(34) + s.kernel + chr(34)}, "
                f"dim3({s.config[0]}), dim3({s.config[1]}), (size_t)({shared}), "
                f"[](auto... pc_a) {{ {s.callee}(pc_a...); }}"
                + "".join(f", {a}" for a in s.args) + "))")
            at = s.end
        pieces.append(body[at:])
        out.append(text[pos:m.end()])
        out.append("".join(pieces))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _shared_and_stream(s: LaunchSite) -> tuple[str, str]:
    """The launch's shared-memory bytes ("0" when not given) and its stream, evaluated
    for its effects (a prefix, "" when not given)."""
    if len(s.config) < 2 or len(s.config) > 4:
        raise ValueError(f"launch of {s.kernel}: {len(s.config)} configuration values")
    shared = s.config[2] if len(s.config) > 2 else "0"
    stream = f"(void)({s.config[3]}), " if len(s.config) > 3 else ""
    return shared, stream


# ------------------------------------------------------------------- building and running

@dataclass
class RunResult:
    status: int            # exit status (negative: killed by that signal; None: timeout)
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def failure(self) -> str | None:
        """None for a clean run, else a short class: timeout, a runtime class
        (EXIT_STATUSES), crash (a signal) or exit-N."""
        if self.timed_out:
            return "timeout"
        if self.status == 0:
            return None
        if self.status in EXIT_STATUSES:
            return EXIT_STATUSES[self.status]
        if self.status < 0:
            return f"crash-signal-{-self.status}"
        return f"exit-{self.status}"


class CpuProgramRunner:
    """Compiles and runs whole programs; the runtime object is built once into `cache`
    (a directory shared by the processes of one run, keyed by the runtime's hash)."""

    def __init__(self, cache: str | None = None, cxx: str | None = None,
                 flags: tuple[str, ...] = CXXFLAGS):
        self.cxx = cxx or os.environ.get("CXX", "g++")
        self.flags = tuple(flags)
        # gold links a program in a third of the time of the default linker
        self.link_flags = ("-fuse-ld=gold",) if shutil.which("ld.gold") else ()
        files = resources.files("polycoal.templates")
        self.header = (files / HEADER).read_text()
        self.types = (files / TYPES).read_text()
        self.runtime = (files / RUNTIME).read_text()
        key = hashlib.sha256("\0".join((self.header, self.types, self.runtime, self.cxx) +
                                       self.flags + STUB_HEADERS +
                                       tuple(STUB_TEXTS.values()))
                             .encode()).hexdigest()[:16]
        base = cache or os.path.join(tempfile.gettempdir(), "polycoal-cpu-program")
        self.directory = os.path.join(base, key)
        self.include = os.path.join(self.directory, "include")
        self.object = os.path.join(self.directory, "cpu_program_rt.o")
        self._prepare()

    def _prepare(self) -> None:
        if os.path.exists(self.object):
            return
        os.makedirs(self.include, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=self.directory)
        try:
            for name, text in ((HEADER, self.header), (TYPES, self.types)):
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            for stub in STUB_HEADERS:
                os.makedirs(os.path.dirname(os.path.join(tmp, stub)), exist_ok=True)
                os.makedirs(os.path.dirname(os.path.join(self.include, stub)), exist_ok=True)
                with open(os.path.join(tmp, stub), "w") as f:
                    f.write(STUB_TEXTS.get(stub, "#pragma once\n"))
            with open(os.path.join(tmp, RUNTIME), "w") as f:
                f.write(self.runtime)
            obj = os.path.join(tmp, "rt.o")
            build = subprocess.run([self.cxx, *self.flags, "-c", os.path.join(tmp, RUNTIME),
                                    "-o", obj], capture_output=True, text=True)
            if build.returncode != 0:
                raise RuntimeError(f"the CPU runtime does not compile:\n{build.stderr}")
            # a precompiled header: a third of the time of a program's compilation
            pch = subprocess.run([self.cxx, *self.flags, "-x", "c++-header",
                                  os.path.join(tmp, HEADER), "-o",
                                  os.path.join(tmp, HEADER + ".gch")],
                                 capture_output=True, text=True)
            names = (HEADER, TYPES, *STUB_HEADERS) + ((HEADER + ".gch",) if pch.returncode == 0
                                                else ())
            for name in names:
                os.replace(os.path.join(tmp, name), os.path.join(self.include, name))
            os.replace(obj, self.object)       # last: its presence means ready
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def compile(self, source: str, directory: str, name: str = "program",
                include_dirs: tuple[str, ...] = (), forced_includes: tuple[str, ...] = ()
                ) -> tuple[str | None, str]:
        """(executable, "") or (None, the compiler's messages). `source` is the CUDA
        program as written; its launches are rewritten here; `include_dirs`: where its
        quoted includes are (the directory of the file it was read from);
        `forced_includes`: the files its build reads first (`-include`), read after the
        runtime's header."""
        try:
            text = rewrite_for_cpu(source)
        except ValueError as e:
            return None, f"launch rewriting: {e}"
        src = os.path.join(directory, name + ".cpp")
        with open(src, "w") as f:
            f.write(text)
        exe = os.path.join(directory, name)
        build = subprocess.run([self.cxx, *self.flags, "-I", self.include,
                                *(f"-I{d}" for d in include_dirs),
                                "-isystem", toolkit.read_directory(), "-include",
                                os.path.join(self.include, HEADER),
                                *(a for f in forced_includes for a in ("-include", f)),
                                src, self.object,
                                *self.link_flags, "-o", exe], capture_output=True, text=True)
        if build.returncode != 0:
            return None, build.stderr
        return exe, ""

    def syntax_errors(self, source: str, directory: str) -> str | None:
        """None when the program (launches rewritten) is valid C++ for g++, else its
        messages: a quick check, no code generated."""
        try:
            text = rewrite_for_cpu(source)
        except ValueError as e:
            return f"launch rewriting: {e}"
        src = os.path.join(directory, "syntax.cpp")
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run([self.cxx, *self.flags, "-fsyntax-only", "-I", self.include,
                            "-isystem", toolkit.read_directory(),
                            "-include", os.path.join(self.include, HEADER), src],
                           capture_output=True, text=True)
        return None if r.returncode == 0 else r.stderr

    @staticmethod
    def run(exe: str, timeout: float = 60.0, reverse: bool = False,
            argv: tuple[str, ...] = ()) -> RunResult:
        """Run the program (with the command-line arguments `argv`); with `reverse`,
        blocks and threads in the reverse order (a race shows as a different result)."""
        env = dict(os.environ, POLYCOAL_CPU_ORDER="reverse" if reverse else "forward")
        try:
            r = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=timeout,
                               errors="replace", env=env)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else ""
            return RunResult(-9, out, "timed out", True)
        return RunResult(r.returncode, r.stdout, r.stderr)

    def compile_and_run(self, source: str, timeout: float = 60.0,
                        include_dirs: tuple[str, ...] = (), argv: tuple[str, ...] = (),
                        forced_includes: tuple[str, ...] = ()
                        ) -> tuple[RunResult | None, str]:
        with tempfile.TemporaryDirectory(prefix="polycoal-prog-") as tmp:
            exe, error = self.compile(source, tmp, include_dirs=include_dirs,
                                      forced_includes=forced_includes)
            if exe is None:
                return None, error
            return self.run(exe, timeout, argv=argv), ""
