/*
 * lu.cuh -- sizes, types and launch shapes of lu.cu (LU decomposition).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_LU_CUH
#define POLYCOAL_LU_CUH

/* Standard dataset: A is N x N. */
#ifndef N
#define N 2048
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Kernel 1 (scale row k): 1-D, 256 threads per block. */
#define DIM_THREAD_BLOCK_KERNEL_1_X 256
#define DIM_THREAD_BLOCK_KERNEL_1_Y 1

/* Kernel 2 (update the trailing submatrix): 2-D, 32x8, j along x, i along y. */
#define DIM_THREAD_BLOCK_KERNEL_2_X 32
#define DIM_THREAD_BLOCK_KERNEL_2_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_N n
#else
# define _PB_N N
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_LU_CUH */
