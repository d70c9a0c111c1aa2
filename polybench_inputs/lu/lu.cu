/*
 * lu.cu -- LU decomposition without pivoting, in place (U has a unit diagonal).
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 *
 * The host loops over the pivot k: kernel 1 divides row k right of the
 * diagonal by A[k][k]; kernel 2 updates the trailing submatrix i, j > k.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "lu.cuh"

void init_array(int n, DATA_TYPE *A)
{
  int i, j;

  /* Strictly diagonally dominant: no pivoting needed. */
  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_N; j++)
      A[i * N + j] = (DATA_TYPE)(((i + 1) * (j + 1)) % 19) / 19.0f + (i == j ? (DATA_TYPE)N : 0.0f);
}

void lu(int n, DATA_TYPE *A)
{
  int i, j, k;

  for (k = 0; k < _PB_N; k++) {
    for (j = k + 1; j < _PB_N; j++)
      A[k * N + j] = A[k * N + j] / A[k * N + k];

    for (i = k + 1; i < _PB_N; i++)
      for (j = k + 1; j < _PB_N; j++)
        A[i * N + j] = A[i * N + j] - A[i * N + k] * A[k * N + j];
  }
}

/* Row k, right of the diagonal: one element per thread. */
__global__ void lu_kernel1(int n, DATA_TYPE *A, int k)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;

  if ((j > k) && (j < _PB_N))
    A[k * N + j] = A[k * N + j] / A[k * N + k];
}

/* Trailing submatrix i, j > k: one element per thread. */
__global__ void lu_kernel2(int n, DATA_TYPE *A, int k)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i > k) && (j > k) && (i < _PB_N) && (j < _PB_N))
    A[i * N + j] = A[i * N + j] - A[i * N + k] * A[k * N + j];
}

void compareResults(int n, DATA_TYPE *A_cpu, DATA_TYPE *A_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      if (percentDiff(A_cpu[i * N + j], A_outputFromGpu[i * N + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void luCuda(int n, DATA_TYPE *A, DATA_TYPE *A_outputFromGpu)
{
  double t_start, t_end;
  int k;
  DATA_TYPE *AGpu;

  CUDA_CHECK(cudaMalloc(&AGpu, sizeof(DATA_TYPE) * N * N));
  CUDA_CHECK(cudaMemcpy(AGpu, A, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));

  dim3 block1(DIM_THREAD_BLOCK_KERNEL_1_X, DIM_THREAD_BLOCK_KERNEL_1_Y);
  dim3 block2(DIM_THREAD_BLOCK_KERNEL_2_X, DIM_THREAD_BLOCK_KERNEL_2_Y);
  dim3 grid1(1, 1, 1);
  dim3 grid2(1, 1, 1);

  t_start = rtclock();
  for (k = 0; k < _PB_N; k++) {
    grid1.x = (size_t)(ceil(((float)N) / ((float)block1.x)));
    lu_kernel1<<<grid1, block1>>>(n, AGpu, k);
    cudaDeviceSynchronize();

    grid2.x = (size_t)(ceil(((float)N) / ((float)block2.x)));
    grid2.y = (size_t)(ceil(((float)N) / ((float)block2.y)));
    lu_kernel2<<<grid2, block2>>>(n, AGpu, k);
    cudaDeviceSynchronize();
  }
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(A_outputFromGpu, AGpu, sizeof(DATA_TYPE) * N * N, cudaMemcpyDeviceToHost));
  cudaFree(AGpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *A_outputFromGpu;

  A = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  A_outputFromGpu = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));

  init_array(N, A);

  GPU_argv_init();
  luCuda(N, A, A_outputFromGpu);

  t_start = rtclock();
  lu(N, A);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(N, A, A_outputFromGpu);

  free(A);
  free(A_outputFromGpu);

  return 0;
}
