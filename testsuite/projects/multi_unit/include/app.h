// Sizes and the host entry points of the translation units.
#pragma once

#ifndef ROWS
#define ROWS 300            // not a multiple of either ROW_BLOCK: the grids differ
#endif
#ifndef COLS
#define COLS 96
#endif
#ifndef ROW_BLOCK
#define ROW_BLOCK 128       // each target sets its own (CMakeLists.txt)
#endif

void run_rows(const float *in, float *out, float *sums);
void run_cols(const float *in, float *out, double *wide);
