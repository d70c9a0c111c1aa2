// CUDA's qualifiers and vector types for host C++: shared by polycoal's two CPU
// runtimes, cpu_runtime.h (kernels run by `validate --cpu` and `trace --cpu`) and
// cpu_program.h (whole programs run by the differential tester).
#pragma once

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __inline__ inline
#define __shared__ static
#define __constant__
#define __managed__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))   // anywhere among the specifiers, as nvcc

// a block's dynamic shared memory (the most sm_90 gives one block): every `extern
// __shared__ T name[];` of a kernel is rewritten into a pointer to it (runtime/
// cpu_program.py, dynamic_shared_for_cpu), so that they alias as on the device
alignas(256) inline unsigned char pc_dynamic_shared[227 * 1024];

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
  dim3(uint3 u) : x(u.x), y(u.y), z(u.z) {}
};
struct int2 { int x, y; };
struct int3 { int x, y, z; };
struct int4 { int x, y, z, w; };
struct float2 { float x, y; };
struct float3 { float x, y, z; };
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
inline int2 make_int2(int x, int y) { return {x, y}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
