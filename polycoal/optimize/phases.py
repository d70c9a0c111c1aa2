"""Column kernels in phases: a block per 32 columns, its rows splitting each loop in turn.

A kernel with one thread per column j that runs, in each thread, a sequence of loops
over rows (gramschmidt's third kernel: r[k][j] = sum_i q[i][k] a[i][j], then
a[i][j] -= q[i][k] r[k][j] for every i; a column norm into a private scalar, then the
column divided by it) is coalesced along the threads, yet starved: few threads, each
running long serial loops. The block-cooperative form (codegen.kernel, column_groups)
gives 32 columns a block of 32 x G threads and runs the thread's program as phases:

- a reduction phase: a loop of updates X[f] op= e (f free of the loop's counter, X read
  only by the update itself, op reassociable); the block's G rows of threads split the
  loop, their partial results meet in shared memory, row 0 applies them;
- a parallel phase: a loop that carries no dependence within the thread; the G rows
  split its iterations;
- statements outside loops run on row 0, in their order (a loop that is neither keeps
  the kernel as written: on one row of each block it would run with fewer threads at a
  time than the original),

with a barrier before and after each split phase, so that each phase sees every write of
what ran before it (`__syncthreads` orders the block's global and shared accesses).
A private scalar that row 0 wrote and a phase reads is handed to every row through
shared memory at the barrier before the phase.

A loop that carries a reduction beside other statements is distributed into a loop of
its reduction updates and a loop of the rest (textual order first, else the reverse).
The plan is legal when, among the statements of each top-level loop:

1. no dependence runs from a later part of the distributed loop to an earlier one (all
   of an earlier part runs first; the parts keep their places among the other top-level
   statements, so dependences between loops keep their order);
2. no dependence joins two different iterations of a split phase, except the
   reduction's own (an update's dependences on itself, on its accumulator); anti and
   output dependences on a private scalar inside one phase do not count, each row having
   its own copy;
3. no private scalar written by a parallel phase is read outside it (only that row's
   iterations wrote its copy).

Different columns never touch the same element (the kernel is race-free), so each
column's phases are independent of the other columns'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from polycoal.analysis.dependences import _pair_relation
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel, Statement
from polycoal.optimize.reduction import Obstacle, update_obstacle

MIN_SPLIT_TRIPS = 256    # a split loop shorter than this does not pay for its barriers


@dataclass(frozen=True)
class Phase:
    kind: str                        # "reduce" | "parallel" | "row0"
    statements: tuple[str, ...]
    line: int | None                 # the source loop's line (None: statements outside loops)
    loop: str | None                 # the loop's source name


@dataclass(frozen=True)
class PhasePlan:
    model: KernelModel               # the statements at their new textual positions
    phases: tuple[Phase, ...]
    distributed: tuple[int, ...]     # lines of the loops split into two
    handed: frozenset[str] = frozenset()   # private scalars row 0 hands to split phases

    @property
    def kinds(self) -> dict[str, str]:
        return {name: p.kind for p in self.phases for name in p.statements}

    def describe(self) -> str:
        split = [f"{'the reduction loop' if p.kind == 'reduce' else 'the loop'} "
                 f"'{p.loop}' (line {p.line})" for p in self.phases
                 if p.kind in ("reduce", "parallel")]
        text = "its rows split " + ", then ".join(split) + \
            ", with a barrier before and after each; row 0 runs the rest"
        if self.distributed:
            text += "; the loop at line " + ", ".join(map(str, self.distributed)) + \
                " distributed into its reduction and the rest"
        return text


def plan_phases(model: KernelModel, analysis, min_trips: int = MIN_SPLIT_TRIPS
                ) -> PhasePlan | Obstacle:
    """The phases of a column kernel (see the module's text), or why there are none;
    refused when every split loop is known to run fewer than `min_trips` times."""
    if len(model.thread_dims) != 1 or model.thread_dims[0].kind != "global":
        return Obstacle("reduction-shape", "more than one thread dimension")
    if any(a.space == "shared" or a.atomic for _, a in model.accesses()):
        return Obstacle("reduction-shape", "it uses shared memory or atomics")
    positions: dict[int, list[Statement]] = {}
    for s in model.statements:
        positions.setdefault(s.beta[0], []).append(s)
    deps = analysis.dependences
    phases: list[Phase] = []
    distributed: list[int] = []
    beta: dict[str, tuple[int, ...]] = {}
    for b in sorted(positions):
        statements = positions[b]
        looped = [s for s in statements if s.loops]
        if not looped:
            parts = [("row0", statements)]
        else:
            parts = _loop_phases(model, deps, statements)
            if len(parts) > 1:
                distributed.append(statements[0].loops[0].location.line)
        for kind, members in parts:
            loop = members[0].loops[0] if members[0].loops else None
            phases.append(Phase(kind, tuple(s.name for s in members),
                                loop.location.line if loop else None,
                                loop.source_name if loop else None))
            for s in members:
                beta[s.name] = (len(phases) - 1,) + tuple(s.beta[1:])
    if not any(p.kind == "reduce" for p in phases):
        return Obstacle("reduction-shape", "no loop splits into a reduction over rows of "
                        "threads")
    serial = next((p for p in phases if p.kind == "row0" and p.loop is not None), None)
    if serial is not None:
        # measured on the H200: with many columns, a loop left to one row of threads runs
        # with 32 times fewer warps resident than as written (0.42x at 32768 columns)
        return Obstacle("serial-loop", f"the loop '{serial.loop}' (line {serial.line}) "
                        "cannot be split over rows of threads, and on one row of each "
                        "block it would run with fewer threads at a time than as written")
    kinds = {name: p.kind for p in phases for name in p.statements}
    thread = model.thread_dims[0].name
    for s in model.statements:
        if kinds[s.name] == "row0":
            continue
        for a in s.accesses:
            if a.space in ("global", "constant") and (
                    a.flat is None or not a.flat.coefficient(thread).is_constant() or
                    abs(a.flat.coefficient(thread).constant()) > 1):
                return Obstacle("not-coalesced-along-threads",
                                f"'{a.text}' (line {a.location.line}) is not coalesced "
                                "along the threads")
    trips = [_trips(model, p) for p in phases if p.kind in ("reduce", "parallel")]
    if all(t is not None and t < min_trips for t in trips):
        return Obstacle("short-loop", f"its loops run {max(trips)} times at most: too short "
                        "to split over rows of threads")
    phase_of = {name: k for k, p in enumerate(phases) for name in p.statements}
    private = {a for a, (space, _) in model.arrays.items() if space == "private"}
    handed = frozenset(d.array for d in deps if d.kind == "flow" and d.array in private and
                       kinds[d.sink] != "row0" and phase_of[d.source] != phase_of[d.sink])
    new = replace(model, statements=[replace(s, beta=beta[s.name]) for s in model.statements])
    return PhasePlan(new, tuple(phases), tuple(distributed), handed)


def _loop_phases(model: KernelModel, deps, statements: list[Statement]
                 ) -> list[tuple[str, list[Statement]]]:
    """The phases of one top-level loop: one reduction or parallel phase, a reduction
    and the rest distributed, or the whole loop on row 0."""
    counter = statements[0].loops[0].counter
    reduce = [s for s in statements if len(s.loops) == 1 and
              update_obstacle(s, counter) is None and _accumulator_alone(s, statements)]
    rest = [s for s in statements if s not in reduce]
    if not reduce:
        candidates = [[("parallel", rest)]]
    elif not rest:
        candidates = [[("reduce", reduce)]]
    else:
        order = [("reduce", reduce), ("parallel", rest)]
        if model.statements.index(rest[0]) < model.statements.index(reduce[0]):
            order.reverse()
        candidates = [order, order[::-1]]
    names = {s.name for s in statements}
    mine = [d for d in deps if d.source in names or d.sink in names]
    for parts in candidates:
        if _legal(model, mine, parts, names):
            return parts
    return [("row0", statements)]


def _accumulator_alone(s: Statement, statements: list[Statement]) -> bool:
    """No other statement of the loop touches the update's accumulator array."""
    target = next(a for a in s.accesses if a.kind == "write").array
    return not any(a.array == target for o in statements if o is not s for a in o.accesses)


def _legal(model: KernelModel, deps, parts, names: set[str]) -> bool:
    """Conditions 1-3 of the module's text for the parts of one loop."""
    part_of = {s.name: k for k, (_, members) in enumerate(parts) for s in members}
    kind_of = {s.name: kind for kind, members in parts for s in members}
    by_name = {s.name: s for s in model.statements}
    private = {a for a, (space, _) in model.arrays.items() if space == "private"}
    for d in deps:
        inside_source, inside_sink = d.source in names, d.sink in names
        if inside_source and not inside_sink:
            # 3: a private value leaving a parallel phase
            if d.kind == "flow" and d.array in private and kind_of[d.source] == "parallel":
                return False
            continue
        if not inside_source:
            continue
        if part_of[d.source] > part_of[d.sink]:            # 1
            return False
        if part_of[d.source] < part_of[d.sink]:
            if d.kind == "flow" and d.array in private and kind_of[d.source] == "parallel":
                return False                                  # 3
            continue
        kind = kind_of[d.source]
        if kind == "reduce" and d.source == d.sink:
            target = next(a for a in by_name[d.source].accesses if a.kind == "write")
            if d.array == target.array:
                continue                                      # the reduction's own
        if d.array in private and d.kind in ("anti", "output"):
            continue                                          # one copy per row
        across = _pair_relation(model, by_name[d.source], by_name[d.sink], "c0 != c0'")
        if not d.relation.intersect(across).is_empty():       # 2
            return False
    return True


def _trips(model: KernelModel, phase: Phase) -> int | None:
    """The number of iterations of a phase's loop when the launches fix it, else None."""
    members = [s for s in model.statements if s.name in phase.statements]
    return isl_helpers.known_extent(replace(model, statements=members), "c0")
