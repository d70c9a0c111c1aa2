"""Programs written in the styles real CUDA code uses (testsuite/fixtures/styles: kernel
templates, kernels in headers, constexpr sizes, structs of buffers, pointer arithmetic,
dim3 set field by field, C++ references, assert and clock_t, launches in macros and
spaced `<< <`, index macros, namespaces, run-time sizes, host classes). Issue 13 makes
polycoal read them; until then, none may crash transform, be called unusable input, or
give an output nvcc rejects. tools/frontend_survey.py measures what each front end
reads of them (docs/frontend.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, runs_alike, cpu_runner

STYLES = sorted((FIXTURES / "styles").glob("*.cu"))
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def nvcc(path, cwd, objects=None) -> str:
    """nvcc's complaints on compiling `path` ("" when it compiles); the object goes to
    `objects` (a temporary directory: never beside a fixture)."""
    obj = Path(objects or cwd) / (Path(path).name + ".o")
    r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(path), "-o", str(obj)],
                       cwd=cwd, capture_output=True, text=True)
    return "" if r.returncode == 0 else r.stdout + r.stderr


def test_the_corpus_has_every_style():
    """Issue 13's corpus: at least 40 kernels in complete programs."""
    from polycoal.frontend import clang
    assert len(STYLES) == 27
    if clang.available():
        assert sum(len(clang.read(str(p)).kernels) for p in STYLES) >= 40


@pytest.mark.parametrize("path", STYLES, ids=lambda p: p.stem)
def test_a_program_in_this_style_is_not_refused_compiles_and_runs_alike(path, tmp_path):
    """transform never refuses a program of the corpus nor crashes; the output compiles
    with nvcc and, where it changed, runs like the original (CPU runtime, the numbers
    it prints)."""
    out = tmp_path / path.name
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(path), "-o",
                        str(out)], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr           # never unusable input, never exit 3
    assert "Traceback" not in r.stderr
    if shutil.which("nvcc"):
        assert nvcc(path, path.parent, tmp_path) == "", path.name
        assert nvcc(out, tmp_path) == "", (path.name, r.stderr)
    output = out.read_text()
    if output != path.read_text():
        runs_alike(path.read_text(), output, tmp_path, include_dirs=(path.parent, tmp_path))


