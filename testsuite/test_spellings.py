"""Reductions and loops as people spell them (issue 12), and golden outputs.

testsuite/fixtures/spellings/*.cu hold one kernel per spelling. For every fixture and
transform option the output program and the diagnostics are compared exactly with
testsuite/golden/<fixture>.<option>.cu and .txt (PPCG's `.expected` style: a change in
generated code shows in review). After a deliberate change, regenerate them with
`POLYCOAL_UPDATE_GOLDEN=1 python -m pytest testsuite/test_spellings.py` and read the diff.
The outputs are also compiled with nvcc and run on the CPU against the original.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import TransformOptions, transform_program
from polycoal.validate.cpu import validate_cpu

from conftest import FIXTURES, REPO

SPELLINGS = FIXTURES / "spellings"
GOLDEN = Path(__file__).resolve().parent / "golden"
# the spellings are the subject: each form as the passes propose it (the fixtures are
# small, and the performance model keeps a few of them: testsuite/test_performance_model)
OPTIONS = {
    "default": TransformOptions(model=False),
    "warp": TransformOptions(reduction="warp", model=False),
    "split": TransformOptions(reduction="split", model=False),
    "block": TransformOptions(reduction="block", model=False),
    "tiles": TransformOptions(reduction="tiles", model=False),
    "none": TransformOptions(reduction="none", model=False),
    "no-promotion": TransformOptions(promote=False, model=False),
}
FIXTURE_FILES = sorted(p.stem for p in SPELLINGS.glob("*.cu"))

# what each kernel must become with the default options (and the forms that must apply)
EXPECTED = {
    "rows": {"private_sum": "reduced", "minus_assign": "reduced", "step_two": "reduced",
             "step_three_from_one": "reduced", "accumulator_on_the_right": "reduced",
             "subtract_spelled_out": "reduced", "divide_assign": "unchanged",
             "float_product": "unchanged", "int_product": "reduced",
             "min_by_fminf": "unchanged", "max_by_ternary": "unchanged",
             "double_private": "reduced", "count_increments": "unchanged"},
    "columns": {"minus_assign": "split", "accumulator_on_the_right": "split",
                "step_three": "unchanged", "guard_idles_threads": "unchanged",
                "guarded_sum": "split", "private_accumulator": "columns",
                "even_columns": "unchanged"},
}


def _transform(stem: str, option: str):
    path = SPELLINGS / f"{stem}.cu"
    program = read_program(str(path.relative_to(REPO)) if path.is_relative_to(REPO)
                           else str(path), PreprocessorOptions())
    return program, transform_program(program, OPTIONS[option])


def _golden(stem: str, option: str, suffix: str, actual: str) -> None:
    path = GOLDEN / f"{stem}.{option}.{suffix}"
    if os.environ.get("POLYCOAL_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
    assert path.exists(), f"no golden file {path}: run with POLYCOAL_UPDATE_GOLDEN=1"
    assert actual == path.read_text(), f"{path.name} differs from the generated output"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    monkeypatch.chdir(REPO)     # diagnostics name the fixture relative to the repository


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("stem", FIXTURE_FILES)
def test_golden_output_and_diagnostics(stem, option):
    _, result = _transform(stem, option)
    _golden(stem, option, "cu", result.text)
    _golden(stem, option, "txt", "".join(f"{d}\n" for d in result.diagnostics))


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_default_decisions(stem):
    _, result = _transform(stem, "default")
    assert {d.kernel: d.action for d in result.decisions} == EXPECTED[stem]
    assert not [d for d in result.diagnostics if d.severity == "error"]


@pytest.mark.parametrize("stem,option", [("rows", "default"), ("rows", "tiles"),
                                         ("columns", "default"), ("columns", "block")])
def test_outputs_run_like_the_original_on_the_cpu(stem, option):
    program, result = _transform(stem, option)
    verdicts = validate_cpu(program, result, OPTIONS[option], {}, seed=11)
    bad = [f"{v.kernel}: {v.message}" for v in verdicts if not v.ok]
    assert not bad
    assert any(v.message == "outputs match" for v in verdicts)


@pytest.mark.parametrize("stem", FIXTURE_FILES)
def test_outputs_compile(stem, nvcc, tmp_path):
    texts = {_transform(stem, option)[1].text for option in OPTIONS}
    for k, text in enumerate(sorted(texts)):
        out = tmp_path / f"{stem}_{k}.cu"
        out.write_text(text)
        run = subprocess.run([nvcc, "-arch=sm_90", "-c", str(out), "-o", str(out) + ".o"],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr


def test_divisions_and_float_products_are_not_reassociated():
    _, result = _transform("rows", "warp")
    by_kernel = {d.kernel: d for d in result.decisions}
    for name in ("divide_assign", "float_product"):
        assert by_kernel[name].action == "unchanged"
        assert "cannot be combined in another order" in by_kernel[name].reason


def test_step_loops_stride_over_the_lanes():
    """The warp form of `for (j = 1; j < M; j += 3)` runs j = 1 + 3 (lane + 32 k)."""
    _, result = _transform("rows", "default")
    assert "(1) + pc_lane * 3; (pc_i1 <= 69); pc_i1 += 96)" in result.text


def test_promotion_is_guarded_by_the_loop_running(write_cu):
    """A promoted accumulator is loaded and stored only when its loop runs: the original
    touches C[(i - 4) * NJ + j] only for i >= 4."""
    path = write_cu("""
