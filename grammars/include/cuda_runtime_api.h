/* polycoal stub for <cuda_runtime_api.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_CUDA_RUNTIME_API_H
#define POLYCOAL_STUB_CUDA_RUNTIME_API_H
#endif