def test_unroll_hints_stay_on_the_loops_that_stay_loops(capsys):
    """A loop's `#pragma unroll` (or `_Pragma` from a macro) is written before the loop
    that runs it in the generated kernel: the sequential loop of a restructured kernel
    and the lane-split loop of a reduction; a loop that became a thread axis has none.
    Line numbers after a `_Pragma` expansion stay the source's."""
    from polycoal.cli import main
    path = FIXTURES / "styles" / "unroll_hints.cu"
    assert main(["transform", str(path), "-o", "-"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    # (a kernel's definition may carry __launch_bounds__ before its name)
    decay = out[out.index(" decay_planes("):out.index(" row_sums(")]
    assert re.search(r"#pragma unroll\n\s*for \(int pc_i\d+ = 0;", decay), decay
    sums = out[out.index(" row_sums("):out.index(" row_scale(")]
    assert re.search(r"#pragma unroll 8\n\s*for \(int pc_i\d+ = \(0\) \+ pc_lane", sums)
    scale = out[out.index(" row_scale("):out.index("int main")]
    assert "restructured" in scale and "#pragma" not in scale
    assert "x = c (loop at line 46)" in captured.err


def test_assert_in_a_kernel_is_not_a_syntax_error_and_stays_a_check(capsys, tmp_path):
    """<assert.h>'s macro expands into tokens the preprocessor marks as a system
    header's (`# 20 "k.cu" 3 4`) inside the user's line; they were dropped from the
    kernel's text, which then read `i < n "i < n" ;`, a syntax error (exit 2). The
    expansion is read back as the check it was written as: a statement that reads its
    condition. The kernel is transformed and every thread still checks, in the
    generated code, the condition of the instance it runs."""
    from polycoal.cli import main
    path = FIXTURES / "styles" / "clock_and_assert.cu"
    assert main(["transform", str(path), "-o", "-"]) == 0
    captured = capsys.readouterr()
    assert "syntax error" not in captured.err
    assert "'row_mean' reduced" in captured.err
    kernel = captured.out[captured.out.index("row_mean("):captured.out.index("int main")]
    assert re.search(r"assert\(\(pc_x\) < \(n\)\)", kernel), kernel
    out = tmp_path / "out.cu"
    out.write_text(captured.out)
    assert main(["validate", "--cpu", str(path)]) == 0
    capsys.readouterr()


def test_a_failing_assert_still_traps_after_the_transformation(tmp_path):
    """A check that fails in the original fails in the output as well (the CPU runtime
    aborts both programs): the transformation keeps each instance's check."""
    source = (FIXTURES / "styles" / "clock_and_assert.cu").read_text()
    failing = source.replace("assert(i < n);", "assert(i < 1000);")
    assert failing != source
    path = tmp_path / "failing.cu"
    path.write_text(failing)
    out = tmp_path / "failing_out.cu"
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(path), "-o",
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and "reduced" in r.stderr, r.stderr
    cpu = cpu_runner()
    for text in (failing, out.read_text()):
        run, error = cpu.compile_and_run(text)
        assert run is not None, error
        assert run.failure is not None or run.returncode != 0, run.stdout


# ------------------------------------------------------------ the Clang reader (issue 13)

from polycoal.frontend import clang  # noqa: E402

needs_clang = pytest.mark.skipif(not clang.available(), reason="libclang is not installed")


@needs_clang
@pytest.mark.parametrize("path", STYLES, ids=lambda p: p.stem)
def test_clang_reads_every_style_without_an_error(path):
    unit = clang.read(str(path))
    assert unit.errors == []
    assert unit.kernels and unit.launches
    launched = {launch.kernel for launch in unit.launches}
    assert {k.qualified for k in unit.kernels} <= launched, (unit.kernels, unit.launches)


@needs_clang
def test_clang_finds_what_the_c_subset_cannot():
    styles = FIXTURES / "styles"
    unit = clang.read(str(styles / "template_kernel.cu"))
    [k] = unit.kernels
    assert k.is_template and k.template_parameters == ("T",)
    assert [launch.template_arguments for launch in unit.launches] == [("float",), ("double",)]
    # a launch in a host template: as written (dependent), and as each instantiation of
    # the host template runs it
    written, *instances = clang.read(str(styles / "template_int_param.cu")).launches
    assert written.dependent and written.kernel == "scatter_columns" and \
        written.template_arguments == ("ROWS",)
    assert [(x.template_arguments, x.instance) for x in instances] == [
        (("64",), (("ROWS", "64", False),)), (("128",), (("ROWS", "128", False),))]
    assert instances[0].expression == instances[1].expression
    [k] = clang.read(str(styles / "header_kernel.cu")).kernels
    assert k.place.file.endswith("header_kernel_kernels.cuh") and k.place.line == 7
    text = (styles / "header_kernel_kernels.cuh").read_text()
    assert text[k.place.start:k.place.end].startswith("__global__ void matvec_rows(")
    [k] = clang.read(str(styles / "constexpr_sizes.cu")).kernels
    assert dict(k.constants) == {"COLS": 384, "PAD": 4, "ROWS": 512}
    unit = clang.read(str(styles / "namespaced_kernel.cu"))
    assert [k.qualified for k in unit.kernels] == ["linalg::rowsum", "linalg::transpose"]
    unit = clang.read(str(styles / "launch_macro.cu"))          # in a macro, and `<< <`
    assert [launch.kernel for launch in unit.launches] == ["rowsum", "scale_transpose"]


@needs_clang
def test_clang_reports_a_real_syntax_error():
    unit = clang.read(str(FIXTURES / "syntax_error.cu"))
    assert unit.errors and "expected" in unit.errors[0]


def test_spaced_launch_brackets_are_closed_up_in_place():
    text = "k << < g, b >> > (a); x = y << 2; z = w >> 1;"
    out = clang.closed_up(text)
    assert len(out) == len(text) and out.startswith("k <<<  g, b >>>  (a);")
    assert out.endswith("x = y << 2; z = w >> 1;")


@needs_clang
def test_clang_reads_the_polybench_programs_without_an_error():
    """grammars/clang_cuda.h declares what they use (device math in float and double,
    the runtime API): every kernel found, no error."""
    from conftest import POLYBENCH
    kernels = 0
    for path in sorted(POLYBENCH.glob("*/*.cu")):
        if path.stem.endswith("_coalesced"):
            continue
        unit = clang.read(str(path))
        assert unit.errors == [], (path.name, unit.errors[:3])
        written = len(re.findall(r"__global__\s+void\s+\w+\s*\(", path.read_text()))
        assert len(unit.kernels) == written, path.name
        kernels += len(unit.kernels)
    assert kernels == 51   # 45 in the published programs, 6 in cpp/


CONSTEXPR = FIXTURES / "constexpr_rows.cu"


def _transform(path, text=None):
    from polycoal.frontend import read_program
    from polycoal.transform import TransformOptions, transform_program
    program = read_program(str(path), TransformOptions().preprocessor, text=text)
    return program, transform_program(program, TransformOptions())


@needs_clang
def test_constants_are_read_as_numbers(tmp_path, capsys):
    """`constexpr int ROWS = 300;`, `static const int PAD = 8;`, `constexpr int LD = COLS
    + PAD;`: Clang evaluates them, the model and the launches read them as numbers, so
    the row sum is reduced and the column scale restructured (with the constants
    unknown, both subscripts were products of unknowns, and the grid unknown). The
    output compiles and runs like the original (CPU runtime, whole program)."""
    from polycoal.cli import main
    from polycoal.difftest.judging import parse_checks
    program, result = _transform(CONSTEXPR)
    assert program.constants == {"ROWS": 300, "COLS": 200, "PAD": 8, "LD": 208}
    assert {d.kernel: d.action for d in result.decisions} == {
        "row_sums": "reduced", "scale_columns": "restructured"}
    assert main(["validate", "--cpu", str(CONSTEXPR), "--seed", "3"]) == 0
    assert capsys.readouterr().out.count("PASS") == 2
    cpu = cpu_runner()
    runs = []
    for name, text in (("original", program.text), ("output", result.text)):
        run, error = cpu.compile_and_run(text)
        assert run is not None and run.failure is None, (name, error, run and run.stderr)
        runs.append(parse_checks(run.stdout))
    (out0, b0), (out1, b1) = (runs[0]["out"], runs[0]["B"]), (runs[1]["out"], runs[1]["B"])
    assert b0 == b1 and abs(out0[0] - out1[0]) <= 1e-3 * abs(out0[0])
    if shutil.which("nvcc"):
        out = tmp_path / "out.cu"
        out.write_text(result.text)
        assert nvcc(out, tmp_path) == ""


def test_without_clang_constants_stay_unknown(monkeypatch):
    """libclang missing: the constants are unknown names, as before, and the kernels are
    kept with the reason (never a wrong value)."""
    monkeypatch.setattr(clang, "available", lambda: False)
    program, result = _transform(CONSTEXPR)
    assert program.constants == {}
    assert all(d.action == "unchanged" for d in result.decisions)


@needs_clang
def test_a_parameter_or_local_shadows_a_constant(tmp_path):
    text = ("constexpr int N = 64;\nconstexpr int M = 32;\n"
            "__global__ void k(float *__restrict__ a, float *__restrict__ b, int N)\n"
            "{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i < N) { int M = 3; for (int j = 0; j < M; j++) a[i * M + j] = b[j]; }\n}\n"
            "int main() { float *a, *b; cudaMalloc((void **)&a, 4096); "
            "cudaMalloc((void **)&b, 4096);\n  k<<<1, 64>>>(a, b, 40); }\n")
    path = tmp_path / "shadow.cu"
    path.write_text(text)
    program, result = _transform(path, text)
    assert program.constants == {"N": 64, "M": 32}
    [d] = result.decisions
    model = d.analysis.model
    assert "N" in model.parameters and "M" not in model.parameters
    assert all("64" not in " and ".join(s.constraints) for s in model.statements)


SPACED = r"""#include <cstdio>
#include <cuda_runtime.h>
#define N 200
#define M 96
__global__ void row_sums(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) { float s = 0; for (int j = 0; j < M; j++) s += A[i * M + j]; y[i] = s; }
}
int main()
{
  static float hA[N * M], hy[N];
  for (int k = 0; k < N * M; k++) hA[k] = (float)(k % 9) - 4.0f;
  float *A, *y;
  cudaMalloc((void **)&A, sizeof hA); cudaMalloc((void **)&y, sizeof hy);
  cudaMemcpy(A, hA, sizeof hA, cudaMemcpyHostToDevice);
  row_sums << < (N + 63) / 64, 64 >> > (A, y);
  cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
  double s = 0; for (int k = 0; k < N; k++) s += hy[k] * (k % 5 + 1);
  printf("CHECK y %.6f 0\n", s);
  return 0;
}
"""


def test_a_launch_written_with_spaced_brackets_is_a_launch(tmp_path):
    """nvcc reads `k << < g, b >> > (a)` as a launch (real code has it): found,
    evaluated and rewritten like `k<<<g, b>>>(a)`; the program runs as before (whole
    program on the CPU runtime) and the output compiles."""
    from polycoal.difftest.judging import parse_checks
    from polycoal.frontend.lexer import tokenize
    path = tmp_path / "spaced.cu"
    path.write_text(SPACED)
    program, result = _transform(path, SPACED)
    [launch] = program.launches
    assert launch.grid_shape == (4, 1, 1) and launch.block_shape == (64, 1, 1)
    assert [d.action for d in result.decisions] == ["reduced"]
    assert "<< <" not in result.text
    cpu = cpu_runner()
    sums = []
    for text in (SPACED, result.text):
        run, error = cpu.compile_and_run(text)
        assert run is not None and run.failure is None, (error, run and run.stderr)
        sums.append(parse_checks(run.stdout)["y"][0])
    assert abs(sums[0] - sums[1]) <= 1e-4 * abs(sums[0])
    if shutil.which("nvcc"):
        out = tmp_path / "out.cu"
        out.write_text(result.text)
        assert nvcc(out, tmp_path) == ""
    # `>> >` closes templates outside a launch
    assert [t.text for t in tokenize("std::vector<std::vector<int>> > v;")][8:11] == \
        ["int", ">>", ">"]


HOST_VALUES = r"""#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
__global__ void scale_rows(float *__restrict__ A, const float *__restrict__ f, int n, int m)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n)
    for (int c = 0; c < m; c++)
      A[r * m + c] *= f[r];
}
int main(int argc, char **argv)
{
  int rows = argc > 1 ? atoi(argv[1]) : 300;
  int width = argc > 2 ? atoi(argv[2]) : 64;
  int threads = 128;
  int blocks = (rows + threads - 1) / threads;
  float *A, *f;
  cudaMalloc(&A, sizeof(float) * rows * width);
  cudaMalloc(&f, sizeof(float) * rows);
  scale_rows<<<blocks, threads>>>(A, f, rows, width);
  return 0;
}
"""


def test_validate_takes_values_of_the_launching_functions_variables(tmp_path, capsys):
    """Sizes read at run time: the grid is computed in main from rows (passed as n) and
    threads; `--arg rows=300 --arg width=64` names main's variables, not the kernel's
    parameters, and validates the restructured kernel."""
    from polycoal.cli import main
    path = tmp_path / "host_values.cu"
    path.write_text(HOST_VALUES)
    assert main(["validate", "--cpu", str(path), "--seed", "1"]) == 1
    assert "--arg NAME=VALUE" in capsys.readouterr().out
    assert main(["validate", "--cpu", str(path), "--seed", "1", "--arg", "rows=300",
                 "--arg", "width=64"]) == 0
    out = capsys.readouterr().out
    assert "scale_rows" in out and "PASS  outputs match" in out


@needs_clang
def test_a_launch_in_a_host_template_runs_the_copy_of_its_instantiation(capsys, tmp_path):
    """`k<T, COLS><<<...>>>` written in `template <typename T, int COLS> run_case()`:
    each instantiation of run_case (called from main, or from another template) runs
    the transformed copy of the kernel instantiation it launches, chosen at compile time
    by `if constexpr` on the host template's arguments; instantiations with no copy
    still launch the kernel as written. The integral parameters are replaced by their
    values in the branch, so the launch's geometry is known there."""
    from polycoal.cli import main
    path = FIXTURES / "styles" / "host_template_launch.cu"
    assert main(["transform", str(path), "-o", str(tmp_path / "out.cu")]) == 0
    err = capsys.readouterr().err
    for shown in ("scale_rows<float, 256>", "scale_rows<double, 128>", "scale_rows<float, 64>"):
        assert f"'{shown}' (as '" in err and "restructured" in err, err
    assert "'row_dot<float>' (as 'row_dot__pc_float') reduced" in err
    out = (tmp_path / "out.cu").read_text()
    assert "if constexpr ((pc_same<T, float>::value) && (COLS == 256))" in out
    assert "else scale_rows<T, COLS><<<(nrows + 127) / 128, 128>>>(d, f, nrows); }" in out
    assert out.count("struct pc_same<") == 1
    # the lowered text (what the pipeline reads) keeps the input's lines where they were
    from polycoal.frontend import lower, read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    program = read_program(str(path))
    lowered = lower.apply(program.text, lower.plan(program, PreprocessorOptions())).text
    original = program.text.splitlines()
    assert lowered.splitlines()[original.index("int main()")] == "int main()"
    assert "{ if constexpr" in lowered.splitlines()[original.index(
        "    scale_rows<T, COLS><<<(nrows + 127) / 128, 128>>>(d, f, nrows);")]


@needs_clang
def test_a_host_template_launch_is_not_dispatched_without_if_constexpr(tmp_path):
    """Before C++17 (no `if constexpr`), or where the launch is not a statement of its
    own, the launch in a host template is left as written."""
    from polycoal.frontend import lower
    from polycoal.frontend.lexer import tokenize
    text = ("void f() { if (a) k<<<1, 1>>>(x); }\nint g() { return (void)k<<<1, 1>>>(x), 0; }\n"
            "void h() { for (;;) k<<<1, 1>>>(x); }\n")
    tokens = tokenize(text)

    class Launch:
        def __init__(self, at):
            start = text.index("k<<<", at)
            self.expression = (start, text.index(")", start) + 1)
    first, second, third = Launch(0), Launch(text.index("int g")), Launch(text.index("void h"))
    assert lower._dispatchable(tokens, first, "c++17")
    assert not lower._dispatchable(tokens, first, "c++14")
    assert not lower._dispatchable(tokens, second, "c++17")      # a cast, then a comma
    assert lower._dispatchable(tokens, third, "gnu++20")
