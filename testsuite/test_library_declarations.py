"""Issue 32: the toolkit's libraries and the runtime as Clang reads them.

Thrust and CUB headers (where the toolkit's own are not read) resolve to polycoal's
declarations of them (grammars/clang_toolkit/pc_thrust.h, pc_cub.h); the runtime's
limits, attributes, texture objects and device-side calls are declared; the C library's
`assert` is read in its C form; a constant variable template's instance is lowered to its
value; `std::uint32_t` to the C typedef; Clang reads a whole file however many errors it
finds. Each test asserts that Clang finds no error where nvcc finds none, or that the
kernels of such a file reach the model, and that what is emitted compiles.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import compile_sm90

pytest.importorskip("clang.cindex")


def clang_errors(path: Path) -> list:
    from polycoal.frontend import clang
    from polycoal.frontend.preprocess import PreprocessorOptions
    return clang.error_sites(str(path), PreprocessorOptions(include_dirs=(str(path.parent),)),
                             path.read_text())


def transform(path: Path, out: Path) -> tuple[int, dict]:
    r = subprocess.run([sys.executable, "-m", "polycoal", "transform", str(path),
                        "--report", "json", "-o", str(out)], capture_output=True, text=True)
    start = r.stderr.find("{")
    return r.returncode, (json.loads(r.stderr[start:]) if start >= 0 else {"stderr": r.stderr})


def codes(report: dict) -> dict[str, tuple[str, str, str]]:
    return {k["name"]: (k["action"], k["code"], k["reason"]) for k in report["kernels"]}


def transformed(source: Path, tmp_path: Path) -> tuple[dict, dict, Path]:
    """(kernels by name: (action, code, reason), the report, the output path) of a
    transform that exits 0."""
    out = tmp_path / "out.cu"
    rc, report = transform(source, out)
    assert rc == 0, report
    return codes(report), report, out


def assert_read(kernels: dict, name: str) -> None:
    """The kernel's verdict is about the kernel, not about reading its code."""
    assert kernels[name][1] not in ("unparsed", "opaque-statements"), kernels


THRUST = """
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/sequence.h>
#include <thrust/reduce.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/execution_policy.h>
#include <cstdio>

struct nonzero {
  __host__ __device__ bool operator()(int f) const { return f != 0; }
};

struct positive {
  __host__ __device__ bool operator()(const thrust::tuple<float, int> &e) const {
    return thrust::get<0>(e) > 0 && thrust::get<1>(e) != 0;
  }
};

template <typename T>
__global__ void column_scale(T *a, const T *s, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < n; j++)
      a[i * n + j] *= s[j];
}

int main()
{
  const int n = 256;
  thrust::device_vector<float> a(n * n), s(n);
  thrust::device_vector<int> flags(n * n, 1);
  thrust::sequence(a.begin(), a.end());
  thrust::sequence(thrust::device, s.begin(), s.end(), 1.0f);
  column_scale<<<(n + 127) / 128, 128>>>(thrust::raw_pointer_cast(a.data()),
                                          thrust::raw_pointer_cast(&s[0]), n);
  float total = thrust::reduce(a.begin(), a.end(), 0.0f, thrust::plus<float>());
  thrust::device_vector<float> kept(n * n);
  auto end = thrust::copy_if(a.begin(), a.end(), flags.begin(), kept.begin(),
                             nonzero());
  long count = end - kept.begin();
  auto zipped = thrust::make_zip_iterator(thrust::make_tuple(a.begin(), flags.begin()));
  long positives = thrust::count_if(zipped, zipped + n, positive());
  thrust::host_vector<float> h = a;
  printf("%f %ld %ld %f\\n", total, count, positives, h[n + 1]);
  return 0;
}
"""


