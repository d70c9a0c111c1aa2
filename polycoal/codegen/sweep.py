"""Generate a thread's sweep along its row staged through shared memory
(optimize/sweep.py, templates/sweep_tiles.cu.j2)."""

from __future__ import annotations

from polycoal.codegen.kernel import (GeneratedKernel, describe_dim, _signature,
                                     geometry_read, passed_geometry, thread_range,
                                     with_geometry)
from polycoal.codegen.statements import renderer
from polycoal.frontend.program import Kernel
from polycoal.model.isl_c import wide_parameters
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.sweep import SweepPlan
from polycoal.templates import render_template

BLOCK = (32, 1, 1)
# the next chunk's loads issued before this chunk's trips run (measured on the H200,
# tools/explore_sweep_forms.py; False: each chunk loads its own columns first)
PREFETCH = True


def tile_index(plan: SweepPlan, off: int, low: int) -> str:
    """The tile column of a reference `off` at trip pc_kk of the chunk."""
    sense = plan.direction * plan.step
    trip = "pc_kk" if sense > 0 else f"({plan.chunk - 1} - pc_kk)"
    return f"{trip} + {off - low}"


def generate_sweep(original: str, kernel: Kernel, model: KernelModel,
                   plan: SweepPlan) -> GeneratedKernel:
    """The kernel with its sweep staged (the module's doc)."""
    wide = wide_parameters(kernel.parameters)
    rows = thread_range(model, plan.row, "x", wide)
    trips = thread_range(model, plan.counter, "x", wide)
    base, stride = f"({plan.base.to_c('*')})", f"(long long)({plan.stride.to_c('*')})"
    d, sense = plan.direction, plan.direction * plan.step
    # a reference reaches column d * counter + base + off; a chunk's window starts at
    # its first trip's column (sense +1) or chunk - 1 columns before it (sense -1)
    arrays = []
    for k, a in enumerate(plan.arrays):
        width = plan.chunk + a.high - a.low
        back = f" - {plan.chunk - 1}" if sense < 0 else ""
        lo = f"{'' if d > 0 else '-'}pc_cf + {base}{back} + {a.low}"
        # an element some reference reaches at some trip: its counter d * (col - base -
        # off) within the loop's range, for one of the array's offsets
        reached = " || ".join(
            f"({'' if d > 0 else '-'}(pc_col - {base} - {off}) >= (long long)({trips.lo}) && "
            f"{'' if d > 0 else '-'}(pc_col - {base} - {off}) <= (long long)({trips.hi}))"
            for off in a.offs)
        writer = ""
        if a.written is not None:
            shift = a.written - a.low
            writer = f"pc_e - {shift}" if sense > 0 else f"{plan.chunk - 1} - (pc_e - {shift})"
        arrays.append({"name": a.name, "type": a.element_type, "index": k,
                       "width": width, "spread": a.high - a.low, "pitch": width | 1, "lo": lo, "reached": reached,
                       "written": a.written is not None, "writer": writer,
                       "window": f"{a.low} to {a.high} from each trip's"})
    lows = {a.name: a.low for a in plan.arrays}
    offsets = dict(plan.offsets)
    slot = {a.name: k for k, a in enumerate(plan.arrays)}
    statements = []
    for s in model.statements:
        r = renderer(model, kernel, s, {plan.row: "pc_row", plan.counter: "pc_c"})
        r.replace = {a.text: f"pc_s{slot[a.array]}[pc_lane]"
                     f"[{tile_index(plan, offsets[a.text], lows[a.array])}]"
                     for a in s.accesses if a.space == "global"}
        text = r.visit(s.node).rstrip()
        statements.append(text if text.endswith((";", "}")) else text + ";")
    texts = [rows.lo, rows.hi, trips.lo, trips.hi, base, stride] + statements
    hidden = geometry_read(texts, model)
    for rr in (rows, trips):
        rr.lo, rr.hi = passed_geometry(rr.lo, hidden), passed_geometry(rr.hi, hidden)
    for a in arrays:
        for key in ("lo", "reached"):
            a[key] = passed_geometry(a[key], hidden)
    text = render_template(
        "sweep_tiles.cu.j2", signature=with_geometry(_signature(original, kernel, BLOCK),
                                                     hidden),
        row_dim=describe_dim(model, plan.row), counter_dim=describe_dim(model, plan.counter),
        chunk=plan.chunk, arrays=arrays, rows=plan.warp_rows, sense=sense, prefetch=PREFETCH, stride=passed_geometry(stride, hidden),
        statements=[f"{ty} {name};" for name, ty in plan.privates] +
        [passed_geometry(t, hidden) for t in statements],
        row_lo=rows.lo, row_hi=rows.hi, k_lo=trips.lo, k_hi=trips.hi, step=plan.step,
        first_trip=passed_geometry(f"(long long)({trips.lo}) + pc_t0" if plan.step > 0
                                   else f"(long long)({trips.hi}) - pc_t0", hidden))
    return GeneratedKernel(kernel.name, text, [rows], BLOCK, hidden, {"x": "pc_row"},
                           "pc_i", axis_dims={"x": plan.row}, per_block=(plan.warp_rows, 1, 1),
                           tiles=plan)
