/*
 * mvt.cu -- x1 = x1 + a y1 and x2 = x2 + a^T y2.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 *
 * Note: as in the published suite, the 1-D kernels run in 32x8 blocks whose
 * threadIdx.y is unused, and the kernels accumulate into x1/x2 in place:
 * the 8 copies of each thread (one per warp of the block) race on x1[i] /
 * x2[i].  The copies run the same instruction stream in near lockstep, so
 * their read-modify-writes usually collapse into one and the output matches
 * the CPU reference, but nothing guarantees it: it is a data race.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "mvt.cuh"

void init_array(int n, DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *x2, DATA_TYPE *y1, DATA_TYPE *y2)
{
  int i, j;

  for (i = 0; i < _PB_N; i++) {
    x1[i] = (DATA_TYPE)(i % 11) / 11.0f;
    x2[i] = (DATA_TYPE)((i + 5) % 13) / 13.0f;
    y1[i] = (DATA_TYPE)((i * 3) % 17) / 17.0f + 0.5f;
    y2[i] = (DATA_TYPE)((i * 5) % 29) / 29.0f + 0.5f;
    for (j = 0; j < _PB_N; j++)
      a[i * N + j] = (DATA_TYPE)((i * j + 7) % 101) / 101.0f;
  }
}

void runMvt(int n, DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *x2, DATA_TYPE *y1, DATA_TYPE *y2)
{
  int i, j;

  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_N; j++)
      x1[i] = x1[i] + a[i * N + j] * y1[j];

  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_N; j++)
      x2[i] = x2[i] + a[j * N + i] * y2[j];
}

/* x1 += a y1: thread i reads row i of a. */
__global__ void mvt_kernel1(int n, DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *y_1)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;

  if (i < _PB_N) {
    for (j = 0; j < _PB_N; j++)
      x1[i] += a[i * N + j] * y_1[j];
  }
}

/* x2 += a^T y2: thread i reads column i of a. */
__global__ void mvt_kernel2(int n, DATA_TYPE *a, DATA_TYPE *x2, DATA_TYPE *y_2)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;

  if (i < _PB_N) {
    for (j = 0; j < _PB_N; j++)
      x2[i] += a[j * N + i] * y_2[j];
  }
}

void compareResults(int n, DATA_TYPE *x1, DATA_TYPE *x1_outputFromGpu, DATA_TYPE *x2, DATA_TYPE *x2_outputFromGpu)
{
  int i, fail = 0;

  for (i = 0; i < n; i++) {
    if (percentDiff(x1[i], x1_outputFromGpu[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
      fail++;
    if (percentDiff(x2[i], x2_outputFromGpu[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
      fail++;
  }

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

void mvtCuda(int n, DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *x2, DATA_TYPE *y_1, DATA_TYPE *y_2,
             DATA_TYPE *x1_outputFromGpu, DATA_TYPE *x2_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *a_gpu, *x1_gpu, *x2_gpu, *y_1_gpu, *y_2_gpu;

  CUDA_CHECK(cudaMalloc((void **)&a_gpu, sizeof(DATA_TYPE) * N * N));
  CUDA_CHECK(cudaMalloc((void **)&x1_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&x2_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&y_1_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&y_2_gpu, sizeof(DATA_TYPE) * N));

  CUDA_CHECK(cudaMemcpy(a_gpu, a, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x1_gpu, x1, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x2_gpu, x2, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y_1_gpu, y_1, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y_2_gpu, y_2, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((size_t)ceil((float)N / ((float)DIM_THREAD_BLOCK_X)), 1);

  t_start = rtclock();
  mvt_kernel1<<<grid, block>>>(n, a_gpu, x1_gpu, y_1_gpu);
  mvt_kernel2<<<grid, block>>>(n, a_gpu, x2_gpu, y_2_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(x1_outputFromGpu, x1_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(x2_outputFromGpu, x2_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));

  cudaFree(a_gpu);
  cudaFree(x1_gpu);
  cudaFree(x2_gpu);
  cudaFree(y_1_gpu);
  cudaFree(y_2_gpu);
}

int main()
{
  double t_start, t_end;
  DATA_TYPE *a, *x1, *x2, *y_1, *y_2;
  DATA_TYPE *x1_outputFromGpu, *x2_outputFromGpu;

  a = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  x1 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  x2 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  y_1 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  y_2 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  x1_outputFromGpu = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  x2_outputFromGpu = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));

  init_array(N, a, x1, x2, y_1, y_2);

  GPU_argv_init();
  mvtCuda(N, a, x1, x2, y_1, y_2, x1_outputFromGpu, x2_outputFromGpu);

  t_start = rtclock();
  runMvt(N, a, x1, x2, y_1, y_2);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(N, x1, x1_outputFromGpu, x2, x2_outputFromGpu);

  free(a);
  free(x1);
  free(x2);
  free(y_1);
  free(y_2);
  free(x1_outputFromGpu);
  free(x2_outputFromGpu);

  return 0;
}
