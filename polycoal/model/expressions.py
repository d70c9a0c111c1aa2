"""Kernel expressions to polynomials and conditions to isl constraints.

`to_poly` reads an integer C expression as a polynomial over thread indices, loop
counters and parameters, or raises `NonAffine` naming what stops it (an indirect
subscript, a data-dependent value, a division). Thread indices are read raw
(`threadIdx.x` -> t_x, `blockIdx.x` -> b_x, `blockDim.x` -> the launch's constant or a
parameter); `ThreadAxes.normalize` then maps them onto the model's thread dimensions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from pycparser import c_ast

from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.limits import integer_type
from polycoal.model.integer_types import (INT, IntType, cast_type, common, expression_type,
                                          wraps)
from polycoal.model.kernel_model import is_launch_parameter
from polycoal.model.poly import Poly

_FLOATING = {"float", "double", "half", "__half", "__nv_bfloat16"}
# the model's thread variables, raw (t_x, b_x) and normalised (gx, tx, bx): never negative
_THREAD_VARIABLE = re.compile(r"(?:t_|b_|g|t|b)[xyz]")


class NonAffine(Exception):
    def __init__(self, reason: str, node: c_ast.Node | None = None):
        super().__init__(reason)
        self.reason = reason
        self.node = node


class AxisIsSplit(Exception):
    """Raised when a thread axis cannot be read as one global index."""

    def __init__(self, axis: str):
        super().__init__(axis)
        self.axis = axis


@dataclass
class ThreadAxes:
    """How each thread axis is modelled, and the launch's known extents."""

    combined: dict[str, bool]                      # axis -> one global dim (True) or two
    block: dict[str, Poly]                         # axis -> blockDim (constant or parameter)
    grid: dict[str, Poly]                          # axis -> gridDim
    used: set[str] = field(default_factory=set)    # axes the code refers to

    def normalize(self, p: Poly) -> Poly:
        """Replace raw t_a / b_a by the model's dimensions ga or (ba, ta)."""
        for axis in cuda_dialect().axes:
            t, b = f"t_{axis}", f"b_{axis}"
            if t not in p.variables and b not in p.variables:
                continue
            if self.combined.get(axis, True):
                ct, cb = p.coefficient(t), p.coefficient(b)
                if cb != ct * self.block[axis] or any(
                        m.count(t) > 1 or m.count(b) > 1 for m in p.terms):
                    raise AxisIsSplit(axis)
                p = p.without([b]).substitute({t: Poly.var(f"g{axis}")})
            else:
                p = p.substitute({t: Poly.var(f"t{axis}"), b: Poly.var(f"b{axis}")})
        return p


def builtin(node: c_ast.Node) -> tuple[str, str] | None:
    """('threadIdx', 'x') for `threadIdx.x`, else None."""
    d = cuda_dialect()
    if (isinstance(node, c_ast.StructRef) and node.type == "." and isinstance(node.name, c_ast.ID)
            and node.name.name in (d.thread_index, d.block_index, d.block_dim, d.grid_dim)
            and node.field.name in d.axes):
        return node.name.name, node.field.name
    return None


