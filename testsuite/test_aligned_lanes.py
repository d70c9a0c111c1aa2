"""The lanes of a restructured kernel start at a multiple of a warp (codegen/kernel.py
aligned_lanes): a range from 1 (or from k + 1, a host loop's value) would make every
warp's accesses straddle two 128-byte lines; the values below the range are guarded
off (isl's guard in a thread-per-value form, pc_active in a column form)."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, POLYBENCH, cpu_runner, runs_alike
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import TransformOptions, transform_program

SHIFT = FIXTURES / "shift_rows.cu"


def _transformed(path, defines=(), include_dirs=(), **more):
    options = TransformOptions(preprocessor=PreprocessorOptions(
        defines=tuple(defines), include_dirs=tuple(include_dirs)), **more)
    program = read_program(str(path), options.preprocessor)
    return program, transform_program(program, options)


@pytest.mark.parametrize("lo, n, m", [(1, 300, 77), (5, 33, 40), (33, 70, 100),
                                      (32, 40, 96), (1, 1, 34)])
def test_a_permuted_kernel_starts_its_lanes_at_a_warp(tmp_path, lo, n, m):
    program, result = _transformed(SHIFT, (f"N={n}", f"M={m}", f"LO={lo}"))
    d = result.decisions[0]
    assert d.action == "restructured", d.reason
    text = d.generated.text
    start = re.search(r"for \(int pc_x = \((\w+)\)", text).group(1)
    assert start == str(lo // 32 * 32)
    assert (f"pc_x >= {lo}" in text) == (lo % 32 != 0)
    defines = f"#define N {n}\n#define M {m}\n#define LO {lo}\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path, tolerance=0.0)


def test_a_symbolic_start_keeps_its_lanes_and_the_transformation(tmp_path):
    """A thread-per-value form whose range starts at a kernel argument (`j = lo`): its
    lanes start there as before (the start's remainder by 32 is not affine: translation
    validation would refuse the kernel), and it is still restructured."""
    text = SHIFT.read_text().replace("int j = LO;", "int j = lo;").replace(
        "int n, int m,", "int n, int m, int lo,").replace("(N, M, b, a)", "(N, M, 1, b, a)")
    path = tmp_path / "shift_lo.cu"
    path.write_text(text)
    program, result = _transformed(path, ("N=300", "M=77"))
    d = result.decisions[0]
    assert d.action == "restructured", d.reason
    assert re.search(r"for \(int pc_x = \(lo\)", d.generated.text)
    runs_alike(program.text, result.text, tmp_path, tolerance=0.0)


def test_gramschmidt_column_kernel_from_k_plus_one(tmp_path, nvcc):
    """Gram-Schmidt's third kernel (columns j > k, k a host loop's value) in its column
    form: its tiles from the multiple of 32 below k + 1, the columns below k + 1
    inactive (asked for by name at this small size); the whole program's CPU check on
    the CPU runtime, and nvcc compiles it."""
    import subprocess
    folder = POLYBENCH / "gramschmidt"
    program, result = _transformed(folder / "gramschmidt.cu", ("M=70", "N=67"), (folder,),
                                   reduction="block")
    d = next(x for x in result.decisions if x.kernel == "gramschmidt_kernel3")
    assert d.action == "columns", d.reason
    tile = re.search(r"for \(int pc_tile = (.*?) \+ \(int\)\(blockIdx", d.generated.text)
    assert "((k + 1) % 32 + 32) % 32" in tile.group(1), tile.group(1)
    assert "pc_active = pc_x >= (k + 1) && " in d.generated.text
    out = tmp_path / "out.cu"
    out.write_text("#define M 70\n#define N 67\n" + result.text)
    proc = subprocess.run([nvcc, "-arch=sm_90", "-c", f"-I{folder}", str(out), "-o",
                           str(out) + ".o"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for text in (program.text, result.text):
        run, error = cpu_runner().compile_and_run("#define M 70\n#define N 67\n" + text,
                                                  include_dirs=(str(folder),))
        assert run is not None and run.failure is None, error
        assert re.search(r"Threshold of [\d.]+ Percent: 0\b", run.stderr), run.stderr
