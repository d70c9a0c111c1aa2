"""The classes the random differential tester found with the C++ constructs (issue 32,
item 6; reproducers in testsuite/fixtures/difftest), each in its every spelling: the
output compiles (nvcc -arch=sm_90 -c) and runs on the CPU runtime as the original does.

(1) placement and a kernel's forward declaration: the copy of a header's or a
    template's kernel is declared before its first launch; `transform --placement`
    (and `polycoal place` on a program declaring its kernel before main) makes a
    parameter `const T *__restrict__` in the definition, and now in each declaration
    too (a second placed kernel gets its own beside it);
(2) a gather whose thread index is written with brackets of its own (C++ and C casts,
    functional casts): the irregular pass's own check reads the padded form's index
    `(order ? order[t] : (t))` to t's matching bracket;
(3) pragmas before a loop the irregular pass rewrites (`#pragma unroll`, `#pragma
    unroll N`, `_Pragma("unroll")`, several): they go before each loop it makes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, compile_sm90, cpu_runner, runs_alike
from polycoal.difftest.judging import parse_checks
from polycoal.frontend import read_program
from polycoal.model.memory_spec import load_spec
from polycoal.placement import place_program

FOUND = FIXTURES / "difftest"
SPEC = load_spec()


@pytest.fixture(scope="module")
def cpu():
    return cpu_runner()


def _transform(source: Path, *options: str) -> tuple[subprocess.CompletedProcess, str]:
    out = source.with_name(source.stem + ".out.cu")
    run = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(source), "-o",
                          str(out), *options], capture_output=True, text=True)
    return run, out.read_text() if out.exists() else ""


def _same_checks(cpu, original: str, output: str, include_dirs=()) -> None:
    """Both programs run on the CPU runtime and print the same CHECK lines."""
    printed = []
    for name, text in (("original", original), ("output", output)):
        run, error = cpu.compile_and_run(text, include_dirs=tuple(map(str, include_dirs)))
        assert run is not None and run.failure is None, (name, error, run and run.stderr)
        printed.append(parse_checks(run.stdout))
    assert printed[0] and printed[0] == printed[1], printed


def _declarations(text: str, name: str) -> list[str]:
    """The parameter lists of the forward declarations of `name` (`...name(...);`)."""
    return [m.group(1) for m in re.finditer(r"__global__\s+void\s+" + re.escape(name) +
                                            r"\s*\(([^;{}]*)\)\s*;", text)]


def _definition(text: str, name: str) -> str:
    m = re.search(r"__global__\s+void\s+" + re.escape(name) + r"\s*\(([^;{}]*)\)\s*\{", text)
    assert m, name
    return m.group(1)


_TYPE_WORDS = {"int", "float", "double", "unsigned", "signed", "long", "short", "char",
               "const", "volatile", "void", "__restrict__"}


def _types(parameters: str) -> list[str]:
    """Each parameter's type as the function's type has it: its name, `__restrict__`
    and qualifiers of the pointer itself left out (`const float *`)."""
    out = []
    for p in parameters.split(","):
        words = re.findall(r"\w+|\*", p.split("=")[0])
        if words and words[-1] not in _TYPE_WORDS | {"*"}:
            words = words[:-1]                              # the name
        words = [w for w in words if w != "__restrict__"]
        while "*" in words and words[-1] != "*":            # top-level qualifiers
            words = words[:-1]
        out.append(" ".join(words))
    return out


# ------------------------------------------------------------- (1) placement, prototypes

HEADER_TEMPLATE = """#ifndef PLACEMENT_HEADER_COPY_CUH
#define PLACEMENT_HEADER_COPY_CUH

template <typename T>
__global__ void scale(T *res, T *A)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < NI && j < NJ) {
    for (int l = 0; l < L; l++) {
      res[i * NJ + j] = -1.0f * A[i * L + l + 1] - (T)i;
    }
  }
}

