// An included .cu: rows.cu includes it; it is not a translation unit of its own.
__global__ void row_sums(const float *__restrict__ in, float *__restrict__ sums, int rows,
                         int cols)
{
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += in[r * cols + c];
    sums[r] = s;
  }
}
