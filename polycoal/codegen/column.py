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
from dataclasses import dataclass, replace

from polycoal.codegen.kernel import (GeneratedKernel, Stage, describe_dim, _signature,
                                     generate_kernel, renamed_kernel, thread_range)
from polycoal.codegen.statements import render_accumulation, rendered_statement
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.isl_c import condition_to_c
from polycoal.model.isl_helpers import known_extent
from polycoal.model.kernel_model import KernelModel, is_launch_parameter
from polycoal.optimize.products import as_parameters
from polycoal.optimize.restructure import Mapping
from polycoal.templates import render_template

ROWS_PER_BLOCK = 512      # rows one block sums per chunk, at most
MIN_ROWS_PER_BLOCK = 64
ROW_GROUPS = 8            # threads per column in a block
COLUMNS_PER_THREAD = 4    # columns per thread, at stride 32
TARGET_BLOCKS = 1024      # about 8 blocks per multiprocessor of an H100/H200
COLUMN_GROUPS = 32        # rows of threads of the block-cooperative form (32 x 32 threads)


@dataclass(frozen=True)
class SplitShape:
    rows: int             # rows per block (one chunk)
    groups: int           # threads per column in a block (blockDim.y)
    columns: int          # columns per thread, at stride 32 (a block covers 32 * columns)
    target_blocks: int = 0   # the launch caps its grid at about this many blocks (Stage)


