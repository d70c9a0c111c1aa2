"""Assumptions checked at run time (issue 14, after Polly's run-time checks).

A kernel may be race-free only for some values of its parameters: PolyBench/GPU's
covariance runs `for (j2 = j1; j2 < m; j2++) symmat[j1 * M + j2] = ...` with `m` a
kernel argument and `M` the row length, so that two threads write one element only when
m > M, which the program never does but polycoal cannot see. The races' parameter sets
(dependences.Race.when) are then the values to exclude: the assumption is the model's
context without them,

    A = context \\ U_races when,

kept when it leaves some parameter values (the pieces of a disjunction that bound
the launch geometry are dropped: the rest is a sufficient condition). The kernel is analysed and
transformed under A (A joins the model's context, so dependences, the mapping,
code generation and translation validation all hold where A does), the transformed
kernel is emitted beside the original, and each launch evaluates A from its own
argument values on the host and runs the transformed kernel only where A holds.
Launch values known at compile time are already in the context: where they decide A
there is no race to begin with, or one that stays a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import islpy as isl

from polycoal.analysis.dependences import condition_text, racing_values
from polycoal.model.isl_c import pw_aff_to_c
from polycoal.model.kernel_model import is_launch_parameter
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel


@dataclass(frozen=True)
class Assumption:
    constraint: str          # isl text over the parameters (a context entry): `m <= 2048`
    space: tuple[str, ...]   # the model's parameters, the names `constraint` may read
    parameters: tuple[str, ...]      # those it reads
    purpose: str = "race freedom"    # what it guarantees, in words

    def as_set(self) -> isl.Set:
        return isl.Set(f"[{', '.join(self.space)}] -> {{ : {self.constraint} }}")


def race_free_assumption(model: KernelModel, races) -> Assumption | None:
    """The condition on the parameters under which none of `races` happens, or None
    when one of them happens for every value or the condition is not one conjunction."""
    racing = racing_values(races)
    if racing is None:
        return None
    context = isl_helpers.context(model)
    safe = context.subtract(racing).coalesce()
    if safe.is_empty():
        return None
    if safe.n_basic_set() != 1:
        # {m <= 2048} or {nthreads_x <= 1}: the pieces that leave the launch geometry
        # free are the condition worth checking (a sufficient one: the original runs
        # for the rest); several such pieces ({n <= 73 + k} or {k >= 183} or {m <= 1},
        # gramschmidt's projection with its rows of N elements) are checked as their
        # disjunction, none of them being the one the program's values always meet
        free = [isl.Set.from_basic_set(b) for b in safe.get_basic_sets()
                if not _constrains_geometry(isl.Set.from_basic_set(b).gist(context))]
        if not free:
            return None
        if len(free) > 1:
            pieces = [_widened(p, safe, context) for p in free]
            union = pieces[0]
            for piece in pieces[1:]:
                union = union.union(piece)
            # as written, piece by piece (isl's union would spell them disjoint)
            text = " or ".join(condition_text(p) for p in pieces)
            return _assumption(union.coalesce(), f"({text})")
        safe = free[0]
    condition = safe.gist(context).coalesce()
    if condition.is_equal(isl.Set.universe(condition.get_space())):
        return None
    return _assumption(condition)


def _widened(piece: isl.Set, safe: isl.Set, context: isl.Set) -> isl.Set:
    """The piece with every constraint dropped that the union `safe` does not need
    (`k <= 182 and n <= 73 + k` beside `k >= 183` is `n <= 73 + k`): a shorter
    condition for the same union."""
    constraints = piece.gist(context).coalesce().get_basic_sets()[0].get_constraints()
    kept = list(constraints)
    for c in constraints:
        rest = [x for x in kept if x is not c]
        wider = isl.BasicSet.universe(piece.get_space())
        for x in rest:
            wider = wider.add_constraint(x)
        if isl.Set.from_basic_set(wider).intersect(context).is_subset(safe):
            kept = rest
    out = isl.BasicSet.universe(piece.get_space())
    for x in kept:
        out = out.add_constraint(x)
    return isl.Set.from_basic_set(out)


def _constrains_geometry(piece) -> bool:
    """Whether a piece of a parameter set bounds the launch geometry's parameters."""
    space = piece.get_space()
    return any(is_launch_parameter(space.get_dim_name(isl.dim_type.param, k)) and
               piece.involves_dims(isl.dim_type.param, k, 1)
               for k in range(space.dim(isl.dim_type.param)))


