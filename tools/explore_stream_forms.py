"""Hand-written forms of kernels that compute one element a thread and share nothing
between threads (Jacobi-2D's copy, FDTD's second step, LU's update, Jacobi-1D), timed on
the device beside a copy of the same bytes, to see which assignment of elements to
threads puts enough bytes in flight to reach the copy's bandwidth past the L2.

    python tools/explore_stream_forms.py [--n 8192] [--n1 16777216] [--repeat 20]

Needs CuPy. Forms, each thread running `c` elements, every load of all of them issued
before the first store (the loads hoisted, as polycoal's register window does):
  one       as written: a thread an element (blocks of 32 x 8; 256 for 1-D);
  rows c    c consecutive rows at the thread's column (the window's assignment);
  srows c   c rows blockDim.y apart (a block runs c x 8 rows, each warp a row at a time);
  cols c    c columns blockDim.x apart (a block runs 32c columns);
  vec4      (copy and 1-D only) four adjacent elements in one 16-byte access.
Each timed alone between two events, the median of --repeat after a warm-up; each
result checked equal to the form `one`'s. The reference: CuPy's copy (the bound's
bytes, read + written). Not a unit test: an exploration whose figures BENCHMARKS.md
quotes.
"""
import argparse
import json
import os
import sys

import cupy as cp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_copy_reference import timed  # noqa: E402  (median of event-timed runs)

# op -> (arrays, loads, store, condition, arrays read+written per element)
OPS = {
    "copy": ("float *A, float *B", ["B[(i) * n + (j)]"], "A[(i) * n + (j)] = v[0];",
             "i > 0 && i < n - 1 && j > 0 && j < n - 1", 2),
    "fdtd2": ("float *A, float *B", ["A[(i) * n + (j)]", "B[(i) * n + (j)]", "B[(i) * n + (j) - 1]"],
              "A[(i) * n + (j)] = v[0] - 0.5f * (v[1] - v[2]);", "i < n && j < n && j > 0", 3),
    "lu": ("float *A, float *B", ["A[(i) * n + (j)]", "A[(i) * n]", "A[(j)]"],
           "A[(i) * n + (j)] = v[0] - v[1] * v[2];", "i > 0 && j > 0 && i < n && j < n", 2),
}
J1 = ("float *A, float *B", ["A[(i) - 1]", "A[(i)]", "A[(i) + 1]"],
      "B[(i)] = (v[0] + v[1] + v[2]) / 3.0f;", "i > 0 && i < n - 1", 2)

INDEX = {
    "one": ("blockIdx.y * blockDim.y + threadIdx.y", "blockIdx.x * blockDim.x + threadIdx.x"),
    "rows": ("(blockIdx.y * blockDim.y + threadIdx.y) * C + q", "blockIdx.x * blockDim.x + threadIdx.x"),
    "srows": ("blockIdx.y * blockDim.y * C + q * blockDim.y + threadIdx.y",
              "blockIdx.x * blockDim.x + threadIdx.x"),
    "cols": ("blockIdx.y * blockDim.y + threadIdx.y",
             "blockIdx.x * blockDim.x * C + q * blockDim.x + threadIdx.x"),
}
INDEX1 = {"one": "blockIdx.x * blockDim.x + threadIdx.x",
          "cols": "blockIdx.x * blockDim.x * C + q * blockDim.x + threadIdx.x"}


def kernel(name: str, op, form: str, c: int, one_d: bool) -> str:
    args, loads, store, cond, _ = op
    if one_d:
        index = f"const int i = {INDEX1[form]};"
    else:
        ie, je = INDEX[form]
        index = f"const int i = {ie}, j = {je};"
    nv = len(loads)
    load_text = " ".join(f"v[{m}] = {l};" for m, l in enumerate(loads))
    return f"""
extern "C" __global__ void {name}(int n, {args}) {{
  const int C = {c};
  float w[{c}][{nv}]; bool ok[{c}];
  #pragma unroll
  for (int q = 0; q < C; ++q) {{
    {index}
    float *v = w[q];
    ok[q] = {cond};
    if (ok[q]) {{ {load_text} }}
  }}
  #pragma unroll
  for (int q = 0; q < C; ++q) {{
    {index}
    float *v = w[q];
    if (ok[q]) {{ {store} }}
  }}
}}
"""


VEC = r"""
extern "C" __global__ void copy_vec4(int n, float *A, float *B) {
  const int j4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i <= 0 || i >= n - 1 || j4 >= n) return;
  const float4 x = *reinterpret_cast<const float4 *>(&B[i * n + j4]);
  if (j4 > 0) A[i * n + j4] = x.x;
  A[i * n + j4 + 1] = x.y; A[i * n + j4 + 2] = x.z;
  if (j4 + 3 < n - 1) A[i * n + j4 + 3] = x.w;
}
extern "C" __global__ void j1_vec4(int n, float *A, float *B) {
  const int i4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (i4 >= n) return;
  const float4 x = *reinterpret_cast<const float4 *>(&A[i4]);
  const float l = i4 > 0 ? A[i4 - 1] : 0.0f, r = i4 + 4 < n ? A[i4 + 4] : 0.0f;
  float4 y;
  y.x = (l + x.x + x.y) / 3.0f; y.y = (x.x + x.y + x.z) / 3.0f;
  y.z = (x.y + x.z + x.w) / 3.0f; y.w = (x.z + x.w + r) / 3.0f;
  if (i4 > 0) B[i4] = y.x;
  B[i4 + 1] = y.y; B[i4 + 2] = y.z;
  if (i4 + 3 < n - 1) B[i4 + 3] = y.w;
}
"""

