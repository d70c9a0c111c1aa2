"""Host loops of launches (issue 34, launch overhead; passes/host_loops.py): they wait for
the device once, after the loop, instead of after each launch (optimize/launch_waits.py,
codegen/launch.waits_after_loops), and a loop of one launch whose trips touch the same
elements only from the same threads runs as one launch, each thread running the trips
(optimize/launch_trips.py, codegen/launch.trips_kernels)."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, compile_sm90, cpu_runner, runs_alike
from polycoal.frontend import read_program
from polycoal.frontend.lexer import tokenize
from polycoal.optimize.launch_trips import trip_loops
from polycoal.optimize.launch_waits import launch_loops
from polycoal.transform import TransformOptions, transform_program

POLYBENCH = FIXTURES.parent.parent / "polybench_inputs"

KERNELS = """\
#include <cstdio>
#include <cuda_runtime.h>
#define N 300
__global__ void step(int n, float *a, int t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * 0.5f + (float)t;
}
__global__ void shift(int n, float *a, float *b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n) b[i] = a[i - 1] + a[i];
}
"""

MAIN = """\
int main() {
  float h[N];
  for (int i = 0; i < N; i++) h[i] = (float)(i % 17);
  float *a, *b;
  cudaMalloc(&a, sizeof(float) * N);
  cudaMalloc(&b, sizeof(float) * N);
  cudaMemcpy(a, h, sizeof(float) * N, cudaMemcpyHostToDevice);
  cudaMemcpy(b, h, sizeof(float) * N, cudaMemcpyHostToDevice);
BODY
  cudaMemcpy(h, b, sizeof(float) * N, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int i = 0; i < N; i++) s += h[i] * (i + 1);
  printf("%f\\n", s);
  return 0;
}
"""

LOOP = """\
  int n = N;
  dim3 block(128);
  for (int t = 0; t < 5; t++) {
    dim3 grid((n + block.x - 1) / block.x);
    step<<<grid, block>>>(n, a, t);
    cudaDeviceSynchronize();
    shift<<<grid, block>>>(n, a, b);
    cudaStreamSynchronize(0);
    if (t % 2 == 0)
      cudaThreadSynchronize();
  }"""


def _program(body: str) -> str:
    return KERNELS + MAIN.replace("BODY", body)


def _loops(text: str):
    return launch_loops(text, tokenize(text))


def _transform(path, **options):
    program = read_program(str(path))
    return program, transform_program(program, TransformOptions(**options))


def test_a_loop_of_launches_waits_once_after_it(write_cu, tmp_path):
    path = write_cu(_program(LOOP))
    (loop,), kept = _loops(path.read_text())
    assert kept == [] and len(loop.waits) == 3 and loop.launches == 2
    assert loop.spelling == "cudaDeviceSynchronize()" and loop.in_block
    program, result = _transform(path)
    body = result.text[result.text.index("for (int t"):result.text.index("cudaMemcpy(h, b")]
    # no wait inside the loop; the wait that was an if's whole body is the empty statement
    assert "Synchronize" not in body[:body.rindex("}")]
    assert re.search(r"if \(t % 2 == 0\)\s*;", body)
    assert body.count("cudaDeviceSynchronize();  /* polycoal: the loop's 3 waits") == 1
    assert any(d.code == "waits-moved" and d.location.line == 22 for d in result.diagnostics)
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    runs_alike(program.text, result.text, tmp_path)


def test_the_output_compiles(write_cu, tmp_path, nvcc):
    _, result = _transform(write_cu(_program(LOOP)))
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)


def test_keep_waits_leaves_the_program_as_written(write_cu):
    path = write_cu(_program(LOOP))
    _, result = _transform(path, launch_waits=False)
    assert result.text == path.read_text()


def test_nested_loops_wait_after_the_outermost(write_cu, tmp_path):
    """ADI's shape: launches and loops of launches inside a time loop."""
    body = """\
  for (int t = 0; t < 3; t++) {
    step<<<(N + 127) / 128, 128>>>(N, a, t);
    cudaDeviceSynchronize();
    for (int i1 = 1; i1 < 4; i1++) {
      shift<<<(N + 127) / 128, 128>>>(N, a, b);
      cudaDeviceSynchronize();
    }
  }"""
    path = write_cu(_program(body))
    (loop,), _ = _loops(path.read_text())
    assert len(loop.waits) == 2 and loop.launches == 2
    program, result = _transform(path)
    assert result.text.count("Synchronize") == 1
    runs_alike(program.text, result.text, tmp_path)


