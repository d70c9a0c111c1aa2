"""What the `__device__` helpers a kernel calls do that the kernel's own text does not
show: read thread indices, exchange values between lanes, synchronise the block. A
helper the lowering does not inline stays a call; the kernel then depends on these as
if it did them itself (a restructured geometry changes what `threadIdx.x` means inside
the helper too)."""

from __future__ import annotations

import functools

from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import matching, tokenize
from polycoal.frontend.program import Program


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(t.text for t in tokenize(text) if t.kind == "id")


@functools.lru_cache(maxsize=4096)
def body(text: str, name: str) -> str:
    """The body of the definition `text` of function `name` (what it calls)."""
    tokens = tokenize(text)
    for k, t in enumerate(tokens[:-1]):
        if t.text == name and tokens[k + 1].text == "(":
            close = matching(tokens, k + 1)
            brace = next((j for j in range(close, len(tokens)) if tokens[j].text == "{"),
                         None)
            if brace is not None:
                return text[tokens[brace].start:]
    return text


def helpers_called(program: Program, text: str) -> list[str]:
    """The program's device functions whose names `text` uses."""
    words = _words(text)
    return [n for n in program.device_functions if n in words]


def first_use(program: Program, text: str, words: frozenset[str] | set[str]
              ) -> tuple[str, str] | None:
    """A helper `text` calls, directly or through helpers, whose body uses one of
    `words`, with that word; None when none does."""
    helpers = program.device_functions
    reached: list[str] = []
    todo = helpers_called(program, text)
    while todo:
        n = todo.pop()
        if n in reached:
            continue
        reached.append(n)
        inside = body(helpers[n].expanded, n)
        used = sorted(_words(inside) & set(words))
        if used:
            return n, used[0]
        todo += helpers_called(program, inside)
    return None


def warp_words() -> frozenset[str]:
    d = cuda_dialect()
    return d.warp_functions | {"warpSize"}


def geometry_words() -> frozenset[str]:
    """Thread indices and block shapes, and the block's barriers."""
    d = cuda_dialect()
    return frozenset({d.thread_index, d.block_index, d.block_dim, d.grid_dim}) | \
        d.barrier_functions
