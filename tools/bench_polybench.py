#!/usr/bin/env python3
"""The PolyBench/GPU regression and benchmark, run on the device (needs nvcc and pycuda).

    python tools/bench_polybench.py --out DIR [--programs covariance,correlation]
                                    [--repeat 10] [--no-programs]

1. Kernels: every program is transformed; each kernel polycoal changed is validated and
   timed on the GPU against its original (polycoal.validate.device: fresh random inputs,
   every array compared, CUDA events, warm-up, median of the repeats), at the programs'
   standard sizes.
2. Whole programs: each program and its transformed version are built with
   `nvcc -O3 -arch=sm_<device>` and run; both must report 0 non-matching CPU-GPU outputs
   (the programs' own check against their CPU reference) and both GPU runtimes are kept.
   A program polycoal leaves byte-identical is built and run once (one whose host loops
   alone changed runs both ways).
Results go to DIR/bench.json; tools/render_benchmarks.py turns them into BENCHMARKS.md
and a chart.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)

from polycoal.frontend import read_program  # noqa: E402
from polycoal.transform import TransformOptions, transform_program  # noqa: E402
from polycoal.validate.device import load_pycuda, validate_device  # noqa: E402

_MISMATCH = re.compile(r"Non-Matching CPU-GPU Outputs Beyond Error Threshold of\s*([\d.]+)"
                       r" Percent:\s*(\d+)")
_GPU_TIME = re.compile(r"GPU Runtime:\s*([\d.]+)s")
# values for int kernel arguments that a host loop varies (they have no single value)
HOST_LOOP_ARGUMENTS = {"gramschmidt": {"k": 7}, "lu": {"k": 7}, "cpp/gramschmidt": {"k": 7}}


def size_arguments(folder: str, program: str = "") -> dict[str, int]:
    """The kernels' size arguments at the program's dataset: PolyBench passes the size
    macro `N` as the int argument `n` (the loop bounds at the published default); the
    macros are in the folder's headers, or (cpp/) in the program itself."""
    values = {}
    for header in sorted(os.listdir(folder)) + [program]:
        if header.endswith(".cuh") or (header and header == program):
            with open(os.path.join(folder, header)) as f:
                for m in re.finditer(r"^#\s*define\s+([A-Z][A-Z0-9]*)\s+(\d+)\s*$", f.read(),
                                     re.M):
                    values.setdefault(m.group(1).lower(), int(m.group(2)))
    return values


def run_program(source: str, include: str, workdir: str, arch: str, name: str) -> dict:
    exe = os.path.join(workdir, name)
    build = subprocess.run(["nvcc", "-O3", f"-arch={arch}", source, "-o", exe, f"-I{include}",
                            "-lm"], capture_output=True, text=True)
    if build.returncode != 0:
        return {"built": False, "error": build.stderr[-2000:]}
    start = time.perf_counter()
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=900, cwd=workdir)
    text = proc.stdout + proc.stderr
    mismatch = _MISMATCH.search(text)
    gpu = _GPU_TIME.search(text)
    return {"built": True, "status": proc.returncode,
            "mismatches": int(mismatch.group(2)) if mismatch else None,
            "gpu_seconds": float(gpu.group(1)) if gpu else None,
            "wall_seconds": time.perf_counter() - start}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--programs", default="")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--no-programs", action="store_true")
    ap.add_argument("--collapse-redundant-threads", action="store_true",
                    help="pass --collapse-redundant-threads (ATAX and MVT race otherwise)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    driver, _ = load_pycuda()
    device = driver.Device(0)
    major, minor = device.compute_capability()
    arch = f"sm_{major}{minor}"
    # name/name.cu, and the C++-style programs as cpp/name
    inputs = os.path.join(ROOT, "polybench_inputs")
    names = sorted(d for d in os.listdir(inputs)
                   if os.path.isfile(os.path.join(inputs, d, f"{d}.cu")))
    names += sorted(f"cpp/{f[:-3]}" for f in os.listdir(os.path.join(inputs, "cpp"))
                    if f.endswith(".cu"))
    if args.programs:
        names = [n for n in names if n in args.programs.split(",")]
    report = {"date": datetime.date.today().isoformat(), "device": device.name(),
              "arch": arch, "command": " ".join(sys.argv), "kernels": [], "programs": []}
    build_root = os.path.join("/tmp", "polycoal-bench")
    shutil.rmtree(build_root, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, "polybench_inputs"), build_root)
    for name in names:
        folder, stem = name.split("/") if "/" in name else (name, name)
        path = os.path.join(inputs, folder, f"{stem}.cu")
        program = read_program(path)
        start = time.perf_counter()
        options = TransformOptions(collapse_redundant=args.collapse_redundant_threads)
        result = transform_program(program, options)
        transform_seconds = time.perf_counter() - start
        changed = [d for d in result.decisions if d.action != "unchanged"]
        values = {**size_arguments(os.path.join(inputs, folder),
                                   f"{stem}.cu" if folder == "cpp" else ""),
                  **HOST_LOOP_ARGUMENTS.get(name, {})}
        for v in validate_device(program, result, options, values, args.repeat):
            d = next(x for x in result.decisions if x.kernel == v.kernel)
            entry = {"program": name, "kernel": v.kernel, "action": d.action, "ok": v.ok,
                     "message": v.message, "reason": d.reason}
            if v.original_ms is not None:
                entry.update({"original_ms": v.original_ms, "transformed_ms": v.transformed_ms,
                              "speedup": v.speedup, "bytes": v.bytes_moved,
                              "grid": v.grid, "block": v.block, "new_grid": v.new_grid,
                              "new_block": v.new_block, "arrays": v.arrays})
            report["kernels"].append(entry)
            print(json.dumps(entry), flush=True)
        if args.no_programs:
            continue
        workdir = os.path.join(build_root, folder)
        original = run_program(os.path.join(workdir, f"{stem}.cu"), workdir, workdir, arch,
                               f"{stem}.original")
        entry = {"program": name, "transform_seconds": transform_seconds,
                 "changed": [d.kernel for d in changed], "original": original,
                 # the program-level changes: host loops (passes/host_loops.py)
                 "host_loops": [x.message for x in result.diagnostics
                                if x.code in ("waits-moved", "trips-fused")]}
        if result.text != program.text:
            out = os.path.join(workdir, f"{stem}.polycoal.cu")
            with open(out, "w") as f:
                f.write(result.text)
            entry["transformed"] = run_program(out, workdir, workdir, arch,
                                               f"{stem}.transformed")
        report["programs"].append(entry)
        print(json.dumps(entry), flush=True)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(report, f, indent=2)
    bad = [k for k in report["kernels"] if not k["ok"]]
    bad += [p for p in report["programs"] for v in (p["original"], p.get("transformed"))
            if v is not None and (not v.get("built") or v.get("mismatches") != 0)]
    print(f"{len(report['kernels'])} kernels, {len(report['programs'])} programs, "
          f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
