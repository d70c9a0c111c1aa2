"""The polyhedral model of one kernel, as plain data.

The thread geometry is modelled as loops around the kernel body (core paper, section
3): every statement instance is a point (thread dims..., loop counters...). A thread
axis whose index is only used as `blockIdx.a * blockDim.a + threadIdx.a` is one thread
dimension `ga` ranging over all threads of the launch along a; an axis whose block and
thread indices are used separately gives two dimensions `ba` (block) and `ta` (thread in
block). Loop counters are named c0, c1, ... by depth; statements of smaller depth are
padded with one-time loops (counter fixed at 0) so all have the same dimensionality.
Constraints are isl syntax over these names and the parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from polycoal.diagnostics import Diagnostic, Location
from polycoal.model.poly import Poly

# the parameters a kernel model gives the launch's geometry (nthreads_x = gridDim.x *
# blockDim.x ...): these names exactly, never a kernel argument's (a kernel with an
# argument so named is left as written: reserved_argument)
_LAUNCH_PARAMETER = re.compile(r"(nthreads|blockDim|gridDim)_[xyz]")


def is_launch_parameter(name: str) -> bool:
    """Whether a model parameter is the launch's geometry (not a kernel argument)."""
    return _LAUNCH_PARAMETER.fullmatch(name) is not None


def reserved_argument(kernel) -> str | None:
    """Why a kernel cannot be modelled (an argument with the name the model gives the
    launch's geometry: the two would be one parameter), or None."""
    named = [p.name for p in kernel.parameters if is_launch_parameter(p.name)]
    return f"its argument {named[0]} has the name the model gives the launch's " \
        "geometry" if named else None


@dataclass(frozen=True)
class ThreadDim:
    name: str            # "gx" | "bx" | "tx" (and y, z)
    axis: str            # "x" | "y" | "z"
    kind: str            # "global" (whole launch) | "block" | "thread" (within a block)
    extent: Poly         # number of values: a constant or a parameter
    strided: bool = False   # a grid-stride loop's index: unbounded, one thread per value


@dataclass(frozen=True)
class Loop:
    counter: str         # model name: c0, c1, ...
    source_name: str     # the C variable
    location: Location
    step: int            # +1, -1, or a stride
    lower: "Poly" = None  # first value of the counter (thread dims, outer counters, params)
    pragmas: tuple[str, ...] = ()   # `#pragma unroll 4` and the like written before it


@dataclass
class Access:
    array: str
    kind: str                        # "read" | "write"
    space: str                       # "global" | "constant" | "shared" | "local" | "private"
    element_type: str
    element_size: int
    location: Location
    text: str                        # the reference as written
    flat: Poly | None                # offset in elements; None when not a polynomial
    subscripts: tuple[Poly, ...] | None = None   # affine, after delinearisation; None: non-affine
    atomic: bool = False
    reason: str | None = None        # why the access is outside the model
    # a field of an array of structs (`p[i].pos.x`): its path in the struct and the
    # struct's name; `flat` then counts `unit`-byte units (frontend/structs.py)
    member: str | None = None
    struct: str | None = None
    unit: int | None = None

    @property
    def element_index(self) -> str:
        """The element index as written: the text between the first `[` and its `]`
        (`p[nbr[i]].x` -> `nbr[i]`; `p->x` -> `0`)."""
        text = self.text
        if "[" not in text:
            return "0"
        depth, start = 0, text.index("[")
        for k in range(start, len(text)):
            depth += text[k] == "["
            depth -= text[k] == "]"
            if depth == 0:
                return text[start + 1:k].strip()
        return text

    @property
    def unit_bytes(self) -> int:
        """Bytes per unit of `flat`: the element's size, or a struct array's unit."""
        return self.unit or self.element_size


@dataclass
class Statement:
    name: str                        # S0, S1, ... in textual order
    location: Location
    text: str
    loops: tuple[Loop, ...]
    constraints: list[str]           # isl constraints on thread dims, counters, parameters
    beta: tuple[int, ...]            # textual position at each depth (2d+1 schedule)
    accesses: list[Access]
    update: str | None = None        # "+", "*", "min", "max" for `X op= e` updates
    exact: bool = True               # False when a data-dependent condition was dropped
    node: object = None              # the pycparser node, for regeneration
    bindings: dict = field(default_factory=dict)   # C index variable -> Poly, at this point


@dataclass(frozen=True)
class OutsideModel:
    """A construct the affine model cannot represent, and what polycoal can still do."""

    construct: str                   # e.g. "non-affine subscript", "__syncthreads"
    location: Location
    detail: str
    fallback: str


@dataclass
class KernelModel:
    kernel: str
    location: Location
    thread_dims: list[ThreadDim]
    depth: int                       # loop depth after padding
    parameters: list[str]
    context: list[str]               # isl constraints on the parameters
    statements: list[Statement]
    arrays: dict[str, tuple[str, tuple[Poly, ...] | None]] = field(default_factory=dict)
    #                                  array -> (space, sizes of inner dims after delinearisation)
    outside: list[OutsideModel] = field(default_factory=list)
    parameter_values: dict[str, int] = field(default_factory=dict)   # known from launches
    block_shape: tuple[int, int, int] | None = None
    used_axes: frozenset[str] = frozenset()      # thread axes the kernel's code refers to
    axes: object = None              # expressions.ThreadAxes used to read the kernel
    types: dict[str, str] = field(default_factory=dict)   # int argument or local -> C type
    private: dict[str, tuple[str, int]] = field(default_factory=dict)
    #                                  private scalar -> (C type, loop depth of declaration)
    notes: list[Diagnostic] = field(default_factory=list)
    # whether the context takes the int arguments to be non-negative (`n >= 0`): an
    # assumption nothing in the kernel proves, which a launch may break (a host loop's
    # k = -1); a change made under it runs only where each launch checks it. A set:
    # only these arguments are so taken (what every launch shows: a literal, a host
    # loop's counter counting up from zero), nothing assumed of the others
    signed: "bool | frozenset[str]" = True
    # isl constraints `P >= 0` on the parameters: the sides of unsigned comparisons that
    # may be negative, over the int arguments and the launch geometry alone
    # (expressions.Scope.unsigned_sides); a model planned again under them
    # (transform._unsigned_sides) holds where each launch checks them
    unsigned_sides: tuple[str, ...] = ()

    @property
    def is_affine(self) -> bool:
        return not self.outside

    @property
    def synchronises(self) -> bool:
        """Whether the kernel calls __syncthreads (its threads meet at barriers)."""
        return any(o.construct == "__syncthreads" for o in self.outside)

    @property
    def dims(self) -> list[str]:
        return [d.name for d in self.thread_dims] + [f"c{k}" for k in range(self.depth)]

    def accesses(self):
        for s in self.statements:
            for a in s.accesses:
                yield s, a
