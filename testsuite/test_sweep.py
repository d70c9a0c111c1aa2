"""A thread's loop along its row whose trips depend on each other runs on shared-memory
tiles its warp fills and writes back coalesced (optimize/sweep.py, codegen/sweep.py;
issue 34, sweeps by staging)."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, compile_sm90, cpu_runner, runs_alike
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.sweep import SweepPlan, sweep_plan
from polycoal.transform import TransformOptions, transform_program

POLYBENCH = FIXTURES.parent.parent / "polybench_inputs"

ROWS = FIXTURES / "row_sweeps.cu"


def _transform(path, defines=(), **options):
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(defines)),
                               **options)
    program = read_program(str(path), options.preprocessor)
    return program, transform_program(program, options)


def test_the_sweeps_of_adi():
    """ADI's forward sweep (columns and counter both up, X and B read one column back)
    and its backward sweep (the counter up, the columns down from n - 2)."""
    program, result = _transform(POLYBENCH / "adi" / "adi.cu")
    d = {x.kernel: x for x in result.decisions}
    forward, backward = d["adi_kernel1"], d["adi_kernel3"]
    # (the backward sweep's trips read what later trips write: across a warp's lanes,
    # test_vector_sweep.py; its plan is the staged sweep's)
    assert (forward.action, backward.action) == ("swept", "vectorised"), \
        (forward.reason, backward.reason)
    f, b = forward.generated.tiles, backward.generated.tiles
    assert (f.step, f.direction, str(f.base)) == (1, 1, "0")
    assert [(a.name, a.low, a.high, a.written) for a in f.arrays] == \
        [("A", 0, 0, None), ("B", -1, 0, 0), ("X", -1, 0, 0)]
    assert (b.step, b.direction, str(b.base)) == (1, -1, "n")
    assert [(a.name, a.low, a.high, a.written) for a in b.arrays] == \
        [("A", -3, -3, None), ("B", -3, -3, None), ("X", -3, -2, -2)]
    # the model prices the staged sweep faster than the kernel as written
    assert forward.predicted.chosen == "swept"


@pytest.mark.parametrize("rows, cols", [(45, 77), (1, 40), (32, 33), (33, 64), (70, 31),
                                        (100, 200)])
def test_row_recurrences_run_alike(tmp_path, monkeypatch, rows, cols):
    """A prefix sum per row, a backward filter (the counter down), a tridiagonal
    elimination in doubles with a private constant: swept (every one, whatever its
    rows), bit-identical on the CPU at ragged sizes (a partial warp of rows, a partial
    chunk of trips, one row)."""
    import polycoal.passes.sweep as sweep_pass
    monkeypatch.setattr(sweep_pass, "MANY_ROWS", 0)
    program, result = _transform(ROWS, (f"ROWS={rows}", f"COLS={cols}"))
    actions = {d.kernel: d.action for d in result.decisions}
    assert actions["tridiagonal"] == "swept" and (actions["prefix_rows"] == "swept" or
                                                  rows == 1), actions
    defines = f"#define ROWS {rows}\n#define COLS {cols}\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)


@pytest.mark.parametrize("rows, cols, warp, prefetch", [
    (45, 77, 1, True), (70, 31, 2, True), (33, 64, 4, True), (45, 77, 8, True),
    (100, 200, 16, True), (45, 77, 4, False), (70, 95, 8, False)])
def test_fewer_rows_a_warp_run_alike(tmp_path, monkeypatch, rows, cols, warp, prefetch):
    """A warp running `warp` rows (its first lanes; every lane loads), the next chunk's
    columns loaded ahead or not: the same recurrences bit-identical on the CPU, partial
    rows and chunks at the end, the columns two windows share carried in the tile."""
    import polycoal.codegen.sweep as sweep_code
    import polycoal.passes.sweep as sweep_pass
    monkeypatch.setattr(sweep_pass, "MANY_ROWS", 0)
    monkeypatch.setattr(sweep_code, "PREFETCH", prefetch)
    program, result = _transform(ROWS, (f"ROWS={rows}", f"COLS={cols}"), sweep_rows=warp)
    swept = [d for d in result.decisions if d.action == "swept"]
    assert len(swept) == 3 and {d.generated.tiles.warp_rows for d in swept} == {warp}
    assert all(f"[{warp}][33]" in d.generated.text for d in swept)
    defines = f"#define ROWS {rows}\n#define COLS {cols}\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)


@pytest.mark.parametrize("rows, warp", [(None, 8), (65536, 8), (8192, 8), (8191, 4),
                                        (4096, 4), (100, 4)])
def test_rows_a_warp_by_the_rows_count(rows, warp):
    """As measured on the H200: 8 rows a warp, 4 below 8192 rows; 8 where the rows are
    not known."""
    from polycoal.passes.sweep import warp_rows
    assert warp_rows(rows, None) == warp and warp_rows(rows, 8) == 8


@pytest.mark.parametrize("rows, cols, swept", [
    (4096, 4096, {"prefix_rows", "smooth_back", "tridiagonal"}),
    (1024, 16384, {"prefix_rows", "smooth_back", "tridiagonal"}),
    (1000, 1024, {"tridiagonal"}), (100, 70, {"tridiagonal"}),
    (65536, 256, {"prefix_rows", "smooth_back", "tridiagonal"})])
def test_which_sweeps_are_staged(rows, cols, swept):
    """As measured on the H200: a trip that divides gains at any size; a trip of an
    addition or a multiply-add from 1024 rows, the fewest measured."""
    _, result = _transform(ROWS, (f"ROWS={rows}", f"COLS={cols}"))
    assert {d.kernel for d in result.decisions if d.action == "swept"} == swept


def test_the_output_compiles(tmp_path, nvcc):
    _, result = _transform(ROWS, ("ROWS=65536", "COLS=4096"))
    assert [d.action for d in result.decisions].count("swept") == 3
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)


def test_what_is_not_swept(write_cu):
    """Trips that do not depend on each other (the restructuring puts the loop on
    threads instead), statements outside the loop, two rows a thread, a guard inside
    the loop, a second start (`j >= k0` beside `j = 1`), two loops one after the
    other: no plan."""
    text = """\
