// polycoal's declarations of <cuda_fp8.h> for Clang (8-bit floating point): read where a program
// includes it (frontend/clang.py puts this directory before the toolkit's). The shapes
// are the documented API's; nothing here is compiled or linked.
#pragma once
#include "cuda_fp16.h"
#include "cuda_bf16.h"
PC_NARROW(__nv_fp8_e4m3)
PC_NARROW(__nv_fp8_e5m2)
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };
struct __nv_fp8x2_e4m3 { __nv_fp8x2_storage_t __x; __host__ __device__ operator float2() const; };
struct __nv_fp8x4_e4m3 { __nv_fp8x4_storage_t __x; __host__ __device__ operator float4() const;
                         __nv_fp8x4_e4m3() = default; __host__ __device__ __nv_fp8x4_e4m3(float4); };
struct __nv_fp8x2_e5m2 { __nv_fp8x2_storage_t __x; __host__ __device__ operator float2() const; };
struct __nv_fp8x4_e5m2 { __nv_fp8x4_storage_t __x; __host__ __device__ operator float4() const; };
__host__ __device__ __nv_fp8_storage_t __nv_cvt_float_to_fp8(float, __nv_saturation_t,
                                                             __nv_fp8_interpretation_t);
__host__ __device__ __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t,
                                                       __nv_fp8_interpretation_t);
