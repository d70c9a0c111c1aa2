"""Helpers and pointers, as real kernels spell their accesses, read back as subscripts.

Two rewrites of a kernel's tree, each a rule of C itself, done before the model reads
it (the kernel's text is untouched: only a transformed kernel is regenerated from the
tree):

1. Inlining of `__device__` helpers that take pointers (`accumulate(&y[i], v)` with
   `*dst += v`; `dot_term(A + i * M, x, j)` returning `row[j] * x[j]`). A call is
   replaced by the helper's body with each parameter replaced by its argument, which is
   what the call computes when (checked here) the helper assigns none of its parameters
   and takes none of their addresses, its arguments have no side effects (a pointer
   argument is evaluated once whatever the body does with it), and none of its own
   locals has the name of a variable its arguments read (the body would capture it). A
   value parameter becomes its argument converted to the parameter's type, a returned
   value the expression converted to the return type, as the call converts them. A
   helper whose body is `return e;` is inlined wherever it is called; a void helper
   whose body has no `return` but a last one, where its call is a whole statement (as a
   block of its statements). Helpers calling helpers are inlined outermost first, up to
   a few levels.

2. Local pointers that name a place in a parameter's array (`const float *row = A +
   i * M;`, `float *out = &y[i];`): when the pointer is never assigned again nor its
   address taken, and nothing in its block after its declaration assigns a variable
   its initialiser reads (nor is such a variable's address taken anywhere), every use
   of it is the initialiser itself; the declaration goes.

What remains, `*(&y[i])`, `(A + i * M)[j]`, `*(y + i)`, becomes subscripts in
normalise.subscripts_for_dereferences.
"""

from __future__ import annotations

import copy

from pycparser import c_ast

from polycoal.frontend.normalise import assigned_names, _pure, _put, _uses

MAX_DEPTH = 4          # helpers calling helpers, inlined this many levels deep


def inline_helpers(funcdef: c_ast.FuncDef, helpers: dict[str, c_ast.FuncDef]
                   ) -> c_ast.FuncDef:
    """`funcdef` with its calls to the inlinable `helpers` (name -> definition) replaced
    by their bodies, in place."""
    usable = {name: fn for name, fn in helpers.items() if _inlinable(fn)}
    for _ in range(MAX_DEPTH):
        if not usable or not _inline_in(funcdef.body, usable):
            break
    return funcdef


def _params(fn: c_ast.FuncDef) -> list[c_ast.Decl]:
    args = fn.decl.type.args
    params = [p for p in (args.params if args else []) if isinstance(p, c_ast.Decl)]
    return params


def _is_pointer_decl(decl: c_ast.Decl) -> bool:
    return isinstance(decl.type, (c_ast.PtrDecl, c_ast.ArrayDecl))


def _returns_void(fn: c_ast.FuncDef) -> bool:
    ty = fn.decl.type.type
    return isinstance(ty, c_ast.TypeDecl) and isinstance(ty.type, c_ast.IdentifierType) \
        and ty.type.names == ["void"]


def _inlinable(fn: c_ast.FuncDef) -> bool:
    params = _params(fn)
    if fn.body is None or not any(_is_pointer_decl(p) for p in params):
        return False
    if assigned_names(fn.body) & {p.name for p in params}:
        return False
    return _expression_body(fn) is not None or _statement_body(fn) is not None


def _expression_body(fn: c_ast.FuncDef) -> c_ast.Node | None:
    items = fn.body.block_items or []
    if len(items) == 1 and isinstance(items[0], c_ast.Return) and items[0].expr is not None \
            and not _returns_void(fn):
        return items[0].expr
    return None


def _statement_body(fn: c_ast.FuncDef) -> list[c_ast.Node] | None:
    if not _returns_void(fn):
        return None
    items = list(fn.body.block_items or [])
    if items and isinstance(items[-1], c_ast.Return) and items[-1].expr is None:
        items = items[:-1]
    if any(_contains(item, c_ast.Return) for item in items):
        return None
    return items


def _contains(node: c_ast.Node, kind) -> bool:
    if isinstance(node, kind):
        return True
    return any(_contains(child, kind) for _, child in node.children())


def _locals(fn: c_ast.FuncDef) -> set[str]:
    names = set()

    class Decls(c_ast.NodeVisitor):
        def visit_Decl(self, node):
            if node.name:
                names.add(node.name)
            self.generic_visit(node)
    Decls().visit(fn.body)
    return names


def _call(node: c_ast.Node, helpers) -> tuple[c_ast.FuncDef, list[c_ast.Node]] | None:
    """(helper, arguments) when `node` is a call of one of `helpers` that may be
    inlined with these arguments."""
    if not (isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID)):
        return None
    fn = helpers.get(node.name.name)
    if fn is None:
        return None
    args = list(node.args.exprs) if node.args else []
    params = _params(fn)
    if len(args) != len(params) or not all(_pure(a) for a in args):
        return None
    captured = _locals(fn)
    if any(_uses(name, a) for name in captured for a in args):
        return None
    return fn, args


