"""Generate the staged form of a kernel (optimize/staging.py, templates/staged_tiles.cu.j2):
tiles of 32 x 32 instances, the reads that run across the written dim copied through
shared memory so that every global reference coalesces."""

from __future__ import annotations

from polycoal.codegen.kernel import (GeneratedKernel, describe_dim, _signature,
                                     geometry_read, passed_geometry, thread_range,
                                     with_geometry)
from polycoal.codegen.statements import references, renderer
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.staging import TILE, TILE_ROWS, StagingPlan
from polycoal.templates import render_template


def fixed_dims(model: KernelModel, dims: tuple[str, str]) -> dict[str, str]:
    """The value of each dim other than the two tiled ones, which holds one value over
    the statement's domain (a thread axis launched one thread wide, a loop of one
    iteration), as C: its lower bound (staging_plan requires one where a reference
    moves with it)."""
    out = {}
    for name in isl_helpers.all_dims(model):
        lowers = isl_helpers.dim_bounds(model, name)[0] if name not in dims else ()
        if len(lowers) == 1:
            out[name] = lowers[0].to_c("*")
    return out


def generate_staged(original: str, kernel: Kernel, model: KernelModel,
                    plan: StagingPlan) -> GeneratedKernel:
    """The kernel in tiles (templates/staged_tiles.cu.j2): the staged reads rendered
    once for the copy into their tiles, and replaced by the tile's element in the
    statement."""
    s = next(st for st in model.statements if st.name == plan.statement)
    names = {**fixed_dims(model, (plan.x, plan.y)), plan.x: "pc_x", plan.y: "pc_y"}
    reads = references(s.node, set(plan.staged))
    tiles, replace = [], {}
    for k, staged in enumerate(plan.staged):
        access = next(a for a in s.accesses if a.text == staged and a.kind == "read")
        tiles.append({"type": access.element_type,
                      "read": renderer(model, kernel, s, names).visit(reads[staged])})
        replace[staged] = f"pc_tile{k}[threadIdx.x][pc_k]"
    r = renderer(model, kernel, s, names)
    r.replace = replace
    statement = r.visit(s.node)
    if not statement.rstrip().endswith((";", "}")):
        statement += ";"
    block = (TILE, TILE_ROWS, 1)
    rx, ry = thread_range(model, plan.x, "x"), thread_range(model, plan.y, "y")
    # the original launch's geometry where it bounds the rectangle (a guard-free kernel
    # runs exactly its launch's threads): extra arguments, as in codegen/kernel.py
    hidden = geometry_read([rx.lo, rx.hi, ry.lo, ry.hi, statement] +
                           [t["read"] for t in tiles], model)
    for r in (rx, ry):
        r.lo, r.hi = passed_geometry(r.lo, hidden), passed_geometry(r.hi, hidden)
    statement = passed_geometry(statement, hidden)
    for t in tiles:
        t["read"] = passed_geometry(t["read"], hidden)
    body = render_template(
        "staged_tiles.cu.j2", signature=with_geometry(_signature(original, kernel, block),
                                                      hidden),
        x_dim=describe_dim(model, plan.x), y_dim=describe_dim(model, plan.y),
        t=TILE, rows=TILE_ROWS, tiles=tiles, statement=statement,
        x_lo=rx.lo, x_hi=rx.hi, y_lo=ry.lo, y_hi=ry.hi)
    return GeneratedKernel(kernel.name, body, [rx, ry], block, hidden,
                           {"x": "pc_x", "y": "pc_y"},
                           "pc_i", axis_dims={"x": plan.x, "y": plan.y},
                           per_block=(TILE, TILE, 1), tiles=plan)
