"""Print isl AST expressions back in isl's own syntax (for checks of generated loops).

An AST loop `for (it = init; cond; it += inc)` is quasi-affine in its iterator and the
outer iterators; isl reads min, max, floor and the comparisons and connectives back, so
the set of iterations a rewritten loop runs can be compared with the loop isl built.
"""

from __future__ import annotations

import islpy as isl

_T = isl.ast_expr_op_type
_BINARY = {_T.add: "+", _T.sub: "-", _T.mul: "*", _T.eq: "=", _T.le: "<=", _T.lt: "<",
           _T.ge: ">=", _T.gt: ">", _T.and_: "and", _T.and_then: "and", _T.or_: "or",
           _T.or_else: "or", _T.pdiv_r: "mod", _T.zdiv_r: "mod"}


def expr_to_isl(e: isl.AstExpr) -> str:
    """isl text of a quasi-affine AST expression; ValueError for anything else."""
    t = e.get_type()
    if t == isl.ast_expr_type.int:
        return e.get_val().to_str()
    if t == isl.ast_expr_type.id:
        return e.get_id().name
    op = e.get_op_type()
    args = [expr_to_isl(e.get_op_arg(k)) for k in range(e.get_op_n_arg())]
    if op in _BINARY:
        return f"({args[0]} {_BINARY[op]} {args[1]})"
    if op == _T.minus:
        return f"(-{args[0]})"
    if op in (_T.min, _T.max):
        name = "min" if op == _T.min else "max"
        out = args[0]
        for a in args[1:]:
            out = f"{name}({out}, {a})"
        return out
    if op in (_T.fdiv_q, _T.pdiv_q, _T.div):
        # exact or positive-operand divisions by a constant: floor is right for all
        return f"floor(({args[0]}) / ({args[1]}))"
    raise ValueError(f"not quasi-affine: {e.to_C_str()}")
