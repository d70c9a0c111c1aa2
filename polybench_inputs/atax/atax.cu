/*
 * atax.cu -- y = A^T (A x), two matrix-vector kernels.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "atax.cuh"

void init_array(int nx, int ny, DATA_TYPE *x, DATA_TYPE *A)
{
  int i, j;

  for (j = 0; j < _PB_NY; j++)
    x[j] = 1.0f + (DATA_TYPE)(j % 23) / 23.0f;

  for (i = 0; i < _PB_NX; i++)
    for (j = 0; j < _PB_NY; j++)
      A[i * NY + j] = (DATA_TYPE)((i * (j + 1) + 3) % NX) / (DATA_TYPE)NX;
}

void atax_cpu(int nx, int ny, DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *tmp)
{
  int i, j;

  for (j = 0; j < _PB_NY; j++)
    y[j] = 0;

  for (i = 0; i < _PB_NX; i++) {
    tmp[i] = 0;
    for (j = 0; j < _PB_NY; j++)
      tmp[i] = tmp[i] + A[i * NY + j] * x[j];
    for (j = 0; j < _PB_NY; j++)
      y[j] = y[j] + A[i * NY + j] * tmp[i];
  }
}

/* tmp = A x: one row of A per thread. */
__global__ void atax_kernel1(int nx, int ny, DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *tmp)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;

  if (i < _PB_NX) {
    tmp[i] = 0;
    for (j = 0; j < _PB_NY; j++)
      tmp[i] += A[i * NY + j] * x[j];
  }
}

/* y = A^T tmp: one column of A per thread. */
__global__ void atax_kernel2(int nx, int ny, DATA_TYPE *A, DATA_TYPE *y, DATA_TYPE *tmp)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i;

  if (j < _PB_NY) {
    y[j] = 0;
    for (i = 0; i < _PB_NX; i++)
      y[j] += A[i * NY + j] * tmp[i];
  }
}

void compareResults(int ny, DATA_TYPE *y, DATA_TYPE *y_outputFromGpu)
{
  int i, fail = 0;

  for (i = 0; i < ny; i++)
    if (percentDiff(y[i], y_outputFromGpu[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
      fail++;

  fprintf(stderr, "Non-Matching CPU-GPU Outputs Beyond Error Threshold of %4.2f Percent: %d\n",
          PERCENT_DIFF_ERROR_THRESHOLD, fail);
}

void GPU_argv_init()
{
  cudaDeviceProp deviceProp;
  CUDA_CHECK(cudaGetDeviceProperties(&deviceProp, GPU_DEVICE));
  fprintf(stderr, "setting device %d with name %s\n", GPU_DEVICE, deviceProp.name);
  CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
}

void ataxCuda(int nx, int ny, DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *y_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *x_gpu, *y_gpu, *tmp_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NX * NY));
  CUDA_CHECK(cudaMalloc((void **)&x_gpu, sizeof(DATA_TYPE) * NY));
  CUDA_CHECK(cudaMalloc((void **)&y_gpu, sizeof(DATA_TYPE) * NY));
  CUDA_CHECK(cudaMalloc((void **)&tmp_gpu, sizeof(DATA_TYPE) * NX));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x_gpu, x, sizeof(DATA_TYPE) * NY, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid1((size_t)(ceil(((float)NX) / ((float)block.x))), 1);
  dim3 grid2((size_t)(ceil(((float)NY) / ((float)block.x))), 1);

  t_start = rtclock();
  atax_kernel1<<<grid1, block>>>(nx, ny, A_gpu, x_gpu, tmp_gpu);
  cudaDeviceSynchronize();
  atax_kernel2<<<grid2, block>>>(nx, ny, A_gpu, y_gpu, tmp_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(y_outputFromGpu, y_gpu, sizeof(DATA_TYPE) * NY, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(x_gpu);
  cudaFree(y_gpu);
  cudaFree(tmp_gpu);
}

int main(int argc, char **argv)
{
  double t_start, t_end;
  DATA_TYPE *A, *x, *y, *y_outputFromGpu, *tmp;

  A = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
  x = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
  y = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
  y_outputFromGpu = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
  tmp = (DATA_TYPE *)malloc(NX * sizeof(DATA_TYPE));

  init_array(NX, NY, x, A);

  GPU_argv_init();
  ataxCuda(NX, NY, A, x, y_outputFromGpu);

  t_start = rtclock();
  atax_cpu(NX, NY, A, x, y, tmp);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NY, y, y_outputFromGpu);

  free(A);
  free(x);
  free(y);
  free(y_outputFromGpu);
  free(tmp);

  return 0;
}
