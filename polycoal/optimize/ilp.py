"""The ILP layer: pulp with the HiGHS solver (highspy, from PyPI on every Python polycoal
supports: pulp 4 bundles no solver, pulp 3 bundles CBC, kept as a fallback).

pulp 3 and pulp 4 differ in how variables are made, how constraints are listed and
what `solve` returns; this module hides the difference behind four functions.

The solver must print nothing: polycoal's standard output may be the program it writes
(`transform` with the default `-o -`). pulp's `msg=False` sets HiGHS's `output_flag`
off, which silences the solve, but highspy prints its banner ("Running HiGHS ...") from
the constructor of the first `Highs` object of the process, before any option can be
set. So every solve also runs with file descriptor 1 pointed at /dev/null (see
`stdout_silenced`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile

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


def _flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (what a native solver printf'd and the C
    library still holds), so that it goes where file descriptor 1 points now."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def _flush_python_stdout() -> None:
    try:
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):     # no stdout, or a closed one
        pass


def _sink() -> int:
    """A descriptor that swallows output: /dev/null, or an unlinked temporary file where
    /dev/null cannot be opened (a container without it)."""
    try:
        return os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return os.dup(tempfile.TemporaryFile().fileno())


@contextlib.contextmanager
def stdout_silenced():
    """Run the body with file descriptor 1 on /dev/null, whatever native code in it
    prints; Python's and the C library's buffers are flushed on both sides so that
    output written before stays and output written inside never leaks out later. When
    descriptor 1 cannot be saved (closed), the body runs as it is."""
    _flush_python_stdout()
    _flush_c_stdio()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    try:
        sink = _sink()
        try:
            os.dup2(sink, 1)
        finally:
            os.close(sink)
        yield
    finally:
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)


def solve(prob: pulp.LpProblem) -> None:
    with stdout_silenced():
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
