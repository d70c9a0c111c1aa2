"""Thread-axis permutations where the launch's geometry is known only at run time
(issue 13): the permuted kernel is a copy beside the original; the launch checks that
its geometry fits the permuted axes (grid and block limits, more than one thread along
the new x) and runs the copy, or the original kernel where it does not fit."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import FIXTURES, runs_alike
from polycoal.optimize.permutation import run_time_checks

PROGRAM = FIXTURES / "styles" / "runtime_grid_permute.cu"


def _transform(text=None):
    from polycoal.frontend import read_program
    from polycoal.transform import TransformOptions, transform_program
    program = read_program(str(PROGRAM), TransformOptions().preprocessor, text=text)
    return program, transform_program(program, TransformOptions())


def test_the_checks_cover_every_limit_the_permutation_lowers():
    swap = {"x": "y", "y": "x", "z": "z"}
    assert run_time_checks(swap, "b", "g") == ["b.y > 1", "g.x <= 65535"]
    rotate = {"x": "z", "y": "x", "z": "y"}        # x -> y, y -> z, z -> x
    assert run_time_checks(rotate, "b", "g") == [
        "b.z > 1", "g.x <= 65535", "b.y <= 64"]


def test_a_run_time_grid_no_longer_blocks_a_permutation(tmp_path, capsys):
    from polycoal.cli import main
    program, result = _transform()
    d = result.decisions[0]
    assert d.action == "permuted" and d.permutation.guarded, d.reason
    assert "checks at run time" in d.reason
    text = result.text
    # the original kernel is kept byte for byte, the permuted copy follows it
    original = program.text[program.kernels[0].span.start:program.kernels[0].span.end]
    assert original in text and "void scale_rows__pc_permuted(" in text
    assert "if (pc_block0.y > 1 && pc_grid0.x <= 65535) {" in text
    assert "scale_rows__pc_permuted<<<dim3(pc_grid0.y, pc_grid0.x, pc_grid0.z)" in text
    assert "scale_rows<<<dim3(pc_grid0.x, pc_grid0.y, pc_grid0.z)" in text
    runs_alike(program.text, text, tmp_path)
    if shutil.which("nvcc"):
        out = tmp_path / "out.cu"
        out.write_text(text)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(out), "-o",
                            str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert main(["validate", "--cpu", str(PROGRAM), "--seed", "2", "--arg", "rows=300",
                 "--arg", "cols=200", "--arg", "bx=16", "--arg", "by=16"]) == 0
    assert "PASS" in capsys.readouterr().out


@pytest.mark.parametrize("rows,cols,bx,by", [(70000, 16, 1, 16), (40, 300, 32, 1),
                                             (33, 17, 32, 8)],
                         ids=["grid-too-tall", "new-x-one-thread-wide", "ragged"])
def test_both_branches_run_like_the_original(rows, cols, bx, by, tmp_path):
    """Sizes that take the fallback (a grid.x the new y cannot hold) and sizes that take
    the permuted copy: the program prints what the original prints."""
    text = PROGRAM.read_text()
    text = text.replace("atoi(argv[1]) : 300", f"atoi(argv[1]) : {rows}")
    text = text.replace("atoi(argv[2]) : 200", f"atoi(argv[2]) : {cols}")
    text = text.replace("atoi(argv[3]) : 16", f"atoi(argv[3]) : {bx}")
    text = text.replace("atoi(argv[4]) : 16", f"atoi(argv[4]) : {by}")
    program, result = _transform(text)
    assert result.decisions[0].action == "permuted"
    runs_alike(program.text, result.text, tmp_path)
