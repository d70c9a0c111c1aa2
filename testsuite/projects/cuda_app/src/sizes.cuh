// Sizes and host entry points of the test application (included relatively).
#pragma once

#ifndef N
#define N 1024          // rows
#endif
#ifndef M
#define M 512           // columns
#endif

void run_rows(const float *in, float *scaled, float *sums);
void run_axpy(float *y, const float *x, float a, int n);
