/*
 * bicg.cu -- s = A^T r and q = A p (the BiCGStab sub-kernel).
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "bicg.cuh"

void init_array(int nx, int ny, DATA_TYPE *A, DATA_TYPE *p, DATA_TYPE *r)
{
  int i, j;

  for (i = 0; i < _PB_NX; i++) {
    r[i] = (DATA_TYPE)(i % 31) / 31.0f + 0.5f;
    for (j = 0; j < _PB_NY; j++)
      A[i * NY + j] = (DATA_TYPE)(((i + 1) * (j + 2)) % 97) / 97.0f;
  }

  for (j = 0; j < _PB_NY; j++)
    p[j] = (DATA_TYPE)((j * 7) % 19) / 19.0f + 0.25f;
}

void bicg_cpu(int nx, int ny, DATA_TYPE *A, DATA_TYPE *r, DATA_TYPE *s, DATA_TYPE *p, DATA_TYPE *q)
{
  int i, j;

  for (j = 0; j < _PB_NY; j++)
    s[j] = 0.0f;

  for (i = 0; i < _PB_NX; i++) {
    q[i] = 0.0f;
    for (j = 0; j < _PB_NY; j++) {
      s[j] = s[j] + r[i] * A[i * NY + j];
      q[i] = q[i] + A[i * NY + j] * p[j];
    }
  }
}

/* s = A^T r: thread j walks down column j of A. */
__global__ void bicg_kernel1(int nx, int ny, DATA_TYPE *A, DATA_TYPE *r, DATA_TYPE *s)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;

  if (j < _PB_NY) {
    s[j] = 0.0f;
    for (int i = 0; i < _PB_NX; i++)
      s[j] += r[i] * A[i * NY + j];
  }
}

/* q = A p: thread i walks along row i of A. */
__global__ void bicg_kernel2(int nx, int ny, DATA_TYPE *A, DATA_TYPE *p, DATA_TYPE *q)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;

  if (i < _PB_NX) {
    q[i] = 0.0f;
    for (int j = 0; j < _PB_NY; j++)
      q[i] += A[i * NY + j] * p[j];
  }
}

void compareResults(int nx, int ny, DATA_TYPE *s, DATA_TYPE *s_outputFromGpu,
                    DATA_TYPE *q, DATA_TYPE *q_outputFromGpu)
{
  int i, fail = 0;

  for (i = 0; i < nx; i++)
    if (percentDiff(q[i], q_outputFromGpu[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
      fail++;

  for (i = 0; i < ny; i++)
    if (percentDiff(s[i], s_outputFromGpu[i]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void bicgCuda(int nx, int ny, DATA_TYPE *A, DATA_TYPE *r, DATA_TYPE *p,
              DATA_TYPE *s_outputFromGpu, DATA_TYPE *q_outputFromGpu)
{
  double t_start, t_end;
  DATA_TYPE *A_gpu, *q_gpu, *p_gpu, *r_gpu, *s_gpu;

  CUDA_CHECK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NX * NY));
  CUDA_CHECK(cudaMalloc((void **)&r_gpu, sizeof(DATA_TYPE) * NX));
  CUDA_CHECK(cudaMalloc((void **)&s_gpu, sizeof(DATA_TYPE) * NY));
  CUDA_CHECK(cudaMalloc((void **)&p_gpu, sizeof(DATA_TYPE) * NY));
  CUDA_CHECK(cudaMalloc((void **)&q_gpu, sizeof(DATA_TYPE) * NX));

  CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(r_gpu, r, sizeof(DATA_TYPE) * NX, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(p_gpu, p, sizeof(DATA_TYPE) * NY, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);

  t_start = rtclock();
  bicg_kernel1<<<dim3((size_t)ceil(((float)NY) / ((float)block.x)), 1), block>>>(nx, ny, A_gpu, r_gpu, s_gpu);
  cudaDeviceSynchronize();
  bicg_kernel2<<<dim3((size_t)ceil(((float)NX) / ((float)block.x)), 1), block>>>(nx, ny, A_gpu, p_gpu, q_gpu);
  cudaDeviceSynchronize();
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(s_outputFromGpu, s_gpu, sizeof(DATA_TYPE) * NY, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(q_outputFromGpu, q_gpu, sizeof(DATA_TYPE) * NX, cudaMemcpyDeviceToHost));

  cudaFree(A_gpu);
  cudaFree(r_gpu);
  cudaFree(s_gpu);
  cudaFree(p_gpu);
  cudaFree(q_gpu);
}

int main(int argc, char **argv)
{
  double t_start, t_end;
  DATA_TYPE *A, *r, *s, *p, *q;
  DATA_TYPE *s_outputFromGpu, *q_outputFromGpu;

  A = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
  r = (DATA_TYPE *)malloc(NX * sizeof(DATA_TYPE));
  s = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
  q = (DATA_TYPE *)malloc(NX * sizeof(DATA_TYPE));
  p = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
  s_outputFromGpu = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
  q_outputFromGpu = (DATA_TYPE *)malloc(NX * sizeof(DATA_TYPE));

  init_array(NX, NY, A, p, r);

  GPU_argv_init();
  bicgCuda(NX, NY, A, r, p, s_outputFromGpu, q_outputFromGpu);

  t_start = rtclock();
  bicg_cpu(NX, NY, A, r, s, p, q);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NX, NY, s, s_outputFromGpu, q, q_outputFromGpu);

  free(A);
  free(r);
  free(s);
  free(p);
  free(q);
  free(s_outputFromGpu);
  free(q_outputFromGpu);

  return 0;
}
