/*
 * cpp/covariance.cu -- covariance, written as C++ CUDA code is written today:
 * kernel templates in a namespace, private accumulators, early returns, const
 * __restrict__ pointers, std::vector host buffers, a struct of device pointers,
 * CUDA events for timing. Same dataset and thread mappings as covariance/.
 * polycoal regression corpus: own program (issue 14, item 4).
 */
#include <cuda_runtime.h>
#include <cstdio>
#include <cmath>
#include <vector>
#include "../common/polybench_gpu.h"

#ifndef M
#define M 2048
#endif
#ifndef N
#define N 2048
#endif

namespace covar {

constexpr int kThreads = 256;
constexpr float kThreshold = 1.05f;

// mean of column j, one thread per column
template <typename T>
__global__ void mean_kernel(int m, int n, T float_n, T *__restrict__ mean,
                            const T *__restrict__ data)
{
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= m) return;
  T sum = 0;
  for (int i = 0; i < n; ++i)
    sum += data[i * M + j];
  mean[j] = sum / float_n;
}

// centre every element: a 2-D grid of 32x8 blocks
template <typename T>
__global__ void center_kernel(int m, int n, const T *__restrict__ mean, T *__restrict__ data)
{
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n && j < m)
    data[i * M + j] -= mean[j];
}

// row j1 of the covariance matrix from the diagonal on, mirrored
template <typename T>
__global__ void covar_kernel(int m, int n, T *__restrict__ symmat, const T *__restrict__ data)
{
  const int j1 = blockIdx.x * blockDim.x + threadIdx.x;
  if (j1 >= m) return;
  for (int j2 = j1; j2 < m; ++j2) {
    T acc = 0;
    for (int i = 0; i < n; ++i)
      acc += data[i * M + j1] * data[i * M + j2];
    symmat[j1 * M + j2] = acc;
    symmat[j2 * M + j1] = acc;
  }
}

}  // namespace covar

struct DeviceArrays {
  float *data;
  float *mean;
  float *symmat;
};

static void reference(int m, int n, std::vector<float> &data, std::vector<float> &symmat)
{
  std::vector<float> mean(m, 0.0f);
  for (int j = 0; j < m; ++j) {
    for (int i = 0; i < n; ++i) mean[j] += data[i * M + j];
    mean[j] /= (float)N;
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) data[i * M + j] -= mean[j];
  for (int j1 = 0; j1 < m; ++j1)
    for (int j2 = j1; j2 < m; ++j2) {
      float acc = 0.0f;
      for (int i = 0; i < n; ++i) acc += data[i * M + j1] * data[i * M + j2];
      symmat[j1 * M + j2] = acc;
      symmat[j2 * M + j1] = acc;
    }
}

int main()
{
  const int m = M, n = N;
  std::vector<float> data(static_cast<size_t>(N) * M), symmat(static_cast<size_t>(M) * M);
  std::vector<float> fromGpu(symmat.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j)
      data[i * M + j] = static_cast<float>((i * (j + 1) + 2 * j) % 67) / 67.0f + (j % 5);

  DeviceArrays d{};
  CUDA_CHECK(cudaMalloc(&d.data, sizeof(float) * data.size()));
  CUDA_CHECK(cudaMalloc(&d.mean, sizeof(float) * M));
  CUDA_CHECK(cudaMalloc(&d.symmat, sizeof(float) * symmat.size()));
  CUDA_CHECK(cudaMemcpy(d.data, data.data(), sizeof(float) * data.size(),
                        cudaMemcpyHostToDevice));

  const dim3 block1(covar::kThreads), grid1((M + covar::kThreads - 1) / covar::kThreads);
  const dim3 block2(32, 8), grid2((M + 31) / 32, (N + 7) / 8);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  covar::mean_kernel<float><<<grid1, block1>>>(m, n, static_cast<float>(N), d.mean, d.data);
  covar::center_kernel<float><<<grid2, block2>>>(m, n, d.mean, d.data);
  covar::covar_kernel<float><<<grid1, block1>>>(m, n, d.symmat, d.data);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  CUDA_CHECK(cudaGetLastError());
  fprintf(stderr, "GPU Runtime: %0.6lfs\n", ms / 1000.0);
  CUDA_CHECK(cudaMemcpy(fromGpu.data(), d.symmat, sizeof(float) * symmat.size(),
                        cudaMemcpyDeviceToHost));

  reference(m, n, data, symmat);
  int fail = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      if (percentDiff(symmat[i * M + j], fromGpu[i * M + j]) > covar::kThreshold) ++fail;
  fprintf(stderr, "Non-Matching CPU-GPU Outputs Beyond Error Threshold of %4.2f Percent: %d\n",
          covar::kThreshold, fail);
  double checksum = 0.0;
  for (float v : fromGpu) checksum += v;
  printf("%d %.6e\n", fail, checksum);
  cudaFree(d.data);
  cudaFree(d.mean);
  cudaFree(d.symmat);
  return 0;
}
