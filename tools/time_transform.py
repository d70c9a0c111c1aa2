#!/usr/bin/env python3
"""Time `polycoal transform` over every program of polybench_inputs/ (in one process).

Usage: python tools/time_transform.py [--repeat 3]
Per program: kernels, the median seconds of the whole transformation (preprocessing,
analysis, ILPs, isl code generation, launch rewriting, re-reading the output and
translation validation), and the slowest single kernel (plan + generation). The figures
for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from polycoal.frontend import read_program  # noqa: E402
from polycoal.transform import TransformOptions, plan_kernel, transform_program  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "polybench_inputs")
    programs = sorted(glob.glob(os.path.join(root, "*", "*.cu")))
    total, kernels, slowest = 0.0, 0, (0.0, "")
    for path in programs:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            program = read_program(path)
            result = transform_program(program, TransformOptions())
            times.append(time.perf_counter() - start)
        for k in program.kernels:
            start = time.perf_counter()
            plan_kernel(program, k, TransformOptions())
            t = time.perf_counter() - start
            slowest = max(slowest, (t, k.name))
        t = statistics.median(times)
        total += t
        kernels += len(program.kernels)
        changed = [d.kernel for d in result.decisions if d.action != "unchanged"]
        print(f"{os.path.basename(path):18s} {len(program.kernels):2d} kernels  {t:6.3f} s"
              f"  {'transformed: ' + ', '.join(changed) if changed else ''}")
    print(f"{'total':18s} {kernels:2d} kernels  {total:6.3f} s  ({len(programs)} programs)")
    print(f"slowest kernel plan+generation: {slowest[1]} {slowest[0]:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
