// polycoal's declarations of <cuda_fp16.h> for Clang (half precision): read where a program
// includes it (frontend/clang.py puts this directory before the toolkit's). The shapes
// are the documented API's; nothing here is compiled or linked.
#pragma once
#include "pc_narrow.h"
PC_NARROW(__half)
PC_NARROW2(__half2, __half)
typedef __half half;
typedef __half2 half2;
typedef unsigned short __half_raw_bits;
struct __half_raw { unsigned short x; };
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ __half __double2half(double);
__host__ __device__ float __half2float(__half);
__host__ __device__ __half2 __float2half2_rn(float);
__host__ __device__ __half2 __floats2half2_rn(float, float);
__host__ __device__ __half2 __halves2half2(__half, __half);
__host__ __device__ __half2 __half2half2(__half);
__host__ __device__ float2 __half22float2(__half2);
__host__ __device__ __half2 __float22half2_rn(float2);
__host__ __device__ float __low2float(__half2);
__host__ __device__ float __high2float(__half2);
__host__ __device__ __half __low2half(__half2);
__host__ __device__ __half __high2half(__half2);
__host__ __device__ __half __int2half_rn(int);
__host__ __device__ int __half2int_rn(__half);
__host__ __device__ int __half2int_rz(__half);
__host__ __device__ __half __ushort_as_half(unsigned short);
__host__ __device__ unsigned short __half_as_ushort(__half);
__host__ __device__ short __half_as_short(__half);
__device__ __half __hadd(__half, __half);
__device__ __half __hsub(__half, __half);
__device__ __half __hmul(__half, __half);
__device__ __half __hdiv(__half, __half);
__device__ __half __hfma(__half, __half, __half);
__device__ __half __hneg(__half);
__device__ __half __hmax(__half, __half);
__device__ __half __hmin(__half, __half);
__device__ bool __hlt(__half, __half);
__device__ bool __hgt(__half, __half);
__device__ bool __heq(__half, __half);
__device__ __half2 __hadd2(__half2, __half2);
__device__ __half2 __hsub2(__half2, __half2);
__device__ __half2 __hmul2(__half2, __half2);
__device__ __half2 __h2div(__half2, __half2);
__device__ __half2 __hfma2(__half2, __half2, __half2);
__device__ __half2 __hmax2(__half2, __half2);
__device__ __half2 __hmin2(__half2, __half2);
__device__ __half hexp(__half);
__device__ __half hsqrt(__half);
__device__ __half hrsqrt(__half);
__device__ __half hlog(__half);
__device__ __half htanh(__half);
__device__ __half2 h2exp(__half2);
__device__ __half2 h2sqrt(__half2);
__device__ __half2 h2rsqrt(__half2);
__device__ __half __shfl_down_sync(unsigned, __half, unsigned, int = 32);
__device__ __half __shfl_xor_sync(unsigned, __half, int, int = 32);
