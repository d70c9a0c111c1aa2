// Naive one-thread-per-row kernels: polycoal makes the threads walk the rows.
#include <cuda_runtime.h>
#include "sizes.cuh"

__global__ void scale_rows(const float *__restrict__ in, float *__restrict__ out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    for (int j = 0; j < M; j++)
      out[i * M + j] = 2.0f * in[i * M + j] + 1.0f;
  }
}

__global__ void row_sums(const float *__restrict__ in, float *__restrict__ sums)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    sums[i] = 0.0f;
    for (int j = 0; j < M; j++)
      sums[i] += in[i * M + j];
  }
}

void run_rows(const float *in, float *scaled, float *sums)
{
  float *in_gpu, *out_gpu, *sums_gpu;
  cudaMalloc((void **)&in_gpu, sizeof(float) * N * M);
  cudaMalloc((void **)&out_gpu, sizeof(float) * N * M);
  cudaMalloc((void **)&sums_gpu, sizeof(float) * N);
  cudaMemcpy(in_gpu, in, sizeof(float) * N * M, cudaMemcpyHostToDevice);
  dim3 block(256);
  dim3 grid((N + 255) / 256);
  scale_rows<<<grid, block>>>(in_gpu, out_gpu);
  row_sums<<<grid, block>>>(in_gpu, sums_gpu);
  cudaMemcpy(scaled, out_gpu, sizeof(float) * N * M, cudaMemcpyDeviceToHost);
  cudaMemcpy(sums, sums_gpu, sizeof(float) * N, cudaMemcpyDeviceToHost);
  cudaFree(in_gpu);
  cudaFree(out_gpu);
  cudaFree(sums_gpu);
}
