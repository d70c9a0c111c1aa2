"""When can a kernel whose references coalesce along two different dims be staged
through shared-memory tiles (issue 15, the transpose shape)?

`out[c * ROWS + r] = s * in[r * COLS + c]` over a rectangle of (r, c): whichever of r
and c runs along threadIdx.x, one of the two references is a whole row apart between
neighbouring lanes, so no permutation lowers the cost. The classic remedy (PPCG's
shared-memory promotion, the CUDA samples' transpose) runs the rectangle in tiles of
32 x 32: a block first copies the tile of each read that coalesces along the other dim
into shared memory with that dim on threadIdx.x, waits at a barrier, then computes the
statement with the written reference's dim on threadIdx.x, its staged reads taken from
the tile transposed. Both global references then move whole 128-byte lines.

That reorders the reads of the staged arrays before every write of the tile, and runs
each (r, c) instance in another thread than the original. It is the same computation
when, as checked here: the kernel is one statement over the rectangle (its domain is
exactly the box of its two dims, bounded by the kernel's arguments or the launch's
geometry); nothing depends on anything (no dependence, no race, no private value: each
instance reads only what no instance writes); and every global reference is linear in
the two dims with a unit step along one of them (or none), the written references all
along the same dim.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from polycoal.analysis.work import Geometry
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import Access, KernelModel
from polycoal.optimize.reduction import Obstacle

TILE = 32            # the tile's side: a warp along threadIdx.x
TILE_ROWS = 8        # threads along threadIdx.y (each runs TILE / TILE_ROWS rows)
MAX_TILES = 4        # staged reads per kernel (48 KiB of shared memory at most)


@dataclass(frozen=True)
class StagingPlan:
    statement: str               # the model's statement name
    x: str                       # the dim the written references run along
    y: str                       # the other dim, along which the staged reads run
    staged: tuple[str, ...]      # texts of the reads staged through tiles, in order

    @property
    def describe(self) -> str:
        return (f"{TILE}x{TILE} tiles, {len(self.staged)} read"
                f"{'s' if len(self.staged) > 1 else ''} staged in shared memory")


def _along(access: Access, dims: tuple[str, str]) -> str | None | Obstacle:
    """The dim along which the reference takes unit steps (None: neither), or why it
    cannot be tiled: not linear in the two dims."""
    if access.flat is None:
        return Obstacle("staging-shape", f"{access.text}: not an affine reference")
    along = None
    for monomial, coefficient in access.flat.terms.items():
        inside = [v for v in monomial if v in dims]
        if not inside:
            continue
        if len(inside) != 1:       # a step that is a parameter (`x * rows`) is fine
            return Obstacle("staging-shape", f"{access.text}: not linear in "
                            f"{' and '.join(dims)}")
        if monomial == (inside[0],) and coefficient == 1 and along is None:
            along = inside[0]
    return along


def staging_plan(model: KernelModel, analysis) -> StagingPlan | Obstacle:
    """The staged form of the kernel, or why it does not apply (the conditions above)."""
    if not model.is_affine or len(model.statements) != 1:
        return Obstacle("staging-shape", "not a single affine statement")
    s = model.statements[0]
    if analysis.races or analysis.dependences:
        return Obstacle("staging-dependence", "its instances depend on each other")
    if any(a.space not in ("global", "constant") or a.atomic for a in s.accesses):
        return Obstacle("staging-shape", "it uses private, local or shared values")
    if not s.exact:
        return Obstacle("staging-shape", "a data-dependent condition guards it")
    if any(d.kind != "global" or d.strided for d in model.thread_dims):
        return Obstacle("staging-shape", "its thread indices are not whole-grid indices")
    names = isl_helpers.all_dims(model)
    dom = isl_helpers.domain(model, s)
    ranges = {name: isl_helpers.projected(dom, names, [name]) for name in names}
    dims = [n for n in names if not isl_helpers.single_valued(ranges[n])]
    if len(dims) != 2:
        return Obstacle("staging-shape", "it does not run over two dims")
    # the box: the domain is the product of the two ranges, each a single interval
    product = ranges[dims[0]].flat_product(ranges[dims[1]])
    if not isl_helpers.projected(dom, names, dims).is_equal(product) or \
            not all(isl_helpers.without_gaps(ranges[d]) for d in dims):
        return Obstacle("staging-shape", "its instances are not a rectangle")
    for name in dims:
        lowers, uppers = isl_helpers.dim_bounds(model, name)
        if len(lowers) != 1 or not uppers:
            return Obstacle("staging-shape", f"the range of {name} is not one interval")
    # the others take one value each, written as their bound: only where that value
    # exists whenever the rectangle's instances do (`for (l = lo; l < 1; l++)` runs no
    # trip for lo > 0; found by the random tester, bounds-9311)
    condition = dom.params().gist(isl_helpers.context(model))
    bounded = {v for d in dims for p in sum(isl_helpers.dim_bounds(model, d), [])
               for v in p.variables}
    named = {condition.get_dim_name(isl.dim_type.param, k)
             for k in range(condition.dim(isl.dim_type.param))
             if condition.involves_dims(isl.dim_type.param, k, 1)}
    if named - bounded:
        return Obstacle("staging-shape", "its instances run for some values of a "
                        "parameter the rectangle's bounds do not name")
    for name in names:
        if name not in dims and any(_moves(a, [name]) for a in s.accesses) and \
                len(isl_helpers.dim_bounds(model, name)[0]) != 1:
            return Obstacle("staging-shape", f"the value of {name} has no single bound")
    x = None
    reads: list[tuple[Access, str | None]] = []
    for a in s.accesses:
        along = _along(a, tuple(dims))
        if isinstance(along, Obstacle):
            return along
        if a.kind == "write":
            if along is None or (x is not None and along != x):
                return Obstacle("staging-shape", f"{a.text}: the writes do not all run "
                                "along one dim")
            x = along
        else:
            if along is None and _moves(a, dims):
                return Obstacle("staging-shape", f"{a.text}: steps of more than one "
                                "element along both dims")
            reads.append((a, along))
    if x is None:
        return Obstacle("staging-shape", "it writes no global element")
    y = next(d for d in dims if d != x)
    # a read along y that does not move with x is the same element for a warp's lanes
    # (a broadcast): only those that move with x too are staged
    staged = tuple(dict.fromkeys(a.text for a, along in reads
                                 if along == y and any(x in m for m in a.flat.terms)))
    if not staged:
        return Obstacle("staging-shape", "no read runs across the written dim")
    for name in dims:
        span = isl_helpers.known_span(model, name)
        if span is not None and span < TILE:
            return Obstacle("staging-shape", f"{name} has {span} values, fewer than a "
                            "tile's side")
    if len(staged) > MAX_TILES:
        return Obstacle("staging-shape", f"more than {MAX_TILES} reads to stage")
    return StagingPlan(s.name, x, y, staged)


def _moves(access: Access, dims: list[str]) -> bool:
    return any(v in dims for m in access.flat.terms for v in m)


def staging_geometry(model: KernelModel, plan: StagingPlan) -> Geometry:
    """How a staged kernel runs (for the performance model): every global reference
    coalesced, blocks of TILE x TILE_ROWS threads over the x and y dims' ranges (each
    thread TILE / TILE_ROWS of a tile's rows)."""
    return Geometry(coalesced=True, axes=(plan.x, plan.y), per_thread=TILE / TILE_ROWS,
                    block_threads=TILE * TILE_ROWS)
