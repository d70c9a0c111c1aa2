"""Normalisation of a parsed kernel within the C subset: accesses written as pointer
arithmetic become subscripts, so the model reads them as array references.

`*(p + e)`, `*(e + p)` and `*p` on a pointer parameter `p` are `p[e]`, `p[e]` and `p[0]`
by the definition of the subscript (C11 6.5.2.1: `E1[E2]` is `*((E1)+(E2))`), and
`*(p - e)` is `p[-(e)]`. Only a parameter's pointer is taken as the base: a local
pointer may have been moved, and what it points to is not known here.
"""

from __future__ import annotations

import re

from pycparser import c_ast

_SLOT = re.compile(r"^(\w+)(?:\[(\d+)\])?$")


def subscripts_for_dereferences(funcdef: c_ast.FuncDef, pointers: set[str]) -> c_ast.FuncDef:
    """`funcdef` with its dereferences of the `pointers` (parameters) as subscripts,
    rewritten in place (the tree is the caller's, fresh from the parser)."""
    _rewrite(funcdef.body, pointers)
    return funcdef


def _rewrite(node: c_ast.Node, pointers: set[str]) -> None:
    for slot, child in node.children():
        new = _subscript(child, pointers)
        if new is not None:
            _put(node, slot, new)
            child = new
        _rewrite(child, pointers)


def _put(node: c_ast.Node, slot: str, value: c_ast.Node) -> None:
    name, index = _SLOT.match(slot).groups()
    if index is None:
        setattr(node, name, value)
    else:
        getattr(node, name)[int(index)] = value


def _subscript(node: c_ast.Node, pointers: set[str]) -> c_ast.ArrayRef | None:
    if not (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
        return None
    inner = node.expr
    if isinstance(inner, c_ast.ID) and inner.name in pointers:
        return c_ast.ArrayRef(inner, c_ast.Constant("int", "0"), node.coord)
    if not isinstance(inner, c_ast.BinaryOp) or inner.op not in ("+", "-"):
        return None
    base, offset = _split(inner, pointers)
    if base is None:
        return None
    return c_ast.ArrayRef(base, offset, node.coord)


def _split(sum_: c_ast.BinaryOp, pointers: set[str]):
    """(pointer, offset) of `p + e`, `e + p`, `p - e`, and of a left-nested sum whose
    first term is the pointer (`p + a + b` parses as `(p + a) + b`)."""
    left, right = sum_.left, sum_.right
    if _is_pointer(left, pointers):
        if sum_.op == "-":
            return left, c_ast.UnaryOp("-", right, sum_.coord)
        return left, right
    if sum_.op == "+" and _is_pointer(right, pointers):
        return right, left
    if isinstance(left, c_ast.BinaryOp) and left.op in ("+", "-"):
        base, offset = _split(left, pointers)
        if base is not None:
            return base, c_ast.BinaryOp(sum_.op, offset, right, sum_.coord)
    return None, None


def _is_pointer(node: c_ast.Node, pointers: set[str]) -> bool:
    return isinstance(node, c_ast.ID) and node.name in pointers
