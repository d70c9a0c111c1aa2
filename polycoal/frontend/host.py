"""Facts about the host code the rest of polycoal needs, read once from the input's
tokens: where each kernel is named other than at its definition and launches, and which
variables hold distinct cudaMalloc allocations (alias evidence)."""

from __future__ import annotations

import re

from polycoal.frontend.lexer import Token

# what `&` takes in a cudaMalloc: a variable, or a struct's field (`&bufs.in`, `&p->out`)
_ALLOCATION = re.compile(
    r"\bcuda(?:Malloc|MallocManaged|MallocAsync|MallocPitch)\s*\(\s*(?:\([^()]*\)\s*)?&\s*"
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
    return {name: next(iter(s)) for name, s in sources.items() if len(s) == 1}


def kernel_references(tokens: tuple[Token, ...], kernels, launches
                      ) -> dict[str, tuple[int, ...]]:
    """Per kernel name, the lines where the text names it other than in its definition,
    its launches and forward declarations (`__global__ void k(...);`): taking its
    address, setting its attributes, launching it through the runtime API, where a new
    geometry could not be applied."""
    names = {k.name for k in kernels}
    spans: dict[str, list] = {}
    for kernel in kernels:
        spans.setdefault(kernel.name, []).append(kernel.span)
    for launch in launches:
        spans.setdefault(launch.kernel, []).append(launch.span)
    found: dict[str, list[int]] = {}
    for k, t in enumerate(tokens):
        if t.text not in names or any(s and s.start <= t.start < s.end for s in spans[t.text]):
            continue
        prototype = k + 1 < len(tokens) and tokens[k + 1].text == "(" and \
            any(x.text == "__global__" for x in tokens[max(0, k - 6):k])
        if not prototype:
            found.setdefault(t.text, []).append(t.line)
    return {name: tuple(lines) for name, lines in found.items()}
