/* polycoal stub for <vector_types.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_VECTOR_TYPES_H
#define POLYCOAL_STUB_VECTOR_TYPES_H
#endif
