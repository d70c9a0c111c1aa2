// Column reductions as people spell them (issue 12): one thread per column j, a loop
// over the rows i (coalesced but starved), the result into y[j]. Sums in every spelling
// are split over more threads (or run block-cooperatively, or in tiles); a loop with a
// step, a guard that idles part of the threads, a private accumulator and an empty loop
// must still come out right, or stay as they are.
#ifndef N
#define N 100
#endif
#ifndef R
#define R 1100
#endif
__global__ void minus_assign(const float *__restrict__ A, const float *__restrict__ x,
                             float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: i (loop at line 17)
   *   a block of 32x32 threads per 32 consecutive values of x (coalesced): its
   *   32 rows of threads split the reduction loop i (loop at line 17), add their partial
   *   sums in shared memory, and row 0 updates memory and runs the statements outside
   *   the loop, in their order (floating-point additions are reassociated)
   *   block 32x32x1; each axis is a grid-stride loop over its whole range.
   */
  __shared__ float pc_part0[32][32];
  __shared__ int pc_hits0[32][32];
  for (int pc_tile = (0) + (int)(blockIdx.x * 32); pc_tile <= (99); pc_tile += (int)(gridDim.x * 32)) {
    const int pc_x = pc_tile + (int)threadIdx.x;
    const bool pc_active = pc_x <= (99);
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      if (pc_active) {
        #pragma unroll 4
        for (int pc_i1 = (0) + (int)threadIdx.y; (pc_i1 <= 1099); pc_i1 += 32) {
          pc_acc0 += A[(100 * pc_i1 + pc_x)] * x[(pc_i1)]; pc_hit0 = 1;
        }
      }
      pc_part0[threadIdx.y][threadIdx.x] = pc_acc0;
      pc_hits0[threadIdx.y][threadIdx.x] = pc_hit0;
      __syncthreads();
      if (threadIdx.y == 0 && pc_active) {
        for (int pc_r = 1; pc_r < 32; ++pc_r) {
          pc_acc0 += pc_part0[pc_r][threadIdx.x];
          pc_hit0 |= pc_hits0[pc_r][threadIdx.x];
        }
        if (pc_hit0) y[(pc_x)] -= pc_acc0;
      }
      __syncthreads();
    }
  }
}
__global__ void accumulator_on_the_right(const float *__restrict__ A,
                                         const float *__restrict__ x, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: i (loop at line 25)
   *   a block of 32x32 threads per 32 consecutive values of x (coalesced): its
   *   32 rows of threads split the reduction loop i (loop at line 25), add their partial
   *   sums in shared memory, and row 0 updates memory and runs the statements outside
   *   the loop, in their order (floating-point additions are reassociated)
   *   block 32x32x1; each axis is a grid-stride loop over its whole range.
   */
  __shared__ float pc_part0[32][32];
  __shared__ int pc_hits0[32][32];
  for (int pc_tile = (0) + (int)(blockIdx.x * 32); pc_tile <= (99); pc_tile += (int)(gridDim.x * 32)) {
    const int pc_x = pc_tile + (int)threadIdx.x;
    const bool pc_active = pc_x <= (99);
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      if (pc_active) {
        #pragma unroll 4
        for (int pc_i1 = (0) + (int)threadIdx.y; (pc_i1 <= 1099); pc_i1 += 32) {
          pc_acc0 += A[(100 * pc_i1 + pc_x)] * x[(pc_i1)]; pc_hit0 = 1;
        }
      }
      pc_part0[threadIdx.y][threadIdx.x] = pc_acc0;
      pc_hits0[threadIdx.y][threadIdx.x] = pc_hit0;
      __syncthreads();
      if (threadIdx.y == 0 && pc_active) {
        for (int pc_r = 1; pc_r < 32; ++pc_r) {
          pc_acc0 += pc_part0[pc_r][threadIdx.x];
          pc_hit0 |= pc_hits0[pc_r][threadIdx.x];
        }
        if (pc_hit0) y[(pc_x)] += pc_acc0;
      }
      __syncthreads();
    }
  }
}
__global__ void step_three(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: i (loop at line 32)
   *   a block of 32x32 threads per 32 consecutive values of x (coalesced): its
   *   32 rows of threads split each loop over i (loop at line 32) in turn, with a barrier
   *   before and after each; a reduction's rows add their partial sums in shared memory
   *   and row 0 updates memory; row 0 runs the other statements, in their order, and
   *   hands the scalars it computed to every row (floating-point additions are reassociated)
   *   block 32x32x1; each axis is a grid-stride loop over its whole range.
   */
  __shared__ float pc_part0[32][32];
  __shared__ int pc_hits0[32][32];
  for (int pc_tile = (0) + (int)(blockIdx.x * 32); pc_tile <= (99); pc_tile += (int)(gridDim.x * 32)) {
    const int pc_x = pc_tile + (int)threadIdx.x;
    const bool pc_active = pc_x <= (99);
    __syncthreads();
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      if (pc_active) {
        #pragma unroll 4
        for (int pc_i1 = (0) + (int)threadIdx.y * 3; (pc_i1 <= 1099); pc_i1 += 96) {
          pc_acc0 += A[(100 * pc_i1 + pc_x)]; pc_hit0 = 1;
        }
      }
      pc_part0[threadIdx.y][threadIdx.x] = pc_acc0;
      pc_hits0[threadIdx.y][threadIdx.x] = pc_hit0;
      __syncthreads();
      if (threadIdx.y == 0 && pc_active) {
        for (int pc_r = 1; pc_r < 32; ++pc_r) {
          pc_acc0 += pc_part0[pc_r][threadIdx.x];
          pc_hit0 |= pc_hits0[pc_r][threadIdx.x];
        }
        if (pc_hit0) y[(pc_x)] += pc_acc0;
      }
      __syncthreads();
    }
  }
}
__global__ void guard_idles_threads(const float *__restrict__ A, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= 1 && j < N)
    for (int i = 0; i < R; i++)
      y[j] = A[i * N + j];
}
__global__ void guarded_sum__pc_before(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: c0
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  for (int pc_x = (0) + (int)(blockIdx.x * blockDim.x + threadIdx.x); pc_x <= (99); pc_x += (int)(blockDim.x * gridDim.x)) {
    y[(pc_x)] = 1.0f;
  }
}

