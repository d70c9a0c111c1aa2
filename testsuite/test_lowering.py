"""Kernels read through Clang and lowered to the C subset (frontend/lower.py, issue 13):
template kernels per instantiation, a header's kernels copied into the input file, type
aliases of a namespace replaced in place. Each is transformed, validated on the CPU,
runs as a whole program like the original (CPU runtime), and compiles with nvcc; a
lowering whose kernel is not transformed leaves the input byte-identical."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import conftest
from conftest import FIXTURES
from polycoal.frontend import clang

pytestmark = pytest.mark.skipif(not clang.available(), reason="libclang is not installed")
STYLES = FIXTURES / "styles"


def _transform(path, text=None, **options):
    from polycoal.frontend import read_program
    from polycoal.transform import TransformOptions, transform_program
    program = read_program(str(path), TransformOptions().preprocessor, text=text)
    return program, transform_program(program, TransformOptions(**options))


def runs_alike(original: str, output: str, tmp_path, include_dirs=(STYLES,)) -> None:
    conftest.runs_alike(original, output, tmp_path, include_dirs)


def compiles(text: str, tmp_path, include_dirs=(STYLES,)) -> None:
    if shutil.which("nvcc") is None:
        return
    out = tmp_path / "out.cu"
    out.write_text(text)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(out), "-o", str(out) + ".o",
                        *(f"-I{d}" for d in include_dirs)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_template_kernel_is_transformed_per_instantiation(tmp_path, capsys):
    """rowsum<float> and rowsum<double>: each a copy with T replaced, reduced, its
    launch redirected; the template itself stays (other uses keep it)."""
    from polycoal.cli import main
    path = STYLES / "template_kernel.cu"
    program, result = _transform(path)
    actions = {d.kernel: d.action for d in result.decisions}
    assert actions == {"rowsum": "unchanged", "rowsum__pc_float": "reduced",
                       "rowsum__pc_double": "reduced"}
    assert "rowsum__pc_float<<<" in result.text and "rowsum<float><<<" not in result.text
    assert "template <typename T>\n__global__ void rowsum(" in result.text
    # (a block of several warps a row carries bounds of its own before the name)
    assert re.search(r"__global__ void (__launch_bounds__\(\d+, 1\) )?"
                     r"rowsum__pc_double\(const double \*A", result.text)
    notes = [str(x) for x in result.diagnostics]
    assert any("kernel 'rowsum<float>' (as 'rowsum__pc_float') reduced" in n and
               "template_kernel.cu:11:" in n for n in notes), notes
    runs_alike(program.text, result.text, tmp_path)
    compiles(result.text, tmp_path)
    assert main(["validate", "--cpu", str(path), "--seed", "5"]) == 0
    assert capsys.readouterr().out.count("outputs match") == 2


def test_a_header_kernel_is_copied_into_the_file(tmp_path):
    path = STYLES / "header_kernel.cu"
    header = (STYLES / "header_kernel_kernels.cuh").read_bytes()
    program, result = _transform(path)
    assert {d.kernel: d.action for d in result.decisions} == {
        "matvec_rows": "unchanged", "matvec_rows__pc": "reduced"}
    assert "matvec_rows__pc<<<" in result.text
    assert (STYLES / "header_kernel_kernels.cuh").read_bytes() == header
    assert any(str(x).startswith(str(STYLES / "header_kernel_kernels.cuh") + ":7:")
               for x in result.diagnostics if x.code == "reduced")
    runs_alike(program.text, result.text, tmp_path)
    compiles(result.text, tmp_path)


def test_aliases_in_a_namespace_are_lowered_in_place(tmp_path):
    """`using real = float;` inside `namespace linalg`: the row sum is reduced where it
    is (no copy), and so is the transpose, staged through shared-memory tiles of the
    alias's type."""
    path = STYLES / "namespaced_kernel.cu"
    program, result = _transform(path)
    actions = {d.kernel: d.action for d in result.decisions}
    assert actions == {"rowsum": "reduced", "transpose": "staged"}
    assert "__shared__ float pc_tile0[32][33];" in result.text
    assert "__pc" not in result.text
    runs_alike(program.text, result.text, tmp_path)
    compiles(result.text, tmp_path)


