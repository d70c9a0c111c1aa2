// The intrinsics and vector types of CUDA that clang_cuda.h leaves out, for reading a
// .cu file with libclang in CUDA mode (force-included after clang_cuda.h). The toolkit's
// libraries are declared where a program includes them (grammars/clang_toolkit: half,
// bfloat16 and fp8 numbers, cooperative groups, cuRAND's device API, warp matrix
// operations). Nothing here is compiled or linked: it lets Clang type-check programs as
// nvcc's front end would (issue 32: a valid file is never refused, its templates are
// instantiated). The shapes are the documented APIs'; the bodies are left out.
#pragma once

// ---- more intrinsics and vector types ----
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ long long __double_as_longlong(double);
__device__ double __longlong_as_double(long long);
__device__ int __double2hiint(double);
__device__ int __double2loint(double);
__device__ double __hiloint2double(int, int);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__device__ int __float2int_rd(float);
__device__ int __float2int_ru(float);
__device__ unsigned __float2uint_rn(float);
__device__ unsigned __float2uint_rz(float);
__device__ float __int2float_rn(int);
__device__ float __uint2float_rn(unsigned);
__device__ float __ll2float_rn(long long);
__device__ int __double2int_rn(double);
__device__ int __double2int_rz(double);
__device__ float __double2float_rn(double);
__device__ float __fadd_rn(float, float);
__device__ float __fsub_rn(float, float);
__device__ float __fmul_rn(float, float);
__device__ float __fdiv_rn(float, float);
__device__ float __fmaf_rn(float, float, float);
__device__ float __frcp_rn(float);
__device__ float __fsqrt_rn(float);
__device__ float __frsqrt_rn(float);
__device__ float __powf(float, float);
__device__ float __exp10f(float);
__device__ float __log2f(float);
__device__ float __log10f(float);
__device__ float __tanf(float);
__device__ void __sincosf(float, float *, float *);
__device__ double __dadd_rn(double, double);
__device__ double __dmul_rn(double, double);
__device__ double __fma_rn(double, double, double);
__device__ double __drcp_rn(double);
__device__ int __mul24(int, int);
__device__ unsigned __umul24(unsigned, unsigned);
__device__ int __mulhi(int, int);
__device__ unsigned __umulhi(unsigned, unsigned);
__device__ long long __mul64hi(long long, long long);
__device__ unsigned long long __umul64hi(unsigned long long, unsigned long long);
__device__ unsigned __brev(unsigned);
__device__ unsigned long long __brevll(unsigned long long);
__device__ int __popcll(unsigned long long);
__device__ int __clzll(long long);
__device__ int __ffsll(long long);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_l(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_r(unsigned, unsigned, unsigned);
__device__ unsigned __sad(int, int, unsigned);
__device__ unsigned __usad(unsigned, unsigned, unsigned);
__device__ int __hadd(int, int);
__device__ int __rhadd(int, int);
__device__ unsigned __uhadd(unsigned, unsigned);
__device__ void __threadfence_system(void);
__device__ void __nanosleep(unsigned);
__device__ unsigned __match_any_sync(unsigned, unsigned);
__device__ unsigned __match_all_sync(unsigned, unsigned, int *);
__device__ unsigned __reduce_add_sync(unsigned, unsigned);
__device__ unsigned __reduce_min_sync(unsigned, unsigned);
__device__ unsigned __reduce_max_sync(unsigned, unsigned);
__device__ unsigned __lanemask_lt(void);
__device__ unsigned long long __globaltimer(void);
template <typename T> __device__ T __ldcg(const T *);
template <typename T> __device__ T __ldca(const T *);
template <typename T> __device__ T __ldcs(const T *);
template <typename T> __device__ T __ldlu(const T *);
template <typename T> __device__ T __ldcv(const T *);
template <typename T> __device__ void __stcg(T *, T);
template <typename T> __device__ void __stcs(T *, T);
template <typename T> __device__ void __stwt(T *, T);
template <typename T> __device__ T atomicAdd_block(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicAdd_system(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicMax_block(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicMin_block(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicXor(T *, typename __pc_nondeduced<T>::type);
template <typename T> __device__ T atomicCAS_block(T *, typename __pc_nondeduced<T>::type,
                                                   typename __pc_nondeduced<T>::type);
__device__ unsigned atomicDec(unsigned *, unsigned);
__device__ float fmaf(float, float, float);
__device__ float fminf(float, float);
__device__ float fmaxf(float, float);
__device__ float fdividef(float, float);
__device__ float saturatef(float);
__device__ float rcbrtf(float);
__device__ float normcdff(float);
__device__ float erfcinvf(float);
__device__ float erfinvf(float);
__device__ double rsqrt(double);
__device__ double rcbrt(double);
__device__ double normcdf(double);
__device__ double erfinv(double);
__device__ float sinpif(float);
__device__ float cospif(float);
__device__ void sincospif(float, float *, float *);
__device__ double sinpi(double);
__device__ double cospi(double);
__device__ void sincospi(double, double *, double *);
__device__ float exp10f(float);
__device__ double exp10(double);
__host__ __device__ inline uint3 make_uint3(unsigned x, unsigned y, unsigned z)
{ return {x, y, z}; }
__device__ void sincosf(float, float *, float *);
__device__ void sincos(double, double *, double *);
__device__ long lroundf(float);
__device__ long lrintf(float);
__device__ long long llroundf(float);
__device__ long long llrintf(float);
__device__ float truncf(float);
__device__ float roundf(float);
__device__ float rintf(float);
__device__ float cbrtf(float);
__device__ float hypotf(float, float);
__device__ float fmodf(float, float);
__device__ float copysignf(float, float);
__device__ float erff(float);
__device__ float erfcf(float);
__device__ float lgammaf(float);
__device__ float tgammaf(float);
__device__ float sinhf(float);
__device__ float coshf(float);
__device__ float atan2f(float, float);
__device__ float ldexpf(float, int);
__device__ float frexpf(float, int *);
__device__ float modff(float, float *);
__device__ float remainderf(float, float);
__device__ float fdimf(float, float);
__device__ int isnan(float);
__device__ int isinf(float);
__device__ int isfinite(float);
__device__ int signbit(float);
struct ushort2 { unsigned short x, y; };
struct ushort4 { unsigned short x, y, z, w; };
struct ulonglong2 { unsigned long long x, y; };
struct long2 { long x, y; };
struct ulong2 { unsigned long x, y; };
struct ulong4 { unsigned long x, y, z, w; };
struct long4 { long x, y, z, w; };
struct ulonglong4 { unsigned long long x, y, z, w; };
struct ushort3 { unsigned short x, y, z; };
__host__ __device__ inline ulong4 make_ulong4(unsigned long x, unsigned long y,
                                              unsigned long z, unsigned long w)
{ return {x, y, z, w}; }
__host__ __device__ inline ushort2 make_ushort2(unsigned short x, unsigned short y)
{ return {x, y}; }
__host__ __device__ inline ulonglong2 make_ulonglong2(unsigned long long x,
                                                      unsigned long long y) { return {x, y}; }


// ---- the runtime API's other parts: limits, attributes, occupancy, texture objects,
// pitched memory, arrays; device code may call malloc and free ----
__device__ void *malloc(size_t);
__device__ void free(void *);
enum cudaLimit { cudaLimitStackSize, cudaLimitPrintfFifoSize, cudaLimitMallocHeapSize,
                 cudaLimitDevRuntimeSyncDepth, cudaLimitDevRuntimePendingLaunchCount,
                 cudaLimitMaxL2FetchGranularity, cudaLimitPersistingL2CacheSize };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault, cudaSharedMemBankSizeFourByte,
                           cudaSharedMemBankSizeEightByte };
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX, cudaDevAttrMaxBlockDimY,
  cudaDevAttrMaxBlockDimZ, cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY,
  cudaDevAttrMaxGridDimZ, cudaDevAttrMaxSharedMemoryPerBlock,
  cudaDevAttrTotalConstantMemory, cudaDevAttrWarpSize, cudaDevAttrMaxPitch,
  cudaDevAttrMaxRegistersPerBlock, cudaDevAttrClockRate, cudaDevAttrTextureAlignment,
  cudaDevAttrGpuOverlap, cudaDevAttrMultiProcessorCount,
  cudaDevAttrMemoryClockRate = 36, cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38, cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106 };
struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA,
      maxDynamicSharedSizeBytes, preferredShmemCarveout;
};
struct cudaExtent { size_t width, height, depth; };
struct cudaPos { size_t x, y, z; };
struct cudaPitchedPtr { void *ptr; size_t pitch, xsize, ysize; };
enum cudaChannelFormatKind { cudaChannelFormatKindSigned, cudaChannelFormatKindUnsigned,
                             cudaChannelFormatKindFloat, cudaChannelFormatKindNone };
struct cudaChannelFormatDesc { int x, y, z, w; cudaChannelFormatKind f; };
typedef struct cudaArray *cudaArray_t;
typedef const struct cudaArray *cudaArray_const_t;
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
enum cudaResourceType { cudaResourceTypeArray, cudaResourceTypeMipmappedArray,
                        cudaResourceTypeLinear, cudaResourceTypePitch2D };
enum cudaTextureAddressMode { cudaAddressModeWrap, cudaAddressModeClamp,
                              cudaAddressModeMirror, cudaAddressModeBorder };
enum cudaTextureFilterMode { cudaFilterModePoint, cudaFilterModeLinear };
enum cudaTextureReadMode { cudaReadModeElementType, cudaReadModeNormalizedFloat };
struct cudaResourceDesc {
  cudaResourceType resType;
  union {
    struct { cudaArray_t array; } array;
    struct { void *devPtr; cudaChannelFormatDesc desc; size_t sizeInBytes; } linear;
    struct { void *devPtr; cudaChannelFormatDesc desc; size_t width, height, pitchInBytes; }
        pitch2D;
  } res;
};
struct cudaTextureDesc {
  cudaTextureAddressMode addressMode[3]; cudaTextureFilterMode filterMode;
  cudaTextureReadMode readMode; int sRGB; float borderColor[4]; int normalizedCoords;
  unsigned maxAnisotropy;
};
struct cudaMemcpy3DParms {
  cudaArray_t srcArray; cudaPos srcPos; cudaPitchedPtr srcPtr;
  cudaArray_t dstArray; cudaPos dstPos; cudaPitchedPtr dstPtr;
  cudaExtent extent; cudaMemcpyKind kind;
};
cudaError_t cudaDeviceSetLimit(cudaLimit, size_t);
cudaError_t cudaDeviceGetLimit(size_t *, cudaLimit);
cudaError_t cudaDeviceGetAttribute(int *, cudaDeviceAttr, int);
cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig);
cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *, const void *);
cudaError_t cudaFuncSetSharedMemConfig(const void *, cudaSharedMemConfig);
template <class T> cudaError_t cudaFuncSetAttribute(T *f, cudaFuncAttribute a, int v)
{ return cudaFuncSetAttribute((const void *)f, a, v); }
template <class T> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, T *f)
{ return cudaFuncGetAttributes(a, (const void *)f); }
template <class T> cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
    int *, T, int, size_t);
