"""The ILP layer: pulp with the HiGHS solver (highspy, from PyPI on every Python polycoal
supports: pulp 4 bundles no solver, pulp 3 bundles CBC, kept as a fallback).

pulp 3 and pulp 4 differ in how variables are made, how constraints are listed and
what `solve` returns; this module hides the difference behind four functions.
"""

from __future__ import annotations

import pulp


def solver() -> pulp.LpSolver:
    highs = pulp.HiGHS(msg=False)
    if highs.available():
        return highs
    cbc = getattr(pulp, "PULP_CBC_CMD", None)
    if cbc is not None and cbc(msg=False).available():
        return cbc(msg=False)
    raise RuntimeError("no ILP solver: install highspy (pip install highspy)")


def problem(name: str) -> pulp.LpProblem:
    return pulp.LpProblem(name, pulp.LpMinimize)


def binary(prob: pulp.LpProblem, name: str):
    return prob.add_variable(name, cat="Binary")


def solve(prob: pulp.LpProblem) -> None:
    result = prob.solve(solver())
    if hasattr(result, "has_solution"):              # pulp 4: LpSolveStats
        ok = result.has_solution and int(result.status) == 1
    else:                                            # pulp 3: a status code
        ok = pulp.LpStatus[prob.status] == "Optimal"
    if not ok:
        raise RuntimeError(f"ILP {prob.name} has no optimal solution")


def is_set(variable) -> bool:
    value = variable.value()
    return value is not None and value > 0.5


def problem_text(prob: pulp.LpProblem) -> str:
    """The problem as readable text, for --dump-ilp."""
    constraints = prob.constraints
    items = constraints() if callable(constraints) else list(constraints.values())
    lines = [f"minimize {prob.objective}"]
    for c in items:
        lines.append(f"  {c.name}: {c}")
    return "\n".join(lines)
