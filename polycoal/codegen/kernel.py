"""Generate the restructured kernel from an isl AST (`generate_kernel`).

Each new thread axis a carries one model dimension d. The statement domains get a
parameter pc_a with d = pc_a, and the AST is generated for the sequential schedule only
(displaced thread dimensions outermost, then the original loops in the original order,
with the textual positions in between). So the AST is the code ONE thread runs, given
its pc_x, pc_y, pc_z; conditions on them become guards. Around it, each axis is
strip-mined onto CUDA's blocks and threads as a grid-stride loop

    for (pc_a = lo_a + blockIdx.a * blockDim.a + threadIdx.a; pc_a <= hi_a;
         pc_a += blockDim.a * gridDim.a)

with [lo_a, hi_a] the range of d over all statement instances, so that any grid covers
every instance exactly once, also when the hardware's grid limits (65535 along y and z)
are smaller than the extent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import islpy as isl

from polycoal.model.isl_c import expr_to_c, min_max, rename_c, wide_parameters
from polycoal.codegen.isl_text import expr_to_isl
from polycoal.codegen.statements import (render_accumulation, render_promoted,
                                         render_statement)
from polycoal.frontend.cexpr import evaluate
from polycoal.frontend.lexer import matching, tokenize
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import is_launch_parameter, KernelModel

from polycoal.optimize.restructure import AXES, Mapping
from polycoal.templates import render_template

COLUMN_UNROLL = 4        # trips of a block row's loop unrolled in the phases form


@dataclass
class AxisRange:
    axis: str
    dim: str
    lo: str          # C expressions in the kernel's parameters (and launch parameters)
    hi: str
    host_lo: str = ""     # the same, without CUDA's min/max (host code)
    host_hi: str = ""
    lo_bounds: list = field(default_factory=list)    # Poly: lo is the first
    hi_bounds: list = field(default_factory=list)    # Poly: hi is their minimum
    start: str = ""       # the grid-stride loop's first value where not lo (warp-aligned)


@dataclass
class GeneratedKernel:
    name: str
    text: str
    ranges: list[AxisRange]
    block: tuple[int, int, int]
    hidden: list[str]                     # launch parameters passed as extra arguments
    thread_vars: dict[str, str]           # axis -> C variable (pc_x)
    iterator_prefix: str
    emitted: list[str] = field(default_factory=list)      # original statement per emitted one
    schedules: dict[str, list[str]] = field(default_factory=dict)   # sequential schedule
    axis_dims: dict[str, str] = field(default_factory=dict)          # axis -> model dim
    per_block: tuple[int, int, int] = (1, 1, 1)   # values of each axis one block covers
    extra_stages: list["Stage"] = field(default_factory=list)   # (see stages)
    first_stages: list["Stage"] = field(default_factory=list)
    lane_splits: list[LaneSplit] = field(default_factory=list)   # reduction loops split
    promoted: list[PromotedLoop] = field(default_factory=list)   # accumulators in registers
    phases: dict[str, str] = field(default_factory=dict)   # statement -> phase kind
    target_blocks: int = 0                # see Stage
    tiles: object = None                  # the StagingPlan or ProductPlan it carries out
    shared: int = 0                       # dynamic shared memory of a block (see Stage)

    @property
    def stages(self) -> list["Stage"]:
        """The launches that replace one launch of the original, in order."""
        main = Stage(self.name, self.ranges, self.block, self.per_block, self.target_blocks,
                     self.shared)
        return self.first_stages + [main] + self.extra_stages


@dataclass(frozen=True)
class LaneSplit:
    """A loop `for (it = init; cond; it += inc)` of isl's AST run by `lanes` lanes (or
    rows of a block): lane l runs it = init + l * lane_step + k * split_step, k >= 0,
    while cond holds (as emitted; validate/lanes.py checks it against the loop). Texts
    in isl syntax over the enclosing iterators and the parameters."""

    iterator: str
    init: str
    cond: str
    inc: str
    lanes: int
    lane_step: int        # distance between the first iterations of neighbouring lanes
    split_step: int       # distance between a lane's consecutive iterations


@dataclass(frozen=True)
class PromotedLoop:
    """A loop `for (it = init; cond; it += inc)` whose accumulator was promoted to a
    register: loaded before it and stored after it under the guard `guard` (isl texts
    over the enclosing iterators and the parameters; validate/lanes.py checks that the
    guard holds exactly where the loop runs at least once)."""

    iterator: str
    init: str
    cond: str
    inc: str
    guard: str


@dataclass
class Stage:
    """One launch: the kernel, the ranges its grid covers and how many of each one block
    covers (a block covers `per_block` values of each axis)."""

    kernel: str
    ranges: list[AxisRange]
    block: tuple[int, int, int]
    per_block: tuple[int, int, int]
    # with target_blocks = T > 0, the grid's y count is capped at ceil(T / x count): a
    # kernel whose blocks loop over y (grid-stride) then has about T blocks whatever
    # the extents the launch finds (column splits sized on the host)
    target_blocks: int = 0
    # bytes of dynamic shared memory the launch gives each block (past 48 KiB: the
    # kernel's attribute raised first, codegen/launch.py)
    shared: int = 0


def capped_y_blocks(y_blocks: int, x_blocks: int, target_blocks: int) -> int:
    """The y count of a grid of `x_blocks` columns of blocks capped by target_blocks
    (see Stage): at least 1, at most y_blocks."""
    if not target_blocks:
        return y_blocks
    return max(1, min(y_blocks, -(-target_blocks // max(1, x_blocks))))


def renamed_kernel(text: str, name: str, new: str) -> str:
    """A kernel's text (or signature) with its name, the first `name` in it, now `new`."""
    return re.sub(rf"\b{re.escape(name)}\b", new, text, count=1)


