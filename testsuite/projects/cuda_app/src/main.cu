// Host program: runs every kernel and prints checksums (rounded: a transformed build may
// add in another order).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "sizes.cuh"

static double checksum(const float *a, int n)
{
  double s = 0.0;
  for (int k = 0; k < n; k++)
    s += a[k] * (1.0 + (k % 7) * 0.125);
  return s;
}

int main()
{
  float *in = (float *)malloc(sizeof(float) * N * M);
  float *scaled = (float *)malloc(sizeof(float) * N * M);
  float *sums = (float *)malloc(sizeof(float) * N);
  float y[4096], x[4096];
  for (int k = 0; k < N * M; k++)
    in[k] = (float)((k * 37) % 101) / 101.0f;
  for (int k = 0; k < 4096; k++) {
    x[k] = (float)(k % 13);
    y[k] = 1.0f;
  }
  run_rows(in, scaled, sums);
  float *x_gpu, *y_gpu;
  cudaMalloc((void **)&x_gpu, sizeof(x));
  cudaMalloc((void **)&y_gpu, sizeof(y));
  cudaMemcpy(x_gpu, x, sizeof(x), cudaMemcpyHostToDevice);
  cudaMemcpy(y_gpu, y, sizeof(y), cudaMemcpyHostToDevice);
  run_axpy(y_gpu, x_gpu, 0.5f, 4096);
  cudaMemcpy(y, y_gpu, sizeof(y), cudaMemcpyDeviceToHost);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(error));
    return 1;
  }
  printf("scaled %.6e\n", checksum(scaled, N * M));
  printf("sums %.6e\n", checksum(sums, N));
  printf("axpy %.6e\n", checksum(y, 4096));
  free(in);
  free(scaled);
  free(sums);
  return 0;
}
