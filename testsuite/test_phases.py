"""Column kernels in phases (issue 14, item 2: a loop carrying a reduction beside other
statements, gramschmidt's third kernel): a block per 32 columns whose rows split each
reduction and parallel loop in turn, row 0 running the rest (optimize/phases.py). Every
kernel is run on the CPU against the original; the plan's legality conditions each have
a shape that fails them."""

from __future__ import annotations


import pytest

from conftest import FIXTURES
from polycoal.decisions import TransformOptions
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.phases import plan_phases
from polycoal.transform import transform_program
from polycoal.validate.cpu import validate_cpu

PROGRAM = FIXTURES / "column_phases.cu"
SMALL = ("ROWS=300", "COLS=70")          # 70 columns: the last tile of 32 is ragged


def _transformed(path=PROGRAM, defines=SMALL, text=None, reduction="auto"):
    options = TransformOptions(reduction=reduction,
                               preprocessor=PreprocessorOptions(defines=tuple(defines)))
    program = read_program(str(path), options.preprocessor, text=text)
    result = transform_program(program, options)
    return program, result, options, {d.kernel: d for d in result.decisions}


def _kernel_text(d) -> str:
    return d.generated.text


def test_each_kernel_gets_the_phases_its_dependences_allow():
    _, result, _, d = _transformed(defines=())
    assert not [x for x in result.diagnostics if x.severity == "error"]
    for name in ("col_normalize", "col_center", "col_sum_and_copy", "col_scaled_squares"):
        assert d[name].action == "columns", (name, d[name].reason)
        assert d[name].generated.block == (32, 32, 1)
    kinds = {k: sorted(set(d[k].generated.phases.values())) for k in d if d[k].generated}
    assert kinds["col_normalize"] == ["parallel", "reduce", "row0"]
    # the single loop is distributed: the copy first (textual order), then the sum
    assert "distributed into its reduction and the rest" in d["col_sum_and_copy"].reason
    assert d["col_sum_and_copy"].reason.index("the loop 'i'") < \
        d["col_sum_and_copy"].reason.index("the reduction loop 'i'")
    # the private norm reaches every row through shared memory; the scratch scalar t
    # (written before it is read in each iteration) is not handed over
    assert "pc_row0_nrm[threadIdx.x] = nrm" in _kernel_text(d["col_normalize"])
    assert "pc_row0_t" not in _kernel_text(d["col_scaled_squares"])
    # `last` leaves its loop, which no row of threads could split: run on one row it
    # would be slower than as written (0.42x measured at 32768 columns), so kept
    assert d["col_last"].action == "unchanged"
    assert "the loop 'i' (line 84) cannot be split" in d["col_last"].reason
    # a running sum is no reduction of its loop: kept as written
    assert d["col_prefix"].action == "unchanged"


def test_phases_run_like_the_original_on_the_cpu():
    program, result, options, d = _transformed()
    assert sum(x.action == "columns" for x in d.values()) == 4
    verdicts = validate_cpu(program, result, options, {}, seed=11)
    assert len(verdicts) == 6 and all(v.ok for v in verdicts), \
        [v.message for v in verdicts if not v.ok]


SHAPES = """\
#define R 600
#define C 64
__global__ void k(const float *a, float *b, float *out)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < C) {
    float s = 0.0f;
    for (int i = 0; i < R - 1; i++) {
      BODY
    }
    out[j] = s;
  }
}
void run(void) {
  float *a, *b, *out;
  cudaMalloc(&a, R * C * sizeof(float)); cudaMalloc(&b, R * C * sizeof(float));
  cudaMalloc(&out, C * sizeof(float));
  k<<<1, 64>>>(a, b, out);
}
"""


@pytest.mark.parametrize("body,action,order", [
    # the store feeds the sum of the next iteration: the store's loop must run first
    ("s += b[i * C + j]; b[(i + 1) * C + j] = a[i * C + j];", "columns",
     ["parallel", "reduce"]),
    # the sum reads what the store of the same iteration wrote: textual order works
    ("b[i * C + j] = 2.0f * a[i * C + j]; s += b[i * C + j];", "columns",
     ["parallel", "reduce"]),
    # the rest carries a dependence of its own: no phase splits it, nothing to gain
    ("s += a[i * C + j]; b[(i + 1) * C + j] = b[i * C + j] + 1.0f;", "unchanged", None),
    # the store reads the partial sum: not distributable either way
    ("s += a[i * C + j]; b[i * C + j] = s;", "unchanged", None),
])
def test_distribution_follows_the_dependences(tmp_path, body, action, order):
    text = SHAPES.replace("BODY", body)
    path = tmp_path / "shape.cu"
    path.write_text(text)
    program, result, options, d = _transformed(path, (), text)
    assert d["k"].action == action, d["k"].reason
    if order:
        plan = plan_phases(d["k"].analysis.model, d["k"].analysis)
        assert [p.kind for p in plan.phases if p.kind != "row0"] == order
        (verdict,) = validate_cpu(program, result, options, {}, seed=3)
        assert verdict.ok, verdict.message
    else:
        assert result.text == program.text


def test_short_loops_are_kept_unless_the_block_form_is_asked_for():
    _, _, _, d = _transformed(defines=("ROWS=40", "COLS=70"))
    assert d["col_center"].action == "unchanged"
    assert "too short" in d["col_center"].reason
    _, _, _, d = _transformed(defines=("ROWS=40", "COLS=70"), reduction="block")
    assert d["col_center"].action == "columns"


def test_the_validator_rejects_phases_the_plan_does_not_make():
    from dataclasses import replace

    from polycoal.transform import _phases
    program, _, _, d = _transformed()
    good = d["col_center"]
    assert _phases(program, None, good) == []
    wrong = dict(good.generated.phases)
    wrong[next(n for n, k in wrong.items() if k == "row0")] = "parallel"
    bad = replace(good, generated=replace(good.generated, phases=wrong))
    assert _phases(program, None, bad) == ["the generated phases differ from the plan's"]
