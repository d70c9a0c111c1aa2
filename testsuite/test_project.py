"""Project mode, `polycoal transform -p BUILD_DIR -o OUT_DIR` (polycoal/project.py): the
compile database read into units, the text edits the project makes (the mark of kernels
launched from other units), where outputs go, and
testsuite/projects/multi_unit transformed whole: configured by CMake with
CMAKE_EXPORT_COMPILE_COMMANDS (or, without cmake or nvcc, a database written by hand as
Bear would), its outputs compiled and linked by nvcc per target, and both targets run on
the CPU runtime, original and transformed, printing the same numbers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from polycoal import project as pj
from polycoal.build.command import parse_command
from polycoal.cli import main
from polycoal.diagnostics import InputError

from conftest import printed_numbers, cpu_runner

PROJECT = Path(__file__).resolve().parent / "projects" / "multi_unit"
SOURCES = ("main.cu", "rows.cu", "cols.cu", "shift.cu")
TARGETS = {"app": "128", "app_narrow": "64"}         # CMakeLists.txt: ROW_BLOCK per target
POLYCOAL = [sys.executable, "-m", "polycoal"]


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYCOAL_")}
    env.update(extra)
    return env


# --------------------------------------------------------------------------- the database

def test_unit_of_a_cmake_entry_resolves_paths_against_its_directory(tmp_path):
    entry = {"directory": str(tmp_path / "build"),
             "command": "/usr/local/bin/nvcc -forward-unknown-to-host-compiler -DROW_BLOCK=64 "
                        "-I../include -isystem /opt/inc -UOLD --generate-code=arch=compute_90,"
                        "code=[compute_90,sm_90] -std=c++14 -x cu -c ../src/k.cu -o "
                        "CMakeFiles/app.dir/src/k.cu.o",
             "file": "../src/k.cu"}
    unit = pj.unit_of(entry, 3, "db: entry 3")
    assert unit.entry == 3 and unit.source == str(tmp_path / "src" / "k.cu")
    assert unit.preprocessor.include_dirs == (str(tmp_path / "include"), "/opt/inc")
    assert unit.preprocessor.defines == ("ROW_BLOCK=64",)
    assert unit.preprocessor.undefines == ("OLD",) and unit.preprocessor.std == "c++14"
    assert unit.object == str(tmp_path / "build" / "CMakeFiles/app.dir/src/k.cu.o")
    assert unit.target == "app" and unit.preprocessor.forced_includes == ()


def test_unit_of_bear_entries(tmp_path):
    """Bear writes `arguments` and `output`; -x cu makes a .cpp file CUDA; host C++, links
    and -E compile no CUDA."""
    d = str(tmp_path)
    unit = pj.unit_of({"directory": d, "arguments": ["nvcc", "-x", "cu", "-c", "k.cpp", "-o",
                                                     "k.o", "-include", "cfg.h"],
                       "file": "k.cpp", "output": "obj/k.o"}, 0, "db")
    assert unit.source == str(tmp_path / "k.cpp") and unit.object == str(tmp_path / "obj/k.o")
    # -include: from the entry's directory where the file is there, else on the path
    assert unit.preprocessor.forced_includes == ("cfg.h",) and unit.target == ""
    assert unit.preprocessor.std == "c++17"         # nvcc's default dialect
    for args in (["g++", "-c", "k.cpp"], ["nvcc", "-o", "app", "a.o", "b.o"],
                 ["nvcc", "-E", "k.cu"]):
        assert pj.unit_of({"directory": d, "arguments": args, "file": args[-1]}, 0, "db") \
            is None


def test_unit_of_response_files_named_from_the_entry_directory(tmp_path):
    (tmp_path / "includes_CUDA.rsp").write_text("-I../inc -DFROM_RSP=1")
    unit = pj.unit_of({"directory": str(tmp_path), "file": "k.cu", "command":
                       "nvcc --options-file includes_CUDA.rsp -c k.cu"}, 0, "db")
    assert unit.preprocessor.include_dirs == (str(tmp_path.parent / "inc"),)
    assert unit.preprocessor.defines == ("FROM_RSP=1",)


@pytest.mark.parametrize("entry, message", [
    ({"file": "k.cu", "command": "nvcc -c k.cu"}, "no 'directory'"),
    ({"directory": "/b", "command": "nvcc -c k.cu"}, "no 'file'"),
    ({"directory": "/b", "file": "k.cu"}, "neither 'arguments'"),
    ({"directory": "b", "file": "k.cu", "command": "nvcc -c k.cu"}, "not an absolute path"),
    ({"directory": "/b", "file": "k.cu", "command": "nvcc -c 'k.cu"}, "cannot split"),
])
def test_bad_entries(entry, message):
    with pytest.raises(InputError, match=message):
        pj.unit_of(entry, 0, "db")


def test_read_database_errors(tmp_path):
    with pytest.raises(InputError, match="no compile database.*CMAKE_EXPORT_COMPILE_COMMANDS"):
        pj.read_database(str(tmp_path))
    (tmp_path / "compile_commands.json").write_text("{not json")
    with pytest.raises(InputError, match="not a compile database"):
        pj.read_database(str(tmp_path))
    (tmp_path / "compile_commands.json").write_text('{"a": 1}')
    with pytest.raises(InputError, match="a JSON list of objects"):
        pj.read_database(str(tmp_path))
    (tmp_path / "compile_commands.json").write_text(
        json.dumps([{"directory": str(tmp_path), "file": "a.cpp", "command": "g++ -c a.cpp"}]))
    path, entries = pj.read_database(str(tmp_path / "compile_commands.json"))
    with pytest.raises(InputError, match="no entry compiles CUDA"):
        pj.units_of(entries, path)


def test_paths_and_targets():
    assert pj.target_of("/b/CMakeFiles/my_app.dir/src/k.cu.o") == "my_app"
    assert pj.target_of("obj/k.o") == "" and pj.target_of(None) == ""
    assert pj.common_root(["/p/src/a.cu", "/p/src/x/b.cu", "/p/lib/c.cu"]) == "/p"
    assert pj.output_path("/out", "/p", "/p/src/a.cu") == "/out/src/a.cu"
    assert pj.variant_path("/out/src/a.cu", "app") == "/out/src/a.app.cu"


# --------------------------------------------------------------------------- text edits

def test_keep_marker_round_trip():
    marker = pj.keep_marker(("k", "j"), "\r\n")
    assert marker.startswith("\r\n#if 0") and "(void *)&k, (void *)&j" in marker
    assert marker.endswith("#endif\r\n")
    text = "int x;" + marker + "__global__ void k__pc() {}\n"
    assert pj.remove_marker(text, marker) == "int x;__global__ void k__pc() {}\n"
    assert pj.remove_marker("int x;", marker) is None
    assert pj.remove_marker(text + marker, marker) is None


def test_a_marked_kernel_is_kept_and_its_own_launches_too(write_cu):
    """The mark keeps a kernel whose own unit launches it (the per-file pipeline would
    restructure it) as written; the unit's other kernels are still transformed."""
    path = write_cu("""
__global__ void both(float *__restrict__ a, int n, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < m; j++)
      a[i * m + j] += 1.0f;
}
__global__ void here(float *__restrict__ a, int n, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < m; j++)
      a[i * m + j] *= 2.0f;
}
void run(float *a) { both<<<1, 128>>>(a, 128, 64); here<<<1, 128>>>(a, 128, 64); }
""")
    unit = pj.Unit(0, str(path), str(path.parent), None, pj.PreprocessorOptions())
    from polycoal.transform import TransformOptions
    free = pj.transform_unit(unit, TransformOptions())
    kept = pj.transform_unit(unit, TransformOptions(), ("both",))
    assert free.status == kept.status == 0
    assert set(free.changed) == {"both", "here"} and kept.changed == ("here",)
    assert {k.name: k.code for k in kept.kernels}["both"] == "used-elsewhere"
    original = path.read_text()
    both = original[original.index("__global__ void both"):original.index("__global__ void here")]
    assert kept.text.startswith(original[:original.index("__global__ void here")])
    assert both not in free.text and "both<<<1, 128>>>(a, 128, 64);" in kept.text
    assert "here<<<1, 128>>>(a" not in kept.text          # restructured
    assert "#if 0" not in kept.text and "polycoal_launched_elsewhere" not in kept.text