#endif // PLACEMENT_HEADER_COPY_CUH
"""


@pytest.mark.parametrize("kind", ["header", "template"])
def test_a_placed_copy_is_declared_as_defined(kind, tmp_path, nvcc, cpu):
    """`transform --placement` on a header's kernel (copy scale__pc) or a header's
    template (scale__pc_float): the copy's prototype before the launch declares the
    parameter the placement reads through the read-only path as its definition does
    (it declared `float *A`, an overload never defined: nvcc "referenced but not
    defined")."""
    source = (FOUND / "placement_header_copy.cu").read_text()
    header = (FOUND / "placement_header_copy.cuh").read_text()
    copy = "scale__pc"
    if kind == "template":
        header = HEADER_TEMPLATE
        source = source.replace("scale<<<", "scale<float><<<")
        copy = "scale__pc_float"
    (tmp_path / "placement_header_copy.cuh").write_text(header)
    path = tmp_path / "placement_header_copy.cu"
    path.write_text(source)
    # a kernel of 4096 elements: restructured as proposed (the model would keep it)
    run, output = _transform(path, "--placement", "--no-model")
    assert run.returncode == 0, run.stderr
    assert f"kernel '{copy}': placed" in run.stderr
    definition = _definition(output, copy)
    assert "const float *__restrict__ A" in definition
    declared = _declarations(output, copy)
    assert declared and all(_types(d) == _types(definition) for d in declared), \
        (declared, definition)
    out = tmp_path / "placement_header_copy.out.cu"
    compile_sm90(nvcc, out)
    _same_checks(cpu, source, output, include_dirs=(tmp_path,))


AXPY = r"""#include <cstdio>
#include <cuda_runtime.h>
#define N 4096
DECLARATION
int main() {
  static float h_x[N], h_y[N];
  for (int t = 0; t < N; t++) { h_x[t] = t % 7; h_y[t] = t % 5; }
  float *d_x, *d_y;
  cudaMalloc((void **)&d_x, sizeof h_x);
  cudaMalloc((void **)&d_y, sizeof h_y);
  cudaMemcpy(d_x, h_x, sizeof h_x, cudaMemcpyHostToDevice);
  cudaMemcpy(d_y, h_y, sizeof h_y, cudaMemcpyHostToDevice);
  for (int s = 0; s < 3; s++) axpy<<<N / 256, 256>>>(d_y, d_x, N);
  cudaMemcpy(h_y, d_y, sizeof h_y, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int t = 0; t < N; t++) sum += h_y[t] * (t % 3 + 1);
  printf("%.6f\n", sum);
  return 0;
}
__global__ void axpy(float *y, float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 2.0f * x[i] + x[(i + 1) % n];
}
"""


@pytest.mark.parametrize("declaration", [
    "__global__ void axpy(float *y, float *x, int n);",
    "__global__ void axpy(float *, float *, int);",
    "__global__ void axpy(float*y,float*x,int n); __global__ void axpy(float *, float *, int);",
    "extern __global__ void axpy(float * const y, float *x, int n);",
])
def test_a_declared_kernel_is_declared_as_placed(declaration, tmp_path, nvcc):
    """A kernel defined after main and declared before it (named, unnamed, twice, a
    const pointer): `polycoal place` reading x through the read-only path writes
    `const float *__restrict__` in every declaration as in the definition."""
    path = tmp_path / "axpy.cu"
    path.write_text(AXPY.replace("DECLARATION", declaration))
    program = read_program(str(path))
    result = place_program(program, SPEC, {(None, "x"): "readonly"})
    assert result.kernels[0].applied, result.kernels[0].reason
    definition = _definition(result.text, "axpy")
    assert "const float *__restrict__ x" in definition
    declared = _declarations(result.text, "axpy")
    assert len(declared) == declaration.count(";")
    assert all(_types(d) == _types(definition) for d in declared), (declared, definition)
    out = tmp_path / "axpy.out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    runs_alike(program.text, result.text, tmp_path)


def test_a_second_placed_kernel_is_declared_beside_the_first(tmp_path, nvcc):
    """A blur whose staging holds only where the launch's column count fits the row
    (each launch chooses: blur_pc_placed beside blur), declared `static` before main and
    defined after it: the placed kernel's prototype follows the kernel's (the launch
    before the definition is no obstacle without constant arrays)."""
    text = (Path(__file__).parent / "fixtures" / "placement" / "blur_2d.cu").read_text()
    text = text.replace("int rows) {", "int rows, int cols) {") \
        .replace("x < WIDTH - 1 &&", "x < cols - 1 &&") \
        .replace("(d_out, d_in, rows);", "(d_out, d_in, rows, WIDTH);")
    m = re.search(r"__global__ void blur\(.*?\n}\n", text, re.S)
    text = text[:m.start()] + "static __global__ void blur(float *out, const float *in, " \
        "int rows, int cols);\n" + text[m.end():] + "\nstatic " + m.group(0)
    path = tmp_path / "blur.cu"
    path.write_text(text)
    program = read_program(str(path))
    result = place_program(program, SPEC, {(None, "in"): "shared"})
    k = result.kernels[0]
    assert k.applied and k.placed_name == "blur_pc_placed", k.reason
    assert "static __global__ void blur_pc_placed(float *out, const float *in, int rows, " \
        "int cols);" in result.text
    assert result.text.index("blur_pc_placed(float") < result.text.index("int main(")
    out = tmp_path / "blur.out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    for rows in ("21", "3"):
        runs_alike(program.text, result.text, tmp_path, argv=(str(1024 * int(rows)), "2"))


# ------------------------------------------------------- (2) a gather's cast thread index

CAST = "  const int i = static_cast<int>(threadIdx.x + blockIdx.x * blockDim.x);"


@pytest.mark.parametrize("index", [
    CAST,
    "  const long i = static_cast<long>(threadIdx.x + blockIdx.x * blockDim.x);",
    "  const unsigned i = static_cast<unsigned>(threadIdx.x + blockIdx.x * blockDim.x);",
    "  const int i = (int)(threadIdx.x + blockIdx.x * blockDim.x);",
    "  int i = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;",
    "  const int i = int(threadIdx.x + blockIdx.x * blockDim.x);",
    "  int i = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);",
    "  int i = static_cast<int>(blockIdx.x * blockDim.x) + static_cast<int>(threadIdx.x);",
    "  const int i = (threadIdx.x + blockIdx.x * blockDim.x);",
], ids=["static_cast-int", "static_cast-long", "static_cast-unsigned", "c-cast", "c-casts",
        "functional", "functionals", "static_casts", "parenthesised"])
def test_a_gather_with_a_cast_thread_index_is_reorganised(index, tmp_path, nvcc, cpu):
    """The irregular_static_cast reproducer with its thread index in every spelling of a
    cast: reorganised (shared and padded forms), its own check passes, the output
    compiles and prints the original's checksums."""
    source = (FOUND / "irregular_static_cast.cu").read_text()
    assert CAST in source
    source = source.replace(CAST, index)
    path = tmp_path / "gather.cu"
    path.write_text(source)
    run, output = _transform(path)
    assert run.returncode == 0, run.stderr
    assert "kernel 'gather' reorganised" in run.stderr, run.stderr
    assert "pc_table__via_perm_order ?" in output
    compile_sm90(nvcc, tmp_path / "gather.out.cu")
    _same_checks(cpu, source, output)


def test_the_padded_index_is_read_to_its_matching_bracket():
    """validate/irregular.checked_text reads `(order ? order[t] : (t))` back as t where t
    ends in a bracket of its own (the pattern it used stopped at t's first `))`), and
    finds nothing where the two arms differ."""
    from polycoal.validate.irregular import _reordered_indices
    t = "((int)(threadIdx.x + blockIdx.x * blockDim.x))"
    text = f"const int i = (pc_o ? pc_o[{t}] : ({t})); x[a[i]];"
    assert _reordered_indices(text, "pc_o") == [(14, text.index(";"), t)]
    assert _reordered_indices(text.replace(f": ({t})", ": (threadIdx.x)"), "pc_o") == []


# -------------------------------------------------------- (3) pragmas before a CSR loop

PRAGMA = "    #pragma unroll 4\n"
LOOP = ("    for (int k = rows[row]; k < rows[row + 1]; ++k)\n"
        "      acc += val[k] * x[col[k]];\n")


@pytest.mark.parametrize("braced", [False, True], ids=["statement", "block"])
@pytest.mark.parametrize("pragmas", [
    PRAGMA, "    #pragma unroll\n", "    #  pragma   unroll 2\n", '    _Pragma("unroll")\n',
    '    _Pragma("unroll 4") ', '    #pragma unroll 4\n    _Pragma("nounroll")\n',
    "    #pragma unroll 4 // four\n    /* the runs */\n",
], ids=["unroll-4", "unroll", "spaced", "operator", "operator-4", "two", "comments"])
def test_pragmas_before_a_csr_loop_go_with_its_parts(pragmas, braced, tmp_path, nvcc, cpu):
    """The irregular_unroll_pragma reproducer with each spelling of a loop pragma: the
    split run loop's two parts each carry the pragmas (a pragma left before the `{` of
    the split did not compile: exit 1, output-rejected); results are the original's."""
    source = (FOUND / "irregular_unroll_pragma.cu").read_text()
    assert PRAGMA + LOOP in source
    loop = LOOP.replace("++k)\n      acc += val[k] * x[col[k]];\n",
                        "++k) {\n      acc += val[k] * x[col[k]];\n    }\n") if braced else LOOP
    source = source.replace(PRAGMA + LOOP, pragmas + loop)
    path = tmp_path / "csr.cu"
    path.write_text(source)
    run, output = _transform(path)
    assert run.returncode == 0, run.stderr
    assert "kernel 'lookup' reorganised" in run.stderr, run.stderr
    kernel = output[output.index("__global__ void lookup("):]
    kernel = kernel[:kernel.index("\n}\n")]
    words = re.findall(r'#\s*pragma\s+\w+(?: \d+)?|_Pragma\("[^"]*"\)', pragmas)
    for word in words:
        assert kernel.count(word) == 2, kernel      # before each part of the split loop
    for m in re.finditer(r"for \(;", kernel):
        assert words[-1] in kernel[:m.start()].rstrip().splitlines()[-1], kernel
    compile_sm90(nvcc, tmp_path / "csr.out.cu")
    _same_checks(cpu, source, output)


def test_a_pragma_among_other_directives_keeps_the_loop():
    """Pragmas before a run loop among other directives (`#ifdef`): where they apply is
    not the rewrite's to decide; the loop is not rewritable."""
    from polycoal.codegen.irregular import NotRewritable, loop_pragmas
    from polycoal.frontend.lexer import tokenize
    text = "x = 0;\n#ifdef FAST\n#pragma unroll\n#endif\nfor (k = 0; k < n; k++) x++;"
    tokens = tokenize(text)
    at = next(k for k, t in enumerate(tokens) if t.text == "for")
    with pytest.raises(NotRewritable):
        loop_pragmas(tokens, text, at)
    plain = "x = 0;\n  #pragma unroll 2\n  _Pragma(\"unroll\") for (k = 0; k < n; k++) x++;"
    tokens = tokenize(plain)
    at = next(k for k, t in enumerate(tokens) if t.text == "for")
    begin, found = loop_pragmas(tokens, plain, at)
    assert plain[begin:].startswith("#pragma unroll 2")
    assert found == '\n#pragma unroll 2\n_Pragma("unroll") '