def test_a_loop_that_is_a_body_is_braced_with_its_wait(write_cu, tmp_path, nvcc):
    body = """\
  int go = 1;
  if (go)
    for (int t = 0; t < 4; t++) { step<<<3, 128>>>(N, a, t); cudaDeviceSynchronize(); }
  else
    shift<<<3, 128>>>(N, a, b);
  shift<<<3, 128>>>(N, a, b);"""
    path = write_cu(_program(body))
    (loop,), _ = _loops(path.read_text())
    assert not loop.in_block
    program, result = _transform(path, launch_trips=False)
    assert re.search(r"if \(go\)\s*\{ for .*\} cudaDeviceSynchronize\(\);.*\*/ \}\s*else",
                     result.text)
    runs_alike(program.text, result.text, tmp_path)
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)


@pytest.mark.parametrize("inside, why", [
    ('printf("%d\\n", t);', "calls printf"),
    ("cudaMemcpy(h, b, sizeof(float) * N, cudaMemcpyDeviceToHost);", "calls cudaMemcpy"),
    ("h[t] = 1.0f;", "uses `[`"),
    ("*h = 2.0f;", "dereferences a pointer"),
    ("if (t == 3) return 1;", "uses `return`"),
    ("cudaError_t e = cudaDeviceSynchronize(); (void)e;", "calls cudaDeviceSynchronize"),
    ("step<<<3, 128, 0, (cudaStream_t)1>>>(N, a, t);", "a stream of its own"),
    ("int q = 0; shift<<<3, 128>>>(N, (float *)&q, b);", "passes an address"),
    ("if ((int)*h) break;", "dereferences a pointer"),
    ("(cudaMemcpy)(h, b, sizeof(float) * N, cudaMemcpyDeviceToHost);", "calls through"),
    ("cudaMemcpyAsync(h, b, 4, cudaMemcpyDeviceToHost), step<<<3, 128>>>(N, a, t);",
     "launches inside an expression"),
    ("shift<<<3, 128>>>(N, a, b), step<<<3, 128, 0, cudaStreamPerThread>>>(N, a, t);",
     "launches inside an expression"),
    ("CHECK_ERRORS;", "is a macro"),
])
def test_loops_that_do_more_keep_their_waits(write_cu, inside, why):
    body = ("  for (int t = 0; t < 4; t++) {\n    step<<<3, 128>>>(N, a, t);\n"
            f"    cudaDeviceSynchronize();\n    {inside}\n  }}")
    path = write_cu(_program(body))
    loops, (kept,) = _loops(path.read_text())
    assert loops == [] and why in kept.why, kept
    program, result = _transform(path)
    assert result.text.count("cudaDeviceSynchronize()") == \
        program.text.count("cudaDeviceSynchronize()")
    assert any(d.code == "waits-kept" and why in d.message for d in result.diagnostics)


@pytest.mark.parametrize("extra, why", [
    ("cudaStream_t s; cudaStreamCreate(&s);", "makes streams of its own"),
    ("\n#pragma omp parallel for\n  for (int q = 0; q < 2; q++) {}", "runs host threads"),
    ("static int stop = 0; cudaHostRegister(&stop, 4, cudaHostRegisterMapped);",
     "maps host memory"),
    ("float *m; cudaMallocManaged(&m, 4);", "uses managed memory"),
])
def test_programs_with_other_streams_or_threads_keep_their_waits(write_cu, extra, why):
    body = f"  {extra}\n" + LOOP
    loops, (kept,) = _loops(_program(body))
    assert loops == [] and why in kept.why


