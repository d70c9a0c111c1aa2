"""Never a broken build (issue 32, item 4).

The compile check (validate/compiles.py, transform.py's _compile_checked and
_compiling_lowerings): before the output is written, it is compiled as its translation
unit (Clang through libclang by default, nvcc when asked); an error the input does not
have leaves the kernel whose rewrite caused it as written, with an error
(`output-rejected`) and exit status 1. And four classes of broken output, each with its
fixture in testsuite/fixtures/builds, whose output nvcc -arch=sm_90 -c compiles and
which runs on the CPU as the input does.
"""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import FIXTURES, compile_sm90, runs_alike
from polycoal.cli import main
from polycoal.decisions import TransformOptions
from polycoal.frontend import clang, lower, read_program
from polycoal.transform import transform_program
from polycoal.validate import compiles

BUILDS = FIXTURES / "builds"
needs_clang = pytest.mark.skipif(not clang.available(), reason="libclang is not installed")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def _transform(path, text=None, **options):
    program = read_program(str(path), TransformOptions().preprocessor, text=text)
    return program, transform_program(program, TransformOptions(**options))


def _actions(result) -> dict[str, str]:
    return {d.kernel: d.action for d in result.decisions}


def _output(tmp_path, result, name="out.cu"):
    out = tmp_path / name
    out.write_text(result.text)
    return out


# ---- the four classes of broken output ----

@needs_nvcc
def test_a_launch_of_dim3_temporaries_is_no_function_declaration(nvcc, tmp_path):
    """`k<<<dim3(num_blocks), dim3(block_size)>>>` with run-time ints, its kernel
    restructured (and another permuted under a run-time check): the geometry is held as
    `const dim3 pc_grid0 = dim3(...)`, not `const dim3 pc_grid0(dim3(num_blocks))`,
    which declares a function."""
    program, result = _transform(BUILDS / "vexing_launch.cu", model=False)  # every form
    assert _actions(result) == {"scale_rows": "restructured", "shift_tile": "permuted"}
    assert "const dim3 pc_grid0 = dim3(dim3(num_blocks)), pc_block0 = dim3(dim3(block_size));" \
        in result.text
    assert result.text.count("pc_grid0(dim3") == program.text.count("pc_grid0(dim3")  # prose
    compile_sm90(nvcc, _output(tmp_path, result))
    runs_alike(program.text, result.text, tmp_path)
    runs_alike(program.text, result.text, tmp_path, argv=("64", "16"))


@needs_nvcc
def test_a_layout_keeps_writable_what_only_the_pointer_made_const(nvcc, tmp_path):
    """`Counters *const totals` (written with +=) and `const Counters *const steps`:
    after the layout change, totals' group pointers are writable and steps' const; the
    runtime's conversions declare their `unsigned int` words as C++ allows."""
    program, result = _transform(BUILDS / "const_pointer_layout.cu")
    assert _actions(result) == {"accumulate": "layout"}
    signature = result.text[result.text.index("__global__ void accumulate("):]
    signature = signature[:signature.index(")")]
    assert "unsigned int *totals__c0" in signature
    assert "const unsigned int *totals__c" not in signature
    assert "const unsigned int *steps__c0" in signature
    assert "unsigned int w{};" in result.text and "unsigned int()" not in result.text
    compile_sm90(nvcc, _output(tmp_path, result))
    runs_alike(program.text, result.text, tmp_path)