def test_cross_unit_uses_and_relabel():
    define = pj.UnitResult(0, kernels=(
        pj.KernelRecord("k", "/p/a.cu", 3, "unchanged", "no-launch", "no launch site"),
        pj.KernelRecord("j", "/p/a.cu", 9, "unchanged", "race", "threads race")),
        defined=("k", "j", "s"), external=("k", "j"))
    launch = pj.UnitResult(0, defined=(), launched=(pj.Launched("k", "/p/b.cu", 3),))
    static_too = pj.UnitResult(0, defined=("s",), external=())
    sources = [("/p/a.cu", "__global__ void k(float *a) {}"),
               ("/p/b.cu", "__global__ void k(float *a);\nvoid f() {\n"
                           "  k<<<1, 1>>>(0);\n  cudaLaunchKernel((void *)j, 1, 1, 0, 0, 0);\n}"),
               ("/p/c.cu", "int s;")]
    uses = pj.cross_unit_uses([define, launch, static_too], sources)
    assert uses == {"k": [pj.Launched("k", "/p/b.cu", 3)],
                    "j": [pj.Launched("j", "/p/b.cu", 4, False)]}
    relabelled = pj.relabel(define, uses)
    k, j = relabelled.kernels
    assert k.code == pj.OTHER_UNIT and k.launches == ("/p/b.cu:3",)
    assert "launched from other translation units: /p/b.cu:3;" in k.reason
    assert j.code == "race" and j.reason.endswith("also named in other translation units "
                                                  "(/p/b.cu:4 (named))")
    # a unit that could not be read at all may use every kernel defined elsewhere
    # a unit that failed: the kernels its text defines are its own; one that cannot be
    # read (a stale entry) is in no build
    unreadable = pj.UnitResult(2, error="cannot read")
    assert pj.cross_unit_uses([define, unreadable], [sources[0], None]) == {}
    failed = pj.UnitResult(2, error="a syntax error")
    text = "__global__ void k(float *a) { a[0] = 1; }\nvoid f() { k<<<1, 1>>>(0); }\n"
    assert pj.cross_unit_uses([define, failed], [sources[0], ("/p/e.cu", text)]) == {}
    assert pj.defined_in(text + "__global__ void proto(int);\n") == ["k"]


