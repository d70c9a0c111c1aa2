"""The build plugin: compile-command parsing, #line mapping, the cache, the launcher (with
a fake compiler, then nvcc), and real builds of testsuite/projects/cuda_app with CMake
(Ninja and Makefile generators, launcher and polycoal_transform_sources) and Make.

Builds compile and link only (no GPU needed); they are skipped, with the reason, where
cmake, ninja, make or nvcc is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from polycoal.build import prepare as prepare_module
from polycoal.build.command import parse_command, rewrite_command
from polycoal.build.launcher import _real_nvcc, launch, prepare_file
from polycoal.build.lines import with_line_directives
from polycoal.build.prepare import KernelOutcome, Prepared, report
from polycoal.cli import main
from polycoal.frontend.lexer import continued_lines
from polycoal.frontend.preprocess import PreprocessorOptions

PROJECT = Path(__file__).resolve().parent / "projects" / "cuda_app"
LAUNCHER = [sys.executable, "-m", "polycoal", "launch"]


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYCOAL_")}
    env.update(extra)
    return env


@pytest.fixture
def app(tmp_path) -> Path:
    """A private copy of the test application's sources."""
    shutil.copytree(PROJECT / "src", tmp_path / "src")
    return tmp_path / "src"


# --------------------------------------------------------------------------- command lines

CMAKE_NVCC = ("-forward-unknown-to-host-compiler -DUSE_X=1 -I/inc -isystem /sys "
              "--generate-code=arch=compute_90,code=[compute_90,sm_90] -std=c++17 -MD "
              "-MT obj/k.cu.o -MF obj/k.cu.o.d -x cu -c /src/k.cu -o obj/k.cu.o").split()


def test_parse_cmake_nvcc_command():
    c = parse_command(CMAKE_NVCC)
    assert c.source_paths == ["/src/k.cu"]
    assert c.include_dirs == ("/inc", "/sys")
    assert c.defines == ("USE_X=1",)
    assert c.std == "c++17"
    assert c.output == "obj/k.cu.o"
    assert c.depfile == "obj/k.cu.o.d"
    assert c.compiles


def test_parse_separate_long_and_joined_forms():
    c = parse_command(["--include-path", "a", "--include-path=b", "-I", "c", "-D", "X",
                       "--define-macro=Y=2", "-U", "Z", "--std", "c++14", "-Xcompiler",
                       "-fPIC", "-gencode", "arch=compute_90,code=sm_90", "-o", "k.o",
                       "-c", "k.cu"])
    assert c.include_dirs == ("a", "b", "c")
    assert c.defines == ("X", "Y=2") and c.undefines == ("Z",)
    assert c.std == "c++14" and c.output == "k.o" and c.source_paths == ["k.cu"]


def test_parse_forced_includes():
    c = parse_command(["-include", "a.h", "--pre-include=b.h,c.h", "-imacros", "m.h", "-c",
                       "k.cu"])
    assert c.forced_includes == ("a.h", "b.h", "c.h") and c.imacros == ("m.h",)
    assert c.source_paths == ["k.cu"]


def test_only_cuda_sources_are_sources():
    assert parse_command(["-c", "a.cpp", "-o", "a.o"]).sources == ()
    assert parse_command(["-x", "cu", "-c", "a.cpp"]).source_paths == ["a.cpp"]
    assert parse_command(["-x", "c++", "-c", "k.cu"]).sources == ()
    assert parse_command(["-o", "app", "a.o", "b.o", "-lcudart"]).sources == ()


@pytest.mark.parametrize("flag", ["-E", "-M", "--version"])
def test_commands_that_compile_nothing(flag):
    assert not parse_command([flag, "k.cu"]).compiles


def test_dependency_file_names():
    assert parse_command(["-MD", "-c", "src/k.cu", "-o", "obj/k.o"]).depfile == "obj/k.d"
    assert parse_command(["-MD", "-c", "src/k.cu"]).depfile == "k.d"
    assert parse_command(["-c", "src/k.cu", "-MF", "x.d"]).depfile is None


