// The second translation unit launching row_scale<float> (and row_scale<double>); its
// launches do not depend on ROW_BLOCK, so both targets' outputs are the same.
#include <cuda_runtime.h>
#include "app.h"
#include "kernels.cuh"

void run_cols(const float *in, float *out, double *wide)
{
  float *d_in, *d_out;
  double *d_win, *d_wout;
  cudaMalloc((void **)&d_in, sizeof(float) * ROWS * COLS);
  cudaMalloc((void **)&d_out, sizeof(float) * ROWS * COLS);
  cudaMalloc((void **)&d_win, sizeof(double) * ROWS * COLS);
  cudaMalloc((void **)&d_wout, sizeof(double) * ROWS * COLS);
  cudaMemcpy(d_in, in, sizeof(float) * ROWS * COLS, cudaMemcpyHostToDevice);
  row_scale<float><<<(ROWS + 63) / 64, 64>>>(d_in, d_out, ROWS, COLS, -0.5f);
  cudaMemcpy(out, d_out, sizeof(float) * ROWS * COLS, cudaMemcpyDeviceToHost);
  for (int k = 0; k < ROWS * COLS; k++)
    wide[k] = in[k];
  cudaMemcpy(d_win, wide, sizeof(double) * ROWS * COLS, cudaMemcpyHostToDevice);
  row_scale<double><<<(ROWS + 31) / 32, 32>>>(d_win, d_wout, ROWS, COLS, 0.25);
  cudaMemcpy(wide, d_wout, sizeof(double) * ROWS * COLS, cudaMemcpyDeviceToHost);
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_win);
  cudaFree(d_wout);
}
