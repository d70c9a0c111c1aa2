"""Translation validation: is the generated kernel equivalent to the original?

The generated kernel is read back by the front end and modelled like any kernel. Each of
its statements is a copy of an original statement S; the generator's claim is a map phi
from the new instance (new thread dims, new loop counters) to the original instance: the
original dim on thread axis a equals the value of pc_a, and the k-th coordinate of S's
sequential schedule equals the counter of the loop the isl AST made for coordinate k
(the loop variable pc_i<k>). isl then checks, for every statement:

1. phi is a function and injective, its domain is the whole new domain, and the images
   of the copies of S are disjoint and together exactly S's original domain (the same
   statement instances, each once);
2. every access of the copy equals the original access composed with phi (the same
   memory, element by element), thread-private scalars aside;
3. every original dependence S -> T, pulled back through phi, joins two instances of
   the same new thread, the source before the sink in the new program order;
4. for thread-private scalars, whose scope changes (one variable per new thread), the
   new program's flow dependences, mapped through phi, are exactly the original ones:
   every read sees the same write.

The two kernels run under different launches: the generated kernel's own geometry
(its nthreads_x, blockDim_y...) has nothing to do with the original's, whose values it
receives as extra arguments pc_nthreads_x... (`gen.hidden`) where the original domain
depends on them. Before any comparison, the generated model's own geometry parameters
get fresh names and its pc_<name> arguments become <name>, the original's parameter
they carry: both models then speak of one set of parameters, with one meaning each.

Any failure is reported and the original kernel is kept.
"""

from __future__ import annotations

import dataclasses
import re

import islpy as isl

from polycoal.analysis.dependences import _pair_relation, compute_dependences
from polycoal.codegen.kernel import GeneratedKernel
from polycoal.model.kernel_model import is_launch_parameter
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import Access, KernelModel, Statement
from polycoal.model.poly import Poly


