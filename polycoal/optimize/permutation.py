"""Geometry permutation for any kernel (core paper, section 2b).

Which original thread axis should become x? Each reference R has, per original axis o,
c_R(o) = 1 for a unit stride, u_R(o) = 1 for another non-zero stride, z_R(o) = 1 when
the axis is used at all. With a 3x3 boolean permutation matrix p (p[n][o] = 1 when
original axis o becomes new axis n, rows and columns summing to 1), the cost of R is
C_R = sum_o (c_R(o) + z_R(o) + N u_R(o)) p[x][o], N larger than the number of
references (2 * #references + 1 here, so that one non-unit stride outweighs every unit
one); the ILP minimises the sum weighted by execution counts. Only the new x is
priced; ties keep axes where they are. An axis one thread wide in the block cannot be
x (a warp would not run along it). The hardware limits are constraints: an axis
whose block extent exceeds 64 cannot become z, and one whose grid extent exceeds 65535
cannot become y or z. Where a launch's extents are known only at run time, the launch
checks them there and runs the original kernel when the permuted geometry does not fit
(or would not lay a warp along the new x). The checks are decided where the launch's
known components decide them (frontend/launches.py: `dim3 threads(BLOCK)` has y = z = 1
whatever BLOCK is): a check that always holds is not written, and a launch that can never
take the permuted copy keeps its text; a copy that no launch can take is not made.

Permuting the thread axes in the code and in the launch (block and grid together)
keeps the same threads in each block, so it is legal for every kernel that does not
depend on how threads are grouped into warps (warp intrinsics, warpSize).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulp

from polycoal.analysis.coalescing import ReferenceReport
from polycoal.optimize import ilp

AXES = ("x", "y", "z")
BLOCK_LIMITS = (1024, 1024, 64)
GRID_LIMITS = (2147483647, 65535, 65535)


@dataclass
class Permutation:
    source: dict[str, str]          # new axis -> original axis
    cost: int
    identity_cost: int
    ilp: str
    obstacle: str = ""              # why no permutation applies (then the identity)
    # a launch's geometry is known only at run time: the launch checks there that the
    # permuted geometry fits the hardware and lays warps along the new x, and runs the
    # original kernel where it does not
    guarded: bool = False
    # the axes the cost prefers as x that every launch's block holds one thread wide,
    # where some launch's block is known only in part: a copy permuted to one of them
    # could never run
    narrow: tuple[str, ...] = ()

    @property
    def is_identity(self) -> bool:
        return is_identity(self.source)

    def describe(self) -> str:
        return moved_axes(self.source)


def is_identity(source: dict[str, str]) -> bool:
    """Whether a permutation (new axis -> original axis) leaves every axis in place."""
    return all(n == o for n, o in source.items())


def moved_axes(source: dict[str, str]) -> str:
    """`x <- y, y <- x`: the axes a permutation moves ("" for the identity)."""
    return ", ".join(f"{n} <- {o}" for n, o in source.items() if n != o)


def can_be_x(original: str, blocks: list[tuple]) -> bool:
    """Whether an original axis can become x: not one thread wide in every block (a
    warp would not run along it). An extent known only at run time (None) may be
    wider: the launch checks it."""
    k = AXES.index(original)
    return any(b[k] is None or b[k] > 1 for b in blocks)


def fits(new: str, original: str, blocks: list[tuple], grids: list[tuple]) -> bool:
    """Whether the original axis' block and grid extents are within the hardware limits
    of the new axis in every launch (an extent known only at run time, None, is checked
    by the launch)."""
    k, j = AXES.index(original), AXES.index(new)
    return all(b[k] is None or b[k] <= BLOCK_LIMITS[j] for b in blocks) and \
        all(g[k] is None or g[k] <= GRID_LIMITS[j] for g in grids)


@dataclass(frozen=True)
class Limit:
    """One condition a permuted launch needs: the original launch's block or grid
    (`space`) extent along `axis` compared (`op`: ">" or "<=") with `bound`."""

    space: str
    axis: str
    op: str
    bound: int

    def text(self, block: str, grid: str) -> str:
        """The condition in C, `block` and `grid` naming the launch's dim3 values."""
        return f"{block if self.space == 'block' else grid}.{self.axis} {self.op} {self.bound}"

    def holds(self, block: tuple, grid: tuple) -> bool | None:
        """Whether it holds for a launch's components (None: known only at run time)."""
        value = (block if self.space == "block" else grid)[AXES.index(self.axis)]
        if value is None:
            return None
        return value > self.bound if self.op == ">" else value <= self.bound


