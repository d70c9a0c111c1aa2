/* polycoal stub for <device_launch_parameters.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_DEVICE_LAUNCH_PARAMETERS_H
#define POLYCOAL_STUB_DEVICE_LAUNCH_PARAMETERS_H
#endif
