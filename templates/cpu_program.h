// polycoal whole-program CPU runtime: enough of CUDA (host API and device builtins) to
// compile a complete .cu program as C++ and run it on the host (polycoal/runtime/
// cpu_program.py force-includes this header and rewrites every k<<<g, b>>>(args) into
// pc_launch(...)). The definitions live in cpu_program_rt.cpp, compiled once.
//
// Execution model:
// - A kernel that never synchronises runs its threads one after the other (a loop).
// - A kernel that uses __syncthreads, __syncwarp or warp shuffles runs each thread of a
//   block as a fiber (ucontext) on one OS thread: a barrier suspends the fiber until every
//   live thread of the block (or warp) has arrived, so the 32 lanes of a warp exchange
//   shuffle values in lockstep; a thread that returns no longer holds the others back. A
//   barrier that can never complete (divergent __syncthreads) is reported as a deadlock.
// - __shared__ variables are static: blocks run one at a time, so one copy serves the
//   block that runs, and it is shared by the fibers of that block.
// - cudaMalloc places each allocation against an inaccessible page (an access past its
//   end faults) with canary bytes before it (a write before its start is found at
//   cudaFree or exit); invalid launch configurations (a zero or too large grid or block)
//   and faults are reported on stderr with distinct exit statuses (see PC_EXIT_*).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <cfloat>

#include "cuda_types.h"
#define __CUDACC__POLYCOAL_CPU 1

enum { PC_EXIT_DEADLOCK = 88, PC_EXIT_BAD_LAUNCH = 87, PC_EXIT_FAULT = 86,
       PC_EXIT_CANARY = 85, PC_EXIT_SYNC_IN_SEQUENTIAL = 84, PC_EXIT_CUDA_ERROR = 83 };

extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
static const int warpSize = 32;

// ---- host API ----
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
       cudaErrorInvalidConfiguration = 9, cudaErrorNotReady = 600 };
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1,
                      cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3,
                      cudaMemcpyDefault = 4 };
typedef struct pc_stream* cudaStream_t;
typedef struct pc_event* cudaEvent_t;
struct cudaDeviceProp { char name[256]; int multiProcessorCount; int maxThreadsPerBlock;
                        int warpSize; size_t sharedMemPerBlock; int major, minor; };

cudaError_t pc_malloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
template <typename T> inline cudaError_t cudaMalloc(T** p, size_t bytes) {
  return pc_malloc((void**)p, bytes); }
template <typename T> inline cudaError_t cudaMallocManaged(T** p, size_t bytes,
                                                           unsigned = 1) {
  return pc_malloc((void**)p, bytes); }
template <typename T> inline cudaError_t cudaMallocHost(T** p, size_t bytes) {
  *p = (T*)std::malloc(bytes ? bytes : 1); return cudaSuccess; }
inline cudaError_t cudaFreeHost(void* p) { std::free(p); return cudaSuccess; }
template <typename T> inline cudaError_t cudaMallocAsync(T** p, size_t bytes, cudaStream_t) {
  return pc_malloc((void**)p, bytes); }
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes,
                                   cudaMemcpyKind kind, cudaStream_t = 0) {
  return cudaMemcpy(dst, src, bytes, kind); }
cudaError_t cudaMemset(void* p, int value, size_t bytes);
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t = 0) {
  return cudaMemset(p, value, bytes); }
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaThreadSynchronize() { return cudaSuccess; }
inline cudaError_t cudaDeviceReset() { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof *p); std::strcpy(p->name, "polycoal CPU");
  p->multiProcessorCount = 132; p->maxThreadsPerBlock = 1024; p->warpSize = 32;
  p->sharedMemPerBlock = 49152; p->major = 9; p->minor = 0; return cudaSuccess; }
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = 0; return cudaSuccess; }
enum { cudaStreamDefault = 0, cudaStreamNonBlocking = 1 };
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { *s = 0; return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) { return cudaSuccess; }
// Work is done when it is queued here; PC_CPU_EVENTS_LATE=1 makes an event report its work
// not done until synchronized, as a busy device may (to run a program's slow paths).
inline cudaError_t cudaEventQuery(cudaEvent_t) {
  return std::getenv("PC_CPU_EVENTS_LATE") ? cudaErrorNotReady : cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = 0; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0) { return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0; return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "polycoal CPU runtime error"; }
inline const char* cudaGetErrorName(cudaError_t e) { return cudaGetErrorString(e); }

// a __constant__ array is a host array here: a copy into it is a memcpy
template <typename T> inline cudaError_t cudaMemcpyToSymbol(T& symbol, const void* src,
    size_t count, size_t offset = 0, cudaMemcpyKind = cudaMemcpyHostToDevice) {
  std::memcpy(reinterpret_cast<char*>(&symbol) + offset, src, count); return cudaSuccess; }
template <typename T> inline cudaError_t cudaMemcpyToSymbolAsync(T& symbol, const void* src,
    size_t count, size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyHostToDevice,
    cudaStream_t = 0) { return cudaMemcpyToSymbol(symbol, src, count, offset, kind); }

// dynamic shared memory past 48 KiB needs the kernel's attribute raised first; the
// runtime keeps the largest raised for any kernel (so a kernel launched past 48 KiB
// without its own attribute raised is caught only when no kernel raised one)
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
extern size_t pc_raised_shared;
template <typename T> inline cudaError_t cudaFuncSetAttribute(T*, cudaFuncAttribute a, int v) {
  if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (v < 0 || v > 227 * 1024) return cudaErrorInvalidValue;
    if ((size_t)v > pc_raised_shared) pc_raised_shared = (size_t)v;
  }
  return cudaSuccess; }

