"""Find launch sites `k<<<grid, block[, shmem[, stream]]>>>(args);` and their geometry.

The block and grid are evaluated when they are compile-time constants: literals and
macros (expanded by the preprocessor), `dim3(X, Y)` in place, or a variable of the
enclosing host function defined before the launch (`dim3 block(X, Y);`,
`dim3 block = dim3(...)`, `int threads = 256;`, later `block.x = 64;`).

A geometry known only at run time (`(n + 255) / 256` with n read from argv, a host
loop's variable) can be evaluated later for given values of the kernel's arguments
(`geometry_for`): a launch argument that is a plain host variable has the value of the
kernel parameter it is passed to, at the launch and wherever the geometry read it, as
long as nothing in between assigns it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from polycoal.diagnostics import Location
from polycoal.frontend.cexpr import Value, evaluate
from polycoal.frontend.lexer import ASSIGNMENTS, Token, matching, split_top_level, tokenize
from polycoal.frontend.preprocess import PreprocessedSource
from polycoal.frontend.program import Kernel, Launch, Span

_TYPE_WORDS = {"int", "unsigned", "long", "short", "size_t", "const", "constexpr", "static",
               "uint", "uint32_t", "int32_t", "int64_t", "uint64_t", "auto", "dim3", "float",
               "double"}
_DIM3_CALL = re.compile(r"^\s*dim3\s*[({](.*)[)}]\s*$", re.S)
_AXES = ("x", "y", "z")
Dim3 = tuple[Value, Value, Value]


def _text(tokens: list[Token]) -> str:
    return " ".join(t.text for t in tokens)


_QUALIFIED = re.compile(r"(?:\b[A-Za-z_]\w*\s*)?(?:::\s*[A-Za-z_]\w*\s*)*::\s*([A-Za-z_]\w*)\b(?!\s*[(<:])")


class _Scope:
    """Definitions visible before a token position in one host function; `bound`: host
    variables whose value at token `at` (the launch) is given."""

    def __init__(self, tokens: list[Token], begin: int, bound: dict[str, Value] | None = None,
                 at: int = 0, constants: dict[str, int] | None = None):
        self.tokens = tokens
        self.begin = begin
        self.bound = bound or {}
        self.at = at
        self.constants = constants or {}      # file scope: seen when no local defines it

    def dim3(self, expression: str, before: int, depth: int = 0) -> Dim3 | None:
        m = _DIM3_CALL.match(expression)
        if m:
            parts = [p for p in _split_commas(m.group(1)) if p.strip()]
            if len(parts) == 1 and depth <= 12:     # dim3(X): X a dim3 or a scalar
                return self.dim3(parts[0], before, depth + 1)
            values = [self.scalar(p, before, depth + 1) for p in parts]
            if not 1 <= len(values) <= 3:
                return None
            return tuple(values + [1] * (3 - len(values)))   # type: ignore[return-value]
        name = expression.strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            found = self.definition(name, before, depth)
            if found is not None:
                return found
        value = self.scalar(expression, before, depth + 1)
        return None if value is None else (value, 1, 1)

    def scalar(self, expression: str, before: int, depth: int = 0) -> Value | None:
        if depth > 12:
            return None
        # a qualified name (`cfg::kThreads`, `::kBlock`, `Tile::kRows`) is a constant of
        # namespace or class scope: its value, when the program has one of that name
        expression = _QUALIFIED.sub(
            lambda m: str(self.constants[m.group(1)]) if m.group(1) in self.constants
            else m.group(0), expression)

        def resolve(name: str, member: str | None) -> Value | None:
            if member is not None and member not in _AXES:
                return self.field(name, member, before, depth + 1)
            d = self.definition(name, before, depth + 1)
            if d is None:
                return None
            if member is None and any(v is None for v in d):
                return None
            if member is None:
                return d[0] if d[1:] == (1, 1) else None
            return d[_AXES.index(member)] if member in _AXES else None
        return evaluate(expression, resolve)

    def definition(self, name: str, before: int, depth: int) -> Dim3 | None:
        """Value of variable `name` just before token `before`, as a dim3."""
        if depth > 12:
            return None
        if name in self.bound and self._untouched(name, before):
            return (self.bound[name], 1, 1)
        tokens = self.tokens
        members: dict[int, Value | None] = {}
        k = before - 1
        while k >= self.begin:
            t = tokens[k]
            if t.text != name or t.kind != "id" or (k and tokens[k - 1].text in (".", "->")):
                k -= 1
                continue
            nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
            prev = tokens[k - 1].text if k else ""
            if nxt in ("++", "--", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=", "&=",
                       "^=") or prev in ("++", "--", "&"):
                return None     # changed (a loop counter, say) or its address taken
            if nxt in ("=", ".") and self._conditional(k, before):
                return None     # set on some paths only: its value here is not known
            if nxt == "." and k + 3 < len(tokens) and tokens[k + 2].text in _AXES \
                    and tokens[k + 3].text == "=":
                axis = _AXES.index(tokens[k + 2].text)
                if axis not in members:
                    members[axis] = self.scalar(_text(self._until_semicolon(k + 4)), k, depth + 1)
            elif nxt == "=" and (k + 2 >= len(tokens) or tokens[k + 2].text != "="):
                value = self.dim3(_text(self._until_semicolon(k + 2)), k, depth + 1)
                return self._with_members(value, members)
            elif nxt in ("(", "{") and k and (tokens[k - 1].text in _TYPE_WORDS
                                              or tokens[k - 1].text == ","):
                close = matching(tokens, k + 1)
                inner = _text(tokens[k + 2:close])
                value = self.dim3(f"dim3({inner})", k, depth + 1)
                return self._with_members(value, members)
            elif nxt in (";", ",") and k and tokens[k - 1].text in _TYPE_WORDS:
                return None     # declared without a value
            k -= 1
        if name in self.constants and not members:
            return (self.constants[name], 1, 1)
        return None

    def field(self, name: str, member: str, before: int, depth: int) -> Value | None:
        """Value of a struct's field `name.member` just before token `before`: the last
        `name.member = e;` of the function, when nothing after it changes the field or
        takes its address (or the whole struct's)."""
        if depth > 12:
            return None
        tokens = self.tokens
        for k in range(before - 1, self.begin - 1, -1):
            t = tokens[k]
            if t.text != name or t.kind != "id" or (k and tokens[k - 1].text in (".", "->")):
                continue
            prev = tokens[k - 1].text if k else ""
            ours = k + 2 < len(tokens) and tokens[k + 1].text in (".", "->") and \
                tokens[k + 2].text == member
            if prev == "&" and (ours or k + 1 >= len(tokens) or tokens[k + 1].text not in
                                (".", "->")):
                return None     # its address taken
            if not ours:
                continue
            after = tokens[k + 3].text if k + 3 < len(tokens) else ""
            if after == "=" and (k + 4 >= len(tokens) or tokens[k + 4].text != "="):
                return self.scalar(_text(self._until_semicolon(k + 4)), k, depth + 1)
            if after in ASSIGNMENTS or prev in ("++", "--"):
                return None
        return None

    def _untouched(self, name: str, before: int) -> bool:
        """Whether variable `name` keeps one value from token `before` to the launch: no
        assignment, increment, address or declaration of it in between."""
        tokens = self.tokens
        for k in range(before, self.at):
            t = tokens[k]
            if t.text != name or t.kind != "id" or (k and tokens[k - 1].text in (".", "->")):
                continue
            nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
            prev = tokens[k - 1].text if k else ""
            if nxt in ASSIGNMENTS or prev in ("++", "--", "&") or prev in _TYPE_WORDS or \
                    (prev == "," and not self._in_parentheses(k)):
                return False          # `int a, name;` declares it again; `f(a, name)` not
        return True

    def _in_parentheses(self, k: int) -> bool:
        """Whether token k is inside parentheses opened in its statement."""
        depth = 0
        for j in range(k - 1, self.begin - 1, -1):
            text = self.tokens[j].text
            if text in (";", "{", "}"):
                break
            depth += (text == "(") - (text == ")")
            if depth > 0:
                return True
        return False

    def _conditional(self, k: int, before: int) -> bool:
        """Whether the statement at token k runs on some paths to token `before` only:
        inside a block closed in between (an if's, a loop's), or the body of an unbraced
        `if (c)`, `else`, loop or `do`."""
        depth = 0
        for t in self.tokens[k:before]:
            depth += (t.text == "{") - (t.text == "}")
            if depth < 0:
                return True
        j = k - 1
        while j >= 0 and self.tokens[j].text not in (";", "{", "}", ")", "else", "do", ":"):
            j -= 1
        return j >= 0 and self.tokens[j].text in (")", "else", "do") and \
            not (self.tokens[j].text == ")" and self._in_parentheses(j + 1))

    def _until_semicolon(self, k: int) -> list[Token]:
        run = []
        depth = 0
        while k < len(self.tokens):
            t = self.tokens[k]
            if t.text in "([{":
                depth += 1
            elif t.text in ")]}":
                depth -= 1
            if depth < 0 or (depth == 0 and t.text in (";", ",")):
                break
            run.append(t)
            k += 1
        return run

    @staticmethod
    def _with_members(value: Dim3 | None, members: dict[int, Value | None]) -> Dim3 | None:
        if value is None:
            return None
        out = list(value)
        for axis, v in members.items():
            if v is None:
                return None
            out[axis] = v
        return tuple(out)   # type: ignore[return-value]


def _split_commas(text: str) -> list[str]:
    return [_text(part) for part in split_top_level(tokenize(text))]


def _enclosing_function(tokens: list[Token], k: int) -> tuple[int, str | None]:
    """Start token index of the host function body holding token `k`, and its name."""
    stack: list[int] = []
    for j in range(k):
        if tokens[j].text == "{":
            stack.append(j)
        elif tokens[j].text == "}" and stack:
            stack.pop()
    for brace in stack:
        j = brace - 1
        while j >= 0 and tokens[j].text in ("const", "override", "noexcept", "final",
                                            "mutable") or (j >= 0 and tokens[j].text == "->"):
            j -= 1
        if j >= 0 and tokens[j].text == ")":
            j = matching(tokens, j)
            name = tokens[j - 1].text if j > 0 and tokens[j - 1].kind == "id" else None
            return brace, name
    return (stack[0] if stack else 0), None


def _parts(shape: Dim3 | None) -> tuple[int | None, int | None, int | None]:
    """Each component that is a known positive integer, else None."""
    if shape is None:
        return (None, None, None)
    out = []
    for v in shape:
        if isinstance(v, float):
            v = int(v) if v == int(v) else None
        out.append(v if v is not None and v >= 1 else None)
    return tuple(out)   # type: ignore[return-value]


def _positive_ints(shape: Dim3 | None) -> tuple[int, int, int] | None:
    parts = _parts(shape)
    return None if any(v is None for v in parts) else parts   # type: ignore[return-value]


@dataclass(frozen=True)
class LaunchContext:
    """What evaluating a launch's geometry again needs: the host function's tokens (its
    body starts at `begin`), the launch's position and its configuration's expressions."""

    tokens: tuple[Token, ...]
    begin: int
    at: int
    config: tuple[str, ...]
    constants: tuple[tuple[str, int], ...] = ()     # the program's (Program.constants)


def geometry_for(launch: Launch, kernel: Kernel, values: dict[str, int],
                 host: dict[str, int] | None = None
                 ) -> tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]:
    """(grid, block) of the launch when the kernel's arguments have `values` (by
    parameter name): the compile-time shapes where known, else the configuration
    evaluated with each plain-variable argument bound to its parameter's value, and the
    launching function's variables named in `host` bound to theirs."""
    context = launch.context
    if (launch.grid_shape and launch.block_shape) or not isinstance(context, LaunchContext):
        return launch.grid_shape, launch.block_shape
    bound: dict[str, Value] = dict(host or {})
    for arg, parameter in zip(launch.arguments, kernel.parameters):
        name = arg.strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name) and parameter.name in values:
            if bound.get(name, values[parameter.name]) != values[parameter.name]:
                return None, None       # one variable given two values
            bound[name] = values[parameter.name]
    scope = _Scope(list(context.tokens), context.begin, bound, context.at,
                   dict(context.constants))
    grid = launch.grid_shape or _positive_ints(scope.dim3(context.config[0], context.at))
    block = launch.block_shape or (_positive_ints(scope.dim3(context.config[1], context.at))
                                   if len(context.config) > 1 else None)
    return grid, block


