"""When may a row reduction be run by one warp per row?

`for (j ...) X[i] op= e(i, j)` with one thread per row i reads a row of a row-major
matrix per thread: lanes are a row apart (uncoalesced), and no permutation helps, since
j carries the reduction. Splitting j over the 32 lanes of a warp makes the loads
coalesced; the partial results are combined with a shuffle tree. That reassociates the
operator, which is legal for an associative, commutative update (+, *) whose loop
carries no other dependence; floating-point results change by rounding only.

The conditions, each checked here: one thread dimension; a single loop, carrying only
reductions; every statement in it an update X[f] op= e with f free of the loop counter
and X accessed nowhere else in it; no array read in the loop written anywhere in the
kernel except by those updates (the lanes must not need each other's writes); and the
loop's references coalesce along the loop, not along the threads, or a single thread
runs the whole reduction (`if (tid == 0)`: gramschmidt's norm), where the warp gains
by running 32 of its loads at a time even when none of them coalesce.
"""

from __future__ import annotations

from dataclasses import dataclass

from polycoal.analysis.work import Geometry
from polycoal.model.accumulation import accumulation
from polycoal.model.kernel_model import KernelModel, is_launch_parameter


@dataclass(frozen=True)
class Obstacle:
    """Why a reduction form does not apply: a reason code and its prose."""

    code: str
    text: str

    def __str__(self) -> str:
        return self.text


def _one_reduction_loop(model: KernelModel, analysis, operators: tuple[str, ...]):
    """(loop counter, statements in the loop, arrays the kernel writes, accumulator
    arrays) for one thread dimension around a single loop that carries only reductions,
    each statement an update X[f] op= e (op in `operators`) of one element, f free of the
    counter, X accessed nowhere else in it; else why not."""
    if len(model.thread_dims) != 1 or model.thread_dims[0].kind != "global":
        return Obstacle("reduction-shape", "more than one thread dimension")
    if model.depth != 1:
        return Obstacle("reduction-shape", "not a single loop")
    loops = [l for l in analysis.loops if l.reduction]
    if len(loops) != 1 or len(analysis.loops) != 1:
        return Obstacle("reduction-shape", "the loop carries more than reductions")
    counter = loops[0].loop.counter
    inside = [s for s in model.statements if s.loops]
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    targets = set()
    for s in inside:
        refusal = update_obstacle(s, counter, operators)
        if refusal is not None:
            return refusal
        targets.add(next(a for a in s.accesses if a.kind == "write").array)
    for s in inside:
        own = next(a for a in s.accesses if a.kind == "write").array
        for a in s.accesses:
            if a.kind == "read" and a.array in written and a.array != own:
                return Obstacle("reduction-shape",
                                f"the loop reads '{a.array}', which the kernel writes")
    return counter, inside, written, targets


def update_obstacle(s, counter: str, operators: tuple[str, ...] = ("+", "*")
                    ) -> Obstacle | None:
    """None when statement `s` is an update X[f] op= e of one element (op in
    `operators`, reassociable for X's type) with f free of the loop `counter`, X read
    only as the update's own left-hand side; else why not."""
    target = next((a for a in s.accesses if a.kind == "write"), None)
    if s.update not in operators or target is None or target.subscripts is None or \
            any(counter in p.variables for p in target.subscripts) or not s.exact:
        return Obstacle("reduction-shape", f"statement at line {s.location.line} is not "
                        "an update of one element")
    if sum(1 for a in s.accesses if a.array == target.array) != 2:
        return Obstacle("reduction-shape", f"statement at line {s.location.line} reads "
                        "its accumulator's array")
    found = accumulation(s.node)
    if found is None or not found.reassociable(target.element_type):
        return Obstacle("not-reassociable", f"statement at line {s.location.line} is an "
                        "update whose partial results cannot be combined in another "
                        "order (a floating-point product or a division)")
    return None


def row_reduction_obstacle(model: KernelModel, analysis) -> Obstacle | None:
    """None when the warp-per-row form applies, else why not."""
    shape = _one_reduction_loop(model, analysis, ("+", "*"))
    if isinstance(shape, Obstacle):
        return shape
    counter, inside, written, targets = shape
    thread = model.thread_dims[0].name
    if one_thread(model, inside):
        return None
    along_loop = along_threads = 0
    for s in inside:
        for a in s.accesses:
            if a.flat is None or a.space != "global":
                continue
            lane = a.flat.coefficient(thread)
            step = a.flat.coefficient(counter)
            if not (lane.is_constant() and abs(lane.constant()) <= 1):
                along_threads += 1
            if step.is_constant() and abs(step.constant()) == 1:
                along_loop += 1
    if along_threads == 0:
        return Obstacle("coalesced-along-threads",
                        "its loads are already coalesced along the threads")
    if along_loop == 0:
        return Obstacle("not-contiguous-along-loop",
                        "its loads are not contiguous along the loop either")
    return None


