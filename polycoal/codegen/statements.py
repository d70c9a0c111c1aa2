"""Regenerate a statement's C text for new loop and thread indices.

Every integer index expression of the statement (a subscript, an index used as a value)
is read as a polynomial over the model's dimensions, exactly as the model read it, and
printed again with each dimension replaced by its expression in the new code. Casts are
kept (their operand is rewritten), so the arithmetic types of the original are kept.
"""

from __future__ import annotations

from pycparser import c_ast, c_generator

from polycoal.frontend.program import Kernel
from polycoal.model.expressions import AxisIsSplit, NonAffine, Scope
from polycoal.model.kernel_model import KernelModel, Statement
from polycoal.model.poly import Poly

_INDEX_NODES = (c_ast.ID, c_ast.StructRef, c_ast.BinaryOp, c_ast.UnaryOp)


def poly_to_c(p: Poly, names: dict[str, str]) -> str:
    """C text of an integral polynomial, with variables renamed through `names`."""
    if not p.terms:
        return "0"
    parts = []
    for m in sorted(p.terms, key=lambda m: (-len(m), m)):
        c = p.terms[m]
        if c.denominator != 1:
            raise ValueError(f"non-integral coefficient in {p}")
        factors = [names.get(v, v) for v in m]
        factors = [f if f.replace("_", "").isalnum() else f"({f})" for f in factors]
        body = " * ".join(factors)
        mag = abs(int(c))
        text = body if body and mag == 1 else (f"{mag} * {body}" if body else str(mag))
        parts.append((" - " if c < 0 else " + ") + text)
    s = "".join(parts)
    return s[3:] if s.startswith(" + ") else "-" + s[3:]


class _Renderer(c_generator.CGenerator):
    def __init__(self, scope: Scope, names: dict[str, str]):
        super().__init__()
        self.scope = scope
        self.names = names
        self.used: set[str] = set()

    def visit(self, node):
        if isinstance(node, _INDEX_NODES) and not (isinstance(node, c_ast.UnaryOp)
                                                   and node.op in ("sizeof", "&", "*")):
            try:
                p = self.scope.to_poly(node)
            except (NonAffine, AxisIsSplit, ValueError):
                p = None
            if p is not None and p.variables:
                self.used |= p.variables
                return "(" + poly_to_c(p, self.names) + ")"
        return super().visit(node)


def render_statement(model: KernelModel, kernel: Kernel, s: Statement,
                     names: dict[str, str]) -> tuple[str, set[str]]:
    """(C statement text, model variables it uses) with dims renamed via `names`."""
    params = {p.name for p in kernel.parameters if not p.is_pointer}
    scope = Scope(model.axes, dict(s.bindings), params)
    r = _Renderer(scope, names)
    text = r.visit(s.node)
    return text, r.used


def render_accumulation(model: KernelModel, kernel: Kernel, s: Statement,
                        names: dict[str, str]) -> tuple[str, str, str] | None:
    """For an update `X[f] op= e` (or `X[f] = X[f] op e`): (X[f], op, e) rendered, else None."""
    node = s.node
    params = {p.name for p in kernel.parameters if not p.is_pointer}
    r = _Renderer(Scope(model.axes, dict(s.bindings), params), names)
    if isinstance(node, c_ast.Assignment) and node.op in ("+=", "*=") and \
            isinstance(node.lvalue, c_ast.ArrayRef):
        return r.visit(node.lvalue), node.op[0], r.visit(node.rvalue)
    if isinstance(node, c_ast.Assignment) and node.op == "=" and \
            isinstance(node.lvalue, c_ast.ArrayRef) and isinstance(node.rvalue, c_ast.BinaryOp) \
            and node.rvalue.op in ("+", "*"):
        target = c_generator.CGenerator().visit(node.lvalue)
        left = c_generator.CGenerator().visit(node.rvalue.left)
        if left == target:
            return r.visit(node.lvalue), node.rvalue.op, r.visit(node.rvalue.right)
    return None
