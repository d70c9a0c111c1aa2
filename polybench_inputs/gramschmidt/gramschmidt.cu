/*
 * gramschmidt.cu -- QR decomposition by modified Gram-Schmidt (A = Q R).
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 *
 * The host loops over the columns k; per column three kernels run:
 * the norm of column k (one thread), the scaling of column k into Q, and
 * the projection of the remaining columns j > k (one column per thread).
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "gramschmidt.cuh"

void init_array(int m, int n, DATA_TYPE *A)
{
  int i, j;

  /* Identity plus small positive noise: well conditioned, so single
   * precision Gram-Schmidt stays accurate at every size. */
  for (i = 0; i < _PB_M; i++)
    for (j = 0; j < _PB_N; j++)
      A[i * N + j] = (DATA_TYPE)((i * (j + 1) + 1) % 17) / (17.0f * (DATA_TYPE)N) + (i == j ? 1.0f : 0.0f);
}

void gramschmidt(int m, int n, DATA_TYPE *A, DATA_TYPE *R, DATA_TYPE *Q)
{
  int i, j, k;

  for (k = 0; k < _PB_N; k++) {
    R[k * N + k] = 0.0f;
    for (i = 0; i < _PB_M; i++)
      R[k * N + k] += A[i * N + k] * A[i * N + k];
    R[k * N + k] = sqrtf(R[k * N + k]);

    for (i = 0; i < _PB_M; i++)
      Q[i * N + k] = A[i * N + k] / R[k * N + k];

    /* Row-wise for the host's caches: each R[k][j] still sums over
     * i = 0, 1, ..., M-1 in order, as the GPU kernel does. */
    for (j = k + 1; j < _PB_N; j++)
      R[k * N + j] = 0.0f;
    for (i = 0; i < _PB_M; i++)
      for (j = k + 1; j < _PB_N; j++)
        R[k * N + j] += Q[i * N + k] * A[i * N + j];
    for (i = 0; i < _PB_M; i++)
      for (j = k + 1; j < _PB_N; j++)
        A[i * N + j] = A[i * N + j] - Q[i * N + k] * R[k * N + j];
  }
}

/* Norm of column k into r[k][k]: a single thread does the whole column. */
__global__ void gramschmidt_kernel1(int m, int n, DATA_TYPE *a, DATA_TYPE *r, DATA_TYPE *q, int k)
{
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int i;

  if (tid == 0) {
    DATA_TYPE nrm = 0.0;
    for (i = 0; i < _PB_M; i++)
      nrm += a[i * N + k] * a[i * N + k];
    r[k * N + k] = sqrt(nrm);
  }
}
__global__ void gramschmidt_kernel2(int m, int n, DATA_TYPE *a, DATA_TYPE *r, DATA_TYPE *q, int k)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;

  if (i < _PB_M)
    q[i * N + k] = a[i * N + k] / r[k * N + k];
}

/* Columns j > k: r[k][j] = q[:,k] . a[:,j], then a[:,j] -= q[:,k] r[k][j]. */
__global__ void gramschmidt_kernel3(int m, int n, DATA_TYPE *a, DATA_TYPE *r, DATA_TYPE *q, int k)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i;

  if ((j > k) && (j < _PB_N)) {
    r[k * N + j] = 0.0f;
    for (i = 0; i < _PB_M; i++)
      r[k * N + j] += q[i * N + k] * a[i * N + j];
    for (i = 0; i < _PB_M; i++)
      a[i * N + j] -= q[i * N + k] * r[k * N + j];
  }
}

void compareResults(int m, int n, DATA_TYPE *Q, DATA_TYPE *Q_outputFromGpu, DATA_TYPE *R, DATA_TYPE *R_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++)
      if (percentDiff(Q[i * N + j], Q_outputFromGpu[i * N + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
        fail++;

  /* Only the upper triangle of R is computed. */
  for (i = 0; i < n; i++)
    for (j = i; j < n; j++)
      if (percentDiff(R[i * N + j], R_outputFromGpu[i * N + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void gramschmidtCuda(int m, int n, DATA_TYPE *A, DATA_TYPE *R, DATA_TYPE *Q,
                     DATA_TYPE *R_outputFromGpu, DATA_TYPE *Q_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *R_gpu, *Q_gpu;
  int k;

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 gridKernel1(1, 1);
  dim3 gridKernel2((size_t)ceil(((float)M) / ((float)DIM_THREAD_BLOCK_X)), 1);
  dim3 gridKernel3((size_t)ceil(((float)N) / ((float)DIM_THREAD_BLOCK_X)), 1);

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * M * N));
  CUDA_CHECK(cudaMalloc((void **)&R_gpu, sizeof(DATA_TYPE) * N * N));
  CUDA_CHECK(cudaMalloc((void **)&Q_gpu, sizeof(DATA_TYPE) * M * N));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(R_gpu, R, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(Q_gpu, Q, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));

  t_start = rtclock();
  for (k = 0; k < _PB_N; k++) {
    gramschmidt_kernel1<<<gridKernel1, block>>>(m, n, A_gpu, R_gpu, Q_gpu, k);
    cudaDeviceSynchronize();
    gramschmidt_kernel2<<<gridKernel2, block>>>(m, n, A_gpu, R_gpu, Q_gpu, k);
    cudaDeviceSynchronize();
    gramschmidt_kernel3<<<gridKernel3, block>>>(m, n, A_gpu, R_gpu, Q_gpu, k);
    cudaDeviceSynchronize();
  }
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(R_outputFromGpu, R_gpu, sizeof(DATA_TYPE) * N * N, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(Q_outputFromGpu, Q_gpu, sizeof(DATA_TYPE) * M * N, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(R_gpu);
  cudaFree(Q_gpu);
}

int main(int argc, char *argv[])
{
  double t_start, t_end;
  DATA_TYPE *A, *R, *Q, *R_outputFromGpu, *Q_outputFromGpu;

  A = (DATA_TYPE *)malloc(M * N * sizeof(DATA_TYPE));
  R = (DATA_TYPE *)calloc(N * N, sizeof(DATA_TYPE));
  Q = (DATA_TYPE *)calloc(M * N, sizeof(DATA_TYPE));
  R_outputFromGpu = (DATA_TYPE *)calloc(N * N, sizeof(DATA_TYPE));
  Q_outputFromGpu = (DATA_TYPE *)calloc(M * N, sizeof(DATA_TYPE));

  init_array(M, N, A);

  GPU_argv_init();
  gramschmidtCuda(M, N, A, R, Q, R_outputFromGpu, Q_outputFromGpu);

  t_start = rtclock();
  gramschmidt(M, N, A, R, Q);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(M, N, Q, Q_outputFromGpu, R, R_outputFromGpu);

  free(A);
  free(R);
  free(Q);
  free(R_outputFromGpu);
  free(Q_outputFromGpu);

  return 0;
}