@dataclass
class Scope:
    """What names mean while reading one kernel."""

    axes: ThreadAxes
    values: dict[str, Poly]          # substitutable scalars (index variables, loop counters)
    parameters: set[str]             # int kernel arguments
    opaque: dict[str, str] = field(default_factory=dict)   # name -> why its value is unknown
    types: dict[str, str] = field(default_factory=dict)    # name -> declared C type
    # variables taken to be non-negative: the parameters the model's context so takes,
    # counters of loops counting up from a non-negative start
    nonnegative: set[str] = field(default_factory=set)
    wrapped: bool = False     # a comparison read since was unsigned with a side of either sign
    # sides of unsigned comparisons over the int arguments and the launch geometry alone
    # that may be negative (Rodinia's `threadIdx.x + ... >= Size - 1 - t`): where each is
    # not, the comparison is that of the integers, a condition a launch can check
    unsigned_sides: list[Poly] = field(default_factory=list)

    def to_poly(self, node: c_ast.Node) -> Poly:
        return self.axes.normalize(self._poly(node))

    def int_type(self, node: c_ast.Node) -> IntType | None:
        """The C type of an integer expression (integer_types.expression_type)."""
        return expression_type(node, self.types)

    def never_negative(self, p: Poly) -> bool:
        """Whether p is non-negative for every value of its variables the model allows:
        non-negative coefficients over non-negative variables."""
        return all(c >= 0 for c in p.terms.values()) and all(
            v in self.nonnegative or v not in self.types and (
                _THREAD_VARIABLE.fullmatch(v) or is_launch_parameter(v))
            for m in p.terms for v in m)

    def unknown_type(self, node: c_ast.Node) -> bool:
        """Whether an integer expression converts to, or reads a name of, an integer type
        polycoal does not know (a typedef of its own, a name declared with two types):
        its arithmetic may be unsigned."""
        if isinstance(node, c_ast.Cast):
            return (cast_type(node) is None and not _floating(node)) or \
                self.unknown_type(node.expr)
        if isinstance(node, c_ast.ID):
            ty = self.types.get(node.name)
            return ty is not None and integer_type(ty) is None and ty not in _FLOATING
        if isinstance(node, (c_ast.BinaryOp, c_ast.UnaryOp, c_ast.TernaryOp)):
            return any(self.unknown_type(child) for _, child in node.children())
        return False

    def convert(self, node: c_ast.Node, to: IntType | None) -> Poly:
        """The polynomial of `node`'s value converted to the type `to` (a declaration's
        initialiser)."""
        return self.axes.normalize(self._converted(self._poly(node), node, to, node))

    def _converted(self, p: Poly, source: c_ast.Node, to: IntType | None,
                   node: c_ast.Node) -> Poly:
        """p, the value of `source`, converted to the type `to` (None: a floating or
        unknown type): an unsigned value widened keeps its residue, which is p only
        where p >= 0 (integer_types)."""
        if wraps(self.int_type(source), to) and not self.never_negative(p):
            raise NonAffine("an unsigned value that may be negative converted to a wider "
                            "type (it wraps)", node)
        return p

    def _poly(self, node: c_ast.Node) -> Poly:
        d = cuda_dialect()
        if isinstance(node, c_ast.Constant):
            if node.type in ("int", "long", "unsigned int", "unsigned long", "long long",
                             "unsigned long long") or node.type.endswith("int"):
                text = node.value.rstrip("uUlL")
                return Poly.const(int(text, 0) if not (len(text) > 1 and text[0] == "0"
                                                       and text[1].isdigit()) else int(text, 8))
            raise NonAffine(f"non-integer constant {node.value}", node)
        if isinstance(node, c_ast.ID):
            if node.name in self.values:
                return self.values[node.name]
            if node.name in self.parameters:
                return Poly.var(node.name)
            if node.name == "warpSize":
                return Poly.const(d.warp_size)
            why = self.opaque.get(node.name, f"'{node.name}' is not an affine index")
            raise NonAffine(why, node)
        b = builtin(node)
        if b:
            which, axis = b
            self.axes.used.add(axis)
            if which == d.thread_index:
                return Poly.var(f"t_{axis}")
            if which == d.block_index:
                return Poly.var(f"b_{axis}")
            if which == d.block_dim:
                return self.axes.block[axis]
            return self.axes.grid[axis]
        if isinstance(node, c_ast.Cast):
            to = cast_type(node)
            if to is None and _floating(node):
                raise NonAffine("a floating-point conversion in an index", node)
            if to is not None and to[0] < 32:
                raise NonAffine("a conversion to a type narrower than int (it wraps)", node)
            return self._converted(self._poly(node.expr), node.expr, to, node)
        if isinstance(node, c_ast.UnaryOp):
            if node.op == "-":
                return -self._poly(node.expr)
            if node.op == "+":
                return self._poly(node.expr)
            raise NonAffine(f"operator '{node.op}' in an index", node)
        if isinstance(node, c_ast.BinaryOp):
            if node.op in ("+", "-", "*"):
                a, b = self._operands(node)
                return a + b if node.op == "+" else a - b if node.op == "-" else a * b
            if node.op in ("/", "%", "<<", ">>"):
                a, b = self._operands(node)
                if b.is_constant() and node.op == "<<":
                    return a * (2 ** int(b.constant()))
                if a.is_constant() and b.is_constant() and b.constant() != 0:
                    x, y = int(a.constant()), int(b.constant())
                    t = self.int_type(node)
                    if t is not None and not t[1]:        # unsigned: on the residues
                        x, y = x % 2 ** t[0], y % 2 ** t[0] if node.op != ">>" else y
                    return Poly.const({"/": int(x / y), "%": x - int(x / y) * y,
                                       ">>": x >> y}[node.op])
                raise NonAffine(f"'{node.op}' of a non-constant in an index", node)
            raise NonAffine(f"operator '{node.op}' in an index", node)
        if isinstance(node, c_ast.ArrayRef):
            raise NonAffine("indirect subscript (an index read from memory)", node)
        if isinstance(node, c_ast.FuncCall):
            raise NonAffine("function call in an index", node)
        if isinstance(node, c_ast.TernaryOp):
            raise NonAffine("conditional expression in an index", node)
        raise NonAffine(f"{type(node).__name__} in an index", node)

    def _operands(self, node: c_ast.BinaryOp) -> tuple[Poly, Poly]:
        """The polynomials of a binary operation's operands, each converted to the
        operation's type (an unsigned operand widened must be non-negative)."""
        t = self.int_type(node) if node.op not in ("<<", ">>") else None
        out = []
        for operand in (node.left, node.right):
            p = self._poly(operand)
            if t is not None:
                p = self._converted(p, operand, t, node)
            out.append(p)
        return out[0], out[1]

    # conditions -------------------------------------------------------------
    def condition(self, node: c_ast.Node, negate: bool = False) -> str:
        """isl text of an affine condition (a disjunction of conjunctions)."""
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            return self.condition(node.expr, not negate)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            a = self.condition(node.left, negate)
            b = self.condition(node.right, negate)
            conj = (node.op == "&&") != negate
            return f"(({a}) {'and' if conj else 'or'} ({b}))"
        if isinstance(node, c_ast.BinaryOp) and node.op in ("<", "<=", ">", ">=", "==", "!="):
            op = node.op
            if negate:
                op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[op]
            if self.unknown_type(node.left) or self.unknown_type(node.right):
                raise NonAffine("a comparison of an integer type polycoal does not know "
                                "(its arithmetic may be unsigned)", node)
            t = common(*(self.int_type(n) or INT for n in (node.left, node.right)))
            for side in (node.left, node.right):       # each converted to the type t
                if wraps(self.int_type(side), t) and not self.never_negative(
                        self.to_poly(side)):
                    raise NonAffine("an unsigned value that may be negative compared in a "
                                    "wider type (it wraps)", node)
            if not t[1]:
                return self._unsigned_comparison(node, op)
            return self._comparison(node.left, op, node.right, node)
        if isinstance(node, (c_ast.ID, c_ast.Constant, c_ast.StructRef)):
            p = self.to_poly(node)
            return _atom(p, "==" if negate else "!=", Poly.const(0), node)
        raise NonAffine("data-dependent or non-affine condition", node)

    def _comparison(self, left: c_ast.Node, op: str, right: c_ast.Node,
                    node: c_ast.Node) -> str:
        """isl text of `left op right` compared as integers."""
        if self._quotient(left) and not self._quotient(right):
            left, right = right, left
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
        q = self._quotient(right)
        if q is not None and op in ("<", "<=", ">", ">="):
            return "(" + _floor_atom(self.to_poly(left), op, *q, node) + ")"
        lefts = self._bound_terms(left, "max" if op in ("<", "<=") else "min")
        rights = self._bound_terms(right, "min" if op in ("<", "<=") else "max")
        # x < min(a, b)  <=>  x < a and x < b ; with negation the op was flipped and
        # min/max swapped, so the conjunction stays a conjunction.
        return "(" + " and ".join(_atom(lhs, op, rhs, node) for lhs in lefts
                                  for rhs in rights) + ")"

    def _unsigned_comparison(self, node: c_ast.BinaryOp, op: str) -> str:
        """isl text of `node.left op node.right` compared in unsigned arithmetic. A side
        whose polynomial P is negative stands for P + 2^w, above every non-negative
        side (integer_types): with both sides of one sign the comparison is that of
        the integers; else the negative side is the greater."""
        signs = []
        for side in (node.left, node.right):
            q = self._quotient(side)
            if isinstance(side, c_ast.FuncCall) or q is not None:
                parts = [q[0]] if q is not None else [
                    self.to_poly(a) for a in (side.args.exprs if side.args else [])]
                if not parts or not all(self.never_negative(p) for p in parts):
                    raise NonAffine("an unsigned comparison with a bound that may be "
                                    "negative", node)
                signs.append(None)
                continue
            p = self.to_poly(side)
            signs.append(None if self.never_negative(p) else p)
        same = self._comparison(node.left, op, node.right, node)
        if signs == [None, None]:
            return same
        self.wrapped = True
        self.unsigned_sides += [p for p in signs if p is not None and p not in
                                self.unsigned_sides and all(
                                    v in self.parameters or is_launch_parameter(v)
                                    for m in p.terms for v in m)]
        cases = []
        for left_negative in ((False, True) if signs[0] is not None else (False,)):
            for right_negative in ((False, True) if signs[1] is not None else (False,)):
                parts = [_atom(p, "<" if negative else ">=", Poly(), node)
                         for p, negative in zip(signs, (left_negative, right_negative))
                         if p is not None]
                if left_negative == right_negative:
                    parts.append(same)
                else:          # the negative side is the greater (P + 2^w)
                    holds = op in ("!=",) or op in (("<", "<=") if right_negative
                                                    else (">", ">="))
                    parts.append("true" if holds else "false")
                cases.append("(" + " and ".join(parts) + ")")
        return "(" + " or ".join(cases) + ")"

    def _quotient(self, node: c_ast.Node) -> tuple[Poly, int] | None:
        """(e, c) for `e / c` with c a positive constant and e affine, else None."""
        if isinstance(node, c_ast.Cast):
            return self._quotient(node.expr)
        if not (isinstance(node, c_ast.BinaryOp) and node.op == "/"):
            return None
        try:
            e, c = self.to_poly(node.left), self.to_poly(node.right)
        except NonAffine:
            return None
        if not c.is_constant() or c.constant() <= 0 or not e.is_affine():
            return None
        t = self.int_type(node)
        if (t is None or not t[1]) and not self.never_negative(e) or \
                self.unknown_type(node):
            return None     # an unsigned numerator below zero divides its residue
        return e, int(c.constant())

    def _bound_terms(self, node: c_ast.Node, kind: str) -> list[Poly]:
        """`min(a, b)` on the side where it splits into a conjunction -> [a, b]."""
        if (isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID)
                and node.name.name in ("min", "max", "fminf", "fmaxf") and node.args
                and len(node.args.exprs) == 2 and node.name.name.strip("f").startswith(kind)):
            return [p for e in node.args.exprs for p in self._bound_terms(e, kind)]
        return [self.to_poly(node)]


