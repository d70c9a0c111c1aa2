"""Delinearisation: flat subscripts `A[i * n + j]` back to multi-dimensional accesses.

A subscript that is a polynomial in the parameters times affine expressions of the loop
and thread dimensions, `sum_k P_k(params) * a_k(dims)`, is read as a multi-dimensional
access when the parameter monomials P_k form a chain 1 | n | n*m | ... (each one the
previous times one more size): A[i*n + j] -> A[i][j], B[(z*ny + y)*nx + x] -> B[z][y][x].
This is exact only if every inner subscript stays inside its size, 0 <= a_k < size_k, on
the statement's whole domain; isl checks that (the "bound conditions that make it
valid"). An array is given one shape for all its accesses, or none: then it is
non-affine when a subscript multiplies a parameter by a dimension, or stays flat.

With constant row lengths (`A[i * 4096 + j]`, N a macro) the flat subscript is already
affine; it is split the same way, with the row length S the largest coefficient, when
all accesses agree and the inner subscripts provably stay in [0, S).
"""

from __future__ import annotations

from fractions import Fraction

from polycoal.model import isl_helpers
from polycoal.model.kernel_model import Access, KernelModel, OutsideModel, Statement
from polycoal.model.poly import Poly


def _size_monomials(flat: Poly, params: set[str]) -> set[tuple[str, ...]] | None:
    """Parameter monomials that multiply a dimension (the candidate row sizes)."""
    sizes = set()
    for m in flat.terms:
        dm = [v for v in m if v not in params]
        if len(dm) > 1:
            return None
        if dm:
            sizes.add(tuple(v for v in m if v in params))
    return sizes


