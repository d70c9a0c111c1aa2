/*
 * covariance.cuh -- sizes, types and launch shapes of covariance.cu.
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_COVARIANCE_CUH
#define POLYCOAL_COVARIANCE_CUH

/* Standard dataset: data is N x M (N samples of M variables), symmat M x M. */
#ifndef M
#define M 2048
#endif
#ifndef N
#define N 2048
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Kernel 1 (column means): 1-D, 256 threads per block. */
#define DIM_THREAD_BLOCK_KERNEL_1_X 256
#define DIM_THREAD_BLOCK_KERNEL_1_Y 1

/* Kernel 2 (centre the data): 2-D, 32x8. */
#define DIM_THREAD_BLOCK_KERNEL_2_X 32
#define DIM_THREAD_BLOCK_KERNEL_2_Y 8

/* Kernel 3 (covariance matrix): 1-D, 256 threads per block. */
#define DIM_THREAD_BLOCK_KERNEL_3_X 256
#define DIM_THREAD_BLOCK_KERNEL_3_Y 1

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_M m
# define _PB_N n
#else
# define _PB_M M
# define _PB_N N
#endif

#define FLOAT_N ((DATA_TYPE)N)

/* Long float accumulations (N terms) around cancelling means. */
#define PERCENT_DIFF_ERROR_THRESHOLD 1.05

#endif /* POLYCOAL_COVARIANCE_CUH */
