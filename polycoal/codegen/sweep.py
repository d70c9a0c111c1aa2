"""Generate a thread's sweep along its row staged through shared memory
(optimize/sweep.py, templates/sweep_tiles.cu.j2)."""

from __future__ import annotations

from pycparser import c_ast

from polycoal.codegen.kernel import (GeneratedKernel, describe_dim, _signature,
                                     geometry_read, passed_geometry, thread_range,
                                     with_geometry)
from polycoal.codegen.statements import renderer
from polycoal.frontend.normalise import walk
from polycoal.frontend.program import Kernel
from polycoal.model.accumulation import text
from polycoal.model.isl_c import wide_parameters
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.sweep import LANE_TRIPS, SweepPlan
from polycoal.templates import render_template

BLOCK = (32, 1, 1)
# the next chunk's loads issued before this chunk's trips run (measured on the H200,
# tools/explore_sweep_forms.py; False: each chunk loads its own columns first)
PREFETCH = True
# each trip's reads that no earlier trip writes loaded from the tile a trip ahead
# (read_ahead), in registers, where a trip divides or calls a function: the compiler
# puts a division's slow path (a call) in a region it does not move loads across, so
# the tile's latency sat on the chain of dependent trips (ADI's sweeps 1.25-1.3x, a
# tridiagonal elimination 1.55x faster on the H200); a trip of additions and products
# it schedules better itself (a prefix sum per row 1.34x slower read ahead)
READ_AHEAD = True


def tile_index(plan: SweepPlan, off: int, low: int, kk: str = "pc_kk") -> str:
    """The tile column of a reference `off` at trip `kk` of the chunk."""
    sense = plan.direction * plan.step
    trip = kk if sense > 0 else f"({plan.chunk - 1} - {kk})"
    return f"{trip} + {off - low}"


def _divides(model: KernelModel) -> bool:
    """Whether a statement divides or calls a function."""
    return any(isinstance(n, c_ast.FuncCall) or isinstance(n, c_ast.BinaryOp) and n.op == "/"
               or isinstance(n, c_ast.Assignment) and n.op == "/="
               for s in model.statements if s.node is not None for n in walk(s.node))


def read_ahead(plan: SweepPlan, model: KernelModel) -> list[str]:
    """The reads (texts) whose element no trip of the chunk writes before they read it:
    each trip's value can be loaded from the tile a trip early. With one written `off`
    w per array, a read at `off` o reaches the column trip kk + o - w writes (sense
    +1; kk - (o - w) going down): a later trip for o > w (o < w going down), never for
    an array no trip writes, this trip for o = w, read before the write where it is in
    the writing statement or one before it. (An earlier trip's value stays in a
    register anyway: the compiler forwards the tile's store to the next trip's load.)
    A value read a trip early is the tile's then: trip kk writes column kk + w, never
    the column kk + 1 + o of a read taken so."""
    sense = plan.direction * plan.step
    written = {a.name: a.written for a in plan.arrays}
    offsets = dict(plan.offsets)
    writer = {}
    for k, s in enumerate(model.statements):
        for a in s.accesses:
            if a.kind == "write" and a.space == "global":
                writer.setdefault(a.array, k)
    # a text read ahead is one register for all its reads: each must qualify (a read
    # of the element after this trip's write, in a later statement, must not), and
    # none may be the operand of ++ or -- (a register the statement would change)
    ahead, refused = [], set()
    for k, s in enumerate(model.statements):
        # the operands of ++ and --
        stepped = {text(n.expr) for n in (walk(s.node) if s.node is not None else ())
                   if isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--")}
        for a in s.accesses:
            if a.kind != "read" or a.space != "global":
                continue
            o, w = offsets[a.text], written[a.array]
            if a.text not in stepped and (w is None or sense * (o - w) > 0 or
                                          (o == w and writer[a.array] >= k)):
                if a.text not in ahead:
                    ahead.append(a.text)
            else:
                refused.add(a.text)
    return [t for t in ahead if t not in refused]



def _trip_statements(model: KernelModel, kernel: Kernel, plan: SweepPlan,
                     registers: dict[str, str], place) -> list[str]:
    """A trip's statements (the row pc_row, the counter pc_c), each global reference
    read from its register where `registers` has one, else at `place(access)`."""
    statements = []
    for s in model.statements:
        r = renderer(model, kernel, s, {plan.row: "pc_row", plan.counter: "pc_c"})
        r.replace = {a.text: registers.get(a.text) or place(a)
                     for a in s.accesses if a.space == "global"}
        r.targets = {a.text: place(a) for a in s.accesses
                     if a.space == "global" and a.kind == "write"}
        text = r.visit(s.node).rstrip()
        statements.append(text if text.endswith((";", "}")) else text + ";")
    return statements


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
    def tile(a, kk: str = "pc_kk") -> str:
        index = tile_index(plan, offsets[a.text], lows[a.array], kk)
        return f"pc_s{slot[a.array]}[pc_lane][{index}]"

    # reads a trip ahead: the tile's latency off the chain of dependent trips
    reads = {a.text: a for _, a in model.accesses()}
    early = read_ahead(plan, model) if READ_AHEAD and _divides(model) else []
    ahead = [{"type": reads[t].element_type, "next": f"pc_a{n}", "now": f"pc_b{n}",
              "first": tile(reads[t], "0"), "then": tile(reads[t], "(pc_kk + 1)")}
             for n, t in enumerate(early)]
    registers = {t: f"pc_b{n}" for n, t in enumerate(early)}
    statements = _trip_statements(model, kernel, plan, registers, tile)
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
        chunk=plan.chunk, arrays=arrays, rows=plan.warp_rows, sense=sense, prefetch=PREFETCH,
        stride=passed_geometry(stride, hidden), ahead=ahead,
        statements=[f"{ty} {name};" for name, ty in plan.privates] +
        [passed_geometry(t, hidden) for t in statements],
        row_lo=rows.lo, row_hi=rows.hi, k_lo=trips.lo, k_hi=trips.hi, step=plan.step,
        first_trip=passed_geometry(f"(long long)({trips.lo}) + pc_t0" if plan.step > 0
                                   else f"(long long)({trips.hi}) - pc_t0", hidden))
    return GeneratedKernel(kernel.name, text, [rows], BLOCK, hidden, {"x": "pc_row"},
                           "pc_i", axis_dims={"x": plan.row}, per_block=(plan.warp_rows, 1, 1),
                           tiles=plan)


