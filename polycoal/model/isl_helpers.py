"""All islpy plumbing: the model's text constraints as isl sets and maps.

The rest of polycoal talks about statements, accesses and dependences; this module is
the only one that spells isl. Every statement's domain lives in the space
S[thread dims..., c0, ..., c(depth-1)]; loop dimensions a statement does not have are
one-time loops fixed at 0.
"""

from __future__ import annotations

from functools import lru_cache

import islpy as isl

from polycoal.model.kernel_model import Access, KernelModel, Statement
from polycoal.model.poly import Poly


def _params(model: KernelModel) -> str:
    return "[" + ", ".join(model.parameters) + "]"


def thread_names(model: KernelModel) -> list[str]:
    return [d.name for d in model.thread_dims]


def _dims(model: KernelModel) -> str:
    return ", ".join(model.dims)


def domain_constraints(model: KernelModel, s: Statement) -> str:
    parts = []
    for d in model.thread_dims:
        parts.append(f"0 <= {d.name}" if d.strided else
                     f"0 <= {d.name} < {d.extent.to_c('*')}")
    for k in range(len(s.loops), model.depth):
        parts.append(f"c{k} = 0")
    parts += s.constraints
    parts += model.context
    return " and ".join(f"({p})" for p in parts) if parts else "true"


@lru_cache(maxsize=4096)
def _set(text: str) -> isl.Set:
    return isl.Set(text)


@lru_cache(maxsize=4096)
def _map(text: str) -> isl.Map:
    return isl.Map(text)


def domain(model: KernelModel, s: Statement) -> isl.Set:
    return _set(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] : "
                f"{domain_constraints(model, s)} }}")


def context(model: KernelModel) -> isl.Set:
    body = " and ".join(model.context) if model.context else "true"
    return _set(f"{_params(model)} -> {{ : {body} }}")


def _target(model: KernelModel, a: Access) -> list[str] | None:
    """Subscripts of the access in isl text, with the prefix that privatises it."""
    if a.subscripts is None:
        return None
    subs = [p.to_c("*") for p in a.subscripts]
    if a.space in ("private", "local"):
        return thread_names(model) + subs
    if a.space == "shared":
        prefix = []
        for d in model.thread_dims:
            if d.kind == "block":
                prefix.append(d.name)
            elif d.kind == "global":
                if model.block_shape is None:
                    return None
                size = model.block_shape["xyz".index(d.axis)]
                prefix.append(f"floor({d.name}/{size})")
        return prefix + subs
    return subs


def access_map(model: KernelModel, s: Statement, a: Access) -> isl.Map | None:
    target = _target(model, a)
    if target is None:
        return None
    m = _map(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] -> "
             f"{a.array}[{', '.join(target)}] }}")
    return m.intersect_domain(domain(model, s))


def schedule_map(model: KernelModel, s: Statement) -> isl.Map:
    """The original order: thread dims outermost, then the 2d+1 textual schedule."""
    out = thread_names(model)
    beta = list(s.beta) + [0] * (model.depth + 1 - len(s.beta))
    for k in range(model.depth):
        out.append(str(beta[k]))
        step = s.loops[k].step if k < len(s.loops) else 1
        out.append(f"c{k}" if step > 0 else f"-c{k}")
    out.append(str(beta[model.depth]))
    m = _map(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] -> [{', '.join(out)}] }}")
    return m.intersect_domain(domain(model, s))


def union_of(items) -> isl.UnionMap | None:
    result = None
    for m in items:
        if m is None:
            continue
        um = isl.UnionMap.from_map(m) if isinstance(m, isl.Map) else m
        result = um if result is None else result.union(um)
    return result


def implies(model: KernelModel, s: Statement, condition: str) -> bool:
    """Does every instance of `s` satisfy `condition` (isl text over its dims)?"""
    dom = domain(model, s)
    cond = _set(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] : {condition} }}")
    return dom.is_subset(cond)


def poly_text(p: Poly) -> str:
    return p.to_c("*")


