"""Hand-written variants of a column reduction s[j] = sum_i r[i] * A[i*n + j], timed
against cuBLAS on the device, to choose the shape polycoal generates.

    python tools/explore_column_forms.py [--n 16384] [--repeat 20]

Needs CuPy. Each variant: median of --repeat CUDA-event-timed runs after a warm-up, the
zeroing of s included where the variant accumulates with atomicAdd; every variant's
result is checked against cuBLAS's (relative L2 error). Not a unit test: an exploration
whose figures BENCHMARKS.md quotes.
"""
import argparse
import json
import statistics

SOURCE = r"""
// k columns per thread at stride 32 (a block covers 32*k columns), G threads per column,
// CHUNK rows per block along y, atomicAdd of the block's partial sums.
template <int K, int G, int CHUNK>
__device__ void split_body(int n, const float *A, const float *r, float *s) {
  __shared__ float part[G][32 * K];
  float acc[K];
  for (int c = 0; c < K; ++c) acc[c] = 0.f;
  const int x0 = blockIdx.x * 32 * K + threadIdx.x;
  for (long long chunk = blockIdx.y; chunk * CHUNK < n; chunk += gridDim.y) {
    const int first = (int)(chunk * CHUNK);
    const int last = min(n - 1, first + CHUNK - 1);
    for (int i = first + threadIdx.y; i <= last; i += G) {
      const float ri = r[i];
      #pragma unroll
      for (int c = 0; c < K; ++c)
        if (x0 + 32 * c < n) acc[c] += ri * A[(long long)n * i + x0 + 32 * c];
    }
  }
  #pragma unroll
  for (int c = 0; c < K; ++c) part[threadIdx.y][threadIdx.x + 32 * c] = acc[c];
  __syncthreads();
  if (threadIdx.y == 0) {
    #pragma unroll
    for (int c = 0; c < K; ++c) {
      float sum = 0.f;
      for (int g = 0; g < G; ++g) sum += part[g][threadIdx.x + 32 * c];
      if (x0 + 32 * c < n) atomicAdd(&s[x0 + 32 * c], sum);
    }
  }
}
#define SPLIT(K, G, CHUNK) \
  extern "C" __global__ void split_##K##_##G##_##CHUNK(int n, const float *A, const float *r, float *s) \
  { split_body<K, G, CHUNK>(n, A, r, s); }

// The row loop unrolled by U with U independent loads in flight (k = 1).
template <int G, int CHUNK, int U>
__device__ void unrolled_body(int n, const float *A, const float *r, float *s) {
  __shared__ float part[G][32];
  float acc = 0.f;
  const int x = blockIdx.x * 32 + threadIdx.x;
  if (x < n) {
    for (long long chunk = blockIdx.y; chunk * CHUNK < n; chunk += gridDim.y) {
      const int first = (int)(chunk * CHUNK);
      const int last = min(n - 1, first + CHUNK - 1);
      int i = first + threadIdx.y;
      for (; i + (U - 1) * G <= last; i += U * G) {
        float v[U];
        #pragma unroll
        for (int u = 0; u < U; ++u) v[u] = r[i + u * G] * A[(long long)n * (i + u * G) + x];
        #pragma unroll
        for (int u = 0; u < U; ++u) acc += v[u];
      }
      for (; i <= last; i += G) acc += r[i] * A[(long long)n * i + x];
    }
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && x < n) {
    float sum = 0.f;
    for (int g = 0; g < G; ++g) sum += part[g][threadIdx.x];
    atomicAdd(&s[x], sum);
  }
}
#define UNROLLED(G, CHUNK, U) \
  extern "C" __global__ void unrolled_##G##_##CHUNK##_##U(int n, const float *A, const float *r, float *s) \
  { unrolled_body<G, CHUNK, U>(n, A, r, s); }

extern "C" __global__ void zero(int n, float *s) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += blockDim.x * gridDim.x) s[j] = 0.f;
}
"""

# (columns per thread, threads per column, rows per block) of the split variants, and
# (threads per column, rows per block, unroll) of the unrolled ones: instantiated below
SPLITS = [(1, 8, 512), (2, 8, 512), (4, 8, 512), (2, 4, 512), (4, 4, 512), (1, 8, 1024),
          (2, 8, 1024), (4, 8, 1024), (2, 8, 256), (4, 4, 256), (1, 16, 1024), (2, 16, 1024),
          (8, 4, 512), (8, 4, 1024)]
UNROLLS = [(8, 512, 4), (8, 1024, 4), (8, 512, 2)]
VARIANTS = ([(f"split_{k}_{g}_{c}", k, g, c) for k, g, c in SPLITS]
            + [(f"unrolled_{g}_{c}_{u}", 1, g, c) for g, c, u in UNROLLS])
SOURCE += "".join(f"SPLIT({k}, {g}, {c})\n" for k, g, c in SPLITS) \
    + "".join(f"UNROLLED({g}, {c}, {u})\n" for g, c, u in UNROLLS)


def main() -> None:
    import cupy as cp
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    n = args.n
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=None,
                          translate_cucomplex=False)
    rng = cp.random.default_rng(1)
    A = rng.random((n, n), dtype=cp.float32)
    r = rng.random(n, dtype=cp.float32)
    s = cp.zeros(n, dtype=cp.float32)
    reference = r @ A

    def timed(run):
        run()
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(args.repeat):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
        return statistics.median(times)

    results = [{"variant": "cuBLAS (r @ A)", "ms": timed(lambda: r @ A)}]
    zero = module.get_function("zero")
    for name, k, g, chunk in VARIANTS:
        kernel = module.get_function(name)
        grid = ((n + 32 * k - 1) // (32 * k), min(65535, (n + chunk - 1) // chunk))

        def run(kernel=kernel, grid=grid, g=g):
            zero(((n + 255) // 256,), (256,), (cp.int32(n), s))
            kernel(grid, (32, g), (cp.int32(n), A, r, s))
        ms = timed(run)
        error = float(cp.linalg.norm(s - reference) / cp.linalg.norm(reference))
        results.append({"variant": name, "ms": ms, "rel_l2": error})
    bytes_moved = 4 * (n * n + 2 * n)
    for row in results:
        row["GBps"] = bytes_moved / row["ms"] / 1e6
        print(json.dumps(row))


if __name__ == "__main__":
    main()
