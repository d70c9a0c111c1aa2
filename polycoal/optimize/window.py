"""When can a stencil's threads each run several rows with the window's reads in
registers (issue 34, the stencil item)?

A stencil as ported (PolyBench's 2-D convolution, FDTD, Jacobi) runs one thread per
output point, x along threadIdx.x (coalesced) and y along threadIdx.y, and each thread
reads a window of neighbours: B[i][j] from A[i-1..i+1][j-1..j+1]. The window's rows
overlap between the threads of neighbouring rows, so every element of A is read three
times, through the L1 and the L2. The remedy is unroll-and-jam of the row dim: a thread
runs `ROWS` consecutive rows at its column and loads each element its rows read once,
into a register (the window slides down the rows): (ROWS + 2) x 3 loads for ROWS
outputs instead of 9 x ROWS. Measured by hand first (tools/explore_stencil_forms.py):
85-96% of a copy's bandwidth, 1.5-1.6x the kernel as written.

Rows that share nothing gain too, past the L2: a kernel of one element a thread keeps
one load a thread in flight, too few bytes to cover the memory's latency (Jacobi's copy
at 64% of a copy's bandwidth at 8192 x 8192, LU's update 62%, FDTD's second step 82%),
and ROWS elements a thread with every load issued before the first store reach it
(102%, 96%, 108%: tools/explore_stream_forms.py; a row apart, blockDim.y apart or
blockDim.x apart alike). A kernel over a 1-D grid (Jacobi-1D) runs its ROWS elements
`STEP1` apart (a block's width: each warp's accesses stay contiguous): 75% -> 106%.
As generated (its lanes from a multiple of a warp: codegen/window.py), at 8192 x 8192
on the H200 (tools/roofline_report.py): Jacobi's copy 57% -> 94% of its roofline
bound, LU's update 55% -> 90%, FDTD's second step 74% -> 97%.
The performance model prices the form against the kernel as written (fewer, longer
threads lose on grids of few waves: Jacobi-2D at 1000 x 1000 measured 0.88x).

The form runs the same statement instances, each under its own domain's condition, in
another assignment to threads: the (x, y) instance by the thread of column x and row
group (y - lo) / ROWS (on a 1-D grid the x instance by the thread of x's residue in its
group of ROWS x STEP1 values), the instances of one thread in the order of their rows, the
statements of one instance in their textual order. The loads are hoisted before the
thread's first instance, each under the union of the conditions of the instances that
read it. That is the same computation when, as checked here:

- the kernel runs only over its two thread dims, or its one on a 1-D grid (no loop,
  no other dim), every
  statement's condition is exact (affine, no data-dependent guard), and no statement
  keeps a private value or touches shared, local or atomic memory: each instance is a
  function of global memory alone;
- no two threads race (isl's race analysis): any order of the instances, one
  thread's included, computes what the original does; the statements of one instance
  (a thread of the original) keep their order, and a read of an array a statement
  before it writes there (a flow dependence) is not loaded ahead;
- a hoisted read loads an element no other instance writes (in the original each
  instance is a thread of its own: a write of another's element would race) and no
  statement of its own instance writes before it (no flow dependence into its
  statement on its array), so
  nothing the load could miss is stored in between: an array the kernel updates in
  place (LU's a[i][j] -= ..., covariance's data[i][j] -= mean[j]) is loaded ahead as
  well, its stores staying stores (a pointer the model takes as another array is, as
  for every form, proven or checked at run time not to overlap); and the read is
  evaluated by its statement whenever the statement runs (not under `?:`, `&&` or
  `||`): the load happens exactly where the instance reading it would have read that
  element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pycparser import c_ast

from polycoal.analysis.work import Geometry
from polycoal.model.accumulation import text
from polycoal.model.kernel_model import KernelModel
from polycoal.model.poly import Poly
from polycoal.optimize.reduction import Obstacle

ROWS = 4             # rows a thread runs (measured: 4 rows reach 85-96% of a copy)
BLOCK = (32, 8, 1)   # a warp along x, 8 row groups a block
BLOCK1 = (256, 1, 1)  # a 1-D grid's blocks
STEP1 = BLOCK1[0]    # a 1-D grid: a thread's elements a block's width apart
MAX_LOADS = 64       # registers a thread's window may hold
ROW0 = "pc_y0"       # the first row of a thread's group, in the plan's keys


@dataclass(frozen=True)
class Load:
    """One element a thread loads into a register: `uses` are the references it
    replaces, (statement, row offset, reference text), the first of which renders the
    load."""

    array: str
    element_type: str
    uses: tuple[tuple[str, int, str], ...]

    @property
    def readers(self) -> tuple[tuple[str, int], ...]:
        """The (statement, row offset) instances that read the element."""
        return tuple(dict.fromkeys((s, row) for s, row, _ in self.uses))


@dataclass(frozen=True)
class WindowPlan:
    x: str                            # the dim along the lanes (threadIdx.x)
    y: str                            # the dim a thread runs `rows` values of (x on a 1-D grid)
    rows: int
    loads: tuple[Load, ...]
    reads: int                        # global reads of the hoisted arrays, as written
    step: int = 1                     # between a thread's values of y

    @property
    def one_dim(self) -> bool:
        """A 1-D grid: each thread runs `rows` values of x, `step` apart."""
        return self.x == self.y

    @property
    def block(self) -> tuple[int, int, int]:
        return BLOCK1 if self.one_dim else BLOCK

    @property
    def shares(self) -> bool:
        """Do a thread's instances read some element more than once?"""
        return len(self.loads) < self.reads

    @property
    def arrays(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(l.array for l in self.loads))

    def registers(self, statement: str, row: int) -> dict[str, int]:
        """Reference text -> the index of the register that replaces it, in the
        instance (statement, row offset)."""
        return {t: k for k, l in enumerate(self.loads) for s, r, t in l.uses
                if (s, r) == (statement, row)}

    @property
    def describe(self) -> str:
        what = f"{self.rows} values a thread {self.step} apart" if self.one_dim else \
            f"{self.rows} rows a thread"
        return (f"{what}, {len(self.loads)} load"
                f"{'s' if len(self.loads) > 1 else ''} into registers for {self.reads} reads "
                f"of {', '.join(self.arrays)}")


