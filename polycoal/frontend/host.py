"""Facts about the host code the rest of polycoal needs, read once from the input's
tokens: where each kernel is named other than at its definition and launches, and which
variables hold distinct cudaMalloc allocations (alias evidence)."""

from __future__ import annotations

import re

from polycoal.frontend.lexer import Token, matching

# what `&` takes in a cudaMalloc: a variable, or a struct's field (`&bufs.in`, `&p->out`),
# after a C or C++ cast (`(void **)&d`, `reinterpret_cast<void **>(&d)`)
_ALLOCATION = re.compile(
    r"\bcuda(?:Malloc|MallocManaged|MallocAsync|MallocPitch)\s*\(\s*(?:\([^()]*\)\s*|"
    r"(?:reinterpret_cast|static_cast)\s*<[^<>]*>\s*\(\s*)?&\s*"
    r"(\w+(?:\s*(?:\.|->)\s*\w+)*)(?!\s*(?:\[|\.|->|\())")
_COPY = re.compile(r"(?<![\w.>=!<])\s*([A-Za-z_]\w*(?:\s*(?:\.|->)\s*\w+)*)\s*=\s*"
                   r"([A-Za-z_]\w*(?:\s*(?:\.|->)\s*\w+)*)\s*;")


def allocation_sites(tokens: tuple[Token, ...]) -> dict[str, str]:
    """Variables and fields (`bufs.in`) holding a cudaMalloc allocation of the program,
    each with the variable the allocation was made for: its own name, or, for a copy
    `bufs.in = in;`, the allocated variable's. A name given two different allocations
    is left out (which one it holds at a launch is not known here)."""
    text = " ".join(t.text for t in tokens)
    sources: dict[str, set[str]] = {}
    for m in _ALLOCATION.findall(text):
        name = re.sub(r"\s+", "", m)
        sources.setdefault(name, set()).add(name)
    copies = [(re.sub(r"\s+", "", a), re.sub(r"\s+", "", b)) for a, b in _COPY.findall(text)]
    for target, source in copies:
        if source in sources and target != source:
            sources.setdefault(target, set()).update(sources[source])
    # a name given anything else (`y = x + 1;`, `y += k`, `++y`) in host code may point
    # anywhere: into another allocation among them; it is left out (a kernel's or device
    # function's variables are others, whatever their names)
    host = _host_text(tokens)
    moved = {name for name in sources if _moved(host, name, sources)}
    return {name: next(iter(s)) for name, s in sources.items()
            if len(s) == 1 and name not in moved}


def _host_text(tokens: tuple[Token, ...]) -> str:
    """The tokens' text without the bodies of __global__ and __device__ functions."""
    kept, k = [], 0
    while k < len(tokens):
        t = tokens[k]
        if t.text in ("__global__", "__device__"):
            end = next((j for j in range(k, len(tokens)) if tokens[j].text in ("{", ";")), None)
            if end is not None and tokens[end].text == "{":
                try:
                    close = matching(tokens, end)
                except ValueError:      # brackets unbalanced as written (#ifdef branches)
                    close = None
                if close is not None:
                    kept.append(t.text)
                    k = close + 1
                    continue
        kept.append(t.text)
        k += 1
    return " ".join(kept)


# what may be stored into a pointer without moving it off an allocation: a null pointer
_NULL = {"NULL", "nullptr", "0", "(void*)0"}


def _moved(text: str, name: str, sources: dict[str, set[str]]) -> bool:
    """Whether the host text assigns `name` (a variable or field) anything but another
    allocation's holder or a null pointer, or steps it (++, --)."""
    spelled = r"\s*(?:\.|->)\s*".join(re.escape(p) for p in re.split(r"\.|->", name))
    spelled = rf"(?<![\w.>]){spelled}(?!\s*(?:\.|->|\[))(?![\w])"
    if re.search(rf"(?:\+\+|--)\s*{spelled}|{spelled}\s*(?:\+\+|--)", text):
        return True
    for m in re.finditer(rf"{spelled}\s*((?:[-+*/%&|^]|<<|>>)?)=(?!=)\s*([^;]*);", text):
        value = re.sub(r"\s+", "", m.group(2))
        if m.group(1) or (value not in sources and value not in _NULL):
            return True
    return False