FORMS2 = [("one", 1, (32, 8)), ("one", 1, (128, 2)), ("rows", 4, (32, 8)), ("rows", 8, (32, 8)),
          ("srows", 4, (32, 8)), ("srows", 8, (32, 8)), ("cols", 4, (32, 8)), ("cols", 4, (32, 4)),
          ("cols", 8, (32, 4))]
FORMS1 = [("one", 1, 256), ("one", 1, 1024), ("cols", 4, 256), ("cols", 8, 256), ("cols", 4, 128)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--n1", type=int, default=1 << 24)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    src = VEC
    for op_name, op in OPS.items():
        for form, c in dict.fromkeys((form, c) for form, c, _ in FORMS2):
            src += kernel(f"{op_name}_{form}{c}", op, form, c, False)
    for form, c in dict.fromkeys((form, c) for form, c, _ in FORMS1):
        src += kernel(f"j1_{form}{c}", J1, form, c, True)
    module = cp.RawModule(code=src, options=("-std=c++17",))
    results = []
    n = args.n
    base = cp.random.standard_normal((n, n), dtype=cp.float32)
    other = cp.random.standard_normal((n, n), dtype=cp.float32)
    copy_ms = timed(cp, lambda: cp.copyto(other, base), args.repeat)
    bw = 2 * base.nbytes / copy_ms  # bytes per ms
    print(f"copy {n}x{n}: {copy_ms * 1e3:.1f} us, {bw / 1e9:.0f} GB/s")
    for op_name, op in OPS.items():
        bound = op[4] * base.nbytes / bw
        ref = None
        for form, c, (bx, by) in FORMS2:
            f = module.get_function(f"{op_name}_{form}{c}")
            gx = (n + bx * (c if form == "cols" else 1) - 1) // (bx * (c if form == "cols" else 1))
            gy = (n + by * (c if form in ("rows", "srows") else 1) - 1) // (by * (c if form in ("rows", "srows") else 1))
            A, B = base.copy(), other.copy()
            f((gx, gy), (bx, by), (cp.int32(n), A, B))
            out = A.copy()
            if ref is None:
                ref = out
            same = bool(cp.array_equal(out, ref))
            ms = timed(cp, lambda: f((gx, gy), (bx, by), (cp.int32(n), A, B)), args.repeat)
            results.append({"op": op_name, "form": form, "c": c, "block": [bx, by], "n": n,
                            "ms": ms, "fraction": bound / ms, "same": same})
            print(f"{op_name:6s} {form:5s} c={c} {bx}x{by}: {ms * 1e3:7.1f} us  {bound / ms:5.0%} of bound  same={same}")
        if op_name == "copy":
            A, B = base.copy(), other.copy()
            f = module.get_function("copy_vec4")
            grid = ((n // 4 + 31) // 32, (n + 7) // 8)
            A2 = other.copy()
            f(grid, (32, 8), (cp.int32(n), A2, base))
            ms = timed(cp, lambda: f(grid, (32, 8), (cp.int32(n), A, B)), args.repeat)
            results.append({"op": "copy", "form": "vec4", "c": 4, "block": [32, 8], "n": n, "ms": ms,
                            "fraction": bound / ms, "same": None})
            print(f"copy   vec4  c=4 32x8: {ms * 1e3:7.1f} us  {bound / ms:5.0%} of bound")
    n1 = args.n1
    a1 = cp.random.standard_normal(n1, dtype=cp.float32)
    b1 = cp.zeros(n1, dtype=cp.float32)
    c1 = timed(cp, lambda: cp.copyto(b1, a1), args.repeat)
    bound1 = 2 * a1.nbytes / (2 * a1.nbytes / c1)
    ref = None
    for form, c, bx in FORMS1 + [("vec4", 4, 256)]:
        f = module.get_function(f"j1_{form}{c}" if form != "vec4" else "j1_vec4")
        per = bx * c
        grid = ((n1 + per - 1) // per,)
        B = cp.zeros_like(a1)
        f(grid, (bx,), (cp.int32(n1), a1, B))
        if ref is None:
            ref = B.copy()
        same = bool(cp.array_equal(B[1:-1], ref[1:-1]))
        ms = timed(cp, lambda: f(grid, (bx,), (cp.int32(n1), a1, B)), args.repeat)
        results.append({"op": "jacobi1d", "form": form, "c": c, "block": [bx], "n": n1, "ms": ms,
                        "fraction": bound1 / ms, "same": same})
        print(f"j1     {form:5s} c={c} {bx}: {ms * 1e3:7.1f} us  {bound1 / ms:5.0%} of bound  same={same}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"copy_ms": copy_ms, "copy1_ms": c1, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
