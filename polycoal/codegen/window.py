"""Generate the register-window form of a stencil (optimize/window.py,
templates/window_rows.cu.j2): each thread `rows` consecutive rows at its column (on a
1-D grid `rows` elements a block's width apart), the elements its instances read loaded
once each into registers (stores stay stores)."""

from __future__ import annotations

import re

import islpy as isl

from polycoal.codegen.kernel import (WARP, GeneratedKernel, describe_dim, _signature,
                                     geometry_read, passed_geometry, thread_range,
                                     warp_aligned, with_geometry, within_range)
from polycoal.codegen.statements import references, renderer
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.isl_c import expr_to_c, wide_parameters
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.window import ROW0, WindowPlan
from polycoal.templates import render_template


def row_name(row: int) -> str:
    """The C variable of a thread's row at offset `row` (pc_y0, pc_y1...)."""
    return f"pc_y{row}"


def instance_conditions(model: KernelModel, plan: WindowPlan) -> dict:
    """(statement, row offset) -> the parameter set (the kernel's parameters, pc_x and
    pc_y0; on a 1-D grid pc_y0 alone) where that instance of the statement runs: its
    domain at x = pc_x, y = pc_y0 + row * step."""
    names = [*model.parameters, *_lane_names(plan)]
    dims = ", ".join(model.dims)
    out = {}
    for s in model.statements:
        dom = isl_helpers.domain(model, s)
        for row in range(plan.rows):
            at_x = "" if plan.one_dim else f"{plan.x} = pc_x and "
            at = isl.Set(f"[{', '.join(names)}] -> {{ {s.name}[{dims}] : "
                         f"{at_x}{plan.y} = {ROW0} + {row * plan.step} }}")
            out[(s.name, row)] = at.intersect(dom.align_params(at.get_space())).params()
    return out


def generate_window(original: str, kernel: Kernel, model: KernelModel,
                    plan: WindowPlan) -> GeneratedKernel:
    """The kernel with a register window down plan.y (the module's doc)."""
    wide = wide_parameters(kernel.parameters)
    ry = thread_range(model, plan.y, "x" if plan.one_dim else "y", wide)
    rx = ry if plan.one_dim else thread_range(model, plan.x, "x", wide)
    conditions = instance_conditions(model, plan)
    # the lanes' first value rounded down to a multiple of a warp, as the original's
    # warps are (gx = blockIdx.x * blockDim.x + threadIdx.x): a range from 1 (Jacobi's
    # j > 0) would put every warp's accesses across two 128-byte lines (measured on the
    # H200: a copy at 8192 x 8192 67% of its bound from 1, 92% aligned); the values
    # below the range are guarded off
    lane, lane_var = (ry, ROW0) if plan.one_dim else (rx, "pc_x")
    # what the loops guarantee of pc_x and pc_y0: isl leaves those conditions out
    names = [*model.parameters, *_lane_names(plan)]
    known = list(model.context) + within_range(lane_var, lane, WARP - 1) + \
        ([] if plan.one_dim else within_range(ROW0, ry))
    context = isl.Set(f"[{', '.join(names)}] -> {{ : {' and '.join(known)} }}")
    build = isl.AstBuild.from_context(context)

    def guard(condition: isl.Set) -> str | None:
        """C text of a condition where the loops' guarantees do not already imply it
        ("" where it always holds, None where it never does)."""
        condition = condition.intersect(context).coalesce()
        if condition.is_empty():
            return None
        if condition.is_equal(context):
            return ""
        return expr_to_c(build.expr_from_set(condition), wide, device=True)

    def names_at(row: int) -> dict[str, str]:
        return {plan.y: row_name(row)} if plan.one_dim else \
            {plan.x: "pc_x", plan.y: row_name(row)}

    by_name = {s.name: s for s in model.statements}
    loads = []
    for load in plan.loads:
        statement, row, reference = load.uses[0]
        s = by_name[statement]
        node = references(s.node, {reference})[reference]
        readers = conditions[load.readers[0]]
        for reader in load.readers[1:]:
            readers = readers.union(conditions[reader])
        where = guard(readers)
        # a load whose readers never run (rows past the range: one row of a group of
        # four) is not made: its element may lie outside the array
        loads.append({"type": _unqualified(load.element_type),
                      "read": renderer(model, kernel, s, names_at(row)).visit(node),
                      "guard": where or "", "never": where is None,
                      "index": len(loads)})
    instances = []
    for row in range(plan.rows):
        for s in model.statements:
            condition = guard(conditions[(s.name, row)])
            if condition is None:
                continue
            r = renderer(model, kernel, s, names_at(row))
            r.replace = {t: f"pc_w{k}" for t, k in plan.registers(s.name, row).items()}
            r.keep_targets = True
            statement = r.visit(s.node)
            if not statement.rstrip().endswith((";", "}")):
                statement += ";"
            instances.append({"guard": condition, "statement": statement})
    ranges = [ry] if plan.one_dim else [rx, ry]
    texts = [t for r in ranges for t in (r.lo, r.hi)] + \
        [l["read"] + " " + l["guard"] for l in loads] + \
        [i["statement"] + " " + i["guard"] for i in instances]
    hidden = geometry_read(texts, model)
    for r in ranges:
        r.lo, r.hi = passed_geometry(r.lo, hidden), passed_geometry(r.hi, hidden)
    lane.lo, lane.host_lo = warp_aligned(lane.lo), warp_aligned(lane.host_lo)
    for item in loads + instances:
        for key in ("read", "guard", "statement"):
            if key in item:
                item[key] = passed_geometry(item[key], hidden)
    block = plan.block
    text = render_template(
        "window_rows.cu.j2", signature=with_geometry(_signature(original, kernel, block),
                                                     hidden),
        x_dim=describe_dim(model, plan.x), y_dim=describe_dim(model, plan.y),
        rows=plan.rows, step=plan.step, one_dim=plan.one_dim, shares=plan.shares,
        arrays=", ".join(plan.arrays), reads=plan.reads, block=block,
        loads=loads, instances=instances, x_lo=rx.lo, x_hi=rx.hi, y_lo=ry.lo, y_hi=ry.hi)
    if plan.one_dim:
        return GeneratedKernel(kernel.name, text, [ry], block, hidden, {"x": ROW0}, "pc_i",
                               axis_dims={"x": plan.y},
                               per_block=(block[0] * plan.rows, 1, 1), tiles=plan)
    return GeneratedKernel(kernel.name, text, [rx, ry], block, hidden,
                           {"x": "pc_x", "y": ROW0}, "pc_i",
                           axis_dims={"x": plan.x, "y": plan.y},
                           per_block=(block[0], block[1] * plan.rows, 1), tiles=plan)


def _lane_names(plan: WindowPlan) -> list[str]:
    """The variables an instance's condition takes besides the kernel's parameters."""
    return [ROW0] if plan.one_dim else ["pc_x", ROW0]


def _unqualified(element_type: str) -> str:
    """The type of a register holding an element (no const or volatile)."""
    return re.sub(r"\b(const|volatile)\b\s*", "", element_type).strip()
