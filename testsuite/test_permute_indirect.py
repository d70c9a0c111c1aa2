"""Thread-axis permutations of kernels that read thread indices through macros or
`__device__` helpers: the permuted copy reads the macros' expansions and calls permuted
copies of the helpers; the macros, the helpers and the kernel as written stay byte for
byte (other kernels and host code use them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conftest import runs_alike
from polycoal.cli import main

HOST = r"""
int main(int argc, char **argv)
{
    int rows = argc > 1 ? atoi(argv[1]) : 300;
    int cols = argc > 2 ? atoi(argv[2]) : 200;
    int bx = argc > 3 ? atoi(argv[3]) : 16;
    int by = argc > 4 ? atoi(argv[4]) : 16;
    size_t n = (size_t)rows * cols;
    float *h = (float *)malloc(n * sizeof(float));
    float hw[13];
    for (size_t i = 0; i < n; i++) h[i] = (float)(i % 11);
    for (int i = 0; i < 13; i++) hw[i] = 0.5f + i;
    float *dA, *dw;
    cudaMalloc(&dA, n * sizeof(float));
    cudaMalloc(&dw, sizeof(hw));
    cudaMemcpy(dA, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw, sizeof(hw), cudaMemcpyHostToDevice);
    EXTRA_LAUNCH
    dim3 block(bx, by);
    dim3 grid((rows + bx - 1) / bx, (cols + by - 1) / by);
    scale<<<grid, block>>>(dA, dw, rows, cols);
    cudaMemcpy(h, dA, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hw, dw, sizeof(hw), cudaMemcpyDeviceToHost);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += h[i] * (1 + i % 5);
    for (int i = 0; i < 13; i++) s += hw[i] * (i + 1);
    printf("checksum %.3f\n", s);
    return 0;
}
"""

PRELUDE = "#include <cstdio>\n#include <cstdlib>\n#include <cuda_runtime.h>\n\n"

# rows along x, the unit stride along y (outside the affine model: a hashed index into
# w): the axes are to be swapped, behind a launch check (run-time sizes)
BODY = """
    if (r < rows && c < cols)
        A[r * cols + c] = A[r * cols + c] * w[(r * 7) % 13];
