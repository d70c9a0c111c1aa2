// Runs every translation unit's kernels and prints checksums (rounded: a transformed
// build may add in another order).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "app.h"

__global__ void shift_rows(float *__restrict__ a, int rows, int cols);
__global__ void bump_rows(float *__restrict__ a, int rows, int cols);
void bump_first_rows(float *d);

static double checksum(const float *a, int n)
{
  double s = 0.0;
  for (int k = 0; k < n; k++)
    s += a[k] * (1.0 + (k % 7) * 0.125);
  return s;
}

int main()
{
  float *in = (float *)malloc(sizeof(float) * ROWS * COLS);
  float *out = (float *)malloc(sizeof(float) * ROWS * COLS);
  float *sums = (float *)malloc(sizeof(float) * ROWS);
  double *wide = (double *)malloc(sizeof(double) * ROWS * COLS);
  for (int k = 0; k < ROWS * COLS; k++)
    in[k] = (float)((k * 37) % 101) / 8.0f;
  run_rows(in, out, sums);
  printf("scaled %.6e\nsums %.6e\n", checksum(out, ROWS * COLS), checksum(sums, ROWS));
  run_cols(in, out, wide);
  double w = 0.0;
  for (int k = 0; k < ROWS * COLS; k++)
    w += wide[k] * (k % 5);
  printf("cols %.6e\nwide %.6e\n", checksum(out, ROWS * COLS), w);
  float *d;
  cudaMalloc((void **)&d, sizeof(float) * ROWS * COLS);
  cudaMemcpy(d, in, sizeof(float) * ROWS * COLS, cudaMemcpyHostToDevice);
  shift_rows<<<(ROWS + 127) / 128, 128>>>(d, ROWS, COLS);
  bump_rows<<<(ROWS + 255) / 256, 256>>>(d, ROWS, COLS);
  bump_first_rows(d);
  cudaMemcpy(out, d, sizeof(float) * ROWS * COLS, cudaMemcpyDeviceToHost);
  cudaFree(d);
  printf("shifted %.6e\n", checksum(out, ROWS * COLS));
  free(in);
  free(out);
  free(sums);
  free(wide);
  return 0;
}