def limits(source: dict[str, str]) -> list[Limit]:
    """The conditions under which a permuted launch runs: more than one thread along the
    new x, and each original extent within the limits of its new axis."""
    out = [Limit("block", source["x"], ">", 1)]
    for n, o in source.items():
        j = AXES.index(n)
        if BLOCK_LIMITS[j] < BLOCK_LIMITS[AXES.index(o)]:
            out.append(Limit("block", o, "<=", BLOCK_LIMITS[j]))
        if GRID_LIMITS[j] < GRID_LIMITS[AXES.index(o)]:
            out.append(Limit("grid", o, "<=", GRID_LIMITS[j]))
    return out


def run_time_checks(source: dict[str, str], block: str, grid: str) -> list[str]:
    """C conditions under which a permuted launch runs (`block`, `grid`: the dim3 of the
    original launch's configuration)."""
    return [limit.text(block, grid) for limit in limits(source)]


def launch_takes(source: dict[str, str], block: tuple, grid: tuple) -> bool | None:
    """Whether a launch with these components (None: known only at run time) runs the
    permuted kernel: True when every limit holds, False when one fails, None when the
    launch must check."""
    verdicts = [limit.holds(block, grid) for limit in limits(source)]
    if False in verdicts:
        return False
    return True if all(verdicts) else None


def open_checks(source: dict[str, str], block: tuple, grid: tuple, block_name: str,
                grid_name: str) -> list[str]:
    """The C conditions a launch with these components must still check at run time
    (those its known components do not decide)."""
    return [limit.text(block_name, grid_name) for limit in limits(source)
            if limit.holds(block, grid) is None]


def needs_guard(source: dict[str, str], blocks: list[tuple], grids: list[tuple]) -> bool:
    """Whether a permutation must be a copy beside the original: some launch runs it only
    where a run-time check holds, or never."""
    return not is_identity(source) and \
        any(launch_takes(source, b, g) is not True for b, g in zip(blocks, grids))


def narrow_axes(cost: dict[str, int], used: set[str], blocks: list[tuple]
                ) -> tuple[str, ...]:
    """The axes cheaper as x than x itself that the references move along (`used`: a
    known stride, unit or not) and that every launch's block holds one thread wide,
    where some block is known only in part: a copy permuted to one of them would need a
    run-time check that always fails. (An axis no reference moves along is cheap as x
    only because a warp laid along it would repeat its addresses: no reason to give.)"""
    if not any(v is None for b in blocks for v in b):
        return ()
    return tuple(o for o in AXES[1:] if o in used and cost[o] < cost["x"]
                 and not can_be_x(o, blocks))


def solve_permutation(refs: list[ReferenceReport], blocks: list[tuple],
                      grids: list[tuple]) -> Permutation:
    """The ILP's choice; the identity, with the obstacle, when no axis can be x (every
    block one thread wide along every axis, `<<<1, 1>>>`: there is no warp to lay
    along any axis) or when no permutation fits every launch's hardware limits."""
    penalty = 2 * len(refs) + 1     # one non-unit stride outweighs all unit ones
    cost = {o: sum((r.c[k] + r.z[k] + penalty * r.u[k]) * max(r.count.value or 1, 1)
                   for r in refs) for k, o in enumerate(AXES)}
    identity = {a: a for a in AXES}
    used = {o for k, o in enumerate(AXES) if any(r.c[k] or r.u[k] for r in refs)}
    narrow = narrow_axes(cost, used, blocks)
    if not any(can_be_x(o, blocks) for o in AXES):
        return Permutation(identity, cost["x"], cost["x"], "",
                           "every block is one thread wide along every axis")
    prob = ilp.problem("polycoal_permutation")
    p = {(n, o): ilp.binary(prob, f"p_{n}_{o}") for n in AXES for o in AXES}
    prob += (pulp.lpSum(cost[o] * 10 * p[("x", o)] for o in AXES)
             - pulp.lpSum(p[(a, a)] for a in AXES))
    for a in AXES:
        prob += pulp.lpSum(p[(a, o)] for o in AXES) == 1, f"row_{a}"
        prob += pulp.lpSum(p[(n, a)] for n in AXES) == 1, f"column_{a}"
    for o in AXES:
        if not can_be_x(o, blocks):
            prob += p[("x", o)] == 0, f"narrow_{o}"
        for n in AXES:
            if not fits(n, o, blocks, grids):
                prob += p[(n, o)] == 0, f"limit_{n}_{o}"
    try:
        ilp.solve(prob)
    except RuntimeError:
        return Permutation(identity, cost["x"], cost["x"], ilp.problem_text(prob),
                           "no permutation fits the hardware limits of every launch",
                           narrow=narrow)
    source = {n: next(o for o in AXES if ilp.is_set(p[(n, o)])) for n in AXES}
    return Permutation(source, cost[source["x"]], cost["x"], ilp.problem_text(prob),
                       guarded=needs_guard(source, blocks, grids), narrow=narrow)
