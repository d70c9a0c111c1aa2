/*
 * 3dconv.cu -- an 11-point stencil from the 3x3x3 neighbourhood of a 3-D grid.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 *
 * The host loops over the planes i; each launch computes one plane with a
 * 2-D grid of threads (k along x, j along y).
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "3dconv.cuh"

void init(int ni, int nj, int nk, DATA_TYPE *A)
{
  int i, j, k;

  for (i = 0; i < _PB_NI; ++i)
    for (j = 0; j < _PB_NJ; ++j)
      for (k = 0; k < _PB_NK; ++k)
        A[i * (NK * NJ) + j * NK + k] = (DATA_TYPE)((i * 5 + j * 3 + k * 7 + (i * k) % 13) % 50) / 50.0f + 0.1f;
}

void conv3D(int ni, int nj, int nk, DATA_TYPE *A, DATA_TYPE *B)
{
  int i, j, k;

  for (i = 1; i < _PB_NI - 1; ++i) {
    for (j = 1; j < _PB_NJ - 1; ++j) {
      for (k = 1; k < _PB_NK - 1; ++k) {
        B[i * (NK * NJ) + j * NK + k] =
            CM1 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k - 1)] + CM2 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k + 1)]
          + CM3 * A[(i - 1) * (NK * NJ) + (j + 1) * NK + (k - 1)] + CM4 * A[(i - 1) * (NK * NJ) + (j + 1) * NK + (k + 1)]
          + C01 * A[i * (NK * NJ) + j * NK + k] + C02 * A[i * (NK * NJ) + (j - 1) * NK + k]
          + C03 * A[i * (NK * NJ) + (j + 1) * NK + k]
          + CP1 * A[(i + 1) * (NK * NJ) + j * NK + (k - 1)] + CP2 * A[(i + 1) * (NK * NJ) + j * NK + (k + 1)]
          + CP3 * A[(i + 1) * (NK * NJ) + (j - 1) * NK + k] + CP4 * A[(i + 1) * (NK * NJ) + (j + 1) * NK + k];
      }
    }
  }
}

/* Plane i of B: one point per thread, interior points only. */
__global__ void convolution3D_kernel(int ni, int nj, int nk, DATA_TYPE *A, DATA_TYPE *B, int i)
{
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < (_PB_NI - 1)) && (j < (_PB_NJ - 1)) && (k < (_PB_NK - 1)) && (i > 0) && (j > 0) && (k > 0)) {
    B[i * (NK * NJ) + j * NK + k] =
        CM1 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k - 1)] + CM2 * A[(i - 1) * (NK * NJ) + (j - 1) * NK + (k + 1)]
      + CM3 * A[(i - 1) * (NK * NJ) + (j + 1) * NK + (k - 1)] + CM4 * A[(i - 1) * (NK * NJ) + (j + 1) * NK + (k + 1)]
      + C01 * A[i * (NK * NJ) + j * NK + k] + C02 * A[i * (NK * NJ) + (j - 1) * NK + k]
      + C03 * A[i * (NK * NJ) + (j + 1) * NK + k]
      + CP1 * A[(i + 1) * (NK * NJ) + j * NK + (k - 1)] + CP2 * A[(i + 1) * (NK * NJ) + j * NK + (k + 1)]
      + CP3 * A[(i + 1) * (NK * NJ) + (j - 1) * NK + k] + CP4 * A[(i + 1) * (NK * NJ) + (j + 1) * NK + k];
  }
}

void compareResults(int ni, int nj, int nk, DATA_TYPE *B, DATA_TYPE *B_outputFromGpu)
{
  int i, j, k, fail = 0;

  for (i = 1; i < ni - 1; ++i)
    for (j = 1; j < nj - 1; ++j)
      for (k = 1; k < nk - 1; ++k)
        if (percentDiff(B[i * (NK * NJ) + j * NK + k], B_outputFromGpu[i * (NK * NJ) + j * NK + k]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void convolution3DCuda(int ni, int nj, int nk, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *B_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *B_gpu;
  int i;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NJ * NK));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NI * NJ * NK));
  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NJ * NK, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NI * NJ * NK, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((size_t)(ceil(((float)NK) / ((float)block.x))), (size_t)(ceil(((float)NJ) / ((float)block.y))));

  t_start = rtclock();
  for (i = 1; i < _PB_NI - 1; ++i)
    convolution3D_kernel<<<grid, block>>>(ni, nj, nk, A_gpu, B_gpu, i);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(B_outputFromGpu, B_gpu, sizeof(DATA_TYPE) * NI * NJ * NK, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(B_gpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *B, *B_outputFromGpu;

  A = (DATA_TYPE *)malloc(NI * NJ * NK * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)calloc(NI * NJ * NK, sizeof(DATA_TYPE));
  B_outputFromGpu = (DATA_TYPE *)calloc(NI * NJ * NK, sizeof(DATA_TYPE));

  init(NI, NJ, NK, A);

  GPU_argv_init();
  convolution3DCuda(NI, NJ, NK, A, B, B_outputFromGpu);

  t_start = rtclock();
  conv3D(NI, NJ, NK, A, B);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NI, NJ, NK, B, B_outputFromGpu);

  free(A);
  free(B);
  free(B_outputFromGpu);

  return 0;
}