def test_response_files(tmp_path):
    (tmp_path / "a.rsp").write_text('-I "/with space" -DA\n')
    (tmp_path / "b.rsp").write_text("-c k.cu")
    c = parse_command([f"@{tmp_path / 'a.rsp'}", "--options-file", str(tmp_path / "b.rsp")])
    assert c.include_dirs == ("/with space",) and c.defines == ("A",)
    assert c.source_paths == ["k.cu"]


def test_rewrite_command_compiles_the_copy_with_the_original_directory_first():
    c = parse_command(CMAKE_NVCC)
    args = rewrite_command(c, {"/src/k.cu": "/b/.polycoal/x/k.cu"})
    assert args[0] == "-I/src"
    assert args[1:] == [a if a != "/src/k.cu" else "/b/.polycoal/x/k.cu" for a in CMAKE_NVCC]


# --------------------------------------------------------------------------- #line


def _mapped_lines(text: str) -> list[tuple[str, int, str]]:
    """(file, line, text) the compiler sees for each non-directive line."""
    out, name, line = [], None, 1
    for raw in text.splitlines():
        m = re.match(r'#line (\d+) "(.*)"$', raw)
        if m:
            name, line = m.group(2), int(m.group(1))
            continue
        out.append((name, line, raw))
        line += 1
    return out


def test_line_directives_keep_unchanged_lines_on_their_original_lines():
    original = "".join(f"line{k}\n" for k in range(1, 11))
    new = original.replace("line3\nline4\n", "gen1\ngen2\ngen3\ngen4\ngen5\n")
    new = new.replace("line8\n", "")
    text = with_line_directives(original, new, "/p/k.cu")
    assert text.startswith('#line 1 "/p/k.cu"\n')
    for name, line, raw in _mapped_lines(text):
        assert name == "/p/k.cu"
        if raw.startswith("line"):
            assert raw == f"line{line}"
    assert ("/p/k.cu", 3, "gen1") in _mapped_lines(text)
    assert with_line_directives(original, original, "/p/k.cu") == \
        '#line 1 "/p/k.cu"\n' + original


def test_no_directive_inside_comments_strings_or_continued_lines():
    text = 'a /* one\ntwo */ b\n#define X \\\n  1\nc "x\\\nz"\n'
    assert continued_lines(text) == {2, 4, 6}


# --------------------------------------------------------------------------- reports


def _prepared(*kernels, error=None):
    return Prepared("k.cu", "text", tuple(KernelOutcome(*k) for k in kernels), error)


def test_report_warns_only_about_kernels_polycoal_could_not_transform():
    p = _prepared(("a", "k.cu", 3, "restructured", "new geometry", "restructured"),
                  ("b", "k.cu", 9, "unchanged", "already coalesced: no permutation lowers",
                   "already-coalesced"),
                  ("c", "k.cu", 20, "unchanged", "its pointer arguments may alias",
                   "may-alias"))
    lines, stop = report(p, strict=False, verbose=False)
    assert lines == ["polycoal: warning: k.cu:20: kernel c left unchanged: its pointer "
                     "arguments may alias"]
    assert not stop
    lines, stop = report(p, strict=True, verbose=False)
    assert stop and lines[0].startswith("polycoal: error: k.cu:20: kernel c")
    lines, _ = report(p, strict=False, verbose=True)
    assert "polycoal: k.cu:3: kernel a restructured: new geometry" in lines
    assert "polycoal: k.cu: cache miss" in lines


def test_report_of_a_file_polycoal_cannot_read():
    lines, stop = report(_prepared(error="preprocessor: boom"), strict=False, verbose=False)
    assert lines == ["polycoal: warning: k.cu: not transformed: preprocessor: boom"]
    assert not stop


# --------------------------------------------------------------------------- the launcher


