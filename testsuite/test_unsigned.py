"""Unsigned arithmetic in indices and conditions (model/integer_types.py): a comparison
made in unsigned arithmetic, an unsigned value widened, a value printed again in new
code keep C's meaning, checked against C itself (gcc) and on the CPU runtime."""

from __future__ import annotations

import shutil
import subprocess

import islpy as isl
import pytest
from pycparser import c_parser

from conftest import FIXTURES, compile_sm90, runs_alike
from polycoal.frontend import read_program
from polycoal.model.expressions import NonAffine, Scope, ThreadAxes
from polycoal.model.integer_types import common, constant_type, expression_type
from polycoal.model.poly import Poly
from polycoal.transform import TransformOptions, transform_program
from polycoal.validate.cpu import validate_cpu

# variables: t the thread index (threadIdx.x, unsigned), n an int argument, u an unsigned
# one, k a loop counter (int)
CONDITIONS = [
    "(unsigned)(threadIdx.x - 1) < (unsigned)(n - 2)",
    "threadIdx.x - 1 < n",
    "threadIdx.x < n - 3",
    "threadIdx.x + 2 >= n",
    "(unsigned)(k - 2) <= (unsigned)n",
    "threadIdx.x == n - 1",
    "(unsigned)k != threadIdx.x - 5u",
    "u - threadIdx.x > 3",
    "!(threadIdx.x - 4 > k)",
    "(long)threadIdx.x - 1 < n",
    "k - 1 < 10u",
    "(size_t)(k + n) < 7",
    "threadIdx.x - n < 3 && (unsigned)(k) >= 2",
    "k < n",
]
RANGES = {"t": range(0, 24), "n": range(-6, 18), "u": range(0, 12), "k": range(-5, 9)}


def _expression(text: str):
    unit = c_parser.CParser().parse("typedef unsigned long size_t; "
                                    f"void f() {{ x = {text}; }}")
    return unit.ext[1].body.block_items[0].rvalue


