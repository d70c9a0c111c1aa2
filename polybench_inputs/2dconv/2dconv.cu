/*
 * 2dconv.cu -- 3x3 convolution of an NI x NJ image (interior points only).
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "2dconv.cuh"

void init(int ni, int nj, DATA_TYPE *A)
{
  int i, j;

  for (i = 0; i < _PB_NI; ++i)
    for (j = 0; j < _PB_NJ; ++j)
      A[i * NJ + j] = (DATA_TYPE)((i * 3 + j * 7 + (i * j) % 11) % 64) / 64.0f + 0.125f;
}

void conv2D(int ni, int nj, DATA_TYPE *A, DATA_TYPE *B)
{
  int i, j;

  for (i = 1; i < _PB_NI - 1; ++i) {
    for (j = 1; j < _PB_NJ - 1; ++j) {
      B[i * NJ + j] = C11 * A[(i - 1) * NJ + (j - 1)] + C12 * A[(i - 1) * NJ + j] + C13 * A[(i - 1) * NJ + (j + 1)]
                    + C21 * A[i * NJ + (j - 1)] + C22 * A[i * NJ + j] + C23 * A[i * NJ + (j + 1)]
                    + C31 * A[(i + 1) * NJ + (j - 1)] + C32 * A[(i + 1) * NJ + j] + C33 * A[(i + 1) * NJ + (j + 1)];
    }
  }
}

/* One output point per thread; the border is left alone. */
__global__ void convolution2D_kernel(int ni, int nj, DATA_TYPE *A, DATA_TYPE *B)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_NI - 1) && (j < _PB_NJ - 1) && (i > 0) && (j > 0)) {
    B[i * NJ + j] = C11 * A[(i - 1) * NJ + (j - 1)] + C12 * A[(i - 1) * NJ + j] + C13 * A[(i - 1) * NJ + (j + 1)]
                  + C21 * A[i * NJ + (j - 1)] + C22 * A[i * NJ + j] + C23 * A[i * NJ + (j + 1)]
                  + C31 * A[(i + 1) * NJ + (j - 1)] + C32 * A[(i + 1) * NJ + j] + C33 * A[(i + 1) * NJ + (j + 1)];
  }
}

void compareResults(int ni, int nj, DATA_TYPE *B, DATA_TYPE *B_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 1; i < ni - 1; i++)
    for (j = 1; j < nj - 1; j++)
      if (percentDiff(B[i * NJ + j], B_outputFromGpu[i * NJ + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void convolution2DCuda(int ni, int nj, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *B_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *B_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(B_gpu, 0, sizeof(DATA_TYPE) * NI * NJ));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((size_t)ceil(((float)NJ) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));

  t_start = rtclock();
  convolution2D_kernel<<<grid, block>>>(ni, nj, A_gpu, B_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(B_outputFromGpu, B_gpu, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(B_gpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *B, *B_outputFromGpu;

  A = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)calloc(NI * NJ, sizeof(DATA_TYPE));
  B_outputFromGpu = (DATA_TYPE *)calloc(NI * NJ, sizeof(DATA_TYPE));

  init(NI, NJ, A);

  GPU_argv_init();
  convolution2DCuda(NI, NJ, A, B, B_outputFromGpu);

  t_start = rtclock();
  conv2D(NI, NJ, A, B);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NI, NJ, B, B_outputFromGpu);

  free(A);
  free(B);
  free(B_outputFromGpu);

  return 0;
}
