/*
 * syrk.cuh -- sizes, types and launch shapes of syrk.cu (C = alpha A A^T + beta C).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_SYRK_CUH
#define POLYCOAL_SYRK_CUH

/* Standard dataset: A is NI x NJ, C is NI x NI. */
#ifndef NI
#define NI 1024
#endif
#ifndef NJ
#define NJ 1024
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* 2-D kernel: 32x8 blocks, j along x, i along y. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_NI ni
# define _PB_NJ nj
#else
# define _PB_NI NI
# define _PB_NJ NJ
#endif

#define ALPHA 1.5f
#define BETA 0.5f

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_SYRK_CUH */
