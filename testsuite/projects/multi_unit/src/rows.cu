// Launches the header's template and the included .cu's kernel with the target's
// ROW_BLOCK: the two targets' transformed launches differ.
#include <cuda_runtime.h>
#include "app.h"
#include "kernels.cuh"
#include "detail/row_sums_impl.cu"

void run_rows(const float *in, float *out, float *sums)
{
  float *d_in, *d_out, *d_sums;
  cudaMalloc((void **)&d_in, sizeof(float) * ROWS * COLS);
  cudaMalloc((void **)&d_out, sizeof(float) * ROWS * COLS);
  cudaMalloc((void **)&d_sums, sizeof(float) * ROWS);
  cudaMemcpy(d_in, in, sizeof(float) * ROWS * COLS, cudaMemcpyHostToDevice);
  row_scale<float><<<(ROWS + ROW_BLOCK - 1) / ROW_BLOCK, ROW_BLOCK>>>(d_in, d_out, ROWS, COLS,
                                                                       2.0f);
  row_sums<<<(ROWS + ROW_BLOCK - 1) / ROW_BLOCK, ROW_BLOCK>>>(d_in, d_sums, ROWS, COLS);
  cudaMemcpy(out, d_out, sizeof(float) * ROWS * COLS, cudaMemcpyDeviceToHost);
  cudaMemcpy(sums, d_sums, sizeof(float) * ROWS, cudaMemcpyDeviceToHost);
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_sums);
}