@pytest.fixture
def fake_compiler(tmp_path, monkeypatch):
    """A compiler that records its arguments and writes a dependency file naming its
    source (the argument after -c) when given -MF. The test runs in tmp_path (a command
    without -o builds in the working directory)."""
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "compiler.log"
    script = tmp_path / "fakecc"
    script.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
open({str(log)!r}, "a").write("\\x00".join(args) + "\\n")
if "-MF" in args:
    src = args[args.index("-c") + 1]
    open(args[args.index("-MF") + 1], "w").write("k.o: " + src.replace(" ", "\\\\ ") + "\\n")
""")
    script.chmod(0o755)

    def calls():
        if not log.exists():
            return []
        return [line.split("\x00") for line in log.read_text().splitlines()]
    return str(script), calls


@pytest.mark.parametrize("args", [["-o", "app", "a.o", "b.o"], ["-c", "host.cpp"],
                                  ["-E", "k.cu"]])
def test_launcher_runs_other_commands_unchanged(fake_compiler, args):
    cc, calls = fake_compiler
    assert launch([cc, *args], clean_env()) == 0
    assert calls() == [args]


def test_launcher_disabled(fake_compiler, app):
    cc, calls = fake_compiler
    args = ["-c", str(app / "rows.cu")]
    assert launch([cc, *args], clean_env(POLYCOAL_DISABLE="1")) == 0
    assert calls() == [args]


def test_launcher_transforms_caches_and_fixes_the_depfile(fake_compiler, app, tmp_path,
                                                          capsys, monkeypatch):
    cc, calls = fake_compiler
    obj = tmp_path / "obj"
    obj.mkdir()
    source = str(app / "rows.cu")
    args = ["-MD", "-MF", str(obj / "rows.d"), "-c", source, "-o", str(obj / "rows.o")]
    assert launch([cc, *args], clean_env(POLYCOAL_VERBOSE="1")) == 0
    err = capsys.readouterr().err
    assert f"polycoal: {source}: cache miss" in err
    assert f"{source}:5: kernel scale_rows restructured" in err
    (call,) = calls()
    assert call[0] == f"-I{app}"
    copy = Path(call[call.index("-c") + 1])
    assert copy.parent.parent == obj / ".polycoal" and copy.name == "rows.cu"
    text = copy.read_text()
    assert text.startswith(f'#line 1 "{source}"') and "polycoal: restructured" in text
    assert (obj / "rows.d").read_text() == f"k.o: {source}\n"

    def no_transform(*a, **k):
        raise AssertionError("transformed again")
    monkeypatch.setattr(prepare_module, "transform_program", no_transform)
    assert launch([cc, *args], clean_env(POLYCOAL_VERBOSE="1")) == 0
    assert f"polycoal: {source}: cache hit" in capsys.readouterr().err
    assert calls()[1] == call


def test_launcher_warns_and_compiles_the_original(fake_compiler, app, capsys):
    cc, calls = fake_compiler
    args = ["-c", str(app / "axpy.cu")]
    assert launch([cc, *args], clean_env()) == 0
    assert calls() == [args]
    err = capsys.readouterr().err
    assert f"polycoal: warning: {app / 'axpy.cu'}:5: kernel axpy left unchanged: its " \
           "pointer arguments may alias" in err


def test_launcher_strict_stops_the_build(fake_compiler, app, capsys):
    cc, calls = fake_compiler
    assert launch([cc, "-c", str(app / "axpy.cu")], clean_env(POLYCOAL_STRICT="1")) == 1
    assert calls() == []
    assert "polycoal: error: " in capsys.readouterr().err


def test_launcher_survives_an_internal_failure(fake_compiler, app, capsys, monkeypatch):
    cc, calls = fake_compiler

    def broken(*a, **k):
        raise RuntimeError("bug")
    monkeypatch.setattr(prepare_module, "transform_program", broken)
    args = ["-c", str(app / "rows.cu")]
    assert launch([cc, *args], clean_env()) == 0
    assert calls() == [args]
    assert "not transformed: internal error (RuntimeError: bug)" in capsys.readouterr().err


def test_launcher_without_a_writable_cache(fake_compiler, app, tmp_path):
    cc, calls = fake_compiler
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    assert launch([cc, "-c", str(app / "rows.cu"), "-o", str(tmp_path / "rows.o")],
                  clean_env(POLYCOAL_CACHE_DIR=str(blocker / "cache"))) == 0
    assert ".polycoal" in calls()[0][calls()[0].index("-c") + 1]


def test_launcher_options_from_the_environment(fake_compiler, app, capsys):
    cc, calls = fake_compiler
    args = ["-c", str(app / "rows.cu")]
    assert launch([cc, *args], clean_env(POLYCOAL_OPTIONS="--reduction none")) == 0
    copy = Path(calls()[0][calls()[0].index("-c") + 1])
    assert "warp per row" not in copy.read_text()
    assert launch([cc, *args], clean_env(POLYCOAL_OPTIONS="--no-such-option")) == 2
    assert "POLYCOAL_OPTIONS" in capsys.readouterr().err


def test_prepare_writes_the_file_to_compile_and_its_dependencies(app, tmp_path):
    out, dep = tmp_path / "out" / "rows.cu", tmp_path / "out" / "rows.cu.d"
    out.parent.mkdir()
    options = PreprocessorOptions(std="c++17")
    assert prepare_file(str(app / "rows.cu"), str(out), options, str(dep), clean_env()) == 0
    assert "polycoal: restructured" in out.read_text()
    deps = dep.read_text()
    assert deps.startswith(f"{out}: {app / 'rows.cu'}") and str(app / "sizes.cuh") in deps
    unchanged = tmp_path / "out" / "axpy.cu"
    assert prepare_file(str(app / "axpy.cu"), str(unchanged), options, None, clean_env()) == 0
    assert unchanged.read_text() == f'#line 1 "{app / "axpy.cu"}"\n' + \
        (app / "axpy.cu").read_text()
    assert prepare_file(str(app / "axpy.cu"), str(unchanged), options, None,
                        clean_env(POLYCOAL_STRICT="1")) == 1


MULTI_UNIT = Path(__file__).resolve().parent / "projects" / "multi_unit"
UNITS = Path(__file__).resolve().parent / "fixtures" / "units"


def test_prepare_places_the_copies_of_header_and_template_kernels(tmp_path, capsys):
    """Regression: rows.cu's kernels run as transformed copies of a header's template
    (row_scale__pc_float) and of an included .cu's kernel (row_sums__pc), which the
    input program does not define: `polycoal prepare` exited with status 3 (and the
    launcher compiled the original). Their outcomes are placed at the definitions they
    copy; the kernels they stand for are no warning, even in strict mode."""
    from polycoal.build.settings import build_options
    from polycoal.transform import TransformOptions
    rows = MULTI_UNIT / "src" / "rows.cu"
    options = PreprocessorOptions((str(MULTI_UNIT / "include"),))
    out = tmp_path / "rows.cu"
    assert prepare_file(str(rows), str(out), options, None, clean_env(POLYCOAL_STRICT="1")) == 0
    assert capsys.readouterr().err == ""
    text = out.read_text()
    assert "static __global__ void row_scale__pc_float(" in text
    assert "static __global__ void row_sums__pc(" in text
    prepared = prepare_module.prepare_source(
        str(rows), build_options(clean_env(), TransformOptions(preprocessor=options)),
        str(tmp_path / "cache"))
    places = {k.kernel: (os.path.realpath(k.file), k.line, k.action) for k in prepared.kernels}
    assert places["row_scale__pc_float"] == (
        str(MULTI_UNIT / "include" / "kernels.cuh"), 6, "restructured")
    assert places["row_sums__pc"][:2] == (str(MULTI_UNIT / "src" / "detail" /
                                              "row_sums_impl.cu"), 2)
    assert places["row_scale"][:2] == places["row_scale__pc_float"][:2]


def test_launcher_compiles_the_copies_of_header_kernels(fake_compiler, capsys):
    cc, calls = fake_compiler
    args = [f"-I{MULTI_UNIT / 'include'}", "-c", str(MULTI_UNIT / "src" / "rows.cu")]
    assert launch([cc, *args], clean_env()) == 0
    (call,) = calls()
    assert "polycoal: restructured" in Path(call[call.index("-c") + 1]).read_text()
    assert "warning" not in capsys.readouterr().err


def test_launcher_reads_the_forced_includes(fake_compiler, tmp_path):
    """`-include config.h` (relative, as the build runs) is read before the source: its
    kernels, whose sizes and type config.h alone defines, are transformed, and the
    compiler is given the same -include."""
    cc, calls = fake_compiler
    shutil.copy(UNITS / "forced.cu", tmp_path / "forced.cu")
    shutil.copy(UNITS / "config.h", tmp_path / "config.h")
    assert launch([cc, "-include", "config.h", "-c", "forced.cu", "-o", "forced.o"],
                  clean_env(POLYCOAL_STRICT="1")) == 0
    (call,) = calls()
    assert call[call.index("-include") + 1] == "config.h"
    copy = Path(call[call.index("-c") + 1])
    text = copy.read_text()
    assert copy.name == "forced.cu" and copy.parent.parent == tmp_path / ".polycoal"
    assert "polycoal: restructured" in text and "static __global__ void scale_rows__pc_float(" \
        in text


def test_cmake_dir_and_usage(capsys):
    with pytest.raises(SystemExit):
        main(["--cmake-dir"])
    directory = Path(capsys.readouterr().out.strip())
    assert (directory / "polycoalConfig.cmake").is_file()
    assert main(["launch"]) == 2


def test_polycoal_nvcc_never_runs_itself(tmp_path):
    me = tmp_path / "bin" / "nvcc"
    me.parent.mkdir()
    me.write_text("#!/bin/sh\n")
    me.chmod(0o755)
    real = tmp_path / "cuda" / "nvcc"
    real.parent.mkdir()
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    path = f"{me.parent}{os.pathsep}{real.parent}"
    assert _real_nvcc({"PATH": path}, str(me)) == str(real)
    assert _real_nvcc({"PATH": path, "POLYCOAL_NVCC": "/x/nvcc"}, str(me)) == "/x/nvcc"


# --------------------------------------------------------------------------- with nvcc


def test_compile_errors_point_at_the_original(nvcc, app, tmp_path):
    source = app / "rows.cu"
    text = source.read_text() + "\nint broken() { return undefined_name; }\n"
    source.write_text(text)
    line = text.count("\n")
    proc = subprocess.run([*LAUNCHER, nvcc, "-arch=sm_90", "-c", str(source), "-o",
                           str(tmp_path / "rows.o")], capture_output=True, text=True,
                          env=clean_env(), cwd=tmp_path)
    assert proc.returncode != 0
    assert f'{source}({line}): error: identifier "undefined_name" is undefined' in \
        proc.stderr
    assert ".polycoal" not in proc.stderr


# --------------------------------------------------------------------------- real builds


def _need(*tools):
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH: the build tests need it")


def _script(name: str) -> str:
    exe = Path(sys.executable).parent / name
    if not exe.exists():
        pytest.skip(f"{name} is not installed next to {sys.executable} (pip install -e .)")
    return str(exe)


def _run(cmd, cwd, **env):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=clean_env(**env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the test application, shared by the builds of this module."""
    root = tmp_path_factory.mktemp("cuda_app") / "cuda_app"
    shutil.copytree(PROJECT, root)
    return root


