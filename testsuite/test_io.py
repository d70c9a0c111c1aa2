"""Input, output and the command line's safety: standard output carries the program and
nothing else, exit statuses for bad input, output written through symlinks and to
devices and pipes without replacing them, the input never overwritten, bytes that are
not UTF-8 kept, line endings kept, internal errors reported without a traceback.

Every test writes inside its own tmp_path; commands that must be seen from outside the
process (what reaches file descriptor 1) run in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BICG = REPO / "polybench_inputs" / "bicg" / "bicg.cu"
PROJECT = Path(__file__).resolve().parent / "projects" / "cuda_app"


def polycoal(*args, cwd=None, env=None, stdin=None) -> subprocess.CompletedProcess:
    """`python -m polycoal ARGS` in a fresh process: (returncode, stdout, stderr) as bytes."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("POLYCOAL_")}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "polycoal", *map(str, args)], cwd=cwd,
                          env=environment, input=stdin, capture_output=True, timeout=600)


# --------------------------------------------------------------------------- standard output

def test_stdout_carries_the_program_alone(tmp_path):
    """The solver's banner ("Running HiGHS ...") is printed by native code on file
    descriptor 1 the first time a solver is made in a process: it must not precede the
    program on standard output, nor reach standard error."""
    piped = polycoal("transform", BICG)
    assert piped.returncode == 0, piped.stderr.decode()
    written = tmp_path / "out.cu"
    to_file = polycoal("transform", BICG, "-o", written)
    assert to_file.returncode == 0 and to_file.stdout == b""
    assert piped.stdout != BICG.read_bytes()          # kernels were planned: ILPs solved
    first_line = BICG.read_bytes().split(b"\n", 1)[0]
    assert piped.stdout.split(b"\n", 1)[0] == first_line
    assert piped.stdout == written.read_bytes()
    assert b"HiGHS" not in piped.stderr + to_file.stderr


def test_a_build_step_shows_no_solver_output(tmp_path):
    compiler = tmp_path / "cc"
    compiler.write_text(f"#!{sys.executable}\n")
    compiler.chmod(0o755)
    source = PROJECT / "src" / "rows.cu"
    run = polycoal("launch", compiler, "-c", source, "-o", tmp_path / "rows.o", cwd=tmp_path)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout == b"" and b"HiGHS" not in run.stderr
    copies = list((tmp_path / ".polycoal").glob("*/rows.cu"))
    assert copies and "restructured" in copies[0].read_text()