def test_thrust_host_code_is_read_and_its_launch_instantiates(write_cu, tmp_path, nvcc):
    """Host code of Thrust (vectors, raw pointers, policies, reduce, copy_if with a
    stencil, zip iterators of tuples): Clang finds no error, the launch taking
    `thrust::raw_pointer_cast(...)` instantiates the template, and its copy reaches the
    model (a verdict about the kernel); the output compiles."""
    source = write_cu(THRUST)
    assert clang_errors(source) == []
    kernels, report, out = transformed(source, tmp_path)
    assert kernels["column_scale"][1] == "lowered", kernels       # through its instance
    instances = [v for k, v in kernels.items() if k.startswith("column_scale") and
                 k != "column_scale"] or [kernels["column_scale"]]
    assert all(v[1] not in ("unparsed", "opaque-statements") for v in instances), kernels
    # the output compiles (a Thrust build takes a while: the input, valid CUDA for the
    # toolkit's Thrust, is compiled only where the output is the input)
    changed = out.exists() and out.read_text() != source.read_text()
    compile_sm90(nvcc, out if changed else source)


CUB = """
#include <cub/cub.cuh>
#include <cub/block/block_reduce.cuh>

template <int BLOCK>
__global__ void block_sums(const float *in, float *out, int n)
{
  typedef cub::BlockReduce<float, BLOCK> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  int i = blockIdx.x * BLOCK + threadIdx.x;
  float x = i < n ? in[i] : 0.0f;
  float sum = BlockReduce(temp).Sum(x);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

__global__ void scan_rows(const int *in, int *out)
{
  typedef cub::BlockScan<int, 128> BlockScan;
  __shared__ typename BlockScan::TempStorage temp;
  int v = in[blockIdx.x * 128 + threadIdx.x], prefix;
  BlockScan(temp).ExclusiveSum(v, prefix);
  out[blockIdx.x * 128 + threadIdx.x] = prefix;
}

int main()
{
  const int n = 1 << 16;
  float *in, *out, *total;
  int *a, *b;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n / 256 * sizeof(float));
  cudaMalloc(&total, sizeof(float));
  cudaMalloc(&a, n * sizeof(int));
  cudaMalloc(&b, n * sizeof(int));
  block_sums<256><<<n / 256, 256>>>(in, out, n);
  scan_rows<<<n / 128, 128>>>(a, b);
  void *scratch = nullptr;
  size_t bytes = 0;
  cub::DeviceReduce::Sum(scratch, bytes, out, total, n / 256);
  cudaMalloc(&scratch, bytes);
  cub::DeviceReduce::Sum(scratch, bytes, out, total, n / 256);
  cub::DeviceScan::ExclusiveSum(scratch, bytes, a, b, n);
  cudaDeviceSynchronize();
  return 0;
}
"""


def test_cub_primitives_are_declared(write_cu, tmp_path, nvcc):
    """Block-wide CUB primitives in kernels and device-wide ones in host code: Clang finds
    no error, the kernels are read through their opaque statements (judged, never
    changed), and the file is left as written."""
    source = write_cu(CUB)
    compile_sm90(nvcc, source)                  # valid CUDA for the toolkit's CUB
    assert clang_errors(source) == []
    kernels, report, out = transformed(source, tmp_path)
    assert kernels["scan_rows"][1] != "unparsed", kernels
    assert "opaque" in kernels["scan_rows"][2], kernels
    # the template through its instance (`BlockReduce(temp)` builds an object of the
    # alias's class: not a cast), judged with its opaque statements
    assert kernels["block_sums<256>"][1] != "unparsed", kernels
    assert "opaque" in kernels["block_sums<256>"][2], kernels
    assert not out.exists() or out.read_text() == source.read_text()


