"""Execution counts of statements: exact for box and triangular domains.

The domain of a statement is summed one dimension at a time, innermost first. When a
dimension has a single lower bound L and a single upper bound U, both with unit
coefficient, sum_{d=L}^{U} P(d) is a polynomial again (Faulhaber's formulas; see
poly.sum_over). Several bounds on one dimension are resolved when, with the launch's
parameter values, one is always the tighter; a bound by the launch's thread count is
dropped in favour of the kernel's own guard (the launch covers the guarded range). When
none of this applies, the count is an estimate (bounding box) and marked so.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import islpy as isl

from polycoal.model import isl_helpers
from polycoal.model.kernel_model import is_launch_parameter, KernelModel, Statement
from polycoal.model.poly import Poly, sum_over


@dataclass(frozen=True)
class Count:
    formula: Poly                     # in the parameters
    value: int | None                 # with the launch's parameter values, when all known
    exact: bool

    def __str__(self) -> str:
        text = str(self.value) if self.value is not None else self.formula.to_c()
        return text if self.exact else f"~{text}"


def _bound(constraint: isl.Constraint, dim: str) -> tuple[int, Poly]:
    coefs = constraint.get_coefficients_by_name()
    a = int(coefs[dim].to_python())
    rest = Poly()
    for name, v in coefs.items():
        if name == dim:
            continue
        value = int(v.to_python())
        rest = rest + (Poly.const(value) if name == 1 else Poly.var(name) * value)
    return a, rest


def _tightest(bounds: list[Poly], upper: bool, values: dict[str, int]) -> tuple[Poly, bool]:
    if len(bounds) == 1:
        return bounds[0], True
    own = [b for b in bounds if not any(is_launch_parameter(v) for v in b.variables)]
    candidates = own or bounds
    exact = len(own) == len(bounds)
    if len(candidates) == 1:
        return candidates[0], exact
    try:
        nums = [b.value(values) for b in candidates]
        if all(b.substitute(values).is_constant() for b in candidates):
            k = nums.index(min(nums) if upper else max(nums))
            return candidates[k], exact
    except ValueError:
        pass
    # differences that are constants decide too (i < n and i < n - 1)
    for b in candidates:
        if all((o - b).is_constant() and ((o - b).constant() >= 0 if upper else
                                          (o - b).constant() <= 0) for o in candidates):
            return b, exact
    return candidates[0], False


def with_values(model: KernelModel, dom: isl.Set, values: dict[str, int]) -> isl.Set:
    fixed = [f"{p} = {v}" for p, v in values.items() if p in model.parameters]
    if not fixed:
        return dom
    return dom.intersect_params(isl.Set(f"[{', '.join(model.parameters)}] -> "
                                        f"{{ : {' and '.join(fixed)} }}"))


def box_points(dom: isl.Set) -> int | None:
    """Points of the bounding box of a set without parameters left free."""
    total = 1
    for k in range(dom.dim(isl.dim_type.set)):
        lo, hi = dom.dim_min_val(k), dom.dim_max_val(k)
        if not (lo.is_int() and hi.is_int()):
            return None
        total *= max(int(hi.to_python()) - int(lo.to_python()) + 1, 0)
    return total


def count_statement(model: KernelModel, s: Statement) -> Count:
    dom = isl_helpers.domain(model, s).coalesce()
    values = dict(model.parameter_values)
    if with_values(model, dom, values).is_empty():
        return Count(Poly(), 0, s.exact)     # no instance for this launch
    basics = dom.get_basic_sets()
    if not basics:
        return Count(Poly(), 0, True)
    exact = len(basics) == 1 and s.exact
    total = Poly()
    for bset in basics:
        p, ok = _count_basic(bset.remove_redundancies(), model.dims, values)
        exact = exact and ok
        total = total + p
    value = None
    try:
        v = total.value(values)
        value = int(v) if v.denominator == 1 else round(float(v))
    except ValueError:
        pass
    if value is not None and (value < 0 or not exact):
        # a closed form used outside its range, or an estimate: never above the box
        exact = exact and value >= 0
        box = box_points(with_values(model, dom, values)) if set(model.parameters) <= \
            set(values) else None
        value = max(value, 0) if box is None else min(max(value, 0), box)
    return Count(total, value, exact)


def _count_basic(bset: isl.BasicSet, dims: list[str], values: dict[str, int]
                 ) -> tuple[Poly, bool]:
    exact = bset.dim(isl.dim_type.div) == 0
    summand = Poly.const(1)
    n = len(dims)
    for k in reversed(range(n)):
        dim = dims[k]
        # bounds of dim k in terms of the outer dims: project the inner ones out
        level = bset.project_out(isl.dim_type.set, k + 1, n - k - 1).remove_redundancies()
        if level.dim(isl.dim_type.div):
            exact = False
        lowers, uppers, equal = [], [], None
        divs = level.dim(isl.dim_type.div)
        for c in level.get_constraints():
            if divs and c.involves_dims(isl.dim_type.div, 0, divs):
                exact = False     # a stride: its bound is dropped (an over-estimate)
                continue
            coefs = c.get_coefficients_by_name()
            if dim not in coefs:
                continue
            a, rest = _bound(c, dim)
            if c.is_equality():
                if abs(a) == 1:
                    equal = rest * (-a)
                else:
                    exact = False
                continue
            if abs(a) != 1:
                exact = False     # a rational bound: the sum becomes an estimate
            bound = rest * Fraction(-1, a)
            (lowers if a > 0 else uppers).append(bound)
        if equal is not None:
            summand = summand.substitute({dim: equal})
            continue
        if not lowers or not uppers:
            return Poly(), False
        lo, ok1 = _tightest(lowers, False, values)
        hi, ok2 = _tightest(uppers, True, values)
        exact = exact and ok1 and ok2
        summand = sum_over(summand, dim, lo, hi)
    return summand, exact