@needs_clang
@needs_nvcc
def test_template_arguments_written_at_calls_and_launches_are_kept(nvcc, tmp_path):
    """`halve<float>(in[...])` on an int inlines as a float division, `clamp_to<T>(v, 0,
    lim)` inlines with T as written, and a kernel template on a scoped enum is copied
    with the enumerator's name (`combine<Op::MIN_OF>`, `op == Op::MIN_OF`)."""
    program, result = _transform(BUILDS / "template_arguments.cu")
    actions = _actions(result)
    assert actions["transpose_halves"] == "staged"
    assert actions["transpose_clamped__pc_float"] == "staged"     # <float>'s copy
    assert actions["pairwise<Op::MIN_OF>"] == actions["pairwise<Op::MAX_OF>"] == "unchanged"
    assert "((float) pc_tile0[threadIdx.x][pc_k]) / 2" in result.text
    compile_sm90(nvcc, _output(tmp_path, result))
    runs_alike(program.text, result.text, tmp_path, tolerance=0.0)
    # the copies of pairwise, before any transformation, name the enumerators
    lowered = lower.apply(program.text, lower.plan(program, TransformOptions().preprocessor))
    assert "combine<Op::MIN_OF>(" in lowered.text and "combine<Op::MAX_OF>(" in lowered.text
    assert "if constexpr ((op == Op::MIN_OF))" in lowered.text
    compile_sm90(nvcc, _output(tmp_path, lowered, "lowered.cu"))


@needs_nvcc
def test_a_staged_kernel_writes_a_dim_of_one_value_as_its_value(nvcc, tmp_path):
    """A 2-D kernel launched one thread high: staged over (r, c), its statement reads
    the y index, which takes the value 0 (it was `gy`, declared nowhere)."""
    program, result = _transform(BUILDS / "one_row_staging.cu")
    assert _actions(result) == {"columns_to_rows": "staged"}
    kernel = result.text[result.text.index("__global__"):result.text.index("int main")]
    assert "__shared__" in kernel and not re.search(r"\bgy\b", kernel)
    compile_sm90(nvcc, _output(tmp_path, result))
    runs_alike(program.text, result.text, tmp_path, tolerance=0.0)


# ---- the compile check ----

TWO_KERNELS = (BUILDS / "one_row_staging.cu").read_text().replace(
    "int main()", """__global__ void scale_rows(const float *in, float *out, int rows)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows)
    for (int j = 0; j < COLS; j++)
      out[i * COLS + j] = 0.5f * in[i * COLS + j];
}

int main()""").replace("  cudaMemcpy(h, out,", "  scale_rows<<<1, ROWS>>>(in, out, ROWS);\n"
                                                "  cudaMemcpy(h, out,")


@pytest.fixture
def staging_broken(monkeypatch):
    """Staged tiles that read the dims of one value by their model names again (the
    bug the fixture one_row_staging.cu fixed): the rewrite no longer compiles."""
    from polycoal.codegen import staged
    monkeypatch.setattr(staged, "fixed_dims", lambda model, dims: {})


@needs_clang
def test_a_rewrite_that_does_not_compile_is_left_as_written(staging_broken, write_cu):
    path = write_cu(TWO_KERNELS)
    program, result = _transform(path)
    decisions = {d.kernel: d for d in result.decisions}
    assert decisions["columns_to_rows"].code == "output-rejected"
    assert decisions["scale_rows"].action == "restructured"      # the other stays changed
    errors = [x for x in result.diagnostics if x.severity == "error"]
    assert [(x.code, x.kernel, x.location.line) for x in errors] == \
        [("output-rejected", "columns_to_rows", program.kernel("columns_to_rows").location.line)]
    assert "clang: " in errors[0].message and "use of undeclared identifier 'gy'" in \
        errors[0].message
    # the kernel's text is the input's, byte for byte
    kernel = program.kernel("columns_to_rows")
    assert program.text[kernel.span.start:kernel.span.end] in result.text
    assert "columns_to_rows<<<dim3(COLS / 256, 1), dim3(256, 1)>>>" in result.text
    # without the check, the broken rewrite goes through
    _, unchecked = _transform(path, compile_check="none")
    assert _actions(unchecked)["columns_to_rows"] == "staged"
    assert re.search(r"\bgy\b", unchecked.text)


@needs_clang
def test_the_command_line_exits_1_and_writes_the_kernel_as_it_was(staging_broken, tmp_path,
                                                                 capsys):
    path = tmp_path / "k.cu"
    path.write_text((BUILDS / "one_row_staging.cu").read_text())
    out = tmp_path / "out.cu"
    assert main(["transform", str(path), "-o", str(out)]) == 1
    assert out.read_bytes() == path.read_bytes()
    err = capsys.readouterr().err
    assert re.search(r"k\.cu:18:1: error: kernel 'columns_to_rows': .*does not compile.*"
                     r"left as written \[output-rejected\]", err)
    assert main(["transform", str(path), "-o", str(out), "--compile-check", "none"]) == 0
    assert out.read_bytes() != path.read_bytes()


