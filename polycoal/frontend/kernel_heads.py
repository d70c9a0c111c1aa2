"""`__global__` functions declared or defined in a text, read from its tokens (the
units of a project: which kernels each defines or declares, and their heads), and the
record of a kernel's decision in one unit (project mode's report)."""

from __future__ import annotations

from dataclasses import dataclass

from polycoal.frontend.lexer import matching


@dataclass(frozen=True)
class KernelRecord:
    """A kernel's decision in one unit, as the report shows it."""

    name: str
    file: str
    line: int
    action: str
    code: str
    reason: str
    launches: tuple[str, ...] = ()      # file:line of its launches in other units

_SPECIFIERS = frozenset(("static", "inline", "extern", "__host__", "__device__",
                         "__forceinline__", "__noinline__", "__inline__"))
_ATTRIBUTES = frozenset(("__launch_bounds__", "__attribute__", "__declspec",
                         "__maxnreg__", "__cluster_dims__"))


def global_functions(tokens) -> list[tuple[int, int, str]]:
    """(index of the first specifier, of `__global__`, the name) of each `__global__`
    function declared or defined outside templates."""
    found = []
    for k, t in enumerate(tokens):
        if t.text != "__global__":
            continue
        first = k
        while first > 0 and (tokens[first - 1].text in _SPECIFIERS or
                             tokens[first - 1].kind == "str"):     # extern "C"
            first -= 1
        if first > 0 and tokens[first - 1].text in (">", ">>"):   # template <...>
            continue
        j = k + 1
        while j < len(tokens) and tokens[j].text not in ("(", ";", "{"):
            if tokens[j].text in _ATTRIBUTES and j + 1 < len(tokens) and \
                    tokens[j + 1].text == "(":
                j = matching(tokens, j + 1)
            j += 1
        if j < len(tokens) and tokens[j].text == "(" and tokens[j - 1].kind == "id":
            found.append((first, k, tokens[j - 1].text))
    return found


def global_heads(tokens, name: str) -> list[tuple[int, int, int, int]]:
    """Of each declaration or definition of the `__global__` function `name`: (index of
    its first specifier, of `__global__`, of its parameter list's `(`, of the `{` or `;`
    after its head)."""
    found = []
    for first, k, found_name in global_functions(tokens):
        if found_name != name:
            continue
        j = k + 1
        while j + 1 < len(tokens) and not (tokens[j].text == name and
                                           tokens[j + 1].text == "("):
            j += 1
        if j + 1 >= len(tokens):
            continue
        after = matching(tokens, j + 1) + 1
        while after < len(tokens) and tokens[after].text not in ("{", ";"):
            after += 1
        if after < len(tokens):
            found.append((first, k, j + 1, after))
    return found
