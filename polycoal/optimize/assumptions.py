"""Assumptions checked at run time (issue 14, after Polly's run-time checks).

A kernel may be race-free only for some values of its parameters: PolyBench/GPU's
covariance runs `for (j2 = j1; j2 < m; j2++) symmat[j1 * M + j2] = ...` with `m` a
kernel argument and `M` the row length, so that two threads write one element only when
m > M, which the program never does but polycoal cannot see. The races' parameter sets
(dependences.Race.when) are then the values to exclude: the assumption is the model's
context without them,

    A = context \\ U_races when,

kept only when it is one conjunction of constraints (a basic set: one host condition,
no disjunction) and leaves some parameter values. The kernel is analysed and
transformed under A (A joins the model's context, so dependences, the mapping,
code generation and translation validation all hold where A does), the transformed
kernel is emitted beside the original, and each launch evaluates A from its own
argument values on the host and runs the transformed kernel only where A holds.
Launch values known at compile time are already in the context: where they decide A
there is no race to begin with, or one that stays a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from polycoal.analysis.dependences import condition_text, racing_values
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel


@dataclass(frozen=True)
class Assumption:
    constraint: str          # isl text over the parameters (a context entry): `m <= 2048`
    space: tuple[str, ...]   # the model's parameters, the names `constraint` may read
    parameters: tuple[str, ...]      # those it reads

    def as_set(self) -> isl.Set:
        return isl.Set(f"[{', '.join(self.space)}] -> {{ : {self.constraint} }}")


def race_free_assumption(model: KernelModel, races) -> Assumption | None:
    """The condition on the parameters under which none of `races` happens, or None
    when one of them happens for every value or the condition is not one conjunction."""
    racing = racing_values(races)
    if racing is None:
        return None
    context = isl_helpers.context(model)
    safe = context.subtract(racing).coalesce()
    if safe.is_empty() or safe.n_basic_set() != 1:
        return None
    condition = safe.gist(context).coalesce()
    if condition.is_equal(isl.Set.universe(condition.get_space())):
        return None
    return _assumption(condition)


def _assumption(condition: isl.Set) -> Assumption:
    body = condition_text(condition)
    space = condition.get_space()
    names = tuple(space.get_dim_name(isl.dim_type.param, k)
                  for k in range(space.dim(isl.dim_type.param)))
    used = tuple(n for n in names if condition.involves_dims(
        isl.dim_type.param, names.index(n), 1))
    return Assumption(body, names, used)


def both(first: Assumption, second: Assumption) -> Assumption:
    """The conjunction of two assumptions on one model's parameters."""
    return _assumption(first.as_set().intersect(second.as_set()).coalesce())


def holds(assumption: Assumption, values: dict[str, int]) -> bool | None:
    """Whether the assumption holds at these parameter values (None when one it reads
    has no value)."""
    if any(p not in values for p in assumption.parameters):
        return None
    fixed = " and ".join(f"{p} = {values[p]}" for p in assumption.parameters)
    return not assumption.as_set().intersect(isl.Set(
        f"[{', '.join(assumption.space)}] -> {{ : {fixed} }}")).is_empty()
