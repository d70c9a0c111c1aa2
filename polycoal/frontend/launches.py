"""Find launch sites `k<<<grid, block[, shmem[, stream]]>>>(args);` and their geometry.

The block and grid are evaluated component by component: literals and macros (expanded
by the preprocessor), `dim3(X, Y)` in place, or a variable of the enclosing host function
defined before the launch (`dim3 block(X, Y);`, `dim3 block{X, Y};`, `dim3 block =
dim3(...)`, `dim3 block = {X, Y};`, `int threads = 256;`, `dim3 block;` then
`block.x = 64;`). A component is known when it is a constant, or when the constructor's
default argument sets it: `dim3 threads(BLOCK)`, `dim3 b(BX, 1)`, a default-constructed
`dim3 block;` and an int or unsigned configuration (`k<<<n / 256, threads>>>`, `threads`
an `int`) have y = z = 1 whatever the run-time value of x. A dim3 the function receives
as a parameter, or one changed where the launch cannot see it (a loop around the launch,
a call that may take it by reference), is unknown.

A geometry known only at run time (`(n + 255) / 256` with n read from argv, a host
loop's variable) can be evaluated later for given values of the kernel's arguments
(`geometry_for`): a launch argument that is a plain host variable has the value of the
kernel parameter it is passed to, at the launch and wherever the geometry read it, as
long as nothing in between assigns it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycparser import c_ast

from polycoal.diagnostics import Location
from polycoal.frontend.cexpr import Value, evaluate, parse_expression
from polycoal.frontend.lexer import ASSIGNMENTS, Token, matching, split_top_level, tokenize
from polycoal.frontend.limits import integer_type
from polycoal.frontend.preprocess import PreprocessedSource
from polycoal.frontend.program import Kernel, Launch, Span

_TYPE_WORDS = {"int", "unsigned", "long", "short", "size_t", "const", "constexpr", "static",
               "uint", "uint32_t", "int32_t", "int64_t", "uint64_t", "auto", "dim3", "float",
               "double"}
_DIM3_CALL = re.compile(r"^\s*dim3\s*[({](.*)[)}]\s*$", re.S)
_BRACED = re.compile(r"^\s*\{(.*)\}\s*$", re.S)         # `= {X, Y}`
_AXES = ("x", "y", "z")
# each component's value; None where it is known only at run time
Dim3 = tuple[Value | None, Value | None, Value | None]
# the words of a declaration's type that make the variable a number (dim3's constructor
# then sets y = z = 1), and those that qualify a type without changing it
_SCALAR_WORDS = frozenset({
    "int", "unsigned", "long", "short", "char", "signed", "size_t", "ssize_t", "uint",
    "ulong", "ushort", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t", "int16_t",
    "int32_t", "int64_t", "ptrdiff_t", "float", "double", "bool"})
_QUALIFIER_WORDS = frozenset({"const", "constexpr", "static", "volatile", "register", "std",
                              "::", "__restrict__", "auto"})
# cudaDeviceProp's fields that launches size blocks with (`prop.maxThreadsPerBlock`)
_SCALAR_FIELDS = frozenset({"maxThreadsPerBlock", "warpSize", "multiProcessorCount",
                            "maxThreadsPerMultiProcessor", "maxBlocksPerMultiProcessor"})
# functions of numbers whose result is a number (a dim3 argument would not compile)
_SCALAR_FUNCTIONS = frozenset({"ceil", "ceilf", "floor", "floorf", "min", "max", "fmin",
                               "fmax", "fminf", "fmaxf", "sqrt", "sqrtf", "abs", "fabs",
                               "round", "roundf", "log2", "log2f", "pow", "powf"})


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
        """The dim3 an expression makes (`dim3(X, Y)`, `{X, Y}`, a variable, a number),
        component by component, or None when not even its form is known (a dim3
        parameter, a function's result)."""
        m = _DIM3_CALL.match(expression) or _BRACED.match(expression)
        if m:
            parts = [p for p in _split_commas(m.group(1)) if p.strip()]
            if len(parts) == 1 and depth <= 12:     # dim3(X): X a dim3 or a scalar
                return self.dim3(parts[0], before, depth + 1)
            if not parts:
                return (1, 1, 1)                    # dim3(), dim3{}, {}
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
        if value is None and self.kind(expression, before) != "scalar":
            return None
        return (value, 1, 1)

    def kind(self, expression: str, before: int) -> str | None:
        """"scalar" when the expression is a number (as dim3(X) it has y = z = 1), "dim3"
        when it is a dim3 variable, None when its type is not known here."""
        node = parse_expression(expression)
        return None if node is None else self._node_kind(node, before)

    def _node_kind(self, node: c_ast.Node, before: int) -> str | None:
        if isinstance(node, c_ast.Constant):
            return "scalar" if node.type != "string" else None
        if isinstance(node, c_ast.ID):
            return self.declared(node.name, before)
        if isinstance(node, c_ast.StructRef):       # a dim3's or a vector's component
            return "scalar" if node.field.name in _AXES or \
                node.field.name in _SCALAR_FIELDS else None
        if isinstance(node, c_ast.BinaryOp):        # dim3 has no operators
            return "scalar"
        if isinstance(node, c_ast.UnaryOp):
            if node.op in ("sizeof", "-", "+", "!", "~"):
                return "scalar"
            return self._node_kind(node.expr, before) if node.op in ("p++", "p--") else None
        if isinstance(node, c_ast.TernaryOp):
            sides = {self._node_kind(node.iftrue, before),
                     self._node_kind(node.iffalse, before)}
            return "scalar" if sides == {"scalar"} else None
        if isinstance(node, c_ast.Cast):
            names = set(getattr(getattr(node.to_type.type, "type", None), "names", []) or [])
            return "scalar" if names and names <= _SCALAR_WORDS | _QUALIFIER_WORDS else None
        if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID):
            return "scalar" if node.name.name in _SCALAR_FUNCTIONS else None
        if isinstance(node, c_ast.ArrayRef) and isinstance(node.name, c_ast.ID):
            return self.declared(node.name.name, before)    # `int sizes[3]`: its elements
        return None

    def declared(self, name: str, before: int) -> str | None:
        """The type of variable `name` as seen at token `before`: "scalar" (a number),
        "dim3", or None (another type, a pointer or reference, or no declaration in
        sight)."""
        if name in self.bound:
            return "scalar"
        tokens = self.tokens
        for k in range(before - 1, self.begin - 1, -1):
            t = tokens[k]
            if t.text == name and t.kind == "id" and not (k and tokens[k - 1].text in
                                                          (".", "->")):
                head = self._declaration(k)
                if head is not None:
                    return _type_kind(head)
        for head, parameter in self._parameters():
            if parameter == name:
                return _type_kind(head)
        if name in self.constants:
            return "scalar"
        return self._file_scope(name)

    def _file_scope(self, name: str) -> str | None:
        """The type of a variable declared at file scope before the function (`const int
        threads_per_block = 512;`, whatever its value: its type is what counts here)."""
        tokens, depth = self.tokens, 0
        for k in range(self.begin):
            text = tokens[k].text
            depth += (text == "{") - (text == "}")
            if depth == 0 and text == name and tokens[k].kind == "id" and \
                    k + 1 < len(tokens) and tokens[k + 1].text in ("=", ";", ",", "(", "{"):
                head = _file_declaration(tokens, k)
                if head is not None:
                    return _type_kind(head)
        return None

    def _declaration(self, k: int) -> list[str] | None:
        """The type words of the declaration that declares the name at token k (`int`,
        `const unsigned`, `dim3`; with "*" or "&" for a pointer or a reference), or None
        when token k is not a declarator (a use of the name)."""
        tokens = self.tokens
        j = k - 1
        while j >= self.begin and tokens[j].text not in (";", "{", "}", "("):
            if tokens[j].text in (")", "]"):
                j = matching(tokens, j)
            j -= 1
        statement = tokens[j + 1:k]
        n = 0
        while n < len(statement) and (statement[n].text in _SCALAR_WORDS | _QUALIFIER_WORDS
                                      or statement[n].text == "dim3"):
            n += 1
        if n == 0 or not any(t.text in _SCALAR_WORDS or t.text in ("dim3", "auto")
                             for t in statement[:n]):
            return None
        rest = [t.text for t in statement[n:]]
        if all(r in ("*", "&", "&&", "const") for r in rest):
            return [t.text for t in statement[:n]] + [r for r in rest if r != "const"]
        if rest and rest[-1] == ",":
            return [t.text for t in statement[:n]]        # `dim3 grid(g), block;`
        return None

    def _parameters(self) -> list[tuple[list[str], str]]:
        """The enclosing function's parameters: (type words, name) each."""
        tokens = self.tokens
        j = self.begin - 1
        while j >= 0 and tokens[j].text in ("const", "override", "noexcept", "final",
                                            "mutable"):
            j -= 1
        if j < 0 or tokens[j].text != ")":
            return []
        out = []
        for part in split_top_level(tokens[matching(tokens, j) + 1:j]):
            words = [t.text for t in part]
            if "=" in words:                            # a default argument
                words = words[:words.index("=")]
            if len(words) >= 2 and part[len(words) - 1].kind == "id":
                out.append((words[:-1], words[-1]))
        return out

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
        """Value of variable `name` just before token `before`, as a dim3: a number n is
        (n, 1, 1), a number known only at run time (None, 1, 1); None when the variable's
        form is not known (a dim3 parameter, set on some paths only)."""
        if depth > 12:
            return None
        if name in self.bound and self._untouched(name, before):
            return (self.bound[name], 1, 1)
        kind = self.declared(name, before)
        unknown: Dim3 | None = (None, 1, 1) if kind == "scalar" else None
        if self._changed_in_loop(name, before, kind):
            return unknown
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
            if nxt in ASSIGNMENTS and nxt != "=" or prev in ("++", "--", "&") or \
                    (kind == "dim3" and self._passed_to_call(k)) or \
                    (nxt in ASSIGNMENTS and self._in_loop_step(k)):
                # changed (a loop counter, say: `for (n = 1; ...; n = n * 2)` runs the
                # launch with every value), its address taken
                return unknown
            axis = _member_axis(tokens, k)
            if axis is not None:
                after = tokens[k + 3].text if k + 3 < len(tokens) else ""
                if after in ASSIGNMENTS:
                    # `block.y = e;`, or set on some paths only or changed: unknown
                    plain = after == "=" and not self._conditional(k, before)
                    members.setdefault(_AXES.index(tokens[k + 2].text), self.scalar(
                        _text(self._until_semicolon(k + 4)), k, depth + 1) if plain else None)
            elif nxt == "=" and (k + 2 >= len(tokens) or tokens[k + 2].text != "="):
                if self._conditional(k, before):
                    return unknown  # set on some paths only: its value here is not known
                return self._with_members(self._value(kind, _text(self._until_semicolon(
                    k + 2)), k, depth), members)
            elif self._declaration(k) is not None:
                if self._conditional(k, before):
                    return unknown  # another variable of that name, in a closed block
                if nxt in ("(", "{"):
                    close = matching(tokens, k + 1)
                    value = self._value(kind, f"dim3({_text(tokens[k + 2:close])})", k, depth)
                else:           # declared without a value: a dim3 is (1, 1, 1)
                    value = (1, 1, 1) if kind == "dim3" else unknown
                return self._with_members(value, members)
            k -= 1
        if name in self.constants and not members:
            return (self.constants[name], 1, 1)
        return self._with_members(unknown, members)     # a parameter, or not in sight

    def _value(self, kind: str | None, expression: str, at: int, depth: int) -> Dim3 | None:
        """The dim3 a variable of type `kind` holds after `= expression` (a number
        variable holds a number, whatever `expression` is)."""
        if kind == "scalar":
            inner = _DIM3_CALL.match(expression) or _BRACED.match(expression)
            text = inner.group(1) if inner else expression
            return (self.scalar(text, at, depth + 1), 1, 1)
        return self.dim3(expression, at, depth + 1)

    def _changed_in_loop(self, name: str, before: int, kind: str | None) -> bool:
        """Whether the variable may change after token `before` in a loop body that holds
        `before` (the next iteration's launch sees another value)."""
        tokens = self.tokens
        for start, end in self._loop_bodies(before):
            for k in range(before, end):
                t = tokens[k]
                if t.text != name or t.kind != "id" or tokens[k - 1].text in (".", "->"):
                    continue
                nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
                axis = _member_axis(tokens, k)
                if nxt in ASSIGNMENTS or tokens[k - 1].text in ("++", "--", "&") or (
                        axis is not None and k + 3 < len(tokens) and
                        tokens[k + 3].text in ASSIGNMENTS) or \
                        (kind == "dim3" and self._passed_to_call(k)):
                    return True
        return False

    def _loop_bodies(self, at: int) -> list[tuple[int, int]]:
        """The braces (open, close) of the loop bodies that hold token `at`."""
        tokens = self.tokens
        stack: list[int] = []
        for j in range(self.begin, at):
            if tokens[j].text == "{":
                stack.append(j)
            elif tokens[j].text == "}" and stack:
                stack.pop()
        out = []
        for brace in stack:
            j = brace - 1
            loop = j >= 0 and tokens[j].text == "do"
            if j >= 0 and tokens[j].text == ")":
                opening = matching(tokens, j)
                loop = opening > 0 and tokens[opening - 1].text in ("for", "while")
            if loop:
                out.append((brace, matching(tokens, brace)))
        return out

    def _passed_to_call(self, k: int) -> bool:
        """Whether the name at token k is a whole argument of a call other than a
        launch's or dim3's (a function that may take it by reference and change it)."""
        tokens = self.tokens
        if tokens[k - 1].text not in ("(", ",") or k + 1 >= len(tokens) or \
                tokens[k + 1].text not in (")", ","):
            return False
        depth, j = 0, k - 1
        while j >= self.begin:
            text = tokens[j].text
            if text in (")", "]"):
                depth += 1
            elif text in ("(", "["):
                if depth == 0:
                    break
                depth -= 1
            elif text in (";", "{", "}", "<<<"):
                return False
            j -= 1
        if j < self.begin or tokens[j].text != "(" or j == 0:
            return False
        callee = tokens[j - 1]
        return callee.kind == "id" and callee.text not in ("dim3", "if", "while", "for",
                                                           "switch", "return", "sizeof") \
            or callee.text in (">", ">>")       # a template's call, f<T>(block)

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

    def _in_loop_step(self, k: int) -> bool:
        """Whether token k is in the condition or the step of a `for` header (after its
        first `;`): what it assigns changes from one trip to the next."""
        depth, semicolons = 0, 0
        for j in range(k - 1, self.begin - 1, -1):
            text = self.tokens[j].text
            if text in ("{", "}"):
                return False
            if text == ";" and depth == 0:
                semicolons += 1
            depth += (text == ")") - (text == "(")
            if depth < 0:
                return j > 0 and self.tokens[j - 1].text == "for" and semicolons > 0
        return False

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
        tokens = self.tokens
        j = k - 1
        while j >= 0 and tokens[j].text not in (";", "{", "}", "else", "do", ":"):
            if tokens[j].text == ")":
                opening = matching(tokens, j)
                if opening and tokens[opening - 1].text in ("if", "for", "while", "switch"):
                    return not self._in_parentheses(j + 1)      # `if (c) name = e;`
                j = opening     # a declarator's or a call's parentheses: `a = dim3(..), b`
            j -= 1
        return j >= 0 and tokens[j].text in ("else", "do")

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
            out[axis] = v
        return tuple(out)   # type: ignore[return-value]