TEMPLATES = r"""#include <cstdio>
#include <cuda_runtime.h>

template <typename T, int STRIDE>
__global__ void scale_rows(const T *in, T *out, int rows, T s)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows)
        for (int c = 0; c < STRIDE; c++)
            out[r * STRIDE + c] = s * in[r * STRIDE + c];
}

template <typename T>
__global__ void copy(const T *in, T *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}

int main()
{
    const int rows = 500;
    static float h[rows * 48], g[rows * 48];
    for (int i = 0; i < rows * 48; i++) h[i] = (float)(i % 17) - 8.0f;
    float *a, *b, *c;
    cudaMalloc(&a, sizeof h); cudaMalloc(&b, sizeof h); cudaMalloc(&c, sizeof h);
    cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);
    scale_rows<float, 48><<<(rows + 127) / 128, 128>>>(a, b, rows, 0.5f);
    copy<<<(rows * 48 + 255) / 256, 256>>>(b, c, rows * 48);
    cudaMemcpy(g, c, sizeof g, cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < rows * 48; i++) s += g[i] * (i % 7 + 1);
    printf("checksum %.3f\n", s);
    return 0;
}
"""


def test_type_and_value_arguments_and_a_deduced_instance(tmp_path):
    """scale_rows<float, 48>: T and STRIDE replaced, restructured; copy<<<...>>> with T
    deduced: its copy is already coalesced, so no copy of it is kept and its text and
    launch are the input's."""
    path = tmp_path / "templates.cu"
    path.write_text(TEMPLATES)
    program, result = _transform(path, TEMPLATES)
    actions = {d.kernel: d.action for d in result.decisions}
    assert actions["scale_rows__pc_float_48"] == "restructured", result.diagnostics
    assert actions["copy<float>"] == "unchanged"
    assert "copy<<<(rows * 48 + 255) / 256, 256>>>(b, c, rows * 48);" in result.text
    assert "copy__pc" not in result.text
    runs_alike(TEMPLATES, result.text, tmp_path)
    compiles(result.text, tmp_path)


def test_a_lowered_kernel_left_unchanged_leaves_the_file_byte_identical(tmp_path):
    text = TEMPLATES.replace("scale_rows<float, 48><<<(rows + 127) / 128, 128>>>"
                             "(a, b, rows, 0.5f);", "cudaMemcpy(b, a, sizeof h, "
                             "cudaMemcpyDeviceToDevice);")
    path = tmp_path / "kept.cu"
    path.write_text(text)
    program, result = _transform(path, text)
    assert result.text == text
    # the template, its instance, and the other template's reading at stated arguments
    assert [d.action for d in result.decisions] == ["unchanged"] * len(result.decisions)
    assert len(result.decisions) >= 3


def test_a_kernel_named_elsewhere_is_not_copied(tmp_path):
    """cudaFuncSetAttribute on the template's instance applies to it, not to a copy: the
    kernel is read as the C subset reads it (left alone)."""
    text = TEMPLATES.replace("    scale_rows<float, 48><<<", "    cudaFuncSetAttribute("
                             "scale_rows<float, 48>, cudaFuncAttributePreferredSharedMemory"
                             "Carveout, 50);\n    scale_rows<float, 48><<<")
    path = tmp_path / "named.cu"
    path.write_text(text)
    program, result = _transform(path, text)
    assert "scale_rows__pc" not in result.text
    assert all(d.action == "unchanged" for d in result.decisions
               if d.kernel.startswith("scale_rows"))


def test_kernel_option_selects_the_instances(tmp_path):
    path = STYLES / "template_kernel.cu"
    program, result = _transform(path, kernel="rowsum")
    assert {d.action for d in result.decisions} >= {"reduced"}