def test_assign_outputs_writes_once_or_as_variants():
    options = pj.PreprocessorOptions()
    units = [pj.Unit(0, "/p/src/a.cu", "/b", None, options, "app"),
             pj.Unit(1, "/p/src/a.cu", "/b", None, options, "app_narrow"),
             pj.Unit(2, "/p/src/b.cu", "/b", None, options, "app"),
             pj.Unit(3, "/p/src/b.cu", "/b", None, options, "app_narrow"),
             pj.Unit(4, "/p/src/c.cu", "/b", None, options, "app"),
             pj.Unit(5, "/p/src/d.cu", "/b", None, options, "x"),
             pj.Unit(6, "/p/src/d.cu", "/b", None, options, "x")]
    results = [pj.UnitResult(0, t) for t in ("A1", "A2", "B", "B", None, "D", None)]
    outputs, writes, notes = pj.assign_outputs(units, results, "/p", "/out")
    assert outputs == ["/out/src/a.app.cu", "/out/src/a.app_narrow.cu", "/out/src/b.cu",
                       "/out/src/b.cu", None, "/out/src/d.entry5.cu", None]
    assert writes == [("/out/src/a.app.cu", "/p/src/a.cu", "A1"),
                      ("/out/src/a.app_narrow.cu", "/p/src/a.cu", "A2"),
                      ("/out/src/b.cu", "/p/src/b.cu", "B"),
                      ("/out/src/d.entry5.cu", "/p/src/d.cu", "D")]
    assert len(notes) == 2 and "entry 6 (x) -> the original" in notes[1]


def _crash_on(name):
    real = pj.transform_unit

    def transform(unit, options, keep=()):
        if unit.source.endswith(name):
            os._exit(1)
        return real(unit, options, keep)
    return transform


def test_a_dying_worker_fails_its_unit_alone(write_cu, monkeypatch):
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("the crash is injected into forked workers")
    from polycoal.transform import TransformOptions
    paths = [write_cu("__global__ void k(float *a) { a[threadIdx.x] = 0; }\n", f"{n}.cu")
             for n in ("a", "crash", "b")]
    tasks = [(pj.Unit(k, str(p), str(p.parent), None, pj.PreprocessorOptions()),
              TransformOptions(), ()) for k, p in enumerate(paths)]
    monkeypatch.setattr(pj, "transform_unit", _crash_on("crash.cu"))
    seen = []
    results = pj.run_units(tasks, 2, lambda k, r: seen.append(k))
    assert sorted(seen) == [0, 1, 2]
    assert [r.status for r in results] == [0, 3, 0]
    assert "the process transforming it died" in results[1].error


# --------------------------------------------------------------------------- the project

def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _hand_database(project: Path, build: Path) -> None:
    """What Bear records for the project's build (`arguments`, sources named relative to
    the build directory): the fallback where CMake cannot configure CUDA."""
    entries = []
    for target, block in TARGETS.items():
        for name in SOURCES:
            obj = f"CMakeFiles/{target}.dir/src/{name}.o"
            entries.append({"directory": str(build), "file": os.path.relpath(
                project / "src" / name, build), "output": obj, "arguments": [
                "nvcc", f"-DROW_BLOCK={block}", f"-I{os.path.relpath(project / 'include', build)}",
                "--generate-code=arch=compute_90,code=[compute_90,sm_90]", "-std=c++17",
                "-x", "cu", "-c", os.path.relpath(project / "src" / name, build), "-o", obj]})
    build.mkdir(parents=True, exist_ok=True)
    (build / "compile_commands.json").write_text(json.dumps(entries, indent=2))


