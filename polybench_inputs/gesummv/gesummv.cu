/*
 * gesummv.cu -- y = alpha A x + beta B x (scalar, vector and matrix multiplication).
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "gesummv.cuh"

void init(int n, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *tmp)
{
  int i, j;

  for (i = 0; i < _PB_N; i++) {
    x[i] = (DATA_TYPE)(i % 37) / 37.0f;
    y[i] = 0.0f;
    tmp[i] = 0.0f;
    for (j = 0; j < _PB_N; j++) {
      A[i * N + j] = (DATA_TYPE)((i * (j + 3)) % 53) / 53.0f;
      B[i * N + j] = (DATA_TYPE)(((i + 2) * j) % 61) / 61.0f;
    }
  }
}

void gesummv(int n, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *B,
             DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *tmp)
{
  int i, j;

  for (i = 0; i < _PB_N; i++) {
    tmp[i] = 0;
    y[i] = 0;
    for (j = 0; j < _PB_N; j++) {
      tmp[i] = A[i * N + j] * x[j] + tmp[i];
      y[i] = B[i * N + j] * x[j] + y[i];
    }
    y[i] = alpha * tmp[i] + beta * y[i];
  }
}

/* One row of A and B per thread; tmp and y arrive zeroed from the host. */
__global__ void gesummv_kernel(int n, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *a, DATA_TYPE *b,
                               DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *tmp)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;

  if (i < _PB_N) {
    for (j = 0; j < _PB_N; j++) {
      tmp[i] += a[i * N + j] * x[j];
      y[i] += b[i * N + j] * x[j];
    }
    y[i] = alpha * tmp[i] + beta * y[i];
  }
}

void compareResults(int n, DATA_TYPE *y, DATA_TYPE *y_outputFromGpu)
{
  int i, fail = 0;

  for (i = 0; i < n; i++)
    if (percentDiff(y[i], y_outputFromGpu[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void gesummvCuda(int n, DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *x,
                 DATA_TYPE *y, DATA_TYPE *tmp, DATA_TYPE *y_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *B_gpu, *x_gpu, *y_gpu, *tmp_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * N * N));
  CUDA_CHECK(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * N * N));
  CUDA_CHECK(cudaMalloc((void **)&x_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&y_gpu, sizeof(DATA_TYPE) * N));
  CUDA_CHECK(cudaMalloc((void **)&tmp_gpu, sizeof(DATA_TYPE) * N));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x_gpu, x, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y_gpu, y, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(tmp_gpu, tmp, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((unsigned int)ceil(((float)N) / ((float)block.x)), 1);

  t_start = rtclock();
  gesummv_kernel<<<grid, block>>>(n, alpha, beta, A_gpu, B_gpu, x_gpu, y_gpu, tmp_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(y_outputFromGpu, y_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(B_gpu);
  cudaFree(x_gpu);
  cudaFree(y_gpu);
  cudaFree(tmp_gpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *B, *x, *y, *tmp, *y_outputFromGpu;

  A = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
  x = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  y = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  tmp = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
  y_outputFromGpu = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));

  init(N, A, B, x, y, tmp);

  GPU_argv_init();
  gesummvCuda(N, ALPHA, BETA, A, B, x, y, tmp, y_outputFromGpu);

  t_start = rtclock();
  gesummv(N, ALPHA, BETA, A, B, x, y, tmp);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(N, y, y_outputFromGpu);

  free(A);
  free(B);
  free(x);
  free(y);
  free(tmp);
  free(y_outputFromGpu);

  return 0;
}
