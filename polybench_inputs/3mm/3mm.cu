/*
 * 3mm.cu -- three matrix products: E = A B; F = C D; G = E F.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "3mm.cuh"

void init_array(int ni, int nj, int nk, int nl, int nm, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C, DATA_TYPE *D)
{
  int i, j;

  for (i = 0; i < _PB_NI; i++)
    for (j = 0; j < _PB_NK; j++)
      A[i * NK + j] = (DATA_TYPE)((i * j) % 19) / 19.0f;

  for (i = 0; i < _PB_NK; i++)
    for (j = 0; j < _PB_NJ; j++)
      B[i * NJ + j] = (DATA_TYPE)((i * (j + 1) + 3) % 23) / 23.0f;

  for (i = 0; i < _PB_NJ; i++)
    for (j = 0; j < _PB_NM; j++)
      C[i * NM + j] = (DATA_TYPE)((i * (j + 3) + 1) % 29) / 29.0f;

  for (i = 0; i < _PB_NM; i++)
    for (j = 0; j < _PB_NL; j++)
      D[i * NL + j] = (DATA_TYPE)((i * (j + 2) + 2) % 31) / 31.0f;
}

void mm3_cpu(int ni, int nj, int nk, int nl, int nm, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C,
             DATA_TYPE *D, DATA_TYPE *E, DATA_TYPE *F, DATA_TYPE *G)
{
  int i, j, k;

  /* E := A*B */
  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NJ; j++) {
      E[i * NJ + j] = 0;
      for (k = 0; k < _PB_NK; ++k)
        E[i * NJ + j] += A[i * NK + k] * B[k * NJ + j];
    }
  }

  /* F := C*D */
  for (i = 0; i < _PB_NJ; i++) {
    for (j = 0; j < _PB_NL; j++) {
      F[i * NL + j] = 0;
      for (k = 0; k < _PB_NM; ++k)
        F[i * NL + j] += C[i * NM + k] * D[k * NL + j];
    }
  }

  /* G := E*F */
  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NL; j++) {
      G[i * NL + j] = 0;
      for (k = 0; k < _PB_NJ; ++k)
        G[i * NL + j] += E[i * NJ + k] * F[k * NL + j];
    }
  }
}

/* E = A B */
__global__ void mm3_kernel1(int ni, int nj, int nk, int nl, int nm, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *E)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int k;

  if ((i < _PB_NI) && (j < _PB_NJ)) {
    E[i * NJ + j] = 0;
    for (k = 0; k < _PB_NK; k++)
      E[i * NJ + j] += A[i * NK + k] * B[k * NJ + j];
  }
}

/* F = C D */
__global__ void mm3_kernel2(int ni, int nj, int nk, int nl, int nm, DATA_TYPE *C, DATA_TYPE *D, DATA_TYPE *F)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int k;

  if ((i < _PB_NJ) && (j < _PB_NL)) {
    F[i * NL + j] = 0;
    for (k = 0; k < _PB_NM; k++)
      F[i * NL + j] += C[i * NM + k] * D[k * NL + j];
  }
}

/* G = E F */
__global__ void mm3_kernel3(int ni, int nj, int nk, int nl, int nm, DATA_TYPE *E, DATA_TYPE *F, DATA_TYPE *G)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int k;

  if ((i < _PB_NI) && (j < _PB_NL)) {
    G[i * NL + j] = 0;
    for (k = 0; k < _PB_NJ; k++)
      G[i * NL + j] += E[i * NJ + k] * F[k * NL + j];
  }
}

void compareResults(int ni, int nl, DATA_TYPE *G, DATA_TYPE *G_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < ni; i++)
    for (j = 0; j < nl; j++)
      if (percentDiff(G[i * NL + j], G_outputFromGpu[i * NL + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void mm3Cuda(int ni, int nj, int nk, int nl, int nm, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C,
             DATA_TYPE *D, DATA_TYPE *G_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *B_gpu, *C_gpu, *D_gpu, *E_gpu, *F_gpu, *G_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NK));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NK * NJ));
  CUDA_CHECK(cudaMalloc((void **)&C_gpu, sizeof(DATA_TYPE) * NJ * NM));
  CUDA_CHECK(cudaMalloc((void **)&D_gpu, sizeof(DATA_TYPE) * NM * NL));
  CUDA_CHECK(cudaMalloc((void **)&E_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CHECK(cudaMalloc((void **)&F_gpu, sizeof(DATA_TYPE) * NJ * NL));
  CUDA_CHECK(cudaMalloc((void **)&G_gpu, sizeof(DATA_TYPE) * NI * NL));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NJ * NM, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(D_gpu, D, sizeof(DATA_TYPE) * NM * NL, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid1((size_t)(ceil(((float)NJ) / ((float)DIM_THREAD_BLOCK_X))), (size_t)(ceil(((float)NI) / ((float)DIM_THREAD_BLOCK_Y))));
  dim3 grid2((size_t)(ceil(((float)NL) / ((float)DIM_THREAD_BLOCK_X))), (size_t)(ceil(((float)NJ) / ((float)DIM_THREAD_BLOCK_Y))));
  dim3 grid3((size_t)(ceil(((float)NL) / ((float)DIM_THREAD_BLOCK_X))), (size_t)(ceil(((float)NI) / ((float)DIM_THREAD_BLOCK_Y))));

  t_start = rtclock();
  mm3_kernel1<<<grid1, block>>>(ni, nj, nk, nl, nm, A_gpu, B_gpu, E_gpu);
  cudaDeviceSynchronize();
  mm3_kernel2<<<grid2, block>>>(ni, nj, nk, nl, nm, C_gpu, D_gpu, F_gpu);
  cudaDeviceSynchronize();
  mm3_kernel3<<<grid3, block>>>(ni, nj, nk, nl, nm, E_gpu, F_gpu, G_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(G_outputFromGpu, G_gpu, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(B_gpu);
  cudaFree(C_gpu);
  cudaFree(D_gpu);
  cudaFree(E_gpu);
  cudaFree(F_gpu);
  cudaFree(G_gpu);
}

int main(int argc, char **argv)
{
  double t_start, t_end;
  DATA_TYPE *A, *B, *C, *D, *E, *F, *G, *G_outputFromGpu;

  A = (DATA_TYPE *)malloc(NI * NK * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)malloc(NK * NJ * sizeof(DATA_TYPE));
  C = (DATA_TYPE *)malloc(NJ * NM * sizeof(DATA_TYPE));
  D = (DATA_TYPE *)malloc(NM * NL * sizeof(DATA_TYPE));
  E = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  F = (DATA_TYPE *)malloc(NJ * NL * sizeof(DATA_TYPE));
  G = (DATA_TYPE *)malloc(NI * NL * sizeof(DATA_TYPE));
  G_outputFromGpu = (DATA_TYPE *)malloc(NI * NL * sizeof(DATA_TYPE));

  init_array(NI, NJ, NK, NL, NM, A, B, C, D);

  GPU_argv_init();
  mm3Cuda(NI, NJ, NK, NL, NM, A, B, C, D, G_outputFromGpu);

  t_start = rtclock();
  mm3_cpu(NI, NJ, NK, NL, NM, A, B, C, D, E, F, G);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NI, NL, G, G_outputFromGpu);

  free(A);
  free(B);
  free(C);
  free(D);
  free(E);
  free(F);
  free(G);
  free(G_outputFromGpu);

  return 0;
}