def find_launches(source: PreprocessedSource, original_text: str,
                  file_constants: dict[str, int] | None = None,
                  tokens: list[Token] | None = None,
                  original_tokens: list[Token] | None = None) -> list[Launch]:
    """Every launch of the preprocessed program, with its geometry evaluated where the
    host code allows; `tokens` of the user text and `original_tokens` of the input's
    text when already read."""
    user_text = source.user_text()
    tokens = tokenize(user_text) if tokens is None else tokens
    frozen_tokens = tuple(tokens)
    original_tokens = tokenize(original_text) if original_tokens is None else original_tokens
    launches: list[Launch] = []
    for k, t in enumerate(tokens):
        if t.text != "<<<":
            continue
        name_index = k - 1
        if tokens[name_index].text == ">":          # k<T><<<...>>>
            name_index = matching(tokens, name_index) - 1
        if name_index < 0 or tokens[name_index].kind != "id":
            continue
        close = next((j for j in range(k + 1, len(tokens)) if tokens[j].text == ">>>"), None)
        if close is None or close + 1 >= len(tokens) or tokens[close + 1].text != "(":
            continue
        args_close = matching(tokens, close + 1)
        config = [_text(p) for p in split_top_level(tokens[k + 1:close])]
        args = [_text(p) for p in split_top_level(tokens[close + 2:args_close]) if p]
        begin, function = _enclosing_function(tokens, name_index)
        scope = _Scope(tokens, begin, constants=file_constants)
        block = scope.dim3(config[1], name_index) if len(config) > 1 else None
        grid = scope.dim3(config[0], name_index)
        constants = {}
        for position, arg in enumerate(args):
            value = scope.scalar(arg, name_index)
            if value is not None:
                constants[str(position)] = value
        file, line = source.origin_of_line(tokens[name_index].line)
        column = tokens[name_index].start - (user_text.rfind("\n", 0, tokens[name_index].start) + 1) + 1
        span = None
        if file == source.path:
            nth = sum(1 for x in launches if x.kernel == tokens[name_index].text and
                      x.location.file == file and x.location.line == line)
            span = _locate_launch(original_tokens, tokens[name_index].text, line, nth)
        launches.append(Launch(
            kernel=tokens[name_index].text, location=Location(file, line, column), span=span,
            grid=config[0], block=config[1] if len(config) > 1 else "",
            shared_bytes=config[2] if len(config) > 2 else None,
            stream=config[3] if len(config) > 3 else None, arguments=args,
            block_shape=_positive_ints(block), grid_shape=_positive_ints(grid),
            block_parts=_parts(block), grid_parts=_parts(grid),
            constant_arguments=constants, function=function,
            context=LaunchContext(frozen_tokens, begin, name_index, tuple(config),
                                  tuple(sorted((file_constants or {}).items())))))
    return launches


