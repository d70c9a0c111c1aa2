/*
 * jacobi2d.cuh -- sizes, types and launch shapes of jacobi2d.cu.
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_JACOBI2D_CUH
#define POLYCOAL_JACOBI2D_CUH

/* Standard dataset: A and B are N x N; TSTEPS time steps. */
#ifndef TSTEPS
#define TSTEPS 20
#endif
#ifndef N
#define N 1000
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Both kernels: 2-D, 32x8 blocks, j along x, i along y. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_TSTEPS tsteps
# define _PB_N n
#else
# define _PB_TSTEPS TSTEPS
# define _PB_N N
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

#endif /* POLYCOAL_JACOBI2D_CUH */
