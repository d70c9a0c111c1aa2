// CUDA's declarations for reading a .cu file with libclang in CUDA mode (-x cuda
// -nocudainc --cuda-host-only): the qualifiers as clang's CUDA attributes, the built-in
// variables, the vector types and the runtime API that programs call. Nothing here is
// compiled or linked: it only lets clang type-check the program (templates
// instantiated, constants evaluated) as nvcc's front end would. Force-included before
// the program; the CUDA headers themselves resolve to empty stubs.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ inline __attribute__((always_inline))
#define __inline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
#define __CUDACC__ 1
#define __NVCC__ 1
#define CUDART_VERSION 13000

// nvcc includes cuda_runtime.h in every .cu file, and it brings these; device code may
// call printf, memcpy and memset (C headers, read as host and device functions)
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#pragma clang force_cuda_host_device begin
#include <stdio.h>
#include <string.h>
#pragma clang force_cuda_host_device end
#include <time.h>
#include <math.h>

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1)
      : x(a), y(b), z(c) {}
  __host__ __device__ constexpr dim3(uint3 u) : x(u.x), y(u.y), z(u.z) {}
};
#define PC_VEC2(T, N) struct N##2 { T x, y; }; \
  __host__ __device__ inline N##2 make_##N##2(T x, T y) { return {x, y}; }
#define PC_VEC3(T, N) struct N##3 { T x, y, z; }; \
  __host__ __device__ inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }
#define PC_VEC4(T, N) struct __attribute__((aligned(4 * sizeof(T)))) N##4 { T x, y, z, w; }; \
  __host__ __device__ inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
#define PC_VECS(T, N) PC_VEC2(T, N) PC_VEC3(T, N) PC_VEC4(T, N)
PC_VECS(int, int) PC_VECS(float, float) PC_VECS(double, double)
PC_VEC2(unsigned, uint) PC_VEC4(unsigned, uint)
PC_VECS(char, char) PC_VECS(unsigned char, uchar) PC_VECS(short, short)
PC_VECS(long long, longlong)
#undef PC_VECS
#undef PC_VEC4
#undef PC_VEC3
#undef PC_VEC2

extern const __device__ uint3 threadIdx, blockIdx;
extern const __device__ dim3 blockDim, gridDim;
extern const __device__ int warpSize;

// ---- runtime API (host) ----
typedef int cudaError_t;
typedef cudaError_t cudaError;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                      cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
enum cudaFuncCache { cudaFuncCachePreferNone, cudaFuncCachePreferShared,
                     cudaFuncCachePreferL1, cudaFuncCachePreferEqual };
enum { cudaMemAttachGlobal = 1, cudaHostAllocDefault = 0, cudaEventDefault = 0,
       cudaStreamDefault = 0, cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2 };
struct cudaDeviceProp {
  char name[256]; size_t totalGlobalMem, sharedMemPerBlock; int regsPerBlock, warpSize;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], major, minor;
  int multiProcessorCount, clockRate, memoryClockRate, memoryBusWidth;
  size_t totalConstMem; int l2CacheSize, maxThreadsPerMultiProcessor;
};
// device code may call the runtime (the device runtime's part of it)
#pragma clang force_cuda_host_device begin
extern "C" {
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t = 0, void * = 0);
cudaError_t cudaConfigureCall(dim3, dim3, size_t = 0, cudaStream_t = 0);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMallocManaged(void **, size_t, unsigned = cudaMemAttachGlobal);
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaHostAlloc(void **, size_t, unsigned);
cudaError_t cudaMallocPitch(void **, size_t *, size_t, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t, cudaMemcpyKind);
cudaError_t cudaMemset(void *, int, size_t);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t = 0);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t);
const char *cudaGetErrorName(cudaError_t);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaGetDeviceCount(int *);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *, int);
cudaError_t cudaStreamCreate(cudaStream_t *);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0);
cudaError_t cudaEventQuery(cudaEvent_t);
cudaError_t cudaMallocAsync(void **, size_t, cudaStream_t);
cudaError_t cudaFreeAsync(void *, cudaStream_t);
cudaError_t cudaMemcpyToSymbolAsync(const void *, const void *, size_t, size_t = 0,
                                    cudaMemcpyKind = cudaMemcpyHostToDevice,
                                    cudaStream_t = 0);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *, unsigned);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaMemGetInfo(size_t *, size_t *);
