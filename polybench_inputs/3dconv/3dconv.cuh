/*
 * 3dconv.cuh -- sizes, types and launch shapes of 3dconv.cu (3-D convolution).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_3DCONV_CUH
#define POLYCOAL_3DCONV_CUH

/* Standard dataset: A and B are NI x NJ x NK, stored A[i * NJ * NK + j * NK + k]. */
#ifndef NI
#define NI 256
#endif
#ifndef NJ
#define NJ 256
#endif
#ifndef NK
#define NK 256
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* 2-D kernel over one i-plane: 32x8 blocks, k along x, j along y. */
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

/* Weights of the 11 points taken from the 3x3x3 neighbourhood:
 * CM* on plane i-1, C0* on plane i, CP* on plane i+1. */
#define CM1 (+0.20f)
#define CM2 (-0.35f)
#define CM3 (+0.45f)
#define CM4 (-0.15f)
#define C01 (+0.60f)
#define C02 (+0.25f)
#define C03 (-0.30f)
#define CP1 (+0.55f)
#define CP2 (-0.40f)
#define CP3 (+0.10f)
#define CP4 (+0.35f)

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_3DCONV_CUH */
