/* polycoal stub for <device_functions.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_DEVICE_FUNCTIONS_H
#define POLYCOAL_STUB_DEVICE_FUNCTIONS_H
#endif
