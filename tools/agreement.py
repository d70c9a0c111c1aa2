#!/usr/bin/env python3
"""Agreement of the static analysis, the trace and (on the GPU) the hardware counters,
for every kernel of polybench_inputs/ at small sizes.

    python tools/agreement.py [--device] [--hardware] [--out DIR] [--programs a,b]
                              [--jobs N] [--machine NAME] [--benchmarks]

Per program (its size macros and host-loop arguments from SIZES): the static analysis
and `polycoal trace` (the CPU by default, --device on the GPU through pycuda), in
parallel processes; every reference classified by both (coalesced / broadcast /
uncoalesced, report/trace.py). With --hardware, every original kernel then runs once
under Nsight Compute (one ncu process for all programs, dynamic/hardware.py) and its
global load and store sectors per request are set beside the trace's, aggregated the
same way over the requests the compiled code issues.

Writes DIR/agreement.json and DIR/agreement.md (default DIR: docs/results); with
--benchmarks also the agreement section of BENCHMARKS.md (tools/render_benchmarks.py
--agreement FILE does the same from a results file). Exit status 0, or 1 when a kernel
could not be traced or a disagreement has no explanation in EXPLANATIONS.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

POLYBENCH = os.path.join(ROOT, "polybench_inputs")
MAX_RECORDS = 8_000_000          # a 64x64 2-D kernel's whole launch (16 blocks of 32x8)
_2D = ("NI", "NJ", "NK", "NL", "NM")
# program -> (size macros, values of int arguments a host loop varies): every kernel
# traced whole or nearly (the row/column loops of 64 fit the 256 recorded executions)
SIZES: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "2dconv": ({"NI": 64, "NJ": 64}, {}),
    "2mm": (dict.fromkeys(_2D[:4], 64), {}),
    "3dconv": ({"NI": 16, "NJ": 64, "NK": 64}, {"i": 1}),
    "3mm": (dict.fromkeys(_2D, 64), {}),
    "adi": ({"N": 64, "TSTEPS": 1}, {"i1": 1}),
    "atax": ({"NX": 64, "NY": 64}, {}),
    "bicg": ({"NX": 64, "NY": 64}, {}),
    "correlation": ({"M": 32, "N": 8}, {}),     # whole loops within 256 executions
    "covariance": ({"M": 32, "N": 8}, {}),      # per reference and thread (the cap)
    "fdtd2d": ({"NX": 64, "NY": 64, "TMAX": 2}, {"t": 1}),
    "gemm": (dict.fromkeys(_2D[:3], 64), {}),
    "gemver": ({"N": 64}, {}),
    "gesummv": ({"N": 64}, {}),
    "gramschmidt": ({"M": 64, "N": 64}, {"k": 7}),
    "jacobi1d": ({"N": 256, "TSTEPS": 2}, {}),
    "jacobi2d": ({"N": 64, "TSTEPS": 2}, {}),
    "lu": ({"N": 64}, {"k": 7}),
    "mvt": ({"N": 64}, {}),
    "syr2k": ({"NI": 64, "NJ": 64}, {}),
    "syrk": ({"NI": 64, "NJ": 64}, {}),
}
# (program, kernel, reference text, type) -> why static analysis and trace differ there
EXPLANATIONS: dict[tuple[str, str, str, str], str] = {}


def programs() -> list[str]:
    return sorted(d for d in os.listdir(POLYBENCH)
                  if os.path.isfile(os.path.join(POLYBENCH, d, f"{d}.cu")))


def job(name: str) -> dict:
    """The program as dynamic/hardware.py's runner and this tool's trace take it."""
    defines, arguments = SIZES.get(name, ({}, {}))
    return {"path": os.path.join(POLYBENCH, name, f"{name}.cu"),
            "defines": [f"{k}={v}" for k, v in defines.items()], "undefines": [],
            "include_dirs": [], "arguments": arguments, "seed": 1, "kernels": None}


def trace_one(name: str, executor: str) -> dict:
    """Static analysis and trace of one program: the trace report's kernels, each with
    the trace's load/store sectors per request as issued and over all requests."""
    from polycoal.diagnostics import InputError
    from polycoal.dynamic.collect import trace_program
    from polycoal.dynamic.hardware import compare
    from polycoal.dynamic.originals import read_job_program
    from polycoal.report import trace
    spec = job(name)
    start = time.perf_counter()
    try:
        program, kernels = read_job_program(spec)
    except InputError as e:
        return {"program": name, "error": str(e), "kernels": []}
    summary = trace.summarise(trace_program(kernels, program, spec["arguments"], executor,
                                            MAX_RECORDS))
    doc = trace.render_json(spec["path"], summary)
    for k, (t, _) in zip(doc["kernels"], summary):
        if not t.error:
            k["figures"] = {c.kind: {"trace": c.trace.per_request,
                                     "trace_all": c.trace_all.per_request}
                            for c in compare(t.sites, t.records, None)}
    return {"program": name, "error": None, "kernels": doc["kernels"],
            "seconds": time.perf_counter() - start}


