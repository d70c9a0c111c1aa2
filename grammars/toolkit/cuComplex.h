/* polycoal's declarations of <cuComplex.h>, read when no CUDA toolkit is installed (with
   one, the toolkit's own header is read): the complex types as vector types and their
   arithmetic, by the names CUDA's header gives them. */
#ifndef POLYCOAL_CUCOMPLEX_H
#define POLYCOAL_CUCOMPLEX_H
#include <math.h>
#include "vector_types.h"

typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;

#define PC_COMPLEX(T, V, S)                                                              \
  __host__ __device__ static __inline__ T cuCreal##S(V x) { return x.x; }              \
  __host__ __device__ static __inline__ T cuCimag##S(V x) { return x.y; }              \
  __host__ __device__ static __inline__ V cuConj##S(V x) { V r; r.x = x.x; r.y = -x.y; return r; } \
  __host__ __device__ static __inline__ V cuCadd##S(V a, V b) { V r; r.x = a.x + b.x; r.y = a.y + b.y; return r; } \
  __host__ __device__ static __inline__ V cuCsub##S(V a, V b) { V r; r.x = a.x - b.x; r.y = a.y - b.y; return r; } \
  __host__ __device__ static __inline__ V cuCmul##S(V a, V b) { V r; r.x = a.x * b.x - a.y * b.y; r.y = a.x * b.y + a.y * b.x; return r; } \
  __host__ __device__ static __inline__ V cuCdiv##S(V a, V b) { T d = b.x * b.x + b.y * b.y; V r; r.x = (a.x * b.x + a.y * b.y) / d; r.y = (a.y * b.x - a.x * b.y) / d; return r; } \
  __host__ __device__ static __inline__ T cuCabs##S(V x) { return sqrt(x.x * x.x + x.y * x.y); }

PC_COMPLEX(float, cuFloatComplex, f)
PC_COMPLEX(double, cuDoubleComplex, )
#undef PC_COMPLEX

__host__ __device__ static __inline__ cuFloatComplex make_cuFloatComplex(float r, float i)
{ cuFloatComplex z; z.x = r; z.y = i; return z; }
__host__ __device__ static __inline__ cuDoubleComplex make_cuDoubleComplex(double r, double i)
{ cuDoubleComplex z; z.x = r; z.y = i; return z; }
__host__ __device__ static __inline__ cuComplex make_cuComplex(float r, float i)
{ return make_cuFloatComplex(r, i); }
__host__ __device__ static __inline__ cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex c)
{ return make_cuFloatComplex((float)c.x, (float)c.y); }
__host__ __device__ static __inline__ cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex c)
{ return make_cuDoubleComplex((double)c.x, (double)c.y); }
#endif
