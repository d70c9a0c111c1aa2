"""When can a thread's sweep along its row run on shared-memory tiles (issue 34: sweeps
by staging)?

A recurrence ported one thread per row walks the row in a loop whose trips depend on
each other (ADI's forward and backward sweeps, a prefix sum per row, a filter along a
row, a tridiagonal solve per row):

    i1 = thread; for (i2 = 1; i2 < n; i2++) X[i1 * N + i2] -= X[i1 * N + i2 - 1] * ...

The loop must stay in its thread, so no permutation helps, and consecutive threads are
a row apart: every reference is a whole row apart between neighbouring lanes (32
sectors a request). The remedy stages the rows through shared memory in
chunks of trips: a warp's first R lanes run R consecutive rows; for each chunk the warp
loads, row after row, each array's window of the chunk (the columns its references
reach in those trips: the chunk plus the references' spread, 32 in all, one element a
lane) into a tile, the lanes along the row (coalesced), waits at __syncwarp, runs each
thread's trips of the chunk on its row of the tiles, waits, and writes the written
arrays' columns of the chunk back, coalesced. R is 4 or 8 (passes/sweep.py): more
warps of fewer rows each, whose loads and chains of dependent trips the multiprocessors
interleave; the next chunk's new columns are loaded while this one runs
(codegen/sweep.py, the template's comment says why that reads the last values).

That is the same computation when, as checked here:

- the kernel is one loop (one counter, step 1 or -1) in a thread of one global dim, every
  statement inside the loop, over exactly the box of the row range and the counter's
  range (exact affine conditions, no other guard), with no shared, local or atomic value
  and no private one but scalars a trip declares for itself: each trip a function of
  global memory alone;
- every global reference is `stride * row + d * counter + base + off`, with one stride,
  one direction d = +1 or -1 and one base (parameters) for all, and an integer `off`
  of its own; the written references of an array share one `off`;
- no two threads race (isl): a row's elements are touched by its thread alone, which
  runs its trips in their order, as before. Within a chunk every reference of the row
  reads and writes the tile, whose elements were loaded after the previous chunk's
  writes reached memory (__syncwarp orders a warp's memory accesses): each read sees
  the last value written before it, as in the original; the written-back columns are
  exactly those the chunk's instances write (every instance runs: the domain is a box);
  the loads reach only elements the row's references reach at some trip of the loop
  (those of the row's thread: no other thread writes them).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from polycoal.analysis.work import Geometry
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel
from polycoal.model.poly import Poly
from polycoal.optimize.reduction import DEVICE_WARPS, Obstacle

WARP = 32            # rows a warp stages together (a block is one warp)
MAX_ARRAYS = 4       # tiles a warp holds (shared memory: 4 x 32 x 33 doubles = 33 KiB)
MAX_SPREAD = 8       # columns between a row's references of one array


@dataclass(frozen=True)
class SweptArray:
    name: str
    element_type: str
    low: int             # the least and greatest `off` of its references
    high: int
    written: int | None  # the `off` of its written references (None: only read)
    offs: tuple[int, ...] = ()   # every `off` of its references


@dataclass(frozen=True)
class SweepPlan:
    row: str             # the thread dim (model name)
    counter: str         # the loop's counter (c0)
    step: int            # the counter's step, +1 or -1
    direction: int       # +1: columns grow with the counter, -1: they fall
    stride: Poly         # elements between rows
    base: Poly           # the column at counter 0 (parameters), `off` aside
    arrays: tuple[SweptArray, ...]
    offsets: tuple[tuple[str, int], ...]   # reference text -> its `off`
    privates: tuple[tuple[str, str], ...] = ()   # (name, type) of each trip's scalars
    warp_rows: int = WARP   # rows a warp (a block) stages and runs: its first lanes

    @property
    def chunk(self) -> int:
        """Trips a tile holds: a row's window (the chunk plus the references' spread)
        is one element a lane, one load of the warp a row and array."""
        return WARP - max(a.high - a.low for a in self.arrays)

    @property
    def describe(self) -> str:
        names = ", ".join(a.name for a in self.arrays)
        return (f"a warp's {self.warp_rows} rows staged through shared memory "
                f"{self.chunk} trips at a time ({names})")


def _split(flat: Poly, row: str, counter: str) -> tuple[Poly, int, Poly] | None:
    """(stride, d, rest) of a reference's flat index stride * row + d * counter + rest,
    or None where it is not of that form."""
    stride, d = flat.coefficient(row), flat.coefficient(counter)
    if stride.variables & {row, counter} or not d.is_constant() or \
            d.constant() not in (1, -1):
        return None
    rest = flat - stride * Poly.var(row) - d * Poly.var(counter)
    if rest.variables & {row, counter}:
        return None
    return stride, int(d.constant()), rest


def sweep_plan(model: KernelModel, analysis) -> SweepPlan | Obstacle:
    """The staged sweep of the kernel, or why it does not apply (the module's doc)."""
    if not model.is_affine or model.outside:
        return Obstacle("sweep-shape", "not an affine kernel")
    if len(model.thread_dims) != 1 or model.thread_dims[0].kind != "global" or \
            model.thread_dims[0].strided or model.thread_dims[0].axis != "x":
        return Obstacle("sweep-shape", "not one thread per row along x")
    if model.depth != 1 or any(len(s.loops) != 1 for s in model.statements) or \
            len({s.beta[0] for s in model.statements}) != 1:
        # (two loops one after the other have one depth too: their beta differs)
        return Obstacle("sweep-shape", "not one loop holding every statement")
    if analysis.races:
        return Obstacle("sweep-race", "its threads race")
    row, counter = model.thread_dims[0].name, "c0"
    steps = {s.loops[0].step for s in model.statements}
    if len(steps) != 1 or not steps <= {1, -1}:
        return Obstacle("sweep-shape", "the loop's step is not 1 or -1")
    if not analysis.dependences or not any(
            d.kind in ("flow", "anti", "output") for d in analysis.dependences):
        # without a carried dependence the restructuring puts the loop on threads
        return Obstacle("sweep-shape", "its trips do not depend on each other")
    box = None
    for s in model.statements:
        if not s.exact:
            return Obstacle("sweep-shape", "a statement's condition is not exact")
        dom = isl_helpers.domain(model, s).reset_tuple_id()
        rows = dom.project_out(isl.dim_type.set, 1, 1)
        trips = dom.project_out(isl.dim_type.set, 0, 1)
        if not dom.is_equal(rows.flat_product(trips)):
            return Obstacle("sweep-shape", f"{s.name} runs over more than a box")
        if box is not None and not dom.is_equal(box):
            return Obstacle("sweep-shape", "the statements run over different boxes")
        box = dom
    for pos, dim in enumerate((row, counter)):
        # the generated loops run from the first lower bound to the least upper bound
        # (codegen/kernel.thread_range): that must be the range exactly (not with a
        # guard `j >= k0` beside the loop's start, or `2 * j <= n`, which it leaves out)
        lowers, uppers = isl_helpers.dim_bounds(model, dim)
        if not lowers or not uppers:
            return Obstacle("sweep-shape", f"the range of {dim} is unbounded")
        bounds = [f"d >= {isl_helpers.poly_text(lowers[0])}"] + \
            [f"d <= {isl_helpers.poly_text(u)}" for u in uppers]
        made = isl.Set(f"[{', '.join(model.parameters)}] -> {{ [d] : "
                       f"{' and '.join(bounds)} }}")
        values = box.project_out(isl.dim_type.set, 1 - pos, 1)
        # where the box has instances (the projection on one dim keeps the other's
        # range non-empty as a condition on the parameters)
        context = isl_helpers.context(model).intersect(box.params())
        if not made.intersect_params(context).is_equal(values.intersect_params(context)):
            return Obstacle("sweep-shape", f"the range of {dim} is not one interval's")
    stride = direction = base = None
    found: dict[str, dict] = {}
    offsets = {}
    # scalars a trip declares for itself (`double m = a / b;`): each trip's own, as in
    # the original (a scalar carried from trip to trip is declared outside the loop)
    declared = {name for name, (_, depth) in model.private.items() if depth >= 1}
    for s, a in model.accesses():
        if a.space == "private" and a.array in declared and not a.atomic:
            continue
        if a.space != "global" or a.atomic or a.flat is None or a.subscripts is None \
                or not a.text.startswith(a.array) or a.text.count("[") != 1:
            return Obstacle("sweep-shape", f"{a.text}: not a global reference along a row")
        split = _split(a.flat, row, counter)
        if split is None:
            return Obstacle("sweep-shape", f"{a.text}: not along the row")
        st, d, rest = split
        if stride is None:
            stride, direction, base = st, d, rest - rest.constant()
        if st != stride or d != direction or (rest - base).variables:
            return Obstacle("sweep-shape", f"{a.text}: another row layout")
        off = rest - base
        if not off.is_integral():
            return Obstacle("sweep-shape", f"{a.text}: not a whole column")
        off_value = int(off.constant())
        offsets[a.text] = off_value
        entry = found.setdefault(a.array, {"type": a.element_type, "offs": set(),
                                           "written": set()})
        entry["offs"].add(off_value)
        if a.kind == "write":
            entry["written"].add(off_value)
    arrays = []
    for name, e in sorted(found.items()):
        if len(e["written"]) > 1:
            return Obstacle("sweep-shape", f"{name}: written at two columns of a trip")
        if max(e["offs"]) - min(e["offs"]) > MAX_SPREAD:
            return Obstacle("sweep-shape", f"{name}: its references spread too far")
        arrays.append(SweptArray(name, e["type"], min(e["offs"]), max(e["offs"]),
                                 next(iter(e["written"])) if e["written"] else None,
                                 tuple(sorted(e["offs"]))))
    if not any(a.written is not None for a in arrays) or len(arrays) > MAX_ARRAYS:
        return Obstacle("sweep-shape", "no written array, or too many arrays")
    if isinstance(stride, Poly) and stride.is_constant() and stride.constant() == 0:
        return Obstacle("sweep-shape", "every row is the same")
    used = sorted({a.array for _, a in model.accesses() if a.space == "private"})
    return SweepPlan(row, counter, next(iter(steps)), direction, stride, base, tuple(arrays),
                     tuple(sorted(offsets.items())),
                     tuple((name, model.private[name][0]) for name in used))


# Trips a thread runs each chunk in the vectorised form: four (its loads of four trips
# in flight together), a warp's 32 lanes or a block's threads side by side
LANE_TRIPS = 4
VECTOR_CHUNK = WARP * LANE_TRIPS
# A warp a row where the rows are many: from half the warps the device holds (132
# multiprocessors of 32); below, a row's chunks one after the other in one warp leave it
# waiting on each chunk's loads, and a block of eight warps a row (a chunk of the block
# eight warps' chunks) runs them together. Measured on the H200
# (tools/explore_sweep_forms.py --warps 1 2 4 8, BENCHMARKS.md): a backward
# substitution at 4096 x 4096 0.075 ms a warp a row, 0.115 / 0.098 / 0.085 with 2 / 4 / 8;
# at 512 x 8192 0.057 -> 0.027 with 8, at 1024 x 2048 0.019 -> 0.013, ADI's backward
# sweep at 1024 0.0114 -> 0.0077 ms.
ROW_WARPS = (8, 4, 2)


def vector_warps(rows: int | None, trips: int | None) -> int:
    """Warps that run a row together: 1 (a warp a row) unless the rows are known to be
    fewer than half the warps the device holds; then the most of ROW_WARPS whose chunk
    a row's trips fill at least half of (all of them where the trips are unknown)."""
    if rows is None or 2 * rows >= DEVICE_WARPS:
        return 1
    return next((w for w in ROW_WARPS if trips is None or 2 * trips >= w * VECTOR_CHUNK), 1)


def vector_obstacle(plan: SweepPlan) -> Obstacle | None:
    """Why the trips of a row cannot run VECTOR_CHUNK at a time across a warp's lanes
    (codegen/sweep.generate_lanes), or None.

    Trip k of a row writes each written array at column c(k) + w and reads it at
    columns c(k) + o, c moving one column a trip (`sense`: +1 up, -1 down). The read at
    o reaches the column trip k + sense * (o - w) writes: an earlier trip's for
    sense * (o - w) < 0 (a flow dependence: the recurrence itself, ADI's forward sweep,
    a prefix sum), a later trip's for > 0 (an anti dependence: ADI's backward sweep
    reads the element below the one it writes, which the next trip overwrites), its
    own for o = w. No two trips write one element (one `off` a written array, one column
    a trip). So where no read is of the first kind, no trip reads what another wrote:
    every value a trip reads from another trip's column is the one the row held when
    the kernel started, and runs that read each such element before any trip writing it
    does keep every value. The vectorised form reads, in each chunk, every such element
    (and every other read no trip of the row writes before it) into registers, waits at
    __syncwarp, then runs the chunk's trips and their stores: a chunk's trips are later
    than every trip of the chunks before it, whose reads were all done before its wait."""
    sense = plan.direction * plan.step
    for a in plan.arrays:
        if a.written is None:
            continue
        flow = [o for o in a.offs if sense * (o - a.written) < 0]
        if flow:
            back = abs(flow[0] - a.written)
            return Obstacle("vector-flow", f"{a.name}: a trip reads what the trip "
                            f"{back} before it wrote (a recurrence)")
    return None


def vector_geometry(plan: SweepPlan, warps: int = 1) -> Geometry:
    """How the vectorised sweep runs (for the performance model): `warps` warps a row,
    their lanes along the trips (every reference coalesced), blocks of eight warps (a
    row each) or of `warps`, each thread's loads of LANE_TRIPS trips in flight
    together."""
    return Geometry(x=plan.counter, axes=(plan.row,), per_thread=1.0 / (WARP * warps),
                    block_threads=WARP * (8 if warps == 1 else warps), coalesced=True,
                    registers=True, unroll=LANE_TRIPS)


def sweep_geometry(plan: SweepPlan) -> Geometry:
    """How a staged sweep runs (for the performance model): every global reference
    coalesced (a tile's fill and write-back), a block of one warp, the trips' values in
    shared memory (no wait on a store)."""
    return Geometry(coalesced=True, axes=(plan.row,), block_threads=WARP, registers=True)

