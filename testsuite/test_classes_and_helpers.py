"""Kernels launched from C++ classes, and kernels calling helpers: a launch in a member
function of a class template runs the instantiation the class's arguments name (in the
class body or defined out of line); a kernel calling a helper that exchanges values
between lanes is warp-dependent, whatever file the helper is in; one calling a helper
that reads thread indices (not inlined) is never restructured as if the helper did
not (its axes are permuted in a copy of the helper too)."""

from __future__ import annotations

import pytest

from conftest import compile_sm90
from test_library_declarations import assert_read, transformed

pytest.importorskip("clang.cindex")

CLASS_LAUNCH = """
#include <cstdio>
#include <cstdlib>
template <typename T>
__global__ void scale(T *out, const T *in, int n, int m)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n && j < m) out[j * n + i] = in[j * n + i] * 2 + (T)i;
}
template <typename T>
struct Scaler {
  T *out, *in; int n, m;
  void run() { dim3 b(16, 16); dim3 g((m + 15) / 16, (n + 15) / 16);
               scale<T><<<g, b>>>(out, in, n, m); }
  void run_out_of_line();
};
template <typename T>
void Scaler<T>::run_out_of_line()
{
  dim3 b(16, 16), g((m + 15) / 16, (n + 15) / 16);
  scale<T><<<g, b>>>(in, out, n, m);
}
template <typename T>
double check(int n, int m)
{
  T *h = (T *)malloc(n * m * sizeof(T)), *a, *b;
  for (int k = 0; k < n * m; k++) h[k] = (T)(k % 13);
  cudaMalloc(&a, n * m * sizeof(T)); cudaMalloc(&b, n * m * sizeof(T));
  cudaMemcpy(a, h, n * m * sizeof(T), cudaMemcpyHostToDevice);
  Scaler<T> s{b, a, n, m};
  s.run();
  s.run_out_of_line();
  cudaMemcpy(h, a, n * m * sizeof(T), cudaMemcpyDeviceToHost);
  double total = 0;
  for (int k = 0; k < n * m; k++) total += (double)h[k] * (k % 7);
  free(h); cudaFree(a); cudaFree(b);
  return total;
}
int main()
{
  printf("%f %f\\n", check<float>(40, 24), check<int>(16, 33));
  return 0;
}
"""


def test_launches_in_member_functions_of_a_class_template(write_cu, tmp_path, nvcc):
    """Both launches sit in member functions of `Scaler<T>` (one in the class body, one
    defined out of line); `check<float>` and `check<int>` instantiate the class. Each
    instantiation of the kernel reaches the model through them and is restructured (its
    thread index along x walks the slow dimension); the output compiles and runs alike."""
    from conftest import runs_alike
    source = write_cu(CLASS_LAUNCH)
    kernels, report, out = transformed(source, tmp_path)
    assert kernels["scale__pc_float"][0] == "restructured", kernels
    assert kernels["scale__pc_int"][0] == "restructured", kernels
    assert_read(kernels, "scale")
    text = out.read_text()
    assert "pc_same<T, float>::value" in text and "pc_same<T, int>::value" in text
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), text, tmp_path)


def test_a_helper_exchanging_lanes_makes_the_kernel_warp_dependent(write_cu, tmp_path):
    """The kernel reads its rows one per thread (a permutation would lower its cost) but
    calls, through a helper of a header, a warp reduction: which threads share a warp
    is part of what it computes, so it is warp-dependent (a verdict about the kernel),
    not refused for where the helper is written."""
    write_cu("""
#pragma once
__device__ float warp_sum(float v)
{
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ float lane_total(float v) { float s = warp_sum(v); return s + threadIdx.x * 0; }
""", "reduce.cuh")
    source = write_cu("""
#include "reduce.cuh"
__global__ void row_sums(const float *a, float *out, int n)
{
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && j < n) out[j * n + i] = lane_total(a[j * n + i]);
}
int main()
{
  float *a, *o; int n = 64;
  cudaMalloc(&a, n * n * 4); cudaMalloc(&o, n * n * 4);
  row_sums<<<dim3(2, 2), dim3(32, 32)>>>(a, o, n);
  return 0;
}
""")
    kernels, _, _ = transformed(source, tmp_path)
    action, code, reason = kernels["row_sums"]
    assert (action, code) == ("unchanged", "warp-dependent"), kernels
    assert "warp_sum" in reason and "__shfl_down_sync" in reason


