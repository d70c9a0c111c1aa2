"""Model extraction: the polyhedral model of every corpus kernel, delinearisation, the
thread geometry, and the constructs that fall outside the affine model."""

from __future__ import annotations

from pathlib import Path

import pytest

from polycoal.analysis import analyze_program
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.model.extract import extract_model
from polycoal.model.poly import Poly

from conftest import FIXTURES, POLYBENCH  # noqa: E402  (POLYBENCH: the scalar-bound variant)
SCALAR_LB = ("POLYBENCH_USE_SCALAR_LB",)

# Corpus kernels that are NOT affine, with the construct and why.
# (every kernel is affine: correlation's `if (std[j] <= EPS) std[j] = 1.0f;`, whose
# condition reads memory, is one statement read as its if-conversion: test_guarded.py)
KNOWN_OUTSIDE: dict = {}

gx, gy, gz, c0, c1 = (Poly.var(v) for v in ("gx", "gy", "gz", "c0", "c1"))


def _options(defines) -> PreprocessorOptions:
    return PreprocessorOptions(defines=tuple(defines))


def _check_corpus_program(path: Path, defines: tuple[str, ...]):
    p = read_program(str(path), _options(defines))
    assert p.kernels, f"{path.name}: no kernel found"
    assert not [d for d in p.diagnostics if d.severity == "error"]
    assert p.launches, f"{path.name}: no launch found"
    models = {}
    for k in p.kernels:
        assert k.ast is not None and k.unsupported is None, k.name
        assert p.launches_of(k.name), f"{k.name} is never launched"
        m = extract_model(k, p)
        models[k.name] = m
        expected = KNOWN_OUTSIDE.get((path.parent.name, k.name))
        if expected is None:
            assert m.outside == [], (k.name, m.outside)
            assert m.is_affine
            for s, a in m.accesses():
                assert a.flat is not None and a.reason is None, (k.name, a.text)
                assert a.subscripts is not None, (k.name, a.text)
        else:
            assert {o.construct for o in m.outside} == {expected}, (k.name, m.outside)
        assert m.block_shape is not None, k.name
        assert m.statements, k.name
    return p, models


def test_every_corpus_kernel_is_affine(polybench_program):
    _check_corpus_program(polybench_program, ())


def test_every_corpus_kernel_is_affine_with_scalar_bounds(polybench_program):
    """With POLYBENCH_USE_SCALAR_LB the loop bounds are the kernels' int arguments."""
    p, models = _check_corpus_program(polybench_program, SCALAR_LB)
    symbolic = []
    for k in p.kernels:
        m = models[k.name]
        ints = {q.name for q in k.parameters if not q.is_pointer and q.type == "int"}
        used = ints & set(m.parameters)
        if used:
            symbolic.append(k.name)
            # the bounds are constraints over the parameters, not constants
            assert any(v in c for s in m.statements for c in s.constraints for v in used)
    assert symbolic, "no kernel has a bound given by a kernel argument"


def test_kernel_argument_row_length_is_delinearised_in_corpus():
    """ATAX with NY a kernel argument: A[i * ny + j] is read back as A[i][j], row ny."""
    path = POLYBENCH / "atax" / "atax.cu"
    if not path.exists():
        pytest.skip("polybench_inputs/atax not present")
    p = read_program(str(path), _options(SCALAR_LB + ("NX=nx", "NY=ny")))
    for name, subscripts in (("atax_kernel1", (gx, c0)), ("atax_kernel2", (c0, gx))):
        m = extract_model(p.kernel(name), p)
        assert m.outside == []
        assert m.arrays["A"] == ("global", (Poly.var("ny"),))
        (a,) = [a for _, a in m.accesses() if a.array == "A"]
        assert a.subscripts == subscripts
        assert a.flat.degree == 2          # i * ny: not affine before delinearisation


# --------------------------------------------------------------------------- symbolic_linear

def _models(path):
    p = read_program(str(path))
    return p, {k.name: extract_model(k, p) for k in p.kernels}


@pytest.fixture(scope="module")
def linear():
    return _models(FIXTURES / "symbolic_linear.cu")[1]


def test_lin2d_delinearised_with_parameter_row(linear):
    m = linear["lin2d"]
    assert m.outside == []
    assert m.arrays["A"] == ("global", (Poly.var("n"),))
    accesses = [a for _, a in m.accesses()]
    assert {a.kind for a in accesses} == {"read", "write"}
    for a in accesses:
        assert a.subscripts == (gx, c0)
        assert a.flat == gx * Poly.var("n") + c0
    assert m.parameter_values == {"m": 1024, "n": 1024}
    assert m.dims == ["gx", "c0"]


