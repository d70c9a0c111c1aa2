/*
 * atax.cuh -- sizes, types and launch shapes of atax.cu (y = A^T (A x)).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_ATAX_CUH
#define POLYCOAL_ATAX_CUH

/* Standard dataset; override with -DNX=... -DNY=... */
#ifndef NX
#define NX 4096
#endif
#ifndef NY
#define NY 4096
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Both kernels are 1-D but are launched with a 32x8 block and a 1-D grid:
 * threadIdx.y is never read, so each element is computed by 8 threads. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

/* Loop bounds: the size macros, or the kernels' int arguments. */
#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_NX nx
# define _PB_NY ny
#else
# define _PB_NX NX
# define _PB_NY NY
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.5

#endif /* POLYCOAL_ATAX_CUH */
