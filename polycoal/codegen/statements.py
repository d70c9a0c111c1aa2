"""Regenerate a statement's C text for new loop and thread indices.

Every integer index expression of the statement (a subscript, an index used as a value)
is read as a polynomial over the model's dimensions, exactly as the model read it, and
printed again with each dimension replaced by its expression in the new code. Casts are
kept (their operand is rewritten), so the arithmetic types of the original are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast, c_generator

from polycoal.frontend.limits import integer_type
from polycoal.frontend.normalise import single_statement
from polycoal.frontend.program import Kernel
from polycoal.model.accumulation import accumulation, text
from polycoal.model.expressions import AxisIsSplit, NonAffine, Scope
from polycoal.model.extract import assumed_nonnegative
from polycoal.model.kernel_model import KernelModel, Statement
from polycoal.model.poly import Poly

_INDEX_NODES = (c_ast.ID, c_ast.StructRef, c_ast.BinaryOp, c_ast.UnaryOp)


# the C spelling of the 32-bit types (a 64-bit one has two, long and long long, which
# CUDA's overloads such as min tell apart: such an expression is printed as its parts)
_SPELLING = {(32, False): "unsigned int", (32, True): "int"}


def poly_to_c(p: Poly, names: dict[str, str], type_: str | None = None) -> str:
    """C text of an integral polynomial, with variables renamed through `names`; with
    `type_`, every term computed in that type (its first factor converted to it)."""
    if not p.terms:
        return f"({type_})0" if type_ else "0"
    parts = []
    for m in sorted(p.terms, key=lambda m: (-len(m), m)):
        c = p.terms[m]
        if c.denominator != 1:
            raise ValueError(f"non-integral coefficient in {p}")
        factors = [names.get(v, v) for v in m]
        factors = [f if f.replace("_", "").isalnum() else f"({f})" for f in factors]
        mag = abs(int(c))
        if mag != 1 or not factors:
            factors.insert(0, str(mag))
        if type_:
            factors[0] = f"({type_}){factors[0]}"
        text = " * ".join(factors)
        parts.append((" - " if c < 0 else " + ") + text)
    s = "".join(parts)
    return s[3:] if s.startswith(" + ") else "-" + s[3:]


class _Renderer(c_generator.CGenerator):
    def __init__(self, scope: Scope, names: dict[str, str]):
        super().__init__()
        self.scope = scope
        self.names = names
        self.used: set[str] = set()
        # text of a reference (or of a product holding one) -> its new text
        self.replace: dict[str, str] = {}
        # with `keep_targets`, the element an assignment stores to stays in memory (its
        # value read into a register is replaced where it is read: `a[i] -= x` is
        # printed `a[i] = reg - (x)`)
        self.keep_targets = False
        # text of an assignment's target -> the text it stores to instead (where its
        # reads print as `replace` says: a value read ahead into a register)
        self.targets: dict[str, str] = {}

    def visit(self, node):
        if self.replace and isinstance(node, (c_ast.ArrayRef, c_ast.ID, c_ast.BinaryOp)) and \
                text(node) in self.replace:
            return self.replace[text(node)]
        if isinstance(node, _INDEX_NODES) and not (isinstance(node, c_ast.UnaryOp)
                                                   and node.op in ("sizeof", "&", "*")):
            try:
                p = self.scope.to_poly(node)
                t = self.scope.int_type(node)
                if self.scope.unknown_type(node) or (
                        t is not None and t not in _SPELLING and not isinstance(node, c_ast.ID)):
                    p = None    # printed as its parts, each in its own type
            except (NonAffine, AxisIsSplit, ValueError):
                p = None
            if p is not None and p.variables:
                self.used |= p.variables
                # computed in the expression's own type: an unsigned value keeps its
                # residue where it is compared or converted; an int one does not take
                # an unsigned argument's type
                mixed = t == (32, True) and any(
                    integer_type(self.scope.types[v]) not in (None, t)
                    for v in p.variables if v in self.scope.types)
                spelling = _SPELLING.get(t) if t != (32, True) or mixed else None
                if isinstance(node, c_ast.ID) and t is not None and t not in _SPELLING:
                    # a 64-bit variable: as its declaration spells its type
                    return f"(({self.scope.types[node.name]})({poly_to_c(p, self.names)}))"
                return "(" + poly_to_c(p, self.names, spelling) + ")"
        return super().visit(node)

    def visit_Assignment(self, n: c_ast.Assignment) -> str:
        target = text(n.lvalue)
        if target in self.targets:
            stored = self.targets[target]
            if n.op == "=":
                return f"{stored} = {self.visit(n.rvalue)}"
            return f"{stored} = {self.visit(n.lvalue)} {n.op[:-1]} ({self.visit(n.rvalue)})"
        if not (self.keep_targets and target in self.replace):
            return super().visit_Assignment(n)
        saved, self.replace = self.replace, {}
        lvalue = self.visit(n.lvalue)
        self.replace = saved
        if n.op == "=":
            return f"{lvalue} = {self.visit(n.rvalue)}"
        return f"{lvalue} = {self.replace[target]} {n.op[:-1]} ({self.visit(n.rvalue)})"

    def visit_If(self, n: c_ast.If) -> str:
        """A guarded assignment (model/extract.guarded_assignments) on one line:
        `if (c) { X = e; } else { X = f; }`."""
        def branch(stmt) -> str:
            return "{ " + self.visit(single_statement(stmt)).rstrip().rstrip(";") + "; }"
        out = f"if ({self.visit(n.cond)}) {branch(n.iftrue)}"
        return out + (f" else {branch(n.iffalse)}" if n.iffalse is not None else "")


def render_statement(model: KernelModel, kernel: Kernel, s: Statement,
                     names: dict[str, str]) -> tuple[str, set[str]]:
    """(C statement text, model variables it uses) with dims renamed via `names`."""
    r = renderer(model, kernel, s, names)
    return r.visit(s.node), r.used


@dataclass(frozen=True)
class RenderedUpdate:
    """An update X = X op e (model/accumulation.py) with X and e rendered for new indices."""

    target: str
    op: str
    value: str
    inverse: bool          # X -= e, X /= e: the combined contributions are subtracted
    #                        (divided) at the end
    reassociable: bool

    @property
    def apply(self) -> str:
        """The compound assignment that adds a combined contribution to X."""
        return {"+": "-=", "*": "/="}[self.op] if self.inverse else f"{self.op}="


def render_accumulation(model: KernelModel, kernel: Kernel, s: Statement,
                        names: dict[str, str]) -> RenderedUpdate | None:
    """The statement's update (any spelling model/accumulation.py reads) rendered with
    dims renamed via `names`, or None when the statement is not an update."""
    found = accumulation(s.node)
    if found is None:
        return None
    r = renderer(model, kernel, s, names)
    element = next(a for a in s.accesses if a.kind == "write").element_type
    return RenderedUpdate(r.visit(found.target), found.op, r.visit(found.value),
                          found.inverse, found.reassociable(element))


def render_promoted(model: KernelModel, kernel: Kernel, s: Statement,
                    names: dict[str, str], register: str) -> str:
    """The statement as written, with its accumulator X replaced by `register`: the same
    operations in the same order, on a register instead of memory."""
    found = accumulation(s.node)
    r = renderer(model, kernel, s, names)
    r.replace = {text(found.target): register}
    return r.visit(s.node)


def rendered_statement(model: KernelModel, kernel: Kernel, s: Statement,
                       names: dict[str, str], others: set[str],
                       replace_with: dict[str, str] | None = None) -> str:
    """The statement as one line of C with dims renamed via `names` (and references
    as `replace_with` says), ending with `;` or `}`; ValueError where it reads one of the
    dims `others` (which new code has no variable for)."""
    r = renderer(model, kernel, s, names)
    r.replace = dict(replace_with or {})
    text = r.visit(s.node).rstrip()
    if r.used & others:
        raise ValueError(f"{s.text}: reads {', '.join(sorted(r.used & others))}")
    return text if text.endswith((";", "}")) else text + ";"


def renderer(model: KernelModel, kernel: Kernel, s: Statement,
             names: dict[str, str]) -> "_Renderer":
    """A printer of the statement's parts with dims renamed via `names` (its `replace`
    maps a reference's text to the text printed instead)."""
    params = {p.name for p in kernel.parameters if not p.is_pointer}
    return _Renderer(Scope(model.axes, dict(s.bindings), params, types=model.types,
                           nonnegative=set(assumed_nonnegative(kernel, model.signed))),
                     names)


def references(node, wanted: set[str]) -> dict[str, object]:
    """The reference nodes of a statement whose text is in `wanted`, by text."""
    found = {}

    def walk(n):
        if n is None:
            return
        if isinstance(n, c_ast.ArrayRef) and text(n) in wanted:
            found.setdefault(text(n), n)
            return
        for _, child in n.children():
            walk(child)
    walk(node)
    return found