def _fresh(base: str, taken: set[str]) -> str:
    name = base
    while name in taken:
        name = "_" + name
    return name


def describe_dim(model: KernelModel, dim: str) -> str:
    for d in model.thread_dims:
        if d.name == dim:
            return f"{dim} (old thread index along {d.axis})"
    k = int(dim[1:])
    for s in model.statements:
        if len(s.loops) > k:
            loop = s.loops[k]
            return f"{loop.source_name} (loop at line {loop.location.line})"
    return dim


def default_block(n_axes: int) -> tuple[int, int, int]:
    return {1: (256, 1, 1), 2: (32, 8, 1), 3: (32, 4, 2)}[n_axes]


def _signature(original: str, kernel: Kernel, block: tuple[int, int, int] | None = None,
               min_blocks: int = 0) -> str:
    """The kernel's definition text up to (not including) its body's `{`, for a kernel
    launched with `block`: its `__launch_bounds__` promise the new block's thread count
    (the original's may be smaller: a launch past it fails); with `min_blocks`, bounds
    that ask for that many blocks per multiprocessor (registers capped to fit), written
    before the name where the original has none."""
    text = original[kernel.span.start:kernel.span.end]
    tokens = tokenize(text)
    for k, t in enumerate(tokens):
        if t.text == "(" and k and tokens[k - 1].text == kernel.name:
            close = matching(tokens, k)
            body = next(j for j in range(close, len(tokens)) if tokens[j].text == "{")
            head = text[:tokens[body].start].rstrip()
            if min_blocks and block and "__launch_bounds__" not in (x.text for x in tokens[:k]):
                threads = block[0] * block[1] * block[2]
                return head[:tokens[k - 1].start] + \
                    f"__launch_bounds__({threads}, {min_blocks}) " + head[tokens[k - 1].start:]
            return _launch_bounds(head, block, min_blocks)
    raise ValueError(f"cannot find the body of kernel {kernel.name}")


def _launch_bounds(signature: str, block: tuple[int, int, int] | None,
                   min_blocks: int = 0) -> str:
    tokens = tokenize(signature)
    for k, t in enumerate(tokens):
        if t.text == "__launch_bounds__" and k + 1 < len(tokens) and tokens[k + 1].text == "(":
            close = matching(tokens, k + 1)
            extra = f", {min_blocks}" if min_blocks else ""
            new = f"__launch_bounds__({block[0] * block[1] * block[2]}{extra})" if block else ""
            return signature[:t.start] + new + signature[tokens[close].end:]
    return signature


def geometry_read(texts: list[str], model: KernelModel) -> list[str]:
    """The original launch's geometry parameters (nthreads_x...) the texts read."""
    return sorted(v for v in model.parameters if is_launch_parameter(v)
                  and any(re.search(rf"\b{re.escape(v)}\b", t) for t in texts))


