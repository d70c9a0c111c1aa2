"""Issue 32: kernels with statements the C subset cannot read still reach the model.

A statement no lowering spells in C (a library's block primitive, a lambda, a member
function call, a name of a header polycoal declares nothing of) is read as an opaque
statement of unknown effects: the rest of the kernel is judged, the kernel is never
transformed, and no race is claimed across it. A cooperative group's barrier is lowered
exactly (__syncthreads), so such a kernel is transformed like any other. Templates whose
launches are in a header's host code are judged at the arguments of those launches;
`std::numeric_limits<T>::max()` in a copy is its literal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import compile_sm90

clang = pytest.importorskip("clang.cindex")


def transform(path: Path, out: Path, *extra: str) -> tuple[int, dict]:
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(path),
                        "--report", "json", "-o", str(out), *extra],
                       capture_output=True, text=True)
    start = r.stderr.find("{")
    report, _ = json.JSONDecoder().raw_decode(r.stderr[start:]) if start >= 0 else \
        ({"stderr": r.stderr}, 0)
    return r.returncode, report


def kernels(report: dict) -> dict[str, dict]:
    return {k["name"]: k for k in report["kernels"]}


_BLOCK_REDUCE = r"""
#include <cub/cub.cuh>
#define THREADS 128

// a column sum per block through a library primitive (cub declares nothing here)
__global__ void colsum(const float *in, float *out, int n)
{
  typedef cub::BlockReduce<float, THREADS> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float staged[THREADS];
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += THREADS)
    s += in[blockIdx.x * n + i];
  staged[threadIdx.x] = s;
  float total = BlockReduce(temp).Sum(staged[(threadIdx.x + 1) % THREADS]);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

int main()
{
  float *in, *out;
  cudaMalloc(&in, 64 * 1024 * sizeof(float));
  cudaMalloc(&out, 64 * sizeof(float));
  colsum<<<64, THREADS>>>(in, out, 1024);
  cudaDeviceSynchronize();
  return 0;
}
"""


@pytest.mark.parametrize("alias", [
    "typedef cub::BlockReduce<float, THREADS> BlockReduce;",
    # a declaration Clang drops from its tree (the name is undeclared): read from the text
    "using BlockReduce = cub::BlockReduce<float, THREADS>;"])
def test_library_primitive_is_an_opaque_statement(write_cu, tmp_path, alias):
    """The kernel reaches the model (its loads are judged), is left byte-identical, the
    report names the opaque lines, and no race is claimed across the primitive (which
    synchronises the block inside)."""
    source = write_cu(_BLOCK_REDUCE.replace(
        "typedef cub::BlockReduce<float, THREADS> BlockReduce;", alias))
    rc, report = transform(source, tmp_path / "out.cu")
    assert rc == 0, report
    k = kernels(report)["colsum"]
    assert k["action"] == "unchanged"
    assert k["code"] not in ("unparsed", "race"), k
    assert "opaque" in k["reason"] and "line 8, line 9" in k["reason"], k
    assert (tmp_path / "out.cu").read_text() == source.read_text()


_COOPERATIVE = r"""
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// x runs along the rows of a row-major matrix: uncoalesced (the thread axes swapped);
// a block barrier written through cooperative groups, in three spellings
__global__ void scale(const float *a, float *s, int rows, int cols)
{
  cg::thread_block block = cg::this_thread_block();
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y * blockDim.y + threadIdx.y;
  block.sync();
  cg::sync(block);
  cg::this_thread_block().sync();
  if (r < rows && c < cols) s[r * cols + c] = 2.0f * a[r * cols + c];
}

int main()
{
  const int rows = 512, cols = 256;
  float *a, *s;
  cudaMalloc(&a, rows * cols * sizeof(float));
  cudaMalloc(&s, rows * cols * sizeof(float));
  dim3 block(16, 16), grid(rows / 16, cols / 16);
  scale<<<grid, block>>>(a, s, rows, cols);
  cudaDeviceSynchronize();
  return 0;
}
"""


def test_cooperative_group_barriers_are_lowered_exactly(write_cu, tmp_path, nvcc):
    """`block.sync()`, `cg::sync(block)`, `cg::this_thread_block().sync()` of a thread
    block are __syncthreads(): the kernel is read whole and transformed; the output
    compiles and holds no opaque statement."""
    from polycoal.frontend import lower, read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    source = write_cu(_COOPERATIVE)
    program = read_program(str(source))
    (lowering,) = lower.plan(program, PreprocessorOptions())
    assert not lowering.generic
    lowered = lowering.edits[0][2]
    assert lowered.count("__syncthreads();") == 3 and "cg::" not in lowered, lowered
    out = tmp_path / "out.cu"
    rc, report = transform(source, out, "--no-model")   # a small kernel: every form taken
    assert rc == 0, report
    assert kernels(report)["scale"]["action"] != "unchanged", report
    text = out.read_text()
    assert "__pc_opaque" not in text
    compile_sm90(nvcc, out)


_HEADER_TEMPLATES = {
    "sort.cuh": r"""
#include <limits>
template <class K>
__global__ void pad(K *keys, int n, int total)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n && i < total) keys[i] = std::numeric_limits<K>::max();
}

template <class K>
void pad_keys(K *keys, int n, int total)
{
  pad<<<(total + 127) / 128, 128>>>(keys, n, total);
}
""",
    "main.cu": r"""