// ---- launches ----
typedef void (*pc_body_fn)(void*);
void pc_run_grid(bool synchronising, dim3 grid, dim3 block, size_t shared,
                 const char* name, pc_body_fn body, void* closure);
template <typename F> inline void pc_launch(bool synchronising, const char* name, dim3 grid,
                                            dim3 block, size_t shared, F f) {
  pc_run_grid(synchronising, grid, block, shared, name,
              [](void* c) { (*(F*)c)(); }, (void*)&f);
}

// A launch written in a macro's body, whose arguments may be __VA_ARGS__: they are
// evaluated once, here, and passed to each thread's call as a launch passes them.
template <typename K, typename... A>
inline void pc_launch_args(bool synchronising, const char* name, dim3 grid, dim3 block,
                           size_t shared, K kernel, A... args) {
  pc_launch(synchronising, name, grid, block, shared, [=]() mutable { kernel(args...); });
}

// ---- device builtins ----
void __syncthreads();
int __syncthreads_count(int);
int __syncthreads_and(int);
int __syncthreads_or(int);
void __syncwarp(unsigned = 0xffffffffu);
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
// Lockstep exchange among the live lanes of the calling thread's warp: every lane
// publishes `size` bytes, all meet, each reads lane `source`'s (its own when `source` is
// outside the warp), all meet again before the slots are reused.
void pc_exchange(const void* mine, void* out, size_t size, int source);
unsigned pc_lane();
unsigned pc_ballot(int predicate);

template <typename T> inline T pc_shuffle(T v, int source) {
  static_assert(sizeof(T) <= 16, "shuffle of a value wider than 16 bytes");
  T out = v; pc_exchange(&v, &out, sizeof(T), source); return out; }
template <typename T> inline T __shfl_sync(unsigned, T v, int lane, int width = 32) {
  int base = (int)pc_lane() & ~(width - 1);
  return pc_shuffle(v, base + (lane & (width - 1))); }
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  int me = (int)pc_lane(), src = me + (int)delta;
  if ((src & ~(width - 1)) != (me & ~(width - 1))) src = me;
  return pc_shuffle(v, src); }
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  int me = (int)pc_lane(), src = me - (int)delta;
  if (src < 0 || (src & ~(width - 1)) != (me & ~(width - 1))) src = me;
  return pc_shuffle(v, src); }
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  int me = (int)pc_lane(), src = me ^ mask;
  if ((src & ~(width - 1)) != (me & ~(width - 1))) src = me;
  return pc_shuffle(v, src); }
inline unsigned __ballot_sync(unsigned, int p) { return pc_ballot(p); }
inline int __any_sync(unsigned, int p) { return pc_ballot(p) != 0; }
inline int __all_sync(unsigned m, int p) { (void)m; return pc_ballot(!p) == 0; }
unsigned __activemask();

// atomics (threads of the CPU runtime never run at the same time)
template <typename T> inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
template <typename T> inline T atomicSub(T* p, T v) { T o = *p; *p = o - v; return o; }
template <typename T> inline T atomicMax(T* p, T v) { T o = *p; *p = o > v ? o : v; return o; }
template <typename T> inline T atomicMin(T* p, T v) { T o = *p; *p = o < v ? o : v; return o; }
template <typename T> inline T atomicExch(T* p, T v) { T o = *p; *p = v; return o; }
template <typename T> inline T atomicAnd(T* p, T v) { T o = *p; *p = o & v; return o; }
template <typename T> inline T atomicOr(T* p, T v) { T o = *p; *p = o | v; return o; }
template <typename T> inline T atomicXor(T* p, T v) { T o = *p; *p = o ^ v; return o; }
template <typename T> inline T atomicCAS(T* p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
inline unsigned atomicInc(unsigned* p, unsigned m) {
  unsigned o = *p; *p = o >= m ? 0 : o + 1; return o; }

// CUDA's device min/max overloads (ambiguous calls stay ambiguous, as under nvcc)
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
// CUDA's mixed-sign overloads (compare as unsigned) and mixed float/double
inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
inline unsigned long min(long a, unsigned long b) { return min((unsigned long)a, b); }
inline unsigned long min(unsigned long a, long b) { return min(a, (unsigned long)b); }
inline unsigned long max(long a, unsigned long b) { return max((unsigned long)a, b); }
inline unsigned long max(unsigned long a, long b) { return max(a, (unsigned long)b); }
inline unsigned long long min(long long a, unsigned long long b) { return min((unsigned long long)a, b); }
inline unsigned long long min(unsigned long long a, long long b) { return min(a, (unsigned long long)b); }
inline unsigned long long max(long long a, unsigned long long b) { return max((unsigned long long)a, b); }
inline unsigned long long max(unsigned long long a, long long b) { return max(a, (unsigned long long)b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(float a, double b) { return std::fmin((double)a, b); }
inline double min(double a, float b) { return std::fmin(a, (double)b); }
inline double max(float a, double b) { return std::fmax((double)a, b); }
inline double max(double a, float b) { return std::fmax(a, (double)b); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float __saturatef(float x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline int __mul24(int a, int b) { return a * b; }
inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
using std::sqrt; using std::exp; using std::log; using std::fabs; using std::pow;
using std::floor; using std::ceil; using std::fmin; using std::fmax;
