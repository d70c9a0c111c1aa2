"""Source-level instrumentation of a kernel's global loads and stores (`instrument`).

Every array reference whose base is a pointer parameter of the kernel or a file-scope
`__device__`/`__constant__` array is a site. Reads and writes are told apart as the
static analysis does (model/extract.py): the left side of `=` is a store, of `op=`,
`++`, `--` and of an atomic's `&X` a load and a store, everything else a load. Each
(site, kind) gets a static id; a static id carries the reference's file:line:column and
text, and the index of the static analysis' reference with the same position and kind
(`KernelAnalysis.global_references`), so that trace and analysis compare per reference.

The kernel's preprocessed text is rewritten in place: `A[e]` becomes
`(*pc_trace(sid, n, pc_dyn, A, &A[e]))`, an lvalue at the same address (so loads,
stores, compound assignments and atomics keep their meaning), innermost references
first, so that `A[P[i]]` records both. `pc_dyn`, a per-thread array declared at the top
of the body, counts the executions of each static id by the thread: the dynamic id.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from polycoal.analysis import KernelAnalysis
from polycoal.diagnostics import Location
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import matching, tokenize
from polycoal.frontend.program import Kernel, Program


class NotInstrumentable(Exception):
    """The kernel's text cannot be instrumented; the message says why."""


@dataclass(frozen=True)
class Site:
    """One static id: a global reference and whether it loads or stores."""

    sid: int
    array: str
    kind: str                       # "load" | "store"
    text: str
    location: Location
    element_size: int
    static: int | None              # index in KernelAnalysis.global_references
    irregular: bool                 # subscript not affine (read from memory, or not a polynomial)


@dataclass(frozen=True)
class Instrumented:
    kernel: str
    text: str                       # the instrumented kernel definition
    sites: list[Site]


@dataclass
class _Ref:
    node: c_ast.ArrayRef
    base: str
    levels: int                     # number of [] the reference spans
    kinds: tuple[str, ...]
    start: int = 0
    end: int = 0


def _global_arrays(kernel: Kernel, program: Program) -> dict[str, str]:
    """Array name -> element type, for the pointer parameters and file-scope arrays."""
    out = {g.name: g.type for g in program.globals.values()}
    out.update({p.name: p.type for p in kernel.parameters if p.is_pointer})
    return out


def _references(node: c_ast.Node | None, kinds: tuple[str, ...], arrays: dict[str, str],
                out: list[_Ref]) -> None:
    if node is None:
        return
    if isinstance(node, c_ast.ArrayRef):
        subscripts, base, levels = [], node, 0
        while isinstance(base, c_ast.ArrayRef):
            subscripts.append(base.subscript)
            base, levels = base.name, levels + 1
        for s in subscripts:
            _references(s, ("load",), arrays, out)
        if isinstance(base, c_ast.ID) and base.name in arrays:
            out.append(_Ref(node, base.name, levels, kinds))
        else:
            _references(base, ("load",), arrays, out)
        return
    if isinstance(node, c_ast.Assignment):
        _references(node.rvalue, ("load",), arrays, out)
        _references(node.lvalue, ("store",) if node.op == "=" else ("load", "store"),
                    arrays, out)
        return
    if isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--"):
        _references(node.expr, ("load", "store"), arrays, out)
        return
    if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID) and \
            node.name.name in cuda_dialect().atomic_functions and node.args:
        first, *rest = node.args.exprs
        if isinstance(first, c_ast.UnaryOp) and first.op == "&":
            _references(first.expr, ("load", "store"), arrays, out)
        else:
            _references(first, ("load",), arrays, out)
        for a in rest:
            _references(a, ("load",), arrays, out)
        return
    for _, child in node.children():
        _references(child, ("load",), arrays, out)