def _type_kind(words: list[str]) -> str | None:
    """"dim3", "scalar" or None (a pointer, a reference, another type) for the type words
    of a declaration."""
    if any(w in ("*", "&", "&&") for w in words):
        return None
    if "dim3" in words:
        return "dim3"
    return "scalar" if any(w in _SCALAR_WORDS for w in words) else None


def _file_declaration(tokens: list[Token], k: int) -> list[str] | None:
    """The type words before the name at token k when they are all a declaration's
    (`static const unsigned`), else None."""
    j = k - 1
    while j >= 0 and tokens[j].text in _SCALAR_WORDS | _QUALIFIER_WORDS | {"dim3"}:
        j -= 1
    if j >= 0 and tokens[j].text not in (";", "}", "{") and not tokens[j].text.startswith("#"):
        return None
    head = [t.text for t in tokens[j + 1:k]]
    return head if any(w in _SCALAR_WORDS or w == "dim3" for w in head) else None


def _member_axis(tokens: list[Token], k: int) -> str | None:
    """`x`, `y` or `z` where the name at token k is followed by `.x` and so on."""
    if k + 2 < len(tokens) and tokens[k + 1].text == "." and tokens[k + 2].text in _AXES:
        return tokens[k + 2].text
    return None


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


def counted_up(launch: Launch, kernel: Kernel) -> set[str]:
    """The kernel's int parameters whose argument at this launch is the counter of a host
    loop around it that counts up from a known value >= 0: `for ([T] v = LO; C; S) {...}`
    with the launch inside the braces, S `v++`, `++v` or `v += N` (N a positive number),
    LO a known value >= 0, and every use of v in C and the body a read by an operator
    or a copy (a launch's argument, a by-value call): no assignment, no address or
    reference taken, no redeclaration. v is declared in the loop's head, or a local of
    the launching function declared in a block around the loop whose address no
    statement before the loop takes, bound to no reference, passed to no call that may
    take one, in a function with no lambda capturing by reference; T (its type) a
    signed integer type no wider than the parameter's. Then v >= LO >= 0 at every
    launch in the loop."""
    context = launch.context
    if not isinstance(context, LaunchContext):
        return set()
    tokens, at = list(context.tokens), context.at
    names = {}
    for arg, parameter in zip(launch.arguments, kernel.parameters):
        kind = integer_type(parameter.type)
        if re.fullmatch(r"[A-Za-z_]\w*", arg.strip()) and not parameter.is_pointer and \
                kind is not None and kind[1]:
            names.setdefault(arg.strip(), (parameter.name, kind[0]))
    scope = _Scope(tokens, context.begin, None, at, dict(context.constants))
    out = set()
    for f in range(context.begin, at):
        if tokens[f].text != "for" or tokens[f + 1].text != "(":
            continue
        close = matching(tokens, f + 1)
        if tokens[close + 1].text != "{" or not close + 1 < at < matching(tokens, close + 1):
            continue
        body_end = matching(tokens, close + 1)
        parts = split_top_level(tokens[f + 2:close], ";")
        if len(parts) != 3:
            continue
        init, condition, step = parts
        texts = [t.text for t in init]
        if "=" not in texts or texts.index("=") < 1 or init[texts.index("=") - 1].kind != "id":
            continue
        eq = texts.index("=")
        v = texts[eq - 1]
        if v not in names:
            continue
        declared = integer_type(" ".join(texts[:eq - 1])) if eq > 1 else \
            _local_before(tokens, context.begin, f, body_end, v)
        if declared is None or not declared[1] or declared[0] > names[v][1]:
            continue
        low = scope.scalar(_text(init[eq + 1:]), f)
        steps = [t.text for t in step]
        up = steps in ([v, "++"], ["++", v]) or (
            len(steps) == 3 and steps[:2] == [v, "+="] and steps[2].isdigit()
            and int(steps[2]) > 0)
        if isinstance(low, int) and not isinstance(low, bool) and low >= 0 and up and \
                _only_read(condition, v) and _only_read(tokens[close + 2:body_end], v):
            out.add(names[v][0])
    return out