def _bound(fn: c_ast.FuncDef, args: list[c_ast.Node], body: c_ast.Node) -> c_ast.Node:
    """A copy of `body` with the parameters of `fn` replaced by `args`."""
    body = copy.deepcopy(body)
    for param, arg in zip(_params(fn), args):
        if _is_pointer_decl(param):
            value = copy.deepcopy(arg)
        else:
            value = c_ast.Cast(c_ast.Typename(None, [], None, copy.deepcopy(param.type)),
                               copy.deepcopy(arg), arg.coord)
        body = _replace_id(body, param.name, value)
    return body


def _replace_id(node: c_ast.Node, name: str, value: c_ast.Node) -> c_ast.Node:
    """`node` with the variable `name` replaced by copies of `value` (a struct's field
    of that name is not the variable)."""
    if isinstance(node, c_ast.ID) and node.name == name:
        return copy.deepcopy(value)
    if isinstance(node, c_ast.StructRef):
        node.name = _replace_id(node.name, name, value)
        return node
    for slot, child in node.children():
        new = _replace_id(child, name, value)
        if new is not child:
            _put(node, slot, new)
    return node


def _inline_in(node: c_ast.Node, helpers) -> bool:
    """Inline the calls below `node`, in place; whether any was."""
    changed = False
    for slot, child in node.children():
        found = _call(child, helpers)
        if found is not None:
            fn, args = found
            statements = _statement_body(fn)
            expression = _expression_body(fn)
            if expression is not None:
                ret = fn.decl.type.type
                value = c_ast.Cast(c_ast.Typename(None, [], None, copy.deepcopy(ret)),
                                   _bound(fn, args, expression), child.coord)
                _put(node, slot, value)
                changed = True
                continue
            if statements is not None and _statement_slot(node, slot):
                block = c_ast.Compound([_bound(fn, args, s) for s in statements], child.coord)
                _put(node, slot, block)
                changed = True
                continue
        changed |= _inline_in(child, helpers)
    return changed


_STATEMENT_SLOTS = {c_ast.Compound: "block_items", c_ast.If: ("iftrue", "iffalse"),
                    c_ast.For: "stmt", c_ast.While: "stmt", c_ast.DoWhile: "stmt",
                    c_ast.Label: "stmt", c_ast.Case: "stmts", c_ast.Default: "stmts"}


def _statement_slot(parent: c_ast.Node, slot: str) -> bool:
    """Whether the child of `parent` at `slot` is a statement (a call there is a whole
    one, not a loop's header or a condition)."""
    names = _STATEMENT_SLOTS.get(type(parent), ())
    return slot.split("[")[0] in ((names,) if isinstance(names, str) else names)


# ------------------------------------------------------------------ local pointers

def forward_pointers(funcdef: c_ast.FuncDef, pointers: set[str]) -> c_ast.FuncDef:
    """`funcdef` with its local pointers into the `pointers` (parameters) replaced by
    their initialisers (rule 2 of the module's text), in place."""
    assigned = assigned_names(funcdef.body)      # assigned, or their address taken
    declared: dict[str, int] = {}

    class Count(c_ast.NodeVisitor):
        def visit_Decl(self, node):
            declared[node.name] = declared.get(node.name, 0) + 1
            self.generic_visit(node)
    Count().visit(funcdef.body)

    addressed = _addressed(funcdef.body)

    class Blocks(c_ast.NodeVisitor):
        def visit_Compound(self, node):
            _forward_in_block(node, pointers, assigned, declared, addressed)
            self.generic_visit(node)
    Blocks().visit(funcdef.body)
    return funcdef


def _addressed(node: c_ast.Node) -> set[str]:
    """Variables whose address is taken (they may change through a pointer)."""
    if isinstance(node, c_ast.UnaryOp) and node.op == "&" and isinstance(node.expr, c_ast.ID):
        return {node.expr.name}
    return {n for _, child in node.children() for n in _addressed(child)}


def _forward_in_block(block: c_ast.Compound, pointers: set[str], assigned: set[str],
                      declared: dict[str, int], addressed: set[str]) -> None:
    items = block.block_items or []
    k = 0
    while k < len(items):
        decl = items[k]
        if isinstance(decl, c_ast.Decl) and isinstance(decl.type, c_ast.PtrDecl) and \
                decl.init is not None and decl.name not in assigned and \
                declared.get(decl.name) == 1 and _points_into(decl.init, pointers) and \
                not (assigned_names(c_ast.Compound(items[k + 1:])) &
                     _names_in(decl.init)) and not (addressed & _names_in(decl.init)):
            value = decl.init
            del items[k]
            for j in range(k, len(items)):
                items[j] = _replace_id(items[j], decl.name, value)
            continue
        k += 1


def _points_into(node: c_ast.Node, pointers: set[str]) -> bool:
    """`A`, `A + e`, `A - e`, `e + A` or `&A[e]` for a parameter A (`e` free of side
    effects)."""
    if not _pure(node):
        return False
    if isinstance(node, c_ast.ID):
        return node.name in pointers
    if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-"):
        return _points_into(node.left, pointers) or \
            (node.op == "+" and _points_into(node.right, pointers))
    if isinstance(node, c_ast.UnaryOp) and node.op == "&":
        base = node.expr
        while isinstance(base, c_ast.ArrayRef):
            base = base.name
        return isinstance(base, c_ast.ID) and base.name in pointers
    return False


def _names_in(node: c_ast.Node) -> set[str]:
    if isinstance(node, c_ast.ID):
        return {node.name}
    return {n for _, child in node.children() for n in _names_in(child)}