def dim_bounds(model: KernelModel, dim: str) -> tuple[list[Poly], list[Poly]]:
    """Affine lower and upper bounds of `dim` over all instances, in the parameters.

    The union of the statements' domains, projected on `dim`, is over-approximated by
    its simple hull; each constraint a*dim + e >= 0 with a = +-1 is a bound. Bounds may
    be loose: the generated code guards every statement exactly anyway.
    """
    pos = model.dims.index(dim)
    n = len(model.dims)
    union = None
    for st in model.statements:
        dom = domain(model, st)
        proj = dom.project_out(isl.dim_type.set, pos + 1, n - pos - 1) \
            .project_out(isl.dim_type.set, 0, pos).reset_tuple_id()
        union = proj if union is None else union.union(proj)
    if union is None:                   # a kernel without statements: no bounds
        return [], []
    hull = union.simple_hull()
    lowers, uppers = [], []
    for c in hull.get_constraints():
        a = int(c.get_coefficient_val(isl.dim_type.set, 0).to_python())
        if abs(a) != 1:
            continue
        e = Poly.const(int(c.get_constant_val().to_python()))
        for k in range(hull.dim(isl.dim_type.param)):
            v = int(c.get_coefficient_val(isl.dim_type.param, k).to_python())
            if v:
                e = e + Poly.var(hull.get_dim_name(isl.dim_type.param, k)) * v
        bound = e * (-a)              # a*d + e >= 0  ->  d >= -e (a = 1) or d <= e (a = -1)
        if c.is_equality():
            lowers.append(bound)
            uppers.append(bound)
        elif a > 0:
            lowers.append(bound)
        else:
            uppers.append(bound)
    lowers.sort(key=lambda b: (not b.is_constant(), str(b)))
    return lowers, sorted(uppers, key=str)


def all_dims(model: KernelModel) -> list[str]:
    """The names of a statement domain's dims: thread dims, then c0, c1, ..."""
    return thread_names(model) + [f"c{k}" for k in range(model.depth)]


def single_valued(values: isl.Set) -> bool:
    """Whether a 1-D parameterised set holds at most one value for each parameter value."""
    return values.is_empty() or values.lexmin().is_equal(values.lexmax())


def projected(dom: isl.Set, names: list[str], dims: list[str]) -> isl.Set:
    """A statement's domain (dims `names`) projected onto `dims`, in their order (an
    unnamed tuple)."""
    m = isl.Map(f"{{ [{', '.join(names)}] -> [{', '.join(dims)}] }}")
    return dom.reset_tuple_id().apply(m.align_params(dom.get_space()))


def without_gaps(values: isl.Set) -> bool:
    """Whether, for each parameter value, the set is convex (no step, no modulo hole):
    its hull, taken back to the parameters it holds for, is itself (a disjunction of
    parameter conditions, `ni <= 1 or nj <= 90`, is not a gap)."""
    hull = isl.Set.from_basic_set(values.polyhedral_hull())
    return values.is_equal(hull.intersect_params(values.params()))


def known_span(model: KernelModel, dim: str) -> int | None:
    """The number of values `dim` takes over the whole kernel (max - min + 1 over every
    statement's domain, a triangular loop's range included) when the launch's parameter
    values fix it, else None."""
    names = all_dims(model)
    if dim not in names:
        return None
    position = names.index(dim)
    lo = hi = None
    for s in model.statements:
        if dim.startswith("c") and int(dim[1:]) >= len(s.loops):
            continue
        d = domain(model, s)
        for name, value in model.parameter_values.items():
            k = d.find_dim_by_name(isl.dim_type.param, name)
            if k >= 0:
                d = d.fix_val(isl.dim_type.param, k, value)
        d = d.project_out(isl.dim_type.set, position + 1, d.dim(isl.dim_type.set) - position - 1)
        d = d.project_out(isl.dim_type.set, 0, position)
        d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param))
        if d.is_empty():
            continue
        if not d.is_bounded():
            return None
        first = d.lexmin().sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
        last = d.lexmax().sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
        lo = first if lo is None else min(lo, first)
        hi = last if hi is None else max(hi, last)
    return None if lo is None else hi - lo + 1


def known_extent(model: KernelModel, dim: str, values: dict | None = None) -> int | None:
    """The number of values of `dim` when the launch's parameter values (or `values`)
    fix its bounds (dim_bounds), else None."""
    lowers, uppers = dim_bounds(model, dim)
    if not lowers or not uppers:
        return None
    values = model.parameter_values if values is None else values
    try:
        lo = max(b.value(values) for b in lowers)
        hi = min(b.value(values) for b in uppers)
    except ValueError:
        return None
    return max(0, int(hi - lo + 1))


def value_range(model: KernelModel, statements: list[Statement], index: Poly) -> isl.Set | None:
    """The values of `index` over the statements' domains, an isl set [t] (None: no
    statement)."""
    names = all_dims(model)
    values = None
    for s in statements:
        m = isl.Map(f"[{', '.join(model.parameters)}] -> {{ {s.name}[{', '.join(names)}] -> "
                    f"[{index.to_c('*')}] }}")
        image = domain(model, s).apply(m)
        values = image if values is None else values.union(image)
    return values
