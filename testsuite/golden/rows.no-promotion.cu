// Row reductions as people spell them (issue 12): one thread per row i, a loop over the
// columns j of a row-major matrix (uncoalesced), the result into y[i]. Every kernel must
// transform without an internal error and compute what the original computes; the
// reassociable ones (sums, integer products) become one warp per row, the others
// (floating-point products, divisions, min/max) stay as they are.
#ifndef N
#define N 100
#endif
#ifndef M
#define M 70
#endif
__global__ void private_sum(const float *__restrict__ A, const float *__restrict__ x,
                            float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 18)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 18)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    float s;
    if (pc_lane == 0) { s = 0; }
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane; (pc_i1 <= 69); pc_i1 += 32) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)] * x[(pc_i1)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) s += pc_acc0;
      }
    }
    if (pc_lane == 0) { y[(pc_x)] = s; }
  }
}
__global__ void minus_assign(const float *__restrict__ A, const float *__restrict__ x,
                             float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 28)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 28)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane; (pc_i1 <= 69); pc_i1 += 32) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)] * x[(pc_i1)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) y[(pc_x)] -= pc_acc0;
      }
    }
  }
}
__global__ void step_two(const float *__restrict__ A, const float *__restrict__ x,
                         float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 37)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 37)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    if (pc_lane == 0) { y[(pc_x)] = 0; }
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane * 2; (pc_i1 <= 69); pc_i1 += 64) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)] * x[(pc_i1)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) y[(pc_x)] += pc_acc0;
      }
    }
  }
}
__global__ void step_three_from_one(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 45)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 45)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (1) + pc_lane * 3; (pc_i1 <= 69); pc_i1 += 96) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) y[(pc_x)] += pc_acc0;
      }
    }
  }
}
__global__ void accumulator_on_the_right(const float *__restrict__ A,
                                         const float *__restrict__ x, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 53)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 53)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane; (pc_i1 <= 69); pc_i1 += 32) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)] * x[(pc_i1)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) y[(pc_x)] += pc_acc0;
      }
    }
  }
}
__global__ void subtract_spelled_out(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 60)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 60)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane; (pc_i1 <= 69); pc_i1 += 32) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) y[(pc_x)] -= pc_acc0;
      }
    }
  }
}
__global__ void divide_assign(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] /= A[i * M + j] * 0.5f + 1.0f;
}
__global__ void float_product(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] *= A[i * M + j];
}
__global__ void int_product(const int *__restrict__ A, int *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 81)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 81)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    {
      int pc_acc0 = 1;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane; (pc_i1 <= 69); pc_i1 += 32) {
        pc_acc0 *= A[(pc_i1 + 70 * pc_x)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 *= __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) y[(pc_x)] *= pc_acc0;
      }
    }
  }
}
__global__ void min_by_fminf(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] = fminf(y[i], A[i * M + j]);
}
__global__ void max_by_ternary(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] = (A[i * M + j] > y[i]) ? A[i * M + j] : y[i];
}
__global__ void double_private(const double *__restrict__ A, double *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: j (loop at line 103)
   *   one warp per value of x: its 32 lanes split the reduction loop j (loop at line 103)
   *   (coalesced loads), add their partial sums with a shuffle tree, and lane 0 updates
   *   memory (floating-point additions are reassociated)
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  const int pc_lane = threadIdx.x & 31;
  for (int pc_x = (0) + (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5); pc_x <= (99); pc_x += (int)((blockDim.x * gridDim.x) >> 5)) {
    double s;
    if (pc_lane == 0) { s = 1.0; }
    {
      double pc_acc0 = 0;
      int pc_hit0 = 0;
      for (int pc_i1 = (0) + pc_lane; (pc_i1 <= 69); pc_i1 += 32) {
        pc_acc0 += A[(pc_i1 + 70 * pc_x)]; pc_hit0 = 1;
      }
      for (int pc_offset = 16; pc_offset > 0; pc_offset >>= 1) {
        pc_acc0 += __shfl_down_sync(0xffffffffu, pc_acc0, pc_offset);
        pc_hit0 |= __shfl_down_sync(0xffffffffu, pc_hit0, pc_offset);
      }
      if (pc_lane == 0) {
        if (pc_hit0) s += pc_acc0;
      }
    }
    if (pc_lane == 0) { y[(pc_x)] = 2.0 * s; }
  }
}
__global__ void count_increments(const float *__restrict__ A, int *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      if (j >= i % 7)
        y[i]++;
}
int main()
{
  float *A, *x, *y; int *Ai, *yi; double *Ad, *yd;
  cudaMalloc(&A, sizeof(float) * N * M); cudaMalloc(&x, sizeof(float) * M);
  cudaMalloc(&y, sizeof(float) * N); cudaMalloc(&Ai, sizeof(int) * N * M);
  cudaMalloc(&yi, sizeof(int) * N); cudaMalloc(&Ad, sizeof(double) * N * M);
  cudaMalloc(&yd, sizeof(double) * N);
  { /* polycoal: one warp per row: x = gx; was private_sum<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    private_sum<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(A, x, y);
  }
  { /* polycoal: one warp per row: x = gx; was minus_assign<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    minus_assign<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(A, x, y);
  }
  { /* polycoal: one warp per row: x = gx; was step_two<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    step_two<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(A, x, y);
  }
  { /* polycoal: one warp per row: x = gx; was step_three_from_one<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    step_three_from_one<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(A, y);
  }
  { /* polycoal: one warp per row: x = gx; was accumulator_on_the_right<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    accumulator_on_the_right<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(A, x, y);
  }
  { /* polycoal: one warp per row: x = gx; was subtract_spelled_out<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    subtract_spelled_out<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(A, y);
  }
  divide_assign<<<(N + 31) / 32, 32>>>(A, y);
  float_product<<<(N + 31) / 32, 32>>>(A, y);
  { /* polycoal: one warp per row: x = gx; was int_product<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    int_product<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(Ai, yi);
  }
  min_by_fminf<<<(N + 31) / 32, 32>>>(A, y);
  max_by_ternary<<<(N + 31) / 32, 32>>>(A, y);
  { /* polycoal: one warp per row: x = gx; was double_private<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    double_private<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 7) / 8 < 2147483647 ? (pc_extent_x + 7) / 8 : 2147483647), 1, 1), dim3(256, 1, 1)>>>(Ad, yd);
  }
  count_increments<<<(N + 31) / 32, 32>>>(A, yi);
  return 0;
}