def test_kernels_that_print_keep_the_waits():
    """printf's buffer on the device is emptied at each wait: a loop of many launches
    of printing kernels could overflow it without them."""
    text = _program(LOOP).replace("if (i < n) a[i] =", "if (i == 0) printf(\"%d\\n\", t);\n"
                                  "  if (i < n) a[i] =")
    loops, (kept,) = _loops(text)
    assert loops == [] and "prints from its kernels" in kept.why


def test_a_range_for_keeps_its_waits():
    body = ("  int steps[3] = {1, 2, 3};\n  for (int t : steps) {\n"
            "    step<<<3, 128>>>(N, a, t);\n    cudaDeviceSynchronize();\n  }")
    loops, (kept,) = _loops(_program(body))
    assert loops == [] and "range-based" in kept.why


def test_a_preprocessor_line_in_the_loop_keeps_it(write_cu):
    body = LOOP.replace("    cudaStreamSynchronize(0);\n",
                        "#ifdef STEP\n    cudaStreamSynchronize(0);\n#endif\n")
    loops, (kept,) = _loops(_program(body))
    assert loops == [] and "preprocessor" in kept.why


def test_waits_in_device_code_and_loops_without_waits_are_not_touched(write_cu):
    text = _program("  for (int t = 0; t < 4; t++) step<<<3, 128>>>(N, a, t);\n"
                    "  cudaDeviceSynchronize();")
    assert _loops(text) == ([], [])


def test_a_transformed_kernel_in_the_loop(tmp_path):
    """PolyBench's Gram-Schmidt: its kernels restructured inside the loop (each launch a
    block of host code), the loop's three waits after it; reported at the input's line
    although the kernels above it changed length."""
    path = POLYBENCH / "gramschmidt" / "gramschmidt.cu"
    program, result = _transform(path)
    assert any(d.action != "unchanged" for d in result.decisions)
    (note,) = [d for d in result.diagnostics if d.code == "waits-moved"]
    line = program.text.splitlines()[note.location.line - 1]
    assert line.strip().startswith("for (k = 0; k < _PB_N; k++)")
    loop = result.text[result.text.index("t_start = rtclock();"):]
    loop = loop[:loop.index("t_end")]
    assert loop.count("Synchronize") == 1 and "3 waits" in loop


@pytest.mark.parametrize("name, sizes", [("jacobi1d", "N=64 TSTEPS=5"),
                                         ("adi", "N=24 TSTEPS=2"), ("adi", "N=70 TSTEPS=2"),
                                         ("lu", "N=40")])
def test_polybench_programs_run_alike(name, sizes):
    """Whole PolyBench/GPU programs with their waits moved, run on the CPU runtime at
    small sizes: the output's GPU part matches the program's own CPU reference (its
    count of non-matching outputs is 0), as the original's does."""
    from polycoal.frontend.preprocess import PreprocessorOptions
    path = POLYBENCH / name / f"{name}.cu"
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(sizes.split())))
    program = read_program(str(path), options.preprocessor)
    result = transform_program(program, options)
    assert any(d.code == "waits-moved" for d in result.diagnostics)
    defines = "".join(f"#define {d.replace('=', ' ')}\n" for d in sizes.split())
    for text in (program.text, result.text):
        run, error = cpu_runner().compile_and_run(defines + text,
                                                  include_dirs=(str(path.parent),))
        assert run is not None and run.failure is None, error
        assert re.search(r"Threshold of [\d.]+ Percent: 0\b", run.stderr), run.stderr


# ---- trips in the kernel