"""

MACROS = {
    "object": ("#define ROW (blockIdx.x * blockDim.x + threadIdx.x)\n"
               "#define COL (blockIdx.y*blockDim.y+threadIdx.y)\n",
               "int r = ROW;\n    int c = COL;"),
    "nested": ("#define TX threadIdx.x\n#define TY threadIdx.y\n"
               "#define BX blockIdx.x\n#define BDX blockDim.x\n"
               "#define ROW (BX * BDX + TX)\n#define COL (blockIdx.y * blockDim.y + TY)\n",
               "int r = ROW;\n    int c = COL;"),
    "function-like": ("#define GLOBAL_ID(axis) (blockIdx.axis * blockDim.axis + \\\n"
                      "                         threadIdx.axis)\n"
                      "#define SCALED(v, k) ((v) * (k))\n",
                      "int r = GLOBAL_ID(x);\n    int c = SCALED(GLOBAL_ID(y), 1);"),
    "partial": ("#define TX threadIdx.x\n#define TY threadIdx.y\n",
                "int r = blockIdx.x * blockDim.x + TX;\n"
                "    int c = blockIdx.y * blockDim.y\n            + TY;"),
}


def _program(defines: str, indices: str, kernels_before: str = "",
             extra_launch: str = "") -> str:
    kernel = ("__global__ void scale(float *A, const float *w, int rows, int cols)\n{\n    "
              + indices + BODY + "}\n")
    return (PRELUDE + defines + "\n" + kernels_before + kernel
            + HOST.replace("EXTRA_LAUNCH", extra_launch))


def _transform(path, *extra):
    out = path.with_name("out.cu")
    report = path.with_name("report.json")
    import contextlib
    import io
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        status = main(["transform", str(path), "--report", "json", "-o", str(out), *extra])
    assert status == 0, buffer.getvalue()
    text = buffer.getvalue()
    report.write_text(text)
    data = json.loads(text[text.index("{"):])
    return {k["name"]: k for k in data["kernels"]}, out.read_text()


def _compiles(path):
    if shutil.which("nvcc") is None:
        return
    r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(path), "-o",
                        str(path) + ".o"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _kernel_text(text: str, name: str) -> str:
    start = text.index(f"__global__ void {name}(")
    return text[start:text.index("\n}\n", start) + 3]


@pytest.mark.parametrize("spelling", sorted(MACROS))
def test_macro_indices_are_expanded_in_the_permuted_copy(spelling, write_cu, tmp_path):
    defines, indices = MACROS[spelling]
    source = _program(defines, indices)
    path = write_cu(source)
    kernels, text = _transform(path)
    k = kernels["scale"]
    assert k["action"] == "permuted" and k["code"] == "permuted", k["reason"]
    # the macros and the kernel as written are kept byte for byte
    assert text.startswith(PRELUDE + defines)
    assert _kernel_text(source, "scale") in text
    copy = _kernel_text(text, "scale__pc_permuted")
    # the copy reads the expansions, with the axes swapped
    assert "threadIdx.y" in copy.replace(" ", "") and "threadIdx.x" in copy
    for name in re.findall(r"#define (\w+)", defines):
        if name != "SCALED":
            assert not re.search(rf"\b{name}\b", copy), (name, copy)
    (tmp_path / "out.cu").write_text(text)
    _compiles(tmp_path / "out.cu")
    runs_alike(source, text, tmp_path)
    # both branches of the launch check: a shape that takes the original kernel
    small = source.replace("atoi(argv[3]) : 16", "atoi(argv[3]) : 32").replace(
        "atoi(argv[4]) : 16", "atoi(argv[4]) : 1")
    path.write_text(small)
    _, text = _transform(path)
    runs_alike(small, text, tmp_path)


def test_a_macro_of_another_kernel_and_of_host_code_stays_as_written(write_cu, tmp_path):
    defines = ("#define TX threadIdx.x\n#define ROW (blockIdx.x * blockDim.x + TX)\n"
               "#define COL (blockIdx.y * blockDim.y + threadIdx.y)\n"
               "#define BLOCKS(n, b) (((n) + (b) - 1) / (b))\n")
    other = ("__global__ void bump(float *v, int n)\n{\n    int i = ROW;\n"
             "    if (i < n) v[i] = v[i] + TX * 0.25f;\n}\n\n")
    source = _program(defines, "int r = ROW;\n    int c = COL;", other,
                      "bump<<<BLOCKS(13, 32), 32>>>(dw, 13);")
    path = write_cu(source)
    kernels, text = _transform(path)
    assert kernels["scale"]["action"] == "permuted", kernels["scale"]["reason"]
    assert kernels["bump"]["action"] == "unchanged"
    assert text.startswith(PRELUDE + defines + "\n" + other)
    assert _kernel_text(source, "scale") in text
    assert "bump<<<BLOCKS(13, 32), 32>>>(dw, 13);" in text
    assert "ROW" not in _kernel_text(text, "scale__pc_permuted")
    (tmp_path / "out.cu").write_text(text)
    _compiles(tmp_path / "out.cu")
    runs_alike(source, text, tmp_path)


HELPERS = ("__device__ int block_row() { int b = blockIdx.x; return b * blockDim.x; }\n"
           "__device__ int row_of()\n{\n    int r = block_row();\n"
           "    return r + threadIdx.x;\n}\n")
SIZES = ["--empirical", "--arg", "rows=300", "--arg", "cols=200", "--arg", "bx=16",
         "--arg", "by=16"]


@pytest.mark.parametrize("shared", [False, True], ids=["own", "shared-with-a-1d-kernel"])
def test_helper_indices_are_read_through_permuted_copies(shared, write_cu, tmp_path):
    """A helper (not inlined: more than a return) that reads thread indices, itself and
    through another helper; the static model cannot see its value, the tracer chooses."""
    other = ("__global__ void fill(float *v, int n)\n{\n    int i = row_of();\n"
             "    if (i < n) v[i] = v[i] + 1.0f;\n}\n\n") if shared else ""
    source = _program(HELPERS, "int r = row_of();\n"
                      "    int c = blockIdx.y * blockDim.y + threadIdx.y;", other,
                      "fill<<<1, 32>>>(dw, 13);" if shared else "")
    path = write_cu(source)
    kernels, text = _transform(path, *SIZES)
    k = kernels["scale"]
    assert k["action"] == "permuted" and "chosen by tracing" in k["reason"], k["reason"]
    assert text.startswith(PRELUDE + HELPERS + "\n" + other)       # originals kept
    assert _kernel_text(source, "scale") in text
    assert "static __device__ int block_row__pc_perm_scale() { int b = blockIdx.y; " \
           "return b * blockDim.y; }" in text
    assert "static __device__ int row_of__pc_perm_scale()" in text
    copy = _kernel_text(text, "scale__pc_permuted")
    assert "int r = row_of__pc_perm_scale();" in copy
    assert text.index("row_of__pc_perm_scale()") < text.index("scale__pc_permuted(")
    if shared:
        assert kernels["fill"]["action"] == "unchanged"
        assert _kernel_text(source, "fill") in text
    (tmp_path / "out.cu").write_text(text)
    _compiles(tmp_path / "out.cu")
    runs_alike(source, text, tmp_path)


def test_a_helper_through_a_macro(write_cu, tmp_path):
    """A macro whose expansion calls a helper that reads thread indices: the copy calls
    the helper's permuted copy."""
    defines = HELPERS + "#define R_INDEX row_of()\n"
    source = _program(defines, "int r = R_INDEX;\n"
                      "    int c = blockIdx.y * blockDim.y + threadIdx.y;")
    path = write_cu(source)
    kernels, text = _transform(path, *SIZES)
    assert kernels["scale"]["action"] == "permuted", kernels["scale"]["reason"]
    assert "int r = row_of__pc_perm_scale();" in _kernel_text(text, "scale__pc_permuted")
    assert text.startswith(PRELUDE + defines)
    (tmp_path / "out.cu").write_text(text)
    _compiles(tmp_path / "out.cu")
    runs_alike(source, text, tmp_path)


