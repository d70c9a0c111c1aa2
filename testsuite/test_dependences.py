"""Races between threads and intra-thread dependences (loops carrying them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from polycoal.analysis import analyze_program
from polycoal.frontend import read_program
from polycoal.report.findings import program_diagnostics

FIXTURES = Path(__file__).resolve().parent / "fixtures"
from conftest import POLYBENCH  # noqa: E402  (the scalar-bound variant)
RACE = FIXTURES / "race_atax.cu"


def _analyse_text(write_cu, text):
    return analyze_program(read_program(str(write_cu(text))))


# --------------------------------------------------------------------------- race_atax.cu

def test_atax_kernel1_races_on_tmp_along_y(kernel_analysis):
    ka = kernel_analysis(RACE, "atax_kernel1")
    assert ka.races
    assert {r.array for r in ka.races} == {"tmp"}
    assert {r.thread_dims for r in ka.races} == {("gy",)}
    assert {r.kind for r in ka.races} == {"write/write", "read/write"}
    lines = {a.location.line for r in ka.races for a in (r.first[1], r.second[1])}
    assert lines == {34, 36}
    # tmp[i] = 0 races with itself: the 8 threads with the same threadIdx.x
    assert any(r.kind == "write/write" and r.first[1].location.line == 34 ==
               r.second[1].location.line for r in ka.races)


def test_race_neighbour_races_on_out_along_x(kernel_analysis):
    ka = kernel_analysis(RACE, "race_neighbour")
    assert ka.races
    assert {r.array for r in ka.races} == {"out"}
    assert {r.thread_dims for r in ka.races} == {("gx",)}
    assert {r.kind for r in ka.races} == {"write/write"}
    lines = {a.location.line for r in ka.races for a in (r.first[1], r.second[1])}
    assert lines == {45, 46}


def test_noraces_has_no_race(kernel_analysis):
    assert kernel_analysis(RACE, "noraces").races == []


def test_race_diagnostics(analysis):
    diags = [d for d in program_diagnostics(analysis(RACE)) if d.code == "race"]
    assert [(d.kernel, d.severity, d.location.line) for d in diags] == [
        ("atax_kernel1", "error", 34), ("race_neighbour", "error", 45)]
    atax = diags[0].message
    assert "'tmp'" in atax and "gy (axis y)" in atax
    assert "never reads thread axis y" in atax


# --------------------------------------------------------------------------- corpus

@pytest.mark.parametrize("program_name,kernel,array", [
    ("atax", "atax_kernel1", "tmp"), ("atax", "atax_kernel2", "y"),
    ("mvt", "mvt_kernel1", "x1"), ("mvt", "mvt_kernel2", "x2"),
])
def test_polybench_32x8_launched_1d_kernels_race(kernel_analysis, program_name, kernel, array):
    path = POLYBENCH / program_name / f"{program_name}.cu"
    if not path.exists():
        pytest.skip(f"{path} not present")
    ka = kernel_analysis(path, kernel)
    assert ka.model.block_shape == (32, 8, 1)
    assert ka.races
    assert {r.array for r in ka.races} == {array}
    assert {r.thread_dims for r in ka.races} == {("gy",)}


def test_2d_kernels_with_x_and_y_indices_do_not_race(analysis, polybench_program):
    pa = analysis(polybench_program)
    for ka in pa.kernels:
        axes = ka.model.used_axes
        if {"x", "y"} <= axes:
            assert ka.races == [], (ka.kernel.name, [(r.array, r.kind) for r in ka.races])


def test_corpus_races_only_where_expected(analysis, polybench_program):
    """Only the 1-D kernels launched with a 2-D block (ATAX, MVT) race."""
    pa = analysis(polybench_program)
    racing = {ka.kernel.name for ka in pa.kernels if ka.races}
    expected = {"atax": {"atax_kernel1", "atax_kernel2"},
                "mvt": {"mvt_kernel1", "mvt_kernel2"}}.get(polybench_program.parent.name, set())
    assert racing == expected


@pytest.mark.parametrize("name", ["symbolic_linear.cu", "launch_forms.cu", "cpp_host.cu",
                                  "macros_header.cu"])
def test_race_free_fixtures(analysis, name):
    pa = analysis(FIXTURES / name)
    assert [(ka.kernel.name, ka.races) for ka in pa.kernels if ka.races] == []


# --------------------------------------------------------------------------- small kernels

def test_read_of_neighbour_element_races(write_cu):
    pa = _analyse_text(write_cu, "__global__ void shift(float *A, int n)\n{\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    if (i < n - 1) A[i] = A[i + 1];\n}\n"
                       "int main() { float *A; shift<<<4, 256>>>(A, 1024); }\n")
    (ka,) = pa.kernels
    assert [(r.array, r.kind, r.thread_dims) for r in ka.races] == [("A", "read/write", ("gx",))]


def test_shared_memory_race_within_a_block(write_cu):
    pa = _analyse_text(write_cu, """\