def one_thread(model: KernelModel, statements) -> bool:
    """Whether a single thread runs all of `statements` (`if (tid == 0)`, gramschmidt's
    norm): for every parameter value, their instances project onto one thread index."""
    import islpy as isl

    from polycoal.model import isl_helpers
    threads = None
    for s in statements:
        dom = isl_helpers.domain(model, s)
        dom = dom.project_out(isl.dim_type.set, len(model.thread_dims), model.depth)
        threads = dom if threads is None else threads.union(dom)
    if threads is None or threads.is_empty():
        return False
    # one point for each parameter value: the set is its own lexicographic minimum
    return threads.is_equal(threads.lexmin())


def column_reduction_obstacle(model: KernelModel, analysis) -> Obstacle | None:
    """None when a coalesced column reduction can be split over more threads (a 2-D
    geometry, partial sums, atomicAdd), else why not: the update must be a sum (atomicAdd
    adds), of float, double or int elements, over a rectangle of (column, row) the same
    for every statement in the loop, with rows independent of the column."""
    import islpy as isl

    from polycoal.model import isl_helpers
    shape = _one_reduction_loop(model, analysis, ("+",))
    if isinstance(shape, Obstacle):
        return shape
    counter, inside, written, targets = shape
    for s in inside:
        target = next(a for a in s.accesses if a.kind == "write")
        if target.element_type not in ("float", "double", "int", "unsigned") or \
                target.space != "global":
            return Obstacle("not-atomic", f"atomicAdd cannot update '{target.text}'")
    for s in model.statements:
        if not s.loops and any(a.space in ("private", "local") for a in s.accesses):
            # the split runs the statements before and after the loop elsewhere (other
            # kernels, the block that finishes a column): a thread's scalar is not there
            return Obstacle("reduction-shape", f"statement at line {s.location.line} "
                            "outside the loop uses a variable of its thread")
    domains = [isl_helpers.domain(model, s) for s in inside]
    first = domains[0]
    for dom in domains:
        if not dom.reset_tuple_id().is_equal(first.reset_tuple_id()):
            return Obstacle("ranges-differ",
                            "the statements in the loop run over different ranges")
    rows = first.project_out(isl.dim_type.set, 0, 1)
    cols = first.project_out(isl.dim_type.set, 1, 1)
    if not cols.reset_tuple_id().flat_product(rows.reset_tuple_id()).is_equal(
            first.reset_tuple_id()):
        return Obstacle("rows-depend-on-column", "the rows a column sums depend on the column")
    # the split form runs every row and column between the bounds: a loop with a step,
    # or a guard that skips columns (j % 2 == 0), leaves holes it would fill
    for part, what in ((rows, "rows"), (cols, "columns")):
        if not part.is_equal(part.polyhedral_hull()):
            return Obstacle("gaps", f"the {what} it sums have gaps (a loop step or a "
                            "modulo guard)")
    if any(is_launch_parameter(v) for v in model.parameters if v in str(first)):
        return Obstacle("geometry-dependent", "its range depends on the launch geometry")
    return None


# threads a reduction form launches at least: it spreads the reduction loop over
# enough warps to fill the device (one warp a row, columns split in groups)
FILLING_THREADS = 132 * 2048
# warps the device holds at once (132 multiprocessors of 32)
DEVICE_WARPS = 132 * 32
ROW_WARPS = (2, 4, 8, 16, 32)


def row_warps(rows: int | None, trips: int | None) -> int:
    """Warps that split one row of the warp-per-row form: 1 where the rows are unknown
    or hold half the warps the device holds; else the fewest of ROW_WARPS that bring
    the launch to that many (the most, 32, short of it), each thread two trips or more
    (all where the trips are unknown). A single row (Gram-Schmidt's norm of a column of
    2048, 8192) in one warp waits on 32 of its loads at a time; measured on the H200, a
    block of 1024 threads 5.9 -> 4.7 us at 2048 and 10.5 -> 7.9 at 8192."""
    if rows is None or 2 * rows >= DEVICE_WARPS:
        return 1
    fits = [w for w in ROW_WARPS if trips is None or trips >= 64 * w]
    return next((w for w in fits if 2 * rows * w >= DEVICE_WARPS), fits[-1] if fits else 1)


def reduction_geometry(launches: int = 1, rows: tuple[str, ...] = (),
                       loop: str | None = None, warps: int = 1) -> Geometry:
    """How a reduction form runs (for the performance model): every reference
    coalesced, the accumulators in registers, its launches (a split adds the combining
    one); one warp a row where `rows` names the dims of the rows (one warp per row,
    its lanes splitting the reduction `loop`), else enough threads to fill the device. Its loop's bound is the launch's: each trip
    waits for its load (measured on the H200, one warp a row of 4096: 640 clocks a
    trip), the compiler overlapping none."""
    if rows:
        return Geometry(x=loop, coalesced=True, registers=True, axes=rows,
                        per_thread=1 / (32 * warps),
                        block_threads=256 if warps == 1 else 32 * warps,
                        launches=launches, unroll=1)
    return Geometry(coalesced=True, registers=True, threads=FILLING_THREADS,
                    launches=launches, unroll=1)