#include "sort.cuh"
int main()
{
  int *keys;
  cudaMalloc(&keys, 1024 * sizeof(int));
  pad_keys(keys, 1000, 1024);
  cudaDeviceSynchronize();
  return 0;
}
"""}


def test_template_launched_in_a_header_is_judged_at_its_arguments(write_cu, tmp_path):
    """The launch is in the header's host template: no launch of main.cu can run a copy,
    the kernel is read at the arguments Clang saw (int), its limits as literals."""
    from polycoal.frontend import lower, read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    for name, text in _HEADER_TEMPLATES.items():
        write_cu(text, name)
    source = tmp_path / "main.cu"
    program = read_program(str(source))
    (lowering,) = lower.plan(program, PreprocessorOptions())
    assert lowering.generic and lowering.shown == "pad<int>"
    assert lowering.why.startswith("as a launch outside this file"), lowering.why
    assert "keys[i] = 2147483647;" in lowering.copy, lowering.copy
    rc, report = transform(source, tmp_path / "out.cu")
    assert rc == 0, report
    k = kernels(report)
    assert "pad<int>" in k and k["pad<int>"]["code"] not in ("unparsed", "lowering-rejected")
    assert "as a launch outside this file instantiates it" in k["pad"]["reason"]
    assert (tmp_path / "out.cu").read_text() == source.read_text()


@pytest.mark.parametrize("written, literal", [
    ("std::numeric_limits<int>::max()", "2147483647"),
    ("std::numeric_limits<int>::min()", "(-2147483647 - 1)"),
    ("::std::numeric_limits<unsigned int>::max()", "4294967295u"),
    ("numeric_limits<long long>::lowest()", "(-9223372036854775807LL - 1)"),
    ("std::numeric_limits<float>::max()", "3.40282347e+38f"),
    ("std::numeric_limits<double>::infinity()", "__longlong_as_double(0x7ff0000000000000LL)"),
    ("std::numeric_limits< std::uint8_t >::max()", "255u"),
    ("std::numeric_limits<Key>::max()", "std::numeric_limits<Key>::max()"),
])
def test_numeric_limits_literals(written, literal):
    from polycoal.frontend.limits import with_limits
    assert with_limits(f"x = {written};") == f"x = {literal};"
    assert with_limits(f"x = std::numeric_limits<int>::\nmax();") == "x = 2147483647\n;"


def test_header_kernel_no_launch_runs_is_judged(write_cu, tmp_path):
    """A header's kernel the file does not launch is judged by the model (its reason is
    the model's, with where it is), not only 'not in the text'."""
    write_cu(r"""
__global__ void colscale(float *a, int rows, int cols)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) a[r * cols + c] *= 2.0f;
}
""", "kernels.cuh")
    source = write_cu('#include "kernels.cuh"\nint main() { return 0; }\n', "main.cu")
    rc, report = transform(source, tmp_path / "out.cu")
    assert rc == 0, report
    k = kernels(report)["colscale"]
    assert k["action"] == "unchanged"
    assert "not in the input file's text" in k["reason"]
    assert "the model would change it" in k["reason"] or "axes" in k["reason"], k


def test_directives_inside_a_statement_keep_it_as_written(write_cu, tmp_path):
    """A statement holding `#ifdef` lines (a loop whose body is chosen by the
    preprocessor) is not made opaque: replacing it would unbalance the directives. The
    kernel is left as written, exit 0 (found by the random tester)."""
    source = write_cu(r"""
#define N 64
__global__ void k(float *y, const float *A, int m)
{
  auto op = [](const float v) { return v; };
  int j = blockDim.x * blockIdx.x + threadIdx.x;
  if (j < N) {
    for (int i = 0; i < m; i++)
#ifdef ALTERNATIVE
      y[j] += op(A[i * N + j]) * 2.0f;
#else
      y[j] += op(A[i * N + j]);
#endif
  }
}
int main() { float *y, *A; cudaMalloc(&y, 256); cudaMalloc(&A, 4096); k<<<1, 64>>>(y, A, 16); }
""")
    rc, report = transform(source, tmp_path / "out.cu")
    assert rc == 0, report
    assert kernels(report)["k"]["action"] == "unchanged"


def test_auto_from_restrict_pointers_in_a_template():
    """`auto gi = g_idata + bid * N` of a `const T *__restrict__` parameter is `const T *`
    (auto drops the restrict qualifier, keeps the pointee's const), `auto go` of a
    `T *__restrict__` one `T *`: the copy for an instantiation compiles and is read."""
    import os
    import tempfile
    from polycoal.frontend import lower, read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    text = r"""
template <typename T, int N>
__global__ void scan(const long nblocks, T *__restrict__ g_odata,
                     const T *__restrict__ g_idata)
{
  for (long bid = blockIdx.x; bid < nblocks; bid += gridDim.x) {
    auto gi = g_idata + bid * N;
    auto go = g_odata + bid * N;
    go[threadIdx.x] = gi[threadIdx.x];
  }
}
int main() { float *a, *b; cudaMalloc(&a, 4096); cudaMalloc(&b, 4096);
             scan<float, 128><<<8, 128>>>(8, a, b); }
"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(text)
        (lowering,) = lower.plan(read_program(path), PreprocessorOptions())
    assert "const float * gi = g_idata" in lowering.copy, lowering.copy
    assert "float * go = g_odata" in lowering.copy, lowering.copy
