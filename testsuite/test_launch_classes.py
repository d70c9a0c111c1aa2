"""Launch idioms and geometries the generator must handle (issue 12): run-time sizes and
host-loop variables in the grid, typed min/max, qualified kernel names, launch
arguments with side effects, no new warnings, extent-1 dimensions, block axes beyond
the new geometry, one-thread launches. Each output is checked for real: polycoal's own
translation validation, nvcc, and the CPU run of `validate --cpu`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES
from polycoal.cli import main
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import TransformOptions, transform_program

RUNTIME = FIXTURES / "runtime_sizes.cu"
TYPED = FIXTURES / "typed_bounds.cu"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def transform(path: Path, defines=(), **options):
    opts = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(defines)),
                            **options)
    program = read_program(str(path), opts.preprocessor)
    return program, transform_program(program, opts)


def nvcc_errors(tmp_path: Path, text: str, source: Path, *flags: str) -> str:
    """nvcc's complaints about `text` compiled next to `source` (its headers), or ""."""
    out = tmp_path / f"pc_{source.name}"
    out.write_text(text)
    proc = subprocess.run(["nvcc", "-arch=sm_90", *flags, "-c", str(out), "-o",
                           str(out) + ".o", f"-I{source.parent}"],
                          capture_output=True, text=True)
    return "" if proc.returncode == 0 else proc.stdout + proc.stderr


def actions(result) -> dict[str, str]:
    return {d.kernel: d.action for d in result.decisions}


def failures(result) -> list[str]:
    return [x.message for x in result.diagnostics if x.severity == "error"]


def test_runtime_sizes_and_host_loop_variables_validate():
    _, result = transform(RUNTIME)
    assert not failures(result), failures(result)
    assert set(actions(result).values()) == {"restructured"}, actions(result)


@needs_nvcc
@pytest.mark.parametrize("path", [RUNTIME, TYPED], ids=lambda p: p.stem)
def test_bounds_with_run_time_sizes_of_any_integer_type_compile(path, tmp_path):
    # a bound mixing an int size with the launch's long long thread count, long and
    # unsigned sizes: every min/max polycoal writes has operands of one type
    _, result = transform(path)
    assert not failures(result), failures(result)
    assert "unchanged" not in actions(result).values(), actions(result)
    assert not nvcc_errors(tmp_path, result.text, path)


@pytest.mark.parametrize("path,arguments,kernels", [
    (RUNTIME, ("n=70", "m=45", "t=3", "k=5"), 6),
    (TYPED, ("n=70", "m=45"), 4),
], ids=["runtime_sizes", "typed_bounds"])
def test_run_time_geometry_runs_like_the_original(path, arguments, kernels, capsys):
    # the grid of each first launch is computed from the --arg values of the kernel
    # arguments it is passed (the host variables of the launch), as the host would
    argv = ["validate", "--cpu", str(path), "--seed", "5"]
    for a in arguments:
        argv += ["--arg", a]
    status = main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.count("PASS") == kernels, out
