// The shape of CUDA's narrow floating-point types for Clang (half, bfloat16, fp8):
// conversions to and from float, arithmetic and comparisons (operators).
#pragma once
#define PC_NARROW(T)                                                                     \
  struct T {                                                                             \
    unsigned short __x;                                                                  \
    T() = default;                                                                       \
    __host__ __device__ T(float);                                                        \
    __host__ __device__ T(double);                                                       \
    __host__ __device__ T(int);                                                          \
    __host__ __device__ T(unsigned);                                                     \
    __host__ __device__ T(long long);                                                    \
    __host__ __device__ T(unsigned long long);                                           \
    __host__ __device__ operator float() const;                                          \
    __host__ __device__ T &operator=(float);                                             \
  };                                                                                     \
  __host__ __device__ T operator+(const T &, const T &);                                 \
  __host__ __device__ T operator-(const T &, const T &);                                 \
  __host__ __device__ T operator*(const T &, const T &);                                 \
  __host__ __device__ T operator/(const T &, const T &);                                 \
  __host__ __device__ T operator-(const T &);                                            \
  __host__ __device__ T &operator+=(T &, const T &);                                     \
  __host__ __device__ T &operator-=(T &, const T &);                                     \
  __host__ __device__ T &operator*=(T &, const T &);                                     \
  __host__ __device__ T &operator/=(T &, const T &);                                     \
  __host__ __device__ bool operator<(const T &, const T &);                              \
  __host__ __device__ bool operator>(const T &, const T &);                              \
  __host__ __device__ bool operator<=(const T &, const T &);                             \
  __host__ __device__ bool operator>=(const T &, const T &);                             \
  __host__ __device__ bool operator==(const T &, const T &);                             \
  __host__ __device__ bool operator!=(const T &, const T &);
#define PC_NARROW2(T2, T)                                                                \
  struct T2 {                                                                            \
    T x, y;                                                                              \
    T2() = default;                                                                      \
    __host__ __device__ T2(T a, T b) : x(a), y(b) {}                                     \
  };                                                                                     \
  __host__ __device__ T2 operator+(const T2 &, const T2 &);                              \
  __host__ __device__ T2 operator-(const T2 &, const T2 &);                              \
  __host__ __device__ T2 operator*(const T2 &, const T2 &);                              \
  __host__ __device__ T2 operator/(const T2 &, const T2 &);                              \
  __host__ __device__ T2 &operator+=(T2 &, const T2 &);                                  \
  __host__ __device__ T2 &operator*=(T2 &, const T2 &);
