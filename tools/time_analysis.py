#!/usr/bin/env python3
"""Time `polycoal analyze` over every program of polybench_inputs/ (in one process).

Usage: python tools/time_analysis.py [--repeat 3] [-D NAME=VALUE ...]
Prints one line per program (kernels, seconds: the median of the repeats) and the total;
the figure for BENCHMARKS.md. Each program is preprocessed, parsed, modelled, and analysed
(dependences, races, coalescing, counts) exactly as the command does.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from polycoal.analysis import analyze_program  # noqa: E402
from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
from polycoal.report import json_report  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-D", dest="defines", action="append", default=[])
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "polybench_inputs")
    programs = sorted(glob.glob(os.path.join(root, "*", "*.cu")))
    options = PreprocessorOptions(defines=tuple(args.defines))
    total = 0.0
    kernels = 0
    for path in programs:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            pa = analyze_program(read_program(path, options))
            json_report.render(pa)
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        total += t
        kernels += len(pa.kernels)
        slowest = max(t for t in times)
        print(f"{os.path.basename(path):18s} {len(pa.kernels):2d} kernels  {t:6.3f} s "
              f"(max {slowest:.3f})")
    print(f"{'total':18s} {kernels:2d} kernels  {total:6.3f} s  ({len(programs)} programs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
