#!/usr/bin/env python3
"""Benchmark complete programs of the corpus on the device (needs nvcc and pycuda).

    python tools/bench_programs.py --out DIR PROGRAM.cu[:ARGV,...] ... [--arg NAME=VALUE]
                                   [--repeat 10] [--runs 5] [--unpriced]

For each program:
1. Kernels: the program is transformed; each kernel polycoal changed is validated and
   timed on the GPU against its original (polycoal.validate.device: fresh random inputs,
   every array compared, CUDA events after a warm-up, the median of `--repeat`), with
   the int kernel arguments given by `--arg` (else the program's `// validate:` line).
   With `--unpriced`, the permutations the whole-block price (analysis/warp_cost.py)
   refused are made anyway and timed too: what the price prevented.
2. Whole program: the original and the output are built with `nvcc -O3` for the
   device and run `--runs` times with the command-line arguments after the colon
   (comma-separated); each run's `GPU Runtime: S s` line (the program's own CUDA-event
   timing, on stdout or stderr) is kept and the median reported; the numbers the two
   print on stdout must agree.
Results go to DIR/programs.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from bench_polybench import _GPU_TIME  # noqa: E402
from corpus_report import alike, arguments, numbers  # noqa: E402
from polycoal.decisions import TransformOptions  # noqa: E402
from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
from polycoal.transform import transform_program  # noqa: E402
from polycoal.validate.device import load_pycuda, validate_device  # noqa: E402



def build(source: str, include: str, exe: str, arch: str, defines=()) -> str | None:
    r = subprocess.run(["nvcc", "-O3", f"-arch={arch}", "-w", source, "-o", exe,
                        f"-I{include}", *[f"-D{d}" for d in defines], "-lm"],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else r.stderr[-2000:]


def run_times(exe: str, argv: list[str], runs: int) -> dict:
    times, printed = [], None
    for _ in range(runs):
        p = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            return {"status": p.returncode, "stderr": p.stderr[-1000:]}
        m = _GPU_TIME.search(p.stdout + p.stderr)
        if m:
            times.append(float(m.group(1)))
        printed = numbers(_GPU_TIME.sub("", p.stdout))
    return {"status": 0, "gpu_seconds": statistics.median(times) if times else None,
            "runs": times, "numbers": printed}


def kernels(program, options, values, repeat):
    """(the transform's result, each changed kernel's verdict on the device)."""
    result = transform_program(program, options)
    out = []
    for v in validate_device(program, result, options, values, repeat):
        d = next(x for x in result.decisions if x.kernel == v.kernel)
        out.append({"kernel": v.kernel, "action": d.action, "ok": v.ok, "slower": v.slower,
                    "message": v.message, "original_ms": v.original_ms,
                    "transformed_ms": v.transformed_ms, "speedup": v.speedup,
                    "grid": v.grid, "block": v.block, "new_grid": v.new_grid,
                    "new_block": v.new_block})
        print(json.dumps(out[-1]), flush=True)
    return result, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--arg", action="append", default=[])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--unpriced", action="store_true")
    ap.add_argument("-D", dest="defines", action="append", default=[],
                    help="define a macro (NAME=VALUE) for the transform and both builds")
    args = ap.parse_args()
    driver, _ = load_pycuda()
    device = driver.Device(0)
    arch = "sm_%d%d" % device.compute_capability()
    given = {n: int(v) for n, v in (a.split("=", 1) for a in args.arg)}
    report = {"date": datetime.date.today().isoformat(), "device": device.name(),
              "command": " ".join(sys.argv), "programs": []}
    problems = 0
    for spec in args.programs:
        path, _, argv = spec.partition(":")
        argv = [a for a in argv.split(",") if a]
        text = open(path).read()
        preprocessor = PreprocessorOptions(include_dirs=(os.path.dirname(os.path.abspath(path)),),
                                           defines=tuple(args.defines))
        program = read_program(path, preprocessor)
        values = {**arguments(text), **given}
        options = TransformOptions(preprocessor=preprocessor)
        result, verdicts = kernels(program, options, values, args.repeat)
        entry = {"program": path, "argv": argv, "defines": args.defines, "values": values,
                 "kernels": verdicts}
        if args.unpriced:
            _, forced = kernels(program, TransformOptions(preprocessor=preprocessor,
                                                          price_on_chip=False),
                                values, args.repeat)
            actions = {x["kernel"]: x["action"] for x in verdicts}
            entry["unpriced"] = [k for k in forced if k["action"] != actions.get(k["kernel"])]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, os.path.basename(path))
            with open(out, "w") as f:
                f.write(result.text)
            include = os.path.dirname(os.path.abspath(path))
            for name, source in (("original", path), ("output", out)):
                exe = os.path.join(tmp, name)
                error = build(source, include, exe, arch, args.defines)
                entry[name] = {"built": False, "error": error} if error else \
                    run_times(exe, argv, args.runs)
        o, n = entry["original"], entry["output"]
        entry["alike"] = bool(o.get("numbers") is not None and
                              alike(o.get("numbers") or [], n.get("numbers") or []))
        if o.get("gpu_seconds") and n.get("gpu_seconds"):
            entry["speedup"] = o["gpu_seconds"] / n["gpu_seconds"]
        problems += (not entry["alike"]) + sum(not k["ok"] for k in entry["kernels"])
        print(json.dumps({k: v for k, v in entry.items() if k != "kernels"}), flush=True)
        report["programs"].append(entry)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "programs.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(f"{len(report['programs'])} programs, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
