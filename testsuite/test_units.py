"""Translation units read as their build reads them (issue 32), and units that link.

- Forced includes: a unit whose kernels use sizes and a type defined only in a header
  its build reads first (`nvcc -include config.h`, testsuite/fixtures/units/forced.cu)
  is transformed given the same `-include`, in single-file mode (with either compile
  check) and in project mode (an entry of the compile database with `-include`); the
  output compiles with nvcc given the same `-include` and runs on the CPU as the input.
- Copies link: two units (first.cu, second.cu) that include one header and launch its
  template kernel and its static kernel, each transformed alone, get their own copies
  (`scale_rows__pc_float`, `add_rows__pc`, checked copies), all `static`: the units
  compile and link with nvcc, and run on the CPU as the originals do.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, printed_numbers, runs_alike, cpu_runner
from polycoal.cli import main
from polycoal.frontend import clang

UNITS = FIXTURES / "units"
CONFIG = UNITS / "config.h"
needs_clang = pytest.mark.skipif(not clang.available(), reason="libclang is not installed")
CHANGED = ("restructured", "reduced", "permuted")


def _nvcc_or_skip() -> str:
    exe = shutil.which("nvcc")
    if exe is None:
        pytest.skip("nvcc is not on PATH")
    return exe


def _nvcc_compiles(nvcc: str, source: Path, *flags: str, cwd=None) -> Path:
    obj = source.with_suffix(".o")
    proc = subprocess.run([nvcc, "-arch=sm_90", *flags, "-c", str(source), "-o", str(obj)],
                          capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return obj


# --------------------------------------------------------------------------- -include

@needs_clang
@pytest.mark.parametrize("checker", ["clang", "nvcc"])
def test_a_forced_include_is_read_in_single_file_mode(tmp_path, capsys, checker):
    if checker == "nvcc":
        _nvcc_or_skip()
    out = tmp_path / "forced.cu"
    assert main(["transform", str(UNITS / "forced.cu"), "-include", str(CONFIG),
                 "--compile-check", checker, "--report", "json", "-o", str(out)]) == 0
    report = json.loads(capsys.readouterr().err)
    actions = {k["name"]: (k["action"], k["code"]) for k in report["kernels"]}
    # the plain kernel and the template's instantiation (read by Clang with the
    # header: scale_rows<real> is scale_rows<float>) are transformed, not unparsed
    assert actions["add_rows"][0] in CHANGED, actions
    assert actions["scale_rows__pc_float"][0] in CHANGED, actions
    assert actions["scale_rows"] == ("unchanged", "lowered")
    assert not any(d["code"] in ("unsupported-construct", "output-rejected")
                   for d in report["diagnostics"]), report["diagnostics"]
    text = out.read_text()
    assert "polycoal: restructured" in text
    assert "typedef float real" not in text     # the header stays the build's to read
    # --include and --pre-include are the same option
    assert main(["transform", str(UNITS / "forced.cu"), "--pre-include", str(CONFIG),
                 "--compile-check", "none"]) == 0
    assert capsys.readouterr().out == text


def test_a_missing_forced_include_is_unusable_input(tmp_path, capsys):
    assert main(["transform", str(UNITS / "forced.cu"), "-include",
                 str(tmp_path / "nowhere.h")]) == 2
    assert "nowhere.h: No such file or directory" in capsys.readouterr().err


@needs_clang
def test_the_output_compiles_and_runs_with_the_same_include(tmp_path, capsys):
    out = tmp_path / "forced.cu"
    assert main(["transform", str(UNITS / "forced.cu"), "-include", str(CONFIG),
                 "-o", str(out)]) == 0
    capsys.readouterr()
    runs_alike((UNITS / "forced.cu").read_text(), out.read_text(), tmp_path,
               forced_includes=(CONFIG,))
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        _nvcc_compiles(nvcc, out, "-include", str(CONFIG))


@needs_clang
def test_project_mode_reads_an_entry_with_include(tmp_path, capsys):
    """The entry's `-include ../include/config.h` is named from its directory; the unit is
    transformed (no longer refused), and its output compiles with the entry's command."""
    (tmp_path / "src").mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "build").mkdir()
    shutil.copy(UNITS / "forced.cu", tmp_path / "src" / "forced.cu")
    shutil.copy(CONFIG, tmp_path / "include" / "config.h")
    arguments = ["nvcc", "-arch=sm_90", "-include", "../include/config.h", "-c",
                 "../src/forced.cu", "-o", "forced.o"]
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path / "build"), "file": "../src/forced.cu",
         "arguments": arguments}]))
    out = tmp_path / "out"
    status = main(["transform", "-p", str(tmp_path / "build"), "-o", str(out), "--report",
                   "json", "-j", "1"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    (unit,) = report["units"]
    assert unit["status"] == 0 and unit["output"] == str(out / "forced.cu"), unit
    actions = {k["name"]: k["action"] for k in report["kernels"]}
    assert actions["add_rows"] in CHANGED and actions["scale_rows__pc_float"] in CHANGED
    runs_alike((UNITS / "forced.cu").read_text(), (out / "forced.cu").read_text(), tmp_path,
               forced_includes=(tmp_path / "include" / "config.h",))
    nvcc = shutil.which("nvcc")
    if nvcc is not None:          # the entry's own command, the output in place of the source
        proc = subprocess.run([nvcc, *arguments[1:5], str(out / "forced.cu"), "-o", "out.o"],
                              cwd=tmp_path / "build", capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- linking

@pytest.fixture(scope="module")
def halves(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """first.cu and second.cu, each transformed alone (single-file mode), in a directory
    of their own (their `#include "shared.cuh"` rewritten to find the header)."""
    if not clang.available():
        pytest.skip("libclang is not installed: header and template kernels are not read")
    directory = tmp_path_factory.mktemp("halves")
    outputs = {}
    for name in ("first.cu", "second.cu"):
        outputs[name] = directory / name
        assert main(["transform", str(UNITS / name), "--compile-check", "none",
                     "-o", str(outputs[name])]) == 0
    return directory, outputs


def test_copies_of_header_and_template_kernels_are_static(halves):
    _, outputs = halves
    for path in outputs.values():
        text = path.read_text()
        for copy in ("scale_rows__pc_float", "scale_rows__pc_float__pc_checked",
                     "add_rows__pc"):
            # the prototype before the first launch and the definition
            assert text.count(f"static __global__ void {copy} (") == 1, (copy, text)
            assert text.count(f"static __global__ void {copy}(") == 1, (copy, text)
            assert f"__global__ void {copy}" not in text.replace(
                f"static __global__ void {copy}", ""), (copy, text)


def test_units_transformed_alone_link(halves):
    nvcc = _nvcc_or_skip()
    directory, outputs = halves
    objects = [_nvcc_compiles(nvcc, path) for path in outputs.values()]
    main_copy = directory / "main.cu"
    shutil.copy(UNITS / "main.cu", main_copy)
    objects.append(_nvcc_compiles(nvcc, main_copy))
    link = subprocess.run([nvcc, "-arch=sm_90", *map(str, objects), "-o",
                           str(directory / "program")], capture_output=True, text=True)
    assert link.returncode == 0, link.stderr


def test_units_transformed_alone_run_alike_on_the_cpu(halves, tmp_path):
    from test_project import _cpu_build
    _, outputs = halves
    runner = cpu_runner()
    printed = []
    for side in ("original", "transformed"):
        units = [((UNITS / "main.cu").read_text(), (), ())]
        units += [((UNITS / name).read_text(), (str(UNITS),), ()) if side == "original"
                  else (path.read_text(), (str(path.parent),), ())      # its includes
                  for name, path in outputs.items()]                    # name from there
        (tmp_path / side).mkdir()
        run = runner.run(_cpu_build(runner, units, tmp_path / side))
        assert run.failure is None, (side, run.stderr)
        printed.append(printed_numbers(run.stdout))
    assert len(printed[0]) == 1 and printed[0] == printed[1], printed
