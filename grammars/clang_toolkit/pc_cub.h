// CUB as Clang reads it (issue 32): any `cub/*.cuh` a program includes, where the
// toolkit's own is not read, resolves to this file. The documented shapes of the block-,
// warp- and device-wide primitives programs use, so that a kernel calling
// `BlockReduce(temp).Sum(x)` type-checks (such a call is an opaque statement of the
// kernel: frontend/opaque.py) and host code calling `cub::DeviceScan::ExclusiveSum`
// does. Nothing here is compiled or linked: the bodies are left out.
#pragma once
#include <cassert>
#include <chrono>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

namespace cub {

struct Sum { template <class T> __host__ __device__ T operator()(const T &a, const T &b) const; };
struct Max { template <class T> __host__ __device__ T operator()(const T &a, const T &b) const; };
struct Min { template <class T> __host__ __device__ T operator()(const T &a, const T &b) const; };
struct ArgMax { template <class T> __host__ __device__ T operator()(const T &a, const T &b) const; };
struct ArgMin { template <class T> __host__ __device__ T operator()(const T &a, const T &b) const; };
struct Equality { template <class T> __host__ __device__ bool operator()(const T &, const T &) const; };
template <class K, class V> struct KeyValuePair {
  typedef K Key; typedef V Value;
  K key; V value;
  __host__ __device__ KeyValuePair();
  __host__ __device__ KeyValuePair(const K &, const V &);
};
template <int Bytes> struct __pc_bits { typedef unsigned type; };
template <> struct __pc_bits<1> { typedef unsigned char type; };
template <> struct __pc_bits<2> { typedef unsigned short type; };
template <> struct __pc_bits<8> { typedef unsigned long long type; };
template <class T> struct Traits {
  typedef typename __pc_bits<sizeof(T)>::type UnsignedBits;
  static const UnsignedBits LOWEST_KEY, MAX_KEY;
  __host__ __device__ static T Max();
  __host__ __device__ static T Lowest();
};
struct NullType {};

enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
                            BLOCK_REDUCE_WARP_REDUCTIONS };
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE,
                          BLOCK_SCAN_WARP_SCANS };
enum BlockLoadAlgorithm { BLOCK_LOAD_DIRECT, BLOCK_LOAD_STRIPED, BLOCK_LOAD_VECTORIZE,
                          BLOCK_LOAD_TRANSPOSE, BLOCK_LOAD_WARP_TRANSPOSE,
                          BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED };
enum BlockStoreAlgorithm { BLOCK_STORE_DIRECT, BLOCK_STORE_STRIPED, BLOCK_STORE_VECTORIZE,
                           BLOCK_STORE_TRANSPOSE, BLOCK_STORE_WARP_TRANSPOSE,
                           BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED };
enum CacheLoadModifier { LOAD_DEFAULT, LOAD_CA, LOAD_CG, LOAD_CS, LOAD_CV, LOAD_LDG,
                         LOAD_VOLATILE };

// the block- and warp-wide primitives: constructed over their shared temporary storage
#define PC_CUB_STORAGE                                                         \
  struct TempStorage { char bytes[1]; };                                       \
  __device__ PC_CUB_SELF();                                                    \
  __device__ PC_CUB_SELF(TempStorage &);
