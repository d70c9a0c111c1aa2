"""Generate the split form of a column reduction (see templates/column_split.cu.j2).

`for (i ...) X[j] += e(i, j)` with one thread per column j is coalesced, yet starved:
few threads, each a long serial loop. The loop is split over more threads (a 2-D
geometry: columns on x, chunks of rows on y), partial sums meet in shared memory and
then in memory through atomicAdd. Since the adds of different blocks land in any order,
the statements the original ran before the loop (X[j] = 0) run in a kernel launched
before, and those after it (X[j] /= n) in a kernel launched after: three launches on
the original's stream replace one.
"""

from __future__ import annotations

import re
from dataclasses import replace

from polycoal.codegen.kernel import (GeneratedKernel, Stage, _describe_dim, _signature,
                                     generate_kernel, thread_range)
from polycoal.codegen.statements import render_accumulation
from polycoal.frontend.program import Kernel
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.restructure import Mapping
from polycoal.templates import render_template

ROWS_PER_BLOCK = 512


def _renamed(text: str, name: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", new, text, count=1)


def _before_after(original: str, kernel: Kernel, model: KernelModel, column: str,
                  counter: str) -> tuple[list[Stage], list[Stage], list[str], list[str]]:
    """Kernels for the statements before and after the loop: (stages, stages, texts, texts)."""
    inside = [s for s in model.statements if s.loops]
    loop_beta = inside[0].beta[0]
    parts = ([s for s in model.statements if not s.loops and s.beta[0] < loop_beta],
             [s for s in model.statements if not s.loops and s.beta[0] > loop_beta])
    stages, texts = ([], []), ([], [])
    for k, (part, suffix) in enumerate(zip(parts, ("__pc_before", "__pc_after"))):
        if not part:
            continue
        g = generate_kernel(original, kernel, replace(model, statements=part),
                            Mapping((column,), (counter,), {}, ()), (256, 1, 1))
        name = kernel.name + suffix
        texts[k].append(_renamed(g.text, kernel.name, name))
        stages[k].append(Stage(name, g.ranges, g.block, g.per_block))
    return stages[0], stages[1], texts[0], texts[1]


def _accumulators(model: KernelModel, kernel: Kernel, names: dict[str, str]) -> list[dict]:
    out = []
    for s in (s for s in model.statements if s.loops):
        target, _, value = render_accumulation(model, kernel, s, names)
        element = next(a for a in s.accesses if a.kind == "write").element_type
        out.append({"target": target, "value": value, "type": element})
    return out


def generate_column_split(original: str, kernel: Kernel, model: KernelModel,
                          counter: str) -> GeneratedKernel:
    column = model.thread_dims[0].name
    inside = replace(model, statements=[s for s in model.statements if s.loops])
    cols = thread_range(model, column, "x")
    rows = thread_range(inside, counter, "y")
    text = render_template(
        "column_split.cu.j2", signature=_signature(original, kernel),
        column=_describe_dim(model, column), loop=_describe_dim(model, counter),
        rows_per_block=ROWS_PER_BLOCK,
        accumulators=_accumulators(model, kernel, {column: "pc_x", counter: "pc_i"}),
        cols_lo=cols.lo, cols_hi=cols.hi, rows_lo=rows.lo, rows_hi=rows.hi)
    first, extra, before, after = _before_after(original, kernel, model, column, counter)
    return GeneratedKernel(kernel.name, "\n\n".join(before + [text] + after), [cols, rows],
                           (32, 8, 1), [], {"x": "pc_x", "y": "pc_chunk"}, "pc_i",
                           axis_dims={"x": column, "y": counter},
                           per_block=(32, ROWS_PER_BLOCK, 1), extra_stages=extra,
                           first_stages=first)


def generate_tiled_reduction(original: str, kernel: Kernel, model: KernelModel,
                             counter: str, tile: int = 16) -> GeneratedKernel:
    """The core paper's partial-sum transform of a row reduction (templates/
    reduction_tiles.cu.j2): tile x tile blocks over (row, loop), shared memory, a sum per
    tile row, atomicAdd."""
    row = model.thread_dims[0].name
    inside = replace(model, statements=[s for s in model.statements if s.loops])
    rows = thread_range(model, row, "y")
    cols = thread_range(inside, counter, "x")
    text = render_template(
        "reduction_tiles.cu.j2", signature=_signature(original, kernel),
        loop=_describe_dim(model, counter), t=tile,
        accumulators=_accumulators(model, kernel, {row: "pc_x", counter: "pc_i"}),
        cols_lo=cols.lo, cols_hi=cols.hi, rows_lo=rows.lo, rows_hi=rows.hi)
    first, extra, before, after = _before_after(original, kernel, model, row, counter)
    return GeneratedKernel(kernel.name, "\n\n".join(before + [text] + after), [cols, rows],
                           (tile, tile, 1), [], {"x": "pc_i", "y": "pc_x"}, "pc_i",
                           axis_dims={"x": counter, "y": row}, per_block=(tile, tile, 1),
                           extra_stages=extra, first_stages=first)
