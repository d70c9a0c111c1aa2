#!/usr/bin/env python3
"""Row reductions (gemv-class kernels) on the device: polycoal's warp-per-row kernels
against the originals and against cuBLAS sgemv (through CuPy), at several sizes.

    python tools/bench_reductions.py --out DIR [--sizes 4096,16384] [--repeat 20]

For each size, each program is transformed with its size macros set (-D), the changed
kernel validated and timed against its original (polycoal.validate.device), and cuBLAS
timed on the same shapes (A @ x, or A.T @ x for column reductions, for each matrix the
kernel reads), median of CUDA-event timed calls after a warm-up. ATAX's and MVT's kernels
are transformed with --collapse-redundant-threads (their 32x8 launch runs 8 racing
copies of each thread). Writes DIR/reductions.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)

from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
from polycoal.transform import TransformOptions, transform_program  # noqa: E402
from polycoal.validate.device import load_pycuda, validate_device  # noqa: E402

CASES = [  # program, kernel, size macros, matrices the kernel streams, transposed
    ("atax", "atax_kernel1", ("NX", "NY"), 1, False),
    ("atax", "atax_kernel2", ("NX", "NY"), 1, True),
    ("bicg", "bicg_kernel1", ("NX", "NY"), 1, True),
    ("bicg", "bicg_kernel2", ("NX", "NY"), 1, False),
    ("mvt", "mvt_kernel1", ("N",), 1, False),
    ("mvt", "mvt_kernel2", ("N",), 1, True),
    ("gesummv", "gesummv_kernel", ("N",), 2, False),
    ("gemver", "gemver_kernel2", ("N",), 1, True),
    ("gemver", "gemver_kernel3", ("N",), 1, False),
]


def cublas_ms(n: int, matrices: int, repeat: int, transposed: bool) -> float | None:
    try:
        import cupy
    except ImportError:
        return None
    mats = [cupy.random.standard_normal((n, n), dtype=cupy.float32) for _ in range(matrices)]
    if transposed:       # a column reduction: A.T @ x, the same sgemv transposed
        mats = [m.T for m in mats]
    x = cupy.random.standard_normal(n, dtype=cupy.float32)
    for m in mats:
        m @ x
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for m in mats:
            m @ x
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    del mats
    cupy.get_default_memory_pool().free_all_blocks()
    return statistics.median(times)


def run_case(case, n: int, repeat: int, with_cublas: bool = True,
             reduction: str = "auto", shape: dict | None = None) -> dict:
    program, kernel, macros, matrices, transposed = case
    options = TransformOptions(kernel=kernel, collapse_redundant=True, reduction=reduction,
                               **(shape or {}),
                               preprocessor=PreprocessorOptions(
                                   defines=tuple(f"{m}={n}" for m in macros)))
    path = os.path.join(ROOT, "polybench_inputs", program, f"{program}.cu")
    prog = read_program(path, options.preprocessor)
    result = transform_program(prog, options)
    (v,) = validate_device(prog, result, options, {}, repeat)
    return {"n": n, "program": program, "kernel": kernel, "ok": v.ok, "message": v.message,
            "original_ms": v.original_ms, "transformed_ms": v.transformed_ms,
            "speedup": v.speedup, "bytes": v.bytes_moved, "arrays": v.arrays,
            "action": next(d.action for d in result.decisions if d.kernel == kernel),
            "cublas_ms": cublas_ms(n, matrices, repeat, transposed) if with_cublas else None}


def column_form_options(form: str) -> dict:
    """TransformOptions fields for a column form (block:G or split:ROWS:GROUPS[:COLUMNS];
    "auto": polycoal's defaults)."""
    kind, *shape = form.split(":")
    if kind == "block" and shape:
        return {"column_groups": int(shape[0])}
    if kind == "split" and shape:
        return {"split": tuple(int(v) for v in shape)}
    return {}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="4096,16384")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--column-forms", default="", help="column-reduction forms to compare "
                    "first on bicg_kernel1 at every size: auto (the defaults), block:G (a block of "
                    "32xG threads per 32 columns) or split:ROWS:GROUPS[:COLUMNS] (2-D blocks, "
                    "COLUMNS per thread, atomicAdd), comma-separated; the main run uses the "
                    "defaults")
    args = ap.parse_args()
    driver, _ = load_pycuda()
    sizes = [int(v) for v in args.sizes.split(",")]
    tuning = []
    for form in filter(None, args.column_forms.split(",")):
        for n in sizes:
            row = run_case(("bicg", "bicg_kernel1", ("NX", "NY"), 1, True), n, args.repeat,
                           with_cublas=False, reduction=form.split(":")[0],
                           shape=column_form_options(form))
            tuning.append({"form": form, **row})
            print(json.dumps(tuning[-1]), flush=True)
    report = {"date": datetime.date.today().isoformat(),
              "device": driver.Device(0).name(), "command": " ".join(sys.argv), "rows": []}
    report["column_form"] = "auto"
    report["tuning"] = tuning
    for n in sizes:
        for case in CASES:
            row = run_case(case, n, args.repeat)
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "reductions.json"), "w") as f:
        json.dump(report, f, indent=2)
    return 0 if all(r["ok"] for r in report["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