def _local_before(tokens: list[Token], begin: int, loop: int, end: int, v: str
                  ) -> tuple[int, bool] | None:
    """(bits, signed) of `v` where it is a local of the function (its body from token
    `begin`) declared as a built-in integer in a block still open at token `loop`, and
    nothing from its declaration to the loop makes an alias of it (the module's
    counted_up); None otherwise. `end`: the loop's last token (lambdas up to it)."""
    if any(tokens[k].text == "[" and tokens[k + 1].text == "&" for k in range(begin, end)):
        return None             # a lambda capturing by reference may write v
    found, depth = None, 0
    for k in range(begin, loop):
        text = tokens[k].text
        if text in ("{", "}"):
            depth += 1 if text == "{" else -1
            if found is not None and depth < found[1]:
                return None     # its block closed before the loop: another v there
            continue
        if text != v:
            continue
        first = k
        while first > begin and tokens[first - 1].text not in (";", "{", "}"):
            first -= 1
        statement = tokens[first:k]
        words = [t.text for t in statement]
        if found is None and words and words[0] in _SCALAR_WORDS | _QUALIFIER_WORDS and \
                not ({"(", "&", "&&", "*"} & set(words)):
            kind = integer_type(" ".join(w for w in words if w in _SCALAR_WORDS |
                                         _QUALIFIER_WORDS))
            if kind is None:
                return None
            found = (kind, depth)
            continue
        if found is None:
            return None         # used before any local declaration: not this function's
        rest = tokens[first:next((j for j in range(k, loop) if tokens[j].text == ";"), loop)]
        if {"&", "&&"} & {t.text for t in rest} or _by_reference(tokens, k):
            return None
    return found[0] if found is not None else None


