"""Static coalescing analysis of every global-memory reference.

For a reference with flat offset pos (in elements), the stride along a thread axis is
the coefficient of that axis' thread index in pos. A warp is 32 consecutive linear
thread ids (x fastest, then y, then z) of one block, so with the launch's block shape
the lanes' offsets, and the 32-byte sectors they fall into, follow directly. A request
is coalesced when it touches no more sectors than its distinct bytes need.

The paper's classification (core paper, section 2b) is kept per axis: c(a) = 1 when the
axis has unit stride (pos = a + b), u(a) = 1 for a multiplier other than 0 and +-1,
z(a) = 1 when the axis is used at all. Strides that depend on a parameter (a row length
n) count as large.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from polycoal.analysis.counting import Count
from polycoal.frontend.dialect import cuda_dialect
from polycoal.model.kernel_model import Access, KernelModel, Statement
from polycoal.model.poly import Poly

SECTOR_BYTES = 32
LARGE_STRIDE = 1 << 20       # stand-in for a symbolic stride such as a row length n


@dataclass(frozen=True)
class ReferenceReport:
    statement: Statement
    access: Access
    strides: dict[str, Poly | None]        # axis -> stride in elements (None: non-affine)
    classes: dict[str, str]                # axis -> "c" | "u" | "-" (unused) | "?"
    c: tuple[int, int, int]
    u: tuple[int, int, int]
    z: tuple[int, int, int]
    sectors: int | None                    # 32-byte sectors per warp request
    ideal_sectors: int | None
    coalesced: bool | None
    count: Count
    note: str | None = None

    @property
    def is_load(self) -> bool:
        return self.access.kind == "read"


def dynamic_offset(s: Statement, flat: Poly) -> Poly:
    """The offset as a function of the threads at one dynamic instance.

    The lanes of a warp execute a loop in lockstep by iteration number, not by counter
    value: when a loop starts at the thread's own index (`for (j2 = j1; ...)`), lanes
    are at different counters at the same time. Writing every counter as
    c_k = lower_k + step_k * n_k, with the iteration numbers n_k shared by the lanes,
    gives the offsets the lanes touch together.
    """
    for k in reversed(range(len(s.loops))):
        loop = s.loops[k]
        if loop.lower is None:
            continue
        flat = flat.substitute({loop.counter: loop.lower + Poly.var(f"n{k}") * loop.step})
    return flat


def lane_stride(model: KernelModel, flat: Poly, axis: str) -> Poly:
    """Coefficient, in elements, of the within-block thread index along `axis`."""
    for d in model.thread_dims:
        if d.axis == axis and d.kind in ("global", "thread"):
            return flat.coefficient(d.name)
    return Poly()


def _numeric(p: Poly, values: dict[str, int]) -> Fraction | None:
    q = p.substitute(values)
    return q.constant() if q.is_constant() else None


def warp_sectors(strides: dict[str, int], block: tuple[int, int, int], size: int,
                 unit: int | None = None) -> tuple[int, int]:
    """(sectors touched, minimal sectors) by the first warp of a block, for elements of
    `size` bytes at offsets counted in `unit` bytes (the element's size by default)."""
    bx, by, bz = block
    lanes = min(cuda_dialect().warp_size, bx * by * bz)
    offsets = set()
    for lane in range(lanes):
        tx, ty, tz = lane % bx, (lane // bx) % by, lane // (bx * by)
        offsets.add(strides["x"] * tx + strides["y"] * ty + strides["z"] * tz)
    return request_sectors({o * (unit or size) for o in offsets}, size)


def request_sectors(byte_offsets, size: int) -> tuple[int, int]:
    """(32-byte sectors a warp request touches, the fewest its distinct elements need),
    for the lanes' byte offsets from a sector-aligned array start."""
    distinct = set(byte_offsets)
    return (len({o // SECTOR_BYTES for o in distinct}),
            max(1, -(-len(distinct) * size // SECTOR_BYTES)))


def analyze_reference(model: KernelModel, s: Statement, a: Access, count: Count) -> ReferenceReport:
    axes = cuda_dialect().axes
    values = dict(model.parameter_values)
    strides: dict[str, Poly | None] = {}
    classes: dict[str, str] = {}
    note = None
    for axis in axes:
        if a.flat is None:
            strides[axis] = None
            classes[axis] = "?"
            continue
        st = lane_stride(model, dynamic_offset(s, a.flat), axis)
        strides[axis] = st
        if st == Poly():
            classes[axis] = "-"
        elif st.is_constant() and abs(st.constant()) == 1:
            classes[axis] = "c"
        else:
            classes[axis] = "u"
    c = tuple(int(classes[x] == "c") for x in axes)
    u = tuple(int(classes[x] == "u") for x in axes)
    z = tuple(int(classes[x] in ("c", "u", "?")) for x in axes)
    sectors = ideal = coalesced = None
    if all(strides[x] is not None for x in axes):
        numeric = {}
        for x in axes:
            v = _numeric(strides[x], values)
            if v is None:
                note = f"stride {strides[x]} along {x} is symbolic: taken as large"
                v = Fraction(LARGE_STRIDE)
            numeric[x] = int(v)
        block = model.block_shape
        if block is None:
            block = (cuda_dialect().warp_size, 1, 1)
            note = note or "block shape unknown: a warp taken as 32 threads along x"
        sectors, ideal = warp_sectors(numeric, block, a.element_size, a.unit_bytes)
        coalesced = sectors <= ideal
    return ReferenceReport(s, a, strides, classes, c, u, z, sectors, ideal, coalesced, count,
                           note)


def permutation_cost(report: ReferenceReport, axis: str, penalty: int) -> int:
    """The paper's C_R for `axis` as the new x: c + z + N*u."""
    k = cuda_dialect().axes.index(axis)
    return report.c[k] + report.z[k] + penalty * report.u[k]
