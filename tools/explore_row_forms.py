"""Hand-written variants of a row reduction q[x] = sum_i A[x*n + i] * p[i] (one warp a
row, lanes along i), timed on the device against cuBLAS SGEMV, to see how far polycoal's
warp-per-row form is from the copy bandwidth.

    python tools/explore_row_forms.py

Needs CuPy. v0: polycoal's form (one accumulator a lane, a shuffle tree); v1: the lane
loop unrolled by 8; v2: four accumulators a lane; v3: float4 loads. Each timed alone
between two events (launch included), median of 20 after a warm-up, at n = 4096 and
8192, with one warp a row and with 8 blocks of 256 a multiprocessor; each result checked
against cuBLAS's. Not a unit test: an exploration whose figures BENCHMARKS.md quotes.
"""
import os
import sys

import cupy as cp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_copy_reference import timed  # noqa: E402  (median of event-timed runs)
SRC = r'''
extern "C" __global__ void v0(int nx, int ny, const float *A, const float *p, float *q) {
  const int lane = threadIdx.x & 31;
  for (int x = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; x < nx; x += (blockDim.x * gridDim.x) >> 5) {
    float acc = 0;
    for (int i = lane; i < ny; i += 32) acc += A[i + (long long)ny * x] * p[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) q[x] = acc;
  }
}
extern "C" __global__ void v1(int nx, int ny, const float *A, const float *p, float *q) {
  const int lane = threadIdx.x & 31;
  for (int x = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; x < nx; x += (blockDim.x * gridDim.x) >> 5) {
    float acc = 0;
#pragma unroll 8
    for (int i = lane; i < ny; i += 32) acc += A[i + (long long)ny * x] * p[i];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) q[x] = acc;
  }
}
extern "C" __global__ void v2(int nx, int ny, const float *__restrict__ A, const float *__restrict__ p, float *q) {
  const int lane = threadIdx.x & 31;
  for (int x = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; x < nx; x += (blockDim.x * gridDim.x) >> 5) {
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int i = lane;
    for (; i + 96 < ny; i += 128) {
      a0 += A[i + (long long)ny * x] * p[i];
      a1 += A[i + 32 + (long long)ny * x] * p[i + 32];
      a2 += A[i + 64 + (long long)ny * x] * p[i + 64];
      a3 += A[i + 96 + (long long)ny * x] * p[i + 96];
    }
    for (; i < ny; i += 32) a0 += A[i + (long long)ny * x] * p[i];
    float acc = (a0 + a1) + (a2 + a3);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) q[x] = acc;
  }
}
extern "C" __global__ void v3(int nx, int ny, const float *A, const float *p, float *q) {
  const int lane = threadIdx.x & 31;
  for (int x = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; x < nx; x += (blockDim.x * gridDim.x) >> 5) {
    float acc = 0;
    const float4 *r = reinterpret_cast<const float4 *>(A + (long long)ny * x);
    const float4 *pv = reinterpret_cast<const float4 *>(p);
    for (int i = lane; i < ny / 4; i += 32) { float4 a = r[i], b = pv[i]; acc += a.x*b.x; acc += a.y*b.y; acc += a.z*b.z; acc += a.w*b.w; }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) q[x] = acc;
  }
}
'''


def main() -> int:
    module = cp.RawModule(code=SRC)
    for n in (4096, 8192):
        A = cp.random.standard_normal((n, n), dtype=cp.float32)
        p = cp.random.standard_normal(n, dtype=cp.float32)
        q = cp.zeros(n, dtype=cp.float32)
        ref = A @ p
        for name in ("v0", "v1", "v2", "v3"):
            kernel = module.get_function(name)
            for blocks in (n * 32 // 256, 132 * 8):       # a warp a row; 8 blocks an SM
                ms = timed(cp, lambda: kernel((blocks,), (256,),
                                              (cp.int32(n), cp.int32(n), A, p, q)), 20)
                err = float(cp.abs(q - ref).max())
                print(n, name, blocks, f"{ms * 1e3:.1f} us",
                      f"{A.nbytes / (ms * 1e-3) / 1e9:.0f} GB/s", f"err {err:.2e}")
        ms = timed(cp, lambda: cp.matmul(A, p, out=q), 20)
        print(n, "cublas sgemv", f"{ms * 1e3:.1f} us", f"{A.nbytes / (ms * 1e-3) / 1e9:.0f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
