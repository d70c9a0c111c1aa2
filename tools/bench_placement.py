#!/usr/bin/env python3
"""Data placement measured on the device: every legal placement of each fixture's
arrays against polycoal's choice (needs nvcc and a GPU).

    python tools/bench_placement.py --out DIR [--sizes 65536,1048576,4194304] [--steps 50]
        [--repeat 5] [--polybench atax,bicg,...] [--trace NAME=V,...] [-D NAME=V ...]
        [FIXTURE.cu ...]

Each fixture (default: testsuite/fixtures/placement/*.cu) prints a checksum on stdout
and "kernel ms per step: X" on stderr (CUDA events around its loop of launches, the
copies into constant memory included where a placement adds them). For each kernel, every
combination of its arrays' legal memories is written by polycoal's placement with the
choice forced (`place_program` overrides, as `polycoal place --place`), built with
`nvcc -O3 -arch=sm_90`, run `repeat` times per size (argv: size, steps: at least
`--steps`, and at least 2^24 elements' worth), the variants in turn, and timed by the
median (a variant whose program is another's, byte for byte, is that one's time); its checksum must equal the original's. polycoal's own output ("polycoal":
its choice, which may leave each launch to choose by its size) is timed beside them.
With --polybench, the named programs of polybench_inputs/ (their own sizes, no
arguments) are measured the same way by their "GPU Runtime" (the whole GPU part: copies
in and out, and the launches); their own check against the CPU reference must find no
mismatch. A program with more than MAX_COMBINATIONS placements tries each kernel's
placements with the other kernels' arrays in global memory, and a kernel with more than
that many, polycoal's choice and each change of one array's memory in it.
With --trace, polycoal prices its irregular reads by their traced addresses (as
`polycoal place --trace --arg NAME=V ...`), for its own choice and the variants' costs.
Results: one JSON line per fixture and size, and DIR/placement.json: each combination's
time, polycoal's choice (and its predicted costs), the best combination, and polycoal's
time over the best's.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)

from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
from polycoal.model.memory_spec import load_spec  # noqa: E402
from polycoal.placement import place_program, trace_reads  # noqa: E402


MAX_COMBINATIONS = 16     # beyond: each kernel alone, or one array at a time
_POLYBENCH_TIME = re.compile(r"GPU Runtime:\s*([0-9.eE+-]+)s")
_MISMATCH = re.compile(r"Non-Matching CPU-GPU Outputs Beyond Error Threshold of [0-9.]+ "
                       r"Percent: (\d+)")


def combinations(program, spec, preprocessor=None, traced=None):
    """(label, overrides) of every legal placement of every kernel's arrays (all the
    kernels' choices together; each kernel's alone, the others global, where there are
    more than MAX_COMBINATIONS), the all-global one first; and polycoal's choice."""
    chosen = place_program(program, spec, preprocessor=preprocessor, observed=traced)
    slots = [[(k.kernel, a.reads.array, o.memory) for o in a.options if o.cost is not None]
             for k in chosen.kernels for a in k.arrays]
    total = 1
    for slot in slots:
        total *= len(slot)
    if total <= MAX_COMBINATIONS:
        combos = list(itertools.product(*slots))
    else:
        combos = []
        picked = {(k.kernel, a.reads.array): a.chosen for k in chosen.kernels for a in k.arrays}
        for k in chosen.kernels:
            mine = [slot if slot[0][0] == k.kernel else [slot[0][:2] + ("global",)]
                    for slot in slots]
            count = 1
            for slot in mine:
                count *= len(slot)
            if count <= MAX_COMBINATIONS:
                tried = list(itertools.product(*mine))
            else:     # too many: polycoal's choice for it, and each one-array change of it
                base = tuple(slot[0][:2] + (picked[slot[0][:2]] if slot[0][0] == k.kernel
                                            else "global",) for slot in mine)
                tried = [base] + [base[:j] + (x,) + base[j + 1:] for j, slot in
                                  enumerate(mine) for x in slot if x != base[j]]
            combos += [c for c in tried if c not in combos]
    out = []
    for combo in combos:
        label = ",".join(f"{k}:{a}={m}" for k, a, m in combo if m != "global") or "global"
        out.append((label, {(k, a): m for k, a, m in combo}))
    out.sort(key=lambda c: c[0] != "global")
    choice = ",".join(f"{k.kernel}:{a.reads.array}={a.chosen}" for k in chosen.kernels
                      for a in k.arrays if a.chosen != "global") or "global"
    if any(k.sized for k in chosen.kernels):
        choice += " (each launch by its size)"
    return out, choice, chosen


