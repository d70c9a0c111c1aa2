"""Print isl AST expressions as plain C, valid in host and device code.

isl's own printer uses `min`, `max` and `floord`, which CUDA host code may lack; here
they become conditional expressions. Every operand is parenthesised where precedence
could matter.

Types: CUDA's device `min`/`max` are overloaded for every integer type, and a call
with operands of two types (an int size and a long long launch extent) matches several
overloads, which nvcc rejects. Every min/max polycoal emits therefore has long long
operands (`min_max`), and the callers give parameters of unsigned or unknown type
(size_t n, where `n - 1` wraps at 0) as `(long long)n` (`wide_parameters`), so that
bounds and guards compute with integers, as the model does.
"""

from __future__ import annotations

import re

import islpy as isl

_T = isl.ast_expr_op_type
_BINARY = {_T.add: "+", _T.sub: "-", _T.mul: "*", _T.div: "/", _T.pdiv_q: "/",
           _T.pdiv_r: "%", _T.zdiv_r: "%", _T.eq: "==", _T.le: "<=", _T.lt: "<",
           _T.ge: ">=", _T.gt: ">", _T.and_: "&&", _T.and_then: "&&", _T.or_: "||",
           _T.or_else: "||"}


_SIGNED = {"int", "signed", "signed int", "long", "long int", "signed long", "long long",
           "long long int", "signed long long", "short", "short int", "int8_t", "int16_t",
           "int32_t", "int64_t", "ptrdiff_t", "long long signed"}


def wide_parameters(parameters) -> dict[str, str]:
    """name -> `((long long)name)` for every scalar kernel parameter whose type is not a
    known signed integer type (a rename map for `expr_to_c`, see the module's note)."""
    return {p.name: f"((long long){p.name})" for p in parameters
            if not p.is_pointer and p.type not in _SIGNED}


def rename_c(text: str, names: dict[str, str]) -> str:
    """C text with every identifier in `names` replaced as it says."""
    if not names:
        return text
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: names.get(m.group(0), m.group(0)), text)


def min_max(op: str, items: list[str], device: bool) -> str:
    """min or max (`op`) of C expressions: nested calls with long long operands on the
    device (the front end reads them back as bounds), conditional expressions on the
    host."""
    if len(items) == 1:
        return items[0]
    if device:
        out = f"(long long)({items[0]})"
        for item in items[1:]:
            out = f"{op}({out}, (long long)({item}))"
        return out
    out = items[0]
    cmp = "<" if op == "min" else ">"
    for item in items[1:]:
        out = f"(({out}) {cmp} ({item}) ? ({out}) : ({item}))"
    return out


def expr_to_c(e: isl.AstExpr, rename: dict[str, str] | None = None,
              device: bool = False) -> str:
    """C text of `e`. With `device`, min and max stay calls (CUDA's integer min/max),
    which the front end reads back as affine bounds."""
    rename = rename or {}
    t = e.get_type()
    if t == isl.ast_expr_type.int:
        return e.get_val().to_str()
    if t == isl.ast_expr_type.id:
        name = e.get_id().name
        return rename.get(name, name)
    op = e.get_op_type()
    args = [expr_to_c(e.get_op_arg(k), rename, device) for k in range(e.get_op_n_arg())]
    if op in _BINARY:
        return f"({args[0]} {_BINARY[op]} {args[1]})"
    if op == _T.minus:
        return f"(-{args[0]})"
    if op in (_T.min, _T.max):
        return min_max("min" if op == _T.min else "max", args, device)
    if op == _T.fdiv_q:      # floor division by a positive constant
        a, b = args
        return f"(({a}) >= 0 ? ({a}) / ({b}) : -((-({a}) + ({b}) - 1) / ({b})))"
    if op in (_T.cond, _T.select):
        return f"(({args[0]}) ? ({args[1]}) : ({args[2]}))"
    if op == _T.call:
        return f"{args[0]}({', '.join(args[1:])})"
    raise ValueError(f"unsupported isl expression {e.to_C_str()}")


def condition_to_c(condition: isl.Set, rename: dict[str, str] | None = None) -> str:
    """C text of a condition on the parameters (a parameter set), for host code."""
    build = isl.AstBuild.from_context(isl.Set.universe(condition.get_space()))
    return expr_to_c(build.expr_from_set(condition), rename)


def pw_aff_to_c(value: isl.PwAff, rename: dict[str, str] | None = None) -> str:
    """C text of a piecewise affine value of the parameters, for host code."""
    build = isl.AstBuild.from_context(isl.Set.universe(value.get_domain_space()))
    return expr_to_c(build.expr_from_pw_aff(value), rename)
