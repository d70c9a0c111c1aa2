"""What a host loop of short launches costs, launched four ways, timed on the device: to
see how much of PolyBench/GPU's Gram-Schmidt, LU, FDTD-2D, Jacobi and ADI programs is
launch overhead and which rewrite of the loop removes it.

    python tools/explore_launch_forms.py [--launches 2048] [--n 1024] [--repeat 7]

Compiles one CUDA program with nvcc (-arch=sm_90) and runs it. The kernel: ADI's
column sweep as PolyBench writes it (thread i2 updates X and B at row i1 from row
i1 - 1, the host looping over i1), n x n floats, --launches rows. Each form runs the
whole loop, timed on the host clock from before the first launch until the device is
idle (the way the programs time themselves), the median of --repeat after a warm-up:

- sync:     a launch, then cudaDeviceSynchronize(), each trip (as written);
- async:    the launches alone, one cudaDeviceSynchronize() after the loop;
- graph:    the loop captured on a stream into a CUDA graph, instantiated, launched
            once, synchronised (capture and instantiation included: a loop run once);
- replay:   that graph launched again (what a graph costs once built);
- in-kernel: one launch, each thread running the rows itself (the host loop moved into
            the kernel: legal here because each row's element depends only on the
            same column's element of the row before).

Every form's X and B are compared with the sync form's. Not a unit test: an exploration
whose figures BENCHMARKS.md quotes.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SOURCE = r"""
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

__global__ void sweep(int n, float *A, float *B, float *X, int i1) {
  int i2 = blockIdx.x * blockDim.x + threadIdx.x;
  if (i2 < n) {
    X[i1 * n + i2] = X[i1 * n + i2] - X[(i1 - 1) * n + i2] * A[i1 * n + i2] / B[(i1 - 1) * n + i2];
    B[i1 * n + i2] = B[i1 * n + i2] - A[i1 * n + i2] * A[i1 * n + i2] / B[(i1 - 1) * n + i2];
  }
}

__global__ void sweep_rows(int n, float *A, float *B, float *X, int rows) {
  int i2 = blockIdx.x * blockDim.x + threadIdx.x;
  if (i2 < n)
    for (int i1 = 1; i1 < rows; i1++) {
      X[i1 * n + i2] = X[i1 * n + i2] - X[(i1 - 1) * n + i2] * A[i1 * n + i2] / B[(i1 - 1) * n + i2];
      B[i1 * n + i2] = B[i1 * n + i2] - A[i1 * n + i2] * A[i1 * n + i2] / B[(i1 - 1) * n + i2];
    }
}

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
  int n = atoi(argv[1]), rows = atoi(argv[2]), repeat = atoi(argv[3]);
  size_t bytes = (size_t)n * n * sizeof(float);
  std::vector<float> hA((size_t)n * n), hB((size_t)n * n), hX((size_t)n * n);
  for (size_t e = 0; e < hA.size(); ++e) {
    hA[e] = 0.5f + (e % 7) * 0.01f; hB[e] = 2.0f + (e % 5) * 0.1f; hX[e] = 1.0f + (e % 3) * 0.2f;
  }
  float *A, *B, *X;
  cudaMalloc(&A, bytes); cudaMalloc(&B, bytes); cudaMalloc(&X, bytes);
  dim3 block(256), grid((n + 255) / 256);
  std::vector<float> refX, refB;
  const char *names[] = {"sync", "async", "graph", "replay", "in-kernel"};
  printf("{\"n\": %d, \"launches\": %d, \"forms\": {", n, rows - 1);
  cudaGraphExec_t kept = nullptr;
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  for (int f = 0; f < 5; ++f) {
    std::vector<double> t;
    for (int r = 0; r <= repeat; ++r) {
      cudaMemcpy(A, hA.data(), bytes, cudaMemcpyHostToDevice);
      cudaMemcpy(B, hB.data(), bytes, cudaMemcpyHostToDevice);
      cudaMemcpy(X, hX.data(), bytes, cudaMemcpyHostToDevice);
      cudaDeviceSynchronize();
      double t0 = now();
      if (f == 0) {
        for (int i1 = 1; i1 < rows; i1++) { sweep<<<grid, block>>>(n, A, B, X, i1); cudaDeviceSynchronize(); }
      } else if (f == 1) {
        for (int i1 = 1; i1 < rows; i1++) sweep<<<grid, block>>>(n, A, B, X, i1);
        cudaDeviceSynchronize();
      } else if (f == 2) {
        cudaGraph_t g; cudaGraphExec_t e;
        cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
        for (int i1 = 1; i1 < rows; i1++) sweep<<<grid, block, 0, stream>>>(n, A, B, X, i1);
        cudaStreamEndCapture(stream, &g);
        cudaGraphInstantiate(&e, g, 0);
        cudaGraphLaunch(e, stream);
        cudaStreamSynchronize(stream);
        cudaGraphDestroy(g);
        if (kept) cudaGraphExecDestroy(kept);
        kept = e;
      } else if (f == 3) {
        cudaGraphLaunch(kept, stream);
        cudaStreamSynchronize(stream);
      } else {
        sweep_rows<<<grid, block>>>(n, A, B, X, rows);
        cudaDeviceSynchronize();
      }
      double t1 = now();
      if (r > 0) t.push_back(t1 - t0);
    }
    std::vector<float> oX((size_t)n * n), oB((size_t)n * n);
    cudaMemcpy(oX.data(), X, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(oB.data(), B, bytes, cudaMemcpyDeviceToHost);
    int bad = 0;
    if (f == 0) { refX = oX; refB = oB; }
    else for (size_t e = 0; e < oX.size(); ++e)
      bad += (oX[e] != refX[e]) || (oB[e] != refB[e]);
    std::sort(t.begin(), t.end());
    cudaError_t err = cudaGetLastError();
    printf("%s\"%s\": {\"ms\": %.4f, \"us_per_launch\": %.3f, \"mismatches\": %d, \"error\": \"%s\"}",
           f ? ", " : "", names[f], t[t.size() / 2] * 1e3, t[t.size() / 2] * 1e6 / (rows - 1), bad,
           cudaGetErrorString(err));
  }
  printf("}}\n");
  return 0;
}
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--launches", type=int, default=1023)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "launch_forms.cu"), os.path.join(tmp, "launch_forms")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", exe, src], check=True)
        out = subprocess.run([exe, str(args.n), str(args.launches + 1), str(args.repeat)],
                             check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    print(json.dumps(result, indent=1))
    return 0 if all(f["mismatches"] == 0 for f in result["forms"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
