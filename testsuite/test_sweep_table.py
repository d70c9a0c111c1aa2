"""The corpus sweep's table (tools/sweep_corpus.py, issue 32): kernel definitions, and
the count as the projects' builds read them (a file another includes is not a unit of
its build: its kernels are counted in the reports of the units that include it)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import sweep_corpus  # noqa: E402


def kernel(name, code, action="unchanged"):
    return {"name": name, "code": code, "action": action, "reason": ""}


RECORDS = [
    {"file": "p/main.cu", "rc": 0, "changed": False, "diagnostics": [], "unit_errors": 0,
     "includes": ["p/kernels.cu"],
     "kernels": [kernel("scale", "best-axis-order"), kernel("reduce", "lowered"),
                 kernel("reduce<float>", "already-coalesced"), kernel("own", "race")]},
    # a fragment: read alone, its types are undeclared; its includer reads `scale`
    {"file": "p/kernels.cu", "rc": 0, "changed": False, "diagnostics": [], "unit_errors": 3,
     "includes": [],
     "kernels": [kernel("scale", "unparsed"), kernel("helper_only", "unparsed")]},
    {"file": "q/alone.cu", "rc": 0, "changed": False, "diagnostics": [], "unit_errors": 0,
     "includes": [], "kernels": [kernel("k", "no-launch")]},
]


def test_definitions_read_through_instances():
    names = {k["name"]: k["code"] for k in sweep_corpus.definitions(RECORDS[0])}
    assert names == {"scale": "best-axis-order", "reduce": "lowered", "own": "race"}


def test_as_built_counts_an_included_files_kernels_through_its_units():
    built = sweep_corpus.as_built(RECORDS)
    codes = sorted((k["name"], k["code"]) for k in built)
    # `scale` once (through main.cu), `helper_only` as read alone (no unit names it)
    assert codes == [("helper_only", "unparsed"), ("k", "no-launch"),
                     ("own", "race"), ("reduce", "lowered"), ("scale", "best-axis-order")]


def test_table_lines():
    text = sweep_corpus.table(RECORDS)
    assert "kernels: 6; reach the model: 3 (50.0%)" in text
    assert "as the builds read them" in text and ": 5; reach the model: 3 (60.0%)" in text


def test_quoted_includes(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "kernels.cu").write_text("__global__ void k() {}\n")
    main = tmp_path / "p" / "main.cu"
    main.write_text('#include <cstdio>\n#include "kernels.cu"\n  # include "missing.h"\n')
    assert sweep_corpus.quoted_includes(main, tmp_path) == ["p/kernels.cu"]


def test_build_flags_are_the_makefiles(tmp_path):
    """`--build-flags`: each source gets the -I/-D/-U/-include its project's Makefile
    compiles it with, read from `make -n -B` (variables expanded, relative paths made
    absolute; nothing built); a file no rule compiles (included by another) gets none."""
    import shutil
    import pytest
    if shutil.which("make") is None:
        pytest.skip("no make")
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "include").mkdir()
    for name in ("main.cu", "kernels.cu", "src/extra.cu"):
        (project / name).write_text("int main() { return 0; }\n")
    (project / "Makefile").write_text(
        "NVCC = nvcc\nFLAGS = -std=c++17 -O3 -DREAL=float -I include\n"
        "all: main.o extra.o\n"
        "main.o: main.cu\n\t$(NVCC) $(FLAGS) -UDEBUG -include include/pre.h -c main.cu\n"
        "extra.o: src/extra.cu\n\t$(NVCC) $(FLAGS) -Isrc -D 'N=64' -c src/extra.cu -o $@\n")
    inc = str((project / "include").resolve())
    assert sweep_corpus.build_flags(project / "main.cu", tmp_path) == (
        "-D", "REAL=float", "-I", inc, "-U", "DEBUG", "-include", inc + "/pre.h")
    assert sweep_corpus.build_flags(project / "src" / "extra.cu", tmp_path) == (
        "-D", "REAL=float", "-I", inc, "-I", str((project / "src").resolve()), "-D", "N=64")
    assert sweep_corpus.build_flags(project / "kernels.cu", tmp_path) == ()


def test_changed_programs_are_prepared_with_their_build_flags(tmp_path):
    """tools/run_changed_programs.py: the sweep's Makefile flags move with the copies:
    a path under the program's folder into the copy, a sibling folder (`-I../omp`) to
    where `../omp` reaches from the copy; other flags as they are."""
    import run_changed_programs as rcp
    program, sibling = tmp_path / "src" / "app", tmp_path / "src" / "omp"
    copy = tmp_path / "run" / "app" / "orig"
    flags = ["-I", str(program / "inc"), "-I", str(sibling), "-D", "N=4",
             "-include", str(program / "pre.h"), "-I", "/usr/include/x"]
    assert rcp._relocated(flags, program, copy) == [
        "-I", str(copy / "inc"), "-I", str(tmp_path / "run" / "app" / "omp"), "-D", "N=4",
        "-include", str(copy / "pre.h"), "-I", "/usr/include/x"]
