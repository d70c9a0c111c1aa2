#!/usr/bin/env python3
"""The performance model against the device: `polycoal bench` over a set of programs,
one JSON and a summary (needs nvcc, pycuda and a GPU).

    python tools/check_model.py --out DIR [--repeat 10] [PROGRAM.cu[:MACROS[:ARGS]] ...]
    python tools/check_model.py --table DIR/model-check.json

Without programs: every PolyBench/GPU program of polybench_inputs/ at its standard
sizes and GEMM at 2048, and every fixture of testsuite/fixtures with a main (its
`// validate:` line's arguments). For each kernel: the form the passes proposed
(measured against the original whatever the model chose), the model's predicted
speedup of that form and the measured one, and whether the model's choice agreed
(taken: not measured slower; kept: not measured MARGIN faster). The summary gives the
ratio predicted / measured speedup (median and worst over the kernels measured) and the
kernels whose taken form ran slower. Results: DIR/model-check.json.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import statistics
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from corpus_report import arguments  # noqa: E402

LONG_US = 50.0

POLYBENCH = (
    "2dconv/2dconv.cu", "3dconv/3dconv.cu", "2mm/2mm.cu::ni=1024,nj=1024,nk=1024,nl=1024",
    "3mm/3mm.cu::ni=512,nj=512,nk=512,nl=512,nm=512", "adi/adi.cu::n=1024",
    "atax/atax.cu::nx=4096,ny=4096", "bicg/bicg.cu::nx=4096,ny=4096",
    "correlation/correlation.cu::m=2048,n=2048", "covariance/covariance.cu::m=2048,n=2048",
    "fdtd2d/fdtd2d.cu::nx=2048,ny=2048", "gemm/gemm.cu::ni=512,nj=512,nk=512",
    "gemm/gemm.cu:NI=2048,NJ=2048,NK=2048:ni=2048,nj=2048,nk=2048",
    "gemver/gemver.cu::n=4096", "gesummv/gesummv.cu::n=4096",
    "gramschmidt/gramschmidt.cu::m=2048,n=2048,k=0", "jacobi1d/jacobi1d.cu",
    "jacobi2d/jacobi2d.cu", "lu/lu.cu::n=2048,k=0", "mvt/mvt.cu::n=4096",
    "syrk/syrk.cu::ni=1024,nj=1024", "syr2k/syr2k.cu::ni=1024,nj=1024",
    "cpp/covariance.cu::m=2048,n=2048")


def default_programs() -> list[str]:
    out = [os.path.join(ROOT, "polybench_inputs", p) for p in POLYBENCH]
    for path in sorted(glob.glob(os.path.join(ROOT, "testsuite", "fixtures", "*.cu"))):
        text = open(path, errors="replace").read()
        if "int main" in text:
            out.append(path)
    return out


def run(spec: str, repeat: int) -> dict:
    from polycoal.bench import bench
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.transform import TransformOptions
    path, _, rest = spec.partition(":")
    macros, _, given = rest.partition(":")
    preprocessor = PreprocessorOptions(
        include_dirs=(os.path.dirname(os.path.abspath(path)),),
        defines=tuple(m for m in macros.split(",") if m))
    values = {**arguments(open(path, errors="replace").read()),
              **{n: int(v) for n, v in (a.split("=", 1) for a in given.split(",") if a)}}
    try:
        program = read_program(path, preprocessor)
        rows = bench(program, TransformOptions(preprocessor=preprocessor), values, repeat)
        return {"program": os.path.relpath(path, ROOT), "spec": spec, "rows": rows}
    except Exception as error:          # noqa: BLE001 - reported, the others go on
        return {"program": os.path.relpath(path, ROOT), "spec": spec,
                "error": f"{type(error).__name__}: {error}"}


def summary(results: list[dict]) -> dict:
    ratios, slower, disagree, measured = [], [], [], 0
    for r in results:
        for row in r.get("rows", []):
            m, p = row["measured"], row["predicted_speedup"]
            if not m or not m["ok"]:
                continue
            measured += 1
            if p:
                ratio = p / m["speedup"]
                ratios.append((max(ratio, 1 / ratio), ratio, r["program"], row["kernel"],
                               m["original_ms"]))
            if row["chosen"] != "unchanged" and m["speedup"] < 0.95:
                slower.append((r["program"], row["kernel"], m["speedup"]))
            if row["agrees"] is False:
                disagree.append((r["program"], row["kernel"], row["chosen"], m["speedup"], p))
    worst = max(ratios, default=None)
    # kernels of 50 us and more as written: below it the harness's run-to-run noise
    # (about 20% at 10-15 us) is of the order of the differences measured
    long = [r for r in ratios if r[4] * 1e3 >= LONG_US]
    worst_long = max(long, default=None)
    return {"kernels_measured": measured,
            "from_50us": {"priced": len(long),
                          "median_ratio": statistics.median([r[1] for r in long])
                          if long else None,
                          "within_2x": sum(1 for r in long if r[0] <= 2.0),
                          "worst": worst_long and {"factor": worst_long[0],
                                                   "program": worst_long[2],
                                                   "kernel": worst_long[3]}},
            "median_ratio": statistics.median([r[1] for r in ratios]) if ratios else None,
            "median_error": statistics.median([r[0] for r in ratios]) if ratios else None,
            "worst": worst and {"factor": worst[0], "ratio": worst[1], "program": worst[2],
                                "kernel": worst[3]},
            "within_2x": sum(1 for r in ratios if r[0] <= 2.0), "priced": len(ratios),
            "taken_and_slower": slower, "disagreements": disagree}


def markdown(report: dict) -> str:
    """The measured kernels of a report as a Markdown table (BENCHMARKS.md)."""
    lines = ["| program | kernel | chosen | form measured | predicted original / form us "
             "| measured original / form us | predicted | measured |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["programs"]:
        for row in r.get("rows", []):
            m, p = row["measured"], row["predicted"]
            if not m or not p:
                continue
            times = {c["form"]: c["time"] for c in p["candidates"]}
            form = times.get(row["proposed"])
            lines.append(
                f"| {r['program'].split('/')[-1]} | {row['kernel']} | {row['chosen']} | "
                f"{row['proposed']} | {times['original']:.4g} / "
                f"{'-' if form is None else f'{form:.4g}'} | "
                f"{m['original_ms'] * 1e3:.4g} / {m['form_ms'] * 1e3:.4g} | "
                f"{(row['predicted_speedup'] or 0):.2f}x | {m['speedup']:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--table", help="print the Markdown table of an earlier report")
    args = ap.parse_args()
    if args.table:
        print(markdown(json.load(open(args.table))), end="")
        return 0
    if not args.out:
        ap.error("--out is required")
    from polycoal.validate.device import load_pycuda
    driver, _ = load_pycuda()
    results = []
    for spec in args.programs or default_programs():
        result = run(spec, args.repeat)
        results.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "rows"} |
                         {"kernels": [(x["kernel"], x["chosen"], x["proposed"],
                                       x["predicted_speedup"],
                                       x["measured"] and x["measured"]["speedup"])
                                      for x in result.get("rows", [])]}), flush=True)
    device = driver.Device(0).name()
    report = {"date": datetime.date.today().isoformat(), "device": device,
              "command": "python tools/check_model.py " + " ".join(sys.argv[1:]),
              "repeat": args.repeat, "summary": summary(results), "programs": results}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "model-check.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
