"""Transformations legal only for some argument values, checked at each launch (issue 14,
optimize/assumptions.py): the transformed kernel is a copy beside the original, and the
launch runs it where the condition holds on the host, the original elsewhere. Each
branch is taken here and gives the original's result."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, PUBLISHED, runs_alike, cpu_runner

from polycoal.cli import main
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import TransformOptions, transform_program

BAND = FIXTURES / "runtime_checks" / "band_copy.cu"


def _transform(path, *args):
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(path), "-o", "-",
                        *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def test_a_kernel_race_free_only_for_some_arguments_runs_its_copy_where_checked(tmp_path):
    """band_copy races only when m > W = 64: it is restructured under `m <= 64`, the
    launch checks m on the host, and the original kernel stays for the other values."""
    out, err = _transform(BAND)
    assert "under a run-time check at each launch: m <= 64" in err, err
    assert "__global__ void band_copy(int m" in out           # the original stays
    assert "__global__ void band_copy__pc_checked(int m" in out
    assert "if ((((long long)(int)(m)) <= 64)) {" in out
    assert "band_copy<<<dim3(pc_grid0.x, pc_grid0.y, pc_grid0.z)" in out   # the fallback
    if shutil.which("nvcc"):
        (tmp_path / "out.cu").write_text(out)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(tmp_path / "out.cu"),
                            "-o", str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    # m = 48: the copy runs; m = 64: the boundary; m = 100: the original runs (racing
    # benignly: both threads write the same value)
    for m in ("48", "64", "100"):
        runs_alike(BAND.read_text(), out, tmp_path, argv=(m,))


def test_the_check_is_reported_and_can_be_turned_off(tmp_path):
    """The JSON report lists the condition; --no-runtime-checks keeps the refusal."""
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(BAND), "-o",
                        str(tmp_path / "out.cu"), "--report", "json"],
                       capture_output=True, text=True)
    [kernel] = json.loads(r.stderr)["kernels"]
    assert kernel["runtime_checks"] == [{"condition": "m <= 64", "kernel": "band_copy__pc_checked",
                                         "why": "race freedom"}]
    out, err = _transform(BAND, "--no-runtime-checks")
    assert out == BAND.read_text()
    assert "threads race in the original kernel when m >= 65" in err, err


@pytest.mark.parametrize("m, branch", [("48", "outputs match"), ("100", "outputs match")])
def test_validate_takes_the_branch_of_the_values_it_is_given(m, branch, capsys):
    """validate --cpu runs the copy where the check holds at the given values, and the
    original (as the output does) where it fails."""
    assert main(["validate", "--cpu", str(BAND), "--arg", f"m={m}"]) == 0
    assert branch in capsys.readouterr().out


def test_covariance_with_published_bounds_is_transformed_under_m_le_M():
    """PolyBench/GPU's published default: loop bounds are the int arguments m, n while
    the rows are M long. covar_kernel is race-free only for m <= M: it is restructured
    under that check (it was refused: "race ... only when m >= 2049"), in tiles."""
    path = PUBLISHED / "covariance" / "covariance.cu"
    options = PreprocessorOptions(defines=("M=64", "N=64"))
    program = read_program(str(path), options)
    result = transform_program(program, TransformOptions(preprocessor=options))
    d = next(d for d in result.decisions if d.kernel == "covar_kernel")
    assert d.action == "product" and d.assumption.constraint == "m <= 64", d.reason
    assert "covar_kernel__pc_checked<<<" in result.text
    off = transform_program(program, TransformOptions(preprocessor=options,
                                                      runtime_checks=False))
    assert next(d for d in off.decisions if d.kernel == "covar_kernel").code == "race"


OVERLAP = FIXTURES / "runtime_checks" / "overlap.cu"


def _ran(text: str, tmp_path, argv, monkeypatch) -> list[str]:
    """The kernels the program launched on the CPU runtime, in order."""
    log = tmp_path / f"launches-{'-'.join(argv)}.log"
    monkeypatch.setenv("POLYCOAL_CPU_LAUNCH_LOG", str(log))
    run, error = cpu_runner().compile_and_run(text, argv=argv)
    assert run is not None and run.failure is None, (error, run and run.stderr)
    return log.read_text().split()


def test_pointers_that_may_overlap_are_checked_at_each_launch(tmp_path, monkeypatch):
    """scale_rows gets two pointers into one allocation through a host function: the
    launch compares the byte ranges dst and src touch at its values, runs the copy where
    they are disjoint and the original where they overlap (in place, or shifted by less
    than the matrix, or by all but one element); every branch gives the original's
    result."""
    out, err = _transform(OVERLAP)
    assert "under a run-time check at each launch: 'dst' and 'src' do not overlap" in err
    assert "__global__ void scale_rows__pc_checked(" in out
    assert "(size_t)(const void *)((dst))" in out and "(size_t)(const void *)((src))" in out
    if shutil.which("nvcc"):
        (tmp_path / "out.cu").write_text(out)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(tmp_path / "out.cu"),
                            "-o", str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    rows, cols = 150, 48
    for shift, kernel in ((rows * cols, "scale_rows__pc_checked"),          # disjoint
                          (rows * cols + 7, "scale_rows__pc_checked"),
                          (0, "scale_rows"),                                 # in place
                          (5, "scale_rows"),                                 # overlapping
                          (rows * cols - 1, "scale_rows")):                  # by one element
        argv = (str(rows), str(cols), str(shift))
        assert _ran(out, tmp_path, argv, monkeypatch) == [kernel], shift
        runs_alike(OVERLAP.read_text(), out, tmp_path, argv=argv)


def test_the_pointer_check_is_reported_and_can_be_turned_off():
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(OVERLAP), "-o",
                        "/dev/null", "--report", "json"], capture_output=True, text=True)
    [kernel] = json.loads(r.stderr)["kernels"]
    [check] = kernel["runtime_checks"]
    assert check["condition"] == "'dst' and 'src' do not overlap"
    assert check["why"] == "pointer arguments distinct" and "dst" in check["host"]
    out, err = _transform(OVERLAP, "--no-runtime-checks")
    assert out == OVERLAP.read_text()
    assert "may alias" in err and "--no-runtime-checks" in err, err


def test_the_race_check_takes_each_branch(tmp_path, monkeypatch):
    out, _ = _transform(BAND)
    assert _ran(out, tmp_path, ("48",), monkeypatch) == ["band_copy__pc_checked"]
    assert _ran(out, tmp_path, ("100",), monkeypatch) == ["band_copy"]


BAND_ROWS = FIXTURES / "runtime_checks" / "band_rows.cu"


def test_a_disjunction_of_conditions_is_checked_and_takes_each_branch(tmp_path, monkeypatch):
    """band_rows races only when m > 64 and two rows or more run (first <= 37): either
    piece of `first >= 38 or m <= 64` makes it safe, and the launch checks both (a
    sufficient condition made of one piece would run the original where the other
    holds). Each branch runs like the original."""
    out, err = _transform(BAND_ROWS)
    assert "under a run-time check at each launch: (first >= 38 or m <= 64)" in err, err
    if shutil.which("nvcc"):
        (tmp_path / "out.cu").write_text(out)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(tmp_path / "out.cu"),
                            "-o", str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    for argv, kernel in ((("48", "0"), "band_rows__pc_checked"),     # m <= 64
                         (("100", "38"), "band_rows__pc_checked"),    # first >= 38
                         (("100", "37"), "band_rows"),                # neither
                         (("65", "0"), "band_rows")):
        assert _ran(out, tmp_path, argv, monkeypatch) == [kernel], argv
        runs_alike(BAND_ROWS.read_text(), out, tmp_path, argv=argv)
