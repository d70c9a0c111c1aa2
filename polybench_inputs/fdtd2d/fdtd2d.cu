/*
 * fdtd2d.cu -- 2-D finite-difference time-domain kernel (ex, ey, hz fields).
 * polycoal regression corpus: own program written from the published
 * description of PolyBench/GPU 1.0, in its naive OpenMP-to-CUDA style.
 *
 * The host loops over the TMAX time steps; each step launches three 2-D
 * kernels: update ey (row 0 takes the source _fict_[t]), update ex, update hz.
 */
#include <cuda_runtime.h>

#include "../common/polybench_gpu.h"
#include "fdtd2d.cuh"

void init_arrays(int tmax, int nx, int ny, DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz)
{
  int i, j;

  for (i = 0; i < _PB_TMAX; i++)
    _fict_[i] = (DATA_TYPE)i;

  for (i = 0; i < _PB_NX; i++) {
    for (j = 0; j < _PB_NY; j++) {
      ex[i * NY + j] = (DATA_TYPE)((i * (j + 1)) % 23) / 23.0f;
      ey[i * NY + j] = (DATA_TYPE)(((i + 2) * j) % 29) / 29.0f;
      hz[i * NY + j] = (DATA_TYPE)((i * (j + 3) + 1) % 31) / 31.0f;
    }
  }
}

void runFdtd(int tmax, int nx, int ny, DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz)
{
  int t, i, j;

  for (t = 0; t < _PB_TMAX; t++) {
    for (j = 0; j < _PB_NY; j++)
      ey[0 * NY + j] = _fict_[t];

    for (i = 1; i < _PB_NX; i++)
      for (j = 0; j < _PB_NY; j++)
        ey[i * NY + j] = ey[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[(i - 1) * NY + j]);

    for (i = 0; i < _PB_NX; i++)
      for (j = 1; j < _PB_NY; j++)
        ex[i * NY + j] = ex[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[i * NY + (j - 1)]);

    for (i = 0; i < _PB_NX - 1; i++)
      for (j = 0; j < _PB_NY - 1; j++)
        hz[i * NY + j] = hz[i * NY + j] - 0.7f * (ex[i * NY + (j + 1)] - ex[i * NY + j] + ey[(i + 1) * NY + j] - ey[i * NY + j]);
  }
}

/* ey: row 0 takes the source value, the other rows the hz difference along i. */
__global__ void fdtd_step1_kernel(int nx, int ny, DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz, int t)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_NX) && (j < _PB_NY)) {
    if (i == 0)
      ey[i * NY + j] = _fict_[t];
    else
      ey[i * NY + j] = ey[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[(i - 1) * NY + j]);
  }
}

/* ex: hz difference along j (column 0 is left alone). */
__global__ void fdtd_step2_kernel(int nx, int ny, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz, int t)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < _PB_NX) && (j < _PB_NY) && (j > 0))
    ex[i * NY + j] = ex[i * NY + j] - 0.5f * (hz[i * NY + j] - hz[i * NY + (j - 1)]);
}

/* hz: curl of (ex, ey), last row and column left alone. */
__global__ void fdtd_step3_kernel(int nx, int ny, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz, int t)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < (_PB_NX - 1)) && (j < (_PB_NY - 1)))
    hz[i * NY + j] = hz[i * NY + j] - 0.7f * (ex[i * NY + (j + 1)] - ex[i * NY + j] + ey[(i + 1) * NY + j] - ey[i * NY + j]);
}

void compareResults(int nx, int ny, DATA_TYPE *hz1, DATA_TYPE *hz2)
{
  int i, j, fail = 0;

  for (i = 0; i < nx; i++)
    for (j = 0; j < ny; j++)
      if (percentDiff(hz1[i * NY + j], hz2[i * NY + j]) > PERCENT_DIFF_ERROR_THRESHOLD)
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

void fdtdCuda(int tmax, int nx, int ny, DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz,
              DATA_TYPE *hz_outputFromGpu)
{
  double t_start, t_end;
  int t;
  DATA_TYPE *_fict_gpu, *ex_gpu, *ey_gpu, *hz_gpu;

  CUDA_CHECK(cudaMalloc((void **)&_fict_gpu, sizeof(DATA_TYPE) * TMAX));
  CUDA_CHECK(cudaMalloc((void **)&ex_gpu, sizeof(DATA_TYPE) * NX * NY));
  CUDA_CHECK(cudaMalloc((void **)&ey_gpu, sizeof(DATA_TYPE) * NX * NY));
  CUDA_CHECK(cudaMalloc((void **)&hz_gpu, sizeof(DATA_TYPE) * NX * NY));

  CUDA_CHECK(cudaMemcpy(_fict_gpu, _fict_, sizeof(DATA_TYPE) * TMAX, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(ex_gpu, ex, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(ey_gpu, ey, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(hz_gpu, hz, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((size_t)ceil(((float)NY) / ((float)block.x)), (size_t)ceil(((float)NX) / ((float)block.y)));

  t_start = rtclock();
  for (t = 0; t < _PB_TMAX; t++) {
    fdtd_step1_kernel<<<grid, block>>>(nx, ny, _fict_gpu, ex_gpu, ey_gpu, hz_gpu, t);
    cudaDeviceSynchronize();
    fdtd_step2_kernel<<<grid, block>>>(nx, ny, ex_gpu, ey_gpu, hz_gpu, t);
    cudaDeviceSynchronize();
    fdtd_step3_kernel<<<grid, block>>>(nx, ny, ex_gpu, ey_gpu, hz_gpu, t);
    cudaDeviceSynchronize();
  }
  t_end = rtclock();
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", t_end - t_start);

  CUDA_CHECK(cudaMemcpy(hz_outputFromGpu, hz_gpu, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyDeviceToHost));

  cudaFree(_fict_gpu);
  cudaFree(ex_gpu);
  cudaFree(ey_gpu);
  cudaFree(hz_gpu);
}

int main()
{
  double t_start, t_end;
  DATA_TYPE *_fict_, *ex, *ey, *hz, *hz_outputFromGpu;

  _fict_ = (DATA_TYPE *)malloc(TMAX * sizeof(DATA_TYPE));
  ex = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
  ey = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
  hz = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
  hz_outputFromGpu = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));

  init_arrays(TMAX, NX, NY, _fict_, ex, ey, hz);

  GPU_argv_init();
  fdtdCuda(TMAX, NX, NY, _fict_, ex, ey, hz, hz_outputFromGpu);

  t_start = rtclock();
  runFdtd(TMAX, NX, NY, _fict_, ex, ey, hz);
  t_end = rtclock();
  fprintf(stderr, "CPU Runtime: %0.6lfs\n", t_end - t_start);

  compareResults(NX, NY, hz, hz_outputFromGpu);

  free(_fict_);
  free(ex);
  free(ey);
  free(hz);
  free(hz_outputFromGpu);

  return 0;
}
