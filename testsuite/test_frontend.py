"""Front end: preprocessing, kernel and launch discovery, spans, compile-time evaluation.

The facts asserted here are the ones listed in testsuite/fixtures/README.md (and in the
header comment of every fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from polycoal.analysis import analyze_program
from polycoal.diagnostics import InputError
from polycoal.frontend import read_program
from polycoal.frontend.cexpr import evaluate
from polycoal.frontend.preprocess import PreprocessorOptions, preprocess
from polycoal.model.extract import extract_model
from polycoal.model.poly import Poly
from polycoal.report.findings import program_diagnostics

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# --------------------------------------------------------------------------- cpp_host.cu

def test_cpp_host_kernels_found_without_parsing_host_code(program):
    p = program(FIXTURES / "cpp_host.cu")
    assert [k.name for k in p.kernels] == ["scale_1d", "transpose_2d"]
    assert [k.location.line for k in p.kernels] == [21, 27]
    assert all(k.ast is not None and k.unsupported is None for k in p.kernels)
    assert p.diagnostics == []
    scale = p.kernel("scale_1d")
    assert [(q.name, q.type, q.is_pointer) for q in scale.parameters] == [
        ("out", "float", True), ("in", "float", True), ("alpha", "float", False),
        ("n", "int", False)]
    assert scale.parameters[1].is_const and not scale.parameters[0].is_const


def test_cpp_host_launch_in_class_method(program):
    p = program(FIXTURES / "cpp_host.cu")
    assert [launch.kernel for launch in p.launches] == ["scale_1d", "transpose_2d"]
    run = p.launches[0]
    assert run.location.line == 49
    assert run.function == "run"
    assert run.block_shape == (256, 1, 1)
    assert run.grid_shape is None            # (n_ + 255) / 256: a class member
    assert run.arguments == ["d_out", "d_in", "2.0f", "n_"]


def test_cpp_host_launch_in_main(program):
    p = program(FIXTURES / "cpp_host.cu")
    launch = p.launches[1]
    assert launch.location.line == 74
    assert launch.function == "main"
    assert launch.block_shape == (16, 16, 1)
    assert launch.grid_shape == (64, 64, 1)
    assert launch.constant_arguments == {"width": 1024, "height": 1024}


# --------------------------------------------------------------------------- launch_forms.cu

LAUNCH_FORMS = [  # (line, block, grid) in file order, from the fixture README
    (48, (32, 8, 1), (32, 128, 1)),
    (49, (128, 1, 1), (64, 1, 1)),
    (50, (256, 1, 1), (17, 1, 1)),
    (53, (32, 8, 1), (32, 128, 1)),
    (55, (32, 8, 1), (32, 128, 1)),
    (58, (16, 16, 1), (64, 64, 1)),
    (60, (64, 4, 1), (16, 256, 1)),
    (66, (128, 1, 1), (32, 1, 1)),
    (70, None, None),
]


def test_launch_forms_all_nine_found(program):
    p = program(FIXTURES / "launch_forms.cu")
    assert [k.name for k in p.kernels] == ["inc2d"]
    assert len(p.launches) == 9
    assert all(launch.kernel == "inc2d" and launch.function == "main"
               for launch in p.launches)
    assert p.diagnostics == []


@pytest.mark.parametrize("index", range(9), ids=[f"launch{k + 1}" for k in range(9)])
def test_launch_forms_shapes(program, index):
    p = program(FIXTURES / "launch_forms.cu")
    line, block, grid = LAUNCH_FORMS[index]
    launch = p.launches[index]
    assert launch.location.line == line
    assert launch.block_shape == block
    assert launch.grid_shape == grid


def test_launch_forms_stream_and_shared_memory(program):
    p = program(FIXTURES / "launch_forms.cu")
    by_line = {launch.location.line: launch for launch in p.launches}
    assert by_line[53].shared_bytes == "0"
    assert by_line[53].stream == "stream"
    assert by_line[55].shared_bytes == "shmemBytes"
    assert by_line[55].stream is None
    for line in (48, 49, 50, 58, 60, 66, 70):
        assert by_line[line].shared_bytes is None and by_line[line].stream is None


def test_launch_forms_spans(program):
    p = program(FIXTURES / "launch_forms.cu")
    for launch in p.launches:
        text = p.text[launch.span.start:launch.span.end]
        assert text.startswith("inc2d<<<") and text.endswith(");")
        assert line_of(p.text, launch.span.start) == launch.location.line


def test_split_launch_span_covers_original_text(program):
    p = program(FIXTURES / "launch_forms.cu")
    launch = p.launches[6]
    text = p.text[launch.span.start:launch.span.end]
    assert line_of(p.text, launch.span.start) == 60
    assert line_of(p.text, launch.span.end - 1) == 63
    assert text.startswith("inc2d<<< dim3(w / 64, h / 4),")
    assert text.endswith(">>>(a, w, h);")
    # the comments inside <<< >>> are part of the original text the span covers
    assert "/* grid: one block per 64x4 tile */" in text
    assert "// block: 64 x 4 threads" in text
    assert "/* no shared memory, default stream */" in text
    # ...but not of the configuration the front end evaluated
    assert "/*" not in launch.block and "//" not in launch.block
    assert launch.block.replace(" ", "") == "dim3(64,4)"


def test_launch_constant_arguments(program):
    p = program(FIXTURES / "launch_forms.cu")
    assert p.launches[0].constant_arguments == {"w": 1024, "h": 1024}
    assert p.launches[1].constant_arguments == {"w": 64 * 128, "h": 1}
    assert p.launches[2].constant_arguments == {"w": 4096, "h": 1}


def test_runtime_block_reported_as_dynamic_geometry(analysis):
    pa = analysis(FIXTURES / "launch_forms.cu")
    dynamic = [d for d in program_diagnostics(pa) if d.code == "dynamic-geometry"]
    assert len(dynamic) == 1
    assert dynamic[0].location.line == 70
    assert "bs" in dynamic[0].message
    # the launches disagree on the block, so the model has no single block shape
    assert pa.kernels[0].model.block_shape is None


# --------------------------------------------------------------------------- macros_header.cu

def test_macros_header_kernels(program):
    p = program(FIXTURES / "macros_header.cu")
    assert [k.name for k in p.kernels] == ["mv_rows", "scale_mat"]
    assert [k.location.line for k in p.kernels] == [30, 40]
    assert p.kernel("hidden_kernel") is None          # inside #if 0
    assert p.diagnostics == []
    assert all(q.type == "float" for k in p.kernels for q in k.parameters)


def test_macros_header_launches(program):
    p = program(FIXTURES / "macros_header.cu")
    assert [(l.kernel, l.location.line, l.block_shape, l.grid_shape) for l in p.launches] == [
        ("mv_rows", 64, (128, 1, 1), (8, 1, 1)),
        ("scale_mat", 65, (32, 8, 1), (32, 128, 1)),
    ]


def test_macros_expanded_before_modelling(program):
    p = program(FIXTURES / "macros_header.cu")
    m = extract_model(p.kernel("mv_rows"), p)
    assert m.outside == []
    (s0, s1) = m.statements
    assert any("1024" in c for c in s0.constraints)          # i < _PB_N = N = 1024
    assert any("512" in c for c in s1.constraints)           # j < _PB_M = M = 512
    a = next(a for a in s1.accesses if a.array == "A")
    assert a.flat == Poly.var("gx") * 512 + Poly.var("c0")   # A[i * M + j]
    m2 = extract_model(p.kernel("scale_mat"), p)
    store = next(a for s in m2.statements for a in s.accesses if a.kind == "write")
    assert store.flat == Poly.var("gy") * 1024 + Poly.var("gx")   # A[IDX(i, j)]


def test_define_use_double_changes_element_type(program):
    p = program(FIXTURES / "macros_header.cu", ("USE_DOUBLE",))
    assert [k.name for k in p.kernels] == ["mv_rows", "scale_mat"]
    assert all(q.type == "double" for k in p.kernels for q in k.parameters)
    m = extract_model(p.kernel("scale_mat"), p)
    assert {a.element_size for s in m.statements for a in s.accesses} == {8}


def test_include_dir_option(program):
    # the header is found next to the file anyway; -I must not change anything
    p = program(FIXTURES / "macros_header.cu", include_dirs=(FIXTURES,))
    assert [k.name for k in p.kernels] == ["mv_rows", "scale_mat"]
    assert p.diagnostics == []


def test_include_dir_makes_header_visible(write_cu, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "width.h").write_text("#define WIDTH 5\n")
    path = write_cu('#include "width.h"\n'
                    "__global__ void k(float *a) { a[threadIdx.x * WIDTH] = 0; }\n")
    without = read_program(str(path))
    assert [d.code for d in without.diagnostics] == ["missing-header"]
    p = read_program(str(path), PreprocessorOptions(include_dirs=(str(inc),)))
    assert p.diagnostics == []
    m = extract_model(p.kernel("k"), p)
    assert m.statements[0].accesses[0].flat.coefficient("tx") == Poly.const(5)


DEFINES_SOURCE = """\
#ifndef WIDTH
#define WIDTH 8
#endif
#ifdef __CUDACC__
__global__ void k(float *a) { a[threadIdx.x * WIDTH] = 0.0f; }
#endif
#ifdef EXTRA
__global__ void extra(float *a) { a[threadIdx.x] = 1.0f; }
#endif
"""


def _stride(p):
    m = extract_model(p.kernel("k"), p)
    return m.statements[0].accesses[0].flat.coefficient("tx")


def test_define_and_undefine_options(write_cu):
    path = str(write_cu(DEFINES_SOURCE))
    p = read_program(path)
    assert [k.name for k in p.kernels] == ["k"]
    assert _stride(p) == Poly.const(8)
    assert _stride(read_program(path, PreprocessorOptions(defines=("WIDTH=3",)))) \
        == Poly.const(3)
    assert [k.name for k in read_program(path, PreprocessorOptions(defines=("EXTRA",))
                                         ).kernels] == ["k", "extra"]
    # polycoal predefines __CUDACC__ as nvcc does; -U removes it
    assert read_program(path, PreprocessorOptions(undefines=("__CUDACC__",))).kernels == []
    # -U wins over -D of the same name, as in the compiler driver's order here
    both = read_program(path, PreprocessorOptions(defines=("EXTRA",), undefines=("EXTRA",)))
    assert [k.name for k in both.kernels] == ["k"]


def test_missing_header_preprocessed_as_empty(write_cu):
    path = write_cu('#include "no_such_header.h"\n'
                    "#include <cublas_v2.h>\n"
                    "__global__ void k(float *a) { a[threadIdx.x] = 0.0f; }\n"
                    "int main() { float *a; k<<<1, 32>>>(a); }\n")
    p = read_program(str(path))
    assert [k.name for k in p.kernels] == ["k"]
    assert len(p.launches) == 1
    missing = {d.message.split("'")[1]: d for d in p.diagnostics}
    assert set(missing) == {"no_such_header.h", "cublas_v2.h"}
    user = missing["no_such_header.h"]
    assert (user.severity, user.code, user.location.line) == ("warning", "missing-header", 1)
    assert user.location.file == str(path)
    library = missing["cublas_v2.h"]          # a CUDA library header: only a note
    assert (library.severity, library.code, library.location.line) == (
        "note", "missing-header", 2)


def test_a_missing_header_above_the_file_is_stubbed_inside_the_temporary_folder(write_cu):
    """`#include "../common/x.h"` missing: its empty stand-in lies inside polycoal's own
    temporary folder (it once landed in the temporary folder's parent, /tmp/common/x.h,
    where other programs' `../common/x.h` then found it empty), and is found there;
    a name that climbs back in is refused as the preprocessor's error."""
    import tempfile
    import uuid
    folder = f"pc_missing_{uuid.uuid4().hex}"
    path = write_cu(f'#include "../../{folder}/x.h"\n'
                    "__global__ void k(float *a) { a[threadIdx.x] = 0.0f; }\n")
    p = read_program(str(path))
    assert [k.name for k in p.kernels] == ["k"]
    assert [d.code for d in p.diagnostics] == ["missing-header"]
    assert not (Path(tempfile.gettempdir()) / folder).exists()
    assert not (Path(tempfile.gettempdir()).parent / folder).exists()
    bad = write_cu('#include "../a/../../b.h"\n__global__ void k(float *a) { }\n')
    with pytest.raises(InputError):
        read_program(str(bad))


def test_missing_input_file_raises(tmp_path):
    missing = tmp_path / "nope.cu"
    with pytest.raises(InputError, match="no such file"):
        read_program(str(missing))
    with pytest.raises(InputError):
        preprocess(str(missing))


def test_preprocessor_error_raises_input_error(write_cu):
    path = write_cu('\n#error "stop here"\n__global__ void k(float *a) { a[0] = 0; }\n')
    with pytest.raises(InputError) as info:
        read_program(str(path))
    assert info.value.location is not None and info.value.location.line == 2
    assert "stop here" in str(info.value)


def test_source_text_given_for_a_path():
    text = (FIXTURES / "race_atax.cu").read_text()
    p = read_program("virtual/race_atax.cu", text=text)
    assert [k.name for k in p.kernels] == ["atax_kernel1", "race_neighbour", "noraces"]
    assert len(p.launches) == 3
    assert p.kernels[0].location.file == "virtual/race_atax.cu"
    assert p.text == text


# --------------------------------------------------------------------------- spans

SPAN_FIXTURES = ["cpp_host.cu", "launch_forms.cu", "macros_header.cu", "race_atax.cu",
                 "outside_model.cu", "symbolic_linear.cu", "bad_kernel_cpp.cu",
                 "syntax_error.cu"]


@pytest.mark.parametrize("name", SPAN_FIXTURES)
def test_kernel_spans_cover_the_definition(program, name):
    p = program(FIXTURES / name)
    assert p.kernels
    for k in p.kernels:
        assert k.span is not None, k.name
        text = p.text[k.span.start:k.span.end]
        assert text.startswith(("__global__", "template")), k.name
        assert text.endswith("}"), k.name
        assert f"void {k.name}(" in text
        if not k.is_template:
            assert line_of(p.text, k.span.start) == k.location.line


def test_template_kernel_span_includes_template_line(program):
    p = program(FIXTURES / "bad_kernel_cpp.cu")
    k = p.kernel("scale_t")
    text = p.text[k.span.start:k.span.end]
    assert text.startswith("template <typename T>\n__global__ void scale_t(T *a, int n)")
    assert line_of(p.text, k.span.start) == 19
    assert k.location.line == 20


def test_spans_do_not_overlap_and_leave_host_code(program):
    p = program(FIXTURES / "cpp_host.cu")
    spans = sorted((k.span.start, k.span.end) for k in p.kernels)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    rest = p.text[spans[-1][1]:]
    assert "__global__" not in rest and "class Runner" in rest


def test_kernel_from_included_header_has_no_span(write_cu):
    write_cu("__global__ void hk(float *a) { a[threadIdx.x] = 2.0f; }\n", "hdr.cuh")
    path = write_cu('#include "hdr.cuh"\n'
                    "__global__ void k(float *a) { a[threadIdx.x] = 1.0f; }\n")
    p = read_program(str(path))
    assert [k.name for k in p.kernels] == ["hk", "k"]
    assert p.kernel("hk").location.file.endswith("hdr.cuh")
    assert p.kernel("hk").span is None              # not in the file that can be edited
    assert p.kernel("k").span is not None


# --------------------------------------------------------------------------- counts

@pytest.mark.parametrize("name,kernels,launches", [
    ("cpp_host.cu", 2, 2), ("launch_forms.cu", 1, 9), ("macros_header.cu", 2, 2),
    ("race_atax.cu", 3, 3), ("outside_model.cu", 8, 0), ("symbolic_linear.cu", 5, 5),
    ("bad_kernel_cpp.cu", 3, 3), ("syntax_error.cu", 2, 0),
])
def test_comments_are_not_scanned(program, name, kernels, launches):
    """The header comments quote `k<<<grid, block>>>`, `__device__` and templates."""
    p = program(FIXTURES / name)
    assert len(p.kernels) == kernels
    assert len(p.launches) == launches


def test_device_function_is_not_a_kernel(program):
    p = program(FIXTURES / "outside_model.cu")
    assert p.kernel("pair_sum") is None
    assert list(p.device_functions) == ["pair_sum"]
    fn = p.device_functions["pair_sum"]
    assert fn.location.line == 59
    assert [q.name for q in fn.parameters] == ["p", "k"]


# --------------------------------------------------------------------------- C++ kernels

def test_bad_kernel_cpp_front_end(program):
    p = program(FIXTURES / "bad_kernel_cpp.cu")
    assert [k.name for k in p.kernels] == ["scale_t", "cpp_body", "plain_ok"]
    scale_t, cpp_body, plain_ok = p.kernels
    assert scale_t.is_template and scale_t.ast is None and "template" in scale_t.unsupported
    assert not cpp_body.is_template and cpp_body.ast is None
    assert "auto" in cpp_body.unsupported
    assert plain_ok.ast is not None and plain_ok.unsupported is None
    diag = [d for d in p.diagnostics if d.kernel == "cpp_body"]
    assert [(d.severity, d.code, d.location.line) for d in diag] == [
        ("warning", "unsupported-construct", 28)]
    # scale_t<float><<<...>>> is a launch of scale_t
    assert [(l.kernel, l.location.line, l.block_shape, l.grid_shape) for l in p.launches] == [
        ("scale_t", 46, (256, 1, 1), (16, 1, 1)),
        ("cpp_body", 47, (256, 1, 1), (16, 1, 1)),
        ("plain_ok", 48, (256, 1, 1), (16, 1, 1)),
    ]


def test_reference_declaration_is_unsupported_not_a_syntax_error(write_cu):
    path = write_cu("__global__ void r(float *a, int n)\n{\n"
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    if (i < n) { float &x = a[i]; x += 1.0f; }\n}\n")
    p = read_program(str(path))
    (k,) = p.kernels
    assert k.ast is None
    assert [(d.severity, d.code) for d in p.diagnostics] == [
        ("warning", "unsupported-construct")]
    assert "'&'" in p.diagnostics[0].message


def test_syntax_error_reported_not_raised(program):
    path = FIXTURES / "syntax_error.cu"
    p = program(path)
    errors = [d for d in p.diagnostics if d.severity == "error"]
    assert len(errors) == 1
    (error,) = errors
    assert error.code == "syntax-error"
    assert error.kernel == "broken"
    assert error.location.line in (24, 25)
    assert error.location.file == str(path)
    broken = p.kernel("broken")
    assert broken.ast is None and broken.unsupported == "syntax error"
    # the kernel before it still parses
    assert p.kernel("ok_kernel").ast is not None
    analyze_program(p)    # and analysing the program does not crash


# --------------------------------------------------------------------------- cexpr

@pytest.mark.parametrize("text,value", [
    ("(size_t)ceil((float)4096 / (float)32)", 128),
    ("(size_t)(ceil(((float)1000) / ((float)32)))", 32),
    ("(unsigned int)ceil(1000.0f / 8)", 125),
    ("ceil(7 / 2)", 3),                 # integer division happens before ceil
    ("ceil(7.0 / 2)", 4),
    ("7 / 2", 3),
    ("-7 / 2", -3),                     # C truncates toward zero
    ("7 / -2", -3),
    ("-7 % 2", -1),
    ("7.0 / 2", 3.5),
    ("(float)7 / 2", 3.5),
    ("(int)3.9", 3),
    ("(int)-3.9", -3),
    ("(double)1 / 4", 0.25),
    ("10 / 4 * 2.0", 4.0),
    ("1 << 20", 1048576),
    ("0x10 + 010", 24),
    ("4096u / 256ul", 16),
    ("(4096 + 255) / 256", 16),
    ("3 > 2 ? 10 : 20", 10),
    ("std::max(1, 2)", 2),
    ("min(3, 4)", 3),
    ("2.5e1f", 25.0),
])
def test_cexpr_evaluate(text, value):
    result = evaluate(text)
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize("text", ["n + 1", "sizeof(float)", "1 / 0", "atoi(argv[1])",
                                  "(1 + 2", "'a'"])
def test_cexpr_unknown_is_none(text):
    assert evaluate(text) is None


def test_cexpr_resolver_for_names_and_members():
    values = {("block", "x"): 32, ("n", None): 1000}
    resolve = lambda name, member: values.get((name, member))
    assert evaluate("(n + block.x - 1) / block.x", resolve) == 32
    assert evaluate("(size_t)ceil((float)n / (float)block.x)", resolve) == 32
    assert evaluate("block.y", resolve) is None


def test_two_launches_of_a_kernel_on_one_line_have_their_own_spans(tmp_path):
    """`k<<<...>>>(a); k<<<...>>>(b);` on one line: each launch is located at its own
    text (the second was given the first's span, and seen as a reference elsewhere)."""
    src = tmp_path / "twice.cu"
    src.write_text("__global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n"
                   "void run(float *a, float *b) { k<<<1, 32>>>(a); k<<<1, 64>>>(b); }\n")
    p = read_program(str(src))
    first, second = p.launches
    assert p.text[first.span.start:first.span.end] == "k<<<1, 32>>>(a);"
    assert p.text[second.span.start:second.span.end] == "k<<<1, 64>>>(b);"
    assert "k" not in p.references


def test_a_parameter_named_like_a_kernel_is_no_reference_to_it(tmp_path):
    """A host function's parameter or local that has a kernel's name (`double scale` in
    a fill helper) means the parameter, not the kernel; taking the kernel's address or
    naming it in the runtime API still counts."""
    src = tmp_path / "shadow.cu"
    src.write_text(
        "__global__ void scale(float *p) { p[threadIdx.x] *= 2.0f; }\n"
        "static void fill(float *h, long n, double scale) { for (long t = 0; t < n; t++)\n"
        "  h[t] = (float)(t * scale); }\n"
        "void g() { const float &scale = 1.0f; (void)scale; }\n"
        "void run(float *d) { scale<<<1, 32>>>(d);\n"
        "  cudaFuncSetAttribute(scale, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);\n"
        "  void *f = (void *)&scale; (void)f; }\n")
    assert read_program(str(src)).references == {"scale": (6, 7)}


@pytest.mark.parametrize("loop", [
    "for (n = 1024; n <= 8192; n = n * 2) {\n    dim3 grid((n + 255) / 256);\n"
    "    k<<<grid, 256>>>(a, n);\n  }",
    "for (n = 1024; n <= 8192; n = n * 2)\n    k<<<(n + 255) / 256, 256>>>(a, n);",
    "for (n = 1024; n <= 8192; n = 2 * n) { k<<<n / 256, 256>>>(a, n); }",
])
def test_a_variable_the_step_of_a_for_loop_sets_is_not_known(write_cu, loop):
    """`for (n = 1024; ...; n = n * 2)` runs its launches with every value of n: neither
    n nor a grid made from it is a constant (found on HeCBench's zerocopy: n taken as
    2048 x 1024, the 1-D window's range cut there and 5 of 7 sizes wrong)."""
    from polycoal.frontend.launches import known_values
    source = ("__global__ void k(float *a, int n) { int i = blockIdx.x * blockDim.x + "
              "threadIdx.x; if (i < n) a[i] = 1.0f; }\n"
              f"int main() {{ float *a; int n;\n  {loop}\n  return 0; }}\n")
    p = read_program(str(write_cu(source)))
    values = known_values(p.launches[0])
    assert "n" not in values and "gridDim_x" not in values and "nthreads_x" not in values, \
        values
    assert values.get("blockDim_x") == 256
