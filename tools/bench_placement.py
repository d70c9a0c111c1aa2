#!/usr/bin/env python3
"""Data placement measured on the device: every legal placement of each fixture's
arrays against polycoal's choice (needs nvcc and a GPU).

    python tools/bench_placement.py --out DIR [--sizes 65536,1048576,4194304] [--steps 50]
        [--repeat 5] [FIXTURE.cu ...]

Each fixture (default: testsuite/fixtures/placement/*.cu) prints a checksum on stdout
and "kernel ms per step: X" on stderr (CUDA events around its loop of launches, the
copies into constant memory included where a placement adds them). For each kernel, every
combination of its arrays' legal memories is written by polycoal's placement with the
choice forced (`place_program` overrides, as `polycoal place --place`), built with
`nvcc -O3 -arch=sm_90`, run `repeat` times per size (argv: size, steps: at least
`--steps`, and at least 2^24 elements' worth), the variants in turn, and timed by the
median (a variant whose program is another's, byte for byte, is that one's time); its checksum must equal the original's. polycoal's own output ("polycoal":
its choice, which may leave each launch to choose by its size) is timed beside them.
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
from polycoal.model.memory_spec import load_spec  # noqa: E402
from polycoal.placement import place_program  # noqa: E402


def combinations(program, spec):
    """(label, overrides) of every legal placement of every kernel's arrays (all the
    kernels' choices together), the all-global one first; and polycoal's choice."""
    chosen = place_program(program, spec)
    slots = [[(k.kernel, a.reads.array, o.memory) for o in a.options if o.cost is not None]
             for k in chosen.kernels for a in k.arrays]
    out = []
    for combo in itertools.product(*slots):
        label = ",".join(f"{k}:{a}={m}" for k, a, m in combo if m != "global") or "global"
        out.append((label, {(k, a): m for k, a, m in combo}))
    out.sort(key=lambda c: c[0] != "global")
    choice = ",".join(f"{k.kernel}:{a.reads.array}={a.chosen}" for k in chosen.kernels
                      for a in k.arrays if a.chosen != "global") or "global"
    if any(k.sized for k in chosen.kernels):
        choice += " (each launch by its size)"
    return out, choice, chosen


def run(exe: str, size: int, steps: int) -> tuple[str, float]:
    r = subprocess.run([exe, str(size), str(steps)], capture_output=True, text=True,
                       timeout=120, check=True)
    ms = float(re.search(r"kernel ms per step: ([0-9.eE+-]+)", r.stderr).group(1))
    return r.stdout.strip(), ms


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="65536,1048576,4194304")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("fixtures", nargs="*")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    spec = load_spec()
    fixtures = args.fixtures or sorted(glob.glob(os.path.join(
        ROOT, "testsuite", "fixtures", "placement", "*.cu")))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        builds = []
        for path in fixtures:
            program = read_program(path)
            combos, choice, chosen = combinations(program, spec)
            name = os.path.splitext(os.path.basename(path))[0]
            variants = []
            combos = combos + [("polycoal", None)]       # its own output: as chosen
            texts: dict[str, str] = {}
            for n, (label, overrides) in enumerate(combos):
                text = program.text if label == "global" else \
                    place_program(program, spec, overrides or {}).text
                if text in texts:               # the same program: timed once
                    variants.append((label, texts[text]))
                    continue
                texts[text] = os.path.join(tmp, f"{name}_{n}")
                src = os.path.join(tmp, f"{name}_{n}.cu")
                with open(src, "w") as f:
                    f.write(text)
                variants.append((label, src[:-3]))
                builds.append(["nvcc", "-O3", "-arch=sm_90", "-w", src, "-o", src[:-3]])
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
            for size in (int(s) for s in args.sizes.split(",")):
                # at least 2^24 elements' worth of launches per run: small sizes are
                # launch-bound, and their times noisy
                steps = max(args.steps, (1 << 24) // size)
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
    x, y = [float(v) for v in a.split()], [float(v) for v in b.split()]
    return len(x) == len(y) and all(abs(p - q) <= 1e-5 * max(abs(q), 1.0) for p, q in zip(x, y))


if __name__ == "__main__":
    sys.exit(main())