__global__ void guarded_sum(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: column reduction split over more threads ("coalesced but starved").
   *   1 column per thread along x (gx (old thread index along x)); the reduction loop i (loop at line 48) is cut
   *   into chunks of 64 rows, one chunk per block along y (a grid-stride
   *   loop over the chunks), 8 threads per column in a block; each sums its rows in a
   *   register, the block adds its 8 partial sums in shared memory, and one atomicAdd
   *   per column and block updates memory. Floating-point additions are reassociated;
   *   the statements before and after the loop run in the kernels launched before and
   *   after this one.
   */
  __shared__ float pc_part0[8][32];
  float pc_acc0[1];
  for (int pc_c = 0; pc_c < 1; ++pc_c) {
    pc_acc0[pc_c] = 0;
  }
  const int pc_x0 = (3) + (int)(blockIdx.x * 32 + threadIdx.x);
  if (pc_x0 <= (99)) {
    for (long long pc_chunk = blockIdx.y; pc_chunk * 64 <= (long long)(1099) - (0); pc_chunk += gridDim.y) {
      const int pc_first = (0) + (int)(pc_chunk * 64);
      for (int pc_i = pc_first + (int)threadIdx.y; pc_i <= min((long long)(1099), (long long)(pc_first + 63)); pc_i += 8) {
#pragma unroll
        for (int pc_c = 0; pc_c < 1; ++pc_c) {
          const int pc_x = pc_x0 + 32 * pc_c;
          if (pc_x <= (99)) {
            pc_acc0[pc_c] += A[(100 * pc_i + pc_x)];
          }
        }
      }
    }
  }
  for (int pc_c = 0; pc_c < 1; ++pc_c) {
    pc_part0[threadIdx.y][threadIdx.x + 32 * pc_c] = pc_acc0[pc_c];
  }
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int pc_c = 0; pc_c < 1; ++pc_c) {
      const int pc_x = pc_x0 + 32 * pc_c;
      if (pc_x > (99)) break;
      float pc_sum0 = 0;
      for (int pc_r = 0; pc_r < 8; ++pc_r) pc_sum0 += pc_part0[pc_r][threadIdx.x + 32 * pc_c];
      atomicAdd(&y[(pc_x)], pc_sum0);
    }
  }
}