#define PC_CUB_SELF BlockReduce
template <class T, int B, BlockReduceAlgorithm A = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BY = 1, int BZ = 1, int P = 0>
struct BlockReduce {
  PC_CUB_STORAGE
  __device__ T Sum(T);
  __device__ T Sum(T, int);
  template <int N> __device__ T Sum(T (&)[N]);
  template <class F> __device__ T Reduce(T, F);
  template <class F> __device__ T Reduce(T, F, int);
  template <int N, class F> __device__ T Reduce(T (&)[N], F);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF WarpReduce
template <class T, int W = 32, int P = 0> struct WarpReduce {
  PC_CUB_STORAGE
  __device__ T Sum(T);
  __device__ T Sum(T, int);
  template <class F> __device__ T Reduce(T, F);
  template <class F> __device__ T Reduce(T, F, int);
  template <class Flag> __device__ T HeadSegmentedSum(T, Flag);
  template <class Flag> __device__ T TailSegmentedSum(T, Flag);
};
#undef PC_CUB_SELF
#define PC_CUB_SCANS                                                           \
  __device__ void InclusiveSum(T, T &);                                        \
  __device__ void InclusiveSum(T, T &, T &);                                   \
  __device__ void ExclusiveSum(T, T &);                                        \
  __device__ void ExclusiveSum(T, T &, T &);                                   \
  template <class F> __device__ void InclusiveSum(T, T &, F &);                \
  template <class F> __device__ void ExclusiveSum(T, T &, F &);                \
  template <int N> __device__ void InclusiveSum(T (&)[N], T (&)[N]);           \
  template <int N> __device__ void ExclusiveSum(T (&)[N], T (&)[N]);           \
  template <int N> __device__ void InclusiveSum(T (&)[N], T (&)[N], T &);      \
  template <int N> __device__ void ExclusiveSum(T (&)[N], T (&)[N], T &);      \
  template <class F> __device__ void InclusiveScan(T, T &, F);                 \
  template <class F> __device__ void InclusiveScan(T, T &, F, T &);            \
  template <class F> __device__ void ExclusiveScan(T, T &, T, F);              \
  template <class F> __device__ void ExclusiveScan(T, T &, T, F, T &);         \
  template <class F, class G> __device__ void ExclusiveScan(T, T &, F, G &);   \
  template <class F, class G> __device__ void InclusiveScan(T, T &, F, G &);   \
  template <int N, class F> __device__ void InclusiveScan(T (&)[N], T (&)[N], F); \
  template <int N, class F> __device__ void ExclusiveScan(T (&)[N], T (&)[N], T, F);
#define PC_CUB_SELF BlockScan
template <class T, int B, BlockScanAlgorithm A = BLOCK_SCAN_RAKING, int BY = 1, int BZ = 1,
          int P = 0>
struct BlockScan {
  PC_CUB_STORAGE
  PC_CUB_SCANS
};
#undef PC_CUB_SELF
#define PC_CUB_SELF WarpScan
template <class T, int W = 32, int P = 0> struct WarpScan {
  PC_CUB_STORAGE
  PC_CUB_SCANS
  __device__ T Broadcast(T, unsigned);
};
#undef PC_CUB_SELF
#undef PC_CUB_SCANS
#define PC_CUB_SELF BlockLoad
template <class T, int B, int N, BlockLoadAlgorithm A = BLOCK_LOAD_DIRECT, int BY = 1,
          int BZ = 1, int P = 0>
struct BlockLoad {
  PC_CUB_STORAGE
  template <class It> __device__ void Load(It, T (&)[N]);
  template <class It> __device__ void Load(It, T (&)[N], int);
  template <class It, class D> __device__ void Load(It, T (&)[N], int, D);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF BlockStore
template <class T, int B, int N, BlockStoreAlgorithm A = BLOCK_STORE_DIRECT, int BY = 1,
          int BZ = 1, int P = 0>
struct BlockStore {
  PC_CUB_STORAGE
  template <class It> __device__ void Store(It, T (&)[N]);
  template <class It> __device__ void Store(It, T (&)[N], int);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF BlockExchange
template <class T, int B, int N, bool W = false, int BY = 1, int BZ = 1, int P = 0>
struct BlockExchange {
  PC_CUB_STORAGE
  template <class U> __device__ void StripedToBlocked(T (&)[N], U (&)[N]);
  template <class U> __device__ void BlockedToStriped(T (&)[N], U (&)[N]);
  template <class U> __device__ void WarpStripedToBlocked(T (&)[N], U (&)[N]);
  template <class U> __device__ void BlockedToWarpStriped(T (&)[N], U (&)[N]);
  __device__ void StripedToBlocked(T (&)[N]);
  __device__ void BlockedToStriped(T (&)[N]);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF WarpExchange
template <class T, int N, int W = 32, int P = 0> struct WarpExchange {
  PC_CUB_STORAGE
  template <class U> __device__ void StripedToBlocked(T (&)[N], U (&)[N]);
  template <class U> __device__ void BlockedToStriped(T (&)[N], U (&)[N]);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF BlockRadixSort
template <class K, int B, int N, class V = NullType, int R = 4, bool M = true,
          int A = 0, int BY = 1, int BZ = 1, int P = 0>
struct BlockRadixSort {
  PC_CUB_STORAGE
  __device__ void Sort(K (&)[N], int = 0, int = sizeof(K) * 8);
  __device__ void Sort(K (&)[N], V (&)[N], int = 0, int = sizeof(K) * 8);
  __device__ void SortDescending(K (&)[N], int = 0, int = sizeof(K) * 8);
  __device__ void SortBlockedToStriped(K (&)[N], int = 0, int = sizeof(K) * 8);
  __device__ void SortBlockedToStriped(K (&)[N], V (&)[N], int = 0, int = sizeof(K) * 8);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF BlockAdjacentDifference
template <class T, int B, int BY = 1, int BZ = 1, int P = 0> struct BlockAdjacentDifference {
  PC_CUB_STORAGE
  template <int N, class U, class F> __device__ void SubtractLeft(T (&)[N], U (&)[N], F);
  template <int N, class U, class F> __device__ void SubtractLeft(T (&)[N], U (&)[N], F, T);
  template <int N, class U, class F> __device__ void SubtractRight(T (&)[N], U (&)[N], F);
  template <int N, class F, class Flag> __device__ void FlagHeads(Flag (&)[N], T (&)[N], F);
};
#undef PC_CUB_SELF
#define PC_CUB_SELF BlockHistogram
template <class T, int B, int N, int BINS, int A = 0, int BY = 1, int BZ = 1, int P = 0>
struct BlockHistogram {
  PC_CUB_STORAGE
  template <class C> __device__ void Histogram(T (&)[N], C (&)[BINS]);
  template <class C> __device__ void Composite(T (&)[N], C (&)[BINS]);
  template <class C> __device__ void InitHistogram(C (&)[BINS]);
};
#undef PC_CUB_SELF
#undef PC_CUB_STORAGE

// direct loads and stores of a thread's items
template <int B, class T, class It, int N> __device__ void LoadDirectBlocked(int, It, T (&)[N]);
template <int B, class T, class It, int N> __device__ void LoadDirectStriped(int, It, T (&)[N]);
template <int B, class T, class It, int N> __device__ void LoadDirectStriped(int, It, T (&)[N], int);
template <class T, class It, int N> __device__ void LoadDirectBlocked(int, It, T (&)[N]);
template <class T, class It, int N> __device__ void LoadDirectWarpStriped(int, It, T (&)[N]);
template <int B, class T, class It, int N> __device__ void StoreDirectStriped(int, It, T (&)[N]);
template <int B, class T, class It, int N> __device__ void StoreDirectStriped(int, It, T (&)[N], int);
template <class T, class It, int N> __device__ void StoreDirectBlocked(int, It, T (&)[N]);
template <class T, class It, int N> __device__ void StoreDirectWarpStriped(int, It, T (&)[N]);
__device__ unsigned LaneId();
__device__ unsigned WarpId();
template <class T> __device__ T ShuffleIndex(T, int, unsigned);
template <int W, class T> __device__ T ShuffleIndex(T, int, unsigned);

// iterators
template <class T> struct __pc_iterator {
  typedef std::random_access_iterator_tag iterator_category;
  typedef T value_type; typedef long difference_type; typedef T *pointer; typedef T reference;
  __host__ __device__ T operator*() const;
  __host__ __device__ T operator[](long) const;
  __host__ __device__ __pc_iterator operator+(long) const;
  __host__ __device__ long operator-(const __pc_iterator &) const;
};
template <class T, class O = long> struct CountingInputIterator : __pc_iterator<T> {
  __host__ __device__ CountingInputIterator(const T &);
};
template <class T, class O = long> struct ConstantInputIterator : __pc_iterator<T> {
  __host__ __device__ ConstantInputIterator(const T &);
};
template <class T, class F, class It, class O = long> struct TransformInputIterator
    : __pc_iterator<T> {
  __host__ __device__ TransformInputIterator(It, F);
};
template <CacheLoadModifier M, class T, class O = long> struct CacheModifiedInputIterator
    : __pc_iterator<T> {
  __host__ __device__ CacheModifiedInputIterator(T *);
};
template <class T> struct DoubleBuffer {
  T *d_buffers[2]; int selector;
  __host__ __device__ DoubleBuffer();
  __host__ __device__ DoubleBuffer(T *, T *);
  __host__ __device__ T *Current();
  __host__ __device__ T *Alternate();
};

// device-wide algorithms: (temporary storage, its bytes, ...) -> cudaError_t
#define PC_CUB_DEVICE(name) \
  template <class... A> static cudaError_t name(void *, size_t &, A &&...);
struct DeviceReduce {
  PC_CUB_DEVICE(Sum) PC_CUB_DEVICE(Max) PC_CUB_DEVICE(Min) PC_CUB_DEVICE(ArgMax)
  PC_CUB_DEVICE(ArgMin) PC_CUB_DEVICE(Reduce) PC_CUB_DEVICE(ReduceByKey)
  PC_CUB_DEVICE(TransformReduce)
};
struct DeviceSegmentedReduce {
  PC_CUB_DEVICE(Sum) PC_CUB_DEVICE(Max) PC_CUB_DEVICE(Min) PC_CUB_DEVICE(ArgMax)
  PC_CUB_DEVICE(ArgMin) PC_CUB_DEVICE(Reduce)
};
struct DeviceScan {
  PC_CUB_DEVICE(ExclusiveSum) PC_CUB_DEVICE(InclusiveSum) PC_CUB_DEVICE(ExclusiveScan)
  PC_CUB_DEVICE(InclusiveScan) PC_CUB_DEVICE(ExclusiveSumByKey)
  PC_CUB_DEVICE(InclusiveSumByKey)
};
struct DeviceRadixSort {
  PC_CUB_DEVICE(SortKeys) PC_CUB_DEVICE(SortPairs) PC_CUB_DEVICE(SortKeysDescending)
  PC_CUB_DEVICE(SortPairsDescending)
};
struct DeviceSegmentedRadixSort {
  PC_CUB_DEVICE(SortKeys) PC_CUB_DEVICE(SortPairs) PC_CUB_DEVICE(SortKeysDescending)
  PC_CUB_DEVICE(SortPairsDescending)
};
struct DeviceSegmentedSort {
  PC_CUB_DEVICE(SortKeys) PC_CUB_DEVICE(SortPairs)
};
struct DeviceSelect {
  PC_CUB_DEVICE(Flagged) PC_CUB_DEVICE(If) PC_CUB_DEVICE(Unique) PC_CUB_DEVICE(UniqueByKey)
};
struct DevicePartition { PC_CUB_DEVICE(Flagged) PC_CUB_DEVICE(If) };
struct DeviceHistogram { PC_CUB_DEVICE(HistogramEven) PC_CUB_DEVICE(HistogramRange) };
struct DeviceRunLengthEncode { PC_CUB_DEVICE(Encode) PC_CUB_DEVICE(NonTrivialRuns) };
#undef PC_CUB_DEVICE
}  // namespace cub