def test_without_clang_nothing_is_lowered(monkeypatch):
    monkeypatch.setattr(clang, "available", lambda: False)
    path = STYLES / "template_kernel.cu"
    program, result = _transform(path)
    assert result.text == program.text
    assert [d.code for d in result.decisions] == ["unparsed"]


STRUCTS = r"""#include <cstdio>
#include <cuda_runtime.h>
#define NROWS 700
#define NCOLS 96
struct Buffers {
    const float *in;
    float *out;
    int n;
};
typedef struct { float *w; float scale; } Weights;

__global__ void row_sums(Buffers b, Weights w, int rows)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int col = 0; col < b.n; col++)
            acc += b.in[row * b.n + col] * w.w[col];
        b.out[row] = w.scale * acc;
    }
}

int main()
{
    static float hIn[NROWS * NCOLS], hOut[NROWS], hW[NCOLS];
    for (int i = 0; i < NROWS * NCOLS; i++) hIn[i] = (float)(i % 9) * 0.5f - 2.0f;
    for (int i = 0; i < NCOLS; i++) hW[i] = (float)(i % 4);
    Buffers b;
    Weights w;
    b.n = NCOLS;
    w.scale = 0.25f;
    float *in;
    cudaMalloc(&in, sizeof(hIn));
    b.in = in;
    cudaMalloc(&b.out, sizeof(hOut));
    cudaMalloc(&w.w, sizeof(hW));
    cudaMemcpy(in, hIn, sizeof(hIn), cudaMemcpyHostToDevice);
    cudaMemcpy(w.w, hW, sizeof(hW), cudaMemcpyHostToDevice);
    row_sums<<<(NROWS + 127) / 128, 128>>>(b, w, NROWS);
    cudaMemcpy(hOut, b.out, sizeof(hOut), cudaMemcpyDeviceToHost);
    double sum = 0.0;
    for (int r = 0; r < NROWS; r++) sum += hOut[r] * (r % 3 + 1);
    printf("checksum %.3f\n", sum);
    return 0;
}
"""


def test_struct_parameters_are_passed_field_by_field(tmp_path):
    """Buffers and Weights passed by value, used as b.in, b.n, w.w, w.scale: the copy
    takes their fields as parameters (b__in, ..., a typedef'd anonymous struct too),
    the launch passes b.in, b.out, b.n, w.w, w.scale; aliasing is ruled out through
    the fields' cudaMalloc (b.in is `in`, allocated); the row sum is reduced."""
    path = tmp_path / "structs.cu"
    path.write_text(STRUCTS)
    program, result = _transform(path, STRUCTS)
    actions = {d.kernel: d.action for d in result.decisions}
    assert actions["row_sums__pc"] == "reduced", [str(x) for x in result.diagnostics]
    assert "row_sums__pc<<<" in result.text
    assert "(b.in, b.out, b.n, w.w, w.scale, NROWS)" in result.text
    assert "__global__ void row_sums__pc(const float *b__in, float *b__out, int b__n, " \
        "float *w__w, float w__scale, int rows)" in result.text
    runs_alike(STRUCTS, result.text, tmp_path)
    compiles(result.text, tmp_path)


def test_a_struct_used_whole_is_not_split(tmp_path):
    text = STRUCTS.replace("b.out[row] = w.scale * acc;",
                           "b.out[row] = w.scale * acc; Buffers c = b; (void)c;")
    path = tmp_path / "whole.cu"
    path.write_text(text)
    program, result = _transform(path, text)
    assert result.text == text
    assert "__pc" not in result.text


