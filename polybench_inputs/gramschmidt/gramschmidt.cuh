/*
 * gramschmidt.cuh -- sizes, types and launch shapes of gramschmidt.cu.
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_GRAMSCHMIDT_CUH
#define POLYCOAL_GRAMSCHMIDT_CUH

/* Standard dataset: A and Q are M x N (M rows, N columns, M >= N), R is N x N. */
#ifndef M
#define M 2048
#endif
#ifndef N
#define N 2048
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* All three kernels: 1-D, 256 threads per block (kernel 1 uses one thread). */
#define DIM_THREAD_BLOCK_X 256
#define DIM_THREAD_BLOCK_Y 1

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_M m
# define _PB_N n
#else
# define _PB_M M
# define _PB_N N
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_GRAMSCHMIDT_CUH */
