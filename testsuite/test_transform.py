"""The transformation: decisions, generated code, launch rewriting, both equivalence
checks (isl translation validation and CPU execution), and `polycoal transform`.

These run with the tiled forms off (TransformOptions(staging=False)): they exercise the
restructuring, the reductions and their validators on the PolyBench kernels, which the
tiles would otherwise take (test_products.py and test_staging.py test those)."""

from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import FIXTURES, POLYBENCH, polybench_programs
from polycoal.analysis import analyze_kernel
from polycoal.codegen.column import split_shape
from polycoal.cli import main
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.model.extract import extract_model
from polycoal.optimize import ilp
from polycoal.transform import TransformOptions, transform_program
from polycoal.validate.cpu import validate_cpu, validate_kernel_cpu
from polycoal.validate.translation import validate_translation

CASES = FIXTURES / "transform_cases.cu"
SMALL_CASES = ("ROWS=64", "COLS=32")
_results: dict = {}


def transformed(path: Path, defines=(), promote=True, kernel=None):
    key = (str(path), tuple(defines), promote, kernel)
    if key not in _results:
        # the fixtures' sizes are small: the passes' forms are tested as proposed, with
        # the performance model only reporting (testsuite/test_performance_model.py);
        # the kernel passes alone (the placement pass: test_placement.py; host loops:
        # test_launch_waits.py)
        options = TransformOptions(kernel=kernel, promote=promote, staging=False, window=False,
                                   model=False, launch_waits=False, launch_trips=False,
                                   placement="none",
                                   preprocessor=PreprocessorOptions(defines=tuple(defines)))
        program = read_program(str(path), options.preprocessor)
        _results[key] = (program, transform_program(program, options), options)
    return _results[key]


def decision(path: Path, kernel: str, defines=()):
    _, result, _ = transformed(path, defines)
    return next(d for d in result.decisions if d.kernel == kernel)


def loop_name(d, dim: str) -> str:
    """The C name of a model dimension: a loop's variable, or the thread dim itself."""
    model = d.analysis.model
    if dim.startswith("c"):
        k = int(dim[1:])
        return next(s.loops[k].source_name for s in model.statements if len(s.loops) > k)
    return dim


def test_the_solver_installs_from_pypi():
    assert type(ilp.solver()).__name__ == "HiGHS"


@pytest.mark.parametrize("program,kernel", [("covariance", "covar_kernel"),
                                            ("correlation", "corr_kernel")])
def test_covariance_and_correlation_get_j2_as_x(program, kernel):
    d = decision(POLYBENCH / program / f"{program}.cu", kernel)
    assert d.action == "restructured"
    assert loop_name(d, d.mapping.axes[0]) == "j2"
    assert d.mapping.axes[1] == "gx"                 # the old thread (j1) becomes y
    assert [loop_name(d, s) for s in d.mapping.sequential] == ["i"]
    assert "pc_x" in d.generated.text and "blockIdx.y" in d.generated.text


@pytest.mark.parametrize("kernel,x,y", [("row_fill", "i", "gx"), ("wrong_axis", "gy", "gx"),
                                        ("wrong_axis3", "gz", "gx")])
def test_wrong_axis_kernels_are_restructured(kernel, x, y):
    d = decision(CASES, kernel)
    assert d.action == "restructured", d.reason
    assert loop_name(d, d.mapping.axes[0]) == x
    assert d.mapping.axes[1] == y


@pytest.mark.parametrize("kernel", ["masked", "tiled"])
def test_kernels_outside_the_model_get_their_axes_permuted(kernel):
    d = decision(CASES, kernel)
    assert d.action == "permuted", d.reason
    assert d.permutation.source["x"] == "y" and d.permutation.source["y"] == "x"
    program, result, _ = transformed(CASES)
    assert "threadIdx.y" in result.text and "pc_grid0.y, pc_grid0.x, pc_grid0.z" in result.text


def test_already_coalesced_kernel_keeps_its_geometry():
    d = decision(CASES, "coalesced")
    assert d.action == "unchanged" and "already coalesced" in d.reason