def array_references(node) -> tuple[set[str], set[str]]:
    """(texts of the subscripted references `a[e]` a statement always evaluates, those it
    evaluates only under a condition of its own: an arm of `?:`, the right operand of
    `&&` or `||`). A reference written both ways is in both."""
    always: set[str] = set()
    sometimes: set[str] = set()

    def walk(n, conditional: bool) -> None:
        if n is None:
            return
        if isinstance(n, c_ast.ArrayRef):
            (sometimes if conditional else always).add(text(n))
        if isinstance(n, c_ast.TernaryOp):
            walk(n.cond, conditional)
            walk(n.iftrue, True)
            walk(n.iffalse, True)
            return
        if isinstance(n, c_ast.BinaryOp) and n.op in ("&&", "||"):
            walk(n.left, conditional)
            walk(n.right, True)
            return
        for _, child in n.children():
            walk(child, conditional)
    walk(node, False)
    return always, sometimes


def _shape(model: KernelModel, analysis, x: str | None) -> tuple[str, str] | Obstacle:
    """(x, y): the kernel's two thread dims, `x` (by default the one on threadIdx.x) on
    the lanes (on a 1-D grid its one dim twice), or why the form does not apply."""
    if not model.is_affine or not model.statements:
        return Obstacle("window-shape", "not an affine kernel")
    if model.depth or any(s.loops for s in model.statements):
        return Obstacle("window-shape", "its threads run loops")
    # no loop: a thread runs one instance of each statement, so every dependence is
    # between statements of one instance, kept by their textual order (the reads they
    # order are not loaded ahead: window_plan); threads must not race
    if analysis.races:
        return Obstacle("window-dependence", "its instances depend on each other")
    if model.private or model.synchronises:
        return Obstacle("window-shape", "it keeps private values or synchronises")
    if not all(s.exact for s in model.statements):
        return Obstacle("window-shape", "a data-dependent condition guards a statement")
    if any(a.space not in ("global", "constant") or a.atomic
           for s in model.statements for a in s.accesses):
        return Obstacle("window-shape", "it uses private, local, shared or atomic values")
    axes = {d.axis: d for d in model.thread_dims}
    if len(model.thread_dims) == 1 and set(axes) == {"x"} and \
            axes["x"].kind == "global" and not axes["x"].strided and \
            set(model.dims) == {axes["x"].name} and x in (None, axes["x"].name):
        return axes["x"].name, axes["x"].name
    if len(model.thread_dims) != 2 or set(axes) != {"x", "y"} or \
            any(d.kind != "global" or d.strided for d in model.thread_dims) or \
            set(model.dims) != {d.name for d in model.thread_dims}:
        return Obstacle("window-shape", "it does not run over a whole 2-D grid of threads")
    dims = (axes["x"].name, axes["y"].name)
    if x is None or x == dims[0]:
        return dims
    if x != dims[1]:
        return Obstacle("window-shape", f"{x} is not a thread dim")
    return dims[1], dims[0]


