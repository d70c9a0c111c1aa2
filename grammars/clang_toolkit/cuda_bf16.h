// polycoal's declarations of <cuda_bf16.h> for Clang (bfloat16): read where a program
// includes it (frontend/clang.py puts this directory before the toolkit's). The shapes
// are the documented API's; nothing here is compiled or linked.
#pragma once
#include "pc_narrow.h"
PC_NARROW(__nv_bfloat16)
PC_NARROW2(__nv_bfloat162, __nv_bfloat16)
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
struct __nv_bfloat16_raw { unsigned short x; };
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(float);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__host__ __device__ __nv_bfloat162 __floats2bfloat162_rn(float, float);
__host__ __device__ __nv_bfloat162 __float2bfloat162_rn(float);
__host__ __device__ __nv_bfloat162 __float22bfloat162_rn(float2);
__host__ __device__ float2 __bfloat1622float2(__nv_bfloat162);
__host__ __device__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short);
__host__ __device__ unsigned short __bfloat16_as_ushort(__nv_bfloat16);
__device__ __nv_bfloat16 __hadd(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hmul(__nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat16 __hfma(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16);
__device__ __nv_bfloat162 __hadd2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hmul2(__nv_bfloat162, __nv_bfloat162);
__device__ __nv_bfloat162 __hfma2(__nv_bfloat162, __nv_bfloat162, __nv_bfloat162);