POINTERS = r"""#include <cstdio>
#include <cuda_runtime.h>
#define SIZE 320
__global__ void row_weighted(const float *a, const float *w, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int j = 0; j < n; j++)
            acc += *(a + n * i + j) * *(j + w);
        *(out + i) = acc;
        *out = *out;
    }
}
__global__ void cols(const float *a, float *t, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n)
        for (int i = 0; i < n; i++)
            *(t + j * n + i) = *(a + i * n - 0 + j);
}
int main()
{
    static float ha[SIZE * SIZE], hw[SIZE], ho[SIZE], ht[SIZE * SIZE];
    for (int k = 0; k < SIZE * SIZE; k++) ha[k] = (float)((k * 7) % 13) - 6.0f;
    for (int k = 0; k < SIZE; k++) hw[k] = (float)(k % 3);
    float *a, *w, *o, *t;
    cudaMalloc(&a, sizeof ha); cudaMalloc(&w, sizeof hw); cudaMalloc(&o, sizeof ho);
    cudaMalloc(&t, sizeof ht);
    cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw, sizeof hw, cudaMemcpyHostToDevice);
    row_weighted<<<(SIZE + 63) / 64, 64>>>(a, w, o, SIZE);
    cols<<<(SIZE + 63) / 64, 64>>>(a, t, SIZE);
    cudaMemcpy(ho, o, sizeof ho, cudaMemcpyDeviceToHost);
    cudaMemcpy(ht, t, sizeof ht, cudaMemcpyDeviceToHost);
    double s = 0;
    for (int k = 0; k < SIZE; k++) s += ho[k] * (k % 5 + 1);
    for (int k = 0; k < SIZE * SIZE; k++) s += ht[k] * (k % 7);
    printf("checksum %.3f\n", s);
    return 0;
}
"""


def test_pointer_arithmetic_is_read_as_subscripts(tmp_path):
    """`*(a + n * i + j)`, `*(j + w)`, `*(out + i)`, `*out`: subscripts of the pointer
    parameters (the C standard defines `E1[E2]` as `*((E1)+(E2))`); the row sum is
    reduced; the column-per-thread copy reads a coalesced and writes t strided, which no
    order of the loops fixes (kept, for that reason and not for pointer arithmetic)."""
    path = tmp_path / "pointers.cu"
    path.write_text(POINTERS)
    program, result = _transform(path, POINTERS)
    decisions = {d.kernel: d for d in result.decisions}
    model = decisions["cols"].analysis.model
    assert model.is_affine and not model.outside
    assert {a.text for _, a in model.accesses()} >= {"t[(j * n) + i]", "a[((i * n) - 0) + j]"}
    runs_alike(POINTERS, result.text, tmp_path)
    compiles(result.text, tmp_path)


@pytest.mark.parametrize("name, actions", [
    ("cpp_references", {"row_half_sum": "reduced"}),
    ("index_macros", {"row_dot": "reduced", "outer_cols": "restructured"}),
])
def test_device_helpers_are_inlined(name, actions, tmp_path):
    """`accumulate(float &acc, float v)` and `store_result(float &, const float &)`
    (references), `int globalIdx()` (the thread index through a helper): inlined, the
    kernels enter the model and are transformed; the helpers' warnings no longer apply."""
    path = STYLES / f"{name}.cu"
    program, result = _transform(path)
    assert {d.kernel: d.action for d in result.decisions} == actions
    assert not any(x.kernel in result.superseded for x in result.diagnostics
                   if x.code == "unsupported-construct")
    runs_alike(program.text, result.text, tmp_path)
    compiles(result.text, tmp_path)