def test_std_integer_types_from_a_macro(write_cu, tmp_path, nvcc):
    """`#define UNIT_TYPE std::uint32_t` (a project's constants header): the expansion
    reaches the C reader as `std::uint32_t`, read as the C library's type."""
    from conftest import runs_alike
    source = write_cu("""
#include <cstdint>
#include <cstdio>
#define UNIT_TYPE std::uint32_t
__global__ void copy_rows(const UNIT_TYPE *in, UNIT_TYPE *out, std::uint32_t n)
{
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (std::uint32_t j = 0; j < n; j++)
      out[i * n + j] = in[i * n + j] + (UNIT_TYPE)j;
}
int main()
{
  const std::uint32_t n = 128;
  UNIT_TYPE *h = (UNIT_TYPE *)malloc(n * n * sizeof(UNIT_TYPE)), *a, *b;
  for (std::uint32_t k = 0; k < n * n; k++) h[k] = k % 31;
  cudaMalloc(&a, n * n * sizeof(UNIT_TYPE)); cudaMalloc(&b, n * n * sizeof(UNIT_TYPE));
  cudaMemcpy(a, h, n * n * sizeof(UNIT_TYPE), cudaMemcpyHostToDevice);
  copy_rows<<<1, 128>>>(a, b, n);
  cudaMemcpy(h, b, n * n * sizeof(UNIT_TYPE), cudaMemcpyDeviceToHost);
  unsigned long s = 0;
  for (std::uint32_t k = 0; k < n * n; k++) s += h[k] * (k % 7);
  printf("%f\\n", (double)s);
  return 0;
}
""")
    kernels, _, out = transformed(source, tmp_path)
    assert_read(kernels, "copy_rows")
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), out.read_text(), tmp_path)


HELPER_READS_THREADS = """
#include <cstdio>
#include <cstdlib>
__device__ float lane_bias(float v) { float s = v * 2.0f; s += (float)(threadIdx.x % 7); return s; }
__global__ void cols(const float *a, float *out, int n)
{
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && j < n) out[j * n + i] = lane_bias(a[j * n + i]);
}
int main()
{
  const int n = 64;
  float *h = (float *)malloc(n * n * 4), *a, *o;
  for (int k = 0; k < n * n; k++) h[k] = k % 11;
  cudaMalloc(&a, n * n * 4); cudaMalloc(&o, n * n * 4);
  cudaMemcpy(a, h, n * n * 4, cudaMemcpyHostToDevice);
  cols<<<dim3(2, 2), dim3(32, 32)>>>(a, o, n);
  cudaMemcpy(h, o, n * n * 4, cudaMemcpyDeviceToHost);
  double s = 0; for (int k = 0; k < n * n; k++) s += h[k] * (k % 5);
  printf("%f\\n", s); return 0;
}
"""


def test_a_helper_reading_thread_indices_is_permuted_with_the_kernel(write_cu, tmp_path,
                                                                      nvcc):
    """`lane_bias` reads threadIdx.x and is not inlined (two statements): the affine
    restructuring (which would give threadIdx.x another meaning inside it) is not
    taken; the permutation is, with a permuted copy of the helper. Runs alike."""
    from conftest import runs_alike
    source = write_cu(HELPER_READS_THREADS)
    kernels, _, out = transformed(source, tmp_path)
    assert kernels["cols"][0] == "permuted", kernels
    text = out.read_text()
    assert "lane_bias__pc_perm_cols" in text and "threadIdx.y % 7" in text
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), text, tmp_path)


def test_a_header_helper_reading_thread_indices_is_copied_permuted(write_cu, tmp_path,
                                                                    nvcc):
    """The same helper in a header, reading the thread index through a macro: its copy
    is its definition as the preprocessor expanded it, permuted, written before the
    kernel's copy (the header is included above it); the header is not changed."""
    from conftest import runs_alike
    header = write_cu("#pragma once\n#define LANE (threadIdx.x % 7)\n__device__ float "
                      "lane_bias(float v) { float s = v * 2.0f; s += (float)LANE; "
                      "return s; }\n", "help.cuh")
    before = header.read_text()
    text = HELPER_READS_THREADS.replace(
        "__device__ float lane_bias(float v) { float s = v * 2.0f; s += (float)(threadIdx.x "
        "% 7); return s; }", '#include "help.cuh"')
    assert '#include "help.cuh"' in text
    source = write_cu(text)
    kernels, _, out = transformed(source, tmp_path)
    assert kernels["cols"][0] == "permuted", kernels
    output = out.read_text()
    assert "lane_bias__pc_perm_cols" in output and "threadIdx.y % 7" in output
    assert header.read_text() == before
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), output, tmp_path, include_dirs=(tmp_path,))


