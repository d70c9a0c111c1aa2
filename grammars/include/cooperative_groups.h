/* polycoal stub for <cooperative_groups.h>: the front end only preprocesses; CUDA declarations are not needed. */
#ifndef POLYCOAL_STUB_COOPERATIVE_GROUPS_H
#define POLYCOAL_STUB_COOPERATIVE_GROUPS_H
#endif
