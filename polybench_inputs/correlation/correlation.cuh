/*
 * correlation.cuh -- sizes, types and launch shapes of correlation.cu.
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_CORRELATION_CUH
#define POLYCOAL_CORRELATION_CUH

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

/* Kernels 1, 2 and 4 (means, standard deviations, correlations): 1-D, 256. */
#define DIM_THREAD_BLOCK_KERNEL_1_X 256
#define DIM_THREAD_BLOCK_KERNEL_1_Y 1
#define DIM_THREAD_BLOCK_KERNEL_2_X 256
#define DIM_THREAD_BLOCK_KERNEL_2_Y 1
#define DIM_THREAD_BLOCK_KERNEL_4_X 256
#define DIM_THREAD_BLOCK_KERNEL_4_Y 1

/* Kernel 3 (centre and scale the data): 2-D, 32x8. */
#define DIM_THREAD_BLOCK_KERNEL_3_X 32
#define DIM_THREAD_BLOCK_KERNEL_3_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_M m
# define _PB_N n
#else
# define _PB_M M
# define _PB_N N
#endif

#define FLOAT_N ((DATA_TYPE)N)

/* Standard deviations at or below EPS are replaced by 1 (constant columns). */
#define EPS 0.005f

/* Long float accumulations (N terms) around cancelling means. */
#define PERCENT_DIFF_ERROR_THRESHOLD 1.05

#endif /* POLYCOAL_CORRELATION_CUH */