def window_plan(model: KernelModel, analysis, x: str | None = None, rows: int = ROWS
                ) -> WindowPlan | Obstacle:
    """The register-window form of the kernel with `x` on the lanes (by default the dim
    on threadIdx.x as written; the restructuring ILP's choice where the references
    coalesce along the other), or why it does not apply (the module's doc)."""
    shape = _shape(model, analysis, x)
    if isinstance(shape, Obstacle):
        return shape
    x, y = shape
    step = STEP1 if x == y else 1
    found: dict = {}                  # (array, element) -> Load
    reads = 0
    # arrays a statement before it in the instance writes where it reads (a flow
    # dependence: its reads of them stay in place; correlation's data[i][j] -= mean[j];
    # data[i][j] /= ...)
    written_before: dict[str, set[str]] = {s.name: set() for s in model.statements}
    for d in analysis.dependences:
        if d.kind == "flow":
            written_before[d.sink].add(d.array)
    for row in range(rows):
        for s in model.statements:
            # a subscripted reference evaluated whenever its statement runs (a member of
            # a struct element, a pointer's dereference stay where they are)
            always, sometimes = array_references(s.node)
            for a in s.accesses:
                if a.kind != "read" or a.space != "global" or \
                        a.array in written_before[s.name] or \
                        a.flat is None or a.member is not None or \
                        a.text not in always or a.text in sometimes:
                    continue
                reads += 1
                key = (a.array, a.flat.substitute({y: Poly.var(ROW0) + row * step}))
                load = found.get(key, Load(a.array, a.element_type, ()))
                if (s.name, row, a.text) not in load.uses:
                    found[key] = replace(load, uses=load.uses + ((s.name, row, a.text),))
    if not found:
        return Obstacle("window-reuse", "it reads no element of global memory a load "
                        "could take ahead")
    if len(found) > MAX_LOADS:
        return Obstacle("window-reuse", f"its window holds more than {MAX_LOADS} elements")
    return WindowPlan(x, y, rows, tuple(found.values()), reads, step)


def window_geometry(plan: WindowPlan) -> Geometry:
    """How the form runs (for the performance model): the two dims on threads, `rows`
    instances a thread, each hoisted array's reads served by its loads (reads per load)."""
    per_array: dict[str, list[int]] = {}
    for l in plan.loads:
        counts = per_array.setdefault(l.array, [0, 0])
        counts[0] += 1
        counts[1] += len(l.uses)
    return Geometry(x=plan.x, axes=tuple(dict.fromkeys((plan.x, plan.y))),
                    per_thread=plan.rows, block_threads=math.prod(plan.block), unroll=plan.rows,
                    windowed=tuple((a, reads / loads) for a, (loads, reads)
                                   in sorted(per_array.items())))
