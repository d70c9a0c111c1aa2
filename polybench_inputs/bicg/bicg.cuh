/*
 * bicg.cuh -- sizes, types and launch shapes of bicg.cu (BiCG sub-kernel).
 * polycoal regression corpus: own program in the style of PolyBench/GPU 1.0.
 */
#ifndef POLYCOAL_BICG_CUH
#define POLYCOAL_BICG_CUH

/* Standard dataset: A is NX x NY. */
#ifndef NX
#define NX 4096
#endif
#ifndef NY
#define NY 4096
#endif

#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

/* Both kernels: 1-D, 256 threads per block. */
#define DIM_THREAD_BLOCK_X 256
#define DIM_THREAD_BLOCK_Y 1

#ifndef POLYBENCH_USE_SCALAR_LB
# define _PB_NX nx
# define _PB_NY ny
#else
# define _PB_NX NX
# define _PB_NY NY
#endif

#define PERCENT_DIFF_ERROR_THRESHOLD 0.5

#endif /* POLYCOAL_BICG_CUH */
