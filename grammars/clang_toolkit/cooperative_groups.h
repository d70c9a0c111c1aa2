// polycoal's declarations of <cooperative_groups.h> for Clang (cooperative groups, with its subheaders' reduce, scan and memcpy_async): read where a program
// includes it (frontend/clang.py puts this directory before the toolkit's). The shapes
// are the documented API's; nothing here is compiled or linked.
#pragma once
namespace cooperative_groups {
class thread_group {
 public:
  __device__ void sync() const;
  __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const;
  __device__ unsigned long long thread_rank() const;
};
class thread_block : public thread_group {
 public:
  __device__ dim3 group_index() const;
  __device__ dim3 thread_index() const;
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const;
};
class grid_group : public thread_group {
 public:
  __device__ bool is_valid() const;
  __device__ unsigned long long num_blocks() const;
  __device__ unsigned long long block_rank() const;
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_blocks() const;
  __device__ dim3 block_index() const;
};
class coalesced_group : public thread_group {
 public:
  template <typename T> __device__ T shfl(T, int) const;
  template <typename T> __device__ T shfl_down(T, unsigned) const;
  template <typename T> __device__ T shfl_up(T, unsigned) const;
  __device__ unsigned ballot(int) const;
  __device__ int any(int) const;
  __device__ int all(int) const;
  __device__ unsigned long long meta_group_rank() const;
  __device__ unsigned long long meta_group_size() const;
};
template <unsigned N, typename Parent = void>
class thread_block_tile : public thread_group {
 public:
  thread_block_tile() = default;
  template <typename Q> __device__ thread_block_tile(const thread_block_tile<N, Q> &);
  template <typename T> __device__ T shfl(T, int) const;
  template <typename T> __device__ T shfl_down(T, unsigned) const;
  template <typename T> __device__ T shfl_up(T, unsigned) const;
  template <typename T> __device__ T shfl_xor(T, unsigned) const;
  __device__ unsigned ballot(int) const;
  __device__ int any(int) const;
  __device__ int all(int) const;
  template <typename T> __device__ unsigned match_any(T) const;
  __device__ unsigned long long meta_group_rank() const;
  __device__ unsigned long long meta_group_size() const;
};
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ coalesced_group coalesced_threads();
template <unsigned N, typename P> __device__ thread_block_tile<N, P> tiled_partition(const P &);
__device__ thread_group tiled_partition(const thread_group &, unsigned);
template <typename G> __device__ void sync(const G &);
template <typename T> struct plus { __device__ T operator()(const T &, const T &) const; };
template <typename T> struct less { __device__ T operator()(const T &, const T &) const; };
template <typename T> struct greater { __device__ T operator()(const T &, const T &) const; };
template <typename T> struct bit_and { __device__ T operator()(const T &, const T &) const; };
template <typename T> struct bit_or { __device__ T operator()(const T &, const T &) const; };
template <typename T> struct bit_xor { __device__ T operator()(const T &, const T &) const; };
template <typename G, typename T, typename Op> __device__ T reduce(const G &, T, Op);
template <typename G, typename T, typename Op> __device__ T inclusive_scan(const G &, T, Op);
template <typename G, typename T> __device__ T inclusive_scan(const G &, T);
template <typename G, typename T, typename Op> __device__ T exclusive_scan(const G &, T, Op);
template <typename G, typename T> __device__ T exclusive_scan(const G &, T);
template <typename G, typename T> __device__ void memcpy_async(const G &, T *, const T *, size_t);
template <typename G> __device__ void wait(const G &);
template <typename G> __device__ void wait_prior(const G &);
namespace details {}
}  // namespace cooperative_groups

