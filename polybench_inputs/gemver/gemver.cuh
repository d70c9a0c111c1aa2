/*
 * gemver.cuh -- sizes, types and launch shapes of gemver.cu.
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_GEMVER_CUH
#define POLYCOAL_GEMVER_CUH

/* Standard dataset: A is N x N. */
#ifndef N
#define N 4096
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Kernel 1 (rank-2 update) is 2-D: 32x8 blocks. */
#define DIM_THREAD_BLOCK_KERNEL_1_X 32
#define DIM_THREAD_BLOCK_KERNEL_1_Y 8

/* Kernels 2 and 3 (matrix-vector) are 1-D: 256 threads per block. */
#define DIM_THREAD_BLOCK_KERNEL_2_X 256
#define DIM_THREAD_BLOCK_KERNEL_2_Y 1
#define DIM_THREAD_BLOCK_KERNEL_3_X 256
#define DIM_THREAD_BLOCK_KERNEL_3_Y 1

/* The shape of the first (2-D) kernel under the suite's usual names. */
#define DIM_THREAD_BLOCK_X DIM_THREAD_BLOCK_KERNEL_1_X
#define DIM_THREAD_BLOCK_Y DIM_THREAD_BLOCK_KERNEL_1_Y

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_N n
#else
# define _PB_N N
#endif

#define ALPHA 1.5f
#define BETA 1.2f

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_GEMVER_CUH */
