"""A thread's loop along its row whose trips read what later trips write, never what
earlier ones wrote (ADI's backward sweep, an in-place shift or smoothing), runs with a
warp a row and the trips across its lanes (optimize/sweep.vector_obstacle,
codegen/sweep.generate_lanes; issue 34, sweeps)."""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import FIXTURES, compile_sm90, runs_alike
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.sweep import SweepPlan, sweep_plan, vector_obstacle
from polycoal.transform import TransformOptions, transform_program

POLYBENCH = FIXTURES.parent.parent / "polybench_inputs"
ANTI = FIXTURES / "row_anti_sweeps.cu"
ROWS = FIXTURES / "row_sweeps.cu"
VECTORISED = {"back_update", "shift_left", "smooth_up", "shift_down"}


def _transform(path, defines=(), **options):
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(defines)),
                               **options)
    program = read_program(str(path), options.preprocessor)
    return program, transform_program(program, options)


def _plans(path, defines=()):
    """Each kernel's sweep plan from the analysis the transformation decided on (under
    its run-time check where the threads race for some sizes)."""
    _, result = _transform(path, defines)
    return {d.kernel: sweep_plan(d.analysis.model, d.analysis) for d in result.decisions}


def test_only_loops_without_a_recurrence_are_vectorised():
    """The fixture's four anti-dependence loops have no obstacle; the recurrences (a
    prefix sum, a backward filter reading the element the trip before wrote, a
    tridiagonal elimination, ADI's forward sweep) have one, named."""
    plans = _plans(ANTI)
    for name in VECTORISED:
        assert isinstance(plans[name], SweepPlan), (name, plans[name])
        assert vector_obstacle(plans[name]) is None, name
    assert vector_obstacle(plans["prefix"]).code == "vector-flow"
    for name, plan in _plans(ROWS).items():
        assert vector_obstacle(plan).code == "vector-flow", name
    adi = _plans(POLYBENCH / "adi" / "adi.cu")
    assert vector_obstacle(adi["adi_kernel1"]).code == "vector-flow"
    assert vector_obstacle(adi["adi_kernel3"]) is None


def test_adi_backward_sweep_is_vectorised():
    """ADI's backward sweep (the counter up, the columns down, X read one column below
    the one written: the next trip's) is taken in lanes, predicted faster than the
    staged sweep; the forward sweep (a recurrence) stays staged."""
    program, result = _transform(POLYBENCH / "adi" / "adi.cu")
    d = {x.kernel: x for x in result.decisions}
    assert d["adi_kernel1"].action == "swept"
    back = d["adi_kernel3"]
    assert back.action == "vectorised", back.reason
    forms = {f: p.time_us for f, p in back.predicted.candidates}
    assert forms["vectorised"] * 1.1 <= forms["swept"]
    assert "__syncwarp();" in back.generated.text


@pytest.mark.parametrize("rows, cols, warps", [
    (45, 300, 1), (1, 40, 1), (33, 129, 1), (70, 3, 1), (9, 128, 1), (40, 257, 1),
    (45, 300, 2), (3, 1100, 4), (9, 512, 4), (2, 1025, 8), (33, 70, 8)])
def test_anti_sweeps_run_alike(tmp_path, monkeypatch, rows, cols, warps):
    """Each vectorised kernel (the staged sweep's gates shut, the model off: the
    vectorised form taken wherever it applies), a warp a row or a block of `warps`
    warps, prints the original's numbers bit for bit on the CPU runtime at ragged
    sizes: a partial chunk, one row, fewer trips than lanes, exactly one chunk, one past
    it, several chunks of a block."""
    import polycoal.passes.sweep as sweep_pass
    monkeypatch.setattr(sweep_pass, "MANY_ROWS", 1 << 40)
    monkeypatch.setattr(sweep_pass, "long_trips", lambda model: False)
    monkeypatch.setattr(sweep_pass, "FORCED_WARPS", warps)
    program, result = _transform(ANTI, (f"ROWS={rows}", f"COLS={cols}"), model=False)
    actions = {d.kernel: d.action for d in result.decisions}
    assert {k for k, a in actions.items() if a == "vectorised"} == VECTORISED, actions
    assert all(d.generated.block == ((256, 1, 1) if warps == 1 else (32 * warps, 1, 1))
               for d in result.decisions if d.action == "vectorised")
    assert actions["prefix"] != "vectorised"
    defines = f"#define ROWS {rows}\n#define COLS {cols}\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)