cudaError_t cudaFuncSetCacheConfig(const void *, cudaFuncCache);
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache);
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t = 0, cudaStream_t = 0);
cudaError_t cudaMemcpyToSymbol(const void *, const void *, size_t, size_t = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice);
cudaError_t cudaMemcpyFromSymbol(void *, const void *, size_t, size_t = 0,
                                 cudaMemcpyKind = cudaMemcpyDeviceToHost);
}
#pragma clang force_cuda_host_device end
template <typename T> cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
template <typename T> cudaError_t cudaMallocManaged(T **p, size_t n, unsigned f = cudaMemAttachGlobal)
{ return cudaMallocManaged((void **)p, n, f); }
template <typename T> cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMallocHost((void **)p, n); }
template <typename T> cudaError_t cudaHostAlloc(T **p, size_t n, unsigned f)
{ return cudaHostAlloc((void **)p, n, f); }
template <typename T> cudaError_t cudaMallocPitch(T **p, size_t *pitch, size_t w, size_t h)
{ return cudaMallocPitch((void **)p, pitch, w, h); }
template <typename T> cudaError_t cudaMallocAsync(T **p, size_t n, cudaStream_t s)
{ return cudaMallocAsync((void **)p, n, s); }
template <typename T> cudaError_t cudaMemcpyToSymbolAsync(const T &s, const void *src, size_t n,
    size_t o = 0, cudaMemcpyKind k = cudaMemcpyHostToDevice, cudaStream_t t = 0)
{ return cudaMemcpyToSymbolAsync((const void *)&s, src, n, o, k, t); }
template <typename T> cudaError_t cudaMemcpyToSymbol(const T &s, const void *src, size_t n,
    size_t o = 0, cudaMemcpyKind k = cudaMemcpyHostToDevice) { return cudaMemcpyToSymbol((const void *)&s, src, n, o, k); }
template <typename T> cudaError_t cudaLaunchKernel(T *f, dim3 g, dim3 b, void **a, size_t s = 0,
    cudaStream_t t = 0) { return cudaLaunchKernel((const void *)f, g, b, a, s, t); }
template <typename T> cudaError_t cudaFuncSetCacheConfig(T *f, cudaFuncCache c)
{ return cudaFuncSetCacheConfig((const void *)f, c); }

// ---- device functions ----
__device__ void __syncthreads(void);
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned = 0xffffffffu);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);
template <typename T> __device__ T __shfl_sync(unsigned, T, int, int = 32);
template <typename T> __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);
template <typename T> __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);
template <typename T> __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);
template <typename T> __device__ T __ldg(const T *);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ unsigned __activemask(void);
__device__ int __popc(unsigned);
__device__ int __clz(int);
__device__ int __ffs(int);
// the atomics take the value in the address's type (atomicAdd(&count, 1) with an
// unsigned count): the value's parameter is not deduced
template <typename T> struct __pc_nondeduced { typedef T type; };
template <typename T> __device__ T atomicAdd(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicSub(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicMax(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicMin(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicExch(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicCAS(T *, typename __pc_nondeduced<T>::type,
                                             typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicAnd(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicOr(T *, typename __pc_nondeduced<T>::type);
__device__ unsigned atomicInc(unsigned *, unsigned);
__device__ long long clock64(void);
__device__ long clock(void);
extern "C" __device__ void __assert_fail(const char *, const char *, unsigned, const char *);
__device__ __host__ int min(int, int);
__device__ __host__ int max(int, int);
__device__ __host__ unsigned min(unsigned, unsigned);
__device__ __host__ unsigned max(unsigned, unsigned);
__device__ __host__ long long min(long long, long long);
__device__ __host__ long long max(long long, long long);
__device__ __host__ float min(float, float);
__device__ __host__ float max(float, float);
__device__ __host__ double min(double, double);
__device__ __host__ double max(double, double);
__device__ float __fdividef(float, float);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __sinf(float);
__device__ float __cosf(float);
__device__ float rsqrtf(float);
__device__ float __saturatef(float);
__device__ float __int_as_float(int);
__device__ int __float_as_int(float);
// math: the device versions, float (name##f) and double (host ones come from the C
// library's headers)
#define PC_MATH1(name) __device__ float name##f(float); __device__ double name(double);
#define PC_MATH2(name) __device__ float name##f(float, float); \
  __device__ double name(double, double);
PC_MATH1(sqrt) PC_MATH1(exp) PC_MATH1(log) PC_MATH1(sin) PC_MATH1(cos) PC_MATH1(tan)
PC_MATH1(fabs) PC_MATH1(floor) PC_MATH1(ceil) PC_MATH1(exp2) PC_MATH1(expm1) PC_MATH1(log2)
PC_MATH1(log10) PC_MATH1(log1p) PC_MATH1(tanh) PC_MATH1(atan) PC_MATH1(asin) PC_MATH1(acos)
PC_MATH1(sinh) PC_MATH1(cosh) PC_MATH1(cbrt) PC_MATH1(round) PC_MATH1(trunc) PC_MATH1(rint)
PC_MATH1(erf) PC_MATH1(erfc) PC_MATH1(lgamma) PC_MATH1(tgamma)
PC_MATH2(pow) PC_MATH2(fmin) PC_MATH2(fmax) PC_MATH2(fmod) PC_MATH2(atan2) PC_MATH2(hypot)
PC_MATH2(copysign) PC_MATH2(fdim) PC_MATH2(remainder)
#undef PC_MATH1
#undef PC_MATH2
__device__ float fmaf(float, float, float);
__device__ double fma(double, double, double);
__device__ int abs(int);
__device__ float fabs(float);
__device__ float sqrt(float);
__device__ float exp(float);
__device__ float log(float);
__device__ float pow(float, float);