SWEEP = """\
#include <cstdio>
#include <cuda_runtime.h>
#define N 96
__global__ void sweep(int n, float *A, float *B, float *X, int i1) {
  int i2 = blockIdx.x * blockDim.x + threadIdx.x;
  if (i2 < n) {
    X[i1 * N + i2] = X[i1 * N + i2] - X[(i1 - 1) * N + i2] * A[i1 * N + i2] / B[(i1 - 1) * N + i2];
    B[i1 * N + i2] = B[i1 * N + i2] - A[i1 * N + i2] * A[i1 * N + i2] / B[(i1 - 1) * N + i2];
  }
}
__global__ void shifted(int n, float *A, int t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n) A[(t + 1) * N + i] = A[t * N + i - 1] * 0.5f;
}
__global__ void own(int n, float *x, int t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  x[i] = x[i] * 0.75f + (float)t;
}
int main() {
  static float h[3][N * N];
  for (int k = 0; k < 3; k++)
    for (int e = 0; e < N * N; e++) h[k][e] = 1.0f + (float)((e * (k + 3)) % 11) * 0.125f;
  float *A, *B, *X;
  cudaMalloc(&A, sizeof(float) * N * N);
  cudaMalloc(&B, sizeof(float) * N * N);
  cudaMalloc(&X, sizeof(float) * N * N);
  cudaMemcpy(A, h[0], sizeof(float) * N * N, cudaMemcpyHostToDevice);
  cudaMemcpy(B, h[1], sizeof(float) * N * N, cudaMemcpyHostToDevice);
  cudaMemcpy(X, h[2], sizeof(float) * N * N, cudaMemcpyHostToDevice);
  int n = N, i1;
BODY
  cudaMemcpy(h[1], B, sizeof(float) * N * N, cudaMemcpyDeviceToHost);
  cudaMemcpy(h[2], X, sizeof(float) * N * N, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int e = 0; e < N * N; e++) s += (h[1][e] + 2.0 * h[2][e]) * (e % 7 + 1);
  printf("%f %d\\n", s, i1);
  return 0;
}
"""

COLUMNS = """\
  for (i1 = 1; i1 < n; i1++) {
    sweep<<<(n + 31) / 32, 32>>>(n, A, B, X, i1);
    cudaDeviceSynchronize();
  }"""


def _sweep(body: str) -> str:
    return SWEEP.replace("BODY", body)


def test_a_column_sweep_runs_its_trips_in_one_launch(write_cu, tmp_path, nvcc):
    """ADI's shape: the host loops over rows, thread i2 updates row i1 of its column from
    row i1 - 1. Each thread runs the rows itself; i1 is left as the loop leaves it."""
    path = write_cu(_sweep(COLUMNS))
    (loop,) = trip_loops(path.read_text(), tokenize(path.read_text()))
    assert (loop.var, loop.lo, loop.hi, loop.kernel, loop.position) == ("i1", "1", "n",
                                                                        "sweep", 4)
    program, result = _transform(path)
    (note,) = [d for d in result.diagnostics if d.code == "trips-fused"]
    assert note.location.line == program.text[:program.text.index("for (i1 = 1")].count("\n") + 1
    assert "sweep__pc_trips<<<(n + 31) / 32, 32>>>(n, A, B, X, i1, (long long)(i1), " \
        "(long long)(n));" in result.text
    assert "i1 = n;" in result.text and "for (i1 = 1" not in result.text
    assert "__device__ __forceinline__ void sweep__pc_trip(int n" in result.text
    runs_alike(program.text, result.text, tmp_path)
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    _, kept = _transform(path, launch_trips=False)
    assert "sweep__pc_trips" not in kept.text


@pytest.mark.parametrize("loop", [
    "  for (int t = 0; t < 9; t++)\n    own<<<(n * n + 127) / 128, 128>>>(n * n, X, t);\n  i1 = 0;",
    "  for (i1 = 2; i1 <= 7; ++i1) {\n    own<<<n, n>>>(n * n, X, i1);\n  }",
    "  for (i1 = 5; i1 < 3; i1 += 1) own<<<n, n>>>(n * n, X, i1);",
])
def test_trips_of_an_element_a_thread(write_cu, tmp_path, loop):
    """Each thread updates its own element every trip (an early return included): the
    loop in the kernel, `<=` and `<` bounds, a declared variable, a loop that never runs
    (i1 keeps its first value)."""
    program, result = _transform(write_cu(_sweep(loop)))
    assert any(d.code == "trips-fused" for d in result.diagnostics), result.diagnostics
    assert "own__pc_trips" in result.text
    runs_alike(program.text, result.text, tmp_path)