def test_a_recursive_helper_keeps_the_refusal(write_cu):
    helper = ("__device__ int row_of(int d)\n{\n    if (d > 0) return row_of(d - 1);\n"
              "    return blockIdx.x * blockDim.x + threadIdx.x;\n}\n")
    source = _program(helper, "int r = row_of(2);\n"
                      "    int c = blockIdx.y * blockDim.y + threadIdx.y;")
    path = write_cu(source)
    kernels, text = _transform(path, *SIZES)
    k = kernels["scale"]
    assert k["code"] == "thread-index-in-callee" and "recursive" in k["reason"], k["reason"]
    assert text == source


def test_a_helper_of_a_header_is_copied_as_expanded(write_cu, tmp_path):
    """The helper is defined in an included header: its permuted copy is its definition
    as the preprocessor expanded it, before the kernel's copy; the header stays as it
    is. In a namespace of the header, it keeps the refusal (the copy at the file's
    scope would not see the namespace's names)."""
    header = ("__device__ int row_of()\n{\n    int r = blockIdx.x * blockDim.x;\n"
              "    return r + threadIdx.x;\n}\n")
    (tmp_path / "rows.h").write_text(header)
    source = _program('#include "rows.h"\n', "int r = row_of();\n"
                      "    int c = blockIdx.y * blockDim.y + threadIdx.y;")
    path = write_cu(source)
    kernels, text = _transform(path, *SIZES)
    assert kernels["scale"]["action"] == "permuted", kernels["scale"]["reason"]
    assert "row_of__pc_perm_scale" in text and (tmp_path / "rows.h").read_text() == header
    runs_alike(source, text, tmp_path, include_dirs=(tmp_path,))
    (tmp_path / "rows.h").write_text("namespace rows {\n" + header + "}\nusing namespace rows;\n")
    kernels, text = _transform(path, *SIZES)
    k = kernels["scale"]
    assert k["code"] == "thread-index-in-callee" and "namespace" in k["reason"], k["reason"]
    assert text == source
