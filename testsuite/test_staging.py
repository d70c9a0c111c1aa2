"""Kernels whose references coalesce along two different dims, staged through
shared-memory tiles (optimize/staging.py, codegen/staged.py; issue 15)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import FIXTURES, first_kernel_analysis, runs_alike
from polycoal.frontend import read_program
from polycoal.optimize.staging import StagingPlan, staging_plan
from polycoal.transform import TransformOptions, transform_program

TILES = FIXTURES / "transpose_tiles.cu"


def _result(path=TILES):
    program = read_program(str(path))
    return program, transform_program(program, TransformOptions())


def test_the_transpose_shapes_are_staged_and_the_others_are_not():
    _, result = _result()
    d = {x.kernel: x for x in result.decisions}
    for name in ("transpose_scale", "transpose_2d", "add_transposed"):
        assert d[name].action == "staged", (name, d[name].reason)
        assert "both sides coalesced" in d[name].reason
    plan = d["transpose_scale"].generated.tiles
    assert (plan.x, plan.y, plan.staged) == ("c0", "gx", ("in[(r * 200) + c]",))
    assert d["add_transposed"].generated.tiles.staged == ("B[(c * 160) + r]",)
    assert d["scale_rows"].action == "restructured"         # one direction: no tiles
    assert d["short_transpose"].action != "staged"           # 8 rows: no full tile
    text = result.text
    assert "__shared__ float pc_tile0[32][33];" in text       # padded: no bank conflicts
    assert "__shared__ double pc_tile0[32][33];" in text
    assert "pc_tile0[pc_k][threadIdx.x] = in[" in text
    assert "0.5 * pc_tile0[threadIdx.x][pc_k]" in text


@pytest.mark.parametrize("argv", [(), ("33", "511"), ("1", "1"), ("512", "40")])
def test_staged_kernels_run_like_the_originals(tmp_path, argv):
    """Ragged sizes (not multiples of 32), a single element, and the largest."""
    program, result = _result()
    runs_alike(program.text, result.text, tmp_path, argv=argv)


@pytest.mark.parametrize("defines", [("ROWS=64", "COLS=32"), ("ROWS=97", "COLS=45")])
def test_staged_kernels_at_other_compile_time_sizes(tmp_path, defines):
    from polycoal.frontend.preprocess import PreprocessorOptions
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=defines))
    program = read_program(str(TILES), options.preprocessor)
    result = transform_program(program, options)
    assert {d.kernel: d.action for d in result.decisions}["transpose_scale"] == "staged"
    head = "".join(f"#define {d.replace('=', ' ')}\n" for d in defines)
    runs_alike(head + program.text, head + result.text, tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_staged_kernels_compile(tmp_path):
    _, result = _result()
    (tmp_path / "out.cu").write_text(result.text)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(tmp_path / "out.cu"), "-o",
                        str(tmp_path / "out.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def _plan(write_cu, body: str, bound: str = "N"):
    source = ("#define N 256\n__global__ void k(float *out, const float *in, float *A)\n{\n"
              "  int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
              f"  if (c < N)\n    for (int r = 0; r < {bound}; r++)\n      {body}\n}}\n"
              "int main() { float *a, *b, *x; k<<<1, 256>>>(a, b, x); }\n")
    analysis = first_kernel_analysis(write_cu(source))
    return staging_plan(analysis.model, analysis)


@pytest.mark.parametrize("body,why", [
    ("A[c * N + r] = A[r * N + c];", "depend"),              # in place: dependences
    ("out[c * N + r] = in[r * N + 2 * c];", "steps"),        # steps of 2 along c
    ("out[c * N + r] = in[r * N + c] + out[r * N + c];", "depend"),
    ("out[r * N + c] = in[r * N + c];", "no read runs across"),   # one direction
    ("out[c * N + r] = in[c];", "no read runs across"),     # a broadcast along r
])
def test_what_is_not_staged(write_cu, body, why):
    plan = _plan(write_cu, body)
    assert not isinstance(plan, StagingPlan) and why in plan.text, plan


def test_a_triangle_is_not_staged(write_cu):
    plan = _plan(write_cu, "out[c * N + r] = in[r * N + c];", bound="c")
    assert not isinstance(plan, StagingPlan) and "rectangle" in plan.text


def test_a_loop_of_one_trip_for_some_parameters_is_not_staged(write_cu, tmp_path):
    """`for (l = lo; l < 1; l++)` around the statement: one trip (l = 0) where lo = 0,
    none where lo > 0 (the model's context, from C[l] within its one element): the
    tiles would run it at l = 0 whatever lo (the random tester's bounds-9311, lo = 3).
    Not staged; the program runs as the original does."""
    source = write_cu("""\
#include <cstdio>
#include <cstdlib>
#define NI 32
#define NJ 64
__global__ void scale(int lo, float *res, const float *C, const float *B)
{
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < NI && j < NJ)
    for (int l = lo; l < 1; l++)
      res[i * NJ + j] = 0.5f * C[l] - B[j * NI + i] + res[i * NJ + j];
}
int main(int argc, char **argv)
{
  static float h[NI * NJ];
  for (int k = 0; k < NI * NJ; k++) h[k] = (float)(k % 7) - 2.0f;
  float *res, *C, *B;
  cudaMalloc(&res, sizeof h); cudaMalloc(&C, sizeof h); cudaMalloc(&B, sizeof h);
  cudaMemcpy(res, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemcpy(C, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemcpy(B, h, sizeof h, cudaMemcpyHostToDevice);
  scale<<<dim3(NI, (NJ + 31) / 32), dim3(1, 32)>>>(atoi(argc > 1 ? argv[1] : "3"), res, C, B);
  cudaMemcpy(h, res, sizeof h, cudaMemcpyDeviceToHost);
  double s = 0;
  for (int k = 0; k < NI * NJ; k++) s += h[k] * (k % 5 + 1);
  printf("%.3f\\n", s);
  return 0;
}
""")
    analysis = first_kernel_analysis(source)
    plan = staging_plan(analysis.model, analysis)
    assert not isinstance(plan, StagingPlan) and "some values of a parameter" in plan.text
    program = read_program(str(source))
    result = transform_program(program, TransformOptions(model=False))
    for argv in ((), ("0",)):
        runs_alike(program.text, result.text, tmp_path, argv=argv)


def test_the_validator_rejects_tiles_that_are_not_the_plan():
    """The staged kernel is emitted only when the plan, made again from the original's
    model, is the one it carries out."""
    from dataclasses import replace

    from polycoal.transform import _staging
    program, result = _result()
    d = next(x for x in result.decisions if x.kernel == "transpose_scale")
    assert _staging(program, None, d) == []
    wrong = replace(d, generated=replace(d.generated, tiles=replace(
        d.generated.tiles, x="gx", y="c0")))
    assert _staging(program, None, wrong) == ["the generated tiles differ from the plan"]


GEOMETRY = FIXTURES / "staged_geometry.cu"


@pytest.mark.parametrize("argv", [("3",), ("1",), ("9",)])
def test_a_range_set_by_the_launch_is_passed_to_the_tiles(tmp_path, argv):
    """The grid is clamped on one path only: its value is unknown (taking the clamp's
    value ran 320 columns where the original ran 192), the rectangle is bounded by the
    launch's thread count, passed as an extra argument."""
    program, result = _result(GEOMETRY)
    d = result.decisions[0]
    assert d.action == "staged" and d.generated.hidden == ["nthreads_x"]
    assert "long long pc_nthreads_x)" in result.text
    runs_alike(program.text, result.text, tmp_path, argv=argv)


def test_no_staging_leaves_the_transpose_to_the_orders(capsys):
    """Without tiles, the 200-thread transpose only gets its loop on threads too (one
    side stays uncoalesced)."""
    from polycoal.cli import main
    assert main(["transform", str(TILES), "-o", "-", "--no-staging"]) == 0
    out, err = capsys.readouterr()
    assert "pc_tile0" not in out and "[staged]" not in err
    assert "kernel 'transpose_scale' restructured" in err