HELPERS = r"""#include <cstdio>
#include <cuda_runtime.h>
#define R 300
#define C 64
__device__ inline float twice(float v) { return 2.0f * v; }
__device__ inline int half(int v) { return v / 2; }
__device__ inline void add2(float &a, float &b, float v) { a += v; b += twice(v); }
__device__ inline void bump(float &a, float v) { a += v; }
__device__ inline unsigned lane() { return threadIdx.x % 32; }

__global__ void rows(const float *A, float *s, float *t, int *h)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R) {
        float a = 0.0f, b = 0.0f;
        for (int j = 0; j < C; j++)
            add2(a, b, A[i * C + j]);
        s[i] = a;
        t[i] = b;
        h[i] = half(A[i * C] * 3.0f) + (int)(lane() - 40u > 0u);
    }
}

__global__ void side_effects(const float *A, float *s)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R) {
        float a = 0.0f;
        int j = 0;
        while (j < C)
            bump(a, A[i * C + j++]);
        s[i] = twice(a);
    }
}

int main()
{
    static float hA[R * C], hs[R], ht[R], hu[R];
    static int hh[R];
    for (int k = 0; k < R * C; k++) hA[k] = (float)(k % 11) - 5.0f;
    float *A, *s, *t, *u;
    int *h;
    cudaMalloc(&A, sizeof hA); cudaMalloc(&s, sizeof hs); cudaMalloc(&t, sizeof ht);
    cudaMalloc(&u, sizeof hu); cudaMalloc(&h, sizeof hh);
    cudaMemcpy(A, hA, sizeof hA, cudaMemcpyHostToDevice);
    rows<<<(R + 127) / 128, 128>>>(A, s, t, h);
    side_effects<<<(R + 127) / 128, 128>>>(A, u);
    cudaMemcpy(hs, s, sizeof hs, cudaMemcpyDeviceToHost);
    cudaMemcpy(ht, t, sizeof ht, cudaMemcpyDeviceToHost);
    cudaMemcpy(hu, u, sizeof hu, cudaMemcpyDeviceToHost);
    cudaMemcpy(hh, h, sizeof hh, cudaMemcpyDeviceToHost);
    double x = 0;
    for (int k = 0; k < R; k++) x += hs[k] + 3 * ht[k] + 5 * hu[k] + 7 * hh[k] * (k % 3);
    printf("checksum %.3f\n", x);
    return 0;
}
"""


def test_helpers_keep_their_meaning_when_inlined(tmp_path):
    """A helper calling a helper is not inlined (add2 calls twice), a call inside an
    argument is (half(A[...] * 3.0f) converts its float argument to int as the call
    did), a helper's result keeps its type (lane() - 40u is unsigned arithmetic), and an
    argument with a side effect (A[i * C + j++]) keeps its call: the program means the
    same whatever is inlined."""
    from polycoal.frontend import lower
    from polycoal.frontend.preprocess import PreprocessorOptions
    path = tmp_path / "helpers.cu"
    path.write_text(HELPERS)
    program, result = _transform(path, HELPERS)
    [rows, side] = lower.plan(program, PreprocessorOptions())
    lowered = rows.edits[0][2]
    assert "add2(a, b, A[i * C + j]);" in lowered                   # calls a helper
    assert "((int)(((float)(A[i * C] * 3.0f)) / 2))" not in lowered
    assert "((int)(((int)(A[i * C] * 3.0f)) / 2))" in lowered
    assert "((unsigned int)(threadIdx.x % 32))" in lowered
    assert "bump(a, A[i * C + j++]);" in side.edits[0][2]
    assert "((float)(2.0f * a))" in side.edits[0][2]
    runs_alike(HELPERS, result.text, tmp_path)
    compiles(result.text, tmp_path)


def test_launch_bounds_follow_the_new_block(tmp_path):
    """row_norms<float, 128> carries __launch_bounds__(BLOCK_SIZE) = 128 and
    row_norms<double, 256> 256; their reduced copies run blocks of their own (a block
    of warps a row for these few rows): the bounds say so in each definition and
    prototype (a launch past a kernel's bounds fails on the GPU)."""
    path = STYLES / "template_blocks.cu"
    program, result = _transform(path)
    text = result.text
    blocks = {d.kernel: d.generated.block[0] for d in result.decisions
              if d.kernel.startswith("row_norms__pc_")}
    assert set(blocks) == {"row_norms__pc_float_128", "row_norms__pc_double_256"}
    for name, threads in blocks.items():
        bound = f"{threads}" if threads == 256 else f"{threads}, 1"
        assert f"__launch_bounds__({bound})\n{name}(" in text, name
        assert f"__launch_bounds__ ( {bound.replace(',', ' ,')} ) {name} (" in text, name
    assert "__launch_bounds__ ( 128 )" not in text and "__launch_bounds__(128)" not in text
    compiles(text, tmp_path)