def test_lin3d_delinearised_to_three_dimensions(linear):
    m = linear["lin3d"]
    assert m.outside == []
    assert m.arrays["B"] == ("global", (Poly.var("ny"), Poly.var("nx")))
    ((_, a),) = list(m.accesses())
    assert a.subscripts == (gz, gy, gx)
    assert [d.name for d in m.thread_dims] == ["gz", "gy", "gx"]
    assert m.block_shape == (8, 8, 4)


def test_constant_row_length_split(linear):
    m = linear["constrow"]
    assert m.outside == []
    assert m.arrays["C"] == ("global", (Poly.const(512),))
    for _, a in m.accesses():
        assert a.subscripts == (gx, c0)
    # no guard on i: the launch (2 blocks of 256) bounds it
    (d,) = m.thread_dims
    assert (d.name, d.kind, d.extent) == ("gx", "global", Poly.const(512))


def test_block_times_constant_is_one_global_index(linear):
    """D[blockIdx.x * 64 + threadIdx.x] with a 64-thread block is D[gx]."""
    m = linear["split64"]
    ((_, a),) = list(m.accesses())
    assert a.flat == gx
    assert [(d.name, d.extent) for d in m.thread_dims] == [("gx", Poly.const(1024))]


def test_early_return_guards_later_statements(linear):
    m = linear["early_ret"]
    assert m.outside == []
    (s,) = m.statements
    assert s.location.line == 62
    assert any("gx - n" in c and "not" in c for c in s.constraints)


def test_linear_fixture_nothing_outside(linear):
    assert all(m.outside == [] for m in linear.values())


def test_delinearisation_refused_when_inner_index_leaves_row(write_cu):
    path = write_cu("__global__ void k(float *A, int n)\n{\n"
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    if (i < n)\n"
                    "        for (int j = 0; j <= n; j++)\n"
                    "            A[i * n + j] = 0.0f;\n}\n"
                    "int main() { float *A; k<<<4, 256>>>(A, 1024); }\n")
    p = read_program(str(path))
    m = extract_model(p.kernels[0], p)
    assert [(o.construct, o.location.line) for o in m.outside] == [("non-affine subscript", 6)]
    assert m.arrays["A"] == ("global", None)
    assert all(a.subscripts is None for _, a in m.accesses())


# --------------------------------------------------------------------------- geometry

def test_unused_launched_axis_is_a_dimension(program):
    """ATAX kernel 1 never reads threadIdx.y but runs with 8 threads along y."""
    p = program(FIXTURES / "race_atax.cu")
    m = extract_model(p.kernel("atax_kernel1"), p)
    assert [(d.name, d.kind, d.extent) for d in m.thread_dims] == [
        ("gy", "global", Poly.const(8)), ("gx", "global", Poly.const(4096))]
    assert m.used_axes == frozenset("x")
    assert m.block_shape == (32, 8, 1)


def test_separately_used_block_and_thread_index_split_the_axis(write_cu):
    path = write_cu("__global__ void k(float *out, const float *in)\n{\n"
                    "    out[blockIdx.x * 64 + threadIdx.x] = in[blockIdx.x];\n}\n"
                    "int main() { float *a, *b; k<<<16, 64>>>(a, b); }\n")
    p = read_program(str(path))
    m = extract_model(p.kernels[0], p)
    assert [(d.name, d.kind, d.extent) for d in m.thread_dims] == [
        ("bx", "block", Poly.const(16)), ("tx", "thread", Poly.const(64))]
    flats = {a.kind: a.flat for _, a in m.accesses()}
    assert flats == {"read": Poly.var("bx"), "write": Poly.var("bx") * 64 + Poly.var("tx")}


def test_kernel_without_launch_has_symbolic_geometry(program):
    p = program(FIXTURES / "syntax_error.cu")
    m = extract_model(p.kernel("ok_kernel"), p)
    assert [(d.name, d.extent) for d in m.thread_dims] == [("gx", Poly.var("nthreads_x"))]
    assert m.block_shape is None
    assert [n.code for n in m.notes] == ["no-launch"]
    assert "nthreads_x" in m.parameters


