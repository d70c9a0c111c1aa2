"""Waits for the device between launches in host loops (issue 34: launch overhead).

A naive port waits for the device after every launch of a host loop:

    for (t = 0; t < tmax; t++) {
      step1<<<grid, block>>>(...);
      cudaDeviceSynchronize();
      step2<<<grid, block>>>(...);
      cudaDeviceSynchronize();
    }

Each wait costs the loop a round trip between the host and the device: on the H200 a
short launch followed by a wait takes 10.6 us, launches made one after another 3.7-4.4 us
each (tools/explore_launch_forms.py; PolyBench/GPU's LU, Jacobi and ADI spend more than
half their GPU time so). The launches of one stream run in the order they are made,
each after the one before it has finished: the waits order nothing on the device. They
only hold the host back, and what the host does between them can tell only if it
observes the device. So the waits inside a loop are dropped, and one wait is made after
the loop (the device idle where it was idle after the loop's last trip), when nothing
in the loop can observe the device or be observed by it:

- every statement of the loop (its nested loops, blocks and if/else included) is a
  launch, a wait, or host code that reads and writes host variables by name (and their
  fields) and calls only functions of numbers (dim3, min, max, ceil, ...): no subscript,
  dereference or `->` (which could read memory a kernel writes: mapped, managed or,
  where the system lets kernels reach it, any host memory), no other call (a copy, an
  event, a print, an allocation), no string, no return, goto, throw or switch (which
  would leave the loop past the wait after it), no preprocessor line;
- every launch goes to the default stream, the waits are bare statements whose result
  is not used (cudaDeviceSynchronize(), cudaThreadSynchronize(),
  cudaStreamSynchronize(0)), and the program makes no stream of its own, runs no host
  threads and uses no managed or mapped memory: a device-wide wait in the loop would
  also order the loop's launches against other streams' or threads' work, and managed
  or mapped memory is memory a kernel writes which the host could read by name (a
  __managed__ variable, a reference).

Then the device runs the same kernels on the same data in the same order, the host
computes the same launches, and after the loop the device is idle, as before: only
the host's waiting moves. Loops that launch and wait but do something else are kept,
with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from polycoal.frontend.lexer import Token, matching, split_top_level

WAITS = frozenset(("cudaDeviceSynchronize", "cudaThreadSynchronize"))
STREAM_WAIT = "cudaStreamSynchronize"
DEFAULT_STREAM = frozenset(("0", "NULL", "nullptr", "0L", "0u"))
# functions of numbers the host code of a launch loop may call (grid sizes)
PURE_CALLS = frozenset((
    "dim3", "min", "max", "fmin", "fmax", "fminf", "fmaxf", "ceil", "ceilf", "floor",
    "floorf", "sqrt", "sqrtf", "abs", "fabs", "fabsf", "sizeof", "static_cast", "int",
    "unsigned", "long", "float", "double", "size_t", "char", "short", "bool",
    "decltype", "alignof"))
# what in a program makes a device-wide wait order more than the loop's own launches
_PROGRAM_OBSTACLES = (
    (re.compile(r"\bcudaStreamCreate\w*\b|\bcudaStreamBeginCapture\b"), "makes streams of its own"),
    (re.compile(r"#\s*pragma\s+omp\b|\bpthread_create\b|\bstd\s*::\s*(?:j?thread|async)\b"),
     "runs host threads"),
    (re.compile(r"\b__managed__\b|\bcudaMallocManaged\b"), "uses managed memory"),
    # host memory a kernel may write, which the host could read by name (a reference,
    # a registered variable)
    (re.compile(r"\bcudaHost(?:Register|Alloc|GetDevicePointer)\b|\bcudaMallocHost\b"),
     "maps host memory for its kernels"),
)
_LEAVES = frozenset(("return", "goto", "throw", "switch", "case", "co_return", "longjmp",
                     "exit", "asm", "__asm__", "try"))


@dataclass(frozen=True)
class Wait:
    start: int          # the wait statement's characters [start, end)
    end: int
    in_block: bool      # a statement of a { } block (else the body of a loop or an if)


@dataclass(frozen=True)
class LaunchLoop:
    """A host loop whose waits between launches go (the module's doc)."""

    start: int          # the loop's characters [start, end)
    end: int
    line: int
    waits: tuple[Wait, ...]
    launches: int       # launch statements in the loop's text
    spelling: str       # the wait the loop made first, made once after it
    in_block: bool      # the loop is a statement of a { } block
    key: tuple = ()     # its header and which loop of that header it is (loop_lines)


@dataclass(frozen=True)
class KeptLoop:
    line: int
    why: str
    key: tuple = ()


class _Kept(Exception):
    pass


@dataclass
class _Walk:
    waits: list
    launches: int = 0
    spelling: str = ""


def launch_loops(text: str, tokens: list[Token]) -> tuple[list[LaunchLoop], list[KeptLoop]]:
    """The outermost host loops whose waits go, and the loops that launch and wait but
    keep their waits, with why."""
    obstacle = next((why for pattern, why in _PROGRAM_OBSTACLES if pattern.search(text)), None)
    device = _device_ranges(tokens)
    if obstacle is None and any(tokens[k].text == "printf" for a, b in device
                                for k in range(a, b)):
        # a kernel's prints wait in a buffer of fixed size that each wait empties
        obstacle = "prints from its kernels"
    found, kept = [], []
    keys = _keys(tokens, device)
    for k, t in enumerate(tokens):
        if k not in keys:
            continue
        walk = _Walk([])
        try:
            end = _statement(tokens, k, walk, in_block=False)
        except _Kept as why:
            span = _launches_and_waits(tokens, k)
            if span:
                kept.append((span, KeptLoop(t.line, str(why), keys[k])))
            continue
        except (ValueError, IndexError, KeyError):
            continue            # brackets unbalanced in the text as written
        if not walk.launches or not walk.waits:
            continue
        span = (t.start, tokens[end - 1].end)
        if obstacle:
            kept.append((span, KeptLoop(t.line, f"the program {obstacle}", keys[k])))
        elif re.search(r"^[ \t]*#", text[span[0]:span[1]], re.M):
            kept.append((span, KeptLoop(t.line, "a preprocessor line is inside it", keys[k])))
        else:
            found.append(LaunchLoop(span[0], span[1], t.line, tuple(walk.waits),
                                    walk.launches, walk.spelling,
                                    k > 0 and tokens[k - 1].text in (";", "{", "}", ":"),
                                    keys[k]))
    outer = [l for l in found if not any(o is not l and o.start <= l.start and l.end <= o.end
                                         for o in found)]
    # a loop inside a kept loop is kept for the same reason or one of its own: the
    # outermost says why
    return outer, [why for (a, b), why in kept
                   if not any((c, d) != (a, b) and c <= a and b <= d for (c, d), _ in kept)]


def loop_lines(tokens: list[Token]) -> dict[tuple, int]:
    """The line of each host loop by its key: its header's tokens and how many loops of
    that header come before it. A transformed program keeps its host loops as they were
    (polycoal rewrites kernels and launch statements), so a loop found in the output is
    the input's loop of the same key."""
    return {key: tokens[k].line for k, key in _keys(tokens, _device_ranges(tokens)).items()}


def _keys(tokens: list[Token], device: list[tuple[int, int]]) -> dict[int, tuple]:
    """Token index -> key (loop_lines) of each loop keyword of the host code."""
    out, seen = {}, {}
    for k, t in enumerate(tokens):
        if t.text not in ("for", "while", "do") or any(a <= k < b for a, b in device):
            continue
        try:
            last = matching(tokens, k + 1) if t.text != "do" else k
        except (ValueError, IndexError, KeyError):
            last = k
        header = tuple(x.text for x in tokens[k:last + 1])
        seen[header] = seen.get(header, -1) + 1
        out[k] = (header, seen[header])
    return out


def _launches_and_waits(tokens: list[Token], k: int) -> tuple[int, int] | None:
    """The characters of the loop at tokens[k] where it holds a launch and a wait (worth
    saying why it keeps its waits), else None."""
    try:
        end = _statement(tokens, k, None, in_block=False)
    except (ValueError, IndexError, KeyError):
        return None
    texts = [t.text for t in tokens[k:end]]
    if "<<<" in texts and any(x in WAITS or x == STREAM_WAIT for x in texts):
        return tokens[k].start, tokens[end - 1].end
    return None


def _device_ranges(tokens: list[Token]) -> list[tuple[int, int]]:
    """Token ranges of the bodies of __global__ and __device__ functions."""
    out, k = [], 0
    while k < len(tokens):
        if tokens[k].text in ("__global__", "__device__"):
            j = k
            while j < len(tokens) and tokens[j].text not in ("{", ";"):
                j += 1
            if j < len(tokens) and tokens[j].text == "{":
                try:
                    end = matching(tokens, j)
                except ValueError:
                    return out
                out.append((j, end + 1))
                k = end + 1
                continue
        k += 1
    return out


def _statement(tokens: list[Token], k: int, walk: _Walk | None, in_block: bool) -> int:
    """One past the statement at tokens[k]; with `walk`, raises _Kept where it is not a
    launch, a wait or pure host code (the module's doc) and records its waits and
    launches."""
    t = tokens[k].text
    if t == "{":
        close = matching(tokens, k)
        j = k + 1
        while j < close:
            j = _statement(tokens, j, walk, in_block=True)
        return close + 1
    if t == ";":
        return k + 1
    if t in ("for", "while", "if"):
        if t == "if" and tokens[k + 1].text == "constexpr":
            k += 1                       # `if constexpr (...)`: a condition as any other
        close = matching(tokens, k + 1)
        if walk is not None:
            if t == "for" and ";" not in (x.text for x in tokens[k + 2:close]):
                raise _Kept("a range-based for reads a container")
            _pure(tokens[k + 2:close], f"its {t} header")
        j = _statement(tokens, close + 1, walk, in_block=False)
        if t == "if" and j < len(tokens) and tokens[j].text == "else":
            j = _statement(tokens, j + 1, walk, in_block=False)
        return j
    if t == "do":
        j = _statement(tokens, k + 1, walk, in_block=False)
        if tokens[j].text != "while":
            raise ValueError("do without while")
        close = matching(tokens, j + 1)
        if walk is not None:
            _pure(tokens[j + 2:close], "its while header")
        return close + 2
    if t in ("break", "continue"):
        return k + 2
    end = _simple_end(tokens, k)
    if walk is not None:
        _simple(tokens, k, end, walk, in_block)
    return end


def _simple_end(tokens: list[Token], k: int) -> int:
    """One past the `;` that ends the expression or declaration at tokens[k]."""
    depth, j = 0, k
    while j < len(tokens):
        x = tokens[j].text
        if x in ("(", "[", "{", "<<<"):
            depth += 1
        elif x in (")", "]", "}", ">>>"):
            depth -= 1
            if depth < 0:
                raise ValueError("statement runs out of its block")
        elif x == ";" and depth == 0:
            return j + 1
        j += 1
    raise ValueError("statement without ;")


def _simple(tokens: list[Token], k: int, end: int, walk: _Walk, in_block: bool) -> None:
    s = tokens[k:end]
    texts = [x.text for x in s]
    if len(texts) == 4 and texts[0] in WAITS and texts[1:] == ["(", ")", ";"] or \
            texts[0] == STREAM_WAIT and texts[1] == "(" and texts[-2:] == [")", ";"] and \
            "".join(texts[2:-2]) in DEFAULT_STREAM:
        walk.waits.append(Wait(s[0].start, s[-1].end, in_block))
        walk.spelling = walk.spelling or texts[0] + ("()" if texts[0] in WAITS else "(0)")
        return
    if "<<<" in texts:
        _launch(s, texts)
        walk.launches += 1
        return
    if len(texts) == 2 and s[0].kind == "id":
        # `CHECK_ERRORS;`: a macro, whatever it expands to
        raise _Kept(f"line {s[0].line} is a macro")
    _pure(s, f"line {s[0].line}")


def _launch(s: list[Token], texts: list[str]) -> None:
    """A launch statement `name<<<config>>>(arguments);` into the default stream."""
    open_, close = texts.index("<<<"), texts.index(">>>")
    name = texts[:open_]
    if s[0].kind != "id" or texts.count("<<<") != 1 or texts[close + 1] != "(" or \
            texts[-2:] != [")", ";"] or matching(s, close + 1) != len(s) - 2 or \
            any(x in ("(", ")", "=", ";") for x in name):
        raise _Kept(f"line {s[0].line} launches inside an expression")
    config = split_top_level(s[open_ + 1:close])
    if len(config) > 3 and "".join(x.text for x in config[3]) not in DEFAULT_STREAM:
        raise _Kept(f"line {s[0].line} launches into a stream of its own")
    _pure(s[open_ + 1:close], f"the launch at line {s[0].line}")
    _pure(s[close + 2:-2], f"the launch at line {s[0].line}")
    if "&" in texts[close + 2:-2]:
        # a host variable's address handed to the kernel (which could write it), or a
        # bitwise and, which a token alone does not tell apart
        raise _Kept(f"the launch at line {s[0].line} passes an address")


def _pure(s: list[Token], where: str) -> None:
    """Raises _Kept unless the tokens only read and write host variables by name and
    call functions of numbers (the module's doc)."""
    for n, t in enumerate(s):
        x = t.text
        before = s[n - 1] if n else None
        if t.kind == "str":
            raise _Kept(f"{where} holds a string")
        if x in ("[", "->", "new", "delete") or x in _LEAVES:
            raise _Kept(f"{where} uses `{x}`")
        if x == "*" and (before is None or not (before.kind in ("id", "num") or
                                                before.text in (")", "]")) or
                         before.text == ")" and _cast(s, n - 1)):
            raise _Kept(f"{where} dereferences a pointer")
        if x == "(" and before is not None and before.text == ")" and not _cast(s, n - 1):
            raise _Kept(f"{where} calls through an expression")
        if x == "(" and before is not None:
            name = before
            if before.text == ">":
                try:
                    opened = matching(s, n - 1)
                except ValueError:
                    raise _Kept(f"{where} calls a function") from None
                name = s[opened - 1] if opened else None
            declared = name is before and n >= 2 and s[n - 2].text in PURE_CALLS | {"auto"}
            if name is not None and name.kind == "id" and name.text not in PURE_CALLS \
                    and not declared:     # `dim3 grid(n / 256)`: a declaration
                raise _Kept(f"{where} calls {name.text}")


def _cast(s: list[Token], close: int) -> bool:
    """Whether the parenthesised group ending at s[close] is a cast (`(int)`, `(float *)`,
    `(const T *)`): names and stars only, not called (no name before it)."""
    try:
        opened = matching(s, close)
    except ValueError:
        return False
    inner = s[opened + 1:close]
    called = opened > 0 and s[opened - 1].kind == "id"
    return bool(inner) and not called and all(t.text in _TYPE_WORDS or t.text in ("*", "::")
                                              for t in inner)


# the words of a cast's type (a name of the program's own, `(DATA_TYPE)`, is not known to
# be one: `(name)(...)` is then read as a call)
_TYPE_WORDS = PURE_CALLS | frozenset((
    "const", "volatile", "signed", "unsigned", "long", "short", "auto", "void", "int8_t",
    "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "ptrdiff_t", "std"))
