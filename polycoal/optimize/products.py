"""When can a product-shaped kernel run in register tiles over shared-memory tiles
(issue 15: covariance, GEMM, SYRK)?

    for (i, j) in a domain D:               (thread indices or loops free of dependences)
        init(i, j)                          (statements without k: C[i][j] *= beta)
        for (k = klo; k <= khi; k++)
            X[f(i, j)] += e(A[g(i, k)], B[h(j, k)], ...)
        post(i, j)                          (symmat[j][i] = symmat[i][j])

Each output element is a sum over k of terms that read one operand along (i, k) and
the other along (j, k): a block computing a BM x BN tile of outputs needs only BM + BN
rows of operands per step of k, where one thread per output reads 2 elements per term
from memory. The tiled form (templates/product_tiles.cu.j2) runs a T x T tile per
block of B x B threads, each thread a (T/B) x (T/B) register tile of accumulators; the
k loop in chunks, each chunk of each operand read from global memory into registers
(consecutive threads reading consecutive elements) while the previous chunk is used,
then stored in the other of two shared-memory buffers, from which after a barrier every
thread's accumulators are updated. The shape (TileSizes) follows the number of outputs,
how the operands are read and the shared memory of a block (choose_sizes), or --sizes.

Each output element still runs init, then the terms for k in increasing order, then
post, in the original's order: the sum is the same sum, not reassociated (a register
holds the accumulator between the terms, as in the promoted restructured form), unless
the value is a sum of several terms and reassociation is allowed (ProductPlan.split:
each term added on its own, as the reduction forms reassociate). Legal
when, as checked here: i and j are free of dependences (mapping.parallel) and k carries
only the reduction; one update statement in the k loop, of an element that depends on
neither k nor anything but (i, j), whose reads depend on (i, k) or (j, k) alone (or on
neither) and are of arrays the kernel does not write; the k range a box in the
parameters; the statements outside the loop over the same (i, j) as the update.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import islpy as isl
from pycparser import c_ast

from polycoal.analysis.work import Geometry
from polycoal.model import isl_helpers
from polycoal.model.accumulation import accumulation
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.reduction import Obstacle

MIN_OUTPUTS = 64    # a dim of fewer values does not fill one tile
MULTIPROCESSORS = 132   # H100 and H200 (sm_90): a launch of fewer tiles leaves some idle
SHARED_BYTES = 48 * 1024    # static shared memory of one block
# shared memory a block of sm_90 may ask for at launch (dynamic, past the 48 KiB after
# cudaFuncSetAttribute's cudaFuncAttributeMaxDynamicSharedMemorySize): tiles of one block
# a multiprocessor take their buffers so where they need more than the static 48 KiB
# (SYR2K's four operands in 256 x 128 tiles: 50 KiB; a double GEMM's two: 50 KiB)
OPTIN_SHARED_BYTES = 227 * 1024


@dataclass(frozen=True)
class TileSizes:
    """The shape of a tiled product: a block of `threads` x `threads` threads, each
    `micro_i` x `micro` accumulators in registers, so tiles of `rows` x `tile` outputs
    (`tall` rows where given, else square); the reduction in chunks of `chunk` steps,
    each chunk of each operand staged in shared memory (two buffers: the next chunk is
    loaded while this one is used); `blocks` blocks asked to fit on a multiprocessor at
    once (registers capped to allow it; 0: the compiler's choice).

    Square tiles give the thread at (threadIdx.y, threadIdx.x) the rows and columns of
    its lanes across the whole tile (`layout` "block"); tall tiles give each warp a
    region of (4 micro_i) x (8 micro) outputs, its lanes 4 x 8 over it (`layout`
    "warps": a warp's shared-memory reads of a step touch 4 and 8 vectors, one
    wavefront each)."""
    tile: int = 64
    threads: int = 16
    chunk: int = 16
    blocks: int = 0
    tall: int = 0

    @property
    def rows(self) -> int:
        return self.tall or self.tile

    @property
    def micro(self) -> int:
        return self.tile // self.threads

    @property
    def micro_i(self) -> int:
        return self.rows // self.threads

    @property
    def layout(self) -> str:
        return "warps" if self.tall else "block"

    @property
    def warp_region(self) -> str:
        """The outputs of one warp in the "warps" layout (its lanes 4 x 8)."""
        return f"{4 * self.micro_i}x{8 * self.micro}"

    @property
    def text(self) -> str:
        """The `--sizes` spelling (options.parse_sizes reads it back)."""
        return f"tile={self.tile}" + (f",tall={self.tall}" if self.tall else "") + \
            f",threads={self.threads},chunk={self.chunk}" + \
            (f",blocks={self.blocks}" if self.blocks else "")

    def problem(self) -> str:
        """Why these sizes cannot be run, or ''."""
        if self.threads not in (8, 16, 32) or self.tile % self.threads or \
                self.micro not in (1, 2, 4, 8):
            return (f"tile={self.tile},threads={self.threads}: tiles of 1, 2, 4 or 8 "
                    "outputs per thread along each dim, 8, 16 or 32 threads")
        if self.tall and (self.tall % self.threads or self.micro_i not in (2, 4, 8, 16)
                          or self.threads < 8 or self.micro_i < self.micro):
            return (f"tall={self.tall}: 2, 4, 8 or 16 rows per thread, no fewer than its "
                    "columns")
        if self.chunk < 1 or (self.rows * self.chunk) % (self.threads * self.threads) or \
                (self.tile * self.chunk) % (self.threads * self.threads):
            return (f"chunk={self.chunk}: a chunk of each operand (tile x chunk values) "
                    f"must split evenly over the {self.threads * self.threads} threads")
        if not 0 <= self.blocks <= 32:
            return f"blocks={self.blocks}: 0 to 32 blocks per multiprocessor"
        return ""


# The sizes by the number of outputs, largest tile first: a tile serves each value
# staged in shared memory to `micro` multiply-adds per thread (more reuse with larger
# tiles), but a launch needs tiles for every multiprocessor: the largest tile of which
# there are at least 1.5 per multiprocessor (tiles that hold an output: about half of
# them for a triangle). Measured on the H200 (BENCHMARKS.md, tools/bench_tiles.py):
# GEMM at 2048 (256 tiles of 128) 0.51 ms, 0.64 with tiles of 64; covariance's
# triangle at 2048 (136 tiles of 128 with outputs) 0.49 ms, 0.36 with tiles of 64 (528);
# GEMM at 512 0.031 ms with tiles of 32 (256), 0.040 with 64 (64). Registers capped so
# that 2 blocks of 128 x 128 (3 of 64 x 64) share a multiprocessor: GEMM at 2048 0.67
# -> 0.55 ms, SYRK at 1024 0.106 -> 0.099 ms, SYR2K at 2048 1.11 -> 0.97 ms.
#
# Tiles of 256 x 128 (16 x 8 accumulators a thread, warps of 64 x 64 outputs, one
# block a multiprocessor) where there is one for nearly every multiprocessor, their
# full tiles in a kernel of their own (codegen/product.py): GEMM at 2048 0.41 ms, 1.04x
# cuBLAS SGEMM in the same run (128 x 128, two blocks a multiprocessor: 0.51), at 4096
# 3.10 ms (3.86).
#
# Tiles of 128 x 128 in the same warp layout (8 x 8 accumulators a thread, warps of 32 x
# 64 outputs, two blocks a multiprocessor, registers capped at 128), each step's
# fragments read a step ahead (templates/product_tiles.cu.j2): as fast as the tall tiles
# for as many outputs a wave (GEMM's full tiles at 2048 0.388 ms against 0.389, at 4096
# 2.97 against 2.99; without the step ahead 0.435 and 3.29), half the outputs a tile:
# taken where they take fewer waves. For 8-byte elements (64 accumulators would take
# every register of the cap), the square layout. Every tile in one launch, the full
# tiles without clamping, the others clamped: GEMM at 2048 0.393 -> 0.381 ms, at 4096
# 2.99 -> 2.91 against the full tiles in a kernel of their own launched first.
CANDIDATES = (TileSizes(128, 16, 8, 1, 256), TileSizes(128, 16, 8, 2, 128),
              TileSizes(64, 16, 16, 3), TileSizes(32, 16, 32))
DEFAULT = CANDIDATES[2]          # outputs whose number is known only at run time
MIN_TILES = 1.5 * MULTIPROCESSORS


def needed_tiles(sizes: TileSizes) -> float:
    """Tiles a launch needs to fill the multiprocessors at these sizes: 1.5 a
    multiprocessor, nearly one where a block fills a multiprocessor alone."""
    return 0.95 * MULTIPROCESSORS if sizes.blocks == 1 else MIN_TILES


def element_bytes(type_name: str) -> int:
    """Bytes of a staged element (8 where the type is not a known scalar: a bound)."""
    return {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "short": 2,
            "char": 1, "half": 2, "__half": 2}.get(type_name, 8)


def shared_bytes(sizes: TileSizes, staged: tuple[tuple[str, bool], ...],
                 element: int) -> int:
    """Shared memory of the two buffers of every operand's chunk, given as (side,
    padded): an operand of side i is `rows` long, of side j `tile`; a padded one's rows
    one vector longer (codegen/product.py)."""
    return 2 * sizes.chunk * element * sum(
        (sizes.rows if side == "i" else sizes.tile) + (4 if padded else 0)
        for side, padded in staged)


def shared_limit(sizes: TileSizes) -> int:
    """The shared memory a block of these sizes may use: past the static 48 KiB (in
    dynamic shared memory) only for one block a multiprocessor."""
    return OPTIN_SHARED_BYTES if sizes.blocks == 1 else SHARED_BYTES


def tile_count(spans: tuple[int, int], sizes: TileSizes, rectangle: bool) -> int:
    """Tiles holding an output (spans along i and j): all of the box's, or about half
    for a triangle (those on the diagonal and above it)."""
    rows, cols = -(-spans[0] // sizes.rows), -(-spans[1] // sizes.tile)
    return rows * cols if rectangle else (rows * cols + min(rows, cols) + 1) // 2


# A launch runs its tiles `slots` at a time (blocks a multiprocessor times the
# multiprocessors): ceil(tiles / slots) waves, the full tiles (inside the ranges: no
# clamping) and the others in the same launch. A wave of tall tiles (132 tiles of 256 x
# 128) and one of square tiles of 128 two a multiprocessor (264 of 128 x 128: as many
# outputs) took 0.765 and 0.965 ms at k = 4096 (GEMM at 4096 on the H200, 4 waves each:
# 3.06 and 3.86 ms; BENCHMARKS.md, issue 34): the time of a wave, relative; the same
# square tiles in the warp layout 0.74 (2.97 ms). A triangle takes no tall tiles
# (choose_sizes): covariance's at 4096 in 264 tall tiles or 528 square ones, 2 waves
# each, took 2.21 and 1.56 ms.
WAVE_TIME = {"warps": 1.0, "block": 1.26}


def predicted_waves(spans: tuple[int, int], sizes: TileSizes, rectangle: bool) -> float:
    """The launch's time in waves of tall tiles (WAVE_TIME)."""
    slots = MULTIPROCESSORS * (sizes.blocks or 2)
    return -(-tile_count(spans, sizes, rectangle) // slots) * WAVE_TIME[sizes.layout]


def choose_sizes(spans: list[int | None], staged: tuple[tuple[str, bool], ...],
                 element: int, rectangle: bool = True,
                 forced: TileSizes | None = None) -> TileSizes | str:
    """The tile shape (module comment on CANDIDATES), `forced` if given; or why none
    fits the block's shared memory. `spans`: the outputs along i and j; `staged`: each
    operand's (side, padded: read along k). The chunk follows how the operands are read:
    along the tile's dim (covariance's data[k][j1], data[k][j2]), each chunk row is a
    whole tile row in memory, and tiles of 64 take chunks of 8 (covariance 0.36 ms, 0.41
    in chunks of 16); along k (SYRK's a[i][k], a[j][k]), each chunk row is `chunk`
    elements, and tiles of 128 take chunks of 16 where they fit (64 bytes a row: SYRK at
    2048 0.54 -> 0.50 ms, uncapped: 0.54 with 2 blocks); SYR2K's 4 operands do not, and
    keep chunks of 8 and 2 blocks (0.97 ms at 2048, 1.11 uncapped). Tiles in the warp
    layout are taken only at their own chunk, where it fits (past 48 KiB in dynamic
    shared memory: shared_limit), for elements of 4 bytes (a thread's 128 or 64
    accumulators of 8-byte values would take every register); of the tiles of 128, the
    shape of the fewest waves (predicted_waves)."""
    padded = sum(1 for _, p in staged if p)
    if forced is not None:
        choice = forced
    else:
        # the warp layout for elements of 4 bytes, else the square layout of the same
        # tile, else no tile of that shape; no tall tiles over a triangle (covariance at
        # 4096: 2.21 ms against 1.56 in square tiles, as many waves)
        usable = [s if not s.tall or element <= 4 and (rectangle or s.tall == s.tile) else
                  replace(s, tall=0) if s.tall == s.tile else None for s in CANDIDATES]
        if None in spans:
            choice = DEFAULT
        else:
            choice = next((s for s in usable if s is not None and
                           tile_count(spans, s, rectangle) >= needed_tiles(s) and
                           (not s.tall or shared_bytes(s, staged, element) <= shared_limit(s))),
                          CANDIDATES[-1])
        if choice.tile == CANDIDATES[1].tile and None not in spans:
            # the tiles of 128 in the fewest waves (WAVE_TIME), the first on a tie:
            # tall, square in warps, square in the block layout
            squares = [s for s in (usable[1], replace(CANDIDATES[1], tall=0))
                       if s is not None and s != choice]
            choice = min([choice] + squares,
                         key=lambda s: predicted_waves(spans, s, rectangle))
        if not padded and choice.tile == 64:
            choice = replace(choice, chunk=8, blocks=0)
        elif padded == len(staged) and choice.tile == 128 and not choice.tall and \
                shared_bytes(replace(choice, chunk=16), staged, element) <= SHARED_BYTES:
            choice = replace(choice, chunk=16, blocks=0)
    while shared_bytes(choice, staged, element) > shared_limit(choice) and \
            not forced and choice.chunk > 4:
        choice = replace(choice, chunk=choice.chunk // 2)
    if shared_bytes(choice, staged, element) > shared_limit(choice):
        return (f"{len(staged)} operands in tiles of {choice.rows} x {choice.tile} x "
                f"{choice.chunk} need {shared_bytes(choice, staged, element)} bytes of "
                "shared memory")
    return choice.problem() or choice


@dataclass(frozen=True)
class Placement:
    """Where a thread's accumulators lie along one dim of a tile: accumulator m of the
    thread t at base(t) + (m / vector) * stride + m % vector, base(t) the sum of
    c * ((t / d) % r) over `terms` (c, d, r): groups of `vector` adjacent outputs,
    `stride` apart (validate/tiles.py checks that the two dims' placements cover a tile
    once)."""
    terms: tuple[tuple[int, int, int], ...]
    stride: int
    micro: int
    vector: int

    def base_c(self, thread: str) -> str:
        return " + ".join(f"{c} * (({thread} / {d}) % {r})" for c, d, r in self.terms)

    def offset_isl(self, t: str, m: str) -> str:
        base = " + ".join(f"{c} * (floor({t}/{d}) mod {r})" for c, d, r in self.terms)
        return f"{base} + {self.stride} * floor({m}/{self.vector}) + ({m} mod {self.vector})"


def placements(sizes: TileSizes, vector: int) -> tuple[Placement, Placement]:
    """The placements along i and j of the thread pc_t = threadIdx.y * B + threadIdx.x
    (B = threads): square tiles give it the rows of lane threadIdx.y and the columns of
    lane threadIdx.x across the tile (groups B vectors apart); tall tiles give warp w =
    t / 32 the region (w / (B / 8), w % (B / 8)) of (4 micro_i) x (8 micro) outputs and
    its lane l = t % 32 the rows of lane l / 8 and the columns of lane l % 8 in it."""
    b, w = sizes.threads, vector
    if sizes.layout == "block":
        return (Placement(((w, b, b),), w * b, sizes.micro_i, w),
                Placement(((w, 1, b),), w * b, sizes.micro, w))
    return (Placement(((4 * sizes.micro_i, 4 * b, b // 4), (w, 8, 4)), 4 * w,
                      sizes.micro_i, w),
            Placement(((8 * sizes.micro, 32, b // 8), (w, 1, 8)), 8 * w, sizes.micro, w))


@dataclass(frozen=True)
class ProductPlan:
    i: str                        # the dim on blockIdx.y / threadIdx.y
    j: str                        # the dim on blockIdx.x / threadIdx.x
    k: str                        # the reduction loop
    update: str                   # the update statement's name
    before: tuple[str, ...]       # statements before the k loop, in order
    after: tuple[str, ...]        # statements after it
    operands: tuple[tuple[str, str, str], ...]   # (read text, side "i"|"j", unit dim)
    sizes: TileSizes = DEFAULT
    rows: tuple[str, ...] = ()    # statements over i alone (outside the loop over j)
    private: str = ""             # the accumulator, when it is a private scalar
    # the value a sum of several terms (SYR2K's alpha*a[i][k]*b[j][k] + alpha*b[i][k]*
    # a[j][k]), each added to the accumulator on its own: reassociated (additive_terms)
    split: bool = False

    @property
    def tile(self) -> int:
        """The tile's columns (along j)."""
        return self.sizes.tile

    @property
    def micro(self) -> int:
        return self.sizes.micro

    @property
    def micro_i(self) -> int:
        return self.sizes.micro_i

    @property
    def output_statement(self) -> str:
        """The statement whose (i, j) are the outputs: the first outside the loop (the
        update's are the same where the k range is not empty)."""
        return (self.before + self.after + (self.update,))[0]

    @property
    def describe(self) -> str:
        t = self.sizes.threads
        staged = ", ".join(text for text, _, _ in self.operands)
        warps = f" (warps of {self.sizes.warp_region} outputs)" \
            if self.sizes.layout == "warps" else ""
        return (f"{self.sizes.rows}x{self.tile} tiles of outputs per block of {t}x{t} "
                f"threads, {self.micro_i}x{self.micro} accumulators per thread in registers"
                f"{warps}, {self.sizes.chunk}-step chunks of {staged} in shared memory (double-buffered; "
                f"each element read from global memory once per tile, not once per "
                f"output: {self.tile}-fold reuse or more; sizes {self.sizes.text})")


def additive_terms(value) -> list[tuple[str, object]]:
    """The terms of a value that is a sum and difference of terms, with their signs
    ('+' or '-'): `p + q - r` -> [('+', p), ('+', q), ('-', r)]; one ('+', value) for
    any other value."""
    if isinstance(value, c_ast.BinaryOp) and value.op in ("+", "-"):
        right = additive_terms(value.right)
        if value.op == "-":
            right = [("-" if sign == "+" else "+", t) for sign, t in right]
        return additive_terms(value.left) + right
    return [("+", value)]


def product_plan(model: KernelModel, analysis, mapping, sizes: TileSizes | None = None,
                 reassociate: bool = True) -> ProductPlan | Obstacle:
    """The tiled form of the kernel, or why it does not apply; `sizes` forces the tile
    shape (None: by the sizes of the outputs, choose_sizes). With `reassociate`, a value
    of several terms is added to the accumulator one term at a time (`acc += p; acc +=
    q` for `acc += p + q`: two fused multiply-adds where the sum in its order takes a
    multiply, a fused multiply-add and an add per step); without, in the original's
    order."""
    if not model.is_affine:
        return Obstacle("product-shape", "outside the affine model")
    reductions = [l for l in analysis.loops if l.reduction]
    if len(reductions) != 1 or analysis.races:
        return Obstacle("product-shape", "not one reduction loop")
    k = reductions[0].loop.counter
    depth = int(k[1:])
    if depth != model.depth - 1:
        return Obstacle("product-shape", "the reduction loop is not the innermost")
    inside = [s for s in model.statements if len(s.loops) > depth]
    if len(inside) != 1:
        return Obstacle("product-shape", "not one statement in the reduction loop")
    update = inside[0]
    found = accumulation(update.node)
    if found is None or update.update != "+" or found.inverse:
        return Obstacle("product-shape", "the loop's statement is not a sum")
    names = isl_helpers.all_dims(model)
    dom = isl_helpers.domain(model, update)
    varying = [n for n in names if n != k and not isl_helpers.single_valued(
        isl_helpers.projected(dom, names, [n]))]
    if len(varying) != 2 or any(v not in mapping.parallel for v in varying):
        return Obstacle("product-shape", "the outputs are not two dims free of dependences")
    if any(d.kind != "global" or d.strided for d in model.thread_dims):
        return Obstacle("product-shape", "its thread indices are not whole-grid indices")
    # k: a box in the parameters, the same for every output
    ij = isl_helpers.projected(dom, names, varying)
    krange = isl_helpers.projected(dom, names, [k])
    if not isl_helpers.projected(dom, names, varying + [k]).is_equal(ij.flat_product(krange)) or \
            not isl_helpers.without_gaps(krange):
        return Obstacle("product-shape", "the reduction's range depends on the output")
    lowers, uppers = isl_helpers.dim_bounds(replace(model, statements=[update]), k)
    if len(lowers) != 1 or len(uppers) != 1:
        return Obstacle("product-shape", "the reduction's range is not one interval")
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    target = next(a for a in update.accesses if a.kind == "write")
    # a private accumulator (`float acc = 0; for (k) acc += ...; C[i][j] = acc;`) is the
    # register itself; it must be one scalar, declared per output (its scope's loops are
    # the outputs' dims)
    private = target.space == "private"
    if private and (target.subscripts is None or
                    any(v not in varying for p in target.subscripts for v in p.variables)):
        return Obstacle("product-shape", f"{target.text}: a private kept across outputs")
    if target.flat is None or any(k in m for m in target.flat.terms):
        return Obstacle("product-shape", "the accumulator moves with the reduction")
    # j: the dim the accumulator's element takes unit steps along (coalesced stores)
    unit = [v for v in varying if target.flat.terms.get((v,)) == 1]
    j = unit[0] if unit else varying[1]
    i = next(v for v in varying if v != j)
    operands = []
    for a in update.accesses:
        if a.kind == "write" or a.text == target.text:
            continue
        if a.space not in ("global", "constant") or a.flat is None:
            return Obstacle("product-shape", f"{a.text}: not a global affine read")
        if a.array in written:
            return Obstacle("product-shape", f"{a.text}: an array the kernel writes")
        moves = {v for m in a.flat.terms for v in m if v in (i, j, k)}
        if not moves or moves == {k}:
            if moves:
                return Obstacle("product-shape", f"{a.text}: depends on the reduction alone")
            continue                              # a value the same for every term
        if {i, j} <= moves:
            return Obstacle("product-shape", f"{a.text}: depends on both outputs")
        side = "i" if i in moves else "j"
        along = i if side == "i" else j
        unit_dim = along if a.flat.terms.get((along,)) == 1 else k
        if any(len([v for v in m if v in (i, j, k)]) > 1 for m in a.flat.terms):
            return Obstacle("product-shape", f"{a.text}: not linear")
        operands.append((a.text, side, unit_dim))
    if not operands:
        return Obstacle("product-shape", "no operand to stage")
    for dim in (i, j, k):
        if not exact_range(model, update.name, dim):
            return Obstacle("product-shape", f"the range of {dim} is not the interval its "
                            "bounds give (two lower bounds, a bound with a coefficient, a "
                            "stride)")
    operands = tuple(dict.fromkeys(operands))
    others = [s for s in model.statements if s is not update]
    # statements outside the loop over j (correlation's `symmat[j1][j1] = 1`), when j is
    # a loop: run once per i, by the blocks of the first column of tiles, where nothing
    # depends on them and nothing they depend on
    row_only = [s for s in others if j.startswith("c") and len(s.loops) <= int(j[1:])]
    # the rows the tiles visit: those of the statements over (i, j) (output_set)
    per_output = [s for s in others if s not in row_only] or [update]
    rows_i = isl_helpers.projected(isl_helpers.domain(model, per_output[0]), names, [i])
    for s in row_only:
        if any(d.source == s.name or d.sink == s.name for d in analysis.dependences):
            return Obstacle("product-shape", f"{s.text}: ordered with the products")
        if not isl_helpers.projected(isl_helpers.domain(model, s), names, [i]) \
                .is_subset(rows_i):
            return Obstacle("product-shape", f"{s.text}: runs beyond the outputs' rows")
        if any(a.space not in ("global", "constant") for a in s.accesses):
            return Obstacle("product-shape", f"{s.text}: private or shared values")
    others = [s for s in others if s not in row_only]
    before, after = [], []
    # the statements outside the loop run for the same (i, j), those for which the
    # update runs when the k range is not empty (`n >= 1`)
    for s in others:
        if len(s.loops) > depth:
            return Obstacle("product-shape", "another statement in the reduction loop")
        sdom = isl_helpers.domain(model, s)
        outside = isl_helpers.projected(sdom, names, varying)
        if not outside.is_equal(isl_helpers.projected(
                isl_helpers.domain(model, others[0]), names, varying)) or \
                not outside.intersect_params(krange.params()).is_equal(ij):
            return Obstacle("product-shape", f"{s.text}: not over the update's outputs")
        if any(a.space not in ("global", "constant") and
               not (private and a.array == target.array) for a in s.accesses):
            return Obstacle("product-shape", f"{s.text}: private or shared values")
        (before if s.beta < update.beta else after).append(s.name)
    spans = [isl_helpers.known_span(model, name) for name in (i, j)]
    for name, span in zip((i, j), spans):
        if span is not None and span < MIN_OUTPUTS:
            return Obstacle("product-shape", f"{name} has {span} values, fewer than a tile")
    element = max(element_bytes(a.element_type) for a in update.accesses
                  if a.text in {o[0] for o in operands})
    chosen = choose_sizes(spans, tuple((o[1], o[2] == k) for o in operands), element,
                          _is_box(ij), sizes)
    if isinstance(chosen, str):
        return Obstacle("product-shape", chosen)
    return ProductPlan(i, j, k, update.name, tuple(before), tuple(after), operands, chosen,
                       tuple(s.name for s in row_only), target.array if private else "",
                       reassociate and len(additive_terms(found.value)) > 1)


def output_set(model: KernelModel, plan: ProductPlan) -> isl.Set:
    """The (i, j) each output's statements run for (those outside the loop: the update's
    too when the k range is not empty), as a parameter set with i and j as parameters."""
    return as_parameters(model, plan.output_statement, [plan.i, plan.j], ["pc_i", "pc_j"])


def row_set(model: KernelModel, statement: str, i: str) -> isl.Set:
    """The i a statement over i alone runs for, as a parameter set (pc_i a parameter)."""
    return as_parameters(model, statement, [i], ["pc_i"])


def as_parameters(model: KernelModel, statement: str, dims: list[str],
                   names: list[str]) -> isl.Set:
    """A statement's domain projected onto `dims`, those made parameters named `names`
    (for a condition on the generated code's variables: isl_c.condition_to_c)."""
    values = statement_points(model, statement, dims)
    for k, name in enumerate(names):
        values = values.set_dim_name(isl.dim_type.set, k, name)
    return values.move_dims(isl.dim_type.param, values.dim(isl.dim_type.param),
                            isl.dim_type.set, 0, len(dims))


def statement_points(model: KernelModel, statement: str, dims: list[str]) -> isl.Set:
    """A statement's domain projected onto `dims`, in their order."""
    s = next(st for st in model.statements if st.name == statement)
    return isl_helpers.projected(isl_helpers.domain(model, s), isl_helpers.all_dims(model),
                                 dims)


def _box(values: isl.Set) -> isl.Set:
    """The product of a 2-D set's projections: the smallest rectangle holding it."""
    return values.project_out(isl.dim_type.set, 1, 1).flat_product(
        values.project_out(isl.dim_type.set, 0, 1))


def _is_box(values: isl.Set) -> bool:
    """Whether a 2-D set is a rectangle."""
    return values.is_equal(_box(values))


def exact_range(model: KernelModel, statement: str, dim: str) -> bool:
    """Whether a statement's values along `dim` are exactly the interval the generated
    code runs over (codegen/kernel.thread_range: the first lower bound dim_bounds reads
    to the least of its upper bounds): one lower bound, every bound of coefficient 1
    (dim_bounds does not read `2 * i < n`), no stride or hole. Elsewhere a tile would
    read and write values the original does not."""
    only = replace(model, statements=[s for s in model.statements if s.name == statement])
    values = statement_points(model, statement, [dim])
    return len(isl_helpers.dim_bounds(only, dim)[0]) == 1 and \
        isl_helpers.without_gaps(values) and \
        all(abs(c.get_coefficient_val(isl.dim_type.set, 0).to_python()) in (0, 1)
            for c in values.simple_hull().get_constraints())


def ranges_all_outputs(model: KernelModel, plan: ProductPlan) -> bool:
    """Whether every (i, j) in the box the tiles' ranges span (the update's values along
    each dim: exact intervals, exact_range) is an output. A full tile (inside the
    ranges) then runs its elements' statements unchecked (a rectangle of outputs);
    covariance's triangle checks the elements of its tiles on the diagonal."""
    points = statement_points(model, plan.update, [plan.i, plan.j])
    return points.project_out(isl.dim_type.set, 1, 1).flat_product(
        points.project_out(isl.dim_type.set, 0, 1)).is_subset(
        statement_points(model, plan.output_statement, [plan.i, plan.j]))


def tile_cover(rows: int, cols: int) -> isl.Map:
    """Each point (i, j) to the origins (pc_i0, pc_j0) of the rows x cols tiles, aligned
    or not, that hold it."""
    return isl.Map(f"{{ [i, j] -> [pc_i0, pc_j0] : pc_i0 <= i <= pc_i0 + {rows - 1} and "
                   f"pc_j0 <= j <= pc_j0 + {cols - 1} }}")


def tile_set(model: KernelModel, plan: ProductPlan) -> isl.Set:
    """The tile origins (pc_i0, pc_j0, as parameters) whose tile holds an output, where
    the tile loops can reach them (each origin within the outputs' range along its dim):
    the universe for a rectangle of outputs; for covariance's triangle j2 >= j1, the
    tiles on or above the diagonal (pc_i0 <= pc_j0 + cols - 1). A block skips the others
    whole: half the work of a triangle."""
    outputs = statement_points(model, plan.output_statement, [plan.i, plan.j])
    cover = tile_cover(plan.sizes.rows, plan.tile).align_params(outputs.get_space())
    origins = outputs.apply(cover).gist(_box(outputs).apply(cover))
    origins = origins.set_dim_name(isl.dim_type.set, 0, "pc_i0") \
        .set_dim_name(isl.dim_type.set, 1, "pc_j0")
    return origins.move_dims(isl.dim_type.param, origins.dim(isl.dim_type.param),
                             isl.dim_type.set, 0, 2)


def full_set(model: KernelModel, plan: ProductPlan) -> isl.Set:
    """The tile origins (pc_i0, pc_j0, as parameters) whose whole tile is outputs: no
    point of the tile lies outside the outputs' set (covariance's triangle: the tiles
    above the diagonal; a rectangle: the tiles inside it). Such a tile runs every
    accumulator's statements unconditionally."""
    outputs = statement_points(model, plan.output_statement, [plan.i, plan.j])
    cover = tile_cover(plan.sizes.rows, plan.tile).align_params(outputs.get_space())
    # exact, not simplified against the tiles the loops visit: a tile the loops reach
    # must never count as full by a simplification (nk < 0: no output at all)
    origins = outputs.complement().apply(cover).complement().coalesce()
    origins = origins.set_dim_name(isl.dim_type.set, 0, "pc_i0") \
        .set_dim_name(isl.dim_type.set, 1, "pc_j0")
    return origins.move_dims(isl.dim_type.param, origins.dim(isl.dim_type.param),
                             isl.dim_type.set, 0, 2)


def product_geometry(model: KernelModel, plan: ProductPlan) -> Geometry:
    """How a tiled product runs (for the performance model): its operands read from
    global memory once per tile (`tile`-fold reuse), coalesced; each term's operands from
    shared memory, `micro` values a thread serving `micro` x `micro` accumulators (a
    float4 wavefront serves a warp four of them); blocks of threads x threads, as many
    a multiprocessor as the sizes ask (two where the compiler chooses)."""
    sizes = plan.sizes
    block = sizes.threads * sizes.threads
    scalars = frozenset(model.parameters) | frozenset(model.private)
    return Geometry(coalesced=True, registers=True, axes=(plan.i, plan.j),
                    per_thread=float(sizes.micro_i * sizes.micro), block_threads=block,
                    resident=(sizes.blocks or 2) * block / 32,
                    reuse=2.0 * sizes.rows * sizes.tile / (sizes.rows + sizes.tile),
                    staged=(sizes.micro + sizes.micro_i) / (2.0 * sizes.micro * sizes.micro_i),
                    ilp=float(sizes.micro_i * sizes.micro),
                    unrolled=True, hoisted=scalars)
