"""The ILP solver: HiGHS through pulp (installs from PyPI on every Python polycoal
supports; pulp 4 bundles no solver, pulp 3 bundles CBC, which is the fallback)."""

from __future__ import annotations

import pulp


def solver() -> pulp.LpSolver:
    highs = pulp.HiGHS(msg=False)
    if highs.available():
        return highs
    cbc = pulp.PULP_CBC_CMD(msg=False)
    if cbc.available():
        return cbc
    raise RuntimeError("no ILP solver: install highspy (pip install highspy)")


def solve(problem: pulp.LpProblem) -> None:
    problem.solve(solver())
    if pulp.LpStatus[problem.status] != "Optimal":
        raise RuntimeError(f"ILP {problem.name}: {pulp.LpStatus[problem.status]}")


def problem_text(problem: pulp.LpProblem) -> str:
    """The problem in LP format, for --dump-ilp."""
    lines = [f"minimize {problem.objective}"]
    for name, c in problem.constraints.items():
        lines.append(f"  {name}: {c}")
    return "\n".join(lines)
