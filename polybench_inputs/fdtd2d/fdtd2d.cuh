/*
 * fdtd2d.cuh -- sizes, types and launch shapes of fdtd2d.cu (2-D FDTD).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_FDTD2D_CUH
#define POLYCOAL_FDTD2D_CUH

/* Standard dataset: ex, ey and hz are NX x NY; TMAX time steps. */
#ifndef TMAX
#define TMAX 500
#endif
#ifndef NX
#define NX 2048
#endif
#ifndef NY
#define NY 2048
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* All three kernels: 2-D, 32x8 blocks, j along x, i along y. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_TMAX tmax
# define _PB_NX nx
# define _PB_NY ny
#else
# define _PB_TMAX TMAX
# define _PB_NX NX
# define _PB_NY NY
#endif

/* Errors of an explicit scheme grow with the number of time steps. */
#define PERCENT_DIFF_ERROR_THRESHOLD 10.05

#endif /* POLYCOAL_FDTD2D_CUH */