@needs_nvcc
def test_nvcc_judges_when_asked(staging_broken, write_cu):
    path = write_cu(TWO_KERNELS)
    _, result = _transform(path, compile_check="nvcc")
    [error] = [x for x in result.diagnostics if x.code == "output-rejected"]
    assert error.kernel == "columns_to_rows"
    assert 'nvcc: ' in error.message and 'identifier "gy" is undefined' in error.message
    assert _actions(result)["scale_rows"] == "restructured"


@needs_clang
def test_the_input_errors_are_the_input_s(write_cu):
    """An error the input has (a function the declarations polycoal reads the file with
    do not know) is no reason to refuse an output that repeats it."""
    text = TWO_KERNELS.replace("int main()\n{", "int main()\n{\n  undeclared_setup();")
    path = write_cu(text)
    assert compiles.compile_errors("clang", str(path), text, TransformOptions().preprocessor)
    _, result = _transform(path)
    assert _actions(result) == {"columns_to_rows": "staged", "scale_rows": "restructured"}
    assert not [x for x in result.diagnostics if x.severity == "error"]


@needs_clang
def test_one_compile_when_all_is_well(monkeypatch, write_cu):
    """The output compiled once; the input only where the output has errors to compare
    (a file without changes: nothing)."""
    compiled = []
    real = compiles.compile_errors

    def counting(checker, path, text, options):
        compiled.append(text)
        return real(checker, path, text, options)
    monkeypatch.setattr(compiles, "compile_errors", counting)
    _, result = _transform(write_cu(TWO_KERNELS))
    assert compiled == [result.text]
    compiled.clear()
    program, result = _transform(FIXTURES / "empirical.cu")
    assert result.text == program.text and compiled == []


@needs_clang
def test_a_lowering_that_does_not_compile_is_refused(monkeypatch):
    """A copy of a template's instantiation that names an enum's value by its number
    (the bug template_arguments.cu fixed) is refused before any kernel is read through
    it: the output is the input, with a warning at the kernel's definition (polycoal
    could not read the kernel; no output was rejected, the exit status stays 0)."""
    monkeypatch.setattr(clang, "_integral", lambda ci, parameter, value: str(value))
    clang._read.cache_clear()
    try:
        program, result = _transform(BUILDS / "template_arguments.cu")
    finally:
        clang._read.cache_clear()
    refused = [x for x in result.diagnostics if x.code == "lowering-rejected"]
    assert sorted(x.kernel for x in refused) == ["pairwise<0>", "pairwise<1>"]
    assert all(x.severity == "warning" and x.location.line == 52 and
               "its copy for this instantiation does not compile" in x.message
               for x in refused)
    actions = _actions(result)
    assert actions["pairwise<0>"] == actions["pairwise<1>"] == "unchanged"
    assert actions["transpose_halves"] == "staged"       # the others are transformed
    assert "pairwise__pc" not in result.text


def test_only_errors_the_input_does_not_have_are_new():
    error = compiles.CompileError
    before = (error(3, "use of undeclared identifier 'f'"),)
    after = (error(3, "use of undeclared identifier 'f'"), error(9, "use of undeclared "
             "identifier 'f'"), error(12, "use of undeclared identifier 'gy'"))
    assert compiles.new_errors(before, after) == [after[2]]


def test_culprits_are_the_changes_whose_absence_removes_errors():
    """Each change left out in turn (with those found before): `b` and `d` cause one
    error each; `a` and `c` none."""
    error = compiles.CompileError
    causes = {"b": error(5, "no b"), "d": error(9, "no d")}

    def without(left_out):
        return [e for unit, e in causes.items() if unit not in left_out]
    found = without([])
    assert compiles.culprits(["a", "b", "c", "d"], found, without) == causes
    # errors that no change explains alone: every change is one
    assert compiles.culprits(["a", "c"], found, without) == \
        {"a": causes["b"], "c": causes["b"]}
