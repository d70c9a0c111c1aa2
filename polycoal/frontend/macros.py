"""Launches written inside function-like macros (`LAUNCH(k, g, b, ...)`), expanded once.

The preprocessor's output shows such a launch, and its geometry, but the input's text
has only the macro's invocation: no new geometry could be put there. The invocation is
replaced by the macro's body with its parameters replaced by the arguments as written
(one level of expansion: what is left of macros in it is expanded by the preprocessor
as before), which the preprocessor reads as the same tokens. A body that stringifies or
pastes (`#`, `##`) is not expanded: the text would not mean the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from polycoal.frontend.lexer import Token, matching, tokenize

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)(.*)$")


@dataclass(frozen=True)
class Macro:
    name: str
    parameters: tuple[str, ...]
    variadic: bool
    body: str


def function_macros(text: str) -> dict[str, Macro]:
    """The function-like macros `text` defines (the last definition of each name)."""
    macros: dict[str, Macro] = {}
    logical = re.sub(r"\\\r?\n", " ", text)
    for line in logical.splitlines():
        m = _DEFINE.match(line)
        if not m:
            continue
        names = [p.strip() for p in m.group(2).split(",") if p.strip()]
        variadic = bool(names) and names[-1].endswith("...")
        if variadic:
            names[-1] = names[-1][:-3].strip() or "__VA_ARGS__"
        body = re.sub(r"/\*.*?\*/|//.*$", " ", m.group(3)).strip()
        macros[m.group(1)] = Macro(m.group(1), tuple(names), variadic, body)
    return macros


def expanded_launch(text: str, tokens: list[Token], kernel: str, line: int,
                    macros: dict[str, Macro]) -> tuple[int, int, str] | None:
    """([start, end) of the invocation on `line` whose expansion launches `kernel`, the
    expansion), or None when no such macro is expanded as written."""
    for k, t in enumerate(tokens):
        macro = macros.get(t.text)
        if t.line != line or macro is None or "<<<" not in macro.body or \
                k + 1 >= len(tokens) or tokens[k + 1].text != "(":
            continue
        close = matching(tokens, k + 1)
        expansion = _expand(text, tokens[k + 2:close], macro)
        if expansion is not None and re.search(
                rf"\b{re.escape(kernel)}\s*(?:<[^<>;]*>\s*)?<<<", expansion):
            return t.start, tokens[close].end, expansion
    return None


def _expand(text: str, arguments: list[Token], macro: Macro) -> str | None:
    """The macro's body with its parameters replaced by the arguments' text."""
    if "#" in macro.body or "__VA_OPT__" in macro.body:
        return None
    parts = _macro_arguments(arguments)
    fixed = len(macro.parameters) - (1 if macro.variadic else 0)
    if len(parts) < fixed or (len(parts) > fixed and not macro.variadic):
        return None
    values = {}
    for name, part in zip(macro.parameters[:fixed], parts):
        values[name] = text[part[0].start:part[-1].end] if part else ""
    if macro.variadic:
        rest = [p for p in parts[fixed:] if p]
        values[macro.parameters[-1]] = (text[rest[0][0].start:rest[-1][-1].end]
                                        if rest else "")
    out, pos = [], 0
    for token in tokenize(macro.body):
        if token.kind == "id" and token.text in values:
            out.append(macro.body[pos:token.start])
            out.append(values[token.text])
            pos = token.end
    out.append(macro.body[pos:])
    return "".join(out)


def _macro_arguments(tokens: list[Token]) -> list[list[Token]]:
    """An invocation's arguments: split at commas outside parentheses (only parentheses
    group a macro's arguments: `LAUNCH(k, {a, b})` has three)."""
    if not tokens:
        return []
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        depth += (t.text == "(") - (t.text == ")")
        if t.text == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts
