/* polycoal stub for <cuda_fp16.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_CUDA_FP16_H
#define POLYCOAL_STUB_CUDA_FP16_H
#endif
