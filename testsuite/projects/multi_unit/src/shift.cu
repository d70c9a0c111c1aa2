// Kernels launched from another translation unit (main.cu declares them with
// prototypes): shift_rows only there, bump_rows there and here. Here, bump_rows runs on
// the first 128 rows only: a kernel made for this launch's geometry would leave the
// other rows of main.cu's launch alone.
#include <cuda_runtime.h>
#include "app.h"

__global__ void shift_rows(float *__restrict__ a, int rows, int cols)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows)
    for (int c = 0; c < cols; c++)
      a[r * cols + c] += (float)c;
}

__global__ void bump_rows(float *__restrict__ a, int rows, int cols)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows)
    for (int c = 0; c < cols; c++)
      a[r * cols + c] += 1.0f;
}

void bump_first_rows(float *d)
{
  float *d_tmp;
  cudaMalloc((void **)&d_tmp, sizeof(float) * ROWS * COLS);
  cudaMemcpy(d_tmp, d, sizeof(float) * ROWS * COLS, cudaMemcpyDeviceToDevice);
  bump_rows<<<1, 128>>>(d_tmp, ROWS, COLS);
  cudaMemcpy(d, d_tmp, sizeof(float) * ROWS * COLS, cudaMemcpyDeviceToDevice);
  cudaFree(d_tmp);
}
