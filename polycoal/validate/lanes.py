"""Check rewritten loops against isl's: lanes of a reduction, promoted accumulators.

A reduction loop split over lanes must run exactly the loop's iterations.

The warp-per-row and block-cooperative forms run isl's loop
`for (it = init; cond; it += inc)` on L lanes (or rows of threads): lane l runs
it = init + l s + k S for k >= 0 while cond holds, as emitted (s = inc, S = L inc when
right). With isl: the iterations of all
lanes together must be the loop's own iterations { init + m inc : m >= 0, cond }, and
no iteration may run on two lanes (the map (l, k) -> it is injective). A split that
forgot the loop's step (lanes at init + l + 32 k of a loop with step 2) fails the first.
Inside the loop the statements are isl's own; each lane's partial result reaches memory
only if the lane ran the update (the pc_hit flags), so the updates are the original's,
combined in another order.
"""

from __future__ import annotations

import re

import islpy as isl

from polycoal.codegen.kernel import LaneSplit, PromotedLoop

_KEYWORDS = {"min", "max", "floor", "and", "or", "mod", "not"}


def _names(*texts: str) -> list[str]:
    found = set()
    for text in texts:
        found |= set(re.findall(r"\b[A-Za-z_]\w*\b", text))
    return sorted(found - _KEYWORDS)


def _loop_header(it: str, inc: str, *texts: str) -> tuple[int | None, str]:
    """(the loop's constant positive step, isl's parameter header over the names in
    `texts`), or (None, what is wrong with the step)."""
    try:
        step = int(inc)
    except ValueError:
        return None, f"loop {it}: its step {inc} is not a constant"
    if step < 1:
        return None, f"loop {it}: its step {step} is not positive"
    params = [n for n in _names(*texts) if n != it]
    return step, f"[{', '.join(params)}] -> "


def lane_split_problems(split: LaneSplit) -> list[str]:
    """What is wrong with the split (empty when it runs each iteration exactly once)."""
    it = split.iterator
    step, head = _loop_header(it, split.inc, split.init, split.cond)
    if step is None:
        return [head]
    lanes = isl.Map(
        f"{head}{{ [pc_l, pc_k] -> [{it}] : 0 <= pc_l < {split.lanes} and pc_k >= 0 and "
        f"{it} = {split.init} + pc_l * {split.lane_step} + pc_k * {split.split_step} and "
        f"{split.cond} }}")
    loop = isl.Map(f"{head}{{ [pc_m] -> [{it}] : pc_m >= 0 and "
                   f"{it} = {split.init} + pc_m * {step} and {split.cond} }}")
    problems = []
    if not lanes.range().is_equal(loop.range()):
        problems.append(f"loop {it}: the lanes do not run the loop's iterations")
    if not lanes.is_injective():
        problems.append(f"loop {it}: an iteration runs on more than one lane")
    return problems


def promotion_problems(loop: PromotedLoop) -> list[str]:
    """A promoted accumulator is loaded and stored under a guard: the guard must hold
    exactly where the loop runs at least once (where the original executes its update,
    and so loads and stores the element), no more (no load or store the original did not
    execute), no less."""
    it = loop.iterator
    step, head = _loop_header(it, loop.inc, loop.init, loop.cond, loop.guard)
    if step is None:
        return [head]
    runs = isl.Set(f"{head}{{ : exists ({it}, pc_m : pc_m >= 0 and "
                   f"{it} = {loop.init} + pc_m * {step} and {loop.cond}) }}")
    guarded = isl.Set(f"{head}{{ : {loop.guard} }}")
    if not runs.is_equal(guarded):
        return [f"loop {it}: the promoted load and store are guarded by {loop.guard}, "
                "not by the loop running"]
    return []
