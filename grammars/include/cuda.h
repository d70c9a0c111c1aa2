/* polycoal stub for <cuda.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_CUDA_H
#define POLYCOAL_STUB_CUDA_H
#endif