def _by_reference(run: list[Token], k: int) -> bool:
    """Whether token k (a variable) is a whole argument of a call that may take it by
    reference: a callee named (not `for`, not a launch, not one of _BY_VALUE)."""
    if not (0 < k < len(run) - 1 and run[k - 1].text in ("(", ",") and
            run[k + 1].text in (")", ",")):
        return False
    depth, j = 0, k - 1
    while j >= 0:               # the parenthesis the argument is in
        if run[j].text == ")":
            depth += 1
        elif run[j].text == "(":
            if depth == 0:
                break
            depth -= 1
        j -= 1
    callee = run[j - 1] if j > 0 else None
    return callee is not None and callee.kind == "id" and \
        callee.text not in _BY_VALUE | {"for"}


# functions a variable passed whole to is copied into (C++ passes a variable by
# reference to a function that takes one: any other call may write it)
_BY_VALUE = {"printf", "fprintf", "sprintf", "snprintf", "min", "max", "abs", "fabs",
             "fmin", "fmax", "sqrt", "dim3", "static_cast", "int", "unsigned", "long",
             "float", "double", "size_t", ">>>"}
# the tokens around a read of a variable (as an operand of arithmetic, a comparison or
# a subscript, or a whole argument of a copying call)
_READ_BEFORE = {"(", ",", "[", "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=",
                "&&", "||", "?", ":", "!", ";", "{", "}", ""}