def test_private_scalar_is_per_thread(write_cu):
    path = write_cu("__global__ void k(float *y, const float *A, int n)\n{\n"
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    float sum = 0.0f;\n"
                    "    for (int j = 0; j < n; j++) sum += A[i * n + j];\n"
                    "    y[i] = sum;\n}\n"
                    "int main() { float *y, *A; k<<<4, 256>>>(y, A, 1024); }\n")
    p = read_program(str(path))
    m = extract_model(p.kernels[0], p)
    assert m.outside == []
    assert m.arrays["sum"] == ("private", ())
    private = [a for _, a in m.accesses() if a.array == "sum"]
    assert private and all(a.space == "private" for a in private)
    assert [s.update for s in m.statements] == [None, "+", None]


# --------------------------------------------------------------------------- outside model

OUTSIDE = [  # kernel, construct, line (fixtures/README.md)
    ("k_indirect", "non-affine subscript", 25),
    ("k_csr", "non-affine loop", 32),
    ("k_sync", "__syncthreads", 40),
    ("k_atomic", "atomic", 47),
    ("k_ptrarith", "pointer arithmetic", 54),
    ("k_devcall", "device function call", 64),
    ("k_while", "while loop", 70),
    ("k_break", "'break'", 77),
]


@pytest.fixture(scope="module")
def outside_models():
    return _models(FIXTURES / "outside_model.cu")


@pytest.mark.parametrize("kernel,construct,line", OUTSIDE, ids=[o[0] for o in OUTSIDE])
def test_outside_model_construct_and_line(outside_models, kernel, construct, line):
    p, models = outside_models
    m = models[kernel]
    assert not m.is_affine
    found = [(o.construct, o.location.line) for o in m.outside]
    assert (construct, line) in found, found
    for o in m.outside:
        assert o.location.file == str(FIXTURES / "outside_model.cu")
        assert o.detail and o.fallback
    # every other entry is on the construct's line or right after it (a value read from
    # the launch geometry, a construct of its own, where it is)
    assert all(line <= o.location.line <= line + 1 for o in m.outside
               if o.construct != "launch geometry in a value"), found


def test_outside_model_details(outside_models):
    _, models = outside_models
    detail = {k: " ".join(o.detail for o in m.outside) for k, m in models.items()}
    assert "x[P[i]]" in detail["k_indirect"] and "indirect" in detail["k_indirect"]
    assert "pair_sum" in detail["k_devcall"]
    assert "atomicAdd" in detail["k_atomic"]
    assert "row" in detail["k_ptrarith"]


def test_atomic_access_marked_atomic(outside_models):
    _, models = outside_models
    hist = [a for _, a in models["k_atomic"].accesses() if a.array == "hist"]
    assert {a.kind for a in hist} == {"read", "write"}
    assert all(a.atomic for a in hist)


def test_indirect_reads_still_extracted(outside_models):
    """Outside the model, references are still extracted for the coalescing analysis."""
    _, models = outside_models
    accesses = {(a.array, a.kind): a for _, a in models["k_indirect"].accesses()}
    assert accesses[("P", "read")].flat == gx
    assert accesses[("x", "read")].flat is None
    assert accesses[("y", "write")].subscripts == (gx,)


@pytest.mark.xfail(strict=True, reason=(
    "polycoal bug: in k_atomic (no launch, so blockDim.x is a parameter) the use of "
    "blockIdx.x alone splits the x axis; i = bx*blockDim_x + tx is then a degree-2 "
    "polynomial and the affine guard `i < n` is reported as a 'data-dependent condition'"))
def test_atomic_kernel_affine_guard_not_reported_data_dependent(outside_models):
    _, models = outside_models
    assert [o.construct for o in models["k_atomic"].outside] == ["atomic"]


PARAMETER_PRODUCT = """\
__global__ void row(float *A, int k, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[k * n + i] = 0.0f;
}
int main() { float *A; row<<<4, 256>>>(A, 3, 1024); }
"""


def test_product_of_kernel_arguments_in_subscript(write_cu):
    p = read_program(str(write_cu(PARAMETER_PRODUCT)))
    (ka,) = analyze_program(p).kernels
    (a,) = [a for _, a in ka.model.accesses()]
    # either A[k][i] with row n, or reported outside the model: never a crash
    assert a.subscripts == (Poly.var("k"), gx) or not ka.model.is_affine


def test_adi_with_parameter_rows():
    path = POLYBENCH / "adi" / "adi.cu"
    if not path.exists():
        pytest.skip("polybench_inputs/adi not present")
    p = read_program(str(path), _options(SCALAR_LB + ("N=n",)))
    pa = analyze_program(p)
    assert len(pa.kernels) == 6
