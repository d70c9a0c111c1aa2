"""Stencils and row-invariant reads run several rows a thread, the elements they share
loaded once into registers (optimize/window.py, codegen/window.py; issue 34)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from conftest import FIXTURES, compile_sm90, first_kernel_analysis, runs_alike
from polycoal.frontend import read_program
from polycoal.optimize.window import WindowPlan, array_references, window_plan
from polycoal.transform import TransformOptions, transform_program

ROWS = FIXTURES / "stencil_rows.cu"
POLYBENCH = FIXTURES.parent.parent / "polybench_inputs"
LARGE = TransformOptions(price_at=(("n", 8192), ("m", 8192), ("k", 0)))


def _decisions(path=ROWS, options=LARGE):
    program = read_program(str(path), options.preprocessor)
    result = transform_program(program, options)
    return program, result, {d.kernel: d for d in result.decisions}


def test_the_window_of_a_convolution():
    """3 x 3 (less a corner) down 4 rows: the rows i - 1 .. i + 4 read once each."""
    _, _, d = _decisions()
    conv = d["conv3x3"]
    assert conv.action == "windowed", conv.reason
    plan = conv.generated.tiles
    assert (plan.x, plan.y, plan.rows) == ("gx", "gy", 4)
    assert plan.reads == 28 and len(plan.loads) == 18
    # every register replaces references to one element: the same offset from the row
    for load in plan.loads:
        rows = {row + (-1 if "(i - 1)" in text else 1 if "(i + 1)" in text else 0)
                for _, row, text in load.uses}
        assert len(rows) == 1, load
    assert "18 loads into registers for 28 reads of A" in conv.reason
    assert conv.predicted.chosen == "windowed"


def test_row_invariant_reads_and_two_statements():
    _, _, d = _decisions()
    rank = d["rank_one"].generated.tiles
    # u[i] one load a row, v[j] one load for the four rows; a[...], updated in place,
    # one load a row (test_an_update_in_place_loads_its_elements_ahead)
    assert sorted((l.array, len(l.uses)) for l in rank.loads) == \
        [("a", 1)] * 4 + [("u", 1)] * 4 + [("v", 4)]
    step = d["field_step"]
    assert step.action == "windowed", step.reason
    # fict[t] once for the four rows' first statement, hz's rows i - 1 .. i + 3, ey's
    # own element a row (the second statement's, in place)
    assert sorted(l.array for l in step.generated.tiles.loads) == \
        ["ey"] * 4 + ["fict"] + ["hz"] * 5


def test_reads_under_a_condition_stay_where_they_are():
    _, result, d = _decisions()
    plan = d["either_side"].generated.tiles
    hoisted = {text for l in plan.loads for _, _, text in l.uses}
    assert "A[((i - 1) * m) + j]" not in hoisted          # only under ?:
    assert "A[((i + 1) * m) + j]" not in hoisted          # under ?: and outside it
    assert "A[(i * m) + j]" in hoisted
    assert "? (A[(pc_y0 * m + pc_x - m)]) : (A[(pc_y0 * m + pc_x + m)])" in result.text


def test_array_references_always_and_under_a_condition():
    from pycparser import c_parser
    node = c_parser.CParser().parse(
        "void f() { x = (c ? a[1] : a[2]) + a[3] + (p && a[4]) + (a[5] || q) + a[1] "
        "+ (c ? s[2].v : 0) + *(a + 6); }").ext[0].body.block_items[0]
    always, sometimes = array_references(node)
    assert always == {"a[3]", "a[5]", "a[1]"}
    assert sometimes == {"a[1]", "a[2]", "a[4]", "s[2]"}


def test_the_window_follows_the_coalescing_order():
    """i on threadIdx.x as ported: the lanes go along j (the restructuring ILP's x), the
    window down i."""
    _, _, d = _decisions()
    swapped = d["smooth_swapped"]
    assert swapped.action == "windowed", swapped.reason
    assert (swapped.generated.tiles.x, swapped.generated.tiles.y) == ("gy", "gx")
    assert [f for f, _ in swapped.predicted.candidates] == ["windowed", "restructured"]


@pytest.mark.parametrize("argv", [(), ("37", "45"), ("3", "40"), ("2", "2"), ("1", "33"),
                                  ("160", "160"), ("129", "7")])
def test_windowed_kernels_run_like_the_originals(tmp_path, argv):
    """Row counts that are not multiples of 4 (the last group's rows guarded), fewer rows
    than a group, one row, the largest."""
    program, result, d = _decisions()
    assert sum(x.action == "windowed" for x in d.values()) == 6
    runs_alike(program.text, result.text, tmp_path, argv=argv)


def test_an_update_in_place_loads_its_elements_ahead():
    """LU's step and the rank-one update write the array they read: each instance's own
    element (no other instance writes it: they would race) is loaded ahead with the
    others, and stored where the instance stores it: `a[i][j] -= ...` is printed `a[..] =
    reg - (...)`, `+=` as `a[..] = reg + (...)`."""
    _, result, d = _decisions()
    lu = d["lu_step"]
    assert lu.action == "windowed", lu.reason
    assert "9 loads into registers for 12 reads of a" in lu.reason
    text = lu.generated.text
    assert "a[(pc_y0 * m + pc_x)] = pc_w0 - (pc_w1 * pc_w2);" in text, text
    rank = d["rank_one"].generated.text
    assert re.search(r"a\[[^]]+\] = pc_w\d+ \+ \(", rank), rank


def test_windowed_kernels_compile(tmp_path, nvcc):
    _, result, _ = _decisions()
    (tmp_path / "out.cu").write_text(result.text)
    compile_sm90(nvcc, tmp_path / "out.cu")


def test_the_model_decides_at_the_launch_sizes(tmp_path):
    """Proposed only at known sizes, taken only where predicted faster: Jacobi's 1000 x
    1000 (measured slower windowed, 0.88x) stays, 8192 x 8192 (measured 1.43x) is
    windowed; with the size unknown, not proposed."""
    from polycoal.frontend.preprocess import PreprocessorOptions
    path = POLYBENCH / "jacobi2d" / "jacobi2d.cu"
    for values, action in (((), "unchanged"), ((("n", 1000),), "unchanged"),
                           ((("n", 8192),), "windowed")):
        defines = tuple(f"N={v}" for _, v in values)      # the rows' length, as -DN
        _, _, d = _decisions(path, TransformOptions(
            price_at=values, preprocessor=PreprocessorOptions(defines=defines)))
        k = d["runJacobiCUDA_kernel1"]
        assert k.action == action, (values, k.reason)
        forms = [f for f, _ in k.predicted.candidates] if k.predicted else []
        assert ("windowed" in forms) == bool(values), (values, forms)


def test_polybench_convolution_is_windowed_and_runs_alike():
    """At PolyBench's 4096 x 4096 (known from its launch): windowed (measured 1.58x);
    run on the CPU at ragged sizes beside the original (test_polybench compiles it)."""
    import subprocess
    import sys
    path = POLYBENCH / "2dconv" / "2dconv.cu"
    _, _, d = _decisions(path, TransformOptions())
    assert d["convolution2D_kernel"].action == "windowed"
    assert d["convolution2D_kernel"].predicted.assumed == ()
    run = subprocess.run([sys.executable, "-m", "polycoal", "validate", "--cpu", str(path),
                          "--arg", "ni=38", "--arg", "nj=45"], capture_output=True, text=True)
    assert run.returncode == 0 and "convolution2D_kernel         PASS  outputs match" in \
        run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("body,why", [
    ("B[i * N + j] = B[(i - 1) * N + j] + 1.0f;", "depend"),        # in place: races
    ("for (int k = 0; k < 4; k++) B[i * N + j] += A[(i + k) * N + j];", "loops"),
])
def test_what_is_not_windowed(write_cu, body, why):
    plan = _plan_of(write_cu, "i > 0 && i < N - 4 && j < N", body)
    assert not isinstance(plan, WindowPlan) and why in plan.text, plan


def _plan_of(write_cu, condition: str, body: str):
    """The window plan of a kernel over a 2-D grid: `body` under `condition`."""
    source = ("#define N 256\n__global__ void k(float *B, const float *A)\n{\n"
              "  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  int i = blockIdx.y * blockDim.y + threadIdx.y;\n"
              f"  if ({condition})\n    {body}\n}}\n"
              "int main() { float *a, *b; k<<<dim3(8, 32), dim3(32, 8)>>>(b, a); }\n")
    analysis = first_kernel_analysis(write_cu(source))
    return window_plan(analysis.model, analysis)


@pytest.mark.parametrize("body", [
    "B[i * N + j] = A[i * N + j];",                 # a copy
    "B[i * N + j] = B[i * N + j] * 2.0f;",          # in place: its own element ahead
    "B[i * N + j] = B[i * N + j] - 0.5f * (A[i * N + j] - A[i * N + j - 1]);",
])
def test_rows_that_share_nothing_still_run_four_a_thread(write_cu, body):
    """No element read twice: the form still runs four rows a thread, each load issued
    before the first store (bytes in flight: 64% -> 102% of a copy at 8192 x 8192,
    tools/explore_stream_forms.py); one load a reference."""
    plan = _plan_of(write_cu, "i > 0 && i < N - 4 && j > 0 && j < N", body)
    assert isinstance(plan, WindowPlan) and not plan.shares and not plan.one_dim
    assert len(plan.loads) == plan.reads == 4 * body.count("[", body.index("="))
    assert plan.block == (32, 8, 1) and plan.step == 1


def test_the_validator_rejects_a_window_that_is_not_the_plan():
    from polycoal.transform import _window
    program, _, d = _decisions()
    conv = d["conv3x3"]
    assert _window(program, None, conv) == []
    plan = conv.generated.tiles
    wrong = replace(plan, loads=plan.loads[1:] + plan.loads[:1])
    bad = replace(conv, generated=replace(conv.generated, tiles=wrong))
    assert _window(program, None, bad) == ["the generated window differs from the plan"]


def test_rows_past_the_range_load_nothing(write_cu, tmp_path):
    """A grid of one row (NJ = 1) in groups of four rows: the loads of rows 1-3 would
    read past the arrays; their readers never run, so they are not made (found by the
    random tester: transpose-12113, a memory fault on the CPU runtime)."""
    text = """\
#include <cstdio>
#include <cuda_runtime.h>
#define NI 100
#define NJ 1
__global__ void kern(float *out, const float *A, const float *C) {
  int i = (int)(blockIdx.y * blockDim.y) + (int)threadIdx.y;
  const int j = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < NI && j < NJ) out[i + NI * j] = 2.0f * A[i] + 0.5f * C[j * NI + i] - 2.0f * (float)j;
}
int main() {
  float h[NI * NJ], *out, *A, *C;
  for (int e = 0; e < NI * NJ; e++) h[e] = (float)(e % 9);
  cudaMalloc(&out, sizeof(h)); cudaMalloc(&A, sizeof(h)); cudaMalloc(&C, sizeof(h));
  cudaMemcpy(A, h, sizeof(h), cudaMemcpyHostToDevice);
  cudaMemcpy(C, h, sizeof(h), cudaMemcpyHostToDevice);
  kern<<<dim3(1, 4), dim3(1, 32)>>>(out, A, C);
  cudaMemcpy(h, out, sizeof(h), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int e = 0; e < NI * NJ; e++) s += h[e] * (e + 1);
  printf("%f\\n", s);
  return 0;
}
"""
    path = write_cu(text)
    program = read_program(str(path))
    result = transform_program(program, TransformOptions(model=False))
    d = {x.kernel: x for x in result.decisions}
    assert d["kern"].action == "windowed", d["kern"].reason
    assert "pc_y1 + pc_x" not in result.text
    runs_alike(program.text, result.text, tmp_path)


def test_a_second_statement_reads_what_the_first_wrote_in_place():
    """Correlation's centring: data[i][j] -= mean[j]; data[i][j] /= sqrt(n) * std[j]. The
    second statement reads what the first wrote: its read stays in place (a statement
    before it writes data), the first's is loaded ahead with mean[j] and std[j] (one
    load each for the four rows); on the CPU at ragged sizes, as the original."""
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.validate.cpu import validate_cpu
    path = POLYBENCH / "correlation" / "correlation.cu"
    options = TransformOptions(price_at=(("m", 4096), ("n", 4096)),
                               preprocessor=PreprocessorOptions(defines=("M=4096", "N=4096")))
    program, result, d = _decisions(path, options)
    reduce = d["reduce_kernel"]
    assert reduce.action == "windowed", reduce.reason
    assert "6 loads into registers for 12 reads of mean, data, std" in reduce.reason
    text = reduce.generated.text
    assert "data[(pc_x + 4096 * pc_y0)] = pc_w1 - (pc_w0);" in text
    assert "data[(pc_x + 4096 * pc_y0)] /= sqrtf((float_n)) * pc_w2;" in text
    verdicts = validate_cpu(program, result, options, {"m": 40, "n": 37}, seed=5)
    assert all(v.ok for v in verdicts if v.kernel == "reduce_kernel"), \
        [(v.kernel, v.message) for v in verdicts]
    assert any(v.kernel == "reduce_kernel" for v in verdicts)

STREAM = FIXTURES / "stream_rows.cu"
STREAM_LARGE = TransformOptions(price_at=(("n", 8192), ("m", 8192), ("len", 1 << 24)))


def test_kernels_that_share_nothing_run_several_elements_a_thread():
    """Past the L2 (8192 x 8192, 2^24 elements), each kernel of the fixture runs four
    elements a thread: rows on a 2-D grid, a block's width apart on a 1-D grid (each
    warp's accesses contiguous), the loads before the stores."""
    _, result, d = _decisions(STREAM, STREAM_LARGE)
    assert all(k.action == "windowed" for k in d.values()), \
        {k: v.reason for k, v in d.items()}
    for name in ("copy_back", "field_x", "smooth_1d"):
        assert "more bytes in flight" in d[name].reason, d[name].reason
        assert not d[name].generated.tiles.shares
    one = d["smooth_1d"].generated.tiles
    assert one.one_dim and one.step == 256 and one.block == (256, 1, 1)
    assert "4 values a thread 256 apart, 12 loads into registers" in d["smooth_1d"].reason
    text = d["smooth_1d"].generated.text
    assert "const long long pc_y3 = pc_y0 + 768;" in text
    # the lanes start at a multiple of a warp, as the original's warps do (the range
    # starts at 1: i > 0), the values below the range guarded off
    assert "const long long pc_y0 = (long long)(0) + pc_g;" in text
    assert "if ((pc_y0 >= 1)) pc_w0 = A[(pc_y0 - 1)];" in text
    assert "for (int pc_x = (0) + (int)(blockIdx.x" in d["copy_back"].generated.text
    # every load before the first store
    assert text.rindex("pc_w11 = A[") < text.index("B[(pc_y0)] =")
    # s[0] once for the four elements; x updated in place, loaded ahead
    scale = d["scale_add"].generated.tiles
    assert sorted((l.array, len(l.uses)) for l in scale.loads) == \
        [("s", 4)] + [("x", 1)] * 4 + [("y", 1)] * 4
    assert "dim3(256, 1, 1)>>>(len, B, A, s" in result.text