def test_warps_a_row_follow_the_rows():
    """A warp a row from half as many rows as the device holds warps (or rows unknown);
    below, a block of eight warps a row, fewer where a row's trips fill less than half
    of their chunk."""
    from polycoal.optimize.sweep import DEVICE_WARPS, vector_warps
    assert vector_warps(None, 4096) == 1 and vector_warps(DEVICE_WARPS // 2, 1 << 20) == 1
    assert vector_warps(4096, 4094) == 1 and vector_warps(1024, 1022) == 8
    assert vector_warps(512, 8192) == 8 and vector_warps(1, None) == 8
    assert vector_warps(100, 300) == 4 and vector_warps(100, 128) == 2
    assert vector_warps(100, 63) == 1


@pytest.mark.parametrize("warps", [1, 4])
def test_a_vectorised_kernel_that_read_ahead_wrongly_is_caught(tmp_path, monkeypatch, warps):
    """The test above can fail: the same kernels with the chunk's wait and the reads
    ahead taken out (each lane's statements reading memory in place) print other
    numbers where lanes of one chunk run in turn (the CPU runtime runs a warp's lanes
    one after another between waits)."""
    import polycoal.codegen.sweep as sweep_code
    import polycoal.passes.sweep as sweep_pass
    monkeypatch.setattr(sweep_pass, "MANY_ROWS", 1 << 40)
    monkeypatch.setattr(sweep_pass, "long_trips", lambda model: False)
    monkeypatch.setattr(sweep_code, "read_ahead", lambda plan, model: [])
    monkeypatch.setattr(sweep_pass, "FORCED_WARPS", warps)
    program, result = _transform(ANTI, ("ROWS=9", "COLS=300"), model=False)
    text = result.text.replace("__syncwarp();", "").replace("__syncthreads();", "")
    defines = "#define ROWS 9\n#define COLS 300\n"
    with pytest.raises(AssertionError):
        runs_alike(defines + program.text, defines + text, tmp_path, tolerance=0.0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_vectorised_output_compiles(tmp_path):
    """The transformed fixture and ADI compile with nvcc -arch=sm_90."""
    for path, defines in ((ANTI, ("ROWS=5000", "COLS=1000")), (POLYBENCH / "adi" / "adi.cu", ())):
        program, result = _transform(path, defines)
        assert any(d.action == "vectorised" for d in result.decisions)
        shutil.copytree(path.parent, tmp_path / path.stem)
        out = tmp_path / path.stem / f"{path.stem}.cu"
        if path.parent.parent == POLYBENCH and not (tmp_path / "common").exists():
            shutil.copytree(POLYBENCH / "common", tmp_path / "common")
        out.write_text("".join(f"#define {d.replace('=', ' ')}\n" for d in defines) +
                       result.text)
        compile_sm90(shutil.which("nvcc"), out)


def test_validate_cpu_runs_the_sweeps_with_their_barriers(capsys):
    """`polycoal validate --cpu` runs a vectorised (and a staged) sweep's threads with
    their barriers: every kernel passes (they all failed, each lane's stores landing
    before the others' reads, when the CPU harness took them for kernels without
    barriers)."""
    from polycoal.cli import main
    assert main(["validate", "--cpu", str(ANTI), "-D", "ROWS=300", "-D", "COLS=400"]) == 0
    out = capsys.readouterr().out
    for name in VECTORISED:
        assert re.search(rf"{name}\s+PASS\s+outputs match", out), out


def test_a_pointer_moved_off_its_allocation_is_no_alias_evidence(tmp_path):
    """`y = x + 1;` after both were allocated: y points into x's allocation, and the
    kernel `out[j] = in[j] * 0.5f + out[j + 1]` called with (y, x) reads what the trip
    before wrote through the alias. y is no longer taken for an allocation of its own:
    the vectorised kernel runs only where a check at the launch finds the two arrays
    apart, the original here (it ran unchecked, a wrong sum)."""
    from polycoal.frontend.host import allocation_sites
    from polycoal.frontend.lexer import tokenize
    path = FIXTURES / "moved_pointer.cu"
    assert "y" not in allocation_sites(tuple(tokenize(path.read_text())))
    for text, kept in (("cudaMalloc(&a, n); cudaMalloc(&b, n); a += 3;", {"b"}),
                       ("cudaMalloc(&a, n); cudaMalloc(&b, n); ++b; a = NULL;", {"a"}),
                       ("cudaMalloc(&s.x, n); cudaMalloc(&s.y, n); s.y = s.x + 4;", {"s.x"}),
                       ("cudaMalloc(&a, n); cudaMalloc(&b, n); if (a == b || b >= a) {}",
                        {"a", "b"}),
                       ("cudaMalloc(&a, n); float *q = a; q[1] = 2;", {"a", "q"}),
                       # a kernel's own `a` is another variable
                       ("__global__ void k(float *p) { int a = threadIdx.x; a += 1; p[a] = 0; }"
                        " int main() { float *a; cudaMalloc(&a, n); k<<<1, 1>>>(a); }",
                        {"a"})):
        assert set(allocation_sites(tuple(tokenize(text)))) == kept, text
    program, result = _transform(path, ("ROWS=5", "COLS=300"))
    d = next(x for x in result.decisions if x.kernel == "copy_row")
    assert d.action == "vectorised" and "'out' and 'in' do not overlap" in d.reason, d.reason
    defines = "#define ROWS 5\n#define COLS 300\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)
