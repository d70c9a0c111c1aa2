"""Polyhedral restructuring: which dimensions become the new thread axes (core paper,
section 3, Alg. 2).

The schedules considered are permutations of all dimensions of the model (thread dims
and loop counters). A solution puts at most one dimension on each new thread axis x, y,
z; the others stay sequential inside a thread, old thread dimensions outermost (they
become loops over all their original values), then the loops in their original order.

Parallelism constraints: a dimension may become a thread axis only when no dependence
relates instances with different values of it (threads are unordered), and only when it
is a real loop of every statement (not a one-time loop).

Legality: for every dependence, its first non-zero component in the original schedule is
on a dimension that stays sequential (the thread-mapped ones have distance 0), and the
sequential dimensions keep their relative order; so the first non-zero component, and
with it the sign, is the same in the new schedule. Every ILP solution therefore
preserves every dependence: this is the exact form Farkas' lemma takes for this class of
schedules, and no other constraint is needed.

Cost: the core paper's C_R = c + z + N*u for the dimension chosen as x, where c, u, z
are reference R's unit, non-unit and any stride along that dimension (N larger than the
number of references), weighted by R's execution count. Among equal costs, more thread
axes (more parallelism) are preferred, old thread dimensions first, on their own axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pulp

from polycoal.analysis.coalescing import ReferenceReport
from polycoal.analysis.dependences import Dependence, varies_along
from polycoal.analysis.work import Geometry
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel
from polycoal.model.poly import Poly
from polycoal.optimize import ilp

AXES = ("x", "y", "z")


@dataclass
class Mapping:
    axes: tuple[str, ...]            # model dims on the new x, y, z (1 to 3 of them)
    sequential: tuple[str, ...]      # the other dims, outermost first
    costs: dict[str, int]            # x-cost of each candidate dim
    parallel: tuple[str, ...]        # dims allowed on a thread axis
    ilp: str = ""                    # the problem, for --dump-ilp
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return ", ".join(f"{a} = {d}" for a, d in zip(AXES, self.axes))


def original_axes(model: KernelModel) -> tuple[str, ...]:
    """The model dims on x, y, z in the original geometry (global index form only)."""
    out = []
    for axis in AXES:
        dims = [d for d in model.thread_dims if d.axis == axis]
        if not dims:
            break
        out.append(dims[-1].name)
    return tuple(out)


def _known_extent(model: KernelModel, dim: str) -> float:
    """Number of values of `dim` when the launch's parameter values fix it, else inf."""
    extent = isl_helpers.known_extent(model, dim)
    return float("inf") if extent is None else float(extent)


def reference_cost(r: ReferenceReport, dim: str, penalty: int) -> int:
    """C_R for `dim` as the new x (c + z + N*u), from R's stride along `dim`."""
    if r.access.flat is None:
        return penalty
    stride = r.access.flat.coefficient(dim)
    if stride.is_constant():
        s = abs(stride.constant())
        return 0 if s == 0 else (2 if s == 1 else 1 + penalty)
    return 1 + penalty


def solve_mapping(model: KernelModel, deps: list[Dependence],
                  refs: list[ReferenceReport]) -> Mapping:
    thread = [d.name for d in model.thread_dims]
    one_wide = {d.name for d in model.thread_dims if d.extent == Poly.const(1)}
    # a loop counter is a candidate when it is a real loop of some statement (statements
    # outside it see a one-time loop at 0, which the dependences account for) and every
    # loop at that depth steps by one (a strided loop's instances are sparse in it)
    loops = [f"c{k}" for k in range(model.depth)
             if any(len(s.loops) > k for s in model.statements)
             and all(abs(s.loops[k].step) == 1 for s in model.statements if len(s.loops) > k)]
    candidates = [d for d in thread if d not in one_wide] + loops
    parallel = tuple(d for d in candidates if not varies_along(model, deps, d))
    narrow = {d for d in parallel if _known_extent(model, d) < 32}
    penalty = 2 * len(refs) + 1     # one non-unit stride outweighs all unit ones
    weights = {id(r): max(r.count.value or 1, 1) for r in refs}
    costs = {d: sum(reference_cost(r, d, penalty) * weights[id(r)] for r in refs)
             for d in candidates}
    old = original_axes(model)
    prob = ilp.problem("polycoal_restructure")
    p = {(a, d): ilp.binary(prob, f"p_{a}_{d}") for a in AXES for d in parallel}
    if not parallel:
        return Mapping((), tuple(thread) + tuple(loops), costs, parallel,
                       notes=["no dimension is free of dependences"])
    big = 100 * (len(parallel) + 1)
    bonus = {}
    for a in AXES:
        for d in parallel:
            b = 3 if d in thread else 1
            if d in old and old.index(d) == AXES.index(a):
                b += 1
            bonus[(a, d)] = b
    prob += (pulp.lpSum(costs[d] * big * p[("x", d)] for d in parallel)
             - pulp.lpSum(bonus[k] * v for k, v in p.items()))
    prob += pulp.lpSum(p[("x", d)] for d in parallel) == 1, "one_x"
    if len(narrow) < len(parallel):
        # fewer than 32 values cannot fill a warp's lanes: such a dim is never x
        for d in sorted(narrow):
            prob += p[("x", d)] == 0, f"narrow_{d}"
    prob += pulp.lpSum(p[("y", d)] for d in parallel) <= 1, "at_most_one_y"
    prob += pulp.lpSum(p[("z", d)] for d in parallel) <= \
        pulp.lpSum(p[("y", d)] for d in parallel), "z_needs_y"
    for d in parallel:
        prob += pulp.lpSum(p[(a, d)] for a in AXES) <= 1, f"one_axis_{d}"
    ilp.solve(prob)
    chosen = []
    for a in AXES:
        pick = [d for d in parallel if ilp.is_set(p[(a, d)])]
        if pick:
            chosen.append(pick[0])
    displaced = [d for d in thread if d not in chosen]
    sequential = tuple(displaced + [f"c{k}" for k in range(model.depth)
                                    if f"c{k}" not in chosen])
    return Mapping(tuple(chosen), sequential, costs, parallel, ilp.problem_text(prob))


def mapping_geometry(model: KernelModel, mapping: Mapping, block: tuple[int, int, int],
                     promote: bool) -> Geometry:
    """How a restructured kernel runs (for the performance model): lanes along the new
    x dim, a thread per point of the new axes (the launch computes the grid from their
    ranges), accumulators in registers where the promotion puts them there."""
    return Geometry(x=mapping.axes[0], axes=tuple(mapping.axes),
                    block_threads=math.prod(block), registers=promote)