def classify(program: str, kernel: dict) -> dict:
    """One row of the agreement table: the kernel's references, static against trace."""
    refs = kernel.get("references", [])
    disagreements, unclassified = [], []
    for r in refs:
        static = (r["static"] or {}).get("verdict")
        if static is None:
            unclassified.append(f"{r['text']} ({r['type']})")
        elif static != r["verdict"]:
            why = EXPLANATIONS.get((program, kernel["name"], r["text"], r["type"]))
            disagreements.append({"reference": r["text"], "type": r["type"],
                                  "line": r["location"]["line"], "static": static,
                                  "trace": r["verdict"], "explanation": why})
    return {"program": program, "kernel": kernel["name"], "error": kernel["error"],
            "sampling": (kernel.get("sampling") or {}).get("text"),
            "references": len(refs),
            "agree": len(refs) - len(disagreements) - len(unclassified),
            "disagreements": disagreements, "unclassified": unclassified,
            "figures": kernel.get("figures")}


def add_hardware(rows: list[dict], hardware) -> None:
    """Each row's hardware sectors per request and whether they agree with the trace's."""
    from polycoal.dynamic.hardware import agrees
    for row in rows:
        m = hardware.of(row["kernel"], job(row["program"])["path"])
        problem = hardware.problem(m)
        if problem:
            row["hardware"] = {"error": problem}
            continue
        row["hardware"] = {"error": None, "grid": m.grid, "block": m.block}
        for kind, c in m.counters.items():
            trace = (row["figures"] or {}).get(kind, {}).get("trace")
            row["hardware"][kind] = {"sectors": c.sectors, "requests": c.requests,
                                     "sectors_per_request": c.per_request,
                                     "agrees": agrees(trace, c.per_request)}


def run(names: list[str], executor: str, hardware: bool, jobs: int, machine: str) -> dict:
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")     # no CUDA state crosses a fork
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        traced = list(pool.map(trace_one, names, [executor] * len(names)))
    rows = [classify(p["program"], k) for p in traced for k in p["kernels"]]
    report = {"date": datetime.date.today().isoformat(), "executor": executor,
              "machine": machine, "command": shlex.join(["tools/agreement.py",
                                                                *sys.argv[1:]]),
              "programs": {p["program"]: {"error": p["error"], "defines": job(p["program"])
                                          ["defines"], "arguments": job(p["program"])
                                          ["arguments"]} for p in traced},
              "hardware": None, "rows": rows}
    if hardware:
        from polycoal.dynamic.hardware import measure
        hw = measure([job(n) for n in names])
        report["hardware"] = {"tool": hw.tool, "error": hw.error}
        add_hardware(rows, hw)
    report["seconds"] = time.perf_counter() - start
    return report


def failures(report: dict) -> list[str]:
    out = [f"{r['program']} {r['kernel']}: not traced: {r['error']}"
           for r in report["rows"] if r["error"]]
    out += [f"{r['program']} {r['kernel']}: {d['reference']} ({d['type']}): static "
            f"{d['static']}, trace {d['trace']}, unexplained"
            for r in report["rows"] for d in r["disagreements"] if not d["explanation"]]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", action="store_true", help="trace on the GPU (pycuda)")
    parser.add_argument("--hardware", action="store_true",
                        help="also read Nsight Compute's counters of the original kernels")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "results"))
    parser.add_argument("--programs", help="comma-separated subset (default: all)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="programs traced at once (default: CPUs, 8 with --device)")
    parser.add_argument("--machine", default=platform.node(),
                        help="the machine's name in the report (default: the host name)")
    parser.add_argument("--benchmarks", action="store_true",
                        help="write the agreement section of BENCHMARKS.md")
    args = parser.parse_args()
    from render_benchmarks import agreement_section, write_sections
    names = args.programs.split(",") if args.programs else programs()
    jobs = args.jobs or (8 if args.device else min(len(names), os.cpu_count() or 1))
    report = run(names, "device" if args.device else "cpu", args.hardware, jobs, args.machine)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "agreement.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = agreement_section(report)
    with open(os.path.join(args.out, "agreement.md"), "w") as f:
        f.write(text)
    if args.benchmarks:
        write_sections(agreement=text)
    print(text)
    problems = failures(report)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"{len(report['rows'])} kernels in {report['seconds']:.0f} s", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
