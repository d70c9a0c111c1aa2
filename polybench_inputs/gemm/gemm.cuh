/*
 * gemm.cuh -- sizes, types and launch shapes of gemm.cu (C = alpha A B + beta C).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_GEMM_CUH
#define POLYCOAL_GEMM_CUH

/* Standard dataset: A is NI x NK, B is NK x NJ, C is NI x NJ. */
#ifndef NI
#define NI 512
#endif
#ifndef NJ
#define NJ 512
#endif
#ifndef NK
#define NK 512
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
# define _PB_NK nk
#else
# define _PB_NI NI
# define _PB_NJ NJ
# define _PB_NK NK
#endif

#define ALPHA 1.5f
#define BETA 1.25f

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_GEMM_CUH */
