/*
 * 2mm.cu -- two chained matrix products: tmp = alpha A B; D = beta D + tmp C.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "2mm.cuh"

void init_array(int ni, int nj, int nk, int nl, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C, DATA_TYPE *D)
{
  int i, j;

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NK; j++)
      A[i * NK + j] = (DATA_TYPE)((i * j + 2) % 23) / 23.0f;

  for (i = 0; i < _PB_NK; i++)
    for (j = 0; j < _PB_NJ; j++)
      B[i * NJ + j] = (DATA_TYPE)((i * (j + 1) + 1) % 29) / 29.0f;

  for (i = 0; i < _PB_NJ; i++)
    for (j = 0; j < _PB_NL; j++)
      C[i * NL + j] = (DATA_TYPE)((i * (j + 3)) % 31) / 31.0f;

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NL; j++)
      D[i * NL + j] = (DATA_TYPE)((i * (j + 2) + 5) % 37) / 37.0f;
}

void mm2_cpu(int ni, int nj, int nk, int nl, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *tmp,
             DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C, DATA_TYPE *D)
{
  int i, j, k;

  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NJ; j++) {
      tmp[i * NJ + j] = 0.0f;
      for (k = 0; k < _PB_NK; k++)
        tmp[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j];
    }
  }

  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NL; j++) {
      D[i * NL + j] *= beta;
      for (k = 0; k < _PB_NJ; k++)
        D[i * NL + j] += tmp[i * NJ + k] * C[k * NL + j];
    }
  }
}

/* tmp = alpha A B: one element of tmp per thread. */
__global__ void mm2_kernel1(int ni, int nj, int nk, int nl, DATA_TYPE alpha, DATA_TYPE beta,
                            DATA_TYPE *tmp, DATA_TYPE *A, DATA_TYPE *B)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_NI) && (j < _PB_NJ)) {
    tmp[i * NJ + j] = 0.0f;
    for (int k = 0; k < _PB_NK; k++)
      tmp[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j];
  }
}

/* D = beta D + tmp C: one element of D per thread. */
__global__ void mm2_kernel2(int ni, int nj, int nk, int nl, DATA_TYPE alpha, DATA_TYPE beta,
                            DATA_TYPE *tmp, DATA_TYPE *C, DATA_TYPE *D)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_NI) && (j < _PB_NL)) {
    D[i * NL + j] *= beta;
    for (int k = 0; k < _PB_NJ; k++)
      D[i * NL + j] += tmp[i * NJ + k] * C[k * NL + j];
  }
}

void compareResults(int ni, int nl, DATA_TYPE *D, DATA_TYPE *D_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < ni; i++)
    for (j = 0; j < nl; j++)
      if (percentDiff(D[i * NL + j], D_outputFromGpu[i * NL + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void mm2Cuda(int ni, int nj, int nk, int nl, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *tmp,
             DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C, DATA_TYPE *D, DATA_TYPE *D_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *tmp_gpu, *A_gpu, *B_gpu, *C_gpu, *D_gpu;

  CUDA_CHECK(cudaMalloc((void **)&tmp_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NK));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NK * NJ));
  CUDA_CHECK(cudaMalloc((void **)&C_gpu, sizeof(DATA_TYPE) * NJ * NL));
  CUDA_CHECK(cudaMalloc((void **)&D_gpu, sizeof(DATA_TYPE) * NI * NL));

  CUDA_CHECK(cudaMemcpy(tmp_gpu, tmp, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NJ * NL, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(D_gpu, D, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid1((size_t)ceil(((float)NJ) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));
  dim3 grid2((size_t)ceil(((float)NL) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));

  t_start = rtclock();
  mm2_kernel1<<<grid1, block>>>(ni, nj, nk, nl, alpha, beta, tmp_gpu, A_gpu, B_gpu);
  cudaDeviceSynchronize();
  mm2_kernel2<<<grid2, block>>>(ni, nj, nk, nl, alpha, beta, tmp_gpu, C_gpu, D_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(D_outputFromGpu, D_gpu, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyDeviceToHost));

  cudaFree(tmp_gpu);
  cudaFree(A_gpu);
  cudaFree(B_gpu);
  cudaFree(C_gpu);
  cudaFree(D_gpu);
}

int main(int argc, char **argv)
{
  double t_start, t_end;
  DATA_TYPE *tmp, *A, *B, *C, *D, *D_outputFromGpu;

  tmp = (DATA_TYPE *)calloc(NI * NJ, sizeof(DATA_TYPE));
  A = (DATA_TYPE *)malloc(NI * NK * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)malloc(NK * NJ * sizeof(DATA_TYPE));
  C = (DATA_TYPE *)malloc(NJ * NL * sizeof(DATA_TYPE));
  D = (DATA_TYPE *)malloc(NI * NL * sizeof(DATA_TYPE));
  D_outputFromGpu = (DATA_TYPE *)malloc(NI * NL * sizeof(DATA_TYPE));

  init_array(NI, NJ, NK, NL, A, B, C, D);

  GPU_argv_init();
  mm2Cuda(NI, NJ, NK, NL, ALPHA, BETA, tmp, A, B, C, D, D_outputFromGpu);

  t_start = rtclock();
  mm2_cpu(NI, NJ, NK, NL, ALPHA, BETA, tmp, A, B, C, D);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NI, NL, D, D_outputFromGpu);

  free(tmp);
  free(A);
  free(B);
  free(C);
  free(D);
  free(D_outputFromGpu);

  return 0;
}
