"""Generate the register-window form of a stencil (optimize/window.py,
templates/window_rows.cu.j2): each thread `rows` consecutive rows at its column, the
elements its instances read loaded once each into registers (stores stay stores)."""

from __future__ import annotations

import re

import islpy as isl

from polycoal.codegen.kernel import (GeneratedKernel, describe_dim, _signature,
                                     geometry_read, passed_geometry, thread_range,
                                     with_geometry, within_range)
from polycoal.codegen.statements import references, renderer
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.isl_c import expr_to_c, wide_parameters
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.window import BLOCK, ROW0, WindowPlan
from polycoal.templates import render_template


def row_name(row: int) -> str:
    """The C variable of a thread's row at offset `row` (pc_y0, pc_y1...)."""
    return f"pc_y{row}"


def instance_conditions(model: KernelModel, plan: WindowPlan) -> dict:
    """(statement, row offset) -> the parameter set (the kernel's parameters, pc_x and
    pc_y0) where that instance of the statement runs: its domain at x = pc_x,
    y = pc_y0 + row."""
    names = [*model.parameters, "pc_x", ROW0]
    dims = ", ".join(model.dims)
    out = {}
    for s in model.statements:
        dom = isl_helpers.domain(model, s)
        for row in range(plan.rows):
            at = isl.Set(f"[{', '.join(names)}] -> {{ {s.name}[{dims}] : "
                         f"{plan.x} = pc_x and {plan.y} = {ROW0} + {row} }}")
            out[(s.name, row)] = at.intersect(dom.align_params(at.get_space())).params()
    return out


def generate_window(original: str, kernel: Kernel, model: KernelModel,
                    plan: WindowPlan) -> GeneratedKernel:
    """The kernel with a register window down plan.y (the module's doc)."""
    wide = wide_parameters(kernel.parameters)
    rx, ry = thread_range(model, plan.x, "x", wide), thread_range(model, plan.y, "y", wide)
    conditions = instance_conditions(model, plan)
    # what the loops guarantee of pc_x and pc_y0: isl leaves those conditions out
    names = [*model.parameters, "pc_x", ROW0]
    known = list(model.context) + within_range("pc_x", rx) + within_range(ROW0, ry)
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

    by_name = {s.name: s for s in model.statements}
    loads = []
    for load in plan.loads:
        statement, row, reference = load.uses[0]
        s = by_name[statement]
        names_at = {plan.x: "pc_x", plan.y: row_name(row)}
        node = references(s.node, {reference})[reference]
        readers = conditions[load.readers[0]]
        for reader in load.readers[1:]:
            readers = readers.union(conditions[reader])
        where = guard(readers)
        # a load whose readers never run (rows past the range: one row of a group of
        # four) is not made: its element may lie outside the array
        loads.append({"type": _unqualified(load.element_type),
                      "read": renderer(model, kernel, s, names_at).visit(node),
                      "guard": where or "", "never": where is None,
                      "index": len(loads)})
    instances = []
    for row in range(plan.rows):
        for s in model.statements:
            condition = guard(conditions[(s.name, row)])
            if condition is None:
                continue
            r = renderer(model, kernel, s, {plan.x: "pc_x", plan.y: row_name(row)})
            r.replace = {t: f"pc_w{k}" for t, k in plan.registers(s.name, row).items()}
            r.keep_targets = True
            statement = r.visit(s.node)
            if not statement.rstrip().endswith((";", "}")):
                statement += ";"
            instances.append({"guard": condition, "statement": statement})
    texts = [rx.lo, rx.hi, ry.lo, ry.hi] + [l["read"] + " " + l["guard"] for l in loads] + \
        [i["statement"] + " " + i["guard"] for i in instances]
    hidden = geometry_read(texts, model)
    for r in (rx, ry):
        r.lo, r.hi = passed_geometry(r.lo, hidden), passed_geometry(r.hi, hidden)
    for item in loads + instances:
        for key in ("read", "guard", "statement"):
            if key in item:
                item[key] = passed_geometry(item[key], hidden)
    text = render_template(
        "window_rows.cu.j2", signature=with_geometry(_signature(original, kernel, BLOCK),
                                                     hidden),
        x_dim=describe_dim(model, plan.x), y_dim=describe_dim(model, plan.y),
        rows=plan.rows, arrays=", ".join(plan.arrays), reads=plan.reads, block=BLOCK,
        loads=loads, instances=instances, x_lo=rx.lo, x_hi=rx.hi, y_lo=ry.lo, y_hi=ry.hi)
    return GeneratedKernel(kernel.name, text, [rx, ry], BLOCK, hidden,
                           {"x": "pc_x", "y": ROW0}, "pc_i",
                           axis_dims={"x": plan.x, "y": plan.y},
                           per_block=(BLOCK[0], BLOCK[1] * plan.rows, 1), tiles=plan)


def _unqualified(element_type: str) -> str:
    """The type of a register holding an element (no const or volatile)."""
    return re.sub(r"\b(const|volatile)\b\s*", "", element_type).strip()
