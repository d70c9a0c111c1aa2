/*
 * 3mm.cuh -- sizes, types and launch shapes of 3mm.cu (G = (A B) (C D)).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_3MM_CUH
#define POLYCOAL_3MM_CUH

/* Standard dataset: A NI x NK, B NK x NJ, C NJ x NM, D NM x NL,
 * E = A B is NI x NJ, F = C D is NJ x NL, G = E F is NI x NL. */
#ifndef NI
#define NI 512
#endif
#ifndef NJ
#define NJ 512
#endif
#ifndef NK
#define NK 512
#endif
#ifndef NL
#define NL 512
#endif
#ifndef NM
#define NM 512
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* All three kernels: 2-D, 32x8 blocks, j along x, i along y. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_NI ni
# define _PB_NJ nj
# define _PB_NK nk
# define _PB_NL nl
# define _PB_NM nm
#else
# define _PB_NI NI
# define _PB_NJ NJ
# define _PB_NK NK
# define _PB_NL NL
# define _PB_NM NM
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_3MM_CUH */