__global__ void scale(int n, float *a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) for (int j = 0; j < 64; j++) a[i * 64 + j] *= 2.0f;
}
__global__ void outside(int n, float *a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { a[i * 64] = 0.0f; for (int j = 1; j < 64; j++) a[i * 64 + j] += a[i * 64 + j - 1]; }
}
__global__ void two_rows(int n, float *a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) for (int j = 1; j < 64; j++) a[i * 64 + j] += a[(i + n) * 64 + j - 1];
}
__global__ void guarded(int n, float *a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) for (int j = 1; j < 64; j++) if (j % 2 == 0) a[i * 64 + j] += a[i * 64 + j - 1];
}
__global__ void started(int n, int k0, float *a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) for (int j = 1; j < 64; j++) if (j >= k0) a[i * 64 + j] += a[i * 64 + j - 1] / 3.0f;
}
__global__ void siblings(int n, float *a, float *b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int j = 1; j < 64; j++) a[i * 64 + j] = a[i * 64 + j - 1] / 2.0f;
    for (int k = 1; k < 63; k++) b[i * 64 + k] = a[i * 64 + k + 1] / b[i * 64 + k - 1];
  }
}
int main() { return 0; }
"""
    program, result = _transform(write_cu(text))
    for d in result.decisions:
        assert d.action != "swept", d.kernel
        if d.analysis and d.analysis.model:
            assert not isinstance(sweep_plan(d.analysis.model, d.analysis), SweepPlan), d.kernel


def test_the_validator_rejects_a_sweep_that_is_not_the_plan():
    from dataclasses import replace
    from polycoal.transform import _sweep
    program, result = _transform(POLYBENCH / "adi" / "adi.cu")
    d = next(x for x in result.decisions if x.kernel == "adi_kernel1")
    assert _sweep(program, None, d) == []
    for wrong in (replace(d.generated.tiles, direction=-1),
                  replace(d.generated.tiles, warp_rows=3)):
        assert _sweep(program, None, replace(d, generated=replace(d.generated, tiles=wrong)))


def test_no_sweep_keeps_them():
    _, result = _transform(POLYBENCH / "adi" / "adi.cu", sweep=False)
    assert not any(d.action == "swept" for d in result.decisions)


def test_polybench_adi_runs_alike_swept():
    """The whole ADI program, its forward sweep staged, its backward sweep across a
    warp's lanes, its column sweeps in one launch each, its waits after the time loop:
    the GPU part matches its CPU reference on the CPU runtime at a ragged size."""
    path = POLYBENCH / "adi" / "adi.cu"
    program, result = _transform(path, ("N=45", "TSTEPS=3"))
    actions = [d.action for d in result.decisions]
    assert actions.count("swept") == actions.count("vectorised") == 1
    for text in (program.text, result.text):
        run, error = cpu_runner().compile_and_run("#define N 45\n#define TSTEPS 3\n" + text,
                                                  include_dirs=(str(path.parent),))
        assert run is not None and run.failure is None, error
        assert re.search(r"Threshold of [\d.]+ Percent: 0\b", run.stderr), run.stderr


def _ahead(path, kernel, defines=()):
    """The (array, off) of the reads a trip reads ahead, and whether the generated kernel
    does (a trip that divides or calls)."""
    from polycoal.codegen.sweep import read_ahead
    import polycoal.passes.sweep as sweep_pass
    import polycoal.transform as transform
    saved, sweep_pass.MANY_ROWS = sweep_pass.MANY_ROWS, 0
    passes = transform.PASSES       # the staged sweep alone (not its vectorised form)
    transform.PASSES = tuple(p for p in passes if p is not sweep_pass.LANES)
    try:
        _, result = _transform(path, defines)
    finally:
        sweep_pass.MANY_ROWS, transform.PASSES = saved, passes
    d = next(x for x in result.decisions if x.kernel == kernel)
    plan, model = d.generated.tiles, d.analysis.model
    arrays = {a.text: a.array for _, a in model.accesses()}
    offsets = dict(plan.offsets)
    return (sorted((arrays[t], offsets[t]) for t in read_ahead(plan, model)),
            "read a trip ahead" in d.generated.text)


def test_the_reads_a_trip_reads_ahead_are_those_no_earlier_trip_writes():
    """ADI's forward sweep: its own X and B (read before the trip writes them) and A,
    not X and B one column back (the last trip's values, forwarded in registers); the
    backward sweep reads X one column further down, which a later trip writes: every
    read ahead. A prefix sum reads its own element ahead, a backward filter its input;
    neither divides, so neither kernel reads ahead (the compiler schedules them)."""
    adi = POLYBENCH / "adi" / "adi.cu"
    assert _ahead(adi, "adi_kernel1") == ([("A", 0), ("B", 0), ("X", 0)], True)
    assert _ahead(adi, "adi_kernel3") == ([("A", -3), ("B", -3), ("X", -3), ("X", -2)], True)
    defines = ("ROWS=45", "COLS=77")
    assert _ahead(ROWS, "prefix_rows", defines) == ([("a", 0)], False)
    assert _ahead(ROWS, "smooth_back", defines) == ([("x", 0)], False)
    assert _ahead(ROWS, "tridiagonal", defines) == \
        ([("a", 0), ("b", -1), ("c", 0), ("d", 0)], True)


@pytest.mark.parametrize("rows, cols, warp", [(45, 77, 4), (70, 31, 1), (33, 64, 8)])
def test_reads_ahead_run_alike_and_a_carried_read_ahead_does_not(tmp_path, monkeypatch,
                                                                 rows, cols, warp):
    """Every kernel of the fixture read ahead (the division test off): bit-identical on
    the CPU in both directions; reading ahead every read instead (the last trip's
    value too) changes the results."""
    import polycoal.codegen.sweep as sweep_code
    import polycoal.passes.sweep as sweep_pass
    monkeypatch.setattr(sweep_pass, "MANY_ROWS", 0)
    monkeypatch.setattr(sweep_code, "_divides", lambda model: True)
    defines = f"#define ROWS {rows}\n#define COLS {cols}\n"
    program, result = _transform(ROWS, (f"ROWS={rows}", f"COLS={cols}"), sweep_rows=warp)
    assert sum("read a trip ahead" in d.generated.text for d in result.decisions
               if d.action == "swept") == 3
    runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)
    monkeypatch.setattr(sweep_code, "read_ahead", lambda plan, model: [
        a.text for _, a in model.accesses() if a.kind == "read" and a.space == "global"])
    program, result = _transform(ROWS, (f"ROWS={rows}", f"COLS={cols}"), sweep_rows=warp)
    with pytest.raises(AssertionError):
        runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)


def test_a_read_after_the_trip_writes_its_element_is_not_read_ahead(tmp_path):
    """`x[j] = x[j - 1] + x[j] / b[j]; x[j] = x[j] * 0.5f + 1.0f;`: the first statement's
    read of x[j] may go ahead, the second's reads what the first wrote; one register
    serves one text, so the text stays in the tile (the review's case: a wrong sum
    before); `x[j]++` is never read ahead (its register would change)."""
    from polycoal.codegen.sweep import read_ahead
    source = (
        "#include <cstdio>\n#define ROWS 70\n#define COLS 45\n"
        "__global__ void k1(int rows, float *x, const float *b, float *y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < rows)\n    for (int j = 1; j < COLS; ++j) {\n"
        "      x[i * COLS + j] = x[i * COLS + j - 1] + x[i * COLS + j] / b[i * COLS + j];\n"
        "      x[i * COLS + j] = x[i * COLS + j] * 0.5f + 1.0f;\n"
        "      y[i * COLS + j]++;\n"
        "      y[i * COLS + j] = y[i * COLS + j - 1] / b[i * COLS + j] + y[i * COLS + j];\n"
        "    }\n}\n"
        "int main() {\n  static float h[ROWS * COLS], g[ROWS * COLS], q[ROWS * COLS];\n"
        "  for (int e = 0; e < ROWS * COLS; e++) { h[e] = (float)(e % 13) * 0.25f;"
        " g[e] = 1.0f + (e % 7); q[e] = (float)(e % 5); }\n"
        "  float *x, *b, *y;\n  cudaMalloc(&x, sizeof(h)); cudaMalloc(&b, sizeof(g));"
        " cudaMalloc(&y, sizeof(q));\n"
        "  cudaMemcpy(x, h, sizeof(h), cudaMemcpyHostToDevice);\n"
        "  cudaMemcpy(b, g, sizeof(g), cudaMemcpyHostToDevice);\n"
        "  cudaMemcpy(y, q, sizeof(q), cudaMemcpyHostToDevice);\n"
        "  k1<<<(ROWS + 63) / 64, 64>>>(ROWS, x, b, y);\n"
        "  cudaMemcpy(h, x, sizeof(h), cudaMemcpyDeviceToHost);\n"
        "  cudaMemcpy(q, y, sizeof(q), cudaMemcpyDeviceToHost);\n"
        "  double s = 0;\n  for (int e = 0; e < ROWS * COLS; e++) s += (h[e] + 3 * q[e]) *"
        " (e % 11 + 1);\n  printf(\"%.6f\\n\", s);\n  return 0;\n}\n")
    path = tmp_path / "twice.cu"
    path.write_text(source)
    program, result = _transform(path, sweep_rows=4)
    d = result.decisions[0]
    assert d.action == "swept", d.reason
    ahead = read_ahead(d.generated.tiles, d.analysis.model)
    assert "x[(i * 45) + j]" not in ahead and "y[(i * 45) + j]" not in ahead, ahead
    assert "b[(i * 45) + j]" in ahead
    runs_alike(program.text, result.text, tmp_path, tolerance=0.0)
