"""Check a tiled product's mapping of threads to outputs with isl.

The tiled form (templates/product_tiles.cu.j2) gives the thread t of a block the
accumulators (a, b) of its tile, a = 0 .. M_i - 1 along i and b = 0 .. M_j - 1 along j,
at the offsets the placements say (optimize/products.placements: along each dim
base(t) + S floor(a / W) + (a mod W), groups of W adjacent outputs S apart, base(t)
the thread's lane of the block or of its warp). Every output of the R x T tile must be
some thread's accumulator, and no two accumulators may be one output: (t, a, b) ->
(row, column) a bijection onto [0, R) x [0, T). A tile run as full (no check per
output) must hold outputs only. A tile the
blocks skip must hold no output: the outputs that lie in tiles whose origins
(pc_i0, pc_j0) fail the test are none. Inside a tile each accumulator runs the
original's statements for its output, its terms in increasing k (the chunks visit
[k_lo, k_hi] in order, each step of a chunk once): the sums of the original.
"""

from __future__ import annotations

import islpy as isl

from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.products import (Placement, statement_points,
                                        tile_cover)


def offsets_problems(threads: int, along_i: Placement, along_j: Placement, rows: int,
                     cols: int) -> list[str]:
    """Why the accumulators of a block of `threads` x `threads` threads placed so do not
    cover its rows x cols tile once, or []."""
    offsets = isl.Map(
        f"{{ [t, a, b] -> [r, c] : 0 <= t < {threads * threads} and "
        f"0 <= a < {along_i.micro} and 0 <= b < {along_j.micro} and "
        f"r = {along_i.offset_isl('t', 'a')} and c = {along_j.offset_isl('t', 'b')} }}")
    problems = []
    if not offsets.is_injective():
        problems.append("two accumulators of a tile are one output")
    if not offsets.range().is_equal(
            isl.Set(f"{{ [r, c] : 0 <= r < {rows} and 0 <= c < {cols} }}")):
        problems.append(f"the accumulators do not cover the {rows} x {cols} outputs of a "
                        "tile")
    return problems


def _origins(condition: isl.Set) -> isl.Set:
    """A condition on the tile origins (parameters pc_i0, pc_j0) as a set of points
    (pc_i0, pc_j0)."""
    origins = condition.move_dims(isl.dim_type.set, 0, isl.dim_type.param,
                                  condition.find_dim_by_name(isl.dim_type.param, "pc_i0"), 1)
    origins = origins.move_dims(isl.dim_type.set, 1, isl.dim_type.param,
                                origins.find_dim_by_name(isl.dim_type.param, "pc_j0"), 1)
    return origins.reset_tuple_id()


def skip_problems(model: KernelModel, statement: str, i: str, j: str,
                  tile: tuple[int, int], tiles: isl.Set) -> list[str]:
    """Why the blocks may skip a tile that holds an output of `statement`, or []: every
    origin (pc_i0, pc_j0) of a tile holding an output, aligned or not, must be among
    `tiles` (origins as parameters pc_i0, pc_j0: the test the blocks make)."""
    outputs = statement_points(model, statement, [i, j])
    origins = _origins(tiles)
    held = outputs.apply(tile_cover(*tile).align_params(outputs.get_space()))
    held, origins = held.align_params(origins.get_space()), origins.align_params(
        held.get_space())
    return [] if held.is_subset(origins) else ["a tile the blocks skip holds an output"]


def full_problems(model: KernelModel, statement: str, i: str, j: str,
                  tile: tuple[int, int], full: isl.Set) -> list[str]:
    """Why a tile the blocks run as full (every accumulator's statements unchecked) may
    hold a point that is not an output of `statement`, or []: the points of the tiles
    whose origins (parameters pc_i0, pc_j0) are in `full` must all be outputs."""
    outputs = statement_points(model, statement, [i, j])
    origins = _origins(full)
    cover = tile_cover(*tile)
    points = origins.apply(cover.reverse().align_params(origins.get_space()))
    points, outputs = points.align_params(outputs.get_space()), outputs.align_params(
        points.get_space())
    return [] if points.is_subset(outputs) else ["a tile run as full holds a point that "
                                                  "is not an output"]