def _configure(project: Path, build: Path) -> str:
    """The database as CMake exports it, or written by hand where cmake or nvcc is
    missing or cannot configure CUDA; which one it is."""
    if shutil.which("cmake") and shutil.which("nvcc"):
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        proc = subprocess.run(["cmake", "-S", str(project), "-B", str(build), *generator,
                               "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                               "-DCMAKE_CUDA_ARCHITECTURES=90"],
                              capture_output=True, text=True, env=clean_env())
        if proc.returncode == 0 and (build / "compile_commands.json").is_file():
            return "cmake"
    _hand_database(project, build)
    return "hand"


@pytest.fixture(scope="module")
def transformed(tmp_path_factory):
    """testsuite/projects/multi_unit copied, configured, and transformed whole by the
    command line: (project, build, out, the JSON report, stderr, database kind)."""
    base = tmp_path_factory.mktemp("multi_unit")
    project = base / "multi_unit"
    shutil.copytree(PROJECT, project)
    build = base / "build"
    kind = _configure(project, build)
    before = _tree_digest(project)
    out = base / "out"
    proc = subprocess.run([*POLYCOAL, "transform", "-p", str(build), "-o", str(out),
                           "--report", "json", "--jobs", "2"], capture_output=True,
                          text=True, env=clean_env(), cwd=base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _tree_digest(project) == before             # the input never changes
    return project, build, out, json.loads(proc.stdout), proc.stderr, kind


def test_project_outputs(transformed):
    project, build, out, report, stderr, _ = transformed
    src = project / "src"
    # cols.cu transforms alike for both targets: written once; rows.cu's launches use
    # the target's ROW_BLOCK: one variant per target; shift.cu's kernels transformed
    # where they are defined and their launches in main.cu rewritten (alike for both
    # targets); no header (kernels.cuh, app.h, the included detail/row_sums_impl.cu)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == \
        ["cols.cu", "main.cu", "rows.app.cu", "rows.app_narrow.cu", "shift.cu"]
    assert report["schema"] == "polycoal-project" and report["status"] == 0
    assert report["root"] == str(src)
    outputs = {(Path(u["file"]).name, u["target"]): u["output"] for u in report["units"]}
    assert outputs == {("main.cu", "app"): str(out / "main.cu"),
                       ("main.cu", "app_narrow"): str(out / "main.cu"),
                       ("shift.cu", "app"): str(out / "shift.cu"),
                       ("shift.cu", "app_narrow"): str(out / "shift.cu"),
                       ("cols.cu", "app"): str(out / "cols.cu"),
                       ("cols.cu", "app_narrow"): str(out / "cols.cu"),
                       ("rows.cu", "app"): str(out / "rows.app.cu"),
                       ("rows.cu", "app_narrow"): str(out / "rows.app_narrow.cu")}
    for name in ("rows.app.cu", "rows.app_narrow.cu", "cols.cu"):
        text = (out / name).read_text()
        # the header's template, copied into two units, links: its copies are static
        assert "static __global__ void row_scale__pc_float(" in text
        assert "polycoal: restructured" in text
    assert (out / "rows.app.cu").read_text() != (out / "rows.app_narrow.cu").read_text()
    assert '#include "kernels.cuh"' in (out / "cols.cu").read_text()
    assert '#include "' + os.path.relpath(src / "detail" / "row_sums_impl.cu", out) + '"' in \
        (out / "rows.app.cu").read_text()
    # one line per unit on standard error (not a terminal), and the variants' note
    assert len(re.findall(r"^polycoal: \[\d+/\d+\] ", stderr, re.M)) == 10  # 8 + 2 again
    assert "rows.cu: its 2 entries transform differently" in stderr


def test_project_report_kernels(transformed):
    project, _, _, report, _, _ = transformed
    main_cu = project / "src" / "main.cu"
    lines = main_cu.read_text().splitlines()
    line_of = {name: next(k + 1 for k, l in enumerate(lines) if f"{name}<<<" in l)
               for name in ("shift_rows", "bump_rows")}
    by = {}
    for k in report["kernels"]:
        by.setdefault((Path(k["unit"]).name, k["name"]), []).append(k)
    for name in ("shift_rows", "bump_rows"):
        for k in by[("shift.cu", name)]:               # once per target
            # transformed where it is defined, its launches in main.cu rewritten there
            assert k["action"] == "restructured" and k["code"] == "restructured"
            assert k["launched_in_other_units"] == [f"{main_cu}:{line_of[name]}"]
            assert f"(main.cu:{line_of[name]}) rewritten there" in k["reason"]
            assert k["file"] == str(project / "src" / "shift.cu")
    assert len(by[("shift.cu", "bump_rows")]) == 2
    assert {k["code"] for k in by[("rows.cu", "row_scale__pc_float")]} == {"restructured"}
    assert by[("rows.cu", "row_scale__pc_float")][0]["file"] == \
        str(project / "include" / "kernels.cuh")
    assert {k["code"] for k in by[("rows.cu", "row_sums__pc")]} == {"reduced"}
    assert by[("rows.cu", "row_sums__pc")][0]["file"] == \
        str(project / "src" / "detail" / "row_sums_impl.cu")
    assert report["counts"] == {"lowered": 6, "reduced": 2, "restructured": 10}


def _entries(build: Path) -> list[dict]:
    return json.loads((build / "compile_commands.json").read_text())


def _target(entry: dict) -> str:
    args = entry.get("arguments") or shlex.split(entry["command"])
    output = entry.get("output") or args[args.index("-o") + 1]
    return pj.target_of(output)


def test_project_outputs_compile_and_link_with_nvcc(transformed, nvcc, tmp_path):
    """Each entry's own command, the transformed file in place of its source, then each
    target's objects linked: the copies of the header's kernel in two units link."""
    project, build, out, report, _, _ = transformed
    compiled = {t: [] for t in TARGETS}
    jobs = []
    for entry, unit in zip(_entries(build), report["units"]):
        args = entry.get("arguments") or shlex.split(entry["command"])
        source = unit["output"] or unit["file"]
        k = args.index("-o")
        obj = tmp_path / f"{entry['file'].replace('/', '_')}.{_target(entry)}.o"
        args = [nvcc] + [source if os.path.normpath(os.path.join(entry["directory"], a))
                         == unit["file"] else a for a in args[1:k]] + ["-o", str(obj)]
        jobs.append(subprocess.Popen(args, cwd=entry["directory"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True))
        compiled[_target(entry)].append(str(obj))
        if len(jobs) == 2:
            for job in jobs:
                assert job.wait() == 0, job.stdout.read()
            jobs = []
    for job in jobs:
        assert job.wait() == 0, job.stdout.read()
    for target, objects in compiled.items():
        link = subprocess.run([nvcc, "-arch=sm_90", *objects, "-o", str(tmp_path / target)],
                              capture_output=True, text=True)
        assert link.returncode == 0, link.stderr


def _cpu_build(runner, units: list[tuple[str, tuple[str, ...], tuple[str, ...]]],
               directory: Path) -> str:
    """The program of several translation units (text, include dirs, defines), each
    compiled for the CPU runtime, linked; its executable."""
    from polycoal.runtime.cpu_program import HEADER, rewrite_for_cpu
    objects = []
    for k, (text, includes, defines) in enumerate(units):
        src = directory / f"unit{k}.cpp"
        src.write_text(rewrite_for_cpu(text))
        obj = directory / f"unit{k}.o"
        proc = subprocess.run([runner.cxx, *runner.flags, "-c", "-I", runner.include,
                               *(f"-I{d}" for d in includes), *(f"-D{d}" for d in defines),
                               "-include", os.path.join(runner.include, HEADER), str(src),
                               "-o", str(obj)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        objects.append(str(obj))
    exe = directory / "program"
    proc = subprocess.run([runner.cxx, *objects, runner.object, *runner.link_flags, "-o",
                           str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return str(exe)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_project_runs_alike_on_the_cpu(transformed, target, tmp_path):
    """Each target, original and transformed (the files the report names for its
    entries), built for the CPU runtime and run: the same numbers, including the rows
    main.cu's launch of bump_rows covers beyond those of shift.cu's own launch."""
    _, build, _, report, _, _ = transformed
    runner = cpu_runner()
    printed = []
    for side in ("original", "transformed"):
        units = []
        for entry, unit in zip(_entries(build), report["units"]):
            if _target(entry) != target:
                continue
            args = entry.get("arguments") or shlex.split(entry["command"])
            command = parse_command(args[1:])
            path = unit["output"] if side == "transformed" and unit["output"] else unit["file"]
            includes = (os.path.dirname(path), *(os.path.join(entry["directory"], d)
                                                 for d in command.include_dirs))
            units.append((Path(path).read_text(), includes, command.defines))
        assert len(units) == len(SOURCES)
        directory = tmp_path / side
        directory.mkdir()
        run = runner.run(_cpu_build(runner, units, directory))
        assert run.failure is None, (side, run.stderr)
        printed.append(printed_numbers(run.stdout))
    assert len(printed[0]) == 5 and len(printed[1]) == len(printed[0])
    for a, b in zip(*printed):
        assert abs(a - b) <= 1e-5 * max(abs(a), 1.0), printed


def test_project_text_and_sarif_reports(transformed, tmp_path):
    """The text report on standard output; SARIF 2.1.0 with a result per kernel."""
    _, build, _, report, _, _ = transformed
    out = tmp_path / "again"
    text = subprocess.run([*POLYCOAL, "transform", "-p", str(build), "-o", str(out),
                           "-j", "1"], capture_output=True, text=True, env=clean_env())
    assert text.returncode == 0, text.stderr
    assert "kernel shift_rows restructured [restructured]: " in text.stdout
    assert "its launches in other translation units (main.cu:" in text.stdout
    assert "kernels by reason code: lowered 6, reduced 2, restructured 10" in text.stdout
    assert text.stdout.rstrip().endswith("exit status 0 (ok)")
    assert "polycoal: [1/" in text.stderr and "polycoal: [" not in text.stdout
    sarif = subprocess.run([*POLYCOAL, "transform", "-p", str(build), "-o", str(out),
                            "--report", "sarif"], capture_output=True, text=True,
                           env=clean_env())
    assert sarif.returncode == 0, sarif.stderr
    log = json.loads(sarif.stdout)
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert len(results) == len(report["kernels"])
    assert {r["ruleId"] for r in results} == set(report["counts"])
    assert {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]} == set(report["counts"])


def _resolved(out: Path) -> dict[str, str]:
    """The files under `out`, each quoted include that names a file from its directory
    (relocated: the path depends on where `out` is) as an absolute path."""
    def absolute(m, directory):
        path = directory / m.group(1)
        return f'#include "{os.path.normpath(path)}"' if path.is_file() else m.group(0)
    return {str(p.relative_to(out)): re.sub(r'#include "([^"]+)"',
                                            lambda m: absolute(m, p.parent), p.read_text())
            for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_bear_database_gives_the_same_outputs(transformed, tmp_path):
    """The database as Bear writes it for a Make build (`arguments`, `output`, paths
    relative to the build directory) transforms the project as CMake's does."""
    project, _, out, report, _, _ = transformed
    build = tmp_path / "bear"
    _hand_database(project, build)
    again = tmp_path / "out"
    proc = subprocess.run([*POLYCOAL, "transform", "-p", str(build / "compile_commands.json"),
                           "-o", str(again), "--report", "json"], capture_output=True,
                          text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert _resolved(again) == _resolved(out)
    assert json.loads(proc.stdout)["counts"] == report["counts"]


class _Terminal:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_bar_on_a_terminal_and_lines_elsewhere():
    unit = pj.Unit(2, "/p/src/k.cu", "/b", None, pj.PreprocessorOptions(), "app")
    done = pj.UnitResult(0, kernels=(pj.KernelRecord("k", "/p/src/k.cu", 1, "restructured",
                                                     "restructured", ""),))
    terminal = _Terminal()
    progress = pj.Progress(terminal, 2)
    progress.unit(unit, done)
    assert terminal.text.startswith("\r\033[Kpolycoal [" + "#" * 15 + "." * 15 + "] 1/2 ")
    assert "\n" not in terminal.text
    progress.close()
    assert terminal.text.endswith("\r\033[K")
    import io
    stream = io.StringIO()
    progress = pj.Progress(stream, 2)
    progress.unit(unit, done)
    progress.unit(unit, pj.UnitResult(2, error="polycoal: error: no"))
    progress.close()
    assert stream.getvalue().splitlines() == [
        "polycoal: [1/2] /p/src/k.cu (entry 2, app): 1 kernel changed, 0 unchanged",
        "polycoal: [2/2] /p/src/k.cu (entry 2, app): not transformed (unusable input)"]


# --------------------------------------------------------------------------- bad input

def _small_project(tmp_path: Path, sources: dict[str, str]) -> Path:
    build = tmp_path / "build"
    build.mkdir()
    entries = []
    for name, text in sources.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is not None:
            path.write_text(text)
        entries.append({"directory": str(build), "file": str(path),
                        "arguments": ["nvcc", "-c", str(path), "-o", f"{name}.o"]})
    (build / "compile_commands.json").write_text(json.dumps(entries))
    return build


KERNEL = """
__global__ void scale(float *__restrict__ a, int n, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < m; j++)
      a[i * m + j] *= 2.0f;
}
void run(float *a) { scale<<<1, 128>>>(a, 128, 64); }
"""


@pytest.mark.parametrize("argv, message", [
    (["-p", "BUILD"], "needs -o OUT_DIR"),
    (["-p", "BUILD", "-o", "-"], "needs -o OUT_DIR"),
    (["x.cu", "-p", "BUILD", "-o", "OUT"], "give no input file"),
    (["-p", "BUILD", "-o", "OUT", "-D", "N=1"], "-D applies to one file"),
    (["-p", "BUILD", "-o", "OUT", "-include", "cfg.h"], "-include applies to one file"),
    (["-p", "BUILD", "-o", "OUT", "--kernel", "k"], "--kernel applies to one file"),
    (["-p", "BUILD", "-o", "OUT", "--root", "/nowhere"], "not under the root"),
    (["-p", "BUILD", "-o", "SRC"], "is the sources' root"),
    (["-p", "BUILD", "-o", "FILE"], "not a directory"),
    (["-p", "NOWHERE", "-o", "OUT"], "no compile database"),
    ([], "give a .cu file"),
    (["k.cu", "--jobs", "2"], "--jobs applies only with -p"),
    (["k.cu", "--report", "sarif"], "--report sarif is for a whole project"),
])
def test_project_usage_errors(tmp_path, capsys, argv, message):
    build = _small_project(tmp_path, {"k.cu": KERNEL})
    (tmp_path / "file").write_text("")
    names = {"BUILD": str(build), "OUT": str(tmp_path / "out"), "SRC": str(tmp_path / "src"),
             "FILE": str(tmp_path / "file"), "NOWHERE": str(tmp_path / "nowhere"),
             "k.cu": str(tmp_path / "src" / "k.cu")}
    assert main(["transform", *[names.get(a, a) for a in argv]]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    assert not (tmp_path / "out").exists()


def test_a_unit_that_cannot_be_read_is_reported_and_the_others_written(tmp_path, capsys):
    build = _small_project(tmp_path, {"good.cu": KERNEL, "missing.cu": None,
                                      "broken.cu": '#include "nowhere.h"\n' +
                                      KERNEL.replace("scale", "broken"),
                                      "forced.cu": KERNEL.replace("scale", "forced")})
    entries = json.loads((build / "compile_commands.json").read_text())
    entries[3]["arguments"][1:1] = ["-include", "cfg.h"]
    (build / "compile_commands.json").write_text(json.dumps(entries))
    out = tmp_path / "out"
    status = main(["transform", "-p", str(build), "-o", str(out), "--report", "json", "-j", "1"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert status == 2 and report["status"] == 2
    assert [p.name for p in out.iterdir()] == ["good.cu"]
    by = {Path(u["file"]).name: u for u in report["units"]}
    assert by["good.cu"]["status"] == 0 and by["good.cu"]["output"] == str(out / "good.cu")
    assert by["missing.cu"]["status"] == 2 and "cannot read" in by["missing.cu"]["error"]
    assert by["broken.cu"]["status"] == 2 and "nowhere.h" in by["broken.cu"]["error"]
    # its -include names a file that is nowhere: unusable, as the compiler finds it
    assert by["forced.cu"]["status"] == 2 and "cfg.h" in by["forced.cu"]["error"]
    for name in ("missing.cu", "broken.cu", "forced.cu"):
        assert by[name]["output"] is None and by[name]["error"] in captured.err


def test_an_internal_error_is_confined_to_its_unit(tmp_path, capsys, monkeypatch):
    build = _small_project(tmp_path, {"a.cu": KERNEL, "b.cu": KERNEL.replace("scale", "twice")})
    import polycoal.transform as transform

    real = transform.transform_program

    def failing(program, options):
        if program.path.endswith("b.cu"):
            raise KeyError("boom")
        return real(program, options)
    monkeypatch.setattr(transform, "transform_program", failing)
    out = tmp_path / "out"
    assert main(["transform", "-p", str(build), "-o", str(out), "-j", "1"]) == 3
    captured = capsys.readouterr()
    assert [p.name for p in out.iterdir()] == ["a.cu"]
    assert "polycoal: internal error: " + str(tmp_path / "src" / "b.cu") + ": KeyError: " \
        "'boom'" in captured.err
    assert "exit status 3 (internal error)" in captured.out


def test_an_output_that_is_an_input_is_refused(tmp_path, capsys):
    """OUT_DIR/src/k.cu would be a header the project reads: nothing is written."""
    build = _small_project(tmp_path, {"k.cu": '#include "../inc/k.cu"\n' + KERNEL})
    (tmp_path / "inc").mkdir()
    header = tmp_path / "inc" / "k.cu"
    header.write_text("// a header\n")
    status = main(["transform", "-p", str(build), "-o", str(tmp_path / "inc"), "-j", "1"])
    assert status == 2 and header.read_text() == "// a header\n"
    assert "is an input of the project" in capsys.readouterr().err


ROWS_KERNEL = KERNEL.replace("scale<<<1, 128>>>(a, 128, 64)", "scale<<<4096, 256>>>(a, 1048576, 64)")


def test_measure_in_project_mode_without_a_gpu_says_what_it_needs(tmp_path, capsys):
    try:
        import pycuda.driver  # noqa: F401
        pytest.skip("pycuda is installed here")
    except ImportError:
        pass
    build = _small_project(tmp_path, {"k.cu": ROWS_KERNEL})
    out = tmp_path / "out"
    assert main(["transform", "-p", str(build), "-o", str(out), "--measure"]) == 2
    assert "transform -p --measure runs kernels on the GPU" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("speedup, changed", [(0.9, False), (3.0, True)])
def test_measure_in_project_mode_keeps_what_the_device_finds_no_faster(
        tmp_path, capsys, monkeypatch, speedup, changed):
    """Each unit is transformed as `transform --measure` transforms one file: a kernel
    the device times no faster is kept as written (measured-slower), one faster stays
    changed; the times are in the report. (The device is faked: its verdicts given.)"""
    import polycoal.bench
    from polycoal.validate.device import DeviceVerdict
    seen = []

    def verdicts(program, result, options, arguments, repeats):
        seen.append((repeats, [d.kernel for d in result.decisions if d.action != "unchanged"]))
        return [DeviceVerdict("scale", True, "ok", 1.0, 1.0 / speedup)]
    monkeypatch.setattr(polycoal.bench, "require_device", lambda command: None)
    monkeypatch.setattr(polycoal.bench, "validate_device", verdicts)
    build = _small_project(tmp_path, {"k.cu": ROWS_KERNEL})
    out = tmp_path / "out"
    assert main(["transform", "-p", str(build), "-o", str(out), "--measure", "--repeat", "7",
                 "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert seen and seen[0] == (7, ["scale"])
    (unit,) = report["units"]
    (kernel,) = report["kernels"]
    assert any(x["code"] == "measured" and "measured: 1 ms" in x["message"]
               for x in unit["diagnostics"])
    if changed:
        assert kernel["action"] != "unchanged" and (out / "k.cu").exists()
    else:
        assert kernel["action"] == "unchanged" and kernel["code"] == "measured-slower"
        assert "0.90x as fast as written" in kernel["reason"]
        assert not (out / "k.cu").exists()


def test_bench_over_a_project_benches_every_unit_once(tmp_path, capsys, monkeypatch):
    """`polycoal bench -p BUILD`: each CUDA unit of the database benched as one file is
    (a source compiled twice with the same flags, once), its prediction beside the
    measurement (the device faked: its verdicts given); without a GPU, exit 2."""
    import polycoal.bench
    from polycoal.validate.device import DeviceVerdict
    build = _small_project(tmp_path, {"k.cu": ROWS_KERNEL,
                                      "j.cu": ROWS_KERNEL.replace("scale", "twice")})
    entries = json.loads((build / "compile_commands.json").read_text())
    (build / "compile_commands.json").write_text(json.dumps(entries + [entries[0]]))
    try:
        import pycuda.driver  # noqa: F401
    except ImportError:
        assert main(["bench", "-p", str(build)]) == 2
        assert "bench -p runs kernels on the GPU" in capsys.readouterr().err
    benched = []

    def verdicts(program, result, options, arguments, repeats):
        benched.append(os.path.basename(program.path))
        return [DeviceVerdict(d.kernel, True, "ok", 1.0, 0.25) for d in result.decisions]
    monkeypatch.setattr(polycoal.bench, "require_device", lambda command: None)
    monkeypatch.setattr(polycoal.bench, "validate_device", verdicts)
    assert main(["bench", "-p", str(build), "--report", "json"]) == 0
    units = json.loads(capsys.readouterr().out)
    assert sorted(benched) == ["j.cu", "k.cu"]
    assert [os.path.basename(u["file"]) for u in units] == ["k.cu", "j.cu"]
    (row,) = units[0]["rows"]
    assert row["kernel"] == "scale" and row["measured"]["speedup"] == 4.0
    assert row["predicted_speedup"] is not None
    assert main(["bench", "-p", str(build), "x.cu"]) == 2