def _scope(nonnegative=()) -> Scope:
    axes = ThreadAxes({"x": False, "y": True, "z": True},
                      {a: Poly.const(64) for a in "xyz"}, {a: Poly.const(1) for a in "xyz"})
    return Scope(axes, {"k": Poly.var("c0")}, {"n", "u"},
                 types={"n": "int", "u": "unsigned int", "k": "int"},
                 nonnegative=set(nonnegative) | {"u"})


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    exe = tmp_path_factory.mktemp("unsigned") / "truth"
    body = []
    for i, cond in enumerate(CONDITIONS):
        c = cond.replace("threadIdx.x", "t")
        body.append(f'if ({c}) printf("{i} %d %u %u %d\\n", n, t, u, k);')
    source = ("#include <stdio.h>\n#include <stddef.h>\nint main(void) {\n"
              f"for (int n = {RANGES['n'].start}; n < {RANGES['n'].stop}; n++)\n"
              f"for (unsigned t = 0; t < {RANGES['t'].stop}; t++)\n"
              f"for (unsigned u = 0; u < {RANGES['u'].stop}; u++)\n"
              f"for (int k = {RANGES['k'].start}; k < {RANGES['k'].stop}; k++) {{\n" +
              "\n".join(body) + "\n}\nreturn 0;\n}\n")
    build = subprocess.run(["gcc", "-x", "c", "-o", str(exe), "-"], input=source,
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    points: dict[int, set] = {i: set() for i in range(len(CONDITIONS))}
    for line in out.splitlines():
        i, n, t, u, k = map(int, line.split())
        points[i].add((n, t, u, k))
    return points


def _isl_points(text: str, nonnegative: bool) -> set[tuple[int, ...]]:
    box = " and ".join(f"{r.start} <= {v} < {r.stop}" for v, r in
                       (("n", RANGES["n"]), ("tx", RANGES["t"]), ("u", RANGES["u"]),
                        ("c0", RANGES["k"])))
    s = isl.Set(f"{{ [n, tx, u, c0] : ({text}) and {box}"
                f"{' and n >= 0' if nonnegative else ''} }}")
    found = set()
    s.foreach_point(lambda p: found.add(tuple(
        p.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(4))))
    return found


@pytest.mark.parametrize("index", range(len(CONDITIONS)))
@pytest.mark.parametrize("nonnegative", [False, True])
def test_conditions_as_c_computes_them(truth, index, nonnegative):
    """The model's set of each condition is the set of points where C takes it true,
    nothing assumed of n's sign or n taken non-negative (the model's context), or the
    condition is outside the model (never another set)."""
    scope = _scope({"n"} if nonnegative else ())
    try:
        text = scope.condition(_expression(CONDITIONS[index]))
    except NonAffine:
        assert "(long)" in CONDITIONS[index] or "size_t" in CONDITIONS[index]
        return
    expected = {p for p in truth[index] if p[0] >= 0 or not nonnegative}
    assert _isl_points(text, nonnegative) == expected, (CONDITIONS[index], text)


def test_widened_unsigned_values_are_refused_unless_non_negative():
    """`(long)(threadIdx.x - 1)` is 4294967295 in thread 0: not the polynomial t - 1,
    so not modelled; `(long)threadIdx.x - 1` and `(size_t)blockIdx.x * 64 + threadIdx.x`
    are."""
    scope = _scope()
    for text in ("(long)(threadIdx.x - 1)", "(size_t)(threadIdx.x - 1) * 4",
                 "threadIdx.x - 1 + (long)n", "(float)threadIdx.x", "(unsigned char)k"):
        with pytest.raises(NonAffine):
            scope.to_poly(_expression(text))
    assert scope.to_poly(_expression("(long)threadIdx.x - 1")) == Poly.var("tx") - 1
    assert scope.to_poly(_expression("(size_t)blockIdx.x * 64 + threadIdx.x")) == \
        Poly.var("bx") * 64 + Poly.var("tx")
    assert scope.to_poly(_expression("(unsigned)(7 - 9) / 2u")) == Poly.const(2147483647)


def test_integer_types():
    """C's literal types and usual arithmetic conversions (LP64)."""
    assert constant_type("3") == (32, True) and constant_type("3u") == (32, False)
    assert constant_type("4294967295") == (64, True)
    assert constant_type("0xffffffff") == (32, False)
    assert constant_type("3ul") == (64, False) and constant_type("3LL") == (64, True)
    assert common((32, False), (32, True)) == (32, False)
    assert common((32, False), (64, True)) == (64, True)
    assert common((64, False), (64, True)) == (64, False)
    assert common((16, False), (8, True)) == (32, True)
    names = {"n": "int", "u": "unsigned int", "s": "size_t"}
    assert expression_type(_expression("threadIdx.x + n"), names) == (32, False)
    assert expression_type(_expression("(int)threadIdx.x + n"), names) == (32, True)
    assert expression_type(_expression("s * n"), names) == (64, False)
    assert expression_type(_expression("n + 1.0f"), names) is None


def _transform(path, **options):
    options = TransformOptions(**options)
    program = read_program(str(path), options.preprocessor)
    return program, transform_program(program, options)


@pytest.mark.parametrize("model", [True, False])
def test_unsigned_kernels_run_alike(tmp_path, model):
    """Kernels comparing and printing unsigned values, restructured (with the model's
    choice and with every legal change taken): the original's numbers on the CPU
    runtime. Before the fix the guard `(unsigned)(i - 1) < (unsigned)(n - 2)` was read
    as the signed comparison (thread 0 stored) and `(float)((unsigned)j - 3u)` was
    printed `(float)(j - 3)`."""
    program, result = _transform(FIXTURES / "unsigned_indices.cu", model=model)
    changed = [d.kernel for d in result.decisions if d.generated is not None]
    if not model:
        assert {"guard_wraps", "value_wraps", "counter_unsigned"} <= set(changed), \
            [(d.kernel, d.action, d.reason) for d in result.decisions]
    runs_alike(program.text, result.text, tmp_path)


def test_unsigned_output_compiles(tmp_path, nvcc):
    """The restructured kernels compile (nvcc -arch=sm_90)."""
    program, result = _transform(FIXTURES / "unsigned_indices.cu", model=False)
    source = tmp_path / "out.cu"
    source.write_text(result.text)
    compile_sm90(nvcc, source)


@pytest.mark.parametrize("path", sorted((FIXTURES / "unsigned").glob("*.cu")),
                         ids=lambda p: p.stem)
def test_unsigned_spellings_run_alike(tmp_path, path, nvcc):
    """Spellings a review found (each a wrong result or a broken build at first): a name
    declared twice with two types, `long long` beside a `LL` literal in `min`, an
    argument named like a thread variable (`bz`), an unsigned loop starting below zero,
    an int copy of an unsigned argument, typedefs (`u32`, `uint`), a `constexpr
    unsigned`, an unsigned quotient, narrow and `size_t` counters, early returns. With
    every legal change taken: the original's numbers on the CPU runtime, and nvcc
    compiles the output."""
    program, result = _transform(path, model=False)
    source = tmp_path / "out.cu"
    source.write_text(result.text)
    shutil.copy(path.parent / "harness.cuh", tmp_path)     # the host side they share
    compile_sm90(nvcc, source)
    runs_alike(program.text, result.text, tmp_path, include_dirs=(path.parent,))


def test_unsigned_sides_checked_at_each_launch(tmp_path, nvcc):
    """A thread index compared in unsigned arithmetic with a difference of int arguments
    (Rodinia gaussian's `threadIdx.x + blockIdx.x * blockDim.x >= Size - 1 - t`): where
    the difference is negative it wraps above every thread and bounds nothing, so the
    rows written are unbounded and the kernel is outside the model. Planned again under
    the condition that the sides are not negative, the kernel is restructured with that
    condition checked at each launch; the launches where it fails (t = n; off > rows) run
    the original, and the program's numbers are the original's."""
    path = FIXTURES / "unsigned" / "sides.cu"
    program, result = _transform(path, model=False)
    by_name = {d.kernel: d for d in result.decisions}
    for name, condition in (("eliminate", "t < n"), ("band", "rows >= off")):
        d = by_name[name]
        assert d.action == "restructured", (name, d.reason)
        assert "unsigned comparisons' sides not negative" in d.reason and condition in d.reason
    # with run-time checks off, the sides stay unknown: no restructuring
    _, unchecked = _transform(path, model=False, runtime_checks=False)
    assert all(d.action != "restructured" for d in unchecked.decisions)
    source = tmp_path / "out.cu"
    source.write_text(result.text)
    shutil.copy(path.parent / "harness.cuh", tmp_path)
    compile_sm90(nvcc, source)
    runs_alike(program.text, result.text, tmp_path, include_dirs=(path.parent,))


def test_constants_of_alias_types(tmp_path):
    """File-scope constants keep the types Clang reads (`constexpr u32 W` through a
    typedef, `const idx_t H` through `using`): compared unsigned in the model, and
    declared with their types in the CPU harness of `polycoal validate --cpu` (where a
    `long long W` once made the original's guard signed and the check fail)."""
    path = FIXTURES / "unsigned" / "alias.cu"
    options = TransformOptions(model=False)
    program = read_program(str(path), options.preprocessor)
    assert {k: program.constants.get(k) for k in "WHS"} == {"W": 8, "H": 40, "S": 2}
    assert {k: program.constant_types[k] for k in "WHS"} == {
        "W": "unsigned int", "H": "unsigned int", "S": "int"}
    result = transform_program(program, options)
    (d,) = result.decisions
    assert d.action == "restructured", d.reason
    verdicts = validate_cpu(program, result, options, {}, seed=5)
    assert verdicts and all(v.ok for v in verdicts), [v.message for v in verdicts]
