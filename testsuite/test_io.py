"""Input, output and the command line's safety: standard output carries the program and
nothing else, exit statuses for bad input, output written through symlinks and to
devices and pipes without replacing them, the input never overwritten, bytes that are
not UTF-8 kept, line endings kept, internal errors reported without a traceback.

Every test writes inside its own tmp_path; commands that must be seen from outside the
process (what reaches file descriptor 1) run in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import stat
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
    piped = polycoal("transform", BICG, cwd=tmp_path)   # output in tmp_path either way
    assert piped.returncode == 0, piped.stderr.decode()
    written = tmp_path / "out.cu"
    to_file = polycoal("transform", BICG, "-o", written)
    assert to_file.returncode == 0 and to_file.stdout == b""
    assert piped.stdout != BICG.read_bytes()          # kernels were planned: ILPs solved
    first_line = BICG.read_bytes().split(b"\n", 1)[0]
    assert piped.stdout.split(b"\n", 1)[0] == first_line
    assert piped.stdout == written.read_bytes()
    assert b"HiGHS" not in piped.stderr + to_file.stderr


@pytest.mark.parametrize("where", ["stdout", "-o"])
def test_output_elsewhere_includes_the_inputs_headers(tmp_path, where):
    """`polycoal transform polybench_inputs/bicg/bicg.cu > out.cu && nvcc -c out.cu`:
    bicg.cu's quoted includes ("../common/polybench_gpu.h", "bicg.cuh") name files
    beside the input; in an output written elsewhere they are rewritten relative to the
    output's directory (standard output: the current directory). Beside the input,
    nothing changes. (A copy of the inputs: no test writes outside its directory.)"""
    for d in ("bicg", "common"):
        shutil.copytree(BICG.parent.parent / d, tmp_path / "src" / d)
    source = tmp_path / "src" / "bicg" / "bicg.cu"
    out = tmp_path / "build" / "out.cu"
    out.parent.mkdir()
    if where == "stdout":
        r = polycoal("transform", source, cwd=out.parent)
        out.write_bytes(r.stdout)
    else:
        r = polycoal("transform", source, "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    text = out.read_text()
    assert '#include "../src/common/polybench_gpu.h"' in text
    assert '#include "../src/bicg/bicg.cuh"' in text
    assert "#include <cuda_runtime.h>" in text
    if shutil.which("nvcc"):
        proc = subprocess.run(["nvcc", "-arch=sm_90", "-c", "out.cu", "-o", "out.o"],
                              cwd=out.parent, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    beside = source.parent / "bicg_coalesced.cu"
    assert polycoal("transform", source, "-o", beside).returncode == 0
    assert b'#include "../common/polybench_gpu.h"' in beside.read_bytes()
    assert b'#include "bicg.cuh"' in beside.read_bytes()


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


# --------------------------------------------------------------------------- output

CASES = Path(__file__).resolve().parent / "fixtures" / "transform_cases.cu"


def transformed(tmp_path) -> bytes:
    """transform_cases.cu transformed, as written to a plain new file."""
    from polycoal.cli import main
    plain = tmp_path / "plain.cu"
    assert main(["transform", str(CASES), "-o", str(plain)]) == 0
    return plain.read_bytes()


def test_output_through_a_symlink_writes_its_target(tmp_path):
    from polycoal.cli import main
    target = tmp_path / "real.cu"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "link.cu"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.cu"
    dangling.symlink_to(tmp_path / "new.cu")
    assert main(["transform", str(CASES), "-o", str(link)]) == 0
    assert main(["transform", str(CASES), "-o", str(dangling)]) == 0
    expected = transformed(tmp_path)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == expected and target.stat().st_mode & 0o777 == 0o640
    assert dangling.is_symlink() and (tmp_path / "new.cu").read_bytes() == expected


def test_output_into_a_pipe_writes_through_it(tmp_path):
    """The read end is opened first without blocking, so that the write finds a reader;
    the program is smaller than a pipe's buffer, so the write does not wait for it."""
    from polycoal.cli import main
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        status = main(["transform", str(CASES), "-o", str(fifo)])
        chunks = []
        while True:
            try:
                chunk = os.read(reader, 1 << 16)
            except BlockingIOError:          # nothing was ever written
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(reader)
    assert status == 0
    expected = transformed(tmp_path)
    assert len(expected) < 1 << 16 and b"".join(chunks) == expected
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_onto_a_device_writes_into_it(tmp_path):
    """A null device made inside tmp_path (so that a failure cannot harm /dev/null) stays
    a device. Making one needs root (CI runs as root) and a mount that allows devices."""
    from polycoal.cli import main
    device = tmp_path / "null"
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        open(device, "wb").close()
    except OSError as error:
        pytest.skip(f"cannot make and open a device node here: {error}")
    assert main(["transform", str(CASES), "-o", str(device)]) == 0
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]     # no temporary left


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "relative path"])
def test_output_naming_the_input_is_refused(tmp_path, monkeypatch, capsys, how):
    from polycoal.cli import main
    source = tmp_path / "k.cu"
    source.write_bytes(CASES.read_bytes())
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    output = {"same path": source, "symlink": tmp_path / "link.cu",
              "hard link": tmp_path / "hard.cu", "relative path": Path("k.cu")}[how]
    if how == "symlink":
        output.symlink_to(source)
    elif how == "hard link":
        os.link(source, output)
    monkeypatch.chdir(tmp_path)
    assert main(["transform", str(source), "-o", str(output)]) == 2
    err = capsys.readouterr().err
    assert "is the input file" in err and "Traceback" not in err
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before


