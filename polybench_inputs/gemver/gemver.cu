/*
 * gemver.cu -- A = A + u1 v1^T + u2 v2^T;  x = x + beta A^T y + z;  w = w + alpha A x.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "gemver.cuh"

void init(int n, DATA_TYPE *A, DATA_TYPE *u1, DATA_TYPE *u2, DATA_TYPE *v1, DATA_TYPE *v2,
          DATA_TYPE *w, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *z)
{
  int i, j;

  for (i = 0; i < _PB_N; i++) {
    u1[i] = (DATA_TYPE)(i % 7) / 7.0f;
    u2[i] = (DATA_TYPE)((i + 1) % 9) / 18.0f;
    v1[i] = (DATA_TYPE)((i + 2) % 11) / 22.0f;
    v2[i] = (DATA_TYPE)((i + 3) % 13) / 26.0f;
    y[i] = (DATA_TYPE)((i * 3) % 17) / 17.0f;
    z[i] = (DATA_TYPE)((i * 5) % 19) / 19.0f;
    x[i] = 0.0f;
    w[i] = 0.0f;
    for (j = 0; j < _PB_N; j++)
      A[i * N + j] = (DATA_TYPE)((i * j + 1) % 41) / 41.0f;
  }
}

void runGemver(int n, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *u1, DATA_TYPE *u2,
               DATA_TYPE *v1, DATA_TYPE *v2, DATA_TYPE *w, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *z)
{
  int i, j;

  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_N; j++)
      A[i * N + j] = A[i * N + j] + u1[i] * v1[j] + u2[i] * v2[j];

  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_N; j++)
      x[i] = x[i] + beta * A[j * N + i] * y[j];

  for (i = 0; i < _PB_N; i++)
    x[i] = x[i] + z[i];

  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_N; j++)
      w[i] = w[i] + alpha * A[i * N + j] * x[j];
}

/* Rank-2 update: one element of a per thread (j along x, i along y). */
__global__ void gemver_kernel1(int n, DATA_TYPE *a, DATA_TYPE *v1, DATA_TYPE *v2, DATA_TYPE *u1, DATA_TYPE *u2)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_N) && (j < _PB_N))
    a[i * N + j] += u1[i] * v1[j] + u2[i] * v2[j];
}

/* x = x + beta a^T y + z: thread i walks down column i of a. */
__global__ void gemver_kernel2(int n, DATA_TYPE beta, DATA_TYPE *a, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *z)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;

  if (i < _PB_N) {
    for (j = 0; j < _PB_N; j++)
      x[i] += beta * a[j * N + i] * y[j];
    x[i] += z[i];
  }
}

/* w = w + alpha a x: thread i walks along row i of a. */
__global__ void gemver_kernel3(int n, DATA_TYPE alpha, DATA_TYPE *a, DATA_TYPE *x, DATA_TYPE *w)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;

  if (i < _PB_N) {
    for (j = 0; j < _PB_N; j++)
      w[i] += alpha * a[i * N + j] * x[j];
  }
}

void compareResults(int n, DATA_TYPE *w1, DATA_TYPE *w2)
{
  int i, fail = 0;

  for (i = 0; i < n; i++)
    if (percentDiff(w1[i], w2[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void gemverCuda(int n, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *u1, DATA_TYPE *u2,
                DATA_TYPE *v1, DATA_TYPE *v2, DATA_TYPE *w, DATA_TYPE *w_outputFromGpu,
                DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *z)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *x_gpu, *y_gpu, *z_gpu, *v1_gpu, *v2_gpu, *u1_gpu, *u2_gpu, *w_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * N * N));
  CUDA_CHECK(cudaMalloc((void **)&x_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&y_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&z_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&w_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&v1_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&v2_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&u1_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&u2_gpu, sizeof(DATA_TYPE) * N));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x_gpu, x, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y_gpu, y, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(z_gpu, z, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(w_gpu, w, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(v1_gpu, v1, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(v2_gpu, v2, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(u1_gpu, u1, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(u2_gpu, u2, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));

  dim3 block1(DIM_THREAD_BLOCK_KERNEL_1_X, DIM_THREAD_BLOCK_KERNEL_1_Y);
  dim3 grid1((size_t)(ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_1_X))),
             (size_t)(ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_1_Y))));

  dim3 block2(DIM_THREAD_BLOCK_KERNEL_2_X, DIM_THREAD_BLOCK_KERNEL_2_Y);
  dim3 grid2((size_t)(ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_2_X))), 1);

  dim3 block3(DIM_THREAD_BLOCK_KERNEL_3_X, DIM_THREAD_BLOCK_KERNEL_3_Y);
  dim3 grid3((size_t)(ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_3_X))), 1);

  t_start = rtclock();
  gemver_kernel1<<<grid1, block1>>>(n, A_gpu, v1_gpu, v2_gpu, u1_gpu, u2_gpu);
  cudaDeviceSynchronize();
  gemver_kernel2<<<grid2, block2>>>(n, beta, A_gpu, x_gpu, y_gpu, z_gpu);
  cudaDeviceSynchronize();
  gemver_kernel3<<<grid3, block3>>>(n, alpha, A_gpu, x_gpu, w_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(w_outputFromGpu, w_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(x_gpu);
  cudaFree(y_gpu);
  cudaFree(z_gpu);
  cudaFree(w_gpu);
  cudaFree(v1_gpu);
  cudaFree(v2_gpu);
  cudaFree(u1_gpu);
  cudaFree(u2_gpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *u1, *u2, *v1, *v2, *w, *w_outputFromGpu, *x, *y, *z;

  A = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  u1 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  u2 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  v1 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  v2 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  w = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  w_outputFromGpu = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  x = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  y = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  z = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));

  init(N, A, u1, u2, v1, v2, w, x, y, z);

  GPU_argv_init();
  gemverCuda(N, ALPHA, BETA, A, u1, u2, v1, v2, w, w_outputFromGpu, x, y, z);

  t_start = rtclock();
  runGemver(N, ALPHA, BETA, A, u1, u2, v1, v2, w, x, y, z);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(N, w, w_outputFromGpu);

  free(A);
  free(u1);
  free(u2);
  free(v1);
  free(v2);
  free(w);
  free(w_outputFromGpu);
  free(x);
  free(y);
  free(z);

  return 0;
}