def _qualifier_start(tokens: list[Token], k: int) -> int:
    """Index of the first token of the qualified name ending at token k: `ns::k`,
    `a::b::k`, `::k` (a launch through a qualified name keeps its qualifier)."""
    while k >= 1 and tokens[k - 1].text == "::":
        if k >= 2 and tokens[k - 2].kind == "id":
            k -= 2
        else:
            return k - 1
    return k


def _locate_launch(tokens: list[Token], name: str, line: int, nth: int = 0) -> Span | None:
    """The launch statement `name<<<...>>>(...);` in the original text near `line` (the
    nth of that kernel's launches on the line), from its name's qualifier on."""
    for k, t in enumerate(tokens):
        if t.text == name and t.line == line:
            j = k + 1
            if j < len(tokens) and tokens[j].text == "<":
                while j < len(tokens) and tokens[j].text != "<<<":
                    j += 1
            if j >= len(tokens) or tokens[j].text != "<<<":
                continue
            if nth:
                nth -= 1
                continue
            close = next((i for i in range(j, len(tokens)) if tokens[i].text == ">>>"), None)
            if close is None or close + 1 >= len(tokens) or tokens[close + 1].text != "(":
                return None
            end = matching(tokens, close + 1)
            if end + 1 < len(tokens) and tokens[end + 1].text == ";":
                end += 1
            return Span(tokens[_qualifier_start(tokens, k)].start, tokens[end].end)
    return None