@pytest.mark.parametrize("argv", [(), ("37", "45"), ("1", "1"), ("3", "40"), ("160", "160"),
                                  ("129", "7"), ("2", "128"), ("8", "128")])
def test_kernels_that_share_nothing_run_like_the_originals(tmp_path, argv):
    """Lengths below a block, at and past one block's 1024 elements, not multiples of
    anything; 2-D row counts not multiples of 4."""
    program, result, d = _decisions(STREAM, STREAM_LARGE)
    assert sum(x.action == "windowed" for x in d.values()) == 4
    runs_alike(program.text, result.text, tmp_path, argv=argv)


def test_kernels_that_share_nothing_compile(tmp_path, nvcc):
    _, result, _ = _decisions(STREAM, STREAM_LARGE)
    (tmp_path / "out.cu").write_text(result.text)
    compile_sm90(nvcc, tmp_path / "out.cu")


def test_kernels_that_share_nothing_stay_at_small_sizes():
    """Within the L2 and a few waves (1000 x 1000, 4096 elements) the model keeps them;
    at unknown sizes the form is not proposed."""
    for values in ((("n", 1000), ("m", 1000), ("len", 4096)), ()):
        _, _, d = _decisions(STREAM, TransformOptions(price_at=values))
        assert all(k.action != "windowed" for k in d.values()), \
            {k: v.reason for k, v in d.items()}


