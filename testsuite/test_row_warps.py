"""Row reductions over few rows: a block of warps a row instead of one warp
(optimize/reduction.row_warps, codegen/kernel.generate_kernel's `row_warps`; issue 34,
Gram-Schmidt's norm kernel)."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, cpu_runner, runs_alike
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.reduction import DEVICE_WARPS, row_warps
from polycoal.transform import TransformOptions, transform_program

FEW = FIXTURES / "few_row_sums.cu"
POLYBENCH = FIXTURES.parent.parent / "polybench_inputs"


def _transform(path, defines=(), **options):
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(defines)),
                               **options)
    program = read_program(str(path), options.preprocessor)
    return program, transform_program(program, options)


def test_warps_a_row():
    """One warp a row where the rows are unknown or many; below half the warps the
    device holds, the fewest warps a row that bring the launch there (32 at most),
    each thread two trips or more."""
    assert row_warps(None, 1 << 20) == 1 and row_warps(DEVICE_WARPS // 2, 1 << 20) == 1
    assert row_warps(1, 2048) == 32 and row_warps(1, 8192) == 32 and row_warps(1, None) == 32
    assert row_warps(1, 300) == 4 and row_warps(1, 100) == 1
    assert row_warps(10, 1000) == 8 and row_warps(1000, 4096) == 4
    assert row_warps(2000, 4096) == 2


@pytest.mark.parametrize("length, rows, cols", [(5000, 10, 1000), (100, 3, 300),
                                                (2049, 1, 129), (64, 33, 70),
                                                (70000, 2, 4097)])
def test_few_rows_run_alike(tmp_path, length, rows, cols):
    """A dot product one thread computed and a few row sums in double, each run by a
    block of warps a row where the trips fill them (the warps' block sizes as
    row_warps says): the original's numbers on the CPU runtime."""
    program, result = _transform(FEW, (f"LEN={length}", f"ROWS={rows}", f"COLS={cols}"))
    d = {x.kernel: x for x in result.decisions}
    for name, (n_rows, trips) in (("dot_one", (1, length)), ("row_sums", (rows, cols))):
        assert d[name].action == "reduced", d[name].reason
        warps = row_warps(n_rows, trips)
        assert d[name].generated.block == ((32 * warps, 1, 1) if warps > 1 else (256, 1, 1))
        assert ("pc_wsum0" in d[name].generated.text) == (warps > 1)
        if warps > 1:
            assert f"__launch_bounds__({32 * warps}, 1)" in d[name].generated.text
    defines = f"#define LEN {length}\n#define ROWS {rows}\n#define COLS {cols}\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path)


def test_the_warps_barriers_are_needed(tmp_path):
    """The test above can fail: without its barriers, thread 0 adds the warps' sums
    before the other warps have written them (the CPU runtime runs a block's threads
    one after another between barriers)."""
    program, result = _transform(FEW, ("LEN=5000", "ROWS=10", "COLS=1000"))
    text = result.text.replace("__syncthreads();", "")
    defines = "#define LEN 5000\n#define ROWS 10\n#define COLS 1000\n"
    with pytest.raises(AssertionError):
        runs_alike(defines + program.text, defines + text, tmp_path)


def test_gramschmidt_norm_in_a_block():
    """Gram-Schmidt's norm kernel (one thread summed a column): a block of warps (the
    sign check's plan, nothing assumed of m, takes the trips as many: 32 warps); the
    whole program at 300 x 300 matches its CPU reference on the CPU runtime."""
    path = POLYBENCH / "gramschmidt" / "gramschmidt.cu"
    program, result = _transform(path, ("M=300", "N=300"), price_at=(("m", 300), ("n", 300)))
    d = next(x for x in result.decisions if x.kernel == "gramschmidt_kernel1")
    assert d.action == "reduced" and d.generated.block[0] in (128, 1024), d.reason
    assert "pc_wsum0" in d.generated.text
    run, error = cpu_runner().compile_and_run("#define M 300\n#define N 300\n" + result.text,
                                              include_dirs=(str(path.parent),))
    assert run is not None and run.failure is None, error
    assert re.search(r"Threshold of [\d.]+ Percent: 0\b", run.stderr), run.stderr
