/*
 * gesummv.cuh -- sizes, types and launch shapes of gesummv.cu.
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_GESUMMV_CUH
#define POLYCOAL_GESUMMV_CUH

/* Standard dataset: A and B are N x N. */
#ifndef N
#define N 4096
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* The kernel is 1-D: 256 threads per block. */
#define DIM_THREAD_BLOCK_X 256
#define DIM_THREAD_BLOCK_Y 1

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_N n
#else
# define _PB_N N
#endif

/* Scalars of y = alpha A x + beta B x. */
#define ALPHA 1.5f
#define BETA 1.25f

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_GESUMMV_CUH */
