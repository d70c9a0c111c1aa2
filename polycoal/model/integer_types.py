"""C's integer types of index expressions (LP64, as on every CUDA host).

The model reads an integer expression as a polynomial P over the integers. In a signed
type, where nothing overflows, the expression's value is P. In an unsigned type of w
bits it is P mod 2^w: P where P >= 0, P + 2^w where P < 0 (for -2^w <= P < 2^w), as a
thread index gives it (`threadIdx.x - 1` is 4294967295 in thread 0). Addition,
subtraction and multiplication commute with the reduction mod 2^w, so P stays the
expression's polynomial; what differs is where the value is observed: a comparison made
in unsigned arithmetic, and a conversion to a wider type or a floating one (which keep
P mod 2^w, not P). `expression_type` gives an expression's (bits, signed) by C's rules,
the integer promotions and the usual arithmetic conversions, so that the model and the
printer of new code can see those places.
"""

from __future__ import annotations

from typing import Mapping

from pycparser import c_ast

from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.limits import integer_type, type_name

IntType = tuple[int, bool]          # (bits, signed)
INT: IntType = (32, True)


def promote(t: IntType) -> IntType:
    """The integer promotions: every narrower type's values fit in int."""
    return INT if t[0] < 32 else t


def common(a: IntType, b: IntType) -> IntType:
    """The usual arithmetic conversions of two (promoted) integer types."""
    a, b = promote(a), promote(b)
    if a[1] == b[1]:
        return (max(a[0], b[0]), a[1])
    unsigned, signed = (a, b) if not a[1] else (b, a)
    return (unsigned[0], False) if unsigned[0] >= signed[0] else signed


def constant_type(value: str) -> IntType | None:
    """An integer literal's type (C11 6.4.4.1): its suffix, then the first type of its
    list that holds its value; None for anything but an integer literal."""
    text = value.lower()
    digits = text.rstrip("ul")
    suffix = text[len(digits):]
    try:
        n = int(digits, 0) if not (len(digits) > 1 and digits[0] == "0"
                                   and digits[1].isdigit()) else int(digits, 8)
    except ValueError:
        return None
    decimal = not digits.startswith("0") or digits == "0"
    unsigned, wide = "u" in suffix, "l" in suffix
    candidates = [(32, True), (32, False), (64, True), (64, False)]
    if unsigned:
        candidates = [t for t in candidates if not t[1]]
    elif decimal:
        candidates = [t for t in candidates if t[1]]
    if wide:
        candidates = [t for t in candidates if t[0] == 64]
    for bits, signed in candidates:
        if n < 2 ** (bits - 1 if signed else bits):
            return (bits, signed)
    return (64, False)


def cast_type(node: c_ast.Cast) -> IntType | None:
    """The integer type a cast converts to, None for any other type."""
    ty = node.to_type.type
    if not isinstance(ty, c_ast.TypeDecl) or not isinstance(ty.type, c_ast.IdentifierType):
        return None
    return integer_type(type_name(" ".join(ty.type.names)))


def expression_type(node: c_ast.Node, names: Mapping[str, str]) -> IntType | None:
    """(bits, signed) of an integer expression; `names`: declared types of the names it
    reads (a name not there is taken to be an int). None for a floating or unknown
    value."""
    d = cuda_dialect()
    if isinstance(node, c_ast.Constant):
        if node.type == "char":
            return INT
        return constant_type(node.value) if node.type != "float" and \
            node.type != "double" else None
    if isinstance(node, c_ast.ID):
        if node.name not in names:
            return INT
        return integer_type(names[node.name])
    if isinstance(node, c_ast.StructRef):
        if isinstance(node.name, c_ast.ID) and node.name.name in (
                d.thread_index, d.block_index, d.block_dim, d.grid_dim):
            return (32, False)
        return None
    if isinstance(node, c_ast.Cast):
        return cast_type(node)
    if isinstance(node, c_ast.UnaryOp):
        if node.op == "sizeof":
            return (64, False)
        if node.op in ("!",):
            return INT
        inner = expression_type(node.expr, names)
        return None if inner is None else promote(inner) if node.op in "-+~" else inner
    if isinstance(node, c_ast.BinaryOp):
        if node.op in ("<", "<=", ">", ">=", "==", "!=", "&&", "||"):
            return INT
        left = expression_type(node.left, names)
        if node.op in ("<<", ">>"):
            return None if left is None else promote(left)
        right = expression_type(node.right, names)
        return None if left is None or right is None else common(left, right)
    if isinstance(node, c_ast.TernaryOp):
        a, b = (expression_type(n, names) for n in (node.iftrue, node.iffalse))
        return None if a is None or b is None else common(a, b)
    if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID) and \
            node.name.name in ("min", "max") and node.args and len(node.args.exprs) == 2:
        a, b = (expression_type(n, names) for n in node.args.exprs)
        return None if a is None or b is None else common(a, b)
    return None


def wraps(t: IntType | None, to: IntType | None) -> bool:
    """Whether converting a value of unsigned type `t` to `to` (an integer type, or a
    floating one: None) keeps P mod 2^bits where P, read as a signed polynomial, may
    differ: a wider type, or a floating one."""
    return t is not None and not t[1] and (to is None or to[0] > t[0])
