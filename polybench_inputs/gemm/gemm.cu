/*
 * gemm.cu -- C = alpha A B + beta C.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "gemm.cuh"

void init(int ni, int nj, int nk, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C)
{
  int i, j;

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NK; j++)
      A[i * NK + j] = (DATA_TYPE)((i * j + 1) % 31) / 31.0f;

  for (i = 0; i < _PB_NK; i++)
    for (j = 0; j < _PB_NJ; j++)
      B[i * NJ + j] = (DATA_TYPE)((i * (j + 1) + 2) % 37) / 37.0f;

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NJ; j++)
      C[i * NJ + j] = (DATA_TYPE)((i * (j + 2)) % 41) / 41.0f;
}

void gemm(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C)
{
  int i, j, k;

  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NJ; j++) {
      C[i * NJ + j] *= beta;
      for (k = 0; k < _PB_NK; k++)
        C[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j];
    }
  }
}

/* One element of c per thread. */
__global__ void gemm_kernel(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta,
                            DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int k;

  if ((i < _PB_NI) && (j < _PB_NJ)) {
    c[i * NJ + j] *= beta;
    for (k = 0; k < _PB_NK; k++)
      c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
  }
}

void compareResults(int ni, int nj, DATA_TYPE *C, DATA_TYPE *C_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++)
      if (percentDiff(C[i * NJ + j], C_outputFromGpu[i * NJ + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void gemmCuda(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *B,
              DATA_TYPE *C, DATA_TYPE *C_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *B_gpu, *C_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NK));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NK * NJ));
  CUDA_CHECK(cudaMalloc((void **)&C_gpu, sizeof(DATA_TYPE) * NI * NJ));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));

  t_start = rtclock();
  gemm_kernel<<<grid, block>>>(ni, nj, nk, alpha, beta, A_gpu, B_gpu, C_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(C_outputFromGpu, C_gpu, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(B_gpu);
  cudaFree(C_gpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *B, *C, *C_outputFromGpu;

  A = (DATA_TYPE *)malloc(NI * NK * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)malloc(NK * NJ * sizeof(DATA_TYPE));
  C = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  C_outputFromGpu = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));

  init(NI, NJ, NK, A, B, C);

  GPU_argv_init();
  gemmCuda(NI, NJ, NK, ALPHA, BETA, A, B, C, C_outputFromGpu);

  t_start = rtclock();
  gemm(NI, NJ, NK, ALPHA, BETA, A, B, C);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NI, NJ, C, C_outputFromGpu);

  free(A);
  free(B);
  free(C);
  free(C_outputFromGpu);

  return 0;
}