def test_trips_that_read_another_threads_element_stay_launches(write_cu):
    """Thread i reads what thread i - 1 wrote in the trip before: the trips must stay
    one launch each (the grid-wide order between launches is what orders them)."""
    loop = "  for (i1 = 0; i1 < n - 1; i1++) {\n    shifted<<<3, 32>>>(n, A, i1);\n  }"
    program, result = _transform(write_cu(_sweep(loop)))
    (note,) = [d for d in result.diagnostics if d.code == "trips-kept"]
    assert "touch one element in different trips from different threads" in note.message
    assert "shifted__pc_trips" not in result.text


@pytest.mark.parametrize("loop", [
    # the grid depends on the trip, the variable passed twice or inside an expression,
    # an argument with a side effect, two launches, a launch into a stream
    "  for (i1 = 1; i1 < n; i1++) sweep<<<i1, 32>>>(n, A, B, X, i1);",
    "  for (i1 = 1; i1 < n; i1++) sweep<<<3, 32>>>(i1, A, B, X, i1);",
    "  for (i1 = 1; i1 < n; i1++) sweep<<<3, 32>>>(n, A, B, X, i1 + 0);",
    "  int q = 0;\n  for (i1 = 1; i1 < n; i1++) sweep<<<3, 32>>>(q++, A, B, X, i1);",
    "  for (i1 = 1; i1 < n; i1++) { sweep<<<3, 32>>>(n, A, B, X, i1); own<<<3, 32>>>(n, A, i1); }",
    "  for (i1 = 1; i1 < n; i1 += 2) sweep<<<3, 32>>>(n, A, B, X, i1);",
])
def test_loops_of_other_shapes_are_not_trips(write_cu, loop):
    text = _sweep(loop)
    assert trip_loops(text, tokenize(text)) == []


def test_a_kernel_that_assigns_its_trip_parameter_keeps_its_launches(write_cu):
    text = _sweep(COLUMNS).replace("int i1) {\n  int i2", "int i1) {\n  i1 = i1 + 0;\n  int i2")
    program, result = _transform(write_cu(text))
    (note,) = [d for d in result.diagnostics if d.code == "trips-kept"]
    assert "assigns its parameter i1" in note.message


def test_polybench_adi_fuses_its_column_sweeps():
    path = POLYBENCH / "adi" / "adi.cu"
    program, result = _transform(path)
    fused = sorted(d.location.line for d in result.diagnostics if d.code == "trips-fused")
    assert fused == [187, 195]
    assert "adi_kernel4__pc_trips<<<grid1, block1>>>(n, A_gpu, B_gpu, X_gpu, i1, " \
        "(long long)(i1), (long long)(_PB_N));" in result.text


def test_a_rewrite_that_does_not_compile_is_left_out(write_cu, monkeypatch):
    """The compile check: host loops rewritten into a program that does not compile
    where the input did are left as written, with a warning."""
    import polycoal.passes.host_loops as passes
    broken = passes.waits_after_loops
    monkeypatch.setattr(passes, "waits_after_loops",
                        lambda text, loops: broken(text, loops) + "\nint broken(;\n")
    path = write_cu(_program(LOOP))
    _, result = _transform(path)
    assert result.text == path.read_text()
    (warning,) = [d for d in result.diagnostics if d.code == "output-rejected"]
    assert "host loops: left as written" in warning.message


def test_polybench_programs_change_only_where_a_host_loop_does():
    """Over PolyBench/GPU: the programs whose host loops launch and wait (ADI,
    FDTD-2D, Gram-Schmidt, Jacobi, LU) or launch one kernel a slice (the 3-D
    convolution, whose trips write disjoint slices) have them rewritten; the others' host code,
    and every program with --keep-waits --keep-trips, comes back as the kernel passes
    leave it."""
    from conftest import polybench_programs
    moved = set()
    for path in polybench_programs():
        program = read_program(str(path))
        result = transform_program(program, TransformOptions(placement="none"))
        kept = transform_program(program, TransformOptions(placement="none",
                                                           launch_waits=False,
                                                           launch_trips=False))
        notes = {d.code for d in result.diagnostics}
        if notes & {"waits-moved", "trips-fused"}:
            moved.add(path.parent.name)
        else:
            assert result.text == kept.text, path
    assert moved == {"3dconv", "adi", "fdtd2d", "gramschmidt", "jacobi1d", "jacobi2d", "lu"}


