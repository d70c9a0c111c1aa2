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


def generate_column_split(original: str, kernel: Kernel, model: KernelModel,
                          counter: str) -> GeneratedKernel:
    column = model.thread_dims[0].name
    inside = [s for s in model.statements if s.loops]
    loop_beta = inside[0].beta[0]
    before = [s for s in model.statements if not s.loops and s.beta[0] < loop_beta]
    after = [s for s in model.statements if not s.loops and s.beta[0] > loop_beta]
    loop_model = replace(model, statements=inside)
    cols = thread_range(model, column, "x")
    rows = thread_range(loop_model, counter, "y")
    accumulators = []
    names = {column: "pc_x", counter: "pc_i"}
    for s in inside:
        target, op, value = render_accumulation(model, kernel, s, names)
        element = next(a for a in s.accesses if a.kind == "write").element_type
        accumulators.append({"target": target, "value": value, "type": element})
    text = render_template(
        "column_split.cu.j2", signature=_signature(original, kernel),
        column=_describe_dim(model, column), loop=_describe_dim(model, counter),
        rows_per_block=ROWS_PER_BLOCK, accumulators=accumulators, cols_lo=cols.lo,
        cols_hi=cols.hi, rows_lo=rows.lo, rows_hi=rows.hi)
    first, extra, texts = [], [], []
    for part, suffix, stages in ((before, "__pc_before", first), (after, "__pc_after", extra)):
        if not part:
            continue
        sub = replace(model, statements=part)
        g = generate_kernel(original, kernel, sub, Mapping((column,), (counter,), {}, ()),
                            (256, 1, 1))
        name = kernel.name + suffix
        texts.append((suffix, _renamed(g.text, kernel.name, name)))
        stages.append(Stage(name, g.ranges, g.block, g.per_block))
    before_text = [t for s, t in texts if s == "__pc_before"]
    after_text = [t for s, t in texts if s == "__pc_after"]
    full = "\n\n".join(before_text + [text] + after_text)
    return GeneratedKernel(kernel.name, full, [cols, rows], (32, 8, 1), [],
                           {"x": "pc_x", "y": "pc_chunk"}, "pc_i",
                           axis_dims={"x": column, "y": counter},
                           per_block=(32, ROWS_PER_BLOCK, 1), extra_stages=extra,
                           first_stages=first)