@pytest.mark.parametrize("program", [p.parent.name for p in polybench_programs()])
def test_polybench_decisions(program):
    """covariance and correlation restructure, the row reductions of bicg, gesummv and
    gemver get one warp per row, ATAX's copies run as one, ADI's row sweeps are staged;
    column reductions and racy kernels are left with the reason; every other program's
    text comes back byte-identical."""
    path = POLYBENCH / program / f"{program}.cu"
    prog, result, _ = transformed(path)
    assert not [x for x in result.diagnostics if x.severity == "error"]
    changed = {d.kernel: d.action for d in result.decisions if d.action != "unchanged"}
    expected = {"covariance": {"covar_kernel": "restructured", "mean_kernel": "split"},
                # std_kernel's clamp under a condition on data after its column sum
                "correlation": {"corr_kernel": "restructured", "mean_kernel": "split",
                                "std_kernel": "split"},
                "bicg": {"bicg_kernel1": "split", "bicg_kernel2": "reduced"},
                # its copies along y run as one (each zeroes what it adds to)
                "atax": {"atax_kernel1": "reduced", "atax_kernel2": "split"},
                "gesummv": {"gesummv_kernel": "reduced"},
                "gemver": {"gemver_kernel2": "split", "gemver_kernel3": "reduced"},
                "gramschmidt": {"gramschmidt_kernel1": "reduced",
                                "gramschmidt_kernel3": "columns"},
                # its row sweeps on shared-memory tiles (test_sweep.py: the first form
                # proposed, the model off; with it, the backward sweep runs across a
                # warp's lanes, test_vector_sweep.py)
                "adi": {"adi_kernel1": "swept", "adi_kernel3": "swept"}}
    assert changed == expected.get(program, {})
    if not changed:
        assert result.text == prog.text
    for d in result.decisions:
        if d.analysis and d.analysis.races:
            assert "race" in d.reason


def test_racy_kernels_are_left_byte_identical():
    """MVT's copies add to their input (one copy is not what they leave in every
    order): kept, byte-identical."""
    prog, result, _ = transformed(POLYBENCH / "mvt" / "mvt.cu")
    assert all(d.action == "unchanged" and "race" in d.reason for d in result.decisions)
    assert result.text == prog.text


def test_only_kernel_and_launch_text_changes():
    prog, result, _ = transformed(POLYBENCH / "covariance" / "covariance.cu",
                                  kernel="covar_kernel")
    kernel = prog.kernel("covar_kernel")
    (launch,) = prog.launches_of("covar_kernel")
    before, after = prog.text, result.text
    assert after.startswith(before[:kernel.span.start])
    assert after.endswith(before[launch.span.end:])
    middle = before[kernel.span.end:launch.span.start]
    assert middle in after


def _translation_problems(prog, options, d, text):
    """Translation validation of covar_kernel as read back from `text`."""
    program = read_program(prog.path, options.preprocessor, text=text)
    model = extract_model(program.kernel("covar_kernel"), program)
    return validate_translation(d.analysis.model, model, d.generated)


def test_translation_validation_accepts_the_generated_kernel_and_rejects_a_wrong_one():
    prog, result, options = transformed(POLYBENCH / "covariance" / "covariance.cu",
                                        promote=False, kernel="covar_kernel")
    d = next(d for d in result.decisions if d.kernel == "covar_kernel")
    new_program = read_program(prog.path, options.preprocessor, text=result.text)
    new_model = extract_model(new_program.kernel("covar_kernel"), new_program)
    assert validate_translation(d.analysis.model, new_model, d.generated) == []
    # off by one in the triangle guard: instances j2 == j1 are lost
    broken_text = result.text.replace("(pc_x >= pc_y)", "(pc_x > pc_y)", 1)
    assert broken_text != result.text
    problems = _translation_problems(prog, options, d, broken_text)
    assert any("instances" in p for p in problems), problems
    # a swapped subscript: same instances, different memory
    swapped = result.text.replace("symmat[(2048 * pc_x + pc_y)] = ",
                                  "symmat[(pc_x + 2048 * pc_y)] = ", 1)
    assert swapped != result.text
    problems = _translation_problems(prog, options, d, swapped)
    assert any("same elements" in p for p in problems), problems


def test_translation_validation_rejects_a_broken_order():
    """Moving the symmetric copy before the accumulation breaks a flow dependence."""
    prog, result, options = transformed(POLYBENCH / "covariance" / "covariance.cu",
                                        promote=False, kernel="covar_kernel")
    d = next(d for d in result.decisions if d.kernel == "covar_kernel")
    lines = result.text.split("\n")
    start = next(k for k, l in enumerate(lines) if "polycoal: restructured" in l)
    copy = next(k for k, l in enumerate(lines) if "symmat[(2048 * pc_x + pc_y)] =" in l)
    zero = next(k for k, l in enumerate(lines) if k > start and "= 0.0f;" in l)
    moved = lines[:zero + 1] + [lines[copy]] + lines[zero + 1:copy] + lines[copy + 1:]
    wrong = read_program(prog.path, options.preprocessor, text="\n".join(moved))
    model = extract_model(wrong.kernel("covar_kernel"), wrong)
    d.generated.emitted[:] = ["S0", "S2", "S1"]
    try:
        problems = validate_translation(d.analysis.model, model, d.generated)
    finally:
        d.generated.emitted[:] = ["S0", "S1", "S2"]
    assert any("dependence" in p for p in problems), problems


