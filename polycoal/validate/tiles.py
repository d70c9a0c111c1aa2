"""Check a tiled product's mapping of threads to outputs with isl.

The tiled form (templates/product_tiles.cu.j2) gives the thread at lane t (threadIdx.x
or .y, 0 <= t < B) the accumulators a = 0 .. M-1 of its tile along each dim, at offset

    o(t, a) = W B floor(a / W) + W t + (a mod W)

(groups of W adjacent outputs, W B apart; W = 1: o = t + B a). The tile is T = B M
outputs long. Every output of the tile must be some thread's accumulator, and no two
accumulators may be one output: (t, a) -> o a bijection onto [0, T). A tile the
blocks skip must hold no output: the outputs that lie in tiles whose origins
(pc_i0, pc_j0) fail the test are none. Inside a tile each accumulator runs the
original's statements for its output, its terms in increasing k (the chunks visit
[k_lo, k_hi] in order, each step of a chunk once): the sums of the original.
"""

from __future__ import annotations

import islpy as isl

from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.products import statement_points, tile_cover


def offsets_problems(threads: int, micro: int, vector: int) -> list[str]:
    """Why the offsets of a thread's accumulators do not cover its tile once, or []."""
    w, tile = vector, threads * micro
    offsets = isl.Map(
        f"{{ [t, a] -> [o] : 0 <= t < {threads} and 0 <= a < {micro} and "
        f"o = {w * threads} * floor(a / {w}) + {w} * t + (a mod {w}) }}")
    problems = []
    if not offsets.is_injective():
        problems.append("two accumulators of a tile are one output")
    if not offsets.range().is_equal(isl.Set(f"{{ [o] : 0 <= o < {tile} }}")):
        problems.append(f"the accumulators do not cover the {tile} outputs of a tile")
    return problems


def skip_problems(model: KernelModel, statement: str, i: str, j: str, tile: int,
                  tiles: isl.Set) -> list[str]:
    """Why the blocks may skip a tile that holds an output of `statement`, or []: every
    origin (pc_i0, pc_j0) of a tile holding an output, aligned or not, must be among
    `tiles` (origins as parameters pc_i0, pc_j0: the test the blocks make)."""
    outputs = statement_points(model, statement, [i, j])
    origins = tiles.move_dims(isl.dim_type.set, 0, isl.dim_type.param,
                              tiles.find_dim_by_name(isl.dim_type.param, "pc_i0"), 1)
    origins = origins.move_dims(isl.dim_type.set, 1, isl.dim_type.param,
                                origins.find_dim_by_name(isl.dim_type.param, "pc_j0"), 1)
    origins = origins.reset_tuple_id()
    held = outputs.apply(tile_cover(tile).align_params(outputs.get_space()))
    held, origins = held.align_params(origins.get_space()), origins.align_params(
        held.get_space())
    return [] if held.is_subset(origins) else ["a tile the blocks skip holds an output"]
