"""The empirical search of `polycoal transform`: candidate geometries traced on the CPU,
the fewest sectors beyond ideal chosen (polycoal/dynamic/empirical.py), emitted and
validated like any permuted kernel."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import FIXTURES
from polycoal.cli import main
from polycoal.dynamic.empirical import Figures, candidate_sources, choose
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.permutation import solve_permutation
from polycoal.transform import TransformOptions, transform_program
from polycoal.validate.cpu import validate_cpu

EMPIRICAL = FIXTURES / "empirical.cu"
SMALL = ("N=64", "K=8")
IDENTITY = {"x": "x", "y": "y", "z": "z"}
SWAP_XY = {"x": "y", "y": "x", "z": "z"}
_results: dict = {}


def transformed(kernel=None, empirical=True, arguments=(), path=EMPIRICAL, defines=SMALL):
    key = (str(path), kernel, empirical, arguments, defines)
    if key not in _results:
        options = TransformOptions(kernel=kernel, empirical=empirical, arguments=arguments,
                                   preprocessor=PreprocessorOptions(defines=defines))
        program = read_program(str(path), options.preprocessor)
        _results[key] = (program, transform_program(program, options), options)
    return _results[key]


def decision(result, kernel):
    return next(d for d in result.decisions if d.kernel == kernel)


# --- candidates and the choice (plain data) ---------------------------------------------

@pytest.mark.parametrize("block,grid,expected", [
    ((16, 16, 1), (4, 4, 1), [IDENTITY, SWAP_XY]),
    ((256, 1, 1), (16, 1, 1), [IDENTITY]),                 # y and z one thread wide
    ((1, 256, 1), (1, 16, 1), [IDENTITY, SWAP_XY]),        # the kernel as it is first
    # z as x: swapping x and z would put 128 threads on z (at most 64): rotate instead
    ((128, 4, 2), (1, 1, 1), [IDENTITY, SWAP_XY, {"x": "z", "y": "x", "z": "y"}]),
])
def test_candidates_are_each_axis_as_x_within_the_limits(block, grid, expected):
    assert candidate_sources([block], [grid]) == expected


def test_the_fewest_sectors_beyond_ideal_win_and_ties_keep_the_identity():
    identity, swap = Figures(IDENTITY, 100, 10, 50), Figures(SWAP_XY, 100, 90, 12)
    assert choose([identity, swap]).best is swap          # fewer sectors wasted, although
    assert choose([identity, Figures(SWAP_XY, 100, 0, 50)]).best is identity   # more
    assert choose([identity, Figures(SWAP_XY, 100, 0, 51)]).best is identity   # uncoalesced
    broken = Figures(SWAP_XY, error="no value for int argument(s) n")
    assert choose([identity, broken]).best is identity
    assert "not traced (no value" in choose([identity, broken]).describe()


# --- the fixture: a geometry only the trace finds -----------------------------------------

def test_the_trace_finds_the_geometry_the_static_ilp_misses():
    program, result, _ = transformed()
    d = decision(result, "gather_rows")
    launches = program.launches_of("gather_rows")
    static = solve_permutation(d.analysis.global_references,
                               [l.block_shape for l in launches], [l.grid_shape for l in launches])
    assert static.is_identity                     # the ILP keeps x = i ...
    assert d.action == "permuted", d.reason       # ... the trace moves j to x
    assert d.permutation.source == SWAP_XY and "chosen by tracing" in d.reason
    identity, swap = d.empirical.candidates
    assert identity.source == IDENTITY and swap.source == SWAP_XY
    assert swap.excess < identity.excess and d.empirical.best is swap
    assert identity.requests == swap.requests > 0  # the same threads traced in both
    note = next(x for x in result.diagnostics
                if x.code == "empirical" and x.kernel == "gather_rows")
    assert str(note).startswith(f"{EMPIRICAL}:25:1: note: kernel 'gather_rows': thread "
                                "geometry chosen by tracing")
    assert "identity: " in note.message and "x <- y, y <- x: " in note.message


def test_the_permuted_launch_reads_back_with_its_geometry():
    program, result, options = transformed()
    new = read_program(program.path, options.preprocessor, text=result.text)
    (launch,) = new.launches_of("gather_rows")
    assert launch.grid_shape == (4, 4, 1) and launch.block_shape == (16, 16, 1)
    assert "threadIdx.x" in new.kernel("gather_rows").expanded.split("int j")[1]


def test_the_chosen_kernel_runs_like_the_original():
    program, result, options = transformed()
    verdicts = {v.kernel: v for v in validate_cpu(program, result, options, {}, seed=5)}
    assert verdicts["gather_rows"].ok, verdicts["gather_rows"].message
    assert {a.name for a in verdicts["gather_rows"].arrays} == {"out", "A", "row", "v"}
    assert all(a.rel_l2 == 0.0 for a in verdicts["gather_rows"].arrays)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_emitted_program_compiles(tmp_path):
    _, result, _ = transformed()
    out = tmp_path / "empirical_out.cu"
    out.write_text(result.text)
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out), "-o", str(out) + ".o",
                           f"-I{FIXTURES}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_no_better_candidate_leaves_the_text_byte_identical():
    program, result, _ = transformed(kernel="gather_cols")
    (d,) = result.decisions
    assert d.action == "unchanged" and d.empirical.best.is_identity
    identity, swap = d.empirical.candidates
    assert identity.excess <= swap.excess
    assert result.text == program.text


def test_an_untraceable_candidate_keeps_the_static_choice(write_cu):
    path = write_cu(UNKNOWN_ARGUMENT, "unknown_argument.cu")
    _, result, _ = transformed(path=path, defines=())
    (d,) = result.decisions
    assert "could not trace" in d.reason and "int argument(s) n" in d.reason, d.reason
    assert "chosen by tracing" not in d.reason
    # the static choice: the ILP's permutation, which the whole block's price refuses
    # (P's and out's reads, coalesced along x, would be strided; A's is unknown)
    _, static, _ = transformed(path=path, defines=(), empirical=False)
    (s,) = static.decisions
    assert (d.action, d.code) == (s.action, s.code) == ("unchanged", "small-gain"), s.reason
    assert d.permutation.ilp and not d.permutation.is_identity
    note = next(x for x in result.diagnostics if x.code == "empirical")
    assert "could not trace every candidate; the static choice is kept" in note.message
    _, result, _ = transformed(path=path, defines=(), arguments=(("n", 64),))
    (d,) = result.decisions
    assert d.action == "permuted" and "chosen by tracing" in d.reason, d.reason
    assert not d.permutation.ilp


UNKNOWN_ARGUMENT = """\
__global__ void pick(float *__restrict__ out, const float *__restrict__ A,
                     const int *__restrict__ P, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  float s = 0.0f;
  if (i < n && j < n) {
    for (int k = 0; k < 4; k++)
      s += A[(P[k * 64 + i] % 64) * 64 + j];
    out[j * 64 + i] = s;
  }
}
void run(float *o, float *a, int *p, int n)
{
  pick<<<dim3(4, 4), dim3(16, 16)>>>(o, a, p, n);
}
"""


# --- the command line --------------------------------------------------------------------

def test_transform_empirical_command(tmp_path, capsys):
    out = tmp_path / "out.cu"
    status = main(["transform", str(EMPIRICAL), "-D", "N=64", "-D", "K=8", "--empirical",
                   "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err
    text = out.read_text()
    assert "thread axes permuted (x <- y, y <- x); was gather_rows" in text
    assert "gather_cols<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(out, A, row);" in text
    assert f"{EMPIRICAL}:25:1: note: kernel 'gather_rows': thread geometry chosen by " \
           "tracing each candidate on the CPU" in err
    assert f"{EMPIRICAL}:36:1: note: kernel 'gather_cols': thread geometry chosen by " \
           "tracing each candidate on the CPU" in err and ": identity (" in err
    assert err.count("[empirical]") == 2


def test_validate_cpu_passes_on_the_empirical_choice(capsys):
    status = main(["validate", "--cpu", str(EMPIRICAL), "-D", "N=64", "-D", "K=8",
                   "--empirical", "--seed", "3"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "gather_rows                  PASS  outputs match" in out


def test_json_report_lists_the_candidates(capsys):
    assert main(["transform", str(EMPIRICAL), "-D", "N=64", "--kernel", "gather_cols",
                 "--empirical", "--report", "json", "-o", "-"]) == 0
    captured = capsys.readouterr()
    (kernel,) = json.loads(captured.err)["kernels"]
    assert kernel["action"] == "unchanged"
    identity, swap = kernel["empirical"]
    assert identity["source"] == IDENTITY and swap["source"] == SWAP_XY
    assert identity["excess"] < swap["excess"] and identity["error"] is None
    assert captured.out == EMPIRICAL.read_text()


def test_transform_traces_only_when_asked(tmp_path, capsys):
    """Tracing compiles and runs the user's code: `transform` (and a build) does it only
    with --empirical; --no-empirical is accepted and changes nothing."""
    from polycoal.options import transform_options_from
    assert not TransformOptions().empirical and not TransformOptions().empirical_fallback
    out = tmp_path / "out.cu"
    for extra in ([], ["--no-empirical"]):
        assert main(["transform", str(EMPIRICAL), "-D", "N=64", "-D", "K=8", "-o", str(out),
                     *extra]) == 0
        err = capsys.readouterr().err
        assert "[empirical]" not in err and "chosen by tracing" not in err
        assert "permuted (x <- y" not in out.read_text()
    built = transform_options_from([], PreprocessorOptions())
    assert not built.empirical and not built.empirical_fallback
    assert transform_options_from(["--empirical"], PreprocessorOptions()).empirical


def test_the_fallback_traces_where_the_static_model_cannot_tell():
    """The API's empirical_fallback: the search runs for a kernel whose strides the
    static model does not know (gather_rows), and only for it."""
    options = TransformOptions(empirical_fallback=True,
                               preprocessor=PreprocessorOptions(defines=SMALL))
    program = read_program(str(EMPIRICAL), options.preprocessor)
    d = decision(transform_program(program, options), "gather_rows")
    assert d.empirical is not None and d.action == "permuted"
    assert "chosen by tracing" in d.reason