def _assumption(condition: isl.Set, body: str = "") -> Assumption:
    body = body or condition_text(condition)
    if condition.n_basic_set() > 1 and not body.startswith("("):
        body = f"({body})"      # a context entry, joined to others by `and`

    space = condition.get_space()
    names = tuple(space.get_dim_name(isl.dim_type.param, k)
                  for k in range(space.dim(isl.dim_type.param)))
    used = tuple(n for n in names if condition.involves_dims(
        isl.dim_type.param, names.index(n), 1))
    return Assumption(body, names, used)


def both(first: Assumption, second: Assumption) -> Assumption:
    """The conjunction of two assumptions on one model's parameters."""
    purposes = dict.fromkeys(first.purpose.split("; ") + second.purpose.split("; "))
    return replace(_assumption(first.as_set().intersect(second.as_set()).coalesce()),
                   purpose="; ".join(purposes))


def nonnegative(model: KernelModel, names: list[str]) -> Assumption:
    """The int arguments `names` are not negative: what a model whose context takes
    them so (KernelModel.signed) rests on where no launch shows it."""
    condition = isl.Set(f"[{', '.join(model.parameters)}] -> {{ : "
                        + " and ".join(f"{p} >= 0" for p in names) + " }")
    return replace(_assumption(condition), purpose="non-negative int arguments")


def unsigned_sides(model: KernelModel) -> Assumption | None:
    """The sides of the kernel's unsigned comparisons that may be negative are not
    (KernelModel.unsigned_sides): Rodinia's gaussian returns where `threadIdx.x +
    blockIdx.x * blockDim.x >= Size - 1 - t`, an unsigned comparison in which Size - 1 - t
    < 0 (t >= Size, which the program never launches) stands for a value above every
    thread, so that no thread returns and the rows it writes are not bounded by Size.
    Where each side is not negative the comparison is that of the integers; None when
    no such side is over the model's parameters or the context already implies it."""
    if not model.unsigned_sides:
        return None
    context = isl_helpers.context(model)
    condition = isl.Set(f"[{', '.join(model.parameters)}] -> {{ : {' and '.join(model.unsigned_sides)} }}")
    condition = condition.gist(context).coalesce()
    if condition.is_equal(isl.Set.universe(condition.get_space())):
        return None
    return replace(_assumption(condition), purpose="unsigned comparisons' sides not negative")


def holds(assumption: Assumption, values: dict[str, int]) -> bool | None:
    """Whether the assumption holds at these parameter values (None when one it reads
    has no value)."""
    if any(p not in values for p in assumption.parameters):
        return None
    fixed = " and ".join(f"{p} = {values[p]}" for p in assumption.parameters)
    return not assumption.as_set().intersect(isl.Set(
        f"[{', '.join(assumption.space)}] -> {{ : {fixed} }}")).is_empty()


def decided(assumption: Assumption, values: dict[str, int]) -> bool | None:
    """Whether the assumption holds at a launch whose known values are `values` (some of
    the parameters, by name): True whatever the others are, False for no value of them,
    None when it depends on values known only at run time."""
    known = {p: v for p, v in values.items() if p in assumption.space}
    if not any(p in known for p in assumption.parameters):
        return None
    fixed = isl.Set(f"[{', '.join(assumption.space)}] -> {{ : "
                    + " and ".join(f"{p} = {v}" for p, v in sorted(known.items())) + " }")
    condition = assumption.as_set()
    if condition.intersect(fixed).is_empty():
        return False
    return True if fixed.is_subset(condition) else None


