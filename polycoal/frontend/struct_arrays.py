"""Where the host code holds device arrays of a struct type, and what it does with them
(`struct_array_uses`).

A layout change is legal only where polycoal sees every use of the array's storage: its
allocation, the copies across the host/device boundary, the kernels it is passed to and
its release. This scan of the host code's tokens finds the device pointers of a struct
type (a variable declared `S *d` that a cudaMalloc allocates, or that such a variable is
assigned to) and classifies every other mention of them; anything else (pointer
arithmetic, a call polycoal does not know, an address taken) is an escape, and the
layout of that struct stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polycoal.frontend.lexer import Token, matching, split_top_level
from polycoal.frontend.program import Program, Span

ALLOCATE = ("cudaMalloc",)
COPY = ("cudaMemcpy", "cudaMemcpyAsync")
SET = ("cudaMemset", "cudaMemsetAsync")
RELEASE = ("cudaFree",)
_NULLS = ("NULL", "nullptr", "0")


@dataclass(frozen=True)
class HostCall:
    """A runtime call on a tracked array: its span (from the function's name to the
    closing parenthesis) and its arguments as written."""

    function: str                # "cudaMalloc" | "cudaMemcpy[Async]" | "cudaMemset[Async]"
    #                              | "cudaFree"
    span: Span
    arguments: tuple[str, ...]
    line: int
    tracked: tuple[int, ...]     # which arguments are tracked arrays


@dataclass
class StructArrays:
    struct: str
    variables: set[str] = field(default_factory=set)
    calls: list[HostCall] = field(default_factory=list)
    launches: list[tuple[object, int]] = field(default_factory=list)   # (launch, position)
    escapes: list[tuple[int, str]] = field(default_factory=list)       # (line, what)
    escaped: set[str] = field(default_factory=set)     # the variables of those escapes
    assigned: set[str] = field(default_factory=set)    # assigned to or from another one

    def escape(self, variable: str, line: int, what: str) -> None:
        self.escapes.append((line, what))
        self.escaped.add(variable)


def _inside(spans: list[Span], pos: int) -> bool:
    return any(s.start <= pos < s.end for s in spans)


def _blocks(tokens: list[Token]) -> list[int]:
    """For each token, the index of the `}` closing the innermost block around it
    (len(tokens) at file scope)."""
    closes, stack, out = {}, [], []
    for k, t in enumerate(tokens):
        if t.text == "{":
            stack.append(k)
        elif t.text == "}" and stack:
            closes[stack.pop()] = k
    stack = []
    for k, t in enumerate(tokens):
        out.append(closes.get(stack[-1], len(tokens)) if stack else len(tokens))
        if t.text == "{":
            stack.append(k)
        elif t.text == "}" and stack:
            stack.pop()
    return out


def _declared_pointers(tokens: list[Token], names: set[str], device: list[Span]
                       ) -> dict[str, list[tuple[str, int, int]]]:
    """Variables declared as pointers to one of `names` (`Body *d`, `struct Body *a, *b`)
    outside device code: variable -> (struct name, first token, one past the last token
    of its scope: to the end of the block of the declaration)."""
    out: dict[str, list[tuple[str, int, int]]] = {}
    ends = _blocks(tokens)
    for k, t in enumerate(tokens):
        if t.text not in names or _inside(device, t.start):
            continue
        if k and tokens[k - 1].text in (".", "->", "::"):
            continue
        j = k + 1
        while j < len(tokens):
            if tokens[j].text == "*" and j + 1 < len(tokens) and tokens[j + 1].kind == "id":
                out.setdefault(tokens[j + 1].text, []).append((t.text, j + 1, ends[j + 1]))
                j += 2
                # `= init` then `, *next`
                depth = 0
                while j < len(tokens) and not (depth == 0 and tokens[j].text in (",", ";",
                                                                                 ")")):
                    depth += tokens[j].text in "([{"
                    depth -= tokens[j].text in ")]}"
                    j += 1
                if j < len(tokens) and tokens[j].text == ",":
                    j += 1
                    continue
            break
    return out


def struct_array_uses(program: Program, struct_names: dict[str, str]) -> dict[str, StructArrays]:
    """Per struct (canonical name), its device arrays in the host code and their uses.
    `struct_names`: every spelling of a struct's name -> its canonical name."""
    tokens = list(program.tokens)
    device = [k.span for k in program.kernels if k.span]
    launch_spans = [launch.span for launch in program.launches if launch.span]
    pointers = _declared_pointers(tokens, set(struct_names), device)
    result: dict[str, StructArrays] = {}
    owner: dict[str, str] = {}
    for var, declared in pointers.items():
        structs = {struct_names[s] for s, _, _ in declared}
        if len(structs) == 1:
            owner[var] = next(iter(structs))

    index = {id(t): k for k, t in enumerate(tokens)}
    starts = {t.start: k for k, t in enumerate(tokens)}

    def scoped(k: int, name: str | None = None) -> bool:
        """Whether `name` (token k's text by default) at token k is within the scope of
        its pointer declaration (another variable of that name elsewhere is not it)."""
        name = tokens[k].text if name is None else name
        return any(first <= k < end for _, first, end in pointers.get(name, ()))
    # tracked: allocated by cudaMalloc (`cudaMalloc(&d, ...)`, `(void **)&d`), or
    # assigned from a tracked variable of the same struct (`S *t = a; a = b; b = t;`)
    allocated = set()
    for k, t in enumerate(tokens):
        if t.text in ALLOCATE and k + 1 < len(tokens) and tokens[k + 1].text == "(" and \
                not _inside(device, t.start):
            first = split_top_level(tokens[k + 2:matching(tokens, k + 1)])
            names = [x.text for x in (first[0] if first else []) if x.kind == "id"
                     and x.text != "void"]
            if len(names) == 1 and names[0] in owner and \
                    scoped(next(j for j in range(k, len(tokens))
                                if tokens[j].text == names[0])):
                allocated.add(names[0])
    grown = True
    while grown:
        grown = False
        for k, t in enumerate(tokens[:-3]):
            if t.kind == "id" and t.text in owner and t.text not in allocated and \
                    scoped(k) and tokens[k + 1].text == "=" and tokens[k + 2].text in allocated and \
                    tokens[k + 3].text == ";" and \
                    owner[t.text] == owner[tokens[k + 2].text]:
                allocated.add(t.text)
                grown = True
    for name in allocated:
        result.setdefault(owner[name], StructArrays(owner[name])).variables.add(name)
    tracked = {v: owner[v] for v in allocated}
    consumed: set[int] = set()
    for k, t in enumerate(tokens):
        if t.kind != "id" or t.text not in ALLOCATE + COPY + SET + RELEASE or \
                _inside(device, t.start) or k + 1 >= len(tokens) or tokens[k + 1].text != "(":
            continue
        close = matching(tokens, k + 1)
        args = split_top_level(tokens[k + 2:close])
        texts = tuple(program.text[a[0].start:a[-1].end] if a else "" for a in args)
        which, found = [], None
        for n, a in enumerate(args):
            plain = [x for x in a if x.text not in ("(", ")", "void", "*", "&")]
            if len(plain) == 1 and plain[0].text in tracked and scoped(index[id(plain[0])]):
                which.append(n)
                found = found or plain[0].text
                consumed.update(id(x) for x in a)
        if which:
            result[tracked[found]].calls.append(HostCall(
                t.text, Span(t.start, tokens[close].end), texts, t.line, tuple(which)))
    by_span = {launch.span: launch for launch in program.launches if launch.span}
    for launch in program.launches:
        if launch.span is None:
            continue
        at = starts.get(launch.span.start)
        for n, arg in enumerate(launch.arguments):
            if arg.strip() in tracked and at is not None and scoped(at, arg.strip()):
                result[tracked[arg.strip()]].launches.append((launch, n))
    for k, t in enumerate(tokens):
        if t.kind != "id" or t.text not in tracked or id(t) in consumed or not scoped(k):
            continue
        if k and tokens[k - 1].text in (".", "->", "::"):
            continue
        struct = tracked[t.text]
        if _inside(device, t.start):
            result[struct].escape(t.text, t.line, f"'{t.text}' named in device code")
            continue
        if _inside(launch_spans, t.start):
            launch = next(by_span[s] for s in by_span if s.start <= t.start < s.end)
            if any(a.strip() == t.text for a in launch.arguments):
                continue
            result[struct].escape(t.text, t.line, f"'{t.text}' in an argument of a launch "
                                                  f"of '{launch.kernel}'")
            continue
        before = tokens[k - 1].text if k else ""
        after = tokens[k + 1].text if k + 1 < len(tokens) else ""
        if before == "*" and k >= 2 and (tokens[k - 2].text in struct_names or
                                         tokens[k - 2].text in (",",)):
            # a declaration: no initialiser, a null one, or another tracked array
            if after == "=":
                init = tokens[k + 2] if k + 2 < len(tokens) else None
                if init is None or not (init.text in _NULLS or init.text in tracked) or \
                        tokens[k + 3].text not in (";", ","):
                    result[struct].escape(t.text, t.line, f"'{t.text}' initialised with "
                                                          "something polycoal cannot follow")
                else:
                    result[struct].assigned.update((t.text, init.text))
            continue
        if after == "=" and k + 3 < len(tokens) and tokens[k + 3].text == ";" and \
                before in (";", "{", "}", ")") and (tokens[k + 2].text in tracked
                                                     or tokens[k + 2].text in _NULLS):
            result[struct].assigned.update((t.text, tokens[k + 2].text))
            continue                                   # d = e; between tracked arrays
        if before == "=" and after == ";" and k >= 2 and tokens[k - 2].text in tracked:
            result[struct].assigned.update((t.text, tokens[k - 2].text))
            continue
        if before == "," and after == ")" and k >= 4 and tokens[k - 4].text == "swap" \
                and tokens[k - 2].text in tracked:
            result[struct].assigned.update((t.text, tokens[k - 2].text))
            continue                                   # std::swap(a, b)
        if before == "(" and after == "," and k >= 2 and tokens[k - 2].text == "swap" \
                and k + 2 < len(tokens) and tokens[k + 2].text in tracked:
            continue
        result[struct].escape(t.text, t.line, f"'{t.text}' used where polycoal cannot "
                                              "follow it ('" + " ".join(
                                                  x.text for x in tokens[max(0, k - 2):k + 3])
                              + "')")
    return result
