"""Multivariate polynomials with rational coefficients.

Subscripts and loop bounds are read into polynomials over loop counters, thread
dimensions and parameters. An affine expression is a polynomial of degree <= 1; a
linearised subscript `i * n + j` with `n` a kernel argument is a polynomial of degree 2,
which delinearisation turns back into an affine multi-dimensional access. Execution
counts are polynomials in the parameters, obtained by summing over loop ranges.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Iterable, Mapping

Monomial = tuple[str, ...]          # sorted variable names, with repetition for powers


class Poly:
    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Monomial, Fraction | int] | None = None):
        self.terms: dict[Monomial, Fraction] = {
            m: Fraction(c) for m, c in (terms or {}).items() if c != 0}

    # construction
    @staticmethod
    def const(value: int | Fraction) -> "Poly":
        return Poly({(): value})

    @staticmethod
    def var(name: str) -> "Poly":
        return Poly({(name,): 1})

    # arithmetic
    def __add__(self, other: "Poly | int") -> "Poly":
        other = _lift(other)
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
        return Poly(out)

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: "Poly | int") -> "Poly":
        return self + (-_lift(other))

    def __rsub__(self, other: "Poly | int") -> "Poly":
        return _lift(other) - self

    def __mul__(self, other: "Poly | int | Fraction") -> "Poly":
        other = _lift(other)
        out: dict[Monomial, Fraction] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Poly(out)

    __rmul__ = __mul__

    def __pow__(self, k: int) -> "Poly":
        out = Poly.const(1)
        for _ in range(k):
            out = out * self
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, Fraction)):
            other = Poly.const(other)
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    # queries
    @property
    def variables(self) -> set[str]:
        return {v for m in self.terms for v in m}

    @property
    def degree(self) -> int:
        return max((len(m) for m in self.terms), default=0)

    def is_constant(self) -> bool:
        return all(m == () for m in self.terms)

    def constant(self) -> Fraction:
        return self.terms.get((), Fraction(0))

    def is_affine(self) -> bool:
        return self.degree <= 1

    def is_integral(self) -> bool:
        return all(c.denominator == 1 for c in self.terms.values())

    def coefficient(self, name: str) -> "Poly":
        """The polynomial multiplying `name` (to the first power) in self."""
        out: dict[Monomial, Fraction] = {}
        for m, c in self.terms.items():
            if m.count(name) == 1:
                rest = list(m)
                rest.remove(name)
                out[tuple(rest)] = out.get(tuple(rest), 0) + c
        return Poly(out)

    def without(self, names: Iterable[str]) -> "Poly":
        names = set(names)
        return Poly({m: c for m, c in self.terms.items() if not names & set(m)})

    def substitute(self, values: Mapping[str, "Poly | int | Fraction"]) -> "Poly":
        out = Poly()
        for m, c in self.terms.items():
            term = Poly.const(c)
            for v in m:
                term = term * (_lift(values[v]) if v in values else Poly.var(v))
            out = out + term
        return out

    def value(self, values: Mapping[str, int | Fraction] | None = None) -> Fraction:
        p = self.substitute(values or {})
        if not p.is_constant():
            raise ValueError(f"unbound variables {sorted(p.variables)} in {p}")
        return p.constant()

    def __repr__(self) -> str:
        return f"Poly({self})"

    def __str__(self) -> str:
        return self.to_c()

    def to_c(self, power: str = "^") -> str:
        """Readable text; `power='*'` writes powers as repeated products (for C and isl)."""
        if not self.terms:
            return "0"
        parts = []
        for m in sorted(self.terms, key=lambda m: (-len(m), m)):
            c = self.terms[m]
            names = []
            for v in sorted(set(m)):
                k = m.count(v)
                names.append(v if k == 1 else (f"{v}^{k}" if power == "^" else "*".join([v] * k)))
            body = "*".join(names)
            mag = abs(c)
            cs = str(mag) if mag.denominator == 1 else f"({mag})"
            text = body if (body and mag == 1) else (f"{cs}*{body}" if body else cs)
            parts.append(("-" if c < 0 else "+") + " " + text)
        s = " ".join(parts)
        return s[2:] if s.startswith("+ ") else "-" + s[2:]


def _lift(x: "Poly | int | Fraction") -> Poly:
    return x if isinstance(x, Poly) else Poly.const(x)


@lru_cache(maxsize=None)
def power_sum(k: int) -> Poly:
    """S_k(n) = sum_{x=0}^{n} x^k as a polynomial in the variable 'n' (Faulhaber).

    Built from the recurrence (n+1)^{k+1} - 0 = sum_{j<=k} C(k+1, j) S_j(n), i.e.
    S_k = ((n+1)^{k+1} - sum_{j<k} C(k+1, j) S_j) / (k+1).
    """
    n1 = Poly.var("n") + 1
    from math import comb
    acc = n1 ** (k + 1)
    for j in range(k):
        acc = acc - power_sum(j) * comb(k + 1, j)
    return acc * Fraction(1, k + 1)


def sum_over(p: Poly, var: str, lower: Poly, upper: Poly) -> Poly:
    """sum_{var=lower}^{upper} p, valid when upper >= lower - 1 everywhere."""
    out = Poly()
    k = 0
    remaining = p
    while remaining.terms:
        ck = Poly({tuple(v for v in m if v != var): c for m, c in remaining.terms.items()
                   if m.count(var) == k})
        remaining = Poly({m: c for m, c in remaining.terms.items() if m.count(var) != k})
        if ck.terms:
            s = power_sum(k)
            out = out + ck * (s.substitute({"n": upper}) - s.substitute({"n": lower - 1}))
        k += 1
    return out