def split_shape(columns: int | None, rows: int | None,
                override: tuple[int, ...] | None = None) -> SplitShape:
    """The shape of a column split over `columns` x `rows` (None: not known when
    compiling). Four columns per thread at stride 32 give each warp four independent
    128-byte loads per row, enough bytes in flight to run at the copy bandwidth (one
    column per thread measured 1.8x slower on the H200: tools/explore_column_forms.py);
    the chunk of rows per block is as long as possible (up to 512) while the grid still
    has about TARGET_BLOCKS blocks. When an extent is known only at run time (a kernel's
    int argument, PolyBench/GPU's published default), the chunk is the shortest and the
    launch caps the grid at TARGET_BLOCKS blocks from its own values, each block looping
    over several chunks: the same grid as with the extents known (measured before at
    2048 x 2048: a 512-row chunk left a 16 x 4 grid, 1.7x slower). `override` (rows,
    groups[, columns]) replaces it (tuning experiments on a device:
    tools/bench_reductions.py --column-forms)."""
    if override:
        return SplitShape(override[0], override[1], override[2] if len(override) > 2 else 1)
    per_thread = COLUMNS_PER_THREAD if columns is None or columns >= 32 * COLUMNS_PER_THREAD \
        else 1
    if columns is None or rows is None:
        return SplitShape(MIN_ROWS_PER_BLOCK, ROW_GROUPS, per_thread, TARGET_BLOCKS)
    chunk = ROWS_PER_BLOCK
    chunks = -(-TARGET_BLOCKS // -(-columns // (32 * per_thread)))
    while chunk > MIN_ROWS_PER_BLOCK and chunk * chunks > rows:
        chunk //= 2
    return SplitShape(chunk, ROW_GROUPS, per_thread)


def generate_column_blocks(original: str, kernel: Kernel, model: KernelModel,
                           counter: str, groups: int | None = None) -> GeneratedKernel:
    """A coalesced but starved column reduction, one launch: each block of 32 x G
    threads owns 32 columns, its G rows of threads split the loop, partial sums meet in
    shared memory and row 0 finishes the column (codegen.kernel's block-cooperative
    form; G = `groups`, COLUMN_GROUPS by default). Raises ValueError when the barriers
    could not be reached by every thread."""
    groups = groups or COLUMN_GROUPS
    mapping = Mapping((model.thread_dims[0].name,), (counter,), {}, ())
    return generate_kernel(original, kernel, model, mapping, (32, groups, 1),
                           warp_reduction=counter, column_groups=groups)


def generate_column_phases(original: str, kernel: Kernel, plan, groups: int | None = None
                           ) -> GeneratedKernel:
    """A column kernel run in phases (optimize/phases.py): a block of 32 x G threads per
    32 columns, its rows splitting each reduction and parallel loop of `plan` in turn.
    Raises ValueError when the barriers could not be reached by every thread."""
    groups = groups or COLUMN_GROUPS
    model = plan.model
    mapping = Mapping((model.thread_dims[0].name,), ("c0",), {}, ())
    return generate_kernel(original, kernel, model, mapping, (32, groups, 1),
                           warp_reduction="c0", column_groups=groups, phases=plan.kinds,
                           handed=plan.handed)


def _loop_statements(model: KernelModel) -> KernelModel:
    """The model of the statements inside the reduction loop."""
    return replace(model, statements=[s for s in model.statements if s.loops])


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
        texts[k].append(renamed_kernel(g.text, kernel.name, name))
        stages[k].append(Stage(name, g.ranges, g.block, g.per_block))
    return stages[0], stages[1], texts[0], texts[1]


def _accumulators(model: KernelModel, kernel: Kernel, names: dict[str, str]) -> list[dict]:
    out = []
    for s in (s for s in model.statements if s.loops):
        update = render_accumulation(model, kernel, s, names)
        element = next(a for a in s.accesses if a.kind == "write").element_type
        out.append({"target": update.target, "value": update.value, "type": element,
                    "sign": "-" if update.inverse else ""})
    return out


def _atomic_form(original: str, kernel: Kernel, model: KernelModel, counter: str,
                 template: str, thread_axis: str, loop_axis: str, block, per_block,
                 target_blocks: int = 0, **values) -> GeneratedKernel:
    """A reduction kernel that adds partial sums with atomicAdd (`template`), between the
    kernels of the statements before and after the loop. The thread dim spans the
    columns (`cols_*`) and the loop the rows (`rows_*`) for a column split, the other
    way round for tiles; `thread_axis` and `loop_axis` say which is x."""
    thread = model.thread_dims[0].name
    inside = _loop_statements(model)
    over_threads = thread_range(inside, thread, thread_axis)   # the loop's own columns
    over_loop = thread_range(inside, counter, loop_axis)
    cols, rows = (over_threads, over_loop) if thread_axis == "x" else (over_loop, over_threads)
    text = render_template(
        template, signature=_signature(original, kernel, block),
        column=describe_dim(model, thread), loop=describe_dim(model, counter),
        accumulators=_accumulators(model, kernel, {thread: "pc_x", counter: "pc_i"}),
        cols_lo=cols.lo, cols_hi=cols.hi, rows_lo=rows.lo, rows_hi=rows.hi, **values)
    first, extra, before, after = _before_after(original, kernel, model, thread, counter)
    return GeneratedKernel(kernel.name, "\n\n".join(before + [text] + after),
                           [cols, rows], block, [], {"x": "pc_x", "y": "pc_i"}, "pc_i",
                           axis_dims={thread_axis: thread, loop_axis: counter},
                           per_block=per_block, extra_stages=extra, first_stages=first,
                           target_blocks=target_blocks)


def generate_column_split(original: str, kernel: Kernel, model: KernelModel,
                          counter: str, extents: tuple[int | None, int | None],
                          override: tuple[int, ...] | None = None,
                          finish: bool = True) -> GeneratedKernel:
    """A coalesced but starved column reduction over 2-D blocks (columns on x, chunks of
    rows on y): templates/column_split.cu.j2; `extents`: split_extents; `override`: see
    split_shape. With `finish`, where the statements before and after the loop can run
    in the block that finishes each column (_finishing), one launch; else three."""
    shape = split_shape(*extents, override)
    finish = _finishing(model, kernel, counter, shape.columns) if finish else None
    if finish is None:
        return _atomic_form(original, kernel, model, counter, "column_split.cu.j2", "x", "y",
                            (32, shape.groups, 1), (32 * shape.columns, shape.rows, 1),
                            shape.target_blocks, rows_per_block=shape.rows,
                            groups=shape.groups, columns=shape.columns, finish=None)
    thread = model.thread_dims[0].name
    inside = _loop_statements(model)
    cols, rows = thread_range(inside, thread, "x"), thread_range(inside, counter, "y")
    block = (32, shape.groups, 1)
    text = render_template(
        "column_split.cu.j2", signature=_signature(original, kernel, block),
        column=describe_dim(model, thread), loop=describe_dim(model, counter),
        accumulators=_accumulators(model, kernel, {thread: "pc_x", counter: "pc_i"}),
        cols_lo=cols.lo, cols_hi=cols.hi, rows_lo=rows.lo, rows_hi=rows.hi,
        rows_per_block=shape.rows, groups=shape.groups, columns=shape.columns,
        finish=finish, name=kernel.name)
    return GeneratedKernel(kernel.name, text, [cols, rows], block, [],
                           {"x": "pc_x", "y": "pc_i"}, "pc_i",
                           axis_dims={"x": thread, "y": counter},
                           per_block=(32 * shape.columns, shape.rows, 1),
                           target_blocks=TARGET_BLOCKS)


# The blocks of a split that finishes its columns in one launch: its launch caps the
# grid at TARGET_BLOCKS blocks (x * y < TARGET_BLOCKS + x), so that with two blocks or
# more along y (x < TARGET_BLOCKS) the partial sums of every block fit in
# FINISHING_BLOCKS x (32 x columns) elements, and the columns' counters in
# FINISHING_BLOCKS
FINISHING_BLOCKS = 2 * TARGET_BLOCKS


def _finishing(model: KernelModel, kernel: Kernel, counter: str, columns: int
               ) -> dict | None:
    """The statements before and after the reduction loop, each as C text over the
    column pc_x under its own condition, for the block that finishes a column (the last
    of its column's blocks to add its partial sums: each column then runs, in one
    thread and in the original's order, the statements before the loop, the sum of the
    partial sums, the statements after it); None where they cannot run there.

    The loop reads no array the kernel writes but its own accumulators
    (optimize/reduction.column_reduction_obstacle), and the original's threads touch no
    element another thread writes (it is race-free), so a column's statements before
    and after the loop touch elements of its own that no partial sum reads: run last,
    after every partial sum of the column, they see and leave what the original's
    thread does. They must run over the loop's columns (the kernel covers no other),
    under conditions on the arguments alone."""
    thread = model.thread_dims[0].name
    inside = [s for s in model.statements if s.loops]
    outside = [s for s in model.statements if not s.loops]
    if not outside:
        return None
    loop_beta = inside[0].beta[0]
    try:
        everything = thread_range(model, thread, "x")
        loop_columns = thread_range(_loop_statements(model), thread, "x")
    except ValueError:
        return None
    if (everything.lo, everything.hi) != (loop_columns.lo, loop_columns.hi):
        return None
    names = {thread: "pc_x"}
    others = set(isl_helpers.all_dims(model)) - {thread}

    def reads_geometry(text: str) -> bool:      # new code has no such parameter
        return any(is_launch_parameter(p) and re.search(rf"\b{p}\b", text)
                   for p in model.parameters)

    def columns_of(s) -> str:
        return condition_to_c(as_parameters(model, s.name, [thread], ["pc_x"]))

    def guarded(s) -> str | None:
        condition = columns_of(s)
        try:
            body = rendered_statement(model, kernel, s, names, others)
        except ValueError:
            return None
        return None if reads_geometry(condition + body) else f"if ({condition}) {{ {body} }}"

    before = [guarded(s) for s in outside if s.beta[0] < loop_beta]
    after = [guarded(s) for s in outside if s.beta[0] > loop_beta]
    in_loop = columns_of(inside[0])
    if any(t is None for t in before + after) or reads_geometry(in_loop):
        return None
    return {"before": before, "after": after, "in_loop": in_loop,
            "blocks": FINISHING_BLOCKS, "slots": FINISHING_BLOCKS * 32 * columns}


def split_extents(model: KernelModel, counter: str) -> tuple[int | None, int | None]:
    """(columns, rows) of a column reduction when the launches fix them: the thread dim's
    and the loop's extents."""
    inside = _loop_statements(model)
    return known_extent(inside, model.thread_dims[0].name), known_extent(inside, counter)


def generate_tiled_reduction(original: str, kernel: Kernel, model: KernelModel,
                             counter: str, tile: int = 16) -> GeneratedKernel:
    """The core paper's partial-sum transform of a row reduction (templates/
    reduction_tiles.cu.j2): tile x tile blocks over (loop, row), shared memory, a sum per
    tile row, atomicAdd."""
    return _atomic_form(original, kernel, model, counter, "reduction_tiles.cu.j2", "y", "x",
                        (tile, tile, 1), (tile, tile, 1), t=tile)
