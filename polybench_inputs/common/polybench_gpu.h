/*
 * polybench_gpu.h -- shared host helpers for polycoal's polybench_inputs/ corpus.
 *
 * polycoal's own code, written for its regression corpus in the style of
 * PolyBench/GPU 1.0 (naive OpenMP-to-CUDA ports).  Host code only: a wall-clock
 * timer, a relative percent difference for CPU/GPU comparisons, the device
 * number and an error-checking macro for CUDA runtime calls.
 */
#ifndef POLYCOAL_POLYBENCH_GPU_H
#define POLYCOAL_POLYBENCH_GPU_H

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <sys/time.h>

/* Device the programs run on (cudaSetDevice). */
#define GPU_DEVICE 0

/* Values whose magnitudes are both below this are taken as equal. */
#define PB_SMALL_VALUE 0.01

/* Added to the denominator of percentDiff so it never divides by zero. */
#define PB_DENOM_EPS 1.0e-8

/* Print the failing call and its error string, then exit. */
#define CUDA_CHECK(call)                                                   \
  do {                                                                     \
    cudaError_t pb_err_ = (call);                                          \
    if (pb_err_ != cudaSuccess) {                                          \
      fprintf(stderr, "CUDA error at %s:%d: %s returned %s\n", __FILE__,   \
              __LINE__, #call, cudaGetErrorString(pb_err_));               \
      exit(EXIT_FAILURE);                                                  \
    }                                                                      \
  } while (0)

/* Wall-clock time in seconds. */
static inline double rtclock(void)
{
  struct timeval tv;
  int rc = gettimeofday(&tv, NULL);
  if (rc != 0)
    fprintf(stderr, "rtclock: gettimeofday failed (%d)\n", rc);
  return (double)tv.tv_sec + (double)tv.tv_usec * 1.0e-6;
}

/* Relative difference of b from a, in percent.  Two values that are both
 * close to zero are reported as equal: their relative error says nothing. */
static inline double percentDiff(double a, double b)
{
  double fa = fabs(a);
  double fb = fabs(b);
  if (fa < PB_SMALL_VALUE && fb < PB_SMALL_VALUE)
    return 0.0;
  return 100.0 * fabs(a - b) / ((fa > fb ? fa : fb) + PB_DENOM_EPS);
}

#endif /* POLYCOAL_POLYBENCH_GPU_H */