@pytest.mark.parametrize("path,defines", [
    (POLYBENCH / "bicg" / "bicg.cu", ("NX=1100", "NY=40")),
    (POLYBENCH / "gesummv" / "gesummv.cu", ("N=100",)),
    (POLYBENCH / "gemver" / "gemver.cu", ("N=1030",)),
    (POLYBENCH / "covariance" / "covariance.cu", ("M=40", "N=1100")),
    (POLYBENCH / "correlation" / "correlation.cu", ("M=33", "N=20")),
    (CASES, SMALL_CASES),
    (FIXTURES / "symbolic_linear.cu", ()),
])
def test_cpu_execution_matches(path, defines):
    prog, result, options = transformed(path, defines)
    verdicts = validate_cpu(prog, result, options, {}, seed=7)
    assert verdicts and all(v.ok for v in verdicts), [(v.kernel, v.message) for v in verdicts]
    checked = [v for v in verdicts if v.arrays]
    assert checked, "no kernel was executed"
    for v in checked:
        d = next(d for d in result.decisions if d.kernel == v.kernel)
        # the same operations in the same order give identical results; a reassociated
        # reduction differs by rounding only
        limit = 0.0 if d.action not in ("reduced", "columns", "split") else 1e-5
        assert all(a.elements > 0 and a.rel_l2 <= limit for a in v.arrays)


def test_cpu_execution_detects_a_wrong_kernel():
    prog, result, options = transformed(POLYBENCH / "covariance" / "covariance.cu",
                                        ("M=40", "N=24"))
    d = next(d for d in result.decisions if d.kernel == "covar_kernel")
    wrong_text = result.text.replace("(pc_x >= pc_y)", "(pc_x > pc_y)", 1)
    wrong = read_program(prog.path, options.preprocessor, text=wrong_text)
    verdict = validate_kernel_cpu(prog, wrong, d, {}, seed=11)
    assert not verdict.ok and "symmat" in verdict.message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_transformed_programs_compile(tmp_path):
    jobs = []
    for path in [POLYBENCH / "covariance" / "covariance.cu",
                 POLYBENCH / "correlation" / "correlation.cu", CASES,
                 FIXTURES / "symbolic_linear.cu"]:
        _, result, _ = transformed(path)
        out = tmp_path / f"{path.parent.name}_{path.name}"
        out.write_text(result.text)
        jobs.append((out, path.parent))

    def build(job):
        out, include = job
        return subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out), "-o",
                               str(out) + ".o", f"-I{include}"], capture_output=True, text=True)
    with ThreadPoolExecutor(2) as pool:
        for (out, _), proc in zip(jobs, pool.map(build, jobs)):
            assert proc.returncode == 0, (out.name, proc.stderr[-2000:])


# --- the command line ---------------------------------------------------------------

def test_transform_writes_output_and_leaves_input_alone(tmp_path, capsys):
    src = tmp_path / "cov.cu"
    shutil.copy(POLYBENCH / "covariance" / "covariance.cu", src)
    shutil.copy(POLYBENCH / "covariance" / "covariance.cuh", tmp_path / "covariance.cuh")
    (tmp_path.parent / "common").mkdir(exist_ok=True)
    shutil.copy(POLYBENCH / "common" / "polybench_gpu.h", tmp_path.parent / "common")
    before = src.read_bytes()
    mtime = src.stat().st_mtime_ns
    out = tmp_path / "out.cu"
    assert main(["transform", str(src), "-o", str(out)]) == 0
    assert src.read_bytes() == before and src.stat().st_mtime_ns == mtime
    assert "polycoal: a product in register tiles" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cov.cu", "covariance.cuh", "out.cu"]
    err = capsys.readouterr().err
    assert "covar_kernel' product" in err


def test_transform_to_stdout_and_block_override(capsys):
    assert main(["transform", str(CASES), "--kernel", "wrong_axis", "--block", "64,4",
                 "--no-model"]) == 0
    out = capsys.readouterr().out
    assert "block 64x4x1" in out and "dim3(64, 4, 1)" in out


@pytest.mark.parametrize("argv,status,text", [
    (["transform", "missing.cu"], 2, "no such file"),
    (["transform", str(CASES), "--kernel", "nope"], 2, "kernels: row_fill"),
])
def test_transform_bad_input(argv, status, text, capsys):
    assert main(argv) == status
    assert text in capsys.readouterr().err


def test_transform_rejects_an_impossible_block(capsys):
    with pytest.raises(SystemExit) as e:
        main(["transform", str(CASES), "--block", "64,32"])
    assert e.value.code == 2
    assert "at most 1024 threads" in capsys.readouterr().err


