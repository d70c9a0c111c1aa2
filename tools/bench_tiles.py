#!/usr/bin/env python3
"""Tile shapes of tiled products measured on the device (needs nvcc, pycuda, CuPy).

    python tools/bench_tiles.py --out DIR [--repeat 10] [--matmul 512 1024 2048]
        --sizes auto --sizes tile=128,chunk=8 ...
        PROGRAM.cu[:NAME=VALUE,...[:arg=VALUE,...]] ...

For each program (macros after the first colon, int kernel arguments after the second;
without them the program's `// validate:` line) and each `--sizes` value (`auto`:
polycoal's own choice), the program is transformed with those sizes and every tiled
kernel validated and timed on the GPU against its original (polycoal.validate.device:
fresh random inputs, every array compared, CUDA events after a warm-up, the median of
`--repeat`; the original timed with the first value only). With --matmul, cuBLAS SGEMM
of N x N floats through CuPy (`a @ b`, the median of 20) in the same run, before the
programs. Results: one JSON line each, DIR/tiles.json, and a table last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from bench_copy_reference import timed  # noqa: E402
from corpus_report import arguments  # noqa: E402
from polycoal.options import parse_sizes  # noqa: E402
from polycoal.decisions import TransformOptions  # noqa: E402
from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
from polycoal.transform import transform_program  # noqa: E402
from polycoal.validate.device import load_pycuda, validate_device  # noqa: E402


def sgemm(sizes: list[int]) -> dict:
    if not sizes:
        return {}
    import cupy
    out = {}
    for n in sizes:
        x = cupy.random.standard_normal((n, n), dtype=cupy.float32)
        y = cupy.random.standard_normal((n, n), dtype=cupy.float32)
        ms = timed(cupy, lambda: x @ y, 20)
        out[n] = {"sgemm_ms": ms, "TFLOPs": 2 * n ** 3 / ms / 1e9}
        print(json.dumps({"cublas_sgemm": n, **out[n]}), flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--sizes", action="append", default=[])
    ap.add_argument("--matmul", type=int, nargs="*", default=[])
    args = ap.parse_args()
    references = sgemm(args.matmul)
    driver, _ = load_pycuda()
    rows, problems = [], 0
    for spec in args.programs:
        path, _, rest = spec.partition(":")
        macros, _, given = rest.partition(":")
        defines = tuple(m for m in macros.split(",") if m)
        preprocessor = PreprocessorOptions(
            include_dirs=(os.path.dirname(os.path.abspath(path)),), defines=defines)
        program = read_program(path, preprocessor)
        values = {**arguments(open(path).read()),
                  **{n: int(v) for n, v in (a.split("=", 1) for a in given.split(",") if a)}}
        original = {}
        for sizes in args.sizes or ["auto"]:
            forced = () if sizes == "auto" else (parse_sizes(sizes),)
            options = TransformOptions(preprocessor=preprocessor, sizes=forced)
            result = transform_program(program, options)
            chosen = {d.kernel: d.generated.tiles.sizes.text for d in result.decisions
                      if d.action == "product"}
            # the original is timed once: later sizes validate against it untimed
            for v in validate_device(program, result, options, values, args.repeat,
                                     time_original=not original):
                if v.kernel not in chosen:
                    continue
                if v.original_ms:
                    original.setdefault(v.kernel, v.original_ms)
                base = original.get(v.kernel)
                row = {"program": path, "defines": list(defines), "kernel": v.kernel,
                       "asked": sizes, "sizes": chosen[v.kernel], "ok": v.ok,
                       "message": v.message, "original_ms": base,
                       "tiled_ms": v.transformed_ms,
                       "speedup": base / v.transformed_ms if base and v.transformed_ms
                       else None, "grid": v.new_grid, "block": v.new_block}
                problems += not v.ok
                rows.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    dev = driver.Device(0).name()
    with open(os.path.join(args.out, "tiles.json"), "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "device": dev,
                   "command": " ".join(sys.argv), "sgemm": references, "rows": rows}, f,
                  indent=2)
    print(f"{'program':34s} {'kernel':16s} {'asked':28s} {'sizes':28s} {'ms':>8s} "
          f"{'x':>8s} ok")
    for r in rows:
        name = os.path.basename(r["program"]) + "".join(
            f" {d}" for d in r["defines"])[:60]
        print(f"{name[:34]:34s} {r['kernel'][:16]:16s} {r['asked'][:28]:28s} "
              f"{r['sizes'][:28]:28s} {r['tiled_ms'] or 0:8.4f} {r['speedup'] or 0:8.1f} "
              f"{r['ok']}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
