/*
 * adi.cuh -- sizes, types and launch shapes of adi.cu (alternating direction implicit).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_ADI_CUH
#define POLYCOAL_ADI_CUH

/* Standard dataset: A, B and X are N x N; TSTEPS time steps. */
#ifndef TSTEPS
#define TSTEPS 1
#endif
#ifndef N
#define N 1024
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* All six kernels: 1-D, 256 threads per block. */
#define DIM_THREAD_BLOCK_X 256
#define DIM_THREAD_BLOCK_Y 1

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_TSTEPS tsteps
# define _PB_N n
#else
# define _PB_TSTEPS TSTEPS
# define _PB_N N
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_ADI_CUH */
