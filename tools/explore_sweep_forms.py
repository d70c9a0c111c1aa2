#!/usr/bin/env python3
"""Staged sweeps at each count of rows a warp runs, timed on the device beside the
kernel as written (issue 34: sweeps).

    python tools/explore_sweep_forms.py --out DIR [--repeat 10] [--rows 32 16 8 4 2 1]
        [PROGRAM.cu[:NAME=VALUE,...[:arg=VALUE,...]] ...]

For each program (by default ADI at n = 4096 and the row recurrences of
testsuite/fixtures/row_sweeps.cu at three shapes) and each count of rows a warp runs
(`--sweep-rows`; with --both, each with and without the next chunk's loads issued
ahead), the program is transformed with that count (every sweep proposed,
whatever the model; and once as the model chooses: `model`, the vectorised sweep
where no trip reads what an earlier one wrote; with --warps, the vectorised sweep at
each count of warps a row) and each swept kernel validated and timed on the GPU against its
original (polycoal.validate.device: fresh random inputs, every array compared, CUDA
events after a warm-up, the median of --repeat). polycoal's own choice (`auto`) is
timed too. Writes DIR/sweep-forms.json, one row a kernel, form and shape. Not a unit
test: an exploration whose figures BENCHMARKS.md quotes.
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

from polycoal.decisions import TransformOptions  # noqa: E402
from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
import polycoal.codegen.sweep as sweep_code  # noqa: E402
import polycoal.passes.sweep as sweep_pass  # noqa: E402
import polycoal.transform as transform  # noqa: E402
from polycoal.passes import PASSES  # noqa: E402
from polycoal.transform import transform_program  # noqa: E402
from polycoal.validate.device import validate_device  # noqa: E402

ROWS = "testsuite/fixtures/row_sweeps.cu"
DEFAULT = (
    "polybench_inputs/adi/adi.cu:N=4096,TSTEPS=1:n=4096,tsteps=1,i1=1",
    "polybench_inputs/adi/adi.cu:N=1024,TSTEPS=1:n=1024,tsteps=1,i1=1",
    f"{ROWS}:ROWS=4096,COLS=4096:rows=4096,cols=4096,n=4096",
    f"{ROWS}:ROWS=16384,COLS=1024:rows=16384,cols=1024,n=16384",
    f"{ROWS}:ROWS=65536,COLS=256:rows=65536,cols=256,n=65536",
)


def spec(text: str) -> tuple[str, tuple[str, ...], dict[str, int]]:
    path, _, rest = text.partition(":")
    macros, _, values = rest.partition(":")
    return (os.path.join(ROOT, path), tuple(m for m in macros.split(",") if m),
            {n: int(v) for n, v in (a.split("=", 1) for a in values.split(",") if a)})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="*", default=list(DEFAULT))
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rows", type=int, nargs="+", default=[32, 16, 8, 4, 2, 1])
    ap.add_argument("--warps", type=int, nargs="*", default=[],
                    help="the vectorised sweep with this many warps a row, where it "
                    "applies (passes/sweep.FORCED_WARPS; the staged sweep not proposed)")
    ap.add_argument("--both", action="store_true",
                    help="each count of rows with and without the next chunk's loads "
                    "issued ahead (codegen/sweep.PREFETCH)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sweep_pass.MANY_ROWS = 0          # every sweep proposed: the forms are what is timed
    rows_out = []
    for text in args.programs:
        path, macros, values = spec(text)
        pre = PreprocessorOptions(include_dirs=(os.path.dirname(path),), defines=macros)
        program = read_program(path, pre)
        runs = [(None, True, True, None), (None, True, False, None)] + \
            [(r, p, False, None) for r in args.rows for p in (True, False)[:1 + args.both]] + \
            [(None, True, False, w) for w in args.warps]
        for rows, prefetch, model, warps in runs:
            sweep_code.PREFETCH = prefetch
            sweep_pass.FORCED_WARPS = warps
            transform.PASSES = PASSES if warps is None else \
                tuple(p for p in PASSES if p is not sweep_pass.PASS)
            options = TransformOptions(preprocessor=pre, model=model, sweep_rows=rows,
                                       price_at=tuple(sorted(values.items())))
            result = transform_program(program, options)
            swept = {d.kernel: d for d in result.decisions
                     if d.action in ("swept", "vectorised")}
            if not swept:
                continue
            for v in validate_device(program, result, options, values, args.repeat,
                                     time_original=model):
                if v.kernel not in swept:
                    continue
                row = {"program": os.path.relpath(path, ROOT), "macros": macros,
                       "kernel": v.kernel, "action": swept[v.kernel].action,
                       "warp_rows": swept[v.kernel].generated.tiles.warp_rows,
                       "form": ("model" if model else f"warps={warps}" if warps
                                else "auto" if rows is None else f"rows={rows}") +
                       ("" if prefetch else ",no-prefetch"),
                       "original_ms": v.original_ms, "polycoal_ms": v.transformed_ms,
                       "ok": v.ok, "message": v.message[:200]}
                rows_out.append(row)
                print(json.dumps(row), flush=True)
    out = os.path.join(args.out, "sweep-forms.json")
    with open(out, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "rows": rows_out}, f, indent=1)
    print(f"wrote {out}")
    return 0 if all(r["ok"] for r in rows_out) else 1


if __name__ == "__main__":
    sys.exit(main())