# Pointer arguments that must not overlap. The model takes every pointer argument as
# its own array; where the program shows no evidence of that (restrict, distinct
# cudaMalloc allocations), each launch can check it instead: the elements a pointer's
# references touch lie in [lo, hi] (offsets from the pointer, over the kernel's
# parameters: the box hull of the subscripts' ranges over the statements' domains,
# flattened with the row sizes), and two pointers whose byte ranges are disjoint at a
# launch's values cannot reach one another's elements there. Only pairs in which one
# pointer is written need the check.

@dataclass(frozen=True)
class Footprint:
    pointer: str             # the kernel's pointer parameter (its array in the model)
    element_size: int        # bytes
    lo: str                  # C text over the kernel's parameters: first element offset
    hi: str                  # last element offset
    strides: tuple[str, ...]  # symbolic row sizes the flattening needs non-negative

    def bytes_c(self) -> tuple[str, str]:
        """The first and one-past-last byte addresses, as host C (size_t arithmetic)."""
        base = f"(size_t)(const void *)({self.pointer})"
        return (f"({base} + (size_t)((long long)({self.lo}) * {self.element_size}))",
                f"({base} + (size_t)(((long long)({self.hi}) + 1) * {self.element_size}))")


@dataclass(frozen=True)
class Disjoint:
    first: Footprint         # one of the two is written
    second: Footprint

    def describe(self) -> str:
        return f"'{self.first.pointer}' and '{self.second.pointer}' do not overlap"

    def to_c(self) -> str:
        """The host condition: the two byte ranges are disjoint (and the row sizes the
        footprints were flattened with are not negative)."""
        (a_lo, a_hi), (b_lo, b_hi) = self.first.bytes_c(), self.second.bytes_c()
        signs = [f"({s}) >= 0" for s in sorted(set(self.first.strides + self.second.strides))]
        return " && ".join(signs + [f"({a_hi} <= {b_lo} || {b_hi} <= {a_lo})"])


def footprint(model: KernelModel, array: str) -> Footprint | None:
    """The element range of `array`'s references, or None when a subscript is not
    affine or its range is unbounded."""
    touched = None
    size = None
    tail = 0          # units a struct field reaches beyond its first (a double in 4s)
    for s, a in model.accesses():
        if a.array != array:
            continue
        m = isl_helpers.access_map(model, s, a)
        if m is None:
            return None
        image = m.range()
        touched = image if touched is None else touched.union(image)
        size = a.unit_bytes
        tail = max(tail, -(-a.element_size // a.unit_bytes) - 1)
    if touched is None:
        return None
    sizes = list((model.arrays.get(array) or ("", ()))[1] or ())
    rank = touched.dim(isl.dim_type.set)
    if len(sizes) != rank - 1:
        return None
    touched = touched.coalesce()
    strides, lo, hi = [], [], []
    for k in range(rank):
        try:
            low, high = pw_aff_to_c(touched.dim_min(k)), pw_aff_to_c(touched.dim_max(k))
        except isl.Error:
            return None
        row = None                      # elements per step of subscript k
        for p in sizes[k:]:
            row = p if row is None else row * p
        text = "1" if row is None else isl_helpers.poly_text(row)
        if row is not None and not row.is_constant():
            strides.append(text)
        scale = "" if text == "1" else f" * ({text})"
        if low != "0":
            lo.append(f"({low}){scale}")
        hi.append(f"({high}){scale}")
    if tail:
        hi.append(str(tail))
    return Footprint(array, size, " + ".join(lo) or "0", " + ".join(hi), tuple(strides))


def disjoint_pointers(model: KernelModel, pointers: list[str]) -> tuple[Disjoint, ...] | None:
    """The pairs of `pointers` (kernel parameters, in order) of which one is written,
    with their footprints; None when a footprint cannot be computed."""
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    used = [p for p in pointers if any(a.array == p for _, a in model.accesses())]
    prints = {p: footprint(model, p) for p in used}
    if any(f is None for f in prints.values()):
        return None
    return tuple(Disjoint(prints[p], prints[q]) for k, p in enumerate(used)
                 for q in used[k + 1:] if p in written or q in written)