def _offset(kernel: Kernel, line_starts: list[int], node: c_ast.Node) -> int:
    """Offset in kernel.expanded of a node's coordinate (AST lines are the original
    file's, columns the preprocessed text's; the text starts at kernel.location)."""
    rel = node.coord.line - kernel.location.line
    if not 0 <= rel < len(line_starts):
        raise NotInstrumentable(f"line {node.coord.line} is outside the kernel's text")
    column0 = kernel.location.col if rel == 0 else 1
    return line_starts[rel] + node.coord.column - column0


def _spans(kernel: Kernel, refs: list[_Ref]) -> None:
    text = kernel.expanded
    line_starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"]
    tokens = tokenize(text)
    at = {t.start: k for k, t in enumerate(tokens)}
    for r in refs:
        start = _offset(kernel, line_starts, r.node)
        k = at.get(start)
        if k is None or tokens[k].text != r.base:
            raise NotInstrumentable(f"reference '{r.base}' at {r.node.coord} is not at its "
                                    "place in the preprocessed text (macro-generated code?)")
        k += 1
        for _ in range(r.levels):
            if k >= len(tokens) or tokens[k].text != "[":
                raise NotInstrumentable(f"subscript of '{r.base}' at {r.node.coord} not found")
            k = matching(tokens, k) + 1
        r.start, r.end = start, tokens[k - 1].end


def _rewrite(text: str, start: int, end: int, refs: list[_Ref], calls: dict[int, str]) -> str:
    """text[start:end] with the references inside it (sorted by start) wrapped."""
    out, pos, k = [], start, 0
    while k < len(refs):
        r = refs[k]
        inner = [q for q in refs[k + 1:] if q.start < r.end]
        out.append(text[pos:r.start])
        out.append(f"(*{calls[id(r)]}&{_rewrite(text, r.start, r.end, inner, calls)}))")
        pos, k = r.end, k + 1 + len(inner)
    out.append(text[pos:end])
    return "".join(out)


def instrument(ka: KernelAnalysis, program: Program) -> Instrumented:
    """The kernel of `ka` with every global reference recorded (see the module doc)."""
    kernel = ka.kernel
    if kernel.ast is None:
        raise NotInstrumentable(f"kernel '{kernel.name}' does not parse: "
                                f"{kernel.unsupported or 'syntax error'}")
    arrays = _global_arrays(kernel, program)
    refs: list[_Ref] = []
    _references(kernel.ast.body, ("load",), arrays, refs)
    _spans(kernel, refs)
    refs.sort(key=lambda r: (r.start, -r.end))
    static = {(r.access.location.line, r.access.location.col, r.access.array,
               "load" if r.is_load else "store"): k
              for k, r in enumerate(ka.global_references)}
    sizes = cuda_dialect().type_sizes
    sites: list[Site] = []
    calls: dict[int, str] = {}
    for r in refs:
        calls[id(r)] = f"pc_trace({len(sites)}, {len(r.kinds)}, pc_dyn, {r.base}, "
        loc = Location(r.node.coord.file or kernel.location.file, r.node.coord.line,
                       r.node.coord.column)
        for kind in r.kinds:
            index = static.get((loc.line, loc.col, r.base, kind))
            access = ka.global_references[index].access if index is not None else None
            ty = arrays[r.base].replace("const ", "").strip()
            sites.append(Site(len(sites), r.base, kind, kernel.expanded[r.start:r.end], loc,
                              sizes.get(ty, 4), index, access is None or access.flat is None))
    text = kernel.expanded
    body = _offset(kernel, [0] + [k + 1 for k, c in enumerate(text) if c == "\n"],
                   kernel.ast.body)
    if text[body:body + 1] != "{":
        raise NotInstrumentable(f"the body of kernel '{kernel.name}' is not at its place in "
                                "the preprocessed text")
    counters = f" unsigned pc_dyn[{max(len(sites), 1)}] = {{0}};"
    new = (text[:body + 1] + counters + _rewrite(text, body + 1, len(text), refs, calls))
    return Instrumented(kernel.name, new, sites)