def test_a_kernel_defined_after_its_loop_keeps_its_launches(write_cu):
    """The trips kernel would follow the definition, after the loop that launches it:
    the loop stays as it is (its waits still move)."""
    text = _sweep(COLUMNS)
    start, end = text.index("__global__ void sweep("), text.index("__global__ void shifted(")
    definition = text[start:end]
    text = text[:start] + "__global__ void sweep(int n, float *A, float *B, float *X, int i1);\n" \
        + text[end:] + "\n" + definition
    program, result = _transform(write_cu(text))
    (note,) = [d for d in result.diagnostics if d.code == "trips-kept"]
    assert "before the kernel's definition" in note.message
    assert "__pc_trips" not in result.text
    assert any(d.code == "waits-moved" for d in result.diagnostics)


# ---- found by review: shapes that must not be rewritten, or rewritten right


@pytest.mark.parametrize("loop", [
    "  int go = 1;\n  for (i1 = 1; i1 < n && go; i1++) own<<<n, n>>>(n * n, X, i1);",
    "  for (i1 = 1; i1 < (n > 4 ? 4 : n); i1++) own<<<n, n>>>(n * n, X, i1);",
    "  double v;\n  for (v = 0.5; v < 2.7; v++) own<<<n, n>>>(n * n, X, (int)v);",
])
def test_bounds_that_are_not_one_operand_are_not_trips(loop):
    """`i1 < n && go` reads as `(i1 < n) && go`: its bound is not `n && go`; a loop
    variable of a type not known to be an integer is not a trip count either."""
    text = _sweep(loop.replace("i1 < (n > 4 ? 4 : n)", "i1 < n > 4"))
    assert trip_loops(text, tokenize(text)) == []


def test_a_parameter_named_like_an_isl_dimension_hides_no_conflict(write_cu):
    """The isl relation between trips names its dimensions apart from every parameter:
    a kernel parameter `t` does not make two trips look like one."""
    text = _sweep("  for (i1 = 1; i1 < n; i1++) {\n    clash<<<1, 96>>>(n, X, i1);\n  }")
    text = text.replace("__global__ void own(", """__global__ void clash(int t, float *x, int s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < 96 && s < t) x[s * N + i] = x[(s - 1) * N + i - 1] + 1.0f;
}
__global__ void own(""")
    program, result = _transform(write_cu(text))
    assert "clash__pc_trips" not in result.text
    assert any(d.code == "trips-kept" and "different threads" in d.message
               for d in result.diagnostics)


def test_one_kernel_in_two_kinds_of_loops(write_cu, tmp_path, nvcc):
    """A `<` loop and a `<=` loop of one kernel: two trips kernels, one device function;
    a negative first value for an unsigned parameter converted per trip as before."""
    text = _sweep("  for (i1 = 1; i1 < 4; i1++) own<<<n, n>>>(n * n, X, i1);\n"
                  "  for (i1 = 2; i1 <= 5; i1++) own<<<n, n>>>(n * n, X, i1);\n"
                  "  for (int v = -2; v < 3; v++) wrap<<<n, n>>>(n * n, X, v);")
    text = text.replace("__global__ void own(", """__global__ void wrap(int n, float *x, unsigned t) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + (float)(t % 7u);
}
__global__ void own(""")
    program, result = _transform(write_cu(text))
    assert result.text.count("void own__pc_trip(") == 1
    assert "own__pc_trips(" in result.text and "own__pc_trips_through(" in result.text
    assert "wrap__pc_trips" in result.text
    runs_alike(program.text, result.text, tmp_path)
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