def _cmake(project: Path, build: Path, generator: str, *options) -> str:
    _need("cmake", "nvcc", "ninja" if generator == "Ninja" else "make")
    _run(["cmake", "-S", str(project), "-B", str(build), "-G", generator,
          "-DCMAKE_CUDA_ARCHITECTURES=90", *options], project)
    return _run(["cmake", "--build", str(build), "-j", "2"], project)


@pytest.fixture(scope="module")
def ninja_launcher(project):
    build = project.parent / "ninja-launcher"
    log = _cmake(project, build, "Ninja",
                 f"-DCMAKE_CUDA_COMPILER_LAUNCHER={';'.join(LAUNCHER)}")
    return build, log


def test_cmake_ninja_launcher(ninja_launcher, project):
    build, log = ninja_launcher
    assert (build / "app").is_file()
    (copy,) = (build / "CMakeFiles" / "app.dir" / "src" / ".polycoal").glob("*/rows.cu")
    assert copy.read_text() != (project / "src" / "rows.cu").read_text()
    assert "polycoal: restructured" in copy.read_text()
    assert "kernel axpy left unchanged" in log
    deps = _run(["ninja", "-C", str(build), "-t", "deps", "CMakeFiles/app.dir/src/rows.cu.o"],
                project)                 # ninja keeps what the dependency file said
    assert str(project / "src" / "rows.cu") in deps and ".polycoal" not in deps
    assert str(project / "src" / "sizes.cuh") in deps


