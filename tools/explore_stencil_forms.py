"""Hand-written variants of PolyBench/GPU's 2-D convolution (a 3 x 3 stencil, B[i][j] from
A's nine neighbours, float), timed on the device beside a copy of the same bytes, to see
where the kernel as written loses against its copy bound and which form polycoal should
generate.

    python tools/explore_stencil_forms.py [--n 4096] [--repeat 20]

Needs CuPy. v0: as PolyBench writes it (blocks of 32 x 8, a thread an output); v1: v0
with A read through __restrict__ const (the read-only path, what placement gives it);
v1 also in blocks of 128 x 2; v3<4> (in both shapes): each thread four outputs down a
column, the three rows of its window kept in registers as it slides (six rows read for
four outputs instead of twelve); v3<8> eight. Each timed alone between two events (launch included), the median of --repeat
after a warm-up; each result checked against v0's. The reference: CuPy's copy of A into
B (the bound's bytes, read + written). Not a unit test: an exploration whose figures
BENCHMARKS.md quotes.
"""
import argparse
import os
import sys

import cupy as cp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_copy_reference import timed  # noqa: E402  (median of event-timed runs)

STENCIL = ("0.25f * {a}[(i - 1) * n + (j - 1)] + -0.40f * {a}[(i - 1) * n + j] + "
           "0.30f * {a}[(i - 1) * n + (j + 1)] + 0.45f * {a}[i * n + (j - 1)] + "
           "0.55f * {a}[i * n + j] + 0.65f * {a}[i * n + (j + 1)] + "
           "-0.70f * {a}[(i + 1) * n + (j - 1)] + -0.85f * {a}[(i + 1) * n + j] + "
           "0.15f * {a}[(i + 1) * n + (j + 1)]")

SOURCE = r"""
extern "C" __global__ void v0(int n, float *A, float *B) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n - 1 && j < n - 1 && i > 0 && j > 0) B[i * n + j] = %(plain)s;
}
extern "C" __global__ void v1(int n, const float *__restrict__ A, float *__restrict__ B) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n - 1 && j < n - 1 && i > 0 && j > 0) B[i * n + j] = %(plain)s;
}
template <int R>
__global__ void v3(int n, const float *__restrict__ A, float *__restrict__ B) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i0 = (blockIdx.y * blockDim.y + threadIdx.y) * R;
  if (j <= 0 || j >= n - 1) return;
  float r[3][3];
  for (int d = 0; d < 2; ++d) {
    int i = i0 - 1 + d;
    for (int c = 0; c < 3; ++c) r[d + 1][c] = (i >= 0 && i < n) ? A[i * n + j - 1 + c] : 0.0f;
  }
  #pragma unroll
  for (int q = 0; q < R; ++q) {
    int i = i0 + q;
    #pragma unroll
    for (int c = 0; c < 3; ++c) { r[0][c] = r[1][c]; r[1][c] = r[2][c];
                                  r[2][c] = (i + 1 < n) ? A[(i + 1) * n + j - 1 + c] : 0.0f; }
    if (i > 0 && i < n - 1)
      B[i * n + j] = 0.25f * r[0][0] + -0.40f * r[0][1] + 0.30f * r[0][2] + 0.45f * r[1][0]
                   + 0.55f * r[1][1] + 0.65f * r[1][2] + -0.70f * r[2][0] + -0.85f * r[2][1]
                   + 0.15f * r[2][2];
  }
}
""" % {"plain": STENCIL.format(a="A")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    n = args.n
    module = cp.RawModule(code=SOURCE, name_expressions=("v3<4>", "v3<8>"))
    A = cp.random.standard_normal((n, n), dtype=cp.float32)
    ref = cp.zeros_like(A)
    out = cp.zeros_like(A)
    copy = timed(cp, lambda: cp.copyto(out, A), args.repeat)
    print(f"n={n} copy {copy * 1e3:.1f} us ({2 * A.nbytes / (copy * 1e-3) / 1e9:.0f} GB/s)")
    module.get_function("v0")(((n + 31) // 32, (n + 7) // 8), (32, 8), (cp.int32(n), A, ref))
    shapes = (("v0", (32, 8), 1), ("v1", (32, 8), 1), ("v1", (128, 2), 1), ("v3<4>", (32, 8), 4),
              ("v3<4>", (128, 2), 4), ("v3<8>", (32, 8), 8), ("v3<8>", (32, 4), 8))
    for name, (bx, by), rows in shapes:
        kernel = module.get_function(name)
        grid = ((n + bx - 1) // bx, (n + by * rows - 1) // (by * rows))
        out.fill(0)
        ms = timed(cp, lambda: kernel(grid, (bx, by), (cp.int32(n), A, out)), args.repeat)
        err = float(cp.abs(out[1:-1, 1:-1] - ref[1:-1, 1:-1]).max())
        print(f"n={n} {name} {bx}x{by} {ms * 1e3:.1f} us, {copy / ms:.0%} of the copy's "
              f"speed, max error {err:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
