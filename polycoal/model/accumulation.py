"""Which statements update one value with an operator: `X = X op e`, in every spelling.

A reduction is read from the statement's syntax once, here, and both the model (which
marks the statement's update operator for dependence and reduction analysis) and code
generation (which splits, promotes or reassociates the update) use this reading, so the
two cannot disagree about what a statement does.

The spellings, for X an array element or a scalar, e an expression without X:

    X += e    X -= e    X *= e    X /= e    X |= e    X &= e    X ^= e    X++  X--
    X = X + e    X = e + X    X = X - e    X = X * e    X = e * X    X = X / e
    X = min(X, e)   fminf, fmaxf, fmin, fmax, max, either argument order
    X = (e < X) ? e : X   and the other comparisons and orders of a ternary min/max

`op` is the combining operator (+, *, min, max, |, &, ^); `inverse` marks X -= e and
X /= e (X = X - e, X = X / e), whose contributions combine with + (*) and are then
subtracted (divided): X - e1 - e2 = X - (e1 + e2) up to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast, c_generator

_COMPOUND = {"+=": ("+", False), "-=": ("+", True), "*=": ("*", False), "/=": ("*", True),
             "|=": ("|", False), "&=": ("&", False), "^=": ("^", False)}
_COMMUTATIVE = {"+", "*", "|", "&", "^"}
_INTEGERS = {"int", "unsigned", "unsigned int", "long", "unsigned long", "long long",
             "unsigned long long", "short", "unsigned short", "char", "unsigned char",
             "signed char", "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t"}
_MIN_MAX = {"min": "min", "fminf": "min", "fmin": "min", "max": "max", "fmaxf": "max",
            "fmax": "max"}


@dataclass(frozen=True)
class Accumulation:
    target: c_ast.Node           # X: an ArrayRef or an ID
    op: str                      # the combining operator
    value: c_ast.Node            # e (a constant 1 for ++ and --)
    inverse: bool = False        # X -= e, X /= e

    def reassociable(self, element_type: str) -> bool:
        """Whether partial results of the update may be combined in another order: sums
        (rounding aside; subtraction as the sum of what is subtracted), and products of
        integers. Floating-point products are not: a partial product can overflow to inf
        or underflow to 0 where the original order does not. Nor is division."""
        if self.op == "+":
            return True
        return self.op == "*" and not self.inverse and element_type in _INTEGERS


def text(node: c_ast.Node) -> str:
    return c_generator.CGenerator().visit(node)


def _mentions(node: c_ast.Node, target: str) -> bool:
    if text(node) == target:
        return True
    return any(_mentions(child, target) for _, child in node.children())


def _one_side(target: str, a: c_ast.Node, b: c_ast.Node, commutative: bool):
    """The operand that is not X, when X is `a` (or `b` for a commutative operator)."""
    if text(a) == target and not _mentions(b, target):
        return b
    if commutative and text(b) == target and not _mentions(a, target):
        return a
    return None


def _ternary(target: str, r: c_ast.TernaryOp):
    """`(a < b) ? a : b` -> ("min", e) when {a, b} is {X, e}; > and >= give max."""
    cond = r.cond
    if not (isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "<=", ">", ">=")):
        return None
    left, right = text(cond.left), text(cond.right)
    chosen, other = text(r.iftrue), text(r.iffalse)
    if {left, right} != {chosen, other} or left == right or target not in (left, right):
        return None
    smaller = cond.op in ("<", "<=")
    op = "min" if (chosen == left) == smaller else "max"
    e = cond.right if left == target else cond.left
    return (op, e) if not _mentions(e, target) else None


def accumulation(node: c_ast.Node) -> Accumulation | None:
    """The update `node` performs, or None when it is not `X = X op e`."""
    if isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--"):
        if isinstance(node.expr, (c_ast.ArrayRef, c_ast.ID)):
            return Accumulation(node.expr, "+", c_ast.Constant("int", "1"),
                                inverse=node.op.endswith("--"))
        return None
    if not isinstance(node, c_ast.Assignment) or \
            not isinstance(node.lvalue, (c_ast.ArrayRef, c_ast.ID)):
        return None
    target, r = text(node.lvalue), node.rvalue
    if node.op in _COMPOUND:
        op, inverse = _COMPOUND[node.op]
        if _mentions(r, target):
            return None
        return Accumulation(node.lvalue, op, r, inverse)
    if node.op != "=":
        return None
    if isinstance(r, c_ast.BinaryOp) and r.op in _COMMUTATIVE | {"-", "/"}:
        e = _one_side(target, r.left, r.right, r.op in _COMMUTATIVE)
        if e is None:
            return None
        if r.op in ("-", "/"):
            return Accumulation(node.lvalue, "+" if r.op == "-" else "*", e, inverse=True)
        return Accumulation(node.lvalue, r.op, e)
    if isinstance(r, c_ast.FuncCall) and isinstance(r.name, c_ast.ID) and \
            r.name.name in _MIN_MAX and r.args is not None and len(r.args.exprs) == 2:
        e = _one_side(target, *r.args.exprs, commutative=True)
        return Accumulation(node.lvalue, _MIN_MAX[r.name.name], e) if e is not None else None
    if isinstance(r, c_ast.TernaryOp):
        found = _ternary(target, r)
        return Accumulation(node.lvalue, *found) if found else None
    return None
