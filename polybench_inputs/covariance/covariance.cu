/*
 * covariance.cu -- covariance matrix of N samples of M variables.
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "covariance.cuh"

void init_arrays(int m, int n, DATA_TYPE *data)
{
  int i, j;

  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_M; j++)
      data[i * M + j] = (DATA_TYPE)((i * (j + 1) + 2 * j) % 67) / 67.0f + (DATA_TYPE)(j % 5);
}

void covariance(int m, int n, DATA_TYPE float_n, DATA_TYPE *data, DATA_TYPE *symmat, DATA_TYPE *mean)
{
  int i, j, j1, j2;

  /* Column means. */
  for (j = 0; j < _PB_M; j++) {
    mean[j] = 0.0f;
    for (i = 0; i < _PB_N; i++)
      mean[j] += data[i * M + j];
    mean[j] /= float_n;
  }

  /* Centre the columns. */
  for (i = 0; i < _PB_N; i++)
    for (j = 0; j < _PB_M; j++)
      data[i * M + j] -= mean[j];

  /* Upper triangle, mirrored into the lower one.  The sample loop is
   * outermost for the host's caches; every entry still sums its N products
   * in the order i = 0, 1, ..., N-1, as the GPU kernel does. */
  for (j1 = 0; j1 < _PB_M; j1++)
    for (j2 = j1; j2 < _PB_M; j2++)
      symmat[j1 * M + j2] = 0.0f;

  for (i = 0; i < _PB_N; i++)
    for (j1 = 0; j1 < _PB_M; j1++)
      for (j2 = j1; j2 < _PB_M; j2++)
        symmat[j1 * M + j2] += data[i * M + j1] * data[i * M + j2];

  for (j1 = 0; j1 < _PB_M; j1++)
    for (j2 = j1; j2 < _PB_M; j2++)
      symmat[j2 * M + j1] = symmat[j1 * M + j2];
}

/* mean[j] = average of column j: thread j walks down its column. */
__global__ void mean_kernel(int m, int n, DATA_TYPE float_n, DATA_TYPE *mean, DATA_TYPE *data)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i;

  if (j < _PB_M) {
    mean[j] = 0.0f;
    for (i = 0; i < _PB_N; i++)
      mean[j] += data[i * M + j];
    mean[j] /= float_n;
  }
}

/* data[i][j] -= mean[j]: one element per thread. */
__global__ void reduce_kernel(int m, int n, DATA_TYPE *mean, DATA_TYPE *data)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_N) && (j < _PB_M))
    data[i * M + j] -= mean[j];
}

/* Row j1 of the covariance matrix (from the diagonal on) and its mirror. */
__global__ void covar_kernel(int m, int n, DATA_TYPE *symmat, DATA_TYPE *data)
{
  int j1 = blockIdx.x * blockDim.x + threadIdx.x;
  int i, j2;

  if (j1 < _PB_M) {
    for (j2 = j1; j2 < _PB_M; j2++) {
      symmat[j1 * M + j2] = 0.0f;
      for (i = 0; i < _PB_N; i++)
        symmat[j1 * M + j2] += data[i * M + j1] * data[i * M + j2];
      symmat[j2 * M + j1] = symmat[j1 * M + j2];
    }
  }
}

void compareResults(int m, DATA_TYPE *symmat, DATA_TYPE *symmat_outputFromGpu)
{
  int i, j, fail = 0;

  for (i = 0; i < m; i++)
    for (j = 0; j < m; j++)
      if (percentDiff(symmat[i * M + j], symmat_outputFromGpu[i * M + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void covarianceCuda(int m, int n, DATA_TYPE *data, DATA_TYPE *symmat_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *data_gpu, *mean_gpu, *symmat_gpu;

  CUDA_CHECK(cudaMalloc((void **)&data_gpu, sizeof(DATA_TYPE) * N * M));
  CUDA_CHECK(cudaMalloc((void **)&symmat_gpu, sizeof(DATA_TYPE) * M * M));
  CUDA_CHECK(cudaMalloc((void **)&mean_gpu, sizeof(DATA_TYPE) * M));

  CUDA_CHECK(cudaMemcpy(data_gpu, data, sizeof(DATA_TYPE) * N * M, cudaMemcpyHostToDevice));

  dim3 block1(DIM_THREAD_BLOCK_KERNEL_1_X, DIM_THREAD_BLOCK_KERNEL_1_Y);
  dim3 grid1((size_t)(ceil(((float)M) / ((float)DIM_THREAD_BLOCK_KERNEL_1_X))), 1);

  dim3 block2(DIM_THREAD_BLOCK_KERNEL_2_X, DIM_THREAD_BLOCK_KERNEL_2_Y);
  dim3 grid2((size_t)(ceil(((float)M) / ((float)DIM_THREAD_BLOCK_KERNEL_2_X))),
             (size_t)(ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_2_Y))));

  dim3 block3(DIM_THREAD_BLOCK_KERNEL_3_X, DIM_THREAD_BLOCK_KERNEL_3_Y);
  dim3 grid3((size_t)(ceil(((float)M) / ((float)DIM_THREAD_BLOCK_KERNEL_3_X))), 1);

  t_start = rtclock();
  mean_kernel<<<grid1, block1>>>(m, n, FLOAT_N, mean_gpu, data_gpu);
  cudaDeviceSynchronize();
  reduce_kernel<<<grid2, block2>>>(m, n, mean_gpu, data_gpu);
  cudaDeviceSynchronize();
  covar_kernel<<<grid3, block3>>>(m, n, symmat_gpu, data_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(symmat_outputFromGpu, symmat_gpu, sizeof(DATA_TYPE) * M * M, cudaMemcpyDeviceToHost));

  cudaFree(data_gpu);
  cudaFree(symmat_gpu);
  cudaFree(mean_gpu);
}

int main()
{
  double t_start, t_end;
  DATA_TYPE *data, *symmat, *mean, *symmat_outputFromGpu;

  data = (DATA_TYPE *)malloc(N * M * sizeof(DATA_TYPE));
  symmat = (DATA_TYPE *)malloc(M * M * sizeof(DATA_TYPE));
  mean = (DATA_TYPE *)malloc(M * sizeof(DATA_TYPE));
  symmat_outputFromGpu = (DATA_TYPE *)malloc(M * M * sizeof(DATA_TYPE));

  init_arrays(M, N, data);

  GPU_argv_init();
  covarianceCuda(M, N, data, symmat_outputFromGpu);

  t_start = rtclock();
  covariance(M, N, FLOAT_N, data, symmat, mean);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(M, symmat, symmat_outputFromGpu);

  free(data);
  free(symmat);
  free(mean);
  free(symmat_outputFromGpu);

  return 0;
}