def test_a_member_never_called_launches_at_the_class_arguments(write_cu, tmp_path):
    """A hash table class template: `insert` launches `insert_kernel<K, V>` but this
    unit calls only `lookup`; the kernel is read at the arguments of the class's
    instantiation the unit uses (`Table<unsigned long long, unsigned int>`), not at
    stated ones (a float key would not hash). `hash`, also the name of a struct of the
    unit, is the function the kernel calls."""
    source = write_cu("""
#include <cstdio>
template <typename T> struct hash { unsigned operator()(T v) const { return 0; } };
__device__ unsigned hash(unsigned long long x) { x ^= x >> 33; return (unsigned)x; }
template <typename K, typename V>
__global__ void insert_kernel(K *keys, V *vals, const K *in, const V *in_vals, int n, int cap)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    K loc = hash(in[i]) % cap;
    keys[loc] = in[i];
    vals[loc] = in_vals[i];
  }
}
template <typename K, typename V>
__global__ void lookup_kernel(const K *keys, V *out, int cap)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < cap) out[i] = (V)keys[i];
}
template <typename K, typename V>
struct Table {
  K *keys; V *vals; int cap;
  void insert(const K *k, const V *v, int n) { insert_kernel<K, V><<<(n + 127) / 128, 128>>>(keys, vals, k, v, n, cap); }
  void lookup(V *out) { lookup_kernel<K, V><<<(cap + 127) / 128, 128>>>(keys, out, cap); }
};
int main()
{
  Table<unsigned long long, unsigned int> t;
  t.cap = 1024;
  cudaMalloc(&t.keys, 1024 * 8); cudaMalloc(&t.vals, 1024 * 4);
  unsigned int *out; cudaMalloc(&out, 1024 * 4);
  t.lookup(out);
  return 0;
}
""")
    kernels, _, _ = transformed(source, tmp_path)
    action, code, reason = kernels["insert_kernel"]
    assert code == "lowered" and "insert_kernel<unsigned long long, unsigned int>" in reason, \
        kernels
    assert_read(kernels, "insert_kernel<unsigned long long, unsigned int>")


def test_types_of_headers_declared_with_what_they_name(write_cu, tmp_path, nvcc):
    """`typedef double real8; typedef real8 Real_t;` in a header, and a struct declared
    with an attribute before its name: a kernel writing `Real_t *__restrict__` and
    `const Atom` reaches the model (the C reader declares `real8` before `Real_t`), and a
    kernel calling a function whose name a struct also has reads it as the call."""
    write_cu("""
#pragma once
typedef double real8;
typedef real8 Real_t;
struct __attribute__((__packed__)) Atom { float x, y, z; int type; };
""", "types.h")
    source = write_cu("""
#include <cstdio>
#include "types.h"
__global__ void scale_rows(Real_t *__restrict__ a, const Atom *__restrict__ atoms, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < n; j++)
      a[i * n + j] = a[i * n + j] * (Real_t)atoms[j].x;
}
int main()
{
  Real_t *a; Atom *atoms; int n = 64;
  cudaMalloc(&a, n * n * sizeof(Real_t)); cudaMalloc(&atoms, n * sizeof(Atom));
  scale_rows<<<1, 64>>>(a, atoms, n);
  return 0;
}
""")
    kernels, _, out = transformed(source, tmp_path)
    assert_read(kernels, "scale_rows")
    compile_sm90(nvcc, out)