def _divides(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    rest = list(b)
    for v in a:
        if v not in rest:
            return False
        rest.remove(v)
    return True


def _split(flat: Poly, params: set[str], chain: list[tuple[str, ...]]
           ) -> dict[tuple[str, ...], Poly] | None:
    """flat = sum over the chain's monomials P of P * a_P, with a_P affine.

    A term without a dimension (k * n, a parameter offset) goes to the largest chain
    monomial dividing it, with the rest of it (k) as an affine offset.
    """
    parts: dict[tuple[str, ...], Poly] = {}
    for m, c in flat.terms.items():
        pm = tuple(v for v in m if v in params)
        dm = tuple(v for v in m if v not in params)
        if dm:
            if pm not in chain:
                return None
            key, rest = pm, dm
        else:
            key = max((q for q in chain if _divides(q, pm)), key=len)
            rest = list(pm)
            for v in key:
                rest.remove(v)
            rest = tuple(rest)
        parts[key] = parts.get(key, Poly()) + Poly({rest: c})
    return parts


def _chains(monomials: set[tuple[str, ...]]) -> list[list[tuple[str, ...]]]:
    """Candidate chains 1 | n | n*m | ... through the given monomials.

    A step that adds several sizes at once (a term whose middle index is a constant
    0, as in x*ny*nz + z) is filled in every order; validity picks the right one.
    """
    from itertools import permutations
    ordered = sorted(monomials, key=len)
    if ordered[0] != ():
        ordered.insert(0, ())
    chains: list[list[tuple[str, ...]]] = [[()]]
    for b in ordered[1:]:
        grown = []
        for chain in chains:
            a = chain[-1]
            if not _divides(a, b):
                continue
            rest = list(b)
            for v in a:
                rest.remove(v)
            for order in sorted(set(permutations(rest))):
                steps, cur = [], list(a)
                for v in order:
                    cur = sorted(cur + [v])
                    steps.append(tuple(cur))
                grown.append(chain + steps)
        chains = grown
    return chains[:24]


def _size_between(a: tuple[str, ...], b: tuple[str, ...]) -> Poly:
    rest = list(b)
    for v in a:
        rest.remove(v)
    return Poly.var(rest[0])


def _valid(model: KernelModel, uses: list[tuple[Statement, Access]],
           subscripts: list[tuple[Poly, ...]], sizes: tuple[Poly, ...]) -> bool:
    for (s, _), subs in zip(uses, subscripts):
        for sub, size in zip(subs[1:], sizes):
            cond = f"0 <= {sub.to_c('*')} < {size.to_c('*')}"
            if not isl_helpers.implies(model, s, cond):
                return False
    return True


def assign_array_shapes(model: KernelModel) -> None:
    by_array: dict[str, list[tuple[Statement, Access]]] = {}
    for s, a in model.accesses():
        if a.space == "private":
            model.arrays.setdefault(a.array, ("private", ()))
            continue
        by_array.setdefault(a.array, []).append((s, a))
    params = set(model.parameters)
    for array, uses in by_array.items():
        space = uses[0][1].space
        if any(a.flat is None for _, a in uses):
            model.arrays[array] = (space, None)
            continue
        if space in ("local", "shared"):
            for _, a in uses:
                a.subscripts = (a.flat,)
            model.arrays[array] = (space, ())
            continue
        sizes_of = [_size_monomials(a.flat, params) for _, a in uses]
        if any(m is None for m in sizes_of):
            _non_affine(model, uses, "a subscript multiplies two loop or thread indices")
            continue
        monomials = set().union(*sizes_of)
        products = {v for _, a in uses for m in a.flat.terms
                    if len(m) > 1 and all(x in params for x in m) for v in m}
        if monomials - {()} or products:
            found = None
            candidates = [monomials] if monomials - {()} else []
            candidates += [monomials | {(v,)} for v in sorted(products)]
            chains = [c for ms in candidates for c in _chains(ms)]
            for chain in chains:
                splits = [_split(a.flat, params, chain) for _, a in uses]
                if any(sp is None or not all(p.is_affine() for p in sp.values())
                       for sp in splits):
                    continue
                sizes = tuple(_size_between(a, b) for a, b in zip(chain, chain[1:]))[::-1]
                subs = [tuple(sp.get(m, Poly()) for m in reversed(chain)) for sp in splits]
                if _valid(model, uses, subs, sizes):
                    found = (sizes, subs)
                    break
            if found is None:
                found = _coefficient_chain(model, uses, params)
            if found is None:
                _non_affine(model, uses, "the linearised subscript cannot be delinearised "
                            "(an inner index may leave its row)")
                continue
            sizes, subs = found
            if any(not p.is_affine() for sub in subs for p in sub) or \
                    any(not p.is_affine() for p in sizes):
                # isl reads affine expressions only: a product of parameters left in a
                # subscript (nx*ny*nz + i) is outside the model
                _non_affine(model, uses, "a subscript multiplies parameters")
                continue
            for (_, a), sub in zip(uses, subs):
                a.subscripts = sub
            model.arrays[array] = (space, sizes)
            continue
        if any(not a.flat.is_affine() for _, a in uses):
            _non_affine(model, uses, "a subscript multiplies parameters")
            continue
        shaped = _constant_rows(model, uses)
        if shaped is None:
            for _, a in uses:
                a.subscripts = (a.flat,)
            model.arrays[array] = (space, ())
        else:
            size, subs = shaped
            for (_, a), sub in zip(uses, subs):
                a.subscripts = sub
            model.arrays[array] = (space, (Poly.const(size),))


def _constant_rows(model: KernelModel, uses: list[tuple[Statement, Access]]
                   ) -> tuple[int, list[tuple[Poly, Poly]]] | None:
    coefs = {abs(c) for _, a in uses for m, c in a.flat.terms.items() if m}
    if not coefs:
        return None
    row = max(coefs)
    if row <= 1 or row.denominator != 1 or any(c != row and c >= row and c % row
                                               for c in coefs) or \
            all(c % row == 0 for c in coefs if c != row) and len(coefs) == 1:
        return None
    subs = []
    for _, a in uses:
        outer, inner = Poly(), Poly()
        for m, c in a.flat.terms.items():
            if not m:
                continue
            if c % row == 0:
                outer = outer + Poly({m: c / row})
            else:
                inner = inner + Poly({m: c})
        const = a.flat.constant()
        q = Fraction(round(const / row))
        outer = outer + q
        inner = inner + (const - q * row)
        subs.append((outer, inner))
    if not _valid(model, uses, subs, (Poly.const(int(row)),)):
        return None
    return int(row), subs


def _divide(a: Poly, b: Poly) -> Poly | None:
    """a / b for single-term polynomials (an integer times parameters), when exact."""
    (ma, ca), = a.terms.items()
    (mb, cb), = b.terms.items()
    rest = list(ma)
    for v in mb:
        if v not in rest:
            return None
        rest.remove(v)
    q = ca / cb
    return Poly({tuple(rest): q}) if q.denominator == 1 else None


def _coefficient_chain(model: KernelModel, uses: list[tuple[Statement, Access]],
                       params: set[str]):
    """Delinearise by the coefficients of the dimensions: A[(c * rows + r) * 4 + k] has
    coefficients 4*rows, 4, 1 for c, r, k; sorted, each divides the next, so the sizes are
    rows and 4 and the access is A[c][r][k]. Every coefficient must be one term (an
    integer times parameters); terms without a dimension go to the largest size dividing
    them. As for the other forms, isl must prove every inner index inside its size."""
    coefficients: set[Poly] = set()
    for _, a in uses:
        for v in a.flat.variables - params:
            c = a.flat.coefficient(v)
            if len(c.terms) != 1 or (c.variables - params) or c.degree > 1 and \
                    len(c.variables) > 1:
                return None
            (m, k), = c.terms.items()
            coefficients.add(Poly({m: abs(k)}))
    chain = sorted(coefficients, key=lambda c: (c.degree, abs(next(iter(c.terms.values())))))
    if not chain or chain[0] != Poly.const(1):
        chain.insert(0, Poly.const(1))
    sizes = []
    for a, b in zip(chain, chain[1:]):
        ratio = _divide(b, a)
        if ratio is None or ratio == Poly.const(1) or not ratio.is_affine():
            return None
        sizes.append(ratio)
    subs = []
    for _, a in uses:
        parts = [Poly() for _ in chain]
        for m, c in a.flat.terms.items():
            dims = [v for v in m if v not in params]
            if dims:
                k = next((k for k, s in enumerate(chain)
                          if _divide(Poly({tuple(x for x in m if x in params): abs(c)}), s)
                          and Poly({tuple(x for x in m if x in params): abs(c)}) == s), None)
                if k is None:
                    return None
                parts[k] = parts[k] + Poly.var(dims[0]) * (1 if c > 0 else -1)
                continue
            for k in reversed(range(len(chain))):
                q = _divide(Poly({m: abs(c)}), chain[k]) if m or k == 0 or \
                    chain[k].is_constant() else None
                if q is not None:
                    parts[k] = parts[k] + q * (1 if c > 0 else -1)
                    break
            else:
                return None
        subs.append(tuple(reversed(parts)))
    sizes_outer_first = tuple(reversed(sizes))
    if not _valid(model, uses, subs, sizes_outer_first):
        return None
    return sizes_outer_first, subs


def _non_affine(model: KernelModel, uses: list[tuple[Statement, Access]], why: str) -> None:
    for s, a in uses:
        a.reason = a.reason or why
        model.outside.append(OutsideModel("non-affine subscript", a.location,
                                          f"'{a.text}': {why}",
                                          "geometry permutation only (the thread "
                                          "dimensions stay parallel)"))
        break
    model.arrays[uses[0][1].array] = (uses[0][1].space, None)