def test_runtime_declarations(write_cu, nvcc):
    """What real programs call of the runtime beside the basics: device-side malloc and
    error strings, min/max of mixed integer types, limits, function and device
    attributes, occupancy, texture objects, pitched memory."""
    source = write_cu("""
#include <cstdio>
// (a device function calling the runtime: not called here, it needs the device runtime)
__device__ void check(cudaError_t e)
{ if (e != cudaSuccess) printf("%s %d\\n", cudaGetErrorString(e), (int)cudaGetLastError()); }
__global__ void k(cudaTextureObject_t tex, float *out, size_t n, int cap)
{
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  float *scratch = (float *)malloc(4 * sizeof(float));
  if (i < min(n, (size_t)cap) && scratch) out[i] = tex1Dfetch<float>(tex, (int)i) + scratch[0];
  free(scratch);
}
int main()
{
  int sms = 0, blocks = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1 << 20);
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, 256, 0);
  float *d; cudaMalloc(&d, 1024 * sizeof(float));
  cudaResourceDesc res = {}; res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = d; res.res.linear.desc = cudaCreateChannelDesc<float>();
  res.res.linear.sizeInBytes = 1024 * sizeof(float);
  cudaTextureDesc desc = {}; desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex; cudaCreateTextureObject(&tex, &res, &desc, nullptr);
  cudaPitchedPtr p = make_cudaPitchedPtr(d, 64, 16, 16);
  k<<<4, 256>>>(tex, d, 1024u, max(sms, 1) * 256);
  printf("%d %zu\\n", blocks, p.pitch + (size_t)min(3, 4u) + max(2ul, 3ul));
  cudaDestroyTextureObject(tex);
  return 0;
}
""")
    compile_sm90(nvcc, source)
    assert clang_errors(source) == []


def test_assert_in_a_kernel_is_read_and_kept(write_cu, tmp_path, nvcc):
    """The C library's `assert` in C++ spells a static_cast; it is read back as the
    check it was written as: the kernel reaches the model, and a restructured kernel
    keeps the check."""
    source = write_cu("""
#include <cassert>
#include <cstdio>
__global__ void scale_rows(float *a, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(n > 0);
  if (i < n)
    for (int j = 0; j < n; j++)
      a[i * n + j] *= 2.0f;
}
int main()
{
  const int n = 512;
  float *a; cudaMalloc(&a, n * n * sizeof(float));
  scale_rows<<<n / 128, 128>>>(a, n);
  cudaDeviceSynchronize();
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    assert kernels["scale_rows"][1] != "unparsed", kernels
    assert kernels["scale_rows"][0] != "unchanged", kernels
    text = out.read_text().split("int main", 1)[0]
    assert "assert((n) > 0)" in text and "__assert_fail" not in text
    compile_sm90(nvcc, out)


def test_variable_templates_std_typedefs_and_aliases_in_macro_arguments(write_cu, tmp_path,
                                                                        nvcc):
    """A constant variable template's instance (`EMPTY<u32>`) is lowered to its value,
    `std::uint32_t` to `uint32_t` (parameters too), and an alias inside a macro's
    argument (`assert(v != EMPTY<u32>)`) is left where it is written: the kernels reach
    the model and every lowering compiles (no lowering is refused)."""
    source = write_cu("""
#include <cassert>
#include <cstdint>
using u32 = unsigned int;
template <typename K> constexpr K EMPTY = (K)-1;
namespace util { __device__ __forceinline__ int twice(int x) { return 2 * x; } }
__global__ void mark(u32 *keys, const std::uint32_t n)
{
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    assert(keys[i] != EMPTY<u32>);
    keys[i] = keys[i] == EMPTY<unsigned int> ? 0u : (u32)util::twice((int)keys[i]);
  }
}
int main()
{
  u32 *k; cudaMalloc(&k, 1024 * sizeof(u32));
  mark<<<8, 128>>>(k, 1024);
  cudaDeviceSynchronize();
  return 0;
}
""")
    out = tmp_path / "out.cu"
    rc, report = transform(source, out)
    assert rc == 0, report
    assert not any(d["code"] in ("lowering-rejected", "internal-error")
                   for d in report["diagnostics"]), report["diagnostics"]
    kernels = codes(report)
    assert_read(kernels, "mark")
    if out.exists() and out.read_text() != source.read_text():
        compile_sm90(nvcc, out)


def test_a_template_after_many_errors_is_still_read(write_cu, tmp_path):
    """Clang's default limit of errors (20) stopped the parse before the rest of the
    file: a template kernel after many uses of a library polycoal declares nothing of is
    still read and its launch instantiated."""
    uses = "\n".join(f"  total += unknownlib::value({k});" for k in range(30))
    source = write_cu(f"""
