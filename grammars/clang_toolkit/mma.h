// polycoal's declarations of <mma.h> for Clang (warp matrix operations): read where a program
// includes it (frontend/clang.py puts this directory before the toolkit's). The shapes
// are the documented API's; nothing here is compiled or linked.
#pragma once
#include "cuda_fp16.h"
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision { struct tf32 {}; }
namespace experimental { namespace precision { struct u4 {}; struct s4 {}; struct b1 {}; } }
template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  enum { num_elements = 8 };
  T x[8];
};
template <typename F, typename T> __device__ void fill_fragment(F &, const T &);
template <typename F, typename T> __device__ void load_matrix_sync(F &, const T *, unsigned);
template <typename F, typename T> __device__ void load_matrix_sync(F &, const T *, unsigned,
                                                                   layout_t);
template <typename F, typename T> __device__ void store_matrix_sync(T *, const F &, unsigned,
                                                                    layout_t);
template <typename D, typename A, typename B, typename C>
__device__ void mma_sync(D &, const A &, const B &, const C &, bool = false);
template <typename T> __device__ T __float_to_tf32(T);
}  // namespace wmma
}  // namespace nvcuda