def _rename(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    return pattern.sub(lambda m: names[m.group(1)], text)


def _renamed_parameters(model: KernelModel, names: dict[str, str]) -> KernelModel:
    """A copy of `model` with its parameters renamed (simultaneously) as `names` says."""
    if not names:
        return model
    polys = {old: Poly.var(new) for old, new in names.items()}

    def poly(p):
        return None if p is None else p.substitute(polys)

    def access(a):
        return dataclasses.replace(a, flat=poly(a.flat), subscripts=None if a.subscripts is None
                                   else tuple(poly(x) for x in a.subscripts))

    def loop(l):
        return dataclasses.replace(l, lower=poly(l.lower))

    statements = [dataclasses.replace(
        s, constraints=[_rename(c, names) for c in s.constraints],
        loops=tuple(loop(l) for l in s.loops), accesses=[access(a) for a in s.accesses],
        bindings={v: poly(b) for v, b in s.bindings.items()}) for s in model.statements]
    return dataclasses.replace(
        model, parameters=sorted(names.get(p, p) for p in model.parameters),
        context=[_rename(c, names) for c in model.context], statements=statements,
        thread_dims=[dataclasses.replace(d, extent=poly(d.extent)) for d in model.thread_dims],
        arrays={a: (space, None if sizes is None else tuple(poly(x) for x in sizes))
                for a, (space, sizes) in model.arrays.items()},
        parameter_values={names.get(p, p): v for p, v in model.parameter_values.items()})


def _shared_parameters(old: KernelModel, new: KernelModel, gen: GeneratedKernel
                       ) -> KernelModel:
    """The generated model in the original's parameters: its own launch geometry renamed
    apart (a name neither model uses), its argument pc_<h> for each hidden h renamed h."""
    taken = set(old.parameters) | set(new.parameters)
    names = {}
    for p in new.parameters:
        if is_launch_parameter(p):
            fresh = f"pc_new_{p}"
            while fresh in taken:
                fresh = "_" + fresh
            names[p] = fresh
            taken.add(fresh)
    for h in gen.hidden:
        if f"pc_{h}" in new.parameters:
            names[f"pc_{h}"] = h
    return _renamed_parameters(new, names)


def _without(monomial: tuple[str, ...], factors: tuple[str, ...]) -> tuple[str, ...] | None:
    """The monomial divided by `factors` (variables, with repetition), or None when they
    do not divide it."""
    rest = list(monomial)
    for f in factors:
        if f not in rest:
            return None
        rest.remove(f)
    return tuple(rest)


def _in_shape(flat: Poly, sizes: tuple[Poly, ...]) -> tuple[Poly, ...] | None:
    """Subscripts of a flat offset in an array whose inner dimensions have `sizes`: each
    term goes to the outermost subscript whose stride (the product of the sizes inside
    it) divides it. flat = sum(subscript * stride) holds by construction, so two accesses
    with equal subscripts touch the same element whatever the split; the split is fixed
    so that both kernels' accesses, written in the original's shapes, compare alike (the
    generated code may print `33 * 0 + pc_x` where the original had `i * 33 + j`, which
    the read-back model, seeing no row, would keep flat). None when a stride is not a
    single term or a subscript is not affine."""
    strides = []
    for k in range(len(sizes) + 1):
        stride = Poly.const(1)
        for size in sizes[k:]:
            stride = stride * size
        if len(stride.terms) != 1:
            return None
        strides.append(next(iter(stride.terms.items())))
    subscripts = [Poly() for _ in strides]
    for monomial, coefficient in flat.terms.items():
        for k, (factors, scale) in enumerate(strides):
            rest = _without(monomial, factors)
            if rest is not None and (coefficient / scale).denominator == 1:
                subscripts[k] = subscripts[k] + Poly({rest: coefficient / scale})
                break
        else:
            return None
    if not all(p.is_affine() for p in subscripts):
        return None
    return tuple(subscripts)


def _in_original_shape(old: KernelModel, a: Access) -> Access:
    """Access `a` (of either kernel) with its subscripts in the original model's shape of
    its array (see _in_shape), or as it is when that shape or its flat offset is
    unknown."""
    _, sizes = old.arrays.get(a.array, (None, None))
    if a.space not in ("global", "constant") or a.flat is None or sizes is None:
        return a
    subscripts = _in_shape(a.flat, sizes)
    return a if subscripts is None else dataclasses.replace(a, subscripts=subscripts)


def _comparable(old: KernelModel, a_old: Access, a_new: Access) -> tuple[Access, Access]:
    """The two accesses in one form that compares element by element. Their flat offsets
    when both are affine: one offset in one array is one element, whatever the rows (the
    generated code may print `64 * pc_y + pc_x + 65` for `i + 64 * j`, whose constant no
    per-term split of the offset puts in the right row). Otherwise both in the original's
    shape of the array (_in_shape)."""
    global_ = a_old.space in ("global", "constant")
    if global_ and a_old.flat is not None and a_new.flat is not None and \
            a_old.flat.is_affine() and a_new.flat.is_affine():
        return (dataclasses.replace(a_old, subscripts=(a_old.flat,)),
                dataclasses.replace(a_new, subscripts=(a_new.flat,)))
    return _in_original_shape(old, a_old), _in_original_shape(old, a_new)


def _context(old: KernelModel, new: KernelModel) -> isl.Set:
    """Both models' parameter contexts, in the union of their parameters."""
    params = sorted(set(old.parameters) | set(new.parameters))
    body = " and ".join(old.context + new.context) or "true"
    return isl.Set(f"[{', '.join(params)}] -> {{ : {body} }}")


def _phi(old: KernelModel, new: KernelModel, gen: GeneratedKernel, s: Statement,
         n: Statement) -> isl.Map:
    suffix = {d: f"{d}_n" for d in new.dims}
    new_dims = [suffix[d] for d in new.dims]
    ties = []
    for axis, dim in gen.axis_dims.items():
        var = gen.thread_vars[axis]
        if var not in n.bindings:
            raise ValueError(f"thread variable {var} is not an index in the generated code")
        ties.append(f"{dim} = {_rename(n.bindings[var].to_c('*'), suffix)}")
    schedule = gen.schedules[s.name]
    for loop in n.loops:
        m = re.fullmatch(re.escape(gen.iterator_prefix) + r"(\d+)", loop.source_name)
        if not m:
            raise ValueError(f"loop '{loop.source_name}' is not one the generator made")
        ties.append(f"{schedule[int(m.group(1))]} = {suffix[loop.counter]}")
    params = sorted(set(old.parameters) | set(new.parameters))
    cons = [isl_helpers.domain_constraints(old, s),
            _rename(isl_helpers.domain_constraints(new, n), suffix)] + ties
    return isl.Map(f"[{', '.join(params)}] -> {{ {n.name}[{', '.join(new_dims)}] -> "
                   f"{s.name}[{', '.join(old.dims)}] : {' and '.join(f'({c})' for c in cons)} }}")


def validate_translation(old: KernelModel, new: KernelModel, gen: GeneratedKernel
                         ) -> list[str]:
    """Problems found (empty when the generated kernel is proven equivalent)."""
    problems: list[str] = []
    if not new.is_affine:
        return ["the generated kernel is outside the affine model: "
                + "; ".join(f"{o.construct} at line {o.location.line}" for o in new.outside)]
    if len(new.statements) != len(gen.emitted):
        return [f"the generated kernel has {len(new.statements)} statements, "
                f"the generator emitted {len(gen.emitted)}"]
    new = _shared_parameters(old, new, gen)
    ctx = _context(old, new)
    by_name = {s.name: s for s in old.statements}
    copies: dict[str, list[tuple[Statement, isl.Map]]] = {s.name: [] for s in old.statements}
    for n, origin in zip(new.statements, gen.emitted):
        s = by_name[origin]
        try:
            phi = _phi(old, new, gen, s, n)
        except (ValueError, isl.Error) as e:
            return [f"statement {s.name} (line {s.location.line}): {e}"]
        copies[origin].append((n, phi))
        if not phi.is_single_valued() or not phi.is_injective():
            problems.append(f"{s.name}: instance map is not one-to-one")
        if not phi.domain().is_equal(isl_helpers.domain(new, n).intersect_params(ctx)):
            problems.append(f"{s.name}: some generated instances have no original")
        if len(n.accesses) != len(s.accesses):
            problems.append(f"{s.name}: accesses differ in number")
            continue
        for a_new, a_old in zip(n.accesses, s.accesses):
            if (a_new.array, a_new.kind) != (a_old.array, a_old.kind):
                problems.append(f"{s.name}: access {a_old.text} became {a_new.text}")
                continue
            if a_old.space == "private":
                continue
            c_old, c_new = _comparable(old, a_old, a_new)
            m_old = isl_helpers.access_map(old, s, c_old)
            m_new = isl_helpers.access_map(new, n, c_new)
            if m_old is None or m_new is None or not phi.apply_range(m_old).is_equal(
                    m_new.intersect_params(ctx)):
                problems.append(f"{s.name}: {a_old.text} (line {a_old.location.line}) "
                                "does not access the same elements")
    for s in old.statements:
        images = [phi.range() for _, phi in copies[s.name]]
        union = None
        for k, im in enumerate(images):
            for other in images[k + 1:]:
                if not im.intersect(other).is_empty():
                    problems.append(f"{s.name}: an instance is executed twice")
            union = im if union is None else union.union(im)
        dom = isl_helpers.domain(old, s).intersect_params(ctx)
        if union is None:
            if not dom.is_empty():
                problems.append(f"{s.name} (line {s.location.line}) is never executed")
        elif not union.is_equal(dom):
            problems.append(f"{s.name} (line {s.location.line}): the generated kernel does "
                            "not execute exactly the original instances")
    if problems:
        return problems
    problems += _check_order(old, new, copies)
    problems += _check_private_flow(old, new, copies)
    return problems


def _new_order(new: KernelModel, n1: Statement, n2: Statement) -> isl.Map:
    """Pairs (n1 instance, n2 instance) of one thread, the first executed first."""
    s1 = isl_helpers.schedule_map(new, n1)
    s2 = isl_helpers.schedule_map(new, n2)
    before = isl.UnionMap.from_map(s1).lex_lt_union_map(isl.UnionMap.from_map(s2))
    same = " and ".join(f"{d} = {d}'" for d in isl_helpers.thread_names(new)) or "true"
    return _pair_relation(new, n1, n2, same).intersect(
        isl.Map.from_union_map(before) if not before.is_empty() else
        _pair_relation(new, n1, n2, "false"))


def _check_order(old, new, copies) -> list[str]:
    problems = []
    for dep in compute_dependences(old):
        for n1, phi1 in copies[dep.source]:
            for n2, phi2 in copies[dep.sink]:
                pulled = phi1.apply_range(dep.relation).apply_range(phi2.reverse())
                if pulled.is_empty():
                    continue
                if not pulled.is_subset(_new_order(new, n1, n2)):
                    problems.append(f"{dep.kind} dependence on {dep.array} from {dep.source} "
                                    f"to {dep.sink} is not respected")
    return problems


def _launch_free(relation: isl.UnionMap) -> isl.UnionMap:
    """The relation for some launch of the new kernel: its own geometry's parameters
    (pc_new_*, positive thread counts) projected out, to compare with the original's."""
    space = relation.get_space()
    for k in range(space.dim(isl.dim_type.param) - 1, -1, -1):
        if space.get_dim_name(isl.dim_type.param, k).startswith("pc_new_"):
            relation = relation.project_out(isl.dim_type.param, k, 1)
    return relation


def _check_private_flow(old, new, copies) -> list[str]:
    private = {a for a, (space, _) in old.arrays.items() if space == "private"}
    if not private:
        return []
    phi_of = {n.name: phi for pairs in copies.values() for n, phi in pairs}
    old_flow = [d for d in compute_dependences(old) if d.kind == "flow" and d.array in private]
    new_flow = [d for d in compute_dependences(new) if d.kind == "flow" and d.array in private]
    problems = []
    for array in private:
        want = None
        for d in old_flow:
            if d.array == array:
                um = isl.UnionMap.from_map(d.relation)
                want = um if want is None else want.union(um)
        got = None
        for d in new_flow:
            if d.array == array:
                m = phi_of[d.source].reverse().apply_range(d.relation) \
                    .apply_range(phi_of[d.sink])
                um = isl.UnionMap.from_map(m)
                got = um if got is None else got.union(um)
        if got is not None:
            got = _launch_free(got)
        if (want is None) != (got is None) or (want is not None and not want.is_equal(got)):
            problems.append(f"thread-private '{array}': a read would see a different write")
    return problems
