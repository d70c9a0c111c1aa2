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
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float s = 0;
    for (int j = 0; j < M; j++)
      s += A[i * M + j] * x[j];
    y[i] = s;
  }
}
__global__ void minus_assign(const float *__restrict__ A, const float *__restrict__ x,
                             float *__restrict__ y)
{
  /* polycoal: row reduction, the core paper's partial-sum form (section 4).
   *   the (row, j (loop at line 28)) plane is cut into 16x16 tiles, one block per tile
   *   (grid-stride over tiles); each thread computes one term, coalesced along the row,
   *   into shared memory; the thread at column 0 of each tile row sums that row and adds
   *   it to memory with atomicAdd. Floating-point additions are reassociated; statements
   *   before and after the loop run in kernels launched before and after this one.
   */
  __shared__ float pc_tile0[16][17];
  for (long long pc_ty = blockIdx.y; pc_ty * 16 <= (long long)(99) - (0); pc_ty += gridDim.y) {
    for (long long pc_tx = blockIdx.x; pc_tx * 16 <= (long long)(69) - (0); pc_tx += gridDim.x) {
      const int pc_x = (0) + (int)(pc_ty * 16) + (int)threadIdx.y;
      const int pc_i = (0) + (int)(pc_tx * 16) + (int)threadIdx.x;
      const bool pc_in = pc_x <= (99) && pc_i <= (69);
      pc_tile0[threadIdx.y][threadIdx.x] = pc_in ? (A[(pc_i + 70 * pc_x)] * x[(pc_i)]) : (float)0;
      __syncthreads();
      if (threadIdx.x == 0 && pc_x <= (99)) {
        float pc_sum0 = 0;
        for (int pc_c = 0; pc_c < 16; ++pc_c) pc_sum0 += pc_tile0[threadIdx.y][pc_c];
        atomicAdd(&y[(pc_x)], -pc_sum0);
      }
      __syncthreads();
    }
  }
}
__global__ void step_two(const float *__restrict__ A, const float *__restrict__ x,
                         float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    y[i] = 0;
    for (int j = 0; j < M; j += 2)
      y[i] += A[i * M + j] * x[j];
  }
}
__global__ void step_three_from_one(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 1; j < M; j += 3)
      y[i] = y[i] + A[i * M + j];
}
__global__ void accumulator_on_the_right(const float *__restrict__ A,
                                         const float *__restrict__ x, float *__restrict__ y)
{
  /* polycoal: row reduction, the core paper's partial-sum form (section 4).
   *   the (row, j (loop at line 53)) plane is cut into 16x16 tiles, one block per tile
   *   (grid-stride over tiles); each thread computes one term, coalesced along the row,
   *   into shared memory; the thread at column 0 of each tile row sums that row and adds
   *   it to memory with atomicAdd. Floating-point additions are reassociated; statements
   *   before and after the loop run in kernels launched before and after this one.
   */
  __shared__ float pc_tile0[16][17];
  for (long long pc_ty = blockIdx.y; pc_ty * 16 <= (long long)(99) - (0); pc_ty += gridDim.y) {
    for (long long pc_tx = blockIdx.x; pc_tx * 16 <= (long long)(69) - (0); pc_tx += gridDim.x) {
      const int pc_x = (0) + (int)(pc_ty * 16) + (int)threadIdx.y;
      const int pc_i = (0) + (int)(pc_tx * 16) + (int)threadIdx.x;
      const bool pc_in = pc_x <= (99) && pc_i <= (69);
      pc_tile0[threadIdx.y][threadIdx.x] = pc_in ? (A[(pc_i + 70 * pc_x)] * x[(pc_i)]) : (float)0;
      __syncthreads();
      if (threadIdx.x == 0 && pc_x <= (99)) {
        float pc_sum0 = 0;
        for (int pc_c = 0; pc_c < 16; ++pc_c) pc_sum0 += pc_tile0[threadIdx.y][pc_c];
        atomicAdd(&y[(pc_x)], pc_sum0);
      }
      __syncthreads();
    }
  }
}
__global__ void subtract_spelled_out(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: row reduction, the core paper's partial-sum form (section 4).
   *   the (row, j (loop at line 60)) plane is cut into 16x16 tiles, one block per tile
   *   (grid-stride over tiles); each thread computes one term, coalesced along the row,
   *   into shared memory; the thread at column 0 of each tile row sums that row and adds
   *   it to memory with atomicAdd. Floating-point additions are reassociated; statements
   *   before and after the loop run in kernels launched before and after this one.
   */
  __shared__ float pc_tile0[16][17];
  for (long long pc_ty = blockIdx.y; pc_ty * 16 <= (long long)(99) - (0); pc_ty += gridDim.y) {
    for (long long pc_tx = blockIdx.x; pc_tx * 16 <= (long long)(69) - (0); pc_tx += gridDim.x) {
      const int pc_x = (0) + (int)(pc_ty * 16) + (int)threadIdx.y;
      const int pc_i = (0) + (int)(pc_tx * 16) + (int)threadIdx.x;
      const bool pc_in = pc_x <= (99) && pc_i <= (69);
      pc_tile0[threadIdx.y][threadIdx.x] = pc_in ? (A[(pc_i + 70 * pc_x)]) : (float)0;
      __syncthreads();
      if (threadIdx.x == 0 && pc_x <= (99)) {
        float pc_sum0 = 0;
        for (int pc_c = 0; pc_c < 16; ++pc_c) pc_sum0 += pc_tile0[threadIdx.y][pc_c];
        atomicAdd(&y[(pc_x)], -pc_sum0);
      }
      __syncthreads();
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
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] *= A[i * M + j];
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
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    double s = 1.0;
    for (int j = 0; j < M; j++)
      s = s + A[i * M + j];
    y[i] = 2.0 * s;
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
  private_sum<<<(N + 31) / 32, 32>>>(A, x, y);
  { /* polycoal: row reduction in tiles: x = j, y = gx; was minus_assign<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(69) - (long long)(0) + 1;
    const long long pc_extent_y = (long long)(99) - (long long)(0) + 1;
    minus_assign<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 15) / 16 < 2147483647 ? (pc_extent_x + 15) / 16 : 2147483647), (unsigned)(pc_extent_y < 1 ? 1 : (pc_extent_y + 15) / 16 < 65535 ? (pc_extent_y + 15) / 16 : 65535), 1), dim3(16, 16, 1)>>>(A, x, y);
  }
  step_two<<<(N + 31) / 32, 32>>>(A, x, y);
  step_three_from_one<<<(N + 31) / 32, 32>>>(A, y);
  { /* polycoal: row reduction in tiles: x = j, y = gx; was accumulator_on_the_right<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(69) - (long long)(0) + 1;
    const long long pc_extent_y = (long long)(99) - (long long)(0) + 1;
    accumulator_on_the_right<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 15) / 16 < 2147483647 ? (pc_extent_x + 15) / 16 : 2147483647), (unsigned)(pc_extent_y < 1 ? 1 : (pc_extent_y + 15) / 16 < 65535 ? (pc_extent_y + 15) / 16 : 65535), 1), dim3(16, 16, 1)>>>(A, x, y);
  }
  { /* polycoal: row reduction in tiles: x = j, y = gx; was subtract_spelled_out<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(69) - (long long)(0) + 1;
    const long long pc_extent_y = (long long)(99) - (long long)(0) + 1;
    subtract_spelled_out<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 15) / 16 < 2147483647 ? (pc_extent_x + 15) / 16 : 2147483647), (unsigned)(pc_extent_y < 1 ? 1 : (pc_extent_y + 15) / 16 < 65535 ? (pc_extent_y + 15) / 16 : 65535), 1), dim3(16, 16, 1)>>>(A, y);
  }
  divide_assign<<<(N + 31) / 32, 32>>>(A, y);
  float_product<<<(N + 31) / 32, 32>>>(A, y);
  int_product<<<(N + 31) / 32, 32>>>(Ai, yi);
  min_by_fminf<<<(N + 31) / 32, 32>>>(A, y);
  max_by_ternary<<<(N + 31) / 32, 32>>>(A, y);
  double_private<<<(N + 31) / 32, 32>>>(Ad, yd);
  count_increments<<<(N + 31) / 32, 32>>>(A, yi);
  return 0;
}
