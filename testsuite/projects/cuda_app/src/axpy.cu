// Left alone: its pointers may alias, and x's subscript has no bounds a launch could check.
#include <cuda_runtime.h>
#include "sizes.cuh"

__global__ void axpy(float *y, const float *x, float a, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[(i * 7) % n] + y[i];
}

void run_axpy(float *y, const float *x, float a, int n)
{
  axpy<<<(n + 255) / 256, 256>>>(y, x, a, n);
  cudaDeviceSynchronize();
}