double library_sum() {{
  double total = 0;
{uses}
  return total;
}}
template <typename T>
__global__ void scale(T *a, int n)
{{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= 2;
}}
int main()
{{
  float *a; cudaMalloc(&a, 1024 * sizeof(float));
  scale<<<8, 128>>>(a, 1024);
  return (int)library_sum();
}}
""")
    assert len(clang_errors(source)) >= 30
    rc, report = transform(source, tmp_path / "out.cu")
    assert rc == 0, report
    kernels = codes(report)
    assert "scale<float>" in kernels, kernels
    assert_read(kernels, "scale<float>")


def test_cpp_initialisations_and_local_aliases_reach_the_model(write_cu, tmp_path, nvcc):
    """`unsigned int tid(e);`, `const unsigned s{e};`, `float2 p{1, 2};` and a local
    `using vec = float4;` are read as C spells them (`= e`, `= {...}`, a typedef): the
    kernel reaches the model; what is emitted compiles."""
    source = write_cu("""
__global__ void direct(const float *in, float *out, int n)
{
  unsigned int tid(blockIdx.x * blockDim.x + threadIdx.x);
  const unsigned int stride{blockDim.x * gridDim.x};
  using vec = float4;
  float2 pair{1.0f, 2.0f};
  for (unsigned int i(tid); i < (unsigned)n; i += stride) {
    float scale(2.0f);
    out[i] = scale * in[i] + pair.x + sizeof(vec);
  }
}
__global__ void rows(const float *in, float *out, int n)
{
  int row(blockIdx.x * blockDim.x + threadIdx.x);
  if (row < n) {
    float sum{0.0f};
    for (int j(0); j < n; j++) sum += in[row * n + j];
    out[row] = sum;
  }
}
int main()
{
  float *a, *b; cudaMalloc(&a, 4096 * sizeof(float)); cudaMalloc(&b, 4096 * sizeof(float));
  direct<<<16, 256>>>(a, b, 4096);
  rows<<<1, 64>>>(a, b, 64);
  cudaDeviceSynchronize();
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    assert_read(kernels, "direct")
    assert_read(kernels, "rows")
    if out.exists() and out.read_text() != source.read_text():
        compile_sm90(nvcc, out)


def test_more_vector_types_and_curand_states_are_types(write_cu, tmp_path):
    """Kernels taking `uchar3`, `ulong4`, `ushort2`, `longlong2`, `double1` and cuRAND
    states reach the model (the C reader knows them as types, with their sizes)."""
    source = write_cu("""
#include <curand_kernel.h>
__global__ void pixels(const uchar3 *in, ushort2 *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { uchar3 p = in[i]; out[i].x = p.x + p.y; out[i].y = p.z; }
}
__global__ void wide(const ulong4 *a, longlong2 *b, double1 *c, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { b[i].x = (long long)a[i].x; b[i].y = (long long)a[i].w; c[i].x = 1.0; }
}
__global__ void seed(curandState *states, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) curand_init(1234, i, 0, &states[i]);
}
int main()
{
  uchar3 *p; ushort2 *q; ulong4 *a; longlong2 *b; double1 *c; curandState *s;
  cudaMalloc(&p, 1024 * sizeof(uchar3)); cudaMalloc(&q, 1024 * sizeof(ushort2));
  cudaMalloc(&a, 1024 * sizeof(ulong4)); cudaMalloc(&b, 1024 * sizeof(longlong2));
  cudaMalloc(&c, 1024 * sizeof(double1)); cudaMalloc(&s, 1024 * sizeof(curandState));
  pixels<<<4, 256>>>(p, q, 1024);
  wide<<<4, 256>>>(a, b, c, 1024);
  seed<<<4, 256>>>(s, 1024);
  return 0;
}
""")
    rc, report = transform(source, tmp_path / "out.cu")
    assert rc == 0, report
    kernels = codes(report)
    for name in ("pixels", "wide", "seed"):
        assert kernels[name][1] not in ("unparsed", "opaque-statements"), kernels


def test_default_arguments_of_a_kernel(write_cu, tmp_path, nvcc):
    """A kernel with default arguments, launched with and without them: the C reader
    drops the defaults (C has none), the output keeps them, compiles and runs alike."""
    from conftest import runs_alike
    source = write_cu("""
#include <cstdio>
__global__ void scale_rows(float *a, int n, float factor = 2.0f, bool last = false)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < n; j++)
      a[i * n + j] *= last ? factor : 1.5f;
}
int main()
{
  const int n = 256;
  float *h = (float *)malloc(n * n * sizeof(float)), *a;
  for (int k = 0; k < n * n; k++) h[k] = (float)(k % 17);
  cudaMalloc(&a, n * n * sizeof(float));
  cudaMemcpy(a, h, n * n * sizeof(float), cudaMemcpyHostToDevice);
  scale_rows<<<2, 128>>>(a, n);
  scale_rows<<<2, 128>>>(a, n, 3.0f, true);
  cudaMemcpy(h, a, n * n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0;
  for (int k = 0; k < n * n; k++) s += h[k] * (k % 7);
  printf("%f\\n", s);
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    assert_read(kernels, "scale_rows")
    text = out.read_text()
    assert "float factor = 2.0f, bool last = false" in text
    compile_sm90(nvcc, out)
    runs_alike(source.read_text(), text, tmp_path)


def test_unscoped_enumerators_as_c_names_them(write_cu, tmp_path, nvcc):
    """A template kernel with an unscoped enum parameter, its body naming the enumerator
    through the enum (`lattice::Q19`): the instance is read (`Q19` as C names it),
    reaches the model, and what is emitted compiles."""
    source = write_cu("""
enum lattice { Q19 = 19, Q27 = 27 };
template <lattice L>
__global__ void relax(double *f, int cells)
{
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  double local[lattice::Q19];
  if (c < cells) {
    for (int q = 0; q < L && q < lattice::Q19; q++) local[q] = f[q * cells + c];
    for (int q = 0; q < L && q < lattice::Q19; q++) f[q * cells + c] = 0.5 * local[q];
  }
}
int main()
{
  double *f; cudaMalloc(&f, 19 * 4096 * sizeof(double));
  relax<Q19><<<16, 256>>>(f, 4096);
  cudaDeviceSynchronize();
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    instances = {k: v for k, v in kernels.items() if k.startswith("relax") and k != "relax"}
    assert instances and all(v[1] not in ("unparsed", "opaque-statements")
                             for v in instances.values()), kernels
    if out.exists() and out.read_text() != source.read_text():
        compile_sm90(nvcc, out)


def test_a_struct_argument_converted_whole_is_not_split_into_fields(write_cu, tmp_path, nvcc):
    """A `__half` taken by value and converted (`static_cast<float>(zero)` calls its
    conversion operator): the record is used whole, not field by field. The kernel
    reaches the model, what is emitted compiles."""
    source = write_cu("""
#include <cstdint>
#include <cuda_fp16.h>
__global__ void dequantise(const signed char *q, float *out, __half scale, __half zero,
                           std::uint32_t n)
{
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (std::uint32_t j = 0; j < n; j++)
      out[i * n + j] = (static_cast<float>(q[i * n + j]) - static_cast<float>(zero)) *
                       static_cast<float>(scale);
}
int main()
{
  signed char *q; float *o;
  cudaMalloc(&q, 512 * 512); cudaMalloc(&o, 512 * 512 * sizeof(float));
  dequantise<<<4, 128>>>(q, o, __float2half(0.5f), __float2half(1.0f), 512);
  cudaDeviceSynchronize();
  return 0;
}
""")
    compile_sm90(nvcc, source)
    assert clang_errors(source) == []
    kernels, report, out = transformed(source, tmp_path)
    assert_read(kernels, "dequantise")
    if out.exists() and out.read_text() != source.read_text():
        compile_sm90(nvcc, out)


def test_register_and_template_helpers_on_expressions_of_a_parameter_type(write_cu, tmp_path,
                                                                          nvcc):
    """`register` (nvcc accepts it in C++17; Clang reads it so) and a device template
    helper called on expressions of the kernel's template parameter type (whose type
    Clang cannot name in the template: the call stays, it is not inlined): the instance
    reaches the model and no lowering fails its compile check."""
    source = write_cu("""
template <class T> __device__ __forceinline__ T DIV(T a, T b) { return a / b; }
template <class real>
__global__ void relax(const real *t, real *out, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  register real scale;
  if (i < n) {
    const real temp = t[i];
    scale = DIV(-temp, (real)9.4e1) + DIV(temp, temp + (real)1);
    out[i] = scale;
  }
}
int main()
{
  float *a, *b; cudaMalloc(&a, 4096 * sizeof(float)); cudaMalloc(&b, 4096 * sizeof(float));
  relax<float><<<16, 256>>>(a, b, 4096);
  cudaDeviceSynchronize();
  return 0;
}
""")
    compile_sm90(nvcc, source)
    assert clang_errors(source) == []
    out = tmp_path / "out.cu"
    rc, report = transform(source, out)
    assert rc == 0, report
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"], report
    kernels = codes(report)
    assert_read(kernels, "relax<float>")
    if out.exists() and out.read_text() != source.read_text():
        compile_sm90(nvcc, out)


def test_a_variable_template_at_the_kernels_own_parameters(write_cu, tmp_path):
    """A hash-table template kernel comparing with `EMPTY<K, V>` (a variable template at
    the kernel's own parameters: no value before an instantiation), launched from a
    class's member function: judged through a copy where that value is of unknown
    origin; the file is left as written."""
    source = write_cu("""
template <typename K, typename V> constexpr K EMPTY = (K)-1;
template <typename K, typename V>
__global__ void lookup(const K *keys, const V *values, const K *queries, V *found,
                       int n, int capacity)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    K q = queries[i];
    int slot = (int)(q % capacity);
    for (int probe = 0; probe < capacity; probe++) {
      if (keys[slot] == q) { found[i] = values[slot]; return; }
      if (keys[slot] == EMPTY<K, V>) { found[i] = (V)0; return; }
      slot = (slot + 1) % capacity;
    }
  }
}
""")
    kernels, report, out = transformed(source, tmp_path)
    instances = {k: v for k, v in kernels.items() if k.startswith("lookup<")}
    assert instances and all(v[1] not in ("unparsed", "opaque-statements")
                             for v in instances.values()), kernels
    assert not out.exists() or out.read_text() == source.read_text()


def test_qualified_calls_that_stay_calls(write_cu, tmp_path):
    """A kernel calling a namespace's function that is not inlined (a loop in it, or an
    argument with effects) and a function template with explicit arguments: read
    through a copy that names the calls plainly (judged, never changed); the file is
    left as written."""
    source = write_cu("""
namespace util {
__device__ __forceinline__ int id(int lit) { return lit >> 1; }
__device__ int probe(const unsigned *keys, unsigned k, int cap)
{
  int s = k % cap;
  for (int p = 0; p < cap && keys[s] != k; p++) s = (s + 1) % cap;
  return s;
}
}
template <typename K, typename V>
__device__ V find(const K *keys, const V *values, K k, int cap)
{
  int s = (int)(k % cap);
  for (int p = 0; p < cap && keys[s] != k; p++) s = (s + 1) % cap;
  return values[s];
}
__global__ void gather(const int *table, const unsigned *keys, const unsigned *values,
                       int *out, int n, int cap)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int column = 0;
    int a = util::id(table[i * 4 + (column++)]);
    int b = util::probe(keys, (unsigned)a, cap);
    out[i] = a + b + (int)find<unsigned, unsigned>(keys, values, (unsigned)b, cap);
  }
}
int main()
{
  int *t, *o; unsigned *k, *v;
  cudaMalloc(&t, 4096 * sizeof(int)); cudaMalloc(&o, 1024 * sizeof(int));
  cudaMalloc(&k, 1024 * sizeof(unsigned)); cudaMalloc(&v, 1024 * sizeof(unsigned));
  gather<<<4, 256>>>(t, k, v, o, 1024, 1024);
  cudaDeviceSynchronize();
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    assert_read(kernels, "gather")
    assert not out.exists() or out.read_text() == source.read_text()


def test_parameters_of_classes_c_cannot_spell(write_cu, tmp_path):
    """Kernels taking `thrust::complex<float> *` and a template class by value: read
    through a judged copy where such a parameter is a struct of no known fields (the
    statements using it opaque); the file is left as written."""
    source = write_cu("""
#include <thrust/complex.h>
template <typename T, int N> struct Accessor { T *data; int stride[N]; };
__global__ void dft(const float *in, thrust::complex<float> *out, int rows, int cols)
{
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= rows || i >= cols) return;
  thrust::complex<float> sum = 0;
  for (int k = 0; k < cols; ++k)
    sum += thrust::complex<float>(in[j * cols + k] * cosf(i * k), sinf(i * k));
  out[j * cols + i] = sum;
}
__global__ void scale(Accessor<float, 2> a, const float *s, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a.data[i * a.stride[0]] *= s[i];
}
int main()
{
  float *in, *s; thrust::complex<float> *out;
  cudaMalloc(&in, 64 * 64 * sizeof(float)); cudaMalloc(&s, 64 * sizeof(float));
  cudaMalloc(&out, 64 * 64 * sizeof(thrust::complex<float>));
  dft<<<dim3(4, 4), dim3(16, 16)>>>(in, out, 64, 64);
  Accessor<float, 2> a = {in, {1, 64}};
  scale<<<1, 64>>>(a, s, 64);
  cudaDeviceSynchronize();
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    assert_read(kernels, "dft")
    assert_read(kernels, "scale")
    assert not out.exists() or "dft" not in [k["name"] for k in report["kernels"]
                                              if k["action"] != "unchanged"]


def test_typedefs_of_structs_and_objects_built_by_constructors(write_cu, tmp_path, nvcc):
    """`typedef struct _Sphere Sphere;` in a kernel's parameters is read as C names it
    (`struct _Sphere`), and a local object built by a constructor (`RNG rng(seed);`) is
    an opaque statement: the kernel reaches the model (judged), what is emitted
    compiles."""
    source = write_cu("""
typedef struct _Sphere { float x, y, z, r; } Sphere;
typedef struct _Plane { float n[3]; float d; } Plane;
struct RNG {
  unsigned state;
  __device__ RNG(unsigned seed) : state(seed * 2654435761u + 1u) {}
  __device__ float next() { state = state * 1664525u + 1013904223u; return state * 2.3283064e-10f; }
};
__global__ void shade(unsigned char *img, const Sphere *spheres, const Plane plane, int h, int w)
{
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (y < h && x < w) {
    RNG rng(y * w + x);
    float s = spheres[0].r * plane.d + rng.next();
    img[y * w + x] = (unsigned char)(s * 255.0f);
  }
}
__global__ void radii(const Sphere *spheres, float *r, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) r[i] = spheres[i].r;
}
int main()
{
  unsigned char *img; Sphere *s; float *r; Plane p = {{0, 1, 0}, 0.5f};
  cudaMalloc(&img, 256 * 256); cudaMalloc(&s, 16 * sizeof(Sphere)); cudaMalloc(&r, 16 * sizeof(float));
  shade<<<dim3(16, 16), dim3(16, 16)>>>(img, s, p, 256, 256);
  radii<<<1, 16>>>(s, r, 16);
  cudaDeviceSynchronize();
  return 0;
}
""")
    kernels, report, out = transformed(source, tmp_path)
    assert_read(kernels, "shade")
    assert "opaque" in kernels["shade"][2], kernels
    assert_read(kernels, "radii")
    if out.exists() and out.read_text() != source.read_text():
        compile_sm90(nvcc, out)
