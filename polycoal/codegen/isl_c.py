"""Print isl AST expressions as plain C, valid in host and device code.

isl's own printer uses `min`, `max` and `floord`, which CUDA host code may lack; here
they become conditional expressions. Every operand is parenthesised where precedence
could matter.
"""

from __future__ import annotations

import islpy as isl

_T = isl.ast_expr_op_type
_BINARY = {_T.add: "+", _T.sub: "-", _T.mul: "*", _T.div: "/", _T.pdiv_q: "/",
           _T.pdiv_r: "%", _T.zdiv_r: "%", _T.eq: "==", _T.le: "<=", _T.lt: "<",
           _T.ge: ">=", _T.gt: ">", _T.and_: "&&", _T.and_then: "&&", _T.or_: "||",
           _T.or_else: "||"}


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
    if op in (_T.min, _T.max) and device:
        out = args[0]
        for a in args[1:]:
            out = f"{'min' if op == _T.min else 'max'}({out}, {a})"
        return out
    if op in (_T.min, _T.max):
        out = args[0]
        cmp = "<" if op == _T.min else ">"
        for a in args[1:]:
            out = f"(({out}) {cmp} ({a}) ? ({out}) : ({a}))"
        return out
    if op == _T.fdiv_q:      # floor division by a positive constant
        a, b = args
        return f"(({a}) >= 0 ? ({a}) / ({b}) : -((-({a}) + ({b}) - 1) / ({b})))"
    if op in (_T.cond, _T.select):
        return f"(({args[0]}) ? ({args[1]}) : ({args[2]}))"
    if op == _T.call:
        return f"{args[0]}({', '.join(args[1:])})"
    raise ValueError(f"unsupported isl expression {e.to_C_str()}")
