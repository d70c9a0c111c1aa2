"""Shared fixtures for the polycoal test suite.

Paths are absolute (derived from this file), so the suite runs from any working
directory. Reading and analysing a program is cached per session: the analysis of a
program never mutates it, and the same fixture is looked at by many tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from polycoal.analysis import analyze_program
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions

TESTSUITE = Path(__file__).resolve().parent
FIXTURES = TESTSUITE / "fixtures"
REPO = TESTSUITE.parent
# polybench_inputs/ as published: loop bounds are the kernels' int arguments unless
# POLYBENCH_USE_SCALAR_LB is defined
PUBLISHED = REPO / "polybench_inputs"


def _scalar_bound_variant() -> Path:
    """The variant of polybench_inputs/ most tests were written for, kept as a fixture:
    the loop bounds are the size macros unless POLYBENCH_USE_SCALAR_LB is defined (the
    published default reversed), made once per session from the published programs
    (each header's one `#ifndef POLYBENCH_USE_SCALAR_LB` turned into `#ifdef`)."""
    import re
    import tempfile
    root = Path(tempfile.mkdtemp(prefix="polycoal-polybench-")) / "polybench_inputs"
    shutil.copytree(PUBLISHED, root)
    for header in root.glob("*/*.cuh"):
        text = header.read_text()
        header.write_text(re.sub(r"^#ifndef POLYBENCH_USE_SCALAR_LB$",
                                 "#ifdef POLYBENCH_USE_SCALAR_LB", text, flags=re.M))
    return root


POLYBENCH = _scalar_bound_variant()


def printed_numbers(stdout: str) -> list[float]:
    import re
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", stdout)]


_CPU_RUNNER = None


def cpu_runner():
    """The CPU runner every test shares: its runtime object and precompiled header are
    built once (CpuProgramRunner's default cache, keyed by the runtime's hash and
    shared by the workers), not once a test."""
    global _CPU_RUNNER
    if _CPU_RUNNER is None:
        from polycoal.runtime.cpu_program import CpuProgramRunner
        _CPU_RUNNER = CpuProgramRunner()
    return _CPU_RUNNER


def runs_alike(original: str, output: str, directory: Path, include_dirs=(), argv=(),
               env: dict | None = None, tolerance: float = 1e-4, forced_includes=()) -> str:
    """Both programs run on the CPU runtime (with the command-line arguments `argv`, the
    environment variables `env` set, the files `forced_includes` read first as by
    `-include`) and print the same numbers (to the rounding of reassociated float sums,
    relative `tolerance`), on the runner the tests share (`directory` is the caller's
    scratch, unused). Returns what the output printed on standard error."""
    import os
    cpu = cpu_runner()
    printed, stderr = [], ""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        for name, text in (("original", original), ("output", output)):
            run, error = cpu.compile_and_run(
                text, include_dirs=tuple(str(d) for d in include_dirs), argv=tuple(argv),
                forced_includes=tuple(str(f) for f in forced_includes))
            assert run is not None and run.failure is None, (name, error, run and run.stderr)
            printed.append(printed_numbers(run.stdout))
            stderr = run.stderr
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert printed[0] and len(printed[0]) == len(printed[1]), printed
    for a, b in zip(*printed):
        assert abs(a - b) <= tolerance * max(abs(a), 1.0), printed
    return stderr


def compile_sm90(nvcc: str, source: Path) -> None:
    """nvcc -arch=sm_90 -c compiles `source` (the generated program's build check)."""
    import subprocess
    proc = subprocess.run([nvcc, "-arch=sm_90", "-c", str(source), "-o", str(source) + ".o"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def polybench_programs() -> list[Path]:
    """polybench_inputs/<name>/<name>.cu, for whatever programs exist right now."""
    if not POLYBENCH.is_dir():
        return []
    return sorted(p for p in POLYBENCH.glob("*/*.cu") if p.stem == p.parent.name)


def pytest_generate_tests(metafunc):
    if "polybench_program" in metafunc.fixturenames:
        programs = polybench_programs()
        metafunc.parametrize("polybench_program", programs,
                             ids=[p.parent.name for p in programs])


def _options(defines=(), undefines=(), include_dirs=()) -> PreprocessorOptions:
    return PreprocessorOptions(tuple(str(d) for d in include_dirs), tuple(defines),
                               tuple(undefines))


_programs: dict = {}
_analyses: dict = {}


def _read(path, defines=(), undefines=(), include_dirs=()):
    key = (str(path), tuple(defines), tuple(undefines), tuple(map(str, include_dirs)))
    if key not in _programs:
        _programs[key] = read_program(str(path), _options(defines, undefines, include_dirs))
    return _programs[key]


def _analyse(path, defines=(), undefines=(), include_dirs=()):
    key = (str(path), tuple(defines), tuple(undefines), tuple(map(str, include_dirs)))
    if key not in _analyses:
        _analyses[key] = analyze_program(_read(path, defines, undefines, include_dirs))
    return _analyses[key]


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def program():
    """program(path, defines=(), ...) -> Program (cached; do not mutate)."""
    return _read


@pytest.fixture(scope="session")
def analysis():
    """analysis(path, defines=(), ...) -> ProgramAnalysis (cached; do not mutate)."""
    return _analyse


@pytest.fixture(scope="session")
def kernel_analysis():
    """kernel_analysis(path, name, defines=()) -> the KernelAnalysis of kernel `name`."""
    def get(path, name, defines=()):
        pa = _analyse(path, defines)
        matches = [ka for ka in pa.kernels if ka.kernel.name == name]
        assert len(matches) == 1, f"kernel {name} not found once in {path}"
        return matches[0]
    return get


def first_kernel_analysis(path):
    """The KernelAnalysis of the first kernel of a (small, uncached) source file."""
    from polycoal.analysis import analyze_kernel
    program = read_program(str(path))
    return analyze_kernel(program.kernels[0], program)


@pytest.fixture
def write_cu(tmp_path):
    """write_cu(text, name='k.cu') -> path of a new source file under tmp_path."""
    def write(text: str, name: str = "k.cu") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
    return write


@pytest.fixture(scope="session")
def nvcc() -> str:
    exe = shutil.which("nvcc")
    if exe is None:
        pytest.skip("nvcc is not on PATH: the compile check of the corpus needs the CUDA "
                    "toolkit")
    return exe
