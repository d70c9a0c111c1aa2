/*
 * syr2k.cu -- symmetric rank-2k update: C = alpha A B^T + alpha B A^T + beta C.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "syr2k.cuh"

void init_arrays(int ni, int nj, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C)
{
  int i, j;

  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NJ; j++) {
      A[i * NJ + j] = (DATA_TYPE)((i * j + 5) % 37) / 37.0f;
      B[i * NJ + j] = (DATA_TYPE)(((i + 1) * (j + 2)) % 41) / 41.0f;
    }
  }

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NI; j++)
      C[i * NI + j] = (DATA_TYPE)((i * (j + 3) + 2) % 43) / 43.0f;
}

void syr2k(int ni, int nj, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C)
{
  int i, j, k;

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NI; j++)
      C[i * NI + j] *= beta;

  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NI; j++) {
      for (k = 0; k < _PB_NJ; k++) {
        C[i * NI + j] += alpha * A[i * NJ + k] * B[j * NJ + k];
        C[i * NI + j] += alpha * B[i * NJ + k] * A[j * NJ + k];
      }
    }
  }
}

/* One element of c per thread. */
__global__ void syr2k_kernel(int ni, int nj, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int k;

  if ((i < _PB_NI) && (j < _PB_NI)) {
    c[i * NI + j] *= beta;
    for (k = 0; k < _PB_NJ; k++)
      c[i * NI + j] += alpha * a[i * NJ + k] * b[j * NJ + k] + alpha * b[i * NJ + k] * a[j * NJ + k];
  }
}

void compareResults(int ni, DATA_TYPE *C, DATA_TYPE *C_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < ni; i++)
    for (j = 0; j < ni; j++)
      if (percentDiff(C[i * NI + j], C_outputFromGpu[i * NI + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void syr2kCuda(int ni, int nj, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C,
               DATA_TYPE *C_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *B_gpu, *C_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CHECK(cudaMalloc((void **)&C_gpu, sizeof(DATA_TYPE) * NI * NI));
  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NI * NI, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);

  t_start = rtclock();
  syr2k_kernel<<<dim3((size_t)ceil(((float)NI) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y))), block>>>(
      ni, nj, alpha, beta, A_gpu, B_gpu, C_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(C_outputFromGpu, C_gpu, sizeof(DATA_TYPE) * NI * NI, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(B_gpu);
  cudaFree(C_gpu);
}

int main()
{
  double t_start, t_end;
  DATA_TYPE *A, *B, *C, *C_outputFromGpu;

  A = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  C = (DATA_TYPE *)malloc(NI * NI * sizeof(DATA_TYPE));
  C_outputFromGpu = (DATA_TYPE *)malloc(NI * NI * sizeof(DATA_TYPE));

  init_arrays(NI, NJ, A, B, C);

  GPU_argv_init();
  syr2kCuda(NI, NJ, ALPHA, BETA, A, B, C, C_outputFromGpu);

  t_start = rtclock();
  syr2k(NI, NJ, ALPHA, BETA, A, B, C);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NI, C, C_outputFromGpu);

  free(A);
  free(B);
  free(C);
  free(C_outputFromGpu);

  return 0;
}
