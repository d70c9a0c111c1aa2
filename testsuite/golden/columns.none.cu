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
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N)
    for (int i = 0; i < R; i++)
      y[j] -= A[i * N + j] * x[i];
}
__global__ void accumulator_on_the_right(const float *__restrict__ A,
                                         const float *__restrict__ x, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N)
    for (int i = 0; i < R; i++)
      y[j] = A[i * N + j] * x[i] + y[j];
}
__global__ void step_three(const float *__restrict__ A, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N)
    for (int i = 0; i < R; i += 3)
      y[j] += A[i * N + j];
}
__global__ void guard_idles_threads(const float *__restrict__ A, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= 1 && j < N)
    for (int i = 0; i < R; i++)
      y[j] = A[i * N + j];
}
__global__ void guarded_sum(const float *__restrict__ A, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N) {
    y[j] = 1.0f;
    if (j >= 3)
      for (int i = 0; i < R; i++)
        y[j] += A[i * N + j];
    y[j] = y[j] * 0.5f;
  }
}
__global__ void private_accumulator(const float *__restrict__ A, float *__restrict__ y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N) {
    float s = 0.0f;
    for (int i = 0; i < R; i++)
      s += A[i * N + j];
    y[j] = s;
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
  minus_assign<<<(N + 31) / 32, 32>>>(A, x, y);
  accumulator_on_the_right<<<(N + 31) / 32, 32>>>(A, x, y);
  step_three<<<(N + 31) / 32, 32>>>(A, y);
  guard_idles_threads<<<(N + 31) / 32, 32>>>(A, y);
  guarded_sum<<<(N + 31) / 32, 32>>>(A, y);
  private_accumulator<<<(N + 31) / 32, 32>>>(A, y);
  even_columns<<<(N + 31) / 32, 32>>>(A, y);
  return 0;
}