#define NI 40
#define NJ 33
__global__ void k(const float *__restrict__ A, float *__restrict__ C)
{
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < NI && j < NJ)
    for (int k = 0; k < i - 3; k++) C[(i - 4) * NJ + j] += A[k * NJ + j] * 2.0f;
}
int main() { float *A, *C; cudaMalloc(&A, 4 * NI * NJ); cudaMalloc(&C, 4 * NI * NJ);
  k<<<dim3(2, 5), dim3(32, 8)>>>(A, C); return 0; }
""")
    program = read_program(str(path), PreprocessorOptions())
    result = transform_program(program, TransformOptions())
    assert result.decisions[0].action == "restructured"
    body = result.text[result.text.index("pc_acc ="):]
    # the loop's condition at its first iteration guards the load and the store
    assert result.text.index("if ((pc_i1 < (pc_y - 3)))") < result.text.index("pc_acc =")
    assert "C[(33 * pc_y + pc_x - 132)] = pc_acc;" in body
    (verdict,) = validate_cpu(program, result, TransformOptions(), {}, seed=2)
    assert verdict.ok, verdict.message


def test_a_product_of_parameters_in_a_subscript_is_outside_the_model(write_cu):
    path = write_cu("""
__global__ void k(float *__restrict__ a, const float *__restrict__ b, int nx, int ny, int nz,
                  int px)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nx) a[nx * ny * nz + px + i] = b[i];
}
int main() { float *a, *b; cudaMalloc(&a, 4000); cudaMalloc(&b, 4000);
  k<<<4, 256>>>(a, b, 100, 2, 2, 3); return 0; }
""")
    program = read_program(str(path), PreprocessorOptions())
    (d,) = transform_program(program, TransformOptions()).decisions
    assert d.action == "unchanged" and "non-affine subscript" in d.reason


def test_reasons_are_true_of_the_references():
    """"already coalesced" only where analyze finds no uncoalesced reference."""
    _, result = _transform("rows", "none")
    by_kernel = {d.kernel: d for d in result.decisions}
    assert "already coalesced" not in by_kernel["private_sum"].reason
    assert "uncoalesced reference" in by_kernel["private_sum"].reason
    _, result = _transform("columns", "none")
    assert result.decisions[0].reason.startswith("already coalesced")


def test_golden_files_cover_every_fixture_and_option():
    expected = {f"{s}.{o}.{x}" for s in FIXTURE_FILES for o in OPTIONS for x in ("cu", "txt")}
    assert expected <= {p.name for p in GOLDEN.iterdir()}


def test_lane_split_check_accepts_the_emitted_splits_and_rejects_wrong_ones():
    from polycoal.codegen.kernel import LaneSplit
    from polycoal.validate.lanes import lane_split_problems
    _, result = _transform("rows", "default")
    splits = [s for d in result.decisions if d.generated for s in d.generated.lane_splits]
    assert {s.lane_step for s in splits} == {1, 2, 3}
    assert all(lane_split_problems(s) == [] for s in splits)
    # the landed main's miscompile: a loop of step 2 split as if its step were 1
    forgot_step = LaneSplit("c", "0", "c <= 69", "2", 32, 1, 32)
    assert lane_split_problems(forgot_step) == [
        "loop c: the lanes do not run the loop's iterations"]
    overlapping = LaneSplit("c", "0", "c <= 69", "1", 32, 1, 16)
    assert "an iteration runs on more than one lane" in lane_split_problems(overlapping)[0]
