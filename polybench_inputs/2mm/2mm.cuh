/*
 * 2mm.cuh -- sizes, types and launch shapes of 2mm.cu (D = alpha A B C + beta D).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_2MM_CUH
#define POLYCOAL_2MM_CUH

/* Standard dataset: A NI x NK, B NK x NJ, tmp NI x NJ, C NJ x NL, D NI x NL. */
#ifndef NI
#define NI 1024
#endif
#ifndef NJ
#define NJ 1024
#endif
#ifndef NK
#define NK 1024
#endif
#ifndef NL
#define NL 1024
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Both kernels: 2-D, 32x8 blocks, j along x, i along y. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_NI ni
# define _PB_NJ nj
# define _PB_NK nk
# define _PB_NL nl
#else
# define _PB_NI NI
# define _PB_NJ NJ
# define _PB_NK NK
# define _PB_NL NL
#endif

#define ALPHA 1.25f
#define BETA 0.75f

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_2MM_CUH */
