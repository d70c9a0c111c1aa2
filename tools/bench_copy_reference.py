#!/usr/bin/env python3
"""References timed on the device with CuPy (CUDA events, a warm-up, the median of
`--repeat`): a device-to-device copy of ROWS x COLS floats (the copy ceiling a kernel
that reads and writes each element once can reach) and CuPy's own transpose into a
contiguous array; with --matmul N..., cuBLAS SGEMM through `a @ b` of N x N floats.

    python tools/bench_copy_reference.py --rows 4096 --cols 4096 [--repeat 20]
                                         [--matmul 512 1024 2048]

Prints one JSON line: milliseconds and GB/s (bytes read + written) of each, and
milliseconds and TFLOP/s (2 N^3) of each product.
"""

from __future__ import annotations

import argparse
import json
import statistics


def timed(cupy, step, repeat: int) -> float:
    step()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--matmul", type=int, nargs="*", default=[])
    args = ap.parse_args()
    import cupy
    a = cupy.random.standard_normal((args.rows, args.cols), dtype=cupy.float32)
    b = cupy.empty_like(a)
    moved = 2 * a.nbytes
    copy_ms = timed(cupy, lambda: b.__setitem__(Ellipsis, a), args.repeat)
    transpose_ms = timed(cupy, lambda: cupy.ascontiguousarray(a.T), args.repeat)
    products = {}
    for n in args.matmul:
        x = cupy.random.standard_normal((n, n), dtype=cupy.float32)
        y = cupy.random.standard_normal((n, n), dtype=cupy.float32)
        ms = timed(cupy, lambda: x @ y, args.repeat)
        products[str(n)] = {"sgemm_ms": ms, "TFLOPs": 2 * n ** 3 / ms / 1e9}
    print(json.dumps({
        "rows": args.rows, "cols": args.cols, "bytes_moved": moved,
        "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "copy_ms": copy_ms, "copy_GBps": moved / copy_ms / 1e6,
        "cupy_transpose_ms": transpose_ms, "cupy_transpose_GBps": moved / transpose_ms / 1e6,
        "sgemm": products}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