def test_window_always_proposes_it_at_unknown_sizes(tmp_path):
    """`--window-always` (the random tester's `window` set): proposed at unknown sizes,
    rows sharing nothing included; with --no-model taken, and the program runs alike."""
    from polycoal.cli import main
    out = tmp_path / "out.cu"
    assert main(["transform", str(STREAM), "-o", str(out), "--no-model",
                 "--window-always"]) == 0
    assert out.read_text().count("a thread, 256 apart") == 2
    assert out.read_text().count("4 rows a thread down") == 2
    runs_alike(STREAM.read_text(), out.read_text(), tmp_path, argv=("11", "97"))
    assert main(["transform", str(STREAM), "-o", str(out), "--no-model"]) == 0
    assert "a thread, 256 apart" not in out.read_text()


@pytest.mark.parametrize("value", ["A[i * N + j] * blockDim.x", "A[i * N + j] + threadIdx.x",
                                   "A[i * N + j] + blockIdx.y", "A[i * N + j] * gridDim.x"])
def test_a_statement_reading_the_geometry_is_not_windowed(write_cu, value):
    """The form changes the blocks and each thread's elements: a value read from
    threadIdx, blockIdx, blockDim or gridDim would change with them (found in review:
    `B[i] = A[i] * blockDim.x` ran with 256 where the original's blocks had 128)."""
    plan = _plan_of(write_cu, "i > 0 && i < N - 4 && j < N", f"B[i * N + j] = {value};")
    # the model itself leaves such a kernel out (`launch geometry in a value`: every
    # regenerated form runs another geometry)
    assert not isinstance(plan, WindowPlan) and plan.text == "not an affine kernel", plan


def test_a_1d_window_indexes_in_64_bits(write_cu):
    """A 1-D range may pass 2^31 elements (and the fourth element of the last group past
    the range's end): the elements' indices are long long (found in review)."""
    source = ("__global__ void k(long long n, const float *A, float *B)\n{\n"
              "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < n) B[i] = A[i] + 3.0f;\n}\n"
              "int main() { float *a, *b; long long n = 3000000000LL;\n"
              "  k<<<(unsigned)((n + 255) / 256), 256>>>(n, a, b); }\n")
    program = read_program(str(write_cu(source)))
    result = transform_program(program, TransformOptions(model=False, window_always=True))
    d = result.decisions[0]
    assert d.action == "windowed", d.reason
    assert "const long long pc_y1 = pc_y0 + 256;" in d.generated.text
    assert "(int)pc_g" not in d.generated.text
