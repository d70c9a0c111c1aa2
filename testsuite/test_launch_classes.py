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


def transform(path: Path, defines=(), **options):
    opts = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(defines)),
                            **options)
    program = read_program(str(path), opts.preprocessor)
    return program, transform_program(program, opts)


def actions(result) -> dict[str, str]:
    return {d.kernel: d.action for d in result.decisions}


def failures(result) -> list[str]:
    return [x.message for x in result.diagnostics if x.severity == "error"]


def test_runtime_sizes_and_host_loop_variables_validate():
    _, result = transform(RUNTIME)
    assert not failures(result), failures(result)
    assert set(actions(result).values()) == {"restructured"}, actions(result)
