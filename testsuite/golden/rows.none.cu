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
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] -= A[i * M + j] * x[j];
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
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] = A[i * M + j] * x[j] + y[i];
}
__global__ void subtract_spelled_out(const float *__restrict__ A, float *__restrict__ y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    for (int j = 0; j < M; j++)
      y[i] = y[i] - A[i * M + j];
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
  minus_assign<<<(N + 31) / 32, 32>>>(A, x, y);
  step_two<<<(N + 31) / 32, 32>>>(A, x, y);
  step_three_from_one<<<(N + 31) / 32, 32>>>(A, y);
  accumulator_on_the_right<<<(N + 31) / 32, 32>>>(A, x, y);
  subtract_spelled_out<<<(N + 31) / 32, 32>>>(A, y);
  divide_assign<<<(N + 31) / 32, 32>>>(A, y);
  float_product<<<(N + 31) / 32, 32>>>(A, y);
  int_product<<<(N + 31) / 32, 32>>>(Ai, yi);
  min_by_fminf<<<(N + 31) / 32, 32>>>(A, y);
  max_by_ternary<<<(N + 31) / 32, 32>>>(A, y);
  double_private<<<(N + 31) / 32, 32>>>(Ad, yd);
  count_increments<<<(N + 31) / 32, 32>>>(A, yi);
  return 0;
}
