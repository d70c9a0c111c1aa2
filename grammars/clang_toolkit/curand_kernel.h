// polycoal's declarations of <curand_kernel.h> for Clang (cuRAND's device API): read where a program
// includes it (frontend/clang.py puts this directory before the toolkit's). The shapes
// are the documented API's; nothing here is compiled or linked.
#pragma once
struct curandStateXORWOW { unsigned d, v[5]; int boxmuller_flag, boxmuller_flag_double;
                           float boxmuller_extra; double boxmuller_extra_double; };
struct curandStatePhilox4_32_10 { uint4 ctr, output; uint2 key; unsigned STATE; };
struct curandStateMRG32k3a { unsigned s1[3], s2[3]; };
typedef curandStateXORWOW curandState_t;
typedef curandStateXORWOW curandState;
typedef curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;
typedef curandStateMRG32k3a curandStateMRG32k3a_t;
typedef curandStateXORWOW curandStateXORWOW_t;
template <typename S> __device__ void curand_init(unsigned long long, unsigned long long,
                                                  unsigned long long, S *);
template <typename S> __device__ unsigned curand(S *);
template <typename S> __device__ float curand_uniform(S *);
template <typename S> __device__ double curand_uniform_double(S *);
template <typename S> __device__ float curand_normal(S *);
template <typename S> __device__ double curand_normal_double(S *);
template <typename S> __device__ float4 curand_uniform4(S *);
template <typename S> __device__ float4 curand_normal4(S *);
template <typename S> __device__ uint4 curand4(S *);
template <typename S> __device__ float curand_log_normal(S *, float, float);
template <typename S> __device__ unsigned curand_poisson(S *, double);

