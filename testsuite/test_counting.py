"""Execution counts of statements against brute-force enumeration."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import islpy as isl
import pytest

from polycoal.analysis import analyze_program
from polycoal.analysis.counting import count_statement
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.model import isl_helpers
from polycoal.model.extract import extract_model
from polycoal.model.poly import Poly

FIXTURES = Path(__file__).resolve().parent / "fixtures"
from conftest import POLYBENCH  # noqa: E402  (the scalar-bound variant)

COUNT_KERNELS = """\
#define M 16
__global__ void box(float *A, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j < M; j++)
            A[i * M + j] = 0.0f;
}
__global__ void tri(float *A, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = i; j < n; j++)
            A[i * n + j] = 1.0f;
}
__global__ void tri3(float *A, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j <= i; j++)
            for (int k = j; k < n; k++)
                A[i * n + k] += 1.0f;
}
__global__ void guard2d(float *A, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && x < n - 1 && y >= 1 && y < n - 1)
        A[y * n + x] = 0.0f;
}
__global__ void guardin(float *A, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = 0; j < n; j++)
            if (j <= i)
                A[i * n + j] = 0.0f;
}
__global__ void earlyret(float *A, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n - 3) return;
    A[i] = 0.0f;
}
__global__ void downward(float *A, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int j = n - 1; j >= i; j--)
            A[i * n + j] = 0.0f;
}
int main()
{
    float *A;
    const int n = NVAL;
    dim3 b2(8, 4), g2(8, 16);
    box<<<2, 32>>>(A, n);
    tri<<<2, 32>>>(A, n);
    tri3<<<2, 32>>>(A, n);
    guard2d<<<g2, b2>>>(A, n);
    guardin<<<2, 32>>>(A, n);
    earlyret<<<2, 32>>>(A, n);
    downward<<<2, 32>>>(A, n);
}
"""

THREADS = 64            # 2 blocks of 32 along x; guard2d: 64 x 64 threads

BRUTE = {
    "box": lambda n: sum(16 for i in range(THREADS) if i < n),
    "tri": lambda n: sum(1 for i in range(THREADS) if i < n for j in range(i, n)),
    "tri3": lambda n: sum(1 for i in range(THREADS) if i < n
                          for j in range(i + 1) for k in range(j, n)),
    "guard2d": lambda n: sum(1 for x in range(64) for y in range(64)
                             if 1 <= x < n - 1 and 1 <= y < n - 1),
    "guardin": lambda n: sum(1 for i in range(THREADS) if i < n
                             for j in range(n) if j <= i),
    "earlyret": lambda n: sum(1 for i in range(THREADS) if not i >= n - 3),
    "downward": lambda n: sum(1 for i in range(THREADS) if i < n
                              for j in range(n - 1, i - 1, -1)),
}


def isl_count(model, statement) -> int:
    """Points of the statement's domain with the launch's parameter values (isl)."""
    dom = isl_helpers.domain(model, statement)
    if model.parameter_values:
        fixed = " and ".join(f"{p} = {v}" for p, v in model.parameter_values.items())
        dom = dom.intersect_params(isl.Set(
            f"[{', '.join(model.parameters)}] -> {{ : {fixed} }}"))
    return int(dom.count_val().to_python())


def _count_models(directory: Path, n: int):
    path = directory / "counts.cu"
    path.write_text(COUNT_KERNELS)
    p = read_program(str(path), PreprocessorOptions(defines=(f"NVAL={n}",)))
    return {k.name: extract_model(k, p) for k in p.kernels}


@pytest.fixture(scope="module", params=[4, 7, 40, 64])
def count_models(request, tmp_path_factory):
    n = request.param
    return n, _count_models(tmp_path_factory.mktemp(f"counts{n}"), n)


@pytest.mark.parametrize("kernel", sorted(BRUTE))
def test_count_matches_enumeration(count_models, kernel):
    n, models = count_models
    m = models[kernel]
    assert m.parameter_values == {"n": n}
    (s,) = m.statements
    count = count_statement(m, s)
    expected = BRUTE[kernel](n)
    assert isl_count(m, s) == expected
    assert count.exact
    assert count.value == expected
    assert count.formula.value({"n": n}) == expected


@pytest.mark.parametrize("kernel", ["earlyret", "guard2d"])
def test_count_with_empty_ranges(tmp_path, kernel):
    m = _count_models(tmp_path, 1)[kernel]
    (s,) = m.statements
    count = count_statement(m, s)
    assert isl_count(m, s) == BRUTE[kernel](1) == 0
    assert count.value == 0 or not count.exact


def test_count_formulas(tmp_path):
    models = _count_models(tmp_path, 40)
    n = Poly.var("n")
    formula = {k: count_statement(m, m.statements[0]).formula for k, m in models.items()}
    assert formula["box"] == n * 16
    assert formula["tri"] == (n * n + n) * Fraction(1, 2)          # triangular
    assert formula["tri3"] == n * n * n * Fraction(1, 3) + n * n * Fraction(1, 2) \
        + n * Fraction(1, 6)                                          # sum of squares
    assert formula["guard2d"] == (n - 2) * (n - 2)
    assert formula["earlyret"] == n - 3


# --------------------------------------------------------------------------- corpus

def _corpus(name):
    path = POLYBENCH / name / f"{name}.cu"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.parametrize("nx,ny", [(64, 32), (96, 64)])
def test_atax_kernel1_count_includes_racing_copies(analysis, nx, ny):
    """Block 32x8 and a 1-D grid: every (i, j) runs in 8 threads."""
    pa = analysis(_corpus("atax"), (f"NX={nx}", f"NY={ny}"))
    ka = next(ka for ka in pa.kernels if ka.kernel.name == "atax_kernel1")
    (a,) = [r for r in ka.global_references if r.access.array == "A"]
    assert a.count.exact
    assert a.count.value == nx * ny * 8
    stores = [r for r in ka.global_references
              if r.access.array == "tmp" and r.access.kind == "write"]
    assert sorted(r.count.value for r in stores) == [nx * 8, nx * ny * 8]
    total, unco, exact = ka.totals()
    assert exact and unco == nx * ny * 8
    assert total == sum(r.count.value for r in ka.global_references)


def _symmat_stores(ka):
    """The three stores to symmat of covar_kernel, by what their statements do (the
    corpus file may move lines): the initialisation, the update and the mirror."""
    stores = [r for r in ka.global_references
              if r.access.array == "symmat" and r.access.kind == "write"]
    text = lambda r: r.statement.text.replace(" ", "")
    init = [r for r in stores if text(r).endswith("=0.0f")]
    update = [r for r in stores if "+=" in text(r)]
    mirror = [r for r in stores if r not in init and r not in update]
    assert len(init) == len(update) == len(mirror) == 1, [text(r) for r in stores]
    return init[0], update[0], mirror[0]


@pytest.mark.parametrize("m,n", [(64, 32), (40, 8)])
def test_covariance_symmat_store_count_is_triangular(analysis, m, n):
    pa = analysis(_corpus("covariance"), (f"M={m}", f"N={n}"))
    ka = next(ka for ka in pa.kernels if ka.kernel.name == "covar_kernel")
    init, update, mirror = _symmat_stores(ka)
    assert mirror.access.text.replace(" ", "") == f"symmat[(j2*{m})+j1]"
    assert mirror.count.exact and mirror.count.value == m * (m + 1) // 2
    assert init.count.exact and init.count.value == m * (m + 1) // 2
    assert update.count.exact and update.count.value == n * m * (m + 1) // 2


def test_counts_with_kernel_argument_bounds_are_formulas(analysis):
    """Under POLYBENCH_USE_SCALAR_LB the bounds are unknown arguments: a formula."""
    pa = analysis(_corpus("covariance"), ("POLYBENCH_USE_SCALAR_LB", "M=m", "N=n"))
    ka = next(ka for ka in pa.kernels if ka.kernel.name == "covar_kernel")
    _, _, mirror = _symmat_stores(ka)
    m = Poly.var("m")
    assert mirror.count.formula == (m * m + m) * Fraction(1, 2)
    assert mirror.count.value is None
    assert ka.totals() == (None, None, False)


def test_early_return_count(kernel_analysis):
    ka = kernel_analysis(FIXTURES / "symbolic_linear.cu", "early_ret")
    assert {r.count.value for r in ka.global_references} == {1024}
    assert all(r.count.exact for r in ka.global_references)


def test_guard_tighter_than_launch(kernel_analysis):
    """race_neighbour: i < n - 1 with 4096 threads and n = 4096."""
    ka = kernel_analysis(FIXTURES / "race_atax.cu", "race_neighbour")
    assert {(r.count.value, r.count.exact) for r in ka.global_references} == {(4095, True)}


# --------------------------------------------------------------------------- known bugs

def _single_statement_model(write_cu, body, launch="k<<<4, 256>>>(A, n);", n=1024):
    path = write_cu("__global__ void k(float *A, int n)\n{\n" + body + "}\n"
                    f"int main() {{ float *A; const int n = {n}; {launch} }}\n")
    p = read_program(str(path))
    return p, extract_model(p.kernels[0], p)


def test_strided_loop_count_estimate_is_bounded(write_cu):
    _, m = _single_statement_model(
        write_cu, "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < n)\n"
                  "        for (int j = 0; j < n; j += 3)\n"
                  "            A[i * n + j] = 0.0f;\n",
        launch="k<<<2, 32>>>(A, n);", n=40)
    (s,) = m.statements
    count = count_statement(m, s)
    true = isl_count(m, s)
    assert true == 40 * 14
    assert count.exact or true <= count.value <= 40 * 40   # exact, or a bounding box


def test_split_axis_count_estimate_within_launch(write_cu):
    p, m = _single_statement_model(
        write_cu, "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < n) A[blockIdx.x] += 1.0f;\n")
    s = m.statements[0]
    count = count_statement(m, s)
    assert isl_count(m, s) == 1024
    assert count.value <= 1024


def test_count_of_data_dependent_statement_not_exact(analysis, write_cu):
    """A statement under a condition on data the model drops (two assignments under
    it) is counted as an upper bound; correlation's clamp `if (std[j] <= EPS) std[j] =
    1.0f;` is one statement, counted once a column (its write as its if-conversion's)."""
    pa = analysis(_corpus("correlation"), ("M=64", "N=32"))
    ka = next(ka for ka in pa.kernels if ka.kernel.name == "std_kernel")
    (clamp,) = [r for r in ka.global_references
                if r.access.kind == "write" and r.statement.text.startswith("if")]
    assert clamp.statement.exact and clamp.count.exact and clamp.count.value == 64
    p, _ = _single_statement_model(
        write_cu, "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < n && A[i] > 0.0f) { A[i] = 1.0f; A[i] += 2.0f; }\n")
    (ka,) = analyze_program(p).kernels
    assert ka.global_references and ka.totals()[2] is False


def test_count_after_break_not_claimed_exact(write_cu):
    p, m = _single_statement_model(
        write_cu, "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < n)\n"
                  "        for (int j = 0; j < n; j++) { if (j > i) break; A[i] += 1.0f; }\n")
    (ka,) = analyze_program(p).kernels
    counts = {(r.count.value, r.count.exact) for r in ka.global_references}
    assert all(not exact or value == 1024 * 1025 // 2 for value, exact in counts), counts