__global__ void guarded_sum__pc_after(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: c0
   *   block 256x1x1; each axis is a grid-stride loop over its whole range.
   */
  for (int pc_x = (0) + (int)(blockIdx.x * blockDim.x + threadIdx.x); pc_x <= (99); pc_x += (int)(blockDim.x * gridDim.x)) {
    y[(pc_x)] = y[(pc_x)] * 0.5f;
  }
}
__global__ void private_accumulator(const float *__restrict__ A, float *__restrict__ y)
{
  /* polycoal: restructured for coalesced global-memory access.
   *   original threads: gx: thread index along x; block 32x1x1
   *   new x: gx (old thread index along x)
   *   sequential in each thread: i (loop at line 58)
   *   a block of 32x32 threads per 32 consecutive values of x (coalesced): its
   *   32 rows of threads split each loop over i (loop at line 58) in turn, with a barrier
   *   before and after each; a reduction's rows add their partial sums in shared memory
   *   and row 0 updates memory; row 0 runs the other statements, in their order, and
   *   hands the scalars it computed to every row (floating-point additions are reassociated)
   *   block 32x32x1; each axis is a grid-stride loop over its whole range.
   */
  __shared__ float pc_part0[32][32];
  __shared__ int pc_hits0[32][32];
  for (int pc_tile = (0) + (int)(blockIdx.x * 32); pc_tile <= (99); pc_tile += (int)(gridDim.x * 32)) {
    const int pc_x = pc_tile + (int)threadIdx.x;
    const bool pc_active = pc_x <= (99);
    float s;
    if (threadIdx.y == 0 && pc_active) { s = 0.0f; }
    __syncthreads();
    {
      float pc_acc0 = 0;
      int pc_hit0 = 0;
      if (pc_active) {
        #pragma unroll 4
        for (int pc_i1 = (0) + (int)threadIdx.y; (pc_i1 <= 1099); pc_i1 += 32) {
          pc_acc0 += A[(100 * pc_i1 + pc_x)]; pc_hit0 = 1;
        }
      }
      pc_part0[threadIdx.y][threadIdx.x] = pc_acc0;
      pc_hits0[threadIdx.y][threadIdx.x] = pc_hit0;
      __syncthreads();
      if (threadIdx.y == 0 && pc_active) {
        for (int pc_r = 1; pc_r < 32; ++pc_r) {
          pc_acc0 += pc_part0[pc_r][threadIdx.x];
          pc_hit0 |= pc_hits0[pc_r][threadIdx.x];
        }
        if (pc_hit0) s += pc_acc0;
      }
      __syncthreads();
    }
    if (threadIdx.y == 0 && pc_active) { y[(pc_x)] = s; }
  }
}
__global__ void even_columns(const float *__restrict__ A, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N && j % 2 == 0)
    for (int i = 0; i < R; i++)
      y[j] += A[i * N + j];
}
int main()
{
  float *A, *x, *y;
  cudaMalloc(&A, sizeof(float) * N * R); cudaMalloc(&x, sizeof(float) * R);
  cudaMalloc(&y, sizeof(float) * N);
  { /* polycoal: one block per 32 columns: x = gx; was minus_assign<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    minus_assign<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 31) / 32 < 2147483647 ? (pc_extent_x + 31) / 32 : 2147483647), 1, 1), dim3(32, 32, 1)>>>(A, x, y);
  }
  { /* polycoal: one block per 32 columns: x = gx; was accumulator_on_the_right<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    accumulator_on_the_right<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 31) / 32 < 2147483647 ? (pc_extent_x + 31) / 32 : 2147483647), 1, 1), dim3(32, 32, 1)>>>(A, x, y);
  }
  { /* polycoal: one block per 32 columns: x = gx; was step_three<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    step_three<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 31) / 32 < 2147483647 ? (pc_extent_x + 31) / 32 : 2147483647), 1, 1), dim3(32, 32, 1)>>>(A, y);
  }
  guard_idles_threads<<<(N + 31) / 32, 32>>>(A, y);
  { /* polycoal: column reduction split: x = gx, y = i; was guarded_sum<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_0 = (long long)(99) - (long long)(0) + 1;
    const long long pc_extent_1 = (long long)(99) - (long long)(3) + 1;
    const long long pc_extent_2 = (long long)(1099) - (long long)(0) + 1;
    guarded_sum__pc_before<<<dim3((unsigned)(pc_extent_0 < 1 ? 1 : (pc_extent_0 + 255) / 256 < 2147483647 ? (pc_extent_0 + 255) / 256 : 2147483647), 1, 1), dim3(256, 1, 1), 0>>>(A, y);
    guarded_sum<<<dim3((unsigned)(pc_extent_1 < 1 ? 1 : (pc_extent_1 + 31) / 32 < 2147483647 ? (pc_extent_1 + 31) / 32 : 2147483647), (unsigned)(pc_extent_2 < 1 ? 1 : (pc_extent_2 + 63) / 64 < 65535 ? (pc_extent_2 + 63) / 64 : 65535), 1), dim3(32, 8, 1)>>>(A, y);
    guarded_sum__pc_after<<<dim3((unsigned)(pc_extent_0 < 1 ? 1 : (pc_extent_0 + 255) / 256 < 2147483647 ? (pc_extent_0 + 255) / 256 : 2147483647), 1, 1), dim3(256, 1, 1), 0>>>(A, y);
  }
  { /* polycoal: one block per 32 columns: x = gx; was private_accumulator<<<(N + 31) / 32, 32>>> */
    const long long pc_extent_x = (long long)(99) - (long long)(0) + 1;
    private_accumulator<<<dim3((unsigned)(pc_extent_x < 1 ? 1 : (pc_extent_x + 31) / 32 < 2147483647 ? (pc_extent_x + 31) / 32 : 2147483647), 1, 1), dim3(32, 32, 1)>>>(A, y);
  }
  even_columns<<<(N + 31) / 32, 32>>>(A, y);
  return 0;
}
