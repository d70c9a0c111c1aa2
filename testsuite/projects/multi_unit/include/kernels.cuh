// A kernel in a header: rows.cu and cols.cu both include it and launch row_scale<float>
// (each translation unit gets its own transformed copy; this header never changes).
#pragma once

template <typename T>
__global__ void row_scale(const T *__restrict__ in, T *__restrict__ out, int rows, int cols,
                          T factor)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows)
    for (int c = 0; c < cols; c++)
      out[r * cols + c] = factor * in[r * cols + c];
}