LANES_BLOCK = (256, 1, 1)     # eight warps a block, a row each


def generate_lanes(original: str, kernel: Kernel, model: KernelModel,
                   plan: SweepPlan, warps: int = 1) -> GeneratedKernel:
    """The kernel with each row's trips across a warp's lanes (`warps` 1: blocks of eight
    warps, a row each) or a block's (`warps` > 1: a block of that many warps a row),
    LANE_TRIPS a thread each chunk (optimize/sweep.vector_obstacle says when that is the
    same computation)."""
    wide = wide_parameters(kernel.parameters)
    rows = thread_range(model, plan.row, "x", wide)
    trips = thread_range(model, plan.counter, "x", wide)
    base, stride = f"({plan.base.to_c('*')})", f"(long long)({plan.stride.to_c('*')})"
    offsets = dict(plan.offsets)
    sign = "" if plan.direction > 0 else "-"

    def element(a) -> str:
        """The element a reference reaches at trip pc_c of row pc_row."""
        return (f"{a.array}[{stride} * pc_row + {base} + {sign}pc_c + "
                f"({offsets[a.text]})]")

    # every read no trip writes before it (the writes' anti dependences among them):
    # into registers ahead of the chunk's wait
    reads = {a.text: a for _, a in model.accesses()}
    early = read_ahead(plan, model)
    registers = {t: f"pc_a{n}[pc_u]" for n, t in enumerate(early)}
    ahead = [{"type": reads[t].element_type, "name": f"pc_a{n}", "load": element(reads[t])}
             for n, t in enumerate(early)]
    statements = _trip_statements(model, kernel, plan, registers, element)
    counter = (f"(long long)({trips.lo}) + pc_t" if plan.step > 0
               else f"(long long)({trips.hi}) - pc_t")
    texts = [rows.lo, rows.hi, trips.lo, trips.hi, counter] + statements + \
        [r["load"] for r in ahead]
    hidden = geometry_read(texts, model)
    for rr in (rows, trips):
        rr.lo, rr.hi = passed_geometry(rr.lo, hidden), passed_geometry(rr.hi, hidden)
    for r in ahead:
        r["load"] = passed_geometry(r["load"], hidden)
    sense = plan.direction * plan.step
    anti = [a.name for a in plan.arrays if a.written is not None and
            any(sense * (o - a.written) > 0 for o in a.offs)]
    block = LANES_BLOCK if warps == 1 else (32 * warps, 1, 1)
    text = render_template(
        "sweep_lanes.cu.j2",
        signature=with_geometry(_signature(original, kernel, block), hidden),
        warps=warps, barrier="__syncwarp()" if warps == 1 else "__syncthreads()",
        row_dim=describe_dim(model, plan.row), counter_dim=describe_dim(model, plan.counter),
        anti=", ".join(anti) or "none", chunk=32 * warps * LANE_TRIPS, per_lane=LANE_TRIPS,
        ahead=ahead, counter=passed_geometry(counter, hidden),
        statements=[f"{ty} {name};" for name, ty in plan.privates] +
        [passed_geometry(t, hidden) for t in statements],
        row_lo=rows.lo, row_hi=rows.hi, k_lo=trips.lo, k_hi=trips.hi)
    return GeneratedKernel(kernel.name, text, [rows], block, hidden, {"x": "pc_row"},
                           "pc_i", axis_dims={"x": plan.row},
                           per_block=(LANES_BLOCK[0] // 32 if warps == 1 else 1, 1, 1),
                           tiles=plan)