def test_transform_dumps_and_json_report(capsys, tmp_path):
    assert main(["transform", str(CASES), "--kernel", "row_fill",
                 "-o", str(tmp_path / "o.cu"),
                 "--dump-model", "--dump-deps", "--dump-ilp", "--dump-schedule",
                 "--report", "json"]) == 0
    err = capsys.readouterr().err
    assert "domain" in err and "schedule" in err and "minimize" in err
    assert "x <- c0" in err
    report = json.loads(err[err.index("{\n"):])
    (k,) = report["kernels"]
    assert k["action"] == "restructured" and k["axes"] == {"x": "c0", "y": "gx"}


def test_no_polyhedral_leaves_affine_kernels_to_the_permutation(capsys, tmp_path):
    assert main(["transform", str(POLYBENCH / "covariance" / "covariance.cu"),
                 "--no-polyhedral", "-o", str(tmp_path / "o.cu")]) == 0
    assert "covar_kernel' left unchanged" in capsys.readouterr().err


def test_validate_cpu_command(capsys):
    status = main(["validate", "--cpu", str(CASES), "-D", "ROWS=64", "-D", "COLS=32",
                   "--seed", "3"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.count("PASS") == 6 and "outputs match" in out


def test_atomic_kernel_is_permuted_and_runs_on_the_cpu():
    path = FIXTURES / "atomics.cu"
    d = decision(path, "column_histogram", ("ROWS=64", "COLS=32"))
    assert d.action == "permuted" and d.permutation.source["x"] == "y"
    prog, result, options = transformed(path, ("ROWS=64", "COLS=32"))
    (verdict,) = validate_cpu(prog, result, options, {}, seed=5)
    assert verdict.ok, verdict.message
    assert {a.name for a in verdict.arrays} == {"hist", "A"}


ALIASED = """\
#define R 128
#define C 64
__global__ void transpose_copy(float *out, const float *in)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < R && c < C) out[r * C + c] = in[r * C + c];
}
void run(float *p, float *q) { transpose_copy<<<dim3(R / 16, C / 16), dim3(16, 16)>>>(p, q); }
"""


def test_possibly_aliasing_arguments_are_checked_at_run_time(tmp_path, capsys):
    """Pointers from the caller: the transformed copy runs where the launch finds their
    footprints disjoint; --no-runtime-checks keeps the refusal; --assume-no-alias
    transforms without a check."""
    src = tmp_path / "alias.cu"
    src.write_text(ALIASED)
    # 128 x 64 elements: the model keeps it (a 1.01x gain); the checks are the subject
    assert main(["transform", str(src), "-o", str(tmp_path / "out.cu"), "--no-model"]) == 0
    out = (tmp_path / "out.cu").read_text()
    assert "transpose_copy__pc_checked<<<" in out and "} else {" in out
    assert "'out' and 'in' do not overlap" in capsys.readouterr().err
    assert main(["transform", str(src), "-o", str(tmp_path / "out.cu"),
                 "--no-runtime-checks"]) == 0
    assert (tmp_path / "out.cu").read_text() == ALIASED
    assert "may alias" in capsys.readouterr().err
    assert main(["transform", str(src), "-o", str(tmp_path / "out.cu"),
                 "--assume-no-alias", "--no-model"]) == 0
    assert "polycoal: restructured" in (tmp_path / "out.cu").read_text()
    assert "transpose_copy' restructured" in capsys.readouterr().err


def test_accumulators_are_promoted_to_registers():
    """covar's symmat[j1][j2] += ... over i becomes a register accumulator (loaded once,
    stored once); with --no-promotion it stays in global memory."""
    _, result, _ = transformed(POLYBENCH / "covariance" / "covariance.cu")
    kernel = result.text[result.text.index("void covar_kernel"):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "float pc_acc = symmat[" in kernel and "pc_acc += data[" in kernel
    assert "= pc_acc;" in kernel
    _, plain, _ = transformed(POLYBENCH / "covariance" / "covariance.cu", promote=False,
                              kernel="covar_kernel")
    assert "pc_acc" not in plain.text


def test_row_reduction_kernel_shape():
    d = decision(POLYBENCH / "gesummv" / "gesummv.cu", "gesummv_kernel")
    assert d.action == "reduced" and "reassociated" in d.reason
    text = d.generated.text
    assert "__shfl_down_sync" in text and "+= 32" in text and "pc_lane == 0" in text
    prog, result, _ = transformed(POLYBENCH / "gesummv" / "gesummv.cu")
    assert "(pc_extent_x + 7) / 8" in result.text          # 8 rows (warps) per block


def transformed_with(path: Path, reduction: str, defines=()):
    options = TransformOptions(reduction=reduction, collapse_redundant=True, staging=False,
                               preprocessor=PreprocessorOptions(defines=tuple(defines)))
    prog = read_program(str(path), options.preprocessor)
    return prog, transform_program(prog, options), options


def test_column_reduction_block_shape_and_launch():
    """One launch: a block of 32x32 threads per 32 columns, row 0 runs the statement
    before the loop (s[j] = 0) and adds the block's sum after the shared-memory combine."""
    prog, result, _ = transformed_with(POLYBENCH / "bicg" / "bicg.cu", "block")
    d = next(d for d in result.decisions if d.kernel == "bicg_kernel1")
    assert d.action == "columns" and "shared memory" in d.reason
    assert [st.kernel for st in d.generated.stages] == ["bicg_kernel1"]
    text = d.generated.text
    assert text.count("__syncthreads();") == 2 and "atomicAdd" not in text
    assert text.index("s[(pc_x)] = 0.0f;") < text.index("pc_acc0 += r[")
    assert "pc_i1 += 32" in text and "s[(pc_x)] += pc_acc0;" in text
    launch = result.text[result.text.index("polycoal: one block per 32 columns:"):]
    launch = launch[:launch.index("\n  }")]
    assert launch.count(">>>(") == 1 and "dim3(32, 32, 1)" in launch
    assert "(pc_extent_x + 31) / 32" in launch


def test_column_reduction_split_shape_and_launches():
    """The default split of bicg k1 (4096 x 4096): 4 columns per thread, a block of 32x8
    threads over 128 columns; chunks of 128 rows keep the grid at 32 x 32 blocks. Its
    `s[j] = 0` before the loop runs in the block that finishes each column: one launch,
    its grid capped (TARGET_BLOCKS) so that the blocks' sums fit the kernel's buffer.
    With --reduction split on a kernel launched on a stream, three launches."""
    prog, result, _ = transformed(POLYBENCH / "bicg" / "bicg.cu")
    d = next(d for d in result.decisions if d.kernel == "bicg_kernel1")
    assert d.action == "split" and "atomicAdd" not in d.reason and "in one launch" in d.reason
    assert "128 columns x 128 rows per block (4 per thread)" in d.reason
    assert [st.kernel for st in d.generated.stages] == ["bicg_kernel1"]
    launch = result.text[result.text.index("polycoal: column reduction split:"):]
    launch = launch[:launch.index("\n  }")]
    assert launch.count(">>>(") == 1 and "(1024u + pc_blocks_0 - 1u) / pc_blocks_0" in launch
    assert "dim3(32, 8, 1)" in launch and "(pc_extent_x + 127) / 128" in launch
    text = d.generated.text
    assert "pc_acc0[pc_c] += r[(pc_i)] * A[" in text and "atomicAdd(&s" not in text
    assert text.index("s[(pc_x)] = 0.0f;") < text.index("s[(pc_x)] += pc_sum0;")
    assert "static __device__ float bicg_kernel1__pc_sums0[262144];" in text


@pytest.mark.parametrize("columns,rows,shape", [
    (16384, 16384, (512, 8, 4)),      # 128 x 32 blocks
    (4096, 4096, (128, 8, 4)),        # 32 x 32 blocks
    (1, 4096, (64, 8, 1)),            # gramschmidt's single column: short chunks
    (100, 1 << 20, (512, 8, 1)),      # few columns, long loop
    (None, None, (64, 8, 4)),         # sizes known only when running: the launch caps
    (4096, None, (64, 8, 4)),         # the grid (target_blocks)
])
def test_split_shape(columns, rows, shape):
    s = split_shape(columns, rows)
    assert (s.rows, s.groups, s.columns) == shape
    assert s.target_blocks == (1024 if None in (columns, rows) else 0)
    assert split_shape(columns, rows, (256, 4)) == type(s)(256, 4, 1)       # tuning override


COLUMN_SIZES = FIXTURES / "column_sizes.cu"


@pytest.mark.parametrize("target,argv", [(1024, ("300", "1000")), (4, ("300", "1000")),
                                         (4, ("70", "4096")), (4, ("1", "33"))])
def test_a_split_sized_at_run_time_caps_its_grid_on_the_host(tmp_path, monkeypatch,
                                                            target, argv):
    """Rows known only at run time: chunks of 64 rows and a grid capped at about
    `target` blocks by the launch, each block looping over the chunks left (with a
    target of 4 and 8 x 5 chunks, one block row runs all five). The program prints what
    the original prints; the validators' launches cap the grid the same way."""
    from conftest import runs_alike
    from polycoal.codegen import column
    from polycoal.validate.experiment import new_launches
    monkeypatch.setattr(column, "TARGET_BLOCKS", target)
    options = TransformOptions()
    program = read_program(str(COLUMN_SIZES), options.preprocessor)
    result = transform_program(program, options)
    d = result.decisions[0]
    assert d.action == "split" and "64 rows per block" in d.reason
    assert f"({target}u + pc_blocks_0 - 1u) / pc_blocks_0" in result.text
    rows, cols = int(argv[0]), int(argv[1])
    runs = new_launches(d, (16, 1, 1), (256, 1, 1), {"rows": rows, "cols": cols}, {})
    x_blocks, y_chunks = -(-cols // 128), -(-rows // 64)
    assert runs[-1].grid == (x_blocks, min(y_chunks, -(-target // x_blocks)), 1)
    runs_alike(COLUMN_SIZES.read_text(), result.text, tmp_path, argv=argv)


def test_column_shapes_come_from_the_options_object(monkeypatch):
    """The environment's tuning shapes are read once, into TransformOptions, by the
    command line (options.transform_options); code generation reads only the options."""
    from polycoal.cli import _parser
    from polycoal.options import transform_options
    from polycoal.diagnostics import InputError
    args = _parser().parse_args(["transform", "x.cu"])
    env = {"POLYCOAL_SPLIT": "256,4,2", "POLYCOAL_COLUMN_GROUPS": "16"}
    options = transform_options(args, env)
    assert options.split == (256, 4, 2) and options.column_groups == 16
    assert transform_options(args, {}).split is None
    with pytest.raises(InputError):
        transform_options(args, {"POLYCOAL_SPLIT": "256"})
    with pytest.raises(InputError):
        transform_options(args, {"POLYCOAL_COLUMN_GROUPS": "a"})
    monkeypatch.setenv("POLYCOAL_SPLIT", "128,8,1")     # read by the options, not codegen
    d = decision(POLYBENCH / "bicg" / "bicg.cu", "bicg_kernel1", ("NX=4096", "NY=4096"))
    assert d.action == "split" and "128 columns x 128 rows" in d.reason, d.reason


def test_short_column_reductions_are_not_split():
    d = decision(POLYBENCH / "bicg" / "bicg.cu", "bicg_kernel1", ("NX=96", "NY=80"))
    assert d.action == "unchanged" and "too short to split" in d.reason


def test_cpu_check_catches_a_wrong_reduction():
    prog, result, options = transformed(POLYBENCH / "bicg" / "bicg.cu", ("NX=96", "NY=80"))
    d = next(d for d in result.decisions if d.kernel == "bicg_kernel2")
    wrong = read_program(prog.path, options.preprocessor,
                         text=result.text.replace("pc_offset > 0", "pc_offset > 1", 1))
    verdict = validate_kernel_cpu(prog, wrong, d, {}, seed=2)
    assert not verdict.ok and "q" in verdict.message


@pytest.mark.parametrize("program,kernel,action", [
    ("atax", "atax_kernel1", "reduced"), ("atax", "atax_kernel2", "split")])
def test_copies_that_read_only_their_own_writes_collapse_by_default(program, kernel, action):
    """ATAX's 1-D kernels launched with 32 x 8 blocks: the 8 rows of threads are copies
    (they never read threadIdx.y); each copy zeroes its element before adding to it, so
    one copy leaves what the copies leave in lockstep or one after another: one runs,
    the proof in the warning."""
    path = POLYBENCH / program / f"{program}.cu"
    prog = read_program(str(path))
    result = transform_program(prog, TransformOptions())
    d = next(x for x in result.decisions if x.kernel == kernel)
    assert d.action == action and d.collapsed == {"y"} and d.collapse_proof
    warning = next(x for x in result.diagnostics
                   if x.code == "collapsed-copies" and x.kernel == kernel)
    assert "follows the copy's own write of it" in warning.message
    assert "one after another" in warning.message
    kept = transform_program(prog, TransformOptions(collapse_proven=False))
    plain = next(x for x in kept.decisions if x.kernel == kernel)
    assert plain.action == "unchanged" and plain.code == "redundant-copies"
    assert "--keep-redundant-threads" in plain.reason


@pytest.mark.parametrize("program,kernel,action", [
    ("mvt", "mvt_kernel1", "reduced"), ("mvt", "mvt_kernel2", "split")])
def test_copies_that_build_on_their_input_collapse_only_on_request(program, kernel, action):
    """MVT's copies add to x1[i] as they find it: run one after another they would add
    the sum eight times, so one copy's result is not the original's in every order:
    kept, with why, unless --collapse-redundant-threads asks for one copy."""
    path = POLYBENCH / program / f"{program}.cu"
    plain = decision(path, kernel)
    assert plain.action == "unchanged" and plain.code == "redundant-copies"
    assert "--collapse-redundant-threads" in plain.reason
    assert "is read before the copy writes it" in plain.reason
    options = TransformOptions(collapse_redundant=True)
    prog = read_program(str(path))
    result = transform_program(prog, options)
    d = next(x for x in result.decisions if x.kernel == kernel)
    assert d.action == action and d.collapsed == {"y"} and not d.collapse_proof
    assert any(x.code == "collapsed-copies" and x.kernel == kernel and
               "(--collapse-redundant-threads)" in x.message for x in result.diagnostics)


def test_exposed_reads_are_the_reads_before_the_threads_own_write():
    from polycoal.analysis.dependences import exposed_reads
    for program, kernel, exposed in (("atax", "atax_kernel1", []), ("bicg", "bicg_kernel1", []),
                                      ("mvt", "mvt_kernel1", ["x1[i]"]),
                                      ("gesummv", "gesummv_kernel", ["tmp[i]", "y[i]"])):
        path = POLYBENCH / program / f"{program}.cu"
        prog = read_program(str(path), PreprocessorOptions((str(path.parent),)))
        model = analyze_kernel(prog.kernel(kernel), prog, frozenset({"y"})).model
        assert [a.text for _, a in exposed_reads(model)] == exposed, kernel


def test_collapsed_kernels_match_one_copy_on_the_cpu():
    defines = ("NX=1100", "NY=1030")
    options = TransformOptions(
                               preprocessor=PreprocessorOptions(defines=defines))
    prog = read_program(str(POLYBENCH / "atax" / "atax.cu"), options.preprocessor)
    result = transform_program(prog, options)
    verdicts = validate_cpu(prog, result, options, {}, seed=9)
    assert [v.ok for v in verdicts] == [True, True], [v.message for v in verdicts]


def test_array_parameters_with_declared_rows():
    d = decision(FIXTURES / "array_params.cu", "mat2d")
    assert d.action == "restructured" and d.mapping.axes[0] == "gy"
    a = next(a for _, a in d.analysis.model.accesses() if a.array == "A")
    assert a.subscripts is not None and len(a.subscripts) == 2
    prog, result, _ = transformed(FIXTURES / "array_params.cu")
    assert "B[(pc_y)][(pc_x)]" in result.text


def test_foreign_styles():
    prog, result, _ = transformed(FIXTURES / "foreign_styles.cu")
    reasons = {d.kernel: d.reason for d in result.decisions}
    assert "referenced outside its launches" in reasons["stride_loop"]
    assert "read as tpl<4>" in reasons["tpl"]               # its instantiation, lowered
    assert "already coalesced" in reasons["tpl<4>"]
    colmajor = next(d for d in result.decisions if d.kernel == "colmajor")
    a = next(a for _, a in colmajor.analysis.model.accesses() if a.array == "A")
    assert a.subscripts is not None and len(a.subscripts) == 3     # A[c][r][k]
    # k has 4 values: it cannot fill a warp, so it never becomes x
    assert colmajor.action == "unchanged"
    assert result.text == prog.text


@pytest.mark.parametrize("choice,action", [("tiles", "tiled"), ("warp", "reduced"),
                                           ("none", "unchanged")])
def test_reduction_form_is_selectable(choice, action):
    prog, result, options = transformed_with(POLYBENCH / "gesummv" / "gesummv.cu", choice,
                                             ("N=70",))
    (d,) = result.decisions
    assert d.action == action, d.reason
    if action != "unchanged":
        (verdict,) = validate_cpu(prog, result, options, {}, seed=3)
        assert verdict.ok, verdict.message


@pytest.mark.parametrize("program,kernel,choice,action", [
    ("gemver", "gemver_kernel2", "block", "columns"),
    ("gemver", "gemver_kernel2", "split", "split"),
    ("bicg", "bicg_kernel1", "auto", "split"),                 # 1070 columns: a ragged tile
    ("atax", "atax_kernel2", "block", "columns"),
    ("covariance", "mean_kernel", "block", "columns"),
    ("gramschmidt", "gramschmidt_kernel1", "auto", "reduced"),  # one thread's norm: a warp
    ("gramschmidt", "gramschmidt_kernel3", "auto", "columns"),  # a reduction, then an update
])
def test_column_reduction_forms_run_like_the_original(program, kernel, choice, action):
    """Both column forms (statements after the loop: gemver's x[i] += z[i], the mean's
    division; before it: atax's y[j] = 0) agree with the original on the CPU."""
    defines = ("N=1100", "NX=1030", "NY=1070", "M=1040")
    prog, result, options = transformed_with(POLYBENCH / program / f"{program}.cu", choice,
                                             defines)
    d = next(d for d in result.decisions if d.kernel == kernel)
    assert d.action == action, d.reason
    args = {"k": 3} if program == "gramschmidt" else {}
    verdict = validate_kernel_cpu(prog, read_program(prog.path, options.preprocessor,
                                                     text=result.text), d, args, seed=5)
    assert verdict.ok and verdict.arrays, verdict.message


def test_block_form_is_refused_when_not_every_thread_reaches_its_barriers():
    prog, result, options = transformed_with(FIXTURES / "guarded_column.cu", "block",
                                             ("N=1100",))
    (d,) = result.decisions
    assert d.action == "split" and "under a condition on the thread" in d.reason
    assert "__syncthreads" in d.generated.text       # the split's own, outside any guard
    (verdict,) = validate_cpu(prog, result, options, {}, seed=4)
    assert verdict.ok, verdict.message


SHARED_READS = """\
#define R 256
#define C 128
__global__ void row_dot(const float *a, const float *b, float *out)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < R) {
    float s = 0.0f;
    for (int c = 0; c < C; c++) s += a[r * C + c] * b[r * C + c];
    out[r] = s;
  }
}
void run(void) {
  float *x, *y;
  cudaMalloc(&x, R * C * sizeof(float)); cudaMalloc(&y, R * sizeof(float));
  row_dot<<<R / 128, 128>>>(x, x, y);
}
"""


def test_one_allocation_behind_two_read_only_arguments_is_no_alias_hazard(tmp_path, capsys):
    """`row_dot(x, x, y)` (a dot product of a row with itself): the shared allocation is
    only read, so the arguments are as good as distinct; passing it where one of the
    two is written still blocks the kernel."""
    src = tmp_path / "shared.cu"
    src.write_text(SHARED_READS)
    assert main(["transform", str(src), "-o", str(tmp_path / "out.cu")]) == 0
    err = capsys.readouterr().err
    assert "'row_dot' reduced" in err and "distinct cudaMalloc allocations to the pointers " \
        "it writes" in err, err
    src.write_text(SHARED_READS.replace("(x, x, y)", "(x, y, y)"))
    assert main(["transform", str(src), "-o", str(tmp_path / "out.cu")]) == 0
    assert "passes one allocation twice" in capsys.readouterr().err


def test_column_sums_finished_by_their_last_block(tmp_path, nvcc):
    """testsuite/fixtures/column_finish.cu: two accumulators (one updated with -=)
    between statements before and after the loop, one of them a guarded assignment; a
    double accumulator with only a statement after; each launched twice (the counters
    the last block resets are ready for the next launch). Those run in one launch each;
    a kernel launched on a stream of its own, and one whose statements cover more
    columns than its loop, keep the three launches and atomicAdd. The program prints
    the original's numbers on the CPU runtime; nvcc compiles it; each kernel validated
    on its own (validate --cpu, partial sums across many blocks)."""
    from conftest import compile_sm90, runs_alike
    path = FIXTURES / "column_finish.cu"
    options = TransformOptions(reduction="split")
    program = read_program(str(path), options.preprocessor)
    result = transform_program(program, options)
    by_name = {d.kernel: d for d in result.decisions}
    for name, one in (("stats", True), ("weighted", True), ("on_stream", False),
                      ("fewer_columns", False)):
        d = by_name[name]
        assert d.action == "split", (name, d.reason)
        assert ("in one launch" in d.reason) == one and ("atomicAdd" in d.reason) != one
        assert len(d.generated.stages) == (1 if one else 3 if name == "on_stream" else 2)
    source = tmp_path / "out.cu"
    source.write_text(result.text)
    compile_sm90(nvcc, source)
    runs_alike(program.text, result.text, tmp_path)
    verdicts = validate_cpu(program, result, options, {"rows": 3000, "cols": 300}, seed=7)
    assert len(verdicts) == 4 and all(v.ok for v in verdicts), [v.message for v in verdicts]


@pytest.mark.parametrize("reduction", ["auto", "split"])
def test_what_the_model_must_not_take_for_what_it_is_not(tmp_path, nvcc, reduction):
    """testsuite/fixtures/model_limits.cu (a review's reproducers, each a wrong result
    before): the launch geometry read in a value (`(float)(blockDim.x * gridDim.x)`,
    `(float)threadIdx.y`) keeps a kernel outside the model, permuted at most (its
    builtins renamed with the axes); an int argument the kernel assigns (`n = n - 2;`) is
    no parameter of the model; a variable of the thread shared by the statements before
    and after a column sum's loop keeps the split away. With every legal change taken,
    the program prints the original's numbers on the CPU runtime, and nvcc compiles it."""
    from conftest import compile_sm90, runs_alike
    options = TransformOptions(model=False, reduction=reduction)
    program = read_program(str(FIXTURES / "model_limits.cu"), options.preprocessor)
    result = transform_program(program, options)
    by_name = {d.kernel: d for d in result.decisions}
    assert by_name["geometry_value"].action == "permuted"
    assert "launch geometry in a value" in by_name["geometry_value"].reason
    assert by_name["geometry_after"].action == "unchanged"
    assert by_name["assigned_argument"].action in ("permuted", "unchanged")
    if reduction == "split":
        assert by_name["shared_scalar"].action == "unchanged"
        assert "uses a variable of its thread" in by_name["shared_scalar"].reason
    source = tmp_path / "out.cu"
    source.write_text(result.text)
    compile_sm90(nvcc, source)
    runs_alike(program.text, result.text, tmp_path)
