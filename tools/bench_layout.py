#!/usr/bin/env python3
"""Layout changes of arrays of structs measured on the device (needs nvcc, pycuda).

    python tools/bench_layout.py --out DIR [--repeat 20] [--steps S] [--ncu]
        [--layout auto|soa|grouped] nbody[:N] particles[:N] mixed[:N] mixedgain[:N]

Each named case is a fixture of testsuite/fixtures/layout with its launch sequence per
time step (CASES). The fixture is transformed; the original's kernels and the output's
kernels (and the layout runtime's conversion kernels) are compiled with nvcc -O3 for
sm_90 to PTX and loaded with pycuda. Then:
- validation: the same random elements uploaded to both; STEPS time steps of each; the
  output's array converted back (its unpack kernel), downloaded and compared to the
  original's field by field (relative 1e-5);
- timing: each kernel on its own, CUDA events after a warm-up, the median of `--repeat`
  launches; conversions (pack: host layout -> device layout, unpack: back) likewise;
- whole program on the GPU: STEPS x the step's launches (each kernel as often as the
  fixture launches it), plus the two conversions for the output; the speedup;
- bandwidth: the bytes of the fields each kernel reads and writes per element, over its
  time, against a device-to-device copy of 1 GiB (same call): the copy ceiling;
- with --ncu: each kernel once more under Nsight Compute, global load and store sectors
  per request (l1tex__t_sectors / l1tex__t_requests, pipe lsu, global).
Results: one JSON line per case and DIR/layout-<layout>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)

from polycoal.decisions import TransformOptions  # noqa: E402
from polycoal.frontend import read_program  # noqa: E402
from polycoal.frontend.preprocess import PreprocessorOptions  # noqa: E402
from polycoal.transform import transform_program  # noqa: E402

FIXTURES = os.path.join(ROOT, "testsuite", "fixtures", "layout")
# case -> (fixture, default elements, block, steps, [(kernel, [argument], launches)]): the
# launch sequence of one time step; an argument: "A" the array of structs, "n" the
# element count as int, "f:V" a float, "i:V" an int, "out" a float array of n elements,
# "idx" an int array of n indices into the array (i * 2654435761 mod n, as the fixture)
CASES = {
    "nbody": ("nbody_aos.cu", 65536, 256, 10,
              [("body_force", ["A", "f:0.01", "n"], 1),
               ("integrate_position", ["A", "f:0.01", "n"], 1)]),
    "particles": ("particles_aos.cu", 1 << 24, 128, 10,
                  [("equation_of_state", ["A", "n", "f:3.0", "f:1000.0"], 1),
                   ("leapfrog", ["A", "n", "f:0.001"], 1)]),
    "mixed": ("mixed_layout.cu", 1 << 24, 128, 1,
              [("gain", ["A", "n", "f:0.9"], 1), ("gather", ["A", "idx", "out", "n"], 10)]),
    "mixedgain": ("mixed_layout.cu", 1 << 24, 128, 1,
                  [("gain", ["A", "n", "f:0.9"], 100), ("gather", ["A", "idx", "out", "n"], 1)]),
}
# the fixture's text as each case launches it (its host loops' trip counts)
TEXT_EDITS = {"mixedgain": (("k < 1; k++", "k < 100; k++"), ("g < 10; g++", "g < 1; g++"))}
NCU_METRICS = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
               "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,"
               "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,"
               "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,gpu__time_duration.sum")


def ptx(source: str, tmp: str, name: str, defines=()) -> str:
    path = os.path.join(tmp, name + ".cu")
    with open(path, "w") as f:
        f.write(source)
    out = os.path.join(tmp, name + ".ptx")
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-w", "-ptx", path, "-o", out,
                    f"-I{FIXTURES}", *[f"-D{d}" for d in defines]], check=True,
                   capture_output=True, text=True)
    return open(out).read()


def entries(ptx_text: str) -> dict[str, str]:
    """Kernel name -> mangled entry name."""
    out = {}
    for mangled in re.findall(r"\.entry\s+(\w+)\s*\(", ptx_text):
        m = re.match(r"_Z(\d+)(\w+)", mangled)
        name = m.group(2)[:int(m.group(1))] if m else mangled
        out[name] = mangled
    return out


def host_elements(np, struct, n: int, seed: int = 3):
    """n elements of the struct as bytes, every field random in [0.5, 1.5) (floats) or
    [1, 8) (integers)."""
    rng = np.random.default_rng(seed)
    raw = np.zeros((n, struct.size), dtype=np.uint8)
    for leaf in struct.leaves():
        if leaf.type in ("float", "double"):
            dt = np.float32 if leaf.type == "float" else np.float64
            values = rng.uniform(0.5, 1.5, n).astype(dt)
        else:
            values = rng.integers(1, 8, n).astype(np.int32 if leaf.size == 4 else np.int64)
        raw[:, leaf.offset:leaf.offset + leaf.size] = values.view(np.uint8).reshape(n, -1)
    return raw


def fields(np, struct, raw):
    out = {}
    for leaf in struct.leaves():
        dt = {4: np.float32, 8: np.float64}[leaf.size] if leaf.type in ("float", "double") \
            else np.int32
        out[leaf.path] = np.ascontiguousarray(raw[:, leaf.offset:leaf.offset + leaf.size]
                                              ).view(dt).ravel()
    return out


class Timer:
    """Median over `repeat` samples of the time per launch, each sample BATCH launches
    back to back between two events (so that pycuda's launch overhead overlaps the
    kernels instead of adding idle time), after a warm-up."""

    BATCH = 10

    def __init__(self, driver, repeat: int):
        self.driver, self.repeat = driver, repeat

    def __call__(self, launch) -> float:
        d = self.driver
        for _ in range(3):
            launch()
        d.Context.synchronize()
        times = []
        for _ in range(self.repeat):
            start, end = d.Event(), d.Event()
            start.record()
            for _ in range(self.BATCH):
                launch()
            end.record()
            end.synchronize()
            times.append(start.time_till(end) / self.BATCH)
        return statistics.median(times)


def run_case(case: str, n: int, steps: int, repeat: int, once: bool,
             edits: tuple[tuple[str, str], ...] = (),
             original_edits: tuple[tuple[str, str], ...] = (), layout: str = "auto") -> dict:
    import numpy as np
    import pycuda.driver as driver
    fixture, _, block, case_steps, sequence = CASES[case]
    steps = case_steps if steps is None else steps
    path = os.path.join(FIXTURES, fixture)
    defines = ()
    preprocessor = PreprocessorOptions(defines=defines)
    source = open(path).read()
    for old, new in TEXT_EDITS.get(case, ()):
        source = source.replace(old, new)
    program = read_program(path, preprocessor, text=source)
    result = transform_program(program, TransformOptions(layout=layout,
                                                         preprocessor=preprocessor))
    plan = next((d.layout for d in result.decisions if d.action == "layout"), None)
    if plan is None:
        return {"case": case, "error": "no layout change",
                "diagnostics": [str(x) for x in result.diagnostics]}
    struct, layout = plan.struct, plan.layout
    text = result.text
    for pattern, replacement in edits:          # experiments on the output (--edit)
        text = re.sub(pattern, replacement, text)
    old_text = program.text
    for pattern, replacement in original_edits:
        old_text = re.sub(pattern, replacement, old_text)
    with tempfile.TemporaryDirectory() as tmp:
        old_ptx = ptx(old_text, tmp, "original", defines)
        new_ptx = ptx(text, tmp, "output", defines)
    old_mod, new_mod = driver.module_from_buffer(old_ptx.encode()), \
        driver.module_from_buffer(new_ptx.encode())
    old_fn = {k: old_mod.get_function(v) for k, v in entries(old_ptx).items()}
    new_fn = {k: new_mod.get_function(v) for k, v in entries(new_ptx).items()}
    prefix = "polycoal_" + re.sub(r"\W", "_", struct.name)
    raw = host_elements(np, struct, n)
    aos = driver.mem_alloc(n * struct.size)
    aos2 = driver.mem_alloc(n * struct.size)
    new = driver.mem_alloc(n * layout.element_bytes)
    out_old = driver.mem_alloc(n * 4)
    out_new = driver.mem_alloc(n * 4)
    driver.memset_d32(out_old, 0, n)
    driver.memset_d32(out_new, 0, n)
    idx = driver.to_device((np.arange(n, dtype=np.uint64) * 2654435761 % n).astype(np.int32))
    segments = [np.uintp(int(new) + layout.segment_bytes(k) * n)
                for k in range(len(layout.groups))]
    grid = ((n + block - 1) // block, 1)
    blk = (block, 1, 1)

    def args(spec, new_layout):
        out = []
        for a in spec:
            if a == "A":
                out += segments if new_layout else [aos]
            elif a == "n":
                out.append(np.int32(n))
            elif a == "out":
                out.append(out_new if new_layout else out_old)
            elif a == "idx":
                out.append(idx)
            elif a.startswith("f:"):
                out.append(np.float32(float(a[2:])))
            else:
                out.append(np.int32(int(a[2:])))
        return out

    conv_grid = (min(65535, (n + 255) // 256), 1)

    def pack():
        new_fn[prefix + "_pack"](aos2, new, np.uint64(n), np.uint64(n), block=(256, 1, 1),
                                 grid=conv_grid)

    def unpack():
        new_fn[prefix + "_unpack"](new, np.uint64(n), aos2, np.uint64(n), block=(256, 1, 1),
                                   grid=conv_grid)

    def step(new_layout):
        fns = new_fn if new_layout else old_fn
        for kernel, spec, launches in sequence:
            for _ in range(launches):
                fns[kernel](*args(spec, new_layout), block=blk, grid=grid)

    # validation: same elements, STEPS steps each, the output converted back
    driver.memcpy_htod(aos, raw)
    driver.memcpy_htod(aos2, raw)
    pack()
    for _ in range(steps if not once else 1):
        step(False)
        step(True)
    unpack()
    driver.Context.synchronize()
    got_old = np.empty_like(raw)
    got_new = np.empty_like(raw)
    driver.memcpy_dtoh(got_old, aos)
    driver.memcpy_dtoh(got_new, aos2)
    a, b = fields(np, struct, got_old), fields(np, struct, got_new)
    worst = 0.0
    for leaf in a:
        x, y = a[leaf].astype(np.float64), b[leaf].astype(np.float64)
        worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1.0))))
    if any("out" in spec for _, spec, _ in sequence):
        o_old, o_new = np.empty(n, np.float32), np.empty(n, np.float32)
        driver.memcpy_dtoh(o_old, out_old)
        driver.memcpy_dtoh(o_new, out_new)
        x, y = o_old.astype(np.float64), o_new.astype(np.float64)
        worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1.0))))
    row = {"case": case, "fixture": fixture, "elements": n, "steps": steps,
           "layout": layout.describe(), "bytes_per_element": [struct.size,
                                                              layout.element_bytes],
           "max_relative_error": worst, "outputs_match": worst <= 1e-5}
    if once:
        return row
    timer = Timer(driver, repeat)
    kernels = {}
    for kernel, spec, launches in sequence:
        t_old = timer(lambda: old_fn[kernel](*args(spec, False), block=blk, grid=grid))
        t_new = timer(lambda: new_fn[kernel](*args(spec, True), block=blk, grid=grid))
        read = {u.leaves for u in plan.uses if u.kernel == kernel and u.kind == "read"}
        written = {u.leaves for u in plan.uses if u.kernel == kernel and u.kind == "write"}
        size = {leaf.path: leaf.size for leaf in struct.leaves()}
        useful = n * (sum(size[p] for s in read for p in s) +
                      sum(size[p] for s in written for p in s))
        kernels[kernel] = {"original_ms": t_old, "layout_ms": t_new, "launches": launches,
                           "speedup": t_old / t_new, "useful_bytes": useful,
                           "original_GBps": useful / t_old / 1e6,
                           "layout_GBps": useful / t_new / 1e6}
    t_pack = timer(pack)
    t_unpack = timer(unpack)
    per_step_old = sum(k["launches"] * k["original_ms"] for k in kernels.values())
    per_step_new = sum(k["launches"] * k["layout_ms"] for k in kernels.values())
    whole_old = steps * per_step_old
    whole_new = steps * per_step_new + t_pack + t_unpack
    copy_bytes = 1 << 30
    src, dst = driver.mem_alloc(copy_bytes), driver.mem_alloc(copy_bytes)
    copy_ms = timer(lambda: driver.memcpy_dtod(dst, src, copy_bytes))
    copy_gbps = 2 * copy_bytes / copy_ms / 1e6
    src.free()
    dst.free()
    for k in kernels.values():
        k["fraction_of_copy"] = k["layout_GBps"] / copy_gbps
    row.update({"kernels": kernels, "pack_ms": t_pack, "unpack_ms": t_unpack,
                "step_ms": [per_step_old, per_step_new],
                "whole_program_ms": [whole_old, whole_new],
                "whole_program_speedup": whole_old / whole_new,
                "copy_GBps": copy_gbps})
    return row


def ncu(case: str, n: int, layout: str = "auto") -> dict:
    """Sectors per request of each kernel of one step (original and output), from
    Nsight Compute run over this script with --once."""
    cmd = ["ncu", "--csv", "--metrics", NCU_METRICS, sys.executable, os.path.abspath(__file__),
           "--once", "--out", "/tmp", "--layout", layout, f"{case}:{n}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    rows: dict[str, dict] = {}
    import csv
    lines = [line for line in r.stdout.splitlines() if line.startswith('"')]
    for rec in csv.DictReader(lines):
        name = rec.get("Kernel Name", "")
        metric, value = rec.get("Metric Name"), rec.get("Metric Value", "0").replace(",", "")
        key = f"{rec.get('ID')}:{name.split('(')[0]}"
        try:
            rows.setdefault(key, {})[metric] = float(value)
        except ValueError:
            pass
    out = {}
    for key, m in rows.items():
        ld = m.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 0)
        st = m.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 0)
        out[key] = {
            "load_sectors_per_request": m.get(
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0) / ld if ld else None,
            "store_sectors_per_request": m.get(
                "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 0) / st if st else None,
            "ncu_time_ns": m.get("gpu__time_duration.sum")}
    if not out:
        out["error"] = (r.stderr or r.stdout)[-2000:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--steps", type=int, default=None,
                    help="time steps (default: each case's own)")
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--edit", action="append", default=[],
                    help="PATTERN=>REPLACEMENT applied to the output before building "
                    "(experiments)")
    ap.add_argument("--original-edit", action="append", default=[],
                    help="PATTERN=>REPLACEMENT applied to the original (experiments)")
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--layout", default="auto", choices=("auto", "soa", "grouped"),
                    help="the layout transform is asked for (as its --layout)")
    args = ap.parse_args()
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as driver
    rows = []
    for spec in args.cases:
        case, _, count = spec.partition(":")
        n = int(count) if count else CASES[case][1]
        edits = tuple(tuple(e.split("=>", 1)) for e in args.edit)
        original_edits = tuple(tuple(e.split("=>", 1)) for e in args.original_edit)
        row = run_case(case, n, args.steps, args.repeat, args.once, edits, original_edits,
                       args.layout)
        row["layout_option"] = args.layout
        if edits or original_edits:
            row["edits"] = args.edit
            row["original_edits"] = args.original_edit
        if args.ncu and not args.once:
            row["ncu"] = ncu(case, n, args.layout)
        row["device"] = driver.Device(0).name()
        row["date"] = datetime.date.today().isoformat()
        print(json.dumps(row), flush=True)
        rows.append(row)
    if not args.once:
        os.makedirs(args.out, exist_ok=True)
        name = "layout-edited.json" if args.edit or args.original_edit else \
            f"layout-{args.layout}.json"
        with open(os.path.join(args.out, name), "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r.get("outputs_match") for r in rows) else 1



if __name__ == "__main__":
    sys.exit(main())
