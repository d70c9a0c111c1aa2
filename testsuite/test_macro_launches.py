"""Launches written inside function-like macros (frontend/macros.py, issue 13): the
invocation is expanded once in place where its kernel is transformed, so that the
new geometry has a launch to go to; elsewhere the input stays byte-identical."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import runs_alike, cpu_runner

PROGRAM = r"""#include <cstdio>
#include <cuda_runtime.h>

#define ROWS 640
#define COLS 384
#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    printf("CUDA error %s\n", cudaGetErrorString(e_)); return 1; } } while (0)
%(defines)s

__global__ void rowsum(const float *A, float *s, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int col = 0; col < cols; col++)
            acc += A[row * cols + col];
        s[row] = acc;
    }
}

__global__ void copy_head(const float *A, float *T, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols)
        T[i] = A[i];
}

int main()
{
    static float hA[ROWS * COLS];
    static float hS[ROWS];
    for (int i = 0; i < ROWS * COLS; i++)
        hA[i] = (float)(i %% 7) * 0.5f;
    float *dA, *dS, *dT;
    CUDA_CHECK(cudaMalloc(&dA, sizeof(hA)));
    CUDA_CHECK(cudaMalloc(&dS, sizeof(hS)));
    CUDA_CHECK(cudaMalloc(&dT, sizeof(hA)));
    CUDA_CHECK(cudaMemcpy(dA, hA, sizeof(hA), cudaMemcpyHostToDevice));
    %(launch)s
    copy_head<<<(ROWS + 127) / 128, 128>>>(dA, dT, ROWS, COLS);
    CUDA_CHECK(cudaMemcpy(hS, dS, sizeof(hS), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (int i = 0; i < ROWS; i++)
        sum += hS[i] * (1 + i %% 3);
    printf("checksum %%.3f\n", sum);
    return 0;
}
"""

SPELLINGS = {
    "variadic": ("#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)",
                 "LAUNCH(rowsum, (ROWS + 255) / 256, 256, dA, dS, ROWS, COLS);"),
    "checked": ("#define LAUNCH_CHECKED(kernel, grid, block, ...) do { \\\n"
                "    kernel<<<grid, block, 0, 0>>>(__VA_ARGS__); \\\n"
                "    CUDA_CHECK(cudaGetLastError()); } while (0)",
                "LAUNCH_CHECKED(rowsum, dim3((ROWS + 127) / 128), dim3(128),\n"
                "                   dA, dS, ROWS, COLS);"),
    "named_args": ("#define KERNEL_ARGS2(grid, block) <<<grid, block>>>\n"
                   "#define RUN_ROWSUM(g, b) rowsum<<<g, b>>>(dA, dS, ROWS, COLS)",
                   "RUN_ROWSUM((ROWS + 63) / 64, 64);"),
    "va_named": ("#define GO(k, cfg_g, cfg_b, args...) k<<<cfg_g, cfg_b>>>(args)",
                 "GO(rowsum, (ROWS + 255) / 256, 256, dA, dS, ROWS, COLS);"),
}


def _program(tmp_path, spelling):
    defines, launch = spelling
    path = tmp_path / "macro.cu"
    path.write_text(PROGRAM % {"defines": defines, "launch": launch})
    return path


def _transform(path):
    from polycoal.frontend import read_program
    from polycoal.transform import TransformOptions, transform_program
    program = read_program(str(path), TransformOptions().preprocessor)
    return program, transform_program(program, TransformOptions())


@pytest.mark.parametrize("spelling", SPELLINGS, ids=list(SPELLINGS))
def test_a_launch_in_a_macro_is_expanded_where_its_kernel_is_transformed(spelling, tmp_path,
                                                                         capsys):
    from polycoal.cli import main
    path = _program(tmp_path, SPELLINGS[spelling])
    program, result = _transform(path)
    actions = {d.kernel: d.action for d in result.decisions}
    assert actions == {"rowsum": "reduced", "copy_head": "unchanged"}, result.diagnostics
    invocation = SPELLINGS[spelling][1].split("(")[0]
    assert invocation + "(" not in result.text.split("int main")[1]
    # only the invocation and the kernel changed: the rest of the text is the input's
    # (the kernel's definition may gain __launch_bounds__ before its name)
    head = r"__global__ void (__launch_bounds__\([^)]*\) )?rowsum"
    assert re.split(head, result.text.split("int main")[0])[0] == \
        re.split(head, program.text)[0]
    assert "copy_head<<<(ROWS + 127) / 128, 128>>>" in result.text
    runs_alike(program.text, result.text, tmp_path)
    if shutil.which("nvcc"):
        out = tmp_path / "out.cu"
        out.write_text(result.text)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(out), "-o",
                            str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert main(["validate", "--cpu", str(path), "--seed", "3"]) == 0
    assert "rowsum" in capsys.readouterr().out


def test_a_macro_that_stringifies_is_not_expanded(tmp_path):
    """`#k` in the body: the expansion as text would not mean what the macro does; the
    kernel stays as it is, for that reason."""
    path = _program(tmp_path, (
        '#define LAUNCH_NAMED(k, g, b, ...) { printf("%s\\n", #k); k<<<g, b>>>(__VA_ARGS__); }',
        "LAUNCH_NAMED(rowsum, (ROWS + 255) / 256, 256, dA, dS, ROWS, COLS);"))
    program, result = _transform(path)
    assert result.text == program.text
    d = next(d for d in result.decisions if d.kernel == "rowsum")
    assert d.action == "unchanged" and "macro" in d.reason


def test_a_kernel_left_alone_keeps_its_macro(tmp_path):
    """The copy launched through the macro is not transformed (already coalesced): the invocation is
    not expanded and the output is the input, byte for byte."""
    path = _program(tmp_path, ("#define LAUNCH(k, g, b, ...) k<<<g, b>>>(__VA_ARGS__)",
                               "LAUNCH(rowsum, 1, 1, dA, dS, 0, COLS);"))
    text = path.read_text().replace(
        "copy_head<<<(ROWS + 127) / 128, 128>>>(dA, dT, ROWS, COLS);",
        "LAUNCH(copy_head, (ROWS + 127) / 128, 128, dA, dT, ROWS, COLS);")
    path.write_text(text)
    program, result = _transform(path)
    assert {d.kernel: d.action for d in result.decisions}["copy_head"] == "unchanged"
    kept = result.text.split("int main")[1]
    assert "LAUNCH(copy_head, (ROWS + 127) / 128, 128, dA, dT, ROWS, COLS);" in kept


def test_a_kernel_template_launched_through_a_macro_runs_on_the_cpu_path(tmp_path):
    """`LAUNCH(k, g, b, ...)` of a kernel template: nvcc deduces its type from the
    launch's arguments, and so must the CPU runtime (the random tester's styles-9165)."""
    text = """\
#include <cstdio>
#include <cuda_runtime.h>
#define LAUNCH(kern, g, b, ...) do { kern<<<g, b>>>(__VA_ARGS__); } while (0)
template <typename T>
__global__ void twice(T *out, const T *in, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i];
}
int main()
{
  double h[40], *a, *b;
  for (int i = 0; i < 40; i++) h[i] = i;
  cudaMalloc(&a, sizeof h);
  cudaMalloc(&b, sizeof h);
  cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice);
  LAUNCH(twice, 2, 32, b, a, 40);
  cudaMemcpy(h, b, sizeof h, cudaMemcpyDeviceToHost);
  printf("%.1f %.1f\\n", h[1], h[39]);
  return 0;
}
"""
    run, error = cpu_runner().compile_and_run(text)
    assert run is not None and run.failure is None, error
    assert run.stdout.split() == ["2.0", "78.0"]