def kernel_references(tokens: tuple[Token, ...], kernels, launches
                      ) -> dict[str, tuple[int, ...]]:
    """Per kernel name, the lines where the text names it other than in its definition,
    its launches and forward declarations (`__global__ void k(...);`): taking its
    address, setting its attributes, launching it through the runtime API, where a new
    geometry could not be applied."""
    spans: dict[str, list] = {}
    for kernel in kernels:
        spans.setdefault(kernel.name, []).append(kernel.span)
    for launch in launches:
        if launch.kernel in spans:
            spans[launch.kernel].append(launch.span)
    return other_mentions(tokens, {name: [(s.start, s.end) for s in found if s]
                                   for name, found in spans.items()})


def other_mentions(tokens, spans: dict[str, list[tuple[int, int]]]
                   ) -> dict[str, tuple[int, ...]]:
    """Per name of `spans`, the lines where a token names it outside its spans [start,
    end), other than in a forward declaration (`__global__ void k(...);`) and where a
    parameter or local of that name is meant."""
    found: dict[str, list[int]] = {}
    starts = _declaration_starts(tokens)
    for k, t in enumerate(tokens):
        if t.text not in spans or any(s <= t.start < e for s, e in spans[t.text]):
            continue
        prototype = k + 1 < len(tokens) and tokens[k + 1].text == "(" and \
            any(x.text == "__global__" for x in tokens[max(0, k - 8):k])
        if not prototype and not _shadowed(tokens, k, starts):
            found.setdefault(t.text, []).append(t.line)
    return {name: tuple(lines) for name, lines in found.items()}


# words that end an expression, not a type, before a name
_NOT_TYPES = {"return", "case", "else", "do", "goto", "sizeof", "throw", "new", "delete",
              "co_return", "co_yield", "typedef", "using", "operator"}
_QUALIFIERS = {"*", "&", "&&", "const", "volatile", "__restrict__", "__restrict", "restrict"}


def _declaration_starts(tokens: tuple[Token, ...]) -> list[int]:
    """For each token, where the declaration of file or namespace scope holding it
    starts (a namespace's braces open no declaration)."""
    starts, depth, start = [], 0, 0
    opened: list[bool] = []           # per open brace: whether it is a namespace's
    for k, t in enumerate(tokens):
        starts.append(start)
        if t.text == "{":
            namespace = any(x.text == "namespace" for x in tokens[max(0, k - 3):k]) or \
                (k >= 1 and tokens[k - 1].kind == "str")         # extern "C" {
            opened.append(namespace)
            depth += 0 if namespace else 1
        elif t.text == "}" and opened:
            depth -= 0 if opened.pop() else 1
            if depth == 0:
                start = k + 1
        elif t.text == ";" and depth == 0:
            start = k + 1
    return starts


def _shadowed(tokens: tuple[Token, ...], k: int, starts: list[int]) -> bool:
    """Whether the name at tokens[k] is, there, a parameter or local of the function
    holding it (`static void fill(..., double scale)` names no kernel `scale`): a
    declaration of it earlier in the same file-scope declaration."""
    name = tokens[k].text
    for j in range(starts[k], k + 1):
        if tokens[j].text != name or j + 1 >= len(tokens) or \
                tokens[j + 1].text not in (",", ")", "=", ";", "[", "{", ":"):
            continue
        i = j - 1                       # the type before it: `const float *`, `T &`
        while i >= 0 and tokens[i].text in _QUALIFIERS:
            i -= 1
        if i >= 0 and (tokens[i].kind == "id" and tokens[i].text not in _NOT_TYPES or
                       tokens[i].text in (">", ">>")):
            return True
    return False