def test_cmake_ninja_rebuilds_from_the_cache(ninja_launcher, project):
    build, _ = ninja_launcher
    assert "no work to do" in _run(["ninja", "-C", str(build)], project)
    (project / "src" / "rows.cu").touch()
    log = _run(["ninja", "-C", str(build)], project, POLYCOAL_VERBOSE="1")
    assert f"polycoal: {project / 'src' / 'rows.cu'}: cache hit" in log
    assert "cache miss" not in log


def test_cmake_makefiles_launcher(project):
    build = project.parent / "make-launcher"
    log = _cmake(project, build, "Unix Makefiles",
                 f"-DCMAKE_CUDA_COMPILER_LAUNCHER={';'.join(LAUNCHER)}")
    assert (build / "app").is_file()
    assert "kernel axpy left unchanged" in log
    (copy,) = (build / "CMakeFiles" / "app.dir" / "src" / ".polycoal").glob("*/rows.cu")
    assert "polycoal: restructured" in copy.read_text()


def test_cmake_polycoal_transform_sources(project):
    build = project.parent / "ninja-explicit"
    cmake_dir = subprocess.run([sys.executable, "-m", "polycoal", "--cmake-dir"],
                               capture_output=True, text=True, check=True).stdout.strip()
    log = _cmake(project, build, "Ninja", "-DPOLYCOAL_EXPLICIT=ON",
                 f"-Dpolycoal_DIR={cmake_dir}",
                 f"-DPOLYCOAL_COMMAND={sys.executable};-m;polycoal")
    assert (build / "app").is_file()
    assert "kernel axpy left unchanged" in log
    (generated,) = (build / "polycoal.dir" / "app").glob("*/rows.cu")
    text = generated.read_text()
    assert text.startswith(f'#line 1 "{project / "src" / "rows.cu"}"')
    assert "polycoal: restructured" in text


def test_make_with_polycoal_nvcc(project):
    _need("make", "nvcc")
    build = project.parent / "make"
    build.mkdir()
    wrapper = _script("polycoal-nvcc")
    log = _run(["make", "-f", str(project / "Makefile"), "-j", "2", f"NVCC={wrapper}"], build)
    assert (build / "app").is_file()
    assert "kernel axpy left unchanged" in log
    depfile = (build / "rows.d").read_text()
    assert str(project / "src" / "rows.cu") in depfile and ".polycoal" not in depfile
    assert "polycoal: restructured" in next(build.glob(".polycoal/*/rows.cu")).read_text()
    strict = subprocess.run([wrapper, "-arch=sm_90", "-c", str(project / "src" / "axpy.cu"),
                             "-o", str(build / "strict.o")], capture_output=True, text=True,
                            env=clean_env(POLYCOAL_STRICT="1"))
    assert strict.returncode == 1 and "polycoal: error:" in strict.stderr
    assert not (build / "strict.o").exists()