def run(exe: str, size: int | None, steps: int) -> tuple[str, float]:
    """(what the program prints to check, its time in ms)."""
    argv = [exe] if size is None else [exe, str(size), str(steps)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True,
                       cwd=os.path.dirname(exe))
    if size is None:                  # a PolyBench program: its mismatches, its GPU time
        mismatches = _MISMATCH.search(r.stderr + r.stdout)
        return (mismatches.group(1) if mismatches else "?",
                1000 * float(_POLYBENCH_TIME.search(r.stderr + r.stdout).group(1)))
    ms = float(re.search(r"kernel ms per step: ([0-9.eE+-]+)", r.stderr).group(1))
    return r.stdout.strip(), ms


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="65536,1048576,4194304")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--polybench", default="", help="programs of polybench_inputs/, "
                    "comma-separated (instead of the fixtures)")
    ap.add_argument("--define", "-D", action="append", default=[], metavar="NAME=VALUE",
                    help="a macro for every program (PolyBench's sizes: -D NI=512)")
    ap.add_argument("--trace", default="", help="trace the irregular reads with these "
                    "sizes (NAME=V,...; as polycoal place --trace --arg)")
    ap.add_argument("fixtures", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    spec = load_spec()
    polybench = [p for p in args.polybench.split(",") if p]
    fixtures = [os.path.join(ROOT, "polybench_inputs", p, f"{p}.cu") for p in polybench] \
        or args.fixtures or sorted(glob.glob(os.path.join(
            ROOT, "testsuite", "fixtures", "placement", "*.cu")))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        builds = []
        for path in fixtures:
            folder = os.path.dirname(path)
            includes = (folder, os.path.join(ROOT, "polybench_inputs", "common"))
            options = PreprocessorOptions(includes if polybench else (),
                                          tuple(args.define), ())
            program = read_program(path, options)
            traced = None
            if args.trace:
                arguments = {k: int(v) for k, v in (x.split("=") for x in
                                                     args.trace.split(","))}
                traced = trace_reads(program, arguments)[0]
            combos, choice, chosen = combinations(program, spec, options, traced)
            name = os.path.splitext(os.path.basename(path))[0]
            variants = []
            combos = combos + [("polycoal", None)]       # its own output: as chosen
            texts: dict[str, str] = {}
            for n, (label, overrides) in enumerate(combos):
                text = program.text if label == "global" else \
                    place_program(program, spec, overrides or {}, options, traced).text
                if text in texts:               # the same program: timed once
                    variants.append((label, texts[text]))
                    continue
                texts[text] = os.path.join(tmp, f"{name}_{n}")
                src = os.path.join(tmp, f"{name}_{n}.cu")
                with open(src, "w") as f:
                    f.write(text)
                variants.append((label, src[:-3]))
                builds.append(["nvcc", "-O3", "-arch=sm_90", "-w", src, "-o", src[:-3]] +
                              [f"-I{d}" for d in options.include_dirs] +
                              [f"-D{d}" for d in args.define])
            predicted = {f"{k.kernel}:{a.reads.array}": {o.memory: o.cost for o in a.options}
                         for k in chosen.kernels for a in k.arrays}
            results.append({"fixture": name, "choice": choice, "variants": variants,
                            "predicted": predicted,
                            "reasons": {k.kernel: k.reason for k in chosen.kernels}})
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
            for r in pool.map(lambda c: subprocess.run(c, capture_output=True, text=True),
                              builds):
                if r.returncode:
                    print(r.stderr[-2000:], file=sys.stderr)
                    return 1
        report = []
        for entry in results:
            for size in ([None] if polybench else (int(s) for s in args.sizes.split(","))):
                # at least 2^24 elements' worth of launches per run: small sizes are
                # launch-bound, and their times noisy
                steps = max(args.steps, (1 << 24) // size) if size else 1
                times, sums = {}, {}
                for _ in range(args.repeat):            # interleaved: drift hits all alike
                    measured = {}
                    for label, exe in entry["variants"]:
                        if exe not in measured:
                            measured[exe] = run(exe, size, steps)
                        out, ms = measured[exe]
                        times.setdefault(label, []).append(ms)
                        sums[label] = out
                medians = {k: statistics.median(v) for k, v in times.items()}
                best = min((k for k in medians if k != "polycoal"), key=medians.get)
                reference = sums["global"]
                if size is None and reference != "0":
                    print(f"{entry['fixture']}: the original finds {reference} mismatches",
                          file=sys.stderr)
                line = {"fixture": entry["fixture"], "size": size, "steps": steps,
                        "ms_per_step": medians, "best": best, "choice": entry["choice"],
                        "choice_over_best": medians["polycoal"] / medians[best],
                        "outputs_equal": {k: _close(v, reference) for k, v in sums.items()},
                        "predicted": entry["predicted"], "reasons": entry["reasons"]}
                print(json.dumps(line), flush=True)
                report.append(line)
    with open(os.path.join(args.out, "placement.json"), "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "steps": args.steps,
                   "repeat": args.repeat, "results": report}, f, indent=1)
    return 0


def _close(a: str, b: str) -> bool:
    try:
        x, y = [float(v) for v in a.split()], [float(v) for v in b.split()]
    except ValueError:
        return a == b
    return len(x) == len(y) and all(abs(p - q) <= 1e-5 * max(abs(q), 1.0) for p, q in zip(x, y))


if __name__ == "__main__":
    sys.exit(main())
