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
loop's references coalesce along the loop, not along the threads.
"""

from __future__ import annotations

from polycoal.model.kernel_model import KernelModel


def row_reduction_obstacle(model: KernelModel, analysis) -> str | None:
    """None when the warp-per-row form applies, else why not."""
    if len(model.thread_dims) != 1 or model.thread_dims[0].kind != "global":
        return "more than one thread dimension"
    if model.depth != 1:
        return "not a single loop"
    loops = [l for l in analysis.loops if l.reduction]
    if len(loops) != 1 or len(analysis.loops) != 1:
        return "the loop carries more than reductions"
    counter = loops[0].loop.counter
    inside = [s for s in model.statements if s.loops]
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    targets = set()
    for s in inside:
        target = next((a for a in s.accesses if a.kind == "write"), None)
        if s.update not in ("+", "*") or target is None or target.subscripts is None or \
                any(counter in p.variables for p in target.subscripts):
            return f"statement at line {s.location.line} is not an update of one element"
        if sum(1 for a in s.accesses if a.array == target.array) != 2:
            return f"statement at line {s.location.line} reads its accumulator's array"
        if not s.exact:
            return "a data-dependent condition in the loop"
        targets.add(target.array)
    for s in inside:
        for a in s.accesses:
            if a.kind == "read" and a.array in written and a.array not in targets:
                return f"the loop reads '{a.array}', which the kernel writes"
            if a.kind == "read" and a.array in targets and \
                    not any(a.array == t and a.subscripts == next(
                        x for x in s.accesses if x.kind == "write").subscripts
                        for t in targets):
                return f"the loop reads another element of '{a.array}'"
    thread = model.thread_dims[0].name
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
        return "its loads are already coalesced along the threads"
    if along_loop == 0:
        return "its loads are not contiguous along the loop either"
    return None
