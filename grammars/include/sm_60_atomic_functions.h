/* polycoal stub for <sm_60_atomic_functions.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_SM_60_ATOMIC_FUNCTIONS_H
#define POLYCOAL_STUB_SM_60_ATOMIC_FUNCTIONS_H
#endif
