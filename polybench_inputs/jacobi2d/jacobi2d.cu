/*
 * jacobi2d.cu -- 2-D Jacobi stencil, TSTEPS sweeps of a 5-point average.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "jacobi2d.cuh"

void init_array(int n, DATA_TYPE *A, DATA_TYPE *B)
{
  int i, j;

  for (i = 0; i < _PB_N; i++) {
    for (j = 0; j < _PB_N; j++) {
      A[i * N + j] = (DATA_TYPE)((i * (j + 2) + 2) % 53) / 53.0f + 1.0f;
      B[i * N + j] = (DATA_TYPE)((i * (j + 3) + 3) % 59) / 59.0f + 1.0f;
    }
  }
}

void runJacobi2DCpu(int tsteps, int n, DATA_TYPE *A, DATA_TYPE *B)
{
  int t, i, j;

  for (t = 0; t < _PB_TSTEPS; t++) {
    for (i = 1; i < _PB_N - 1; i++)
      for (j = 1; j < _PB_N - 1; j++)
        B[i * N + j] = 0.2f * (A[i * N + j] + A[i * N + (j - 1)] + A[i * N + (1 + j)] + A[(1 + i) * N + j] + A[(i - 1) * N + j]);

    for (i = 1; i < _PB_N - 1; i++)
      for (j = 1; j < _PB_N - 1; j++)
        A[i * N + j] = B[i * N + j];
  }
}

/* B = 5-point average of A on the interior. */
__global__ void runJacobiCUDA_kernel1(int n, DATA_TYPE *A, DATA_TYPE *B)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i >= 1) && (i < (_PB_N - 1)) && (j >= 1) && (j < (_PB_N - 1)))
    B[i * N + j] = 0.2f * (A[i * N + j] + A[i * N + (j - 1)] + A[i * N + (1 + j)] + A[(1 + i) * N + j] + A[(i - 1) * N + j]);
}

/* A = B on the interior. */
__global__ void runJacobiCUDA_kernel2(int n, DATA_TYPE *A, DATA_TYPE *B)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i >= 1) && (i < (_PB_N - 1)) && (j >= 1) && (j < (_PB_N - 1)))
    A[i * N + j] = B[i * N + j];
}

void compareResults(int n, DATA_TYPE *a, DATA_TYPE *a_outputFromGpu, DATA_TYPE *b, DATA_TYPE *b_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      if (percentDiff(a[i * N + j], a_outputFromGpu[i * N + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
        fail++;

  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      if (percentDiff(b[i * N + j], b_outputFromGpu[i * N + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void runJacobi2DCUDA(int tsteps, int n, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *A_outputFromGpu, DATA_TYPE *B_outputFromGpu)
{
  double t_start, t_end;
  int t;
  DATA_TYPE *Agpu, *Bgpu;

  CUDA_CHECK(cudaMalloc(&Agpu, N * N * sizeof(DATA_TYPE)));
  CUDA_CHECK(cudaMalloc(&Bgpu, N * N * sizeof(DATA_TYPE)));
  CUDA_CHECK(cudaMemcpy(Agpu, A, N * N * sizeof(DATA_TYPE), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(Bgpu, B, N * N * sizeof(DATA_TYPE), cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((unsigned int)ceil(((float)N) / ((float)block.x)), (unsigned int)ceil(((float)N) / ((float)block.y)));

  t_start = rtclock();
  for (t = 0; t < _PB_TSTEPS; t++) {
    runJacobiCUDA_kernel1<<<grid, block>>>(n, Agpu, Bgpu);
    cudaDeviceSynchronize();
    runJacobiCUDA_kernel2<<<grid, block>>>(n, Agpu, Bgpu);
    cudaDeviceSynchronize();
  }
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(A_outputFromGpu, Agpu, sizeof(DATA_TYPE) * N * N, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(B_outputFromGpu, Bgpu, sizeof(DATA_TYPE) * N * N, cudaMemcpyDeviceToHost));

  cudaFree(Agpu);
  cudaFree(Bgpu);
}

int main(int argc, char **argv)
{
  double t_start, t_end;
  DATA_TYPE *a, *b, *a_outputFromGpu, *b_outputFromGpu;

  a = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  b = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  a_outputFromGpu = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  b_outputFromGpu = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));

  init_array(N, a, b);

  GPU_argv_init();
  runJacobi2DCUDA(TSTEPS, N, a, b, a_outputFromGpu, b_outputFromGpu);

  t_start = rtclock();
  runJacobi2DCpu(TSTEPS, N, a, b);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(N, a, a_outputFromGpu, b, b_outputFromGpu);

  free(a);
  free(b);
  free(a_outputFromGpu);
  free(b_outputFromGpu);

  return 0;
}