template <class T> cudaError_t cudaOccupancyMaxPotentialBlockSize(int *, int *, T,
                                                                  size_t = 0, int = 0);
cudaError_t cudaMalloc3D(cudaPitchedPtr *, cudaExtent);
cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms *);
cudaError_t cudaMemset2D(void *, size_t, int, size_t, size_t);
cudaError_t cudaMemcpy2DAsync(void *, size_t, const void *, size_t, size_t, size_t,
                              cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMallocArray(cudaArray_t *, const cudaChannelFormatDesc *, size_t,
                            size_t = 0, unsigned = 0);
cudaError_t cudaMalloc3DArray(cudaArray_t *, const cudaChannelFormatDesc *, cudaExtent,
                              unsigned = 0);
cudaError_t cudaFreeArray(cudaArray_t);
cudaError_t cudaMemcpyToArray(cudaArray_t, size_t, size_t, const void *, size_t,
                              cudaMemcpyKind);
cudaError_t cudaMemcpy2DToArray(cudaArray_t, size_t, size_t, const void *, size_t, size_t,
                                size_t, cudaMemcpyKind);
cudaError_t cudaCreateTextureObject(cudaTextureObject_t *, const cudaResourceDesc *,
                                    const cudaTextureDesc *, const void *);
cudaError_t cudaDestroyTextureObject(cudaTextureObject_t);
cudaChannelFormatDesc cudaCreateChannelDesc(int, int, int, int, cudaChannelFormatKind);
template <class T> cudaChannelFormatDesc cudaCreateChannelDesc(void);
inline cudaPitchedPtr make_cudaPitchedPtr(void *d, size_t p, size_t x, size_t y)
{ return {d, p, x, y}; }
inline cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) { return {w, h, d}; }
inline cudaPos make_cudaPos(size_t x, size_t y, size_t z) { return {x, y, z}; }
template <class T> __device__ T tex1Dfetch(cudaTextureObject_t, int);
template <class T> __device__ T tex1D(cudaTextureObject_t, float);
template <class T> __device__ T tex2D(cudaTextureObject_t, float, float);
template <class T> __device__ T tex3D(cudaTextureObject_t, float, float, float);
template <class T> __device__ T tex2DLayered(cudaTextureObject_t, float, float, int);
template <class T> __device__ void surf2Dwrite(T, cudaSurfaceObject_t, int, int);
template <class T> __device__ T surf2Dread(cudaSurfaceObject_t, int, int);
// the integer min/max of mixed and long operands, as CUDA's math headers declare them
__device__ __host__ long min(long, long);
__device__ __host__ long max(long, long);
__device__ __host__ unsigned long min(unsigned long, unsigned long);
__device__ __host__ unsigned long max(unsigned long, unsigned long);
__device__ __host__ unsigned long long min(unsigned long long, unsigned long long);
__device__ __host__ unsigned long long max(unsigned long long, unsigned long long);
__device__ __host__ unsigned min(int, unsigned);
__device__ __host__ unsigned min(unsigned, int);
__device__ __host__ unsigned max(int, unsigned);
__device__ __host__ unsigned max(unsigned, int);
__device__ __host__ unsigned long min(long, unsigned long);
__device__ __host__ unsigned long min(unsigned long, long);
__device__ __host__ unsigned long max(long, unsigned long);
__device__ __host__ unsigned long max(unsigned long, long);
__device__ __host__ unsigned long long min(long long, unsigned long long);
__device__ __host__ unsigned long long min(unsigned long long, long long);
__device__ __host__ unsigned long long max(long long, unsigned long long);
__device__ __host__ unsigned long long max(unsigned long long, long long);
__device__ __host__ double min(float, double);
__device__ __host__ double min(double, float);
__device__ __host__ double max(float, double);
__device__ __host__ double max(double, float);
