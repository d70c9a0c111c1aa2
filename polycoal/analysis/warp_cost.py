"""What one block of a kernel costs the memory pipelines, under a thread-axis permutation
(issue 14, "never slower").

The permutation ILP (optimize/permutation.py) prices global references only, by the
paper's unit/non-unit stride classes. A kernel that stages tiles in shared memory can
lose far more to bank conflicts, and to warps split by `threadIdx`-guarded code, than a
permutation gains on its global accesses. This estimate walks the warps of one block,
lane by lane, for a given assignment of the original thread axes to the new ones:

- the lanes a statement is active on are the points of its domain in block 0 (its
  guards on the thread indices; loop counters and parameters whose values are unknown
  are existential: a bound `gx < n` keeps every lane, `tx == 0` keeps one per row);
- a warp with at least one active lane issues the statement (divergent warps issue it
  for their few lanes: a branch that splits every warp costs every warp);
- a global reference costs the 32-byte sectors its active lanes touch (vector types are
  priced by their size: a float4 per lane is 16 bytes), an atomic the same; a stride
  that is a parameter counts as large, and a non-affine subscript, unknown under every
  geometry alike, is left out;
- a shared reference costs its wavefronts: the 32 banks of 4-byte words serve one word
  each per wavefront, lanes reading one word share it (broadcast), and no wavefront
  carries more than 128 bytes (a float4 per lane needs four);
- each statement is weighted by its trips per thread (its loops' extents where the
  launch's values bound them, else a nominal 16).

The weights turn the three counts into one figure, in shared-memory wavefronts: a
global sector costs two (on the H200 an SM's share of DRAM bandwidth is about 18 bytes
per cycle, a shared wavefront 128 bytes per cycle: a 32-byte sector from DRAM takes
about two cycles of the SM's memory time), an issued warp-statement a quarter.
A permutation is applied only where the figure falls by MIN_GAIN or more.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from polycoal.analysis.coalescing import LARGE_STRIDE, dynamic_offset, lane_stride, request_sectors
from polycoal.analysis.counting import box_points, with_values
from polycoal.frontend.dialect import cuda_dialect
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel, Statement

GLOBAL_SECTOR_COST = 2.0
ISSUE_COST = 0.25
NOMINAL_TRIPS = 16
MIN_GAIN = 1.15            # below this predicted gain a kernel is left as it is
BANKS, BANK_BYTES, WAVEFRONT_BYTES = 32, 4, 128


@dataclass(frozen=True)
class BlockCost:
    global_sectors: float
    shared_wavefronts: float
    issues: float                      # warp-statements issued
    unpriced: tuple[str, ...] = ()     # shared references the estimate cannot price

    @property
    def total(self) -> float:
        return (GLOBAL_SECTOR_COST * self.global_sectors + self.shared_wavefronts
                + ISSUE_COST * self.issues)

    def describe(self) -> str:
        return (f"{self.global_sectors:g} global sectors, {self.shared_wavefronts:g} shared "
                f"wavefronts, {self.issues:g} warp issues per block")


def shared_wavefronts(byte_offsets, size: int) -> int:
    """Wavefronts of one shared-memory request: the most distinct 4-byte words any bank
    serves, and never fewer than the distinct bytes need at 128 per wavefront."""
    words = {(o + k) // BANK_BYTES for o in set(byte_offsets)
             for k in range(0, max(size, BANK_BYTES), BANK_BYTES)}
    per_bank: dict[int, int] = {}
    for w in words:
        per_bank[w % BANKS] = per_bank.get(w % BANKS, 0) + 1
    return max(max(per_bank.values(), default=1),
               -(-len(words) * BANK_BYTES // WAVEFRONT_BYTES))


def _lanes_in_block(block: tuple[int, int, int], source: dict[str, str]):
    """The warps of one block, each the list of its lanes' original thread indices
    {axis: index}, when new axis n runs the original axis source[n]."""
    axes = cuda_dialect().axes
    shape = [block[axes.index(source[n])] for n in axes]
    threads = shape[0] * shape[1] * shape[2]
    warp = cuda_dialect().warp_size
    warps = []
    for start in range(0, threads, warp):
        lanes = []
        for linear in range(start, min(start + warp, threads)):
            new = (linear % shape[0], (linear // shape[0]) % shape[1],
                   linear // (shape[0] * shape[1]))
            lanes.append({source[n]: new[k] for k, n in enumerate(axes)})
        warps.append(lanes)
    return warps


def _active_and_trips(model: KernelModel, s: Statement, block
                      ) -> tuple[tuple[str, ...], set, float]:
    """The thread axes `s`'s domain names, the indices along them in block 0 on which
    `s` runs, and its trips per thread (its loops' extents where the launch's values
    bound them, else NOMINAL_TRIPS)."""
    axes = cuda_dialect().axes
    dom = with_values(model, isl_helpers.domain(model, s), dict(model.parameter_values))
    for d in model.thread_dims:
        if d.kind == "block":
            dom = dom.fix_val(isl.dim_type.set, model.dims.index(d.name), isl.Val(0))
    dom = dom.project_out(isl.dim_type.param, 0, dom.dim(isl.dim_type.param))
    nthreads = len(model.thread_dims)
    trips = NOMINAL_TRIPS
    if not dom.is_empty():
        box = box_points(dom.project_out(isl.dim_type.set, 0, nthreads))
        trips = box if box is not None else NOMINAL_TRIPS
    lanes = dom.project_out(isl.dim_type.set, nthreads, model.depth)
    names = [d.name for d in model.thread_dims]
    bounds = " and ".join(
        f"0 <= {d.name} < {block[axes.index(d.axis)] if d.kind != 'block' else 1}"
        for d in model.thread_dims)
    box = isl.Set(f"{{ [{', '.join(names)}] : {bounds} }}")
    if lanes.get_tuple_name():
        box = box.set_tuple_name(lanes.get_tuple_name())
    lanes = lanes.intersect(box)
    present = tuple(d.axis for d in model.thread_dims if d.kind != "block")
    where = [k for k, d in enumerate(model.thread_dims) if d.kind != "block"]
    active: set = set()
    lanes.foreach_point(lambda point: active.add(tuple(
        int(point.get_coordinate_val(isl.dim_type.set, k).to_python()) for k in where)))
    return present, active, float(trips)


def _strides(model: KernelModel, s: Statement, a, values: dict) -> dict[str, int | None]:
    """The lane stride of access `a` along each thread axis, in elements, where it is
    an integer at the launch's values (None: non-affine or symbolic)."""
    out = {}
    for axis in cuda_dialect().axes:
        st = None if a.flat is None else \
            lane_stride(model, dynamic_offset(s, a.flat), axis).substitute(values)
        out[axis] = int(st.constant()) if st is not None and st.is_constant() \
            and st.constant().denominator == 1 else None
    return out


