"""Evaluate C expressions of host code whose value is known at compile time.

Launch geometry is usually built from literals and macros (already expanded by the
preprocessor), casts and `ceil` calls: `dim3 grid((size_t)ceil((float)N / (float)block.x))`.
The expression is parsed by pycparser and evaluated with C semantics (integer division
truncates, casts to integer types truncate). Identifiers and `a.x` members are looked up
through a resolver; an unknown one makes the value unknown (None).
"""

from __future__ import annotations

from functools import lru_cache

import math
from typing import Callable

from pycparser import c_ast, c_parser

from polycoal.frontend.dialect import cuda_dialect

Value = int | float
Resolver = Callable[[str, str | None], Value | None]   # (name, member) -> value

_INTEGER_TYPES = {"int", "unsigned", "long", "short", "char", "size_t", "uint", "int32_t",
                  "uint32_t", "int64_t", "uint64_t", "signed", "ptrdiff_t"}
_FLOAT_TYPES = {"float", "double"}
_FUNCTIONS: dict[str, Callable[..., Value]] = {
    "ceil": math.ceil, "ceilf": math.ceil, "floor": math.floor, "floorf": math.floor,
    "min": min, "max": max, "std::min": min, "std::max": max, "sqrt": math.sqrt,
    "sqrtf": math.sqrt, "abs": abs, "fabs": abs, "round": round,
}


class _Unknown(Exception):
    pass


@lru_cache(maxsize=1)
def _parser() -> c_parser.CParser:
    return c_parser.CParser()      # building the tables is the costly part: once


@lru_cache(maxsize=4096)
def parse_expression(text: str) -> c_ast.Node | None:
    """pycparser AST of a C expression, or None when it does not parse as C (cached:
    callers only read the tree)."""
    cleaned = text.replace("std::", "")
    source = cuda_dialect().prelude + f"void __pc_f(void) {{ __pc_v = ({cleaned}); }}\n"
    try:
        ast = _parser().parse(source)
    except Exception:
        return None
    body = ast.ext[-1].body.block_items[0]
    return body.rvalue


def evaluate(text: str, resolve: Resolver = lambda name, member: None) -> Value | None:
    """The value of the C expression `text`, or None when it is not a constant."""
    node = parse_expression(text)
    if node is None:
        return None
    try:
        return _eval(node, resolve)
    except (_Unknown, ZeroDivisionError, ValueError, OverflowError, TypeError):
        return None


def _eval(node: c_ast.Node, resolve: Resolver) -> Value:
    if isinstance(node, c_ast.Constant):
        return _literal(node)
    if isinstance(node, c_ast.ID):
        return _lookup(resolve, node.name, None)
    if isinstance(node, c_ast.StructRef) and isinstance(node.name, c_ast.ID):
        return _lookup(resolve, node.name.name, node.field.name)
    if isinstance(node, c_ast.Cast):
        value = _eval(node.expr, resolve)
        names = set(getattr(getattr(node.to_type.type, "type", None), "names", []) or [])
        if names & _FLOAT_TYPES:
            return float(value)
        if names & _INTEGER_TYPES or names:
            return int(value)
        return value
    if isinstance(node, c_ast.UnaryOp):
        if node.op == "sizeof":
            raise _Unknown()
        unary = {"-": lambda v: -v, "+": lambda v: v, "!": lambda v: int(not v),
                 "~": lambda v: ~int(v)}
        if node.op not in unary:        # p++, --p, &x, *p: not a constant
            raise _Unknown()
        return unary[node.op](_eval(node.expr, resolve))
    if isinstance(node, c_ast.BinaryOp):
        a, b = _eval(node.left, resolve), _eval(node.right, resolve)
        return _binary(node.op, a, b)
    if isinstance(node, c_ast.TernaryOp):
        return _eval(node.iftrue if _eval(node.cond, resolve) else node.iffalse, resolve)
    if isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID):
        fn = _FUNCTIONS.get(node.name.name)
        if fn is None:
            raise _Unknown()
        args = [_eval(a, resolve) for a in (node.args.exprs if node.args else [])]
        return fn(*args)
    raise _Unknown()


def _lookup(resolve: Resolver, name: str, member: str | None) -> Value:
    value = resolve(name, member)
    if value is None:
        raise _Unknown()
    return value


def _binary(op: str, a: Value, b: Value) -> Value:
    both_int = isinstance(a, int) and isinstance(b, int)
    if op == "/":
        if both_int:
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        return a / b
    if op == "%":
        if not both_int:
            raise _Unknown()
        return int(math.fmod(a, b))
    table = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
             "<<": lambda: int(a) << int(b), ">>": lambda: int(a) >> int(b),
             "<": lambda: int(a < b), ">": lambda: int(a > b), "<=": lambda: int(a <= b),
             ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
             "&&": lambda: int(bool(a) and bool(b)), "||": lambda: int(bool(a) or bool(b)),
             "&": lambda: int(a) & int(b), "|": lambda: int(a) | int(b),
             "^": lambda: int(a) ^ int(b)}
    if op not in table:
        raise _Unknown()
    return table[op]()


def _literal(node: c_ast.Constant) -> Value:
    text = node.value.rstrip("uUlL") if node.type not in ("float", "double") else node.value
    if node.type in ("float", "double"):
        return float(text.rstrip("fFlL"))
    if node.type == "char":
        raise _Unknown()
    if node.type == "string":
        raise _Unknown()
    text = text.rstrip("uUlL")
    if text.lower().startswith("0x"):
        return int(text, 16)
    if text.lower().startswith("0b"):
        return int(text, 2)
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8)
    return int(text)