def passed_geometry(text: str, hidden: list[str]) -> str:
    """`text` reading the original launch's geometry from the kernel's extra arguments
    pc_<name> (with_geometry)."""
    if not hidden:
        return text
    return re.sub(r"\b(" + "|".join(map(re.escape, hidden)) + r")\b", r"pc_\1", text)


def with_geometry(signature: str, hidden: list[str]) -> str:
    """The signature with an extra argument `long long pc_<name>` for each of `hidden`."""
    if not hidden:
        return signature
    close = signature.rfind(")")
    return signature[:close] + "".join(f", long long pc_{h}" for h in hidden) \
        + signature[close:]


def thread_range(model: KernelModel, dim: str, axis: str,
                 wide: dict[str, str] | None = None) -> AxisRange:
    """The range of `dim` over all instances; on the device, parameters named in `wide`
    are written as it says (isl_c.wide_parameters)."""
    lowers, uppers = isl_helpers.dim_bounds(model, dim)
    if not lowers or not uppers:
        raise ValueError(f"the range of {dim} is unbounded")
    lo = lowers[0].to_c("*")
    his = [b.to_c("*") for b in uppers]
    device = [rename_c(h, wide or {}) for h in his]
    return AxisRange(axis, dim, rename_c(lo, wide or {}), min_max("min", device, True), lo,
                     min_max("min", his, False), [lowers[0]], uppers)


WARP = 32