def test_array_typedefs_and_alternative_tokens(write_cu, tmp_path, nvcc):
    """`typedef double fArray[17][4];` in a header (C's own declaration for the reader,
    so its subscripts have strides) and `and`/`not` in a condition: the kernel reaches
    the model and runs alike."""
    from conftest import runs_alike
    write_cu("#pragma once\n#define ROWS 16\ntypedef double fArray[ROWS + 1][4];\n",
             "types.h")
    source = write_cu("""
#include <cstdio>
#include <cstdlib>
#include "types.h"
__global__ void step(const fArray *__restrict__ in, fArray *__restrict__ out, int n)
{
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < n and not (b < 0))
    for (int r = 0; r < ROWS + 1; r++)
      for (int c = 0; c < 4; c++)
        out[b][r][c] = in[b][r][c] * 2.0 + r;
}
int main()
{
  const int n = 32;
  fArray *h = (fArray *)malloc(n * sizeof(fArray)), *a, *o;
  for (int k = 0; k < n * (ROWS + 1) * 4; k++) ((double *)h)[k] = k % 9;
  cudaMalloc(&a, n * sizeof(fArray)); cudaMalloc(&o, n * sizeof(fArray));
  cudaMemcpy(a, h, n * sizeof(fArray), cudaMemcpyHostToDevice);
  step<<<1, 32>>>(a, o, n);
  cudaMemcpy(h, o, n * sizeof(fArray), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int k = 0; k < n * (ROWS + 1) * 4; k++) s += ((double *)h)[k] * (k % 5);
  printf("%f\\n", s);
  return 0;
}
""")
    kernels, _, out = transformed(source, tmp_path)
    assert_read(kernels, "step")
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), out.read_text(), tmp_path, include_dirs=(tmp_path,))


def test_braced_vector_values_and_make_functions(write_cu, tmp_path, nvcc):
    """`d[i] = {x, y, z};` of a float3 (C++ only) is read as `make_float3(x, y, z)`, and
    the make_ functions are values (not calls of unknown effects): the row-per-thread
    kernel reaches the affine model, is restructured, and runs alike."""
    from conftest import runs_alike
    source = write_cu("""
#include <cstdio>
#include <cstdlib>
__global__ void spread(const float *a, float3 *d, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < n; j++) {
      float v = a[i * n + j];
      d[i * n + j] = {v, 2.0f * v, v + (float)j};
    }
}
int main()
{
  const int n = 128;
  float *h = (float *)malloc(n * n * sizeof(float)), *a;
  float3 *hd = (float3 *)malloc(n * n * sizeof(float3)), *d;
  for (int k = 0; k < n * n; k++) h[k] = k % 13;
  cudaMalloc(&a, n * n * sizeof(float)); cudaMalloc(&d, n * n * sizeof(float3));
  cudaMemcpy(a, h, n * n * sizeof(float), cudaMemcpyHostToDevice);
  spread<<<1, n>>>(a, d, n);
  cudaMemcpy(hd, d, n * n * sizeof(float3), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int k = 0; k < n * n; k++) s += (hd[k].x + hd[k].y * 3 + hd[k].z * 5) * (k % 7);
  printf("%f\\n", s);
  return 0;
}
""")
    kernels, _, out = transformed(source, tmp_path)
    assert kernels["spread"][0] != "unchanged", kernels
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), out.read_text(), tmp_path)


def test_a_call_with_explicit_template_arguments(write_cu, tmp_path, nvcc):
    """`tile<float, 2>(A, B, n)`: a device function template called with its arguments
    written (a template kernel's instance calls it so): read as a call of the function,
    the kernel reaches the model; the output keeps the call as written."""
    source = write_cu("""
template <typename T, int D>
__device__ void tile(const T *a, T *b, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int d = 0; d < D; d++)
    if (i < n) b[i * D + d] = a[i * D + d];
}
template <typename T>
__global__ void copy(const T *a, T *b, int n)
{
  tile<T, 2>(a, b, n);
}
int main()
{
  float *a, *b; int n = 256;
  cudaMalloc(&a, 2 * n * 4); cudaMalloc(&b, 2 * n * 4);
  copy<float><<<2, 128>>>(a, b, n);
  return 0;
}
""")
    kernels, _, out = transformed(source, tmp_path)
    assert_read(kernels, "copy")
    assert_read(kernels, "copy__pc_float" if "copy__pc_float" in kernels else "copy<float>")
    assert "tile<T, 2>(a, b, n);" in out.read_text()
    compile_sm90(nvcc, out)