def _floating(node: c_ast.Cast) -> bool:
    """Whether a cast converts to a floating-point type."""
    ty = node.to_type.type
    names = ty.type.names if isinstance(ty, c_ast.TypeDecl) and isinstance(
        ty.type, c_ast.IdentifierType) else []
    return any(n in _FLOATING for n in names)


def _atom(lhs: Poly, op: str, rhs: Poly, node: c_ast.Node) -> str:
    diff = lhs - rhs
    if not diff.is_affine() or not diff.is_integral():
        raise NonAffine("non-affine condition", node)
    text = diff.to_c("*")
    return {"<": f"{text} < 0", "<=": f"{text} <= 0", ">": f"{text} > 0",
            ">=": f"{text} >= 0", "==": f"{text} = 0",
            "!=": f"({text} < 0 or {text} > 0)"}[op]


def _floor_atom(x: Poly, op: str, e: Poly, c: int, node: c_ast.Node) -> str:
    """x op floor(e / c) as a linear constraint, for e >= 0 (C division truncates, which
    is floor for non-negative operands; the bound e >= 0 is added).

    x <  floor(e/c)  <=>  c*(x + 1) <= e        x <= floor(e/c)  <=>  c*x <= e
    x >  floor(e/c)  <=>  c*x > e               x >= floor(e/c)  <=>  c*(x + 1) > e
    """
    lhs = {"<": (x + 1) * c, "<=": x * c, ">": x * c, ">=": (x + 1) * c}[op]
    rel = {"<": "<=", "<=": "<=", ">": ">", ">=": ">"}[op]
    return _atom(lhs, rel, e, node) + " and " + _atom(e, ">=", Poly(), node)


def as_fraction(p: Poly) -> Fraction:
    return p.constant()