_READ_AFTER = {")", ",", "]", "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=",
               "&&", "||", "?", ":", ";", ""}


def _only_read(run: list[Token], v: str) -> bool:
    """Whether every use of `v` in the tokens reads it (_READ_BEFORE v _READ_AFTER; a
    whole argument only of a launch or a _BY_VALUE call, whose parameters are copies)."""
    for k, t in enumerate(run):
        if t.text != v:
            continue
        before = run[k - 1].text if k > 0 else ""
        after = run[k + 1].text if k + 1 < len(run) else ""
        if before not in _READ_BEFORE or after not in _READ_AFTER or _by_reference(run, k):
            return False
    return True


def known_values(launch: Launch) -> dict[str, int]:
    """The values a launch gives the names a kernel model's parameters may have, where
    they are known at compile time: the kernel's int arguments (by parameter name) and
    each known component of the geometry (blockDim_x, gridDim_y, nthreads_z...)."""
    values = {name: int(v) for name, v in launch.constant_arguments.items()
              if float(v).is_integer()}
    for a, block, grid in zip(_AXES, launch.block_parts, launch.grid_parts):
        if block is not None:
            values[f"blockDim_{a}"] = block
        if grid is not None:
            values[f"gridDim_{a}"] = grid
        if block is not None and grid is not None:
            values[f"nthreads_{a}"] = block * grid
    return values


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