__global__ void racy(float *out, const float *in)
{
    __shared__ float tile[65];
    tile[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
    out[blockIdx.x * 64 + threadIdx.x] = tile[threadIdx.x + 1];
}
__global__ void own(float *out, const float *in)
{
    __shared__ float tile[64];
    tile[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
    out[blockIdx.x * 64 + threadIdx.x] = tile[threadIdx.x];
}
int main() { float *a, *b; racy<<<4, 64>>>(a, b); own<<<4, 64>>>(a, b); }
""")
    racy, own = pa.kernels
    assert [(r.array, r.kind, r.thread_dims) for r in racy.races] == [
        ("tile", "read/write", ("tx",))]        # threads of one block; blocks never share
    assert own.races == []


def test_barrier_suppresses_race_detection(kernel_analysis):
    """k_sync reverses a block through shared memory after __syncthreads."""
    ka = kernel_analysis(FIXTURES / "outside_model.cu", "k_sync")
    assert ka.races == []


def test_atomics_do_not_race_with_each_other(write_cu):
    pa = _analyse_text(write_cu, "__global__ void hist(int *h, const int *v, int n)\n{\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    if (i < n) atomicAdd(&h[0], 1);\n}\n"
                       "int main() { int *h, *v; hist<<<4, 256>>>(h, v, 1024); }\n")
    assert pa.kernels[0].races == []


def test_non_atomic_counter_races(write_cu):
    pa = _analyse_text(write_cu, "__global__ void count(int *h, int n)\n{\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    if (i < n) h[0] += 1;\n}\n"
                       "int main() { int *h; count<<<4, 256>>>(h, 1024); }\n")
    (ka,) = pa.kernels
    assert {r.array for r in ka.races} == {"h"}
    assert {r.kind for r in ka.races} == {"write/write", "read/write"}


def test_unused_axis_race_found_with_runtime_grid(write_cu):
    pa = _analyse_text(write_cu, """\
__global__ void k1(float *A, float *x, float *tmp, int nx, int ny)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nx) {
        tmp[i] = 0;
        for (int j = 0; j < ny; j++)
            tmp[i] += A[i * ny + j] * x[j];
    }
}
void run(float *A, float *x, float *tmp, int nx, int ny)
{
    dim3 block(32, 8);
    dim3 grid((nx + 31) / 32);
    k1<<<grid, block>>>(A, x, tmp, nx, ny);
}
""")
    (ka,) = pa.kernels
    assert ka.model.block_shape == (32, 8, 1)
    assert {r.array for r in ka.races} == {"tmp"}


# --------------------------------------------------------------------------- dependences

def test_atax_kernel1_dependences_and_reduction(kernel_analysis):
    ka = kernel_analysis(RACE, "atax_kernel1")
    flows = {(d.source, d.sink) for d in ka.dependences if d.kind == "flow"}
    assert ("S0", "S1") in flows          # tmp[i] = 0 feeds the first tmp[i] += ...
    assert ("S1", "S1") in flows          # and every iteration the next
    assert {d.array for d in ka.dependences} == {"tmp"}
    (loop,) = ka.loops
    assert loop.loop.source_name == "j" and loop.loop.location.line == 35
    assert not loop.parallel
    assert loop.reduction == "tmp[i] (+)"


def _same_thread(ka) -> bool:
    import islpy as isl
    n = len(ka.model.thread_dims)
    for d in ka.dependences:
        rel = d.relation
        for k in range(n):
            if not rel.is_subset(rel.equate(isl.dim_type.in_, k, isl.dim_type.out, k)):
                return False
    return True


def test_dependences_stay_within_a_thread(kernel_analysis):
    path = POLYBENCH / "covariance" / "covariance.cu"
    if not path.exists():
        pytest.skip("polybench_inputs/covariance not present")
    ka = kernel_analysis(path, "covar_kernel")
    assert ka.races == [] and ka.dependences
    assert _same_thread(ka)


def test_dependences_of_racing_kernel_stay_within_a_thread(kernel_analysis):
    ka = kernel_analysis(RACE, "atax_kernel1")
    assert ka.dependences
    assert _same_thread(ka)


def test_covariance_loops(kernel_analysis):
    path = POLYBENCH / "covariance" / "covariance.cu"
    if not path.exists():
        pytest.skip("polybench_inputs/covariance not present")
    ka = kernel_analysis(path, "covar_kernel")
    loops = {lr.loop.source_name: lr for lr in ka.loops}
    assert set(loops) == {"j2", "i"}
    assert loops["j2"].parallel and loops["j2"].reduction is None
    assert not loops["i"].parallel
    assert loops["i"].reduction.endswith("(+)") and "symmat" in loops["i"].reduction
    assert any("'j2'" in s and "parallel" in s for s in ka.suggestions)


def test_loop_carrying_a_true_dependence_is_not_a_reduction(write_cu):
    pa = _analyse_text(write_cu, "__global__ void scan(float *A, int n)\n{\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    if (i < n)\n"
                       "        for (int j = 1; j < 64; j++)\n"
                       "            A[i * 64 + j] = A[i * 64 + j - 1] + 1.0f;\n}\n"
                       "int main() { float *A; scan<<<4, 256>>>(A, 1024); }\n")
    (ka,) = pa.kernels
    assert ka.races == []
    (loop,) = ka.loops
    assert not loop.parallel and loop.reduction is None
    assert any(d.kind == "flow" and d.array == "A" for d in ka.dependences)


@pytest.mark.parametrize("program_name,sizes", [
    ("jacobi2d", ("N=n",)), ("covariance", ("M=m", "N=n")), ("correlation", ("M=m", "N=n")),
])
def test_scalar_bounds_with_parameter_rows_do_not_race(analysis, program_name, sizes):
    """With POLYBENCH_USE_SCALAR_LB alone, the bound is the argument n but the row
    length stays the macro N: nothing in the kernel keeps n <= N, so rows may overlap and
    polycoal (soundly) reports races in jacobi2d, covariance, correlation and adi. When
    the row length is the same argument, the rows are disjoint and nothing races."""
    path = POLYBENCH / program_name / f"{program_name}.cu"
    if not path.exists():
        pytest.skip(f"{path} not present")
    pa = analysis(path, ("POLYBENCH_USE_SCALAR_LB",) + sizes)
    assert [(ka.kernel.name, ka.races) for ka in pa.kernels if ka.races] == []
    shaped = [a for ka in pa.kernels for _, a in ka.model.accesses()
              if a.subscripts is not None and len(a.subscripts) == 2]
    assert shaped                         # delinearised with a parameter row length
