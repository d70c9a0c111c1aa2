/*
 * mvt.cuh -- sizes, types and launch shapes of mvt.cu (two matrix-vector products).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_MVT_CUH
#define POLYCOAL_MVT_CUH

/* Standard dataset: a is N x N. */
#ifndef N
#define N 4096
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Both kernels are 1-D but are launched with a 32x8 block and a 1-D grid:
 * threadIdx.y is never read, so 8 threads accumulate into each element. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_N n
#else
# define _PB_N N
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_MVT_CUH */
