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

from polycoal.frontend.dialect import cuda_dialect

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


def _subscript(node: c_ast.Node, pointers: set[str]) -> c_ast.Node | None:
    """The subscript `node` is, or None: `*P` and `P[k]` for a place P in a parameter's
    array (`p`, `p + e`, `&p[e]`, sums of those), and `*&X`, which is X."""
    if isinstance(node, c_ast.ArrayRef) and not isinstance(node.name, (c_ast.ID,
                                                                       c_ast.ArrayRef)):
        parts = _pointer_parts(node.name, pointers)
        if parts is None:
            return None
        base, offset = parts
        return c_ast.ArrayRef(base, _plus(offset, node.subscript, node.coord), node.coord)
    if not (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
        return None
    inner = node.expr
    if isinstance(inner, c_ast.UnaryOp) and inner.op == "&":
        return inner.expr
    parts = _pointer_parts(inner, pointers)
    if parts is None:
        return None
    base, offset = parts
    return c_ast.ArrayRef(base, offset if offset is not None else
                          c_ast.Constant("int", "0"), node.coord)


def _plus(offset: c_ast.Node | None, more: c_ast.Node, coord) -> c_ast.Node:
    return more if offset is None else c_ast.BinaryOp("+", offset, more, coord)


def _pointer_parts(node: c_ast.Node, pointers: set[str]):
    """(parameter, offset or None) of a place in a parameter's array: `p`, `&p[e]`, and
    `P + e`, `e + P`, `P - e` of such a place P (`p + a + b` parses as `(p + a) + b`)."""
    if _is_pointer(node, pointers):
        return node, None
    if isinstance(node, c_ast.UnaryOp) and node.op == "&" and \
            isinstance(node.expr, c_ast.ArrayRef) and _is_pointer(node.expr.name, pointers):
        return node.expr.name, node.expr.subscript
    if not isinstance(node, c_ast.BinaryOp) or node.op not in ("+", "-"):
        return None
    left = _pointer_parts(node.left, pointers)
    if left is not None:
        base, offset = left
        if offset is not None:
            return base, c_ast.BinaryOp(node.op, offset, node.right, node.coord)
        return base, node.right if node.op == "+" else \
            c_ast.UnaryOp("-", node.right, node.coord)
    if node.op == "+":
        right = _pointer_parts(node.right, pointers)
        if right is not None:
            base, offset = right
            return base, _plus(offset, node.left, node.coord)
    return None


def _is_pointer(node: c_ast.Node, pointers: set[str]) -> bool:
    return isinstance(node, c_ast.ID) and node.name in pointers


# --------------------------------------------------------------- one-statement temporaries

_FLOATING = {"float", "double"}
# functions a call of which has no side effect (device math: grammars/cuda.toml)
PURE_FUNCTIONS = cuda_dialect().pure_functions


def forward_temporaries(funcdef: c_ast.FuncDef) -> c_ast.FuncDef:
    """`const float v = A[k]; acc += v * v;`, the way real code spells a reduction's term,
    read as `acc += ((float)(A[k])) * ((float)(A[k]));`: a floating-point temporary whose
    value is used only by the next statement (an assignment), never assigned again, and
    computed without side effects is replaced by its value converted to its type, so
    that the statement is an update of one element (the reduction forms need that).
    Nothing between its definition and its use can change what it read: the next
    statement evaluates its right-hand side before it stores."""
    assigned = assigned_names(funcdef.body)

    class Blocks(c_ast.NodeVisitor):
        def visit_Compound(self, node):
            _forward_in_block(node, assigned)
            self.generic_visit(node)
    Blocks().visit(funcdef.body)
    return funcdef


def _forward_in_block(block: c_ast.Compound, assigned: set[str]) -> None:
    items = block.block_items or []
    k = 0
    while k + 1 < len(items):
        decl, following = items[k], items[k + 1]
        if _temporary(decl, assigned) and isinstance(following, c_ast.Assignment) and \
                _uses(decl.name, following.rvalue) and not _uses(decl.name, following.lvalue) \
                and not any(_uses(decl.name, later) for later in items[k + 2:]):
            value = c_ast.Cast(c_ast.Typename(None, [], None, c_ast.TypeDecl(
                None, [], None, c_ast.IdentifierType(list(decl.type.type.names)))),
                decl.init, decl.coord)
            _substitute(following, decl.name, value)
            del items[k]
            continue
        k += 1


def _temporary(node: c_ast.Node, assigned: set[str]) -> bool:
    return (isinstance(node, c_ast.Decl) and node.init is not None and
            isinstance(node.type, c_ast.TypeDecl) and
            isinstance(node.type.type, c_ast.IdentifierType) and
            set(node.type.type.names) & _FLOATING and node.name not in assigned and
            _pure(node.init))


def _pure(node: c_ast.Node) -> bool:
    if isinstance(node, c_ast.Assignment) or (isinstance(node, c_ast.UnaryOp) and
                                              node.op in ("++", "--", "p++", "p--")):
        return False
    if isinstance(node, c_ast.FuncCall) and not (
            isinstance(node.name, c_ast.ID) and node.name.name in PURE_FUNCTIONS):
        return False
    return all(_pure(child) for _, child in node.children())


def walk(node: c_ast.Node):
    """`node` and every node below it, depth first."""
    yield node
    for _, child in node.children():
        yield from walk(child)


def single_statement(stmt: c_ast.Node | None) -> c_ast.Node | None:
    """The statement of a block of one (`{ x = e; }`), else `stmt` itself."""
    if isinstance(stmt, c_ast.Compound) and stmt.block_items and len(stmt.block_items) == 1:
        return stmt.block_items[0]
    return stmt


def assigned_names(node: c_ast.Node) -> set[str]:
    """Names assigned, incremented or whose address is taken anywhere in `node` (the
    declarations' own initialisations aside)."""
    out = set()

    class Writes(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            if isinstance(n.lvalue, c_ast.ID):
                out.add(n.lvalue.name)
            self.generic_visit(n)

        def visit_UnaryOp(self, n):
            if n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.expr, c_ast.ID):
                out.add(n.expr.name)
            self.generic_visit(n)
    Writes().visit(node)
    return out


def _uses(name: str, node: c_ast.Node | None) -> bool:
    if node is None:
        return False
    if isinstance(node, c_ast.ID):
        return node.name == name
    if isinstance(node, c_ast.StructRef):
        return _uses(name, node.name)
    return any(_uses(name, child) for _, child in node.children())


def _substitute(node: c_ast.Node, name: str, value: c_ast.Node) -> None:
    import copy
    for slot, child in node.children():
        if isinstance(child, c_ast.ID) and child.name == name:
            _put(node, slot, copy.deepcopy(value))
        elif isinstance(child, c_ast.StructRef):
            _substitute_struct_base(child, name, value)
        else:
            _substitute(child, name, value)


def _substitute_struct_base(node: c_ast.StructRef, name: str, value: c_ast.Node) -> None:
    import copy
    if isinstance(node.name, c_ast.ID) and node.name.name == name:
        node.name = copy.deepcopy(value)
    else:
        _substitute(node.name, name, value)
