// polycoal CPU runtime: just enough CUDA to run kernels on the host, for validation.
// Threads of a block run one after the other, or, for kernels that synchronise, as
// std::threads meeting at a std::barrier. __shared__ variables are static: blocks run
// one at a time, so one copy serves the block that runs.
#pragma once
#include <cassert>
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "cuda_types.h"

static thread_local uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static const int warpSize = 32;
static std::barrier<>* pc_block_barrier = nullptr;
static std::mutex pc_atomic_mutex;

// A warp of std::threads: a barrier of its own and 32 slots for shuffles.
struct pc_warp {
  explicit pc_warp(std::ptrdiff_t n) : barrier(n) {}
  std::barrier<> barrier;
  alignas(16) unsigned char slots[32][16];
};
static thread_local pc_warp* pc_my_warp = nullptr;
static thread_local unsigned pc_my_lane = 0;

inline void __syncthreads() { if (pc_block_barrier) pc_block_barrier->arrive_and_wait(); }
// __syncthreads_count / _and / _or: every thread of the block adds its vote to one of
// two counters (alternating: all threads call in the same order), reads the total after
// a barrier, and thread 0 clears it after a second one, before the counter's next use.
static std::atomic<int> pc_block_votes[2];
static thread_local unsigned pc_vote_phase = 0;
inline int pc_sync_votes(int v) {
  if (!pc_block_barrier) return v != 0;
  std::atomic<int>& votes = pc_block_votes[pc_vote_phase++ & 1];
  votes += v != 0;
  pc_block_barrier->arrive_and_wait();
  int total = votes.load();
  pc_block_barrier->arrive_and_wait();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) votes = 0;
  return total;
}
inline int __syncthreads_count(int v) { return pc_sync_votes(v); }
inline int __syncthreads_and(int v) {
  return pc_sync_votes(v) == (int)(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int v) { return pc_sync_votes(v) > 0; }
inline void __syncwarp(unsigned = 0xffffffffu) { if (pc_my_warp) pc_my_warp->barrier.arrive_and_wait(); }

template <typename T> T pc_shuffle(T v, int source) {
  pc_warp* w = pc_my_warp;
  std::memcpy(w->slots[pc_my_lane], &v, sizeof(T));
  w->barrier.arrive_and_wait();
  T out = v;
  if (source >= 0 && source < 32) std::memcpy(&out, w->slots[source], sizeof(T));
  w->barrier.arrive_and_wait();
  return out;
}
template <typename T> T __shfl_down_sync(unsigned, T v, int delta, int = 32) {
  return pc_shuffle(v, (int)pc_my_lane + delta);
}
template <typename T> T __shfl_up_sync(unsigned, T v, int delta, int = 32) {
  return pc_shuffle(v, (int)pc_my_lane - delta);
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
  return pc_shuffle(v, (int)(pc_my_lane ^ (unsigned)mask));
}
template <typename T> T __shfl_sync(unsigned, T v, int lane, int = 32) {
  return pc_shuffle(v, lane);
}
inline void __threadfence() {}
inline void __threadfence_block() {}

template <typename T> T atomicAdd(T* p, T v) {
  std::lock_guard<std::mutex> g(pc_atomic_mutex); T o = *p; *p = o + v; return o; }
template <typename T> T atomicSub(T* p, T v) {
  std::lock_guard<std::mutex> g(pc_atomic_mutex); T o = *p; *p = o - v; return o; }
template <typename T> T atomicMax(T* p, T v) {
  std::lock_guard<std::mutex> g(pc_atomic_mutex); T o = *p; *p = o > v ? o : v; return o; }
template <typename T> T atomicMin(T* p, T v) {
  std::lock_guard<std::mutex> g(pc_atomic_mutex); T o = *p; *p = o < v ? o : v; return o; }
template <typename T> T atomicExch(T* p, T v) {
  std::lock_guard<std::mutex> g(pc_atomic_mutex); T o = *p; *p = v; return o; }

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return a < b ? a : b; }
inline float max(float a, float b) { return a > b ? a : b; }
inline double min(double a, double b) { return a < b ? a : b; }
inline double max(double a, double b) { return a > b ? a : b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __saturatef(float x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }
template <typename T> T __ldg(const T* p) { return *p; }
template <typename T> T __ldcg(const T* p) { return *p; }
using std::sqrt; using std::exp; using std::log; using std::fabs; using std::pow;
using std::floor; using std::ceil;

// Random inputs: values in (-8, 8), or indices in [0, index_bound) when it is positive.
template <typename T> static void pc_fill(std::vector<T>& v, std::mt19937& rng,
                                          long long index_bound) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  for (auto& x : v)
    x = index_bound > 0 ? (T)((long long)((d(rng) + 1.0) / 2.0 * (double)index_bound) % index_bound)
                        : (T)(d(rng) * 8.0);
}

// Run `body` for every thread of the launch, as CUDA would (up to the order).
// Only the first `blocks` blocks in linear order (x fastest) run when it is given.
inline void pc_launch(dim3 grid, dim3 block, bool synchronising, const std::function<void()>& body,
                      unsigned long long blocks = ~0ull) {
  gridDim = grid; blockDim = block;
  unsigned long long linear = 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        if (linear++ >= blocks) return;
        if (!synchronising) {
          blockIdx = {bx, by, bz};
          for (unsigned tz = 0; tz < block.z; ++tz)
            for (unsigned ty = 0; ty < block.y; ++ty)
              for (unsigned tx = 0; tx < block.x; ++tx) { threadIdx = {tx, ty, tz}; body(); }
          continue;
        }
        unsigned n = block.x * block.y * block.z;
        std::barrier<> barrier((std::ptrdiff_t)n);
        pc_block_barrier = &barrier;
        std::vector<std::unique_ptr<pc_warp>> warps;
        for (unsigned w = 0; w < (n + 31) / 32; ++w)
          warps.emplace_back(new pc_warp((std::ptrdiff_t)std::min(32u, n - 32 * w)));
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < n; ++t)
          threads.emplace_back([=, &warps] {
            blockIdx = {bx, by, bz};
            threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            pc_my_warp = warps[t / 32].get();
            pc_my_lane = t % 32;
            body();
            // a finished thread no longer holds the others back
            pc_block_barrier->arrive_and_drop();
            pc_my_warp->barrier.arrive_and_drop();
          });
        for (auto& th : threads) th.join();
        pc_block_barrier = nullptr;
      }
}
