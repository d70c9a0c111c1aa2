"""Polynomials: arithmetic, coefficient, substitute, Faulhaber sums against brute force."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from polycoal.model.poly import Poly, power_sum, sum_over

x, y, i, n, m = (Poly.var(v) for v in ("x", "y", "i", "n", "m"))


@pytest.mark.parametrize("k", range(8))
def test_power_sum_brute_force(k):
    s = power_sum(k)
    assert s.variables <= {"n"}
    assert s.degree == k + 1
    for top in range(0, 12):
        assert s.value({"n": top}) == sum(v ** k for v in range(top + 1))


def test_power_sum_known_closed_forms():
    assert power_sum(0) == n + 1
    assert power_sum(1) == (n * n + n) * Fraction(1, 2)
    assert power_sum(2) == n * (n + 1) * (2 * n + 1) * Fraction(1, 6)
    assert power_sum(3) == power_sum(1) * power_sum(1)          # Nicomachus


SUMMANDS = [
    Poly.const(1),
    x,
    x * x * i + 3 * x - 2,
    x * x * x - x * n,
    (x - i) * (x + 1) * Fraction(1, 2),
    Poly.const(7) * m,            # independent of x
]


@pytest.mark.parametrize("summand", SUMMANDS, ids=str)
def test_sum_over_brute_force(summand):
    s = sum_over(summand, "x", i, n - 1)          # sum_{x=i}^{n-1}
    assert "x" not in s.variables
    for iv, nv, mv in itertools.product(range(0, 5), range(0, 9), (1, 3)):
        if nv < iv:                               # valid when upper >= lower - 1
            continue
        env = {"i": iv, "n": nv, "m": mv}
        expected = sum(summand.value({**env, "x": xv}) for xv in range(iv, nv))
        assert s.value(env) == expected, env


def test_sum_over_constant_bounds_and_empty_range():
    assert sum_over(x, "x", Poly.const(1), Poly.const(100)) == Poly.const(5050)
    assert sum_over(Poly.const(1), "x", Poly.const(5), Poly.const(4)) == Poly()
    assert sum_over(x * y, "x", Poly.const(0), n) == y * (n * n + n) * Fraction(1, 2)


def test_nested_sum_is_triangle_count():
    inner = sum_over(Poly.const(1), "j", Poly.var("i"), n - 1)    # j = i .. n-1
    outer = sum_over(inner, "i", Poly.const(0), n - 1)             # i = 0 .. n-1
    assert outer == (n * n + n) * Fraction(1, 2)


def test_coefficient():
    p = 3 * x * n + 2 * x - 5 * y + x * x * n + 7
    assert p.coefficient("x") == 3 * n + 2         # first power only
    assert p.coefficient("y") == Poly.const(-5)
    assert p.coefficient("z") == Poly()
    assert p.coefficient("n") == 3 * x + x * x     # x*x*n has n once: x^2 too
    assert (x * x * n).coefficient("n") == x * x
    assert Poly.const(4).coefficient("x") == Poly()


def test_substitute_is_simultaneous():
    assert (x + i).substitute({"x": i * 2, "i": 1}) == 2 * i + 1
    assert (x * y).substitute({"x": y, "y": x}) == x * y
    assert (x * x + 1).substitute({"x": n - 1}) == n * n - 2 * n + 2
    assert (x + y).substitute({"x": 3}) == y + 3
    assert (x + y).substitute({}) == x + y


def test_value():
    p = (x * x + y) * Fraction(1, 2)
    assert p.value({"x": 3, "y": 1}) == 5
    assert p.value({"x": 1, "y": 0}) == Fraction(1, 2)
    with pytest.raises(ValueError):
        p.value({"x": 1})


def test_arithmetic_and_queries():
    assert x * y == y * x
    assert x - x == Poly() == 0
    assert (x + 1) ** 2 == x * x + 2 * x + 1
    assert (x + 1) ** 0 == Poly.const(1)
    assert 3 - x == -(x - 3)
    p = x * y * 2 + n - 3
    assert p.variables == {"x", "y", "n"}
    assert p.degree == 2 and not p.is_affine()
    assert (x + n).is_affine() and Poly.const(3).is_constant()
    assert p.constant() == -3
    assert p.without(["x"]) == n - 3
    assert (x * Fraction(1, 2)).is_integral() is False
    assert hash(x * y + 1) == hash(y * x + 1)
    assert {x + 1: "a"}[1 + x] == "a"


def test_to_c():
    assert (x * x * 3 - n + 2).to_c() == "3*x^2 - n + 2"
    assert (x * x * 3 - n + 2).to_c("*") == "3*x*x - n + 2"
    assert Poly().to_c() == "0"
    assert (-x).to_c() == "-x"
    assert (x * Fraction(1, 2)).to_c() == "(1/2)*x"