def warp_aligned(lo: str) -> str:
    """C text of the greatest multiple of WARP not above `lo` (lo may be negative)."""
    value = evaluate(lo)
    if isinstance(value, int):
        return str(value // WARP * WARP)
    return f"(({lo}) - ((({lo}) % {WARP} + {WARP}) % {WARP}))"


def aligned_lanes(r: AxisRange, symbolic: bool = True) -> bool:
    """Start the lanes of axis x at a multiple of a warp below the range's first value,
    as the original's warps are (every warp's accesses then start a 128-byte line:
    a range from 1 would straddle two lines a warp); the values below the range are
    guarded off. False where the range starts at a multiple of 32 already, or where
    its start is not a constant and `symbolic` is false (a form whose guards isl
    writes: translation validation reads the generated kernel's affine conditions,
    and the start's remainder by 32 is not one)."""
    if r.axis != "x":
        return False
    start = warp_aligned(r.lo)
    if start == r.lo or (not symbolic and not start.lstrip("-").isdigit()):
        return False
    r.start, r.host_lo = start, warp_aligned(r.host_lo)
    return True


def within_range(variable: str, r: AxisRange, below: int = 0) -> list[str]:
    """isl constraints a grid-stride loop over `r` guarantees of its `variable`; with
    `below`, a loop whose lanes start up to that many values before the range (isl
    then guards them off)."""
    low = f" - {below}" if below else ""
    return [f"{variable} >= {r.lo_bounds[0].to_c('*')}{low}"] + \
        [f"{variable} <= {b.to_c('*')}" for b in r.hi_bounds]


def sequential_schedules(model: KernelModel, mapping: Mapping) -> dict[str, list[str]]:
    """Per statement, the schedule inside one thread (isl text of each coordinate):
    displaced thread dims outermost, then the 2d+1 textual schedule of the loops that
    stay sequential."""
    schedules = {}
    for st in model.statements:
        beta = list(st.beta) + [0] * (model.depth + 1 - len(st.beta))
        out = [d for d in mapping.sequential if not d.startswith("c")]
        for k in range(model.depth):
            out.append(str(beta[k]))
            if f"c{k}" in mapping.sequential:
                step = st.loops[k].step if k < len(st.loops) else 1
                out.append(f"c{k}" if step > 0 else f"-c{k}")
        out.append(str(beta[model.depth]))
        schedules[st.name] = out
    return schedules


def generate_kernel(original: str, kernel: Kernel, model: KernelModel, mapping: Mapping,
                    block: tuple[int, int, int] | None = None,
                    promote: bool = False, warp_reduction: str | None = None,
                    column_groups: int = 0,
                    phases: dict[str, str] | None = None,
                    handed: frozenset[str] = frozenset(),
                    row_warps: int = 1) -> GeneratedKernel:
    """The new kernel's text. With `warp_reduction` (a loop dim carrying only
    reductions), the single thread axis is run by whole warps instead of threads: the
    lanes of a warp split that loop (coalesced), each accumulates in a register, a
    shuffle tree adds the 32 partial results, and lane 0 updates memory and runs the
    statements outside the loop (core paper section 4, the warp-cooperative form). With
    `row_warps` W > 1, a block of W warps runs each value instead (few rows): its 32 W
    threads split the loop, each warp's shuffle tree sums its lanes, and thread 0 adds
    the W warps' sums (through shared memory, between barriers: every thread of the
    block has the same value of the axis, so each reaches them) in their order.

    With `column_groups` = G as well, the form is block-cooperative instead, for a
    column reduction (coalesced along the threads but starved): a block of 32 x G
    threads runs 32 consecutive values of the thread axis (x, coalesced), its G rows of
    threads split the loop, their partial results meet in shared memory, and row 0
    updates memory and runs the statements outside the loop. One launch, no atomics:
    the statements before and after the loop keep their order in each thread.

    With `phases` as well (statement -> "reduce", "parallel" or "row0", from
    optimize/phases.py), the block runs the thread's program loop by loop: the rows split
    each reduction loop as above and each parallel loop by iterations, with a barrier
    before and after each; row 0 runs the rest. The private scalars in `handed` that a
    split loop reads reach every row through shared memory at the barrier before it."""
    taken = {t.text for t in tokenize(original[kernel.span.start:kernel.span.end])}
    thread_vars = {a: _fresh(f"pc_{a}", taken) for a in AXES[:len(mapping.axes)]}
    prefix = _fresh("pc_i", taken)
    axis_of = dict(zip(mapping.axes, AXES))
    params = list(model.parameters)
    new_params = params + [thread_vars[a] for a in AXES[:len(mapping.axes)]]
    dims = model.dims

    # ranges of the dims put on thread axes, over all instances
    wide = wide_parameters(kernel.parameters)
    ranges = [thread_range(model, dim, axis, wide) for dim, axis in axis_of.items()]

    # sequential schedule per statement, with the thread dims as parameters
    schedules = sequential_schedules(model, mapping)
    schedule = None
    for s in model.statements:
        ties = " and ".join(f"{d} = {thread_vars[axis_of[d]]}" for d in mapping.axes)
        text = (f"[{', '.join(new_params)}] -> {{ {s.name}[{', '.join(dims)}] -> "
                f"[{', '.join(schedules[s.name])}] : "
                f"{isl_helpers.domain_constraints(model, s)} and {ties} }}")
        m = isl.UnionMap(text)
        schedule = m if schedule is None else schedule.union(m)
    # the lanes of a thread-per-value form (not of a warp's split loop) from a multiple
    # of a warp: isl then guards the values below the range (the context says only
    # pc_x >= lo - 31); a column form guards them with its pc_active
    plain = not warp_reduction
    for r in ranges:
        if plain or column_groups:
            aligned_lanes(r, symbolic=not plain)
    # what the grid-stride loops guarantee about pc_a, so that isl omits those guards
    enforced = [c for r in ranges for c in within_range(
        thread_vars[r.axis], r, WARP - 1 if plain and r.start else 0)]
    ctx_text = " and ".join(model.context + enforced) or "true"
    ast_ctx = isl.Set(f"[{', '.join(new_params)}] -> {{ : {ctx_text} }}")
    ast_build = isl.AstBuild.from_context(ast_ctx)
    ids = isl.IdList.alloc(ast_ctx.get_ctx(), 8)
    for k in range(16):
        ids = ids.add(isl.Id(f"{prefix}{k}"))
    ast_build = ast_build.set_iterators(ids)
    root = ast_build.node_from_schedule_map(schedule)

    by_name = {s.name: s for s in model.statements}
    used: set[str] = set()

    emitted: list[str] = []
    in_reduction: list[tuple[str, str, str, str]] = []   # (statement, target, op, value)
    state = {"inside": False, "rows": False}

    def user(expr: isl.AstExpr) -> str:
        name = expr.get_op_arg(0).get_id().name
        emitted.append(name)
        args = [expr_to_c(expr.get_op_arg(k + 1), device=True)
                for k in range(expr.get_op_n_arg() - 1)]
        used.update(v for a in args for v in params if v in a)
        if warp_reduction and state["inside"]:
            update = render_accumulation(model, kernel, by_name[name], dict(zip(dims, args)))
            if update is None or not update.reassociable:
                raise ValueError(f"statement {name} is not a reassociable update")
            k = len(in_reduction)
            in_reduction.append((name, update))
            return f"pc_acc{k} {update.op}= {update.value}; pc_hit{k} = 1;"
        text, vars_used = render_statement(model, kernel, by_name[name], dict(zip(dims, args)))
        used.update(vars_used)
        if warp_reduction and not state["rows"]:
            return f"if ({leader}) {{ {text}; }}"
        return text + ";"

    reduction_iterators = set()
    if warp_reduction:
        for st in model.statements:
            if warp_reduction in schedules[st.name]:
                reduction_iterators.add(f"{prefix}{schedules[st.name].index(warp_reduction)}")

    leader = "threadIdx.y == 0 && pc_active" if column_groups else "pc_lane == 0"
    shared: list[str] = []
    lane_splits: list[LaneSplit] = []
    promoted: list[PromotedLoop] = []

    def split_loop(node: isl.AstNode, iterator: str) -> tuple[list[str], list[str]]:
        """(the loop's header split over the lanes (rows), its body) for a loop of isl's
        AST: lane l runs the iterations init + (l + L k) * inc, k >= 0 (inc: the loop's
        own step, L lanes or rows splitting it)."""
        body = _render_ast(node.for_get_body(), user, names=wide, pragmas=pragmas)
        init = expr_to_c(node.for_get_init(), wide, device=True)
        cond = expr_to_c(node.for_get_cond(), wide, device=True)
        lanes, lane = (column_groups, "(int)threadIdx.y") if column_groups else \
            (32 * row_warps, "pc_lane")
        step = node.for_get_inc().get_val().to_python()   # isl's loops step by constants
        split = LaneSplit(iterator, expr_to_isl(node.for_get_init()),
                          expr_to_isl(node.for_get_cond()), str(step), lanes, step,
                          lanes * step)
        lane_splits.append(split)
        scaled = lane if split.lane_step == 1 else f"{lane} * {split.lane_step}"
        written = pragmas(node, iterator)
        if column_groups and not written:
            # a row of the block runs one trip in G: four unrolled keep four loads of
            # each reference in flight (Gram-Schmidt's column kernel at 8192 on the
            # H200: 0.413 ms rolled, 0.285 unrolled by four, 0.394 by eight)
            written = [f"#pragma unroll {COLUMN_UNROLL}"]
        return written + [f"for (int {iterator} = ({init}) + {scaled}; "
                          f"{cond}; {iterator} += {split.split_step}) {{"], body

    def handed_over(node: isl.AstNode) -> list[str]:
        """A barrier, then the private scalars of `handed` the statements of `node`
        read, from row 0 to every row of the block through shared memory."""
        names = set()
        for n in _statements_in(node):
            accesses = by_name[n].accesses
            # a reduction's accumulator is summed in registers; row 0 alone updates it
            own = {a.array for a in accesses if a.kind == "write" and phases[n] == "reduce"}
            names |= {a.array for a in accesses if a.kind == "read" and a.array in handed
                      and a.array not in own}
        names = sorted(names)
        lines = []
        for name in names:
            declaration = f"__shared__ {model.private[name][0]} pc_row0_{name}[32];"
            if declaration not in shared:
                shared.append(declaration)
            lines.append(f"if ({leader}) pc_row0_{name}[threadIdx.x] = {name};")
        lines.append("__syncthreads();")
        return lines + [f"{name} = pc_row0_{name}[threadIdx.x];" for name in names]

    def warp_loop(node: isl.AstNode, iterator: str, guards: tuple[str, ...]):
        """The reduction loop, split over the lanes of a warp (or the rows of a block);
        with phases, a parallel loop split over the rows of the block."""
        if phases is not None:
            kinds = {phases[n] for n in _statements_in(node)}
            if kinds not in ({"reduce"}, {"parallel"}):
                return None
        elif iterator not in reduction_iterators:
            return None
        if column_groups and any(re.search(rf"\b{thread_vars['x']}\b", g) for g in guards):
            # every thread of a block must reach the barriers below
            raise ValueError("the reduction loop runs under a condition on the thread")
        entry = handed_over(node) if phases is not None else []
        if phases is not None and kinds == {"parallel"}:
            state["rows"] = True
            head, body = split_loop(node, iterator)
            state["rows"] = False
            return entry + ["if (pc_active) {"] + ["  " + l for l in head] + \
                ["    " + l for l in body] + ["  }", "}", "__syncthreads();"]
        first = len(in_reduction)
        state["inside"] = True
        head, body = split_loop(node, iterator)
        state["inside"] = False
        mine = list(enumerate(in_reduction[first:], first))
        lines = entry + ["{"]
        for k, (name, update) in mine:
            element = next(a for a in by_name[name].accesses if a.kind == "write").element_type
            lines.append(f"  {element} pc_acc{k} = {'0' if update.op == '+' else '1'};")
            lines.append(f"  int pc_hit{k} = 0;")
            if column_groups:
                shared.append(f"__shared__ {element} pc_part{k}[{column_groups}][32];")
                shared.append(f"__shared__ int pc_hits{k}[{column_groups}][32];")
        loop = head + ["  " + l for l in body] + ["}"]
        # pc_hit<k>: whether the thread ran update k at all. Memory is updated only where
        # some lane (row) ran it, as the original updates it only where its loop ran
        # the statement (a loop may run zero times, or skip the update by a guard).
        if column_groups:
            # the rows of the block meet in shared memory; every thread of the block
            # reaches both barriers (the tile loop around is uniform)
            lines.append("  if (pc_active) {")
            lines += ["    " + l for l in loop] + ["  }"]
            for k, _ in mine:
                lines.append(f"  pc_part{k}[threadIdx.y][threadIdx.x] = pc_acc{k};")
                lines.append(f"  pc_hits{k}[threadIdx.y][threadIdx.x] = pc_hit{k};")
            lines.append("  __syncthreads();")
            lines.append(f"  if ({leader}) {{")
            for k, (_, update) in mine:
                lines.append(f"    for (int pc_r = 1; pc_r < {column_groups}; ++pc_r) {{")
                lines.append(f"      pc_acc{k} {update.op}= pc_part{k}[pc_r][threadIdx.x];")
                lines.append(f"      pc_hit{k} |= pc_hits{k}[pc_r][threadIdx.x];")
                lines.append("    }")
                lines.append(f"    if (pc_hit{k}) {update.target} {update.apply} pc_acc{k};")
            lines += ["  }", "  __syncthreads();", "}"]
            return lines
        if row_warps > 1:
            # what thread 0 wrote before the loop, seen by every warp's loads
            lines.append("  __syncthreads();")
        lines += ["  " + l for l in loop]
        lines.append("  for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {")
        for k, (_, update) in mine:
            lines.append(f"    pc_acc{k} {update.op}= __shfl_down_sync(0xffffffffu, pc_acc{k}, "
                         "pc_offset);")
            lines.append(f"    pc_hit{k} |= __shfl_down_sync(0xffffffffu, pc_hit{k}, "
                         "pc_offset);")
        lines.append("  }")
        if row_warps > 1:
            # each warp's lane 0 holds its sum: they meet in shared memory, thread 0
            # adds them in the warps' order; the barrier after keeps the next value's
            # sums from overwriting them before it has
            for k, (name, update) in mine:
                element = next(a for a in by_name[name].accesses
                               if a.kind == "write").element_type
                shared.append(f"__shared__ {element} pc_wsum{k}[{row_warps}];")
                shared.append(f"__shared__ int pc_whit{k}[{row_warps}];")
            lines.append("  if ((pc_lane & 31) == 0) {")
            for k, _ in mine:
                lines.append(f"    pc_wsum{k}[pc_lane >> 5] = pc_acc{k};")
                lines.append(f"    pc_whit{k}[pc_lane >> 5] = pc_hit{k};")
            lines += ["  }", "  __syncthreads();"]
            lines.append(f"  if ({leader}) {{")
            for k, (_, update) in mine:
                lines.append(f"    for (int pc_w = 1; pc_w < {row_warps}; ++pc_w) {{")
                lines.append(f"      pc_acc{k} {update.op}= pc_wsum{k}[pc_w];")
                lines.append(f"      pc_hit{k} |= pc_whit{k}[pc_w];")
                lines.append("    }")
                lines.append(f"    if (pc_hit{k}) {update.target} {update.apply} pc_acc{k};")
            lines += ["  }", "  __syncthreads();", "}"]
            return lines
        lines.append(f"  if ({leader}) {{")
        for k, (_, update) in mine:
            lines.append(f"    if (pc_hit{k}) {update.target} {update.apply} pc_acc{k};")
        lines += ["  }", "}"]
        return lines

    def promotion(loop: isl.AstNode, iterator: str):
        """Register promotion (scalar replacement) of a loop that only accumulates into
        one element, X[f] op= e with f free of the loop's iterator and no other access to
        X in the loop: the element is loaded once before the loop, accumulated in a
        register (in the same order, so the result is identical) and stored after it."""
        body = loop.for_get_body()
        while body.get_type() == isl.ast_node_type.block and \
                body.block_get_children().n_ast_node() == 1:
            body = body.block_get_children().get_at(0)
        if not promote or body.get_type() != isl.ast_node_type.user:
            return None
        expr = body.user_get_expr()
        st = by_name[expr.get_op_arg(0).get_id().name]
        target = next((a for a in st.accesses if a.kind == "write"), None)
        if target is None or target.space != "global" or \
                sum(1 for a in st.accesses if a.array == target.array) != 2:
            return None
        args = [expr_to_c(expr.get_op_arg(k + 1), device=True)
                for k in range(expr.get_op_n_arg() - 1)]
        names = dict(zip(dims, args))
        rendered = render_accumulation(model, kernel, st, names)
        if rendered is None or re.search(rf"\b{re.escape(iterator)}\b", rendered.target):
            return None
        emitted.append(st.name)
        ref = rendered.target
        init, cond = expr_to_isl(loop.for_get_init()), expr_to_isl(loop.for_get_cond())
        promoted.append(PromotedLoop(iterator, init, cond, expr_to_isl(loop.for_get_inc()),
                                     re.sub(rf"\b{re.escape(iterator)}\b", f"({init})",
                                            cond)))
        return (f"{target.element_type} pc_acc = {ref};",
                render_promoted(model, kernel, st, names, "pc_acc") + ";",
                f"{ref} = pc_acc;")

    def pragmas(loop: isl.AstNode, iterator: str) -> list[str]:
        """The pragmas the source wrote before the loop this AST loop runs (the source
        loop of every statement inside it at this schedule position), as lines."""
        position = int(iterator[len(prefix):])
        written = set()
        for name in _statements_in(loop):
            dim = schedules[name][position].lstrip("-")
            loops = by_name[name].loops
            k = int(dim[1:]) if dim.startswith("c") and dim[1:].isdigit() else len(loops)
            written.add(loops[k].pragmas if k < len(loops) else ())
        return [f"#pragma {p}" for p in next(iter(written))] if len(written) == 1 else []

    body = _render_ast(root, user, promotion, warp_loop if warp_reduction else None,
                       names=wide, pragmas=pragmas)
    for r in ranges:
        used.update(v for v in params if v in r.lo or v in r.hi)
    # the original geometry wherever the generated code reads it: statements, ranges,
    # and the bounds of loops over displaced thread dims (for (pc_i0 ...; < nthreads_x))
    emitted_text = "\n".join(body + [r.lo + " " + r.hi for r in ranges])
    used.update(v for v in params if is_launch_parameter(v)
                and re.search(rf"\b{re.escape(v)}\b", emitted_text))
    hidden = sorted(v for v in used if is_launch_parameter(v))
    body = [passed_geometry(line, hidden) for line in body]
    for r in ranges:
        r.lo, r.hi = passed_geometry(r.lo, hidden), passed_geometry(r.hi, hidden)
        r.start = passed_geometry(r.start, hidden) if r.start else ""
    privates = [f"{ty} {name};" for name, (ty, _) in sorted(model.private.items())]
    block = block or default_block(len(mapping.axes))
    if not warp_reduction and not column_groups:
        # a block axis beyond the new geometry has no grid-stride loop: each of its
        # threads would run every instance again; it is one thread wide
        block = tuple(b if k < len(mapping.axes) else 1 for k, b in enumerate(block))
    old = ", ".join(f"{d.name}: thread index along {d.axis}" for d in model.thread_dims)
    # a block of many warps a row: its registers capped to launch it whole
    signature = with_geometry(_signature(original, kernel, block,
                                         1 if row_warps > 1 else 0), hidden)
    text = render_template(
        "kernel.cu.j2", signature=signature, hidden=hidden,
        old_geometry=old, old_block=model.block_shape,
        new_axes=[(a, describe_dim(model, d)) for d, a in axis_of.items()],
        sequential=[describe_dim(model, d) for d in mapping.sequential],
        block=block, ranges=ranges, thread_vars=thread_vars, privates=privates,
        body=body, warp=bool(warp_reduction) and not column_groups,
        columns=column_groups, shared=shared, phased=phases is not None,
        reduction=describe_dim(model, warp_reduction) if warp_reduction else "",
        row_warps=row_warps)
    per_block = tuple(block)
    if column_groups:
        per_block = (32, 1, 1)
    elif warp_reduction:
        per_block = (block[0] // (32 * row_warps), block[1], block[2])
    return GeneratedKernel(kernel.name, text, ranges, block, hidden, thread_vars, prefix,
                           emitted=emitted, schedules=schedules,
                           axis_dims={a: d for d, a in axis_of.items()}, per_block=per_block,
                           lane_splits=lane_splits, promoted=promoted,
                           phases=dict(phases or {}))


def _statements_in(node: isl.AstNode) -> list[str]:
    """Names of the statements an isl AST node runs."""
    t = node.get_type()
    if t == isl.ast_node_type.user:
        return [node.user_get_expr().get_op_arg(0).get_id().name]
    if t == isl.ast_node_type.block:
        children = node.block_get_children()
        return [n for k in range(children.n_ast_node())
                for n in _statements_in(children.get_at(k))]
    if t == isl.ast_node_type.for_:
        return _statements_in(node.for_get_body())
    if t == isl.ast_node_type.if_:
        out = _statements_in(node.if_get_then_node())
        return out + (_statements_in(node.if_get_else_node()) if node.if_has_else_node()
                      else [])
    if t == isl.ast_node_type.mark:
        return _statements_in(node.mark_get_node())
    return []


def _render_ast(node: isl.AstNode, user, promotion=lambda loop, iterator: None,
                special=None, guards: tuple[str, ...] = (),
                names: dict[str, str] | None = None,
                pragmas=lambda loop, iterator: []) -> list[str]:
    """C lines of an isl AST (loops, ifs, blocks, statements), indented by two.
    `promotion(loop, iterator)` may turn a loop into (before, statement, after);
    `special(node, iterator, guards)` may render a loop entirely (lines) or decline
    (None); `guards`: the conditions of the ifs around the node (`!(c)` in an else);
    `names`: how loop bounds and conditions write parameters (isl_c.wide_parameters);
    `pragmas(loop, iterator)`: the lines written before a loop (`#pragma unroll`)."""
    t = node.get_type()
    if t == isl.ast_node_type.block:
        children = node.block_get_children()
        out = []
        for k in range(children.n_ast_node()):
            out += _render_ast(children.get_at(k), user, promotion, special, guards, names, pragmas)
        return out
    if t == isl.ast_node_type.for_:
        it = expr_to_c(node.for_get_iterator())
        if special is not None:
            lines = special(node, it, guards)
            if lines is not None:
                return lines
        init = expr_to_c(node.for_get_init(), names, device=True)
        cond = expr_to_c(node.for_get_cond(), names, device=True)
        inc = expr_to_c(node.for_get_inc())
        head = f"for (int {it} = {init}; {cond}; {it} += {inc}) {{"
        promoted = promotion(node, it)
        if promoted:
            # the element is loaded and stored only when the loop runs at least once:
            # the original touches it in no other case (it may lie outside the array)
            before, statement, after = promoted
            return ["{", f"  int {it} = {init};", f"  if ({cond}) {{", "    " + before,
                    *["    " + p for p in pragmas(node, it)],
                    f"    for (; {cond}; {it} += {inc}) {{", "      " + statement, "    }",
                    "    " + after, "  }", "}"]
        body = _render_ast(node.for_get_body(), user, promotion, special, guards, names, pragmas)
        return pragmas(node, it) + [head] + ["  " + l for l in body] + ["}"]
    if t == isl.ast_node_type.if_:
        cond = expr_to_c(node.if_get_cond(), names, device=True)
        out = [f"if ({cond}) {{"]
        out += ["  " + l for l in _render_ast(node.if_get_then_node(), user, promotion,
                                              special, guards + (cond,), names,
                                              pragmas)]
        if node.if_has_else_node():
            out += ["} else {"] + ["  " + l for l in
                                   _render_ast(node.if_get_else_node(), user, promotion,
                                               special, guards + (f"!({cond})",), names,
                                               pragmas)]
        return out + ["}"]
    if t == isl.ast_node_type.user:
        return [user(node.user_get_expr())]
    if t == isl.ast_node_type.mark:
        return _render_ast(node.mark_get_node(), user, promotion, special, guards, names, pragmas)
    raise ValueError(f"unexpected isl AST node {t}")
