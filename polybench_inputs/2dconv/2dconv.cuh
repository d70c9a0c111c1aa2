/*
 * 2dconv.cuh -- sizes, types and launch shapes of 2dconv.cu (3x3 convolution).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_2DCONV_CUH
#define POLYCOAL_2DCONV_CUH

/* Standard dataset: A and B are NI x NJ. */
#ifndef NI
#define NI 4096
#endif
#ifndef NJ
#define NJ 4096
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

/* The 3x3 mask: CRC = row offset R (1..3 for -1..+1), column offset C. */
#define C11 (+0.25f)
#define C12 (-0.40f)
#define C13 (+0.30f)
#define C21 (+0.45f)
#define C22 (+0.55f)
#define C23 (+0.65f)
#define C31 (-0.70f)
#define C32 (-0.85f)
#define C33 (+0.15f)

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_2DCONV_CUH */