def test_output_problems_are_found_before_the_work(tmp_path, monkeypatch, capsys):
    import polycoal.transform
    from polycoal.cli import main

    def never(*args, **kwargs):
        raise AssertionError("the work started")
    monkeypatch.setattr(polycoal.transform, "transform_program", never)
    blocker = tmp_path / "file"
    blocker.write_text("")
    for output, message in [(tmp_path / "missing" / "o.cu", "does not exist"),
                            (blocker / "o.cu", "is not a directory"),
                            (tmp_path, "is a directory")]:
        assert main(["transform", str(CASES), "-o", str(output)]) == 2
        assert message in capsys.readouterr().err
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(
        tmp_path) else real_access(path, mode))
    assert main(["transform", str(CASES), "-o", str(tmp_path / "o.cu")]) == 2
    assert "is not writable" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_failed_write_is_a_clear_error(tmp_path, monkeypatch, capsys):
    import tempfile
    from polycoal.cli import main

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(tempfile, "mkstemp", full)
    assert main(["transform", str(CASES), "-o", str(tmp_path / "o.cu")]) == 2
    err = capsys.readouterr().err
    assert "cannot write: No space left on device" in err and "Traceback" not in err


def test_regular_output_is_replaced_atomically_keeping_its_mode(tmp_path):
    from polycoal.cli import main
    out = tmp_path / "o.cu"
    out.write_text("old contents\n" * 1000)
    out.chmod(0o600)
    inode = out.stat().st_ino
    assert main(["transform", str(CASES), "-o", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o600
    assert out.stat().st_ino != inode                 # a new file renamed over the old
    assert b"old contents" not in out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.cu"]


# --------------------------------------------------------------------------- input

LATIN1_COMMENT = b"// r\xe9sum\xe9: \xa9 2024, na\xefve Latin-1 bytes\n"


def test_a_latin1_comment_is_kept_byte_for_byte(tmp_path, capsys):
    from polycoal.cli import main
    source = tmp_path / "latin1.cu"
    body = CASES.read_bytes()
    cut = body.index(b"__global__")              # a comment inside a kernel, too
    source.write_bytes(LATIN1_COMMENT + body[:cut] + b"/* \xb5s */ " + body[cut:])
    out = tmp_path / "out.cu"
    assert main(["transform", str(source), "-o", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    written = out.read_bytes()
    assert written.startswith(LATIN1_COMMENT + body[:cut])
    assert b"restructured" in written                       # the work was done
    piped = polycoal("transform", "-", stdin=source.read_bytes())
    assert piped.returncode == 0, piped.stderr.decode(errors="replace")
    assert piped.stdout == written


@pytest.mark.parametrize("command", ["transform", "analyze"])
def test_a_binary_file_is_unusable_input(tmp_path, capsys, command):
    from polycoal.cli import main
    source = tmp_path / "blob.cu"
    source.write_bytes(b"__global__ void k(float *a) { a[0] = 1; }\n\x7fELF\x00\x01\x02")
    out = tmp_path / "out.cu"
    assert main([command, str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "a binary file" in err and "line 2" in err and "Traceback" not in err
    assert not out.exists()


def test_a_directory_is_unusable_input(tmp_path, capsys):
    from polycoal.cli import main
    assert main(["transform", str(tmp_path), "-o", str(tmp_path / "o.cu")]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert not (tmp_path / "o.cu").exists()


# --------------------------------------------------------------------------- internal errors

def test_an_internal_error_is_one_line_and_status_3(monkeypatch, capsys):
    import polycoal.transform
    from polycoal.cli import INTERNAL_ERROR, main

    def broken(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")
    monkeypatch.setattr(polycoal.transform, "transform_program", broken)
    assert main(["transform", str(CASES)]) == INTERNAL_ERROR == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "polycoal: internal error: RuntimeError: boom (a bug in polycoal; "
        "POLYCOAL_TRACEBACK=1 shows where)"]


def _only_for(kernel: str, real, name_of):
    """`real`, except that it raises for the kernel named `kernel`."""
    def wrapper(*args, **kwargs):
        if name_of(*args, **kwargs) == kernel:
            raise ZeroDivisionError("injected")
        return real(*args, **kwargs)
    return wrapper


def _definition(path, name: str) -> str:
    from polycoal.frontend import read_program
    program = read_program(str(path))
    span = program.kernel(name).span
    return program.text[span.start:span.end]


@pytest.mark.parametrize("stage, target, name_of", [
    ("planning it", "analyze_kernel", lambda kernel, *rest, **kw: kernel.name),
    ("rendering it and its launches", "polycoal.codegen.edits.rewrite_launch",
     lambda text, launch, *rest, **kw: launch.kernel),
    ("validating it", "validate_translation", lambda old, *rest, **kw: old.kernel),
    ("promoting its accumulators", "generate_kernel",         # only the promoting call
     lambda text, kernel, *rest, promote=False, **kw: kernel.name if promote else None),
])
def test_an_internal_error_in_one_kernel_leaves_it_unchanged(tmp_path, monkeypatch, capsys,
                                                            stage, target, name_of):
    """The failure is confined to the kernel (reported at its line, the kernel and its
    launches byte-identical, exit status 1); the other kernels are transformed."""
    import importlib
    from polycoal.cli import main
    module, _, name = target.rpartition(".")
    module = importlib.import_module(module or "polycoal.transform")
    real = getattr(module, name)
    monkeypatch.setattr(module, name, _only_for("row_fill", real, name_of))
    out = tmp_path / "out.cu"
    # the model keeps the small fixture's permutations: every proposed form is taken
    assert main(["transform", str(CASES), "-o", str(out), "--no-model"]) == 1
    err = capsys.readouterr().err
    assert (f"{CASES}:17:1: error: kernel 'row_fill': internal error in polycoal while "
            f"{stage} (ZeroDivisionError: injected); the kernel is left unchanged "
            "[internal-error]") in err
    assert "Traceback" not in err and "left unchanged: internal" not in err
    written = out.read_text()
    assert _definition(out, "row_fill") == _definition(CASES, "row_fill")
    assert "row_fill<<<(ROWS + 127) / 128, 128>>>(a, v, ROWS, COLS);" in written
    assert _definition(out, "masked") != _definition(CASES, "masked")


# --------------------------------------------------------------------------- bad input

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KERNEL = "__global__ void ok(float *a) { a[threadIdx.x] = 0.0f; }\n"
MAIN = "int main() { float *a; ok<<<1, 32>>>(a); return 0; }\n"


def _transform_status(tmp_path, capsys, source, *options):
    from polycoal.cli import main
    out = tmp_path / "out.cu"
    status = main(["transform", str(source), "-o", str(out), *options])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err, out


@pytest.mark.parametrize("options", [(), ("--kernel", "ok_kernel")])
def test_a_syntax_error_anywhere_in_the_kernels_is_unusable_input(tmp_path, capsys,
                                                                  options):
    source = FIXTURES / "syntax_error.cu"
    status, err, out = _transform_status(tmp_path, capsys, source, *options)
    assert status == 2 and not out.exists()
    # Clang's location and message: the missing semicolon at the end of line 24
    assert f"{source}:24:" in err and "syntax error in kernel 'broken'" in err
    assert "expected ';' at end of declaration" in err


def test_a_syntax_error_in_a_device_function_is_unusable_input(write_cu, tmp_path, capsys):
    source = write_cu("__device__ float twice(float x) { return 2 * x }\n" + KERNEL + MAIN)
    status, err, out = _transform_status(tmp_path, capsys, source)
    assert status == 2 and not out.exists()
    assert f"{source}:1:" in err and "function 'twice'" in err


@pytest.mark.parametrize("text, line", [
    (KERNEL + "int main() { if (1) { return 0; }\n", 2),
    (KERNEL + "int main() { return 0; }}\n", 2),
    ("__global__ void ok(float *a) { a[threadIdx.x] = (0.0f; }\n" + MAIN, 1)])
def test_unbalanced_brackets_are_unusable_input(write_cu, tmp_path, capsys, text, line):
    source = write_cu(text)
    status, err, out = _transform_status(tmp_path, capsys, source)
    assert status == 2 and not out.exists()
    assert f"{source}:{line}:" in err and "syntax error" in err


CPP_KERNEL = """\
__global__ void cpp_only(float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float scale{2.0f};
    if (i < n) a[i] = float(i) * scale;
}
"""


def test_cpp_that_the_compiler_accepts_is_not_a_syntax_error(write_cu, tmp_path, capsys):
    """Functional casts and brace initialisation: C++ that pycparser does not parse and
    nvcc does; read through Clang (the cast and the initialisation as C writes them),
    the kernel reaches the model, the file is transformed."""
    from polycoal.cli import main
    source = write_cu(CPP_KERNEL + KERNEL + MAIN)
    status, err, out = _transform_status(tmp_path, capsys, source)
    assert status == 0 and out.exists()
    assert "kernel 'cpp_only' left unchanged: already coalesced" in err, err
    assert "C++ outside the C subset" not in err
    assert main(["analyze", str(source)]) == 0
    assert "[syntax-error]" not in capsys.readouterr().out


def test_names_from_elsewhere_do_not_make_a_syntax_error(write_cu, tmp_path, capsys):
    """A type from a header polycoal does not read (a CUDA library's: only a note) and a
    user template: compiled alone, the function is undecided, so it is not an error;
    Clang reads the kernel (the template's object an opaque statement), and it is
    judged."""
    from polycoal.cli import main
    source = write_cu("#include <curand_kernel.h>\n"
                      "template <typename T> struct Pair { T a, b; };\n"
                      "__global__ void rng(curandState *states,\n"
                      "                    float *a)\n"
                      "{\n"
                      "    Pair<float> p;\n"
                      "    curandState s = states[threadIdx.x];\n"
                      "    a[threadIdx.x] = curand_uniform(&s);\n"
                      "}\n" + KERNEL + MAIN)
    status, err, out = _transform_status(tmp_path, capsys, source)
    assert status == 0 and out.exists()
    assert "[syntax-error]" not in err
    assert "kernel 'rng' left unchanged" in err and "read only as opaque" in err, err
    assert main(["analyze", str(source)]) == 0


def test_a_missing_header_is_unusable_input(write_cu, tmp_path, capsys):
    source = write_cu('#include "sizes.h"\n' + KERNEL + MAIN)
    status, err, out = _transform_status(tmp_path, capsys, source)
    assert status == 2 and not out.exists()
    assert f"{source}:1:" in err and "header 'sizes.h' not found" in err and "-I" in err
    library = write_cu("#include <cublas_v2.h>\n" + KERNEL + MAIN, "library.cu")
    status, err, out = _transform_status(tmp_path, capsys, library)
    assert status == 0 and out.exists()


def test_an_unknown_kernel_is_unusable_input(tmp_path, capsys):
    status, err, out = _transform_status(tmp_path, capsys, CASES, "--kernel", "nope")
    assert status == 2 and not out.exists() and "no kernel named 'nope'" in err


@pytest.mark.parametrize("name, text, expected", [
    ("missing semicolon", "void f(int n) {\n int i = n\n if (i) i = 2;\n}", ("syntax", 3)),
    ("else without if", "void f(int n) { if (n) n = 1; else n = 2; else n = 3; }",
     ("syntax", 1)),
    ("CUDA C++", "__global__ void k(float *a) {\n auto i = threadIdx.x; float &r = a[i];\n"
     " child<<<dim3(1, 2), 32>>>(a); r = fmaxf(float(i), 1.0f);\n"
     " __shared__ float4 t[8]; t[0].w = __shfl_down_sync(~0u, r, 1);\n}", ("accepted", 0)),
    ("unknown template cascades", "void f(float *a) {\n typedef cub::BlockReduce<float,\n"
     "   256> R;\n}", ("undecided", 0)),
    ("unknown parameter type", "void f(curandState *s,\n float *a) { a[0] = 1; }",
     ("undecided", 0)),
    ("unknown name, then a syntax error", "void f(float *a) {\n Foo x = a[0];\n"
     " a[1] = (a[2] + 1;\n}", ("syntax", 3)),
])
def test_the_compiler_decides_what_is_a_syntax_error(name, text, expected):
    from polycoal.frontend.syntax import check_function, compiler, function_declarations
    if compiler() is None:
        pytest.skip("no C++ compiler on PATH")
    verdict = check_function(text, "c++17", function_declarations(["child"]))
    assert (verdict.kind, verdict.line) == expected, verdict.message


# --------------------------------------------------------------------------- line endings

def _transform_bytes(tmp_path, data: bytes, name: str) -> bytes:
    from polycoal.cli import main
    source, out = tmp_path / f"{name}.cu", tmp_path / f"{name}.out.cu"
    source.write_bytes(data)
    assert main(["transform", str(source), "-o", str(out)]) == 0
    return out.read_bytes()


def test_a_lone_carriage_return_ends_a_line_as_for_the_preprocessor(tmp_path, capsys):
    """The preprocessor counts a lone \\r as a line end: so must the line map, or no
    kernel after it is found in the file's text. The file transforms exactly as the same
    file with a \\n there."""
    body = CASES.read_bytes()
    cut = body.index(b"\n")                            # inside the leading comment
    with_cr = _transform_bytes(tmp_path, body[:cut] + b" one\rtwo" + body[cut:], "cr")
    with_lf = _transform_bytes(tmp_path, body[:cut] + b" one\ntwo" + body[cut:], "lf")
    assert "not in the input file's text" not in capsys.readouterr().err
    assert with_cr == with_lf.replace(b" one\ntwo", b" one\rtwo", 1)
    assert with_cr.count(b"polycoal: restructured") >= 1 and with_cr != body


def test_crlf_files_keep_crlf_in_the_changed_code(tmp_path):
    crlf = _transform_bytes(tmp_path, CASES.read_bytes().replace(b"\n", b"\r\n"), "crlf")
    lf = _transform_bytes(tmp_path, CASES.read_bytes(), "lf")
    assert crlf.count(b"\n") == crlf.count(b"\r\n")    # no bare \n
    assert crlf.replace(b"\r\n", b"\n") == lf != CASES.read_bytes()


def test_line_directives_count_lines_as_the_preprocessor(tmp_path):
    """With a lone \\r (a line end) and a form feed (none) before a replaced block, the
    build's #line directives still give each line of the output its original line
    (checked by the preprocessor itself)."""
    import subprocess
    from polycoal.build.lines import with_line_directives
    original = "// a\rb\nint x;\fint z;\nint old;\nint y;\n"      # \f ends no line
    directed = with_line_directives(original, original.replace("int old;", "int new_;\n"
                                                               "int more;"), "f.cu")
    path = tmp_path / "d.cu"
    path.write_text(directed, newline="")
    if shutil.which("g++") is None:
        pytest.skip("no g++ on PATH")
    listing = subprocess.run(["g++", "-E", "-x", "c++", str(path)], capture_output=True,
                             text=True).stdout
    lines, current = {}, 0
    for raw in listing.split("\n"):
        if raw.startswith("# "):
            current = int(raw.split()[1])
            continue
        if raw.strip():
            lines[" ".join(raw.split())] = current
        current += 1
    assert lines == {"b": 2, "int x; int z;": 3, "int new_;": 4, "int more;": 5,
                     "int y;": 5}


# --------------------------------------------------------------------------- the build cache

def _key(environ) -> str:
    from polycoal.build import cache
    from polycoal.build.settings import build_options
    from polycoal.transform import TransformOptions
    return cache.cache_key(["source", build_options(environ, TransformOptions()).key_part()])


@pytest.mark.parametrize("name", ["POLYCOAL_SPLIT", "POLYCOAL_COLUMN_GROUPS", "POLYCOAL_CPP",
                                  "CXX"])
def test_every_output_setting_of_the_environment_is_in_the_cache_key(name):
    base = {"PATH": os.environ.get("PATH", "")}
    keys = {_key(base), _key({**base, name: "g++ -E -x c++"}),
            _key({**base, name: "clang++ -E"})}
    assert len(keys) == 3
    assert _key({**base, "POLYCOAL_VERBOSE": "1", "POLYCOAL_CACHE_DIR": "/x"}) == _key(base)


def test_the_preprocessor_and_compiler_found_are_in_the_cache_key(tmp_path):
    """The same command name resolving to another file (another PATH, or an upgrade)."""
    real = shutil.which("g++")
    if real is None:
        pytest.skip("no g++ on PATH")
    wrapper = tmp_path / "g++"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    path = os.environ.get("PATH", "")
    assert _key({"PATH": f"{tmp_path}:{path}"}) != _key({"PATH": path})
    before = _key({"PATH": f"{tmp_path}:{path}"})
    wrapper.write_text(f'#!/bin/sh\n# upgraded\nexec {real} "$@"\n')
    assert _key({"PATH": f"{tmp_path}:{path}"}) != before


def test_a_build_does_not_reuse_output_made_with_other_settings(tmp_path, monkeypatch,
                                                                  capsys):
    """The column split's group count comes from the environment: a cached result made
    with another count must not be reused."""
    from polycoal.build.launcher import launch
    compiler = tmp_path / "cc"
    compiler.write_text(f"#!{sys.executable}\n")
    compiler.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    source = PROJECT / "src" / "rows.cu"
    command = [str(compiler), "-c", str(source), "-o", str(tmp_path / "rows.o")]
    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("POLYCOAL_")},
               "POLYCOAL_VERBOSE": "1"}
    answers = []
    for groups in ("4", "4", "2"):
        monkeypatch.setenv("POLYCOAL_COLUMN_GROUPS", groups)     # as codegen reads it
        assert launch(command, {**environ, "POLYCOAL_COLUMN_GROUPS": groups}) == 0
        answers.append("cache hit" in capsys.readouterr().err)
    assert answers == [False, True, False]


def test_every_environment_setting_read_is_classified():
    """A new environment setting must be put in the key's list (it changes the output)
    or in this list of settings that only steer how a command runs."""
    import re
    from polycoal.build.settings import OUTPUT_ENVIRONMENT
    steering = {"POLYCOAL_DISABLE", "POLYCOAL_STRICT", "POLYCOAL_VERBOSE", "POLYCOAL_CACHE_DIR",
                "POLYCOAL_NVCC", "POLYCOAL_NCU", "POLYCOAL_OPTIONS", "POLYCOAL_TRACEBACK",
                "PATH", "NVCC",     # NVCC: the compiler the differential tester checks with
                "XDG_CACHE_HOME"}   # where ptxas's readings are cached (analysis/occupancy)
    read = set()
    for path in (REPO / "polycoal").rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"""(?:environ\.get|getenv|environ)\(?\[?\s*["']([A-Z_]+)["']""",
                               text))
        read |= set(re.findall(r"""_flag\(\s*\w+\s*,\s*["']([A-Z_]+)["']""", text))
        read |= set(re.findall(r"""_environment_shape\(\s*["']([A-Z_]+)["']""", text))
    assert {"POLYCOAL_SPLIT", "POLYCOAL_CPP", "POLYCOAL_STRICT"} <= read   # the scan works
    assert read - steering <= set(OUTPUT_ENVIRONMENT), read - steering - set(OUTPUT_ENVIRONMENT)
