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