def block_costs(model: KernelModel, sources: list[dict[str, str]],
                block: tuple[int, int, int]) -> list[BlockCost]:
    """The memory cost of one block of `block` threads (original axes) under each
    assignment of `sources` (new axis n runs original axis source[n]). What does not
    depend on the assignment (each statement's active lanes and trips, each access's
    strides) is computed once."""
    values = dict(model.parameter_values)
    statements = []
    for s in model.statements:
        priced = []
        for a in s.accesses:
            if a.space not in ("global", "shared"):
                continue
            if a.flat is None and a.space == "global":
                continue        # non-affine: the same unknown under every geometry
            priced.append((a, _strides(model, s, a, values)))
        statements.append((_active_and_trips(model, s, block), priced))
    return [_cost(statements, _lanes_in_block(block, source)) for source in sources]


def _cost(statements, warps) -> BlockCost:
    axes = cuda_dialect().axes
    sectors = wavefronts = issues = 0.0
    unpriced = []
    for (present, active, trips), priced in statements:
        live = [[lane for lane in lanes if tuple(lane[a] for a in present) in active]
                for lanes in warps]
        live = [lanes for lanes in live if lanes]
        issues += trips * len(live)
        for a, strides in priced:
            if any(v is None for v in strides.values()):
                if a.space == "shared":
                    unpriced.append(a.text)
                    continue
                strides = {k: LARGE_STRIDE if v is None else v for k, v in strides.items()}
            for lanes in live:
                offsets = [a.unit_bytes * sum(strides[x] * lane[x] for x in axes)
                           for lane in lanes]
                if a.space == "global":
                    sectors += trips * request_sectors(offsets, a.element_size)[0]
                else:
                    wavefronts += trips * shared_wavefronts(offsets, a.element_size)
    return BlockCost(sectors, wavefronts, issues, tuple(unpriced))


def block_cost(model: KernelModel, source: dict[str, str],
               block: tuple[int, int, int]) -> BlockCost:
    """The memory cost of one block under one assignment (see block_costs)."""
    return block_costs(model, [source], block)[0]


def warp_lanes(model: KernelModel, s: Statement, block: tuple[int, int, int]
               ) -> tuple[list[list[dict[str, int]]], float]:
    """The live warps of one block for statement `s` under the kernel's own geometry,
    each the list of its active lanes' thread indices {axis: index}, and the trips per
    thread of `s` (see _active_and_trips)."""
    present, active, trips = _active_and_trips(model, s, block)
    axes = cuda_dialect().axes
    live = [[lane for lane in lanes if tuple(lane[a] for a in present) in active]
            for lanes in _lanes_in_block(block, {a: a for a in axes})]
    return [lanes for lanes in live if lanes], trips


def lane_offsets(model: KernelModel, s: Statement, a, lanes: list[dict[str, int]]
                 ) -> list[int] | None:
    """The byte offsets of access `a` for `lanes`, from the first lane's element (None:
    the subscript is not affine with integer lane strides at the launch's values)."""
    strides = _strides(model, s, a, dict(model.parameter_values))
    if any(v is None for v in strides.values()):
        return None
    offsets = [a.unit_bytes * sum(strides[x] * lane[x] for x in cuda_dialect().axes)
               for lane in lanes]
    return [o - min(offsets) for o in offsets]
