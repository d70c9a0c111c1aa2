#!/usr/bin/env python3
"""Every PolyBench/GPU kernel against its roofline bound, in one device run (issue 34).

    python tools/roofline_report.py --out DIR [--repeat 10] [--sizes standard,large]
                                    [PROGRAM.cu[:MACROS[:ARGS]] ...]
    python tools/roofline_report.py --table ROOFLINE.json     (Markdown, for BENCHMARKS.md)
    python tools/roofline_report.py --plot ROOFLINE.json OUT.svg

The machine first, measured in the same run: the copy bandwidth (CuPy's device-to-device
copy of 1 GiB, bytes read + written) and the FP32 peak (a throughput kernel of eight
independent FMA chains a thread, tools/calibrate_roofline.py's); cuBLAS SGEMM (CuPy,
FP32 as written: CUPY_TF32 unset) at each product size as the reference.

Then every kernel of every program (PolyBench/GPU's published sources in
polybench_inputs/, at their standard sizes and at the large sizes of LARGE): the bound
max(least bytes / copy bandwidth, floating-point operations / FP32 peak), the least
bytes each element a reference reaches moved once (analysis/work.least_work); the
kernel as written and polycoal's output (the form the performance model chose, the
original where it kept it), each the median of --repeat event-timed launches after a
warm-up on fresh random inputs, their outputs compared (validate/device.py); and the
fraction bound / polycoal's time. `reason` is null where the fraction is 0.8 or more,
else what binds polycoal's form by the model, or why no bound or time was found. A
kernel whose trips wait on each other (a recurrence along a row, analysis/chain.py) has
a second bound, `chain_ms`: its trips times the latency of the operations from one
trip's value to the next's, measured in the same run (one thread's chain of each
operation); where it exceeds the first, the reason says how near polycoal's form is.

Writes DIR/roofline-<device>-<date>.json, a list of {program, kernel, size, bound_ms,
original_ms, polycoal_ms, fraction, reason} (with the bound's bytes and flops, the
form and whether the outputs matched), and DIR/roofline-<device>-<date>-machine.json
(the machine's figures and the cuBLAS references).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from bench_polybench import HOST_LOOP_ARGUMENTS, size_arguments  # noqa: E402
from check_model import POLYBENCH  # noqa: E402  (the standard sizes)
from corpus_report import arguments  # noqa: E402

# products and covariance-class kernels at the sizes issue 34 names (2048, 4096), the
# stencils and the matrix-vector kernels at sizes past the L2
LARGE = (
    "gemm/gemm.cu:NI=2048,NJ=2048,NK=2048:ni=2048,nj=2048,nk=2048",
    "gemm/gemm.cu:NI=4096,NJ=4096,NK=4096:ni=4096,nj=4096,nk=4096",
    "2mm/2mm.cu:NI=2048,NJ=2048,NK=2048,NL=2048:ni=2048,nj=2048,nk=2048,nl=2048",
    "3mm/3mm.cu:NI=2048,NJ=2048,NK=2048,NL=2048,NM=2048:ni=2048,nj=2048,nk=2048,nl=2048,nm=2048",
    "syrk/syrk.cu:NI=2048,NJ=2048:ni=2048,nj=2048",
    "syrk/syrk.cu:NI=4096,NJ=4096:ni=4096,nj=4096",
    "syr2k/syr2k.cu:NI=2048,NJ=2048:ni=2048,nj=2048",
    "syr2k/syr2k.cu:NI=4096,NJ=4096:ni=4096,nj=4096",
    # stencils past the L2 (issue 34's stencil item: the register window)
    "2dconv/2dconv.cu:NI=8192,NJ=8192:ni=8192,nj=8192",
    "3dconv/3dconv.cu:NI=512,NJ=512,NK=512:ni=512,nj=512,nk=512",
    "fdtd2d/fdtd2d.cu:NX=8192,NY=8192:nx=8192,ny=8192",
    "jacobi2d/jacobi2d.cu:N=8192:n=8192",
    "jacobi1d/jacobi1d.cu:N=16777216:n=16777216",
    "adi/adi.cu:N=4096:n=4096",
    # matrix-vector kernels and the column kernels past the L2 and past a launch's
    # overhead (at 4096 a 64 MiB matrix takes 17 us at the copy's speed, the launch 10)
    "atax/atax.cu:NX=8192,NY=8192:nx=8192,ny=8192",
    "bicg/bicg.cu:NX=8192,NY=8192:nx=8192,ny=8192",
    "gemver/gemver.cu:N=8192:n=8192",
    "gesummv/gesummv.cu:N=8192:n=8192",
    "mvt/mvt.cu:N=8192:n=8192",
    "lu/lu.cu:N=8192:n=8192,k=0",
    "gramschmidt/gramschmidt.cu:M=8192,N=8192:m=8192,n=8192,k=0",
    # the triangle products at 4096 (their originals take seconds a launch: timed
    # fewer times, validate/device.py)
    "covariance/covariance.cu:M=4096,N=4096:m=4096,n=4096",
    "correlation/correlation.cu:M=4096,N=4096:m=4096,n=4096",
)
REFERENCE_SIZES = (2048, 4096)
# int arguments a host loop varies, beside bench_polybench's: one trip of the loop
HOST_LOOPS = {**HOST_LOOP_ARGUMENTS, "fdtd2d": {"t": 1}, "3dconv": {"i": 1},
              "adi": {"i1": 1}}
# kernels polycoal keeps on purpose: why, in the table
KEPT = {"redundant-copies": (
    "kept: its threads' copies along an axis it never reads race, each adding to what "
    "the others left; one copy's result is theirs only when they run in lockstep, so "
    "one copy is run only on request (--collapse-redundant-threads)")}
GOAL = 0.8                       # the fraction of the bound every kernel should reach
# a launch timed alone between two events, however little it does, where the run did
# not measure it (validate/device.launch_floor_ms, machine's `launch_ms`): a launch made
# through Python with the device idle (grammars/memory_sm90.toml's launch_us)
LAUNCH_MS = 0.010


# one thread's chain of an operation (analysis/chain.py's latency classes): `a` the
# chain's value entering as the operand the class names, x = 1 (the compiler cannot
# know it); the chain's value stays finite and normal
LATENCY = {"ffma": ("float", "a = fmaf(a, x, 0.25f) - 0.25f"),
           "fdiv_num": ("float", "a = a / x"),
           "fdiv_den": ("float", "a = (x + 0.5f) / a"),
           "dfma": ("double", "a = fma(a, (double)x, 0.25) - 0.25"),
           "ddiv_num": ("double", "a = a / (double)x"),
           "ddiv_den": ("double", "a = ((double)x + 0.5) / a")}
LATENCY_SOURCE = r"""
extern "C" __global__ void chain_{name}(float *out, int iters, float x)
{{
    {ctype} a = ({ctype})out[0] + ({ctype})1.25;
    for (int k = 0; k < iters; k++) {{
        {step};
    }}
    out[1] = (float)a;
}}
"""


def latencies(cp, repeat: int) -> dict[str, float]:
    """Nanoseconds from an operation's operand to its result, each class of
    analysis/chain.py: one thread's chain of 2^16 and of 2^17, their difference over
    2^16 (the launch's overhead cancels). The FMA's chain counts its two operations
    (an FMA and a subtraction), halved."""
    from bench_copy_reference import timed
    out = cp.zeros(2, dtype=cp.float32)
    found = {}
    for name, (ctype, step) in LATENCY.items():
        module = cp.RawModule(code=LATENCY_SOURCE.format(name=name, ctype=ctype, step=step))
        kernel = module.get_function(f"chain_{name}")
        ms = [timed(cp, lambda n=n: kernel((1,), (1,), (out, cp.int32(n), cp.float32(1.0))),
                    repeat) for n in (1 << 16, 1 << 17)]
        ns = (ms[1] - ms[0]) * 1e6 / (1 << 16)
        found[name] = ns / 2 if name.endswith("fma") else ns
    return found


def machine(cp, repeat: int) -> dict:
    """Copy bandwidth (GB/s, read + written) and FP32 peak (GFLOP/s), measured now;
    the latencies of the operations a recurrence's chain waits on (ns)."""
    from bench_copy_reference import timed
    from calibrate_roofline import CHAINS, SOURCE, THREADS
    big = cp.ones(1 << 28, dtype=cp.float32)                  # 1 GiB
    other = cp.empty_like(big)
    ms = timed(cp, lambda: cp.copyto(other, big), repeat)
    copy_gbs = 2 * big.nbytes / (ms * 1e-3) / 1e9
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(sms * 64 * 32, dtype=cp.float32)
    blocks, iters = sms * 64 * 32 // THREADS, 4096
    module = cp.RawModule(code=SOURCE.format(name="fma", ctype="float",
                                             step="a = fmaf(a, x, 0.5f)", chains=CHAINS),
                          options=("--std=c++17",))
    kernel = module.get_function("op_fma")
    ms = timed(cp, lambda: kernel((blocks,), (THREADS,), (out, cp.int32(iters),
                                                          cp.float32(1.0))), repeat)
    flops = 2.0 * blocks * THREADS * iters * CHAINS
    from polycoal.validate.device import launch_floor_ms
    return {"copy_gbs": copy_gbs, "fp32_gflops": flops / (ms * 1e-3) / 1e9,
            "multiprocessors": sms, "latency_ns": latencies(cp, repeat),
            "launch_ms": launch_floor_ms(max(repeat, 20))}


def cublas(cp, repeat: int) -> list[dict]:
    """cuBLAS SGEMM (C = A B, n x n, FP32) through CuPy at each reference size, timed
    with the device held (held_timed)."""
    rows = []
    for n in REFERENCE_SIZES:
        a = cp.random.standard_normal((n, n), dtype=cp.float32)
        b = cp.random.standard_normal((n, n), dtype=cp.float32)
        c = cp.empty((n, n), dtype=cp.float32)
        ms = held_timed(cp, lambda: cp.matmul(a, b, out=c), repeat)
        rows.append({"routine": "sgemm", "n": n, "ms": ms,
                     "gflops": 2.0 * n ** 3 / (ms * 1e-3) / 1e9})
    return rows


def held_timed(cp, step, repeat: int) -> float:
    """The median time (ms) of `step()` on CuPy's stream, CUDA events around it, the
    device held busy ahead of the first event as polycoal's kernels are timed
    (validate/device.held_times): Python's share of a call kept out (CuPy's matmul
    spends tens of us on the host, a copy of 64 MiB takes about 20 on the device)."""
    import statistics
    from polycoal.validate.device import _HOLD_SOURCE, HOLD_ATTEMPTS, HOLD_MS
    hold = cp.RawModule(code=_HOLD_SOURCE).get_function("pc_hold")
    step()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        for attempt in range(HOLD_ATTEMPTS):
            hold((1,), (1,), (cp.uint64(int(HOLD_MS * 1e6) << attempt),))
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            step()
            end.record()
            early = start.done
            end.synchronize()
            if not early:
                break
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def copy_ms(nbytes: float, repeat: int, _cache: dict = {}) -> float | None:
    """A device-to-device copy moving `nbytes` (half read, half written), one launch,
    timed as the bound's copy is: what streaming that many bytes takes at this size,
    its launch and its ramp included (None where CuPy is missing)."""
    key = int(nbytes) // 8
    if key not in _cache:
        try:
            import cupy as cp
        except ImportError:
            return None
        src = cp.ones(max(key, 1), dtype=cp.float32)
        dst = cp.empty_like(src)
        _cache[key] = held_timed(cp, lambda: cp.copyto(dst, src), repeat)
    return _cache[key]


def sgemm_reference(flops: float, figures: dict) -> tuple[float, int] | None:
    """(ms, n): cuBLAS SGEMM's time in this run at the reference size nearest `flops`
    (2 n^3 within a factor of 2.5), scaled to those flops; None where none is near."""
    near = [(abs(math.log(flops / (2.0 * r["n"] ** 3))), r) for r in figures.get("cublas", ())
            if 0.4 <= flops / (2.0 * r["n"] ** 3) <= 2.5]
    if not near:
        return None
    r = min(near, key=lambda t: t[0])[1]
    return r["ms"] * flops / (2.0 * r["n"] ** 3), r["n"]


def _spec(spec: str):
    path, _, rest = spec.partition(":")
    macros, _, given = rest.partition(":")
    if not os.path.isabs(path):
        path = os.path.join(ROOT, "polybench_inputs", path)
    folder = os.path.dirname(path)
    values = {**size_arguments(folder, os.path.basename(path)),
              **HOST_LOOPS.get(os.path.basename(folder), {}),
              **arguments(open(path, errors="replace").read()),
              **{n: int(v) for n, v in (a.split("=", 1) for a in given.split(",") if a)}}
    return path, tuple(m for m in macros.split(",") if m), values


def kernel_rows(spec: str, size: str, figures: dict, repeat: int,
                sizes: tuple = ()) -> list[dict]:
    """One row per kernel of the program `spec`; `sizes`: tiled products' shapes forced
    (--product-sizes, as polycoal's --sizes)."""
    from polycoal.analysis.chain import recurrence_chain
    from polycoal.analysis.work import least_work
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.transform import TransformOptions, transform_program
    from polycoal.validate.device import time_kernel_device, validate_device
    path, macros, values = _spec(spec)
    preprocessor = PreprocessorOptions(include_dirs=(os.path.dirname(path),), defines=macros)
    program = read_program(path, preprocessor)
    options = TransformOptions(preprocessor=preprocessor,
                               price_at=tuple(sorted(values.items())), sizes=sizes)
    result = transform_program(program, options)
    program = result.program or program
    verdicts = {v.kernel: v for v in validate_device(program, result, options, values, repeat)}
    bytes_per_ms = figures["copy_gbs"] * 1e6
    flops_per_ms = figures["fp32_gflops"] * 1e6
    label = ",".join(f"{k}={v}" for k, v in sorted(values.items())) or "as written"
    rows = []
    for d in result.decisions:
        if d.analysis is None and ("see there" in d.reason or "transformed copies" in d.reason):
            continue                     # a template read through its copies: rows of their own
        row = {"program": os.path.relpath(path, ROOT), "kernel": d.kernel,
               "size": f"{size}: {label}", "bound_ms": None, "original_ms": None,
               "polycoal_ms": None, "fraction": None, "reason": None,
               "form": d.action, "outputs_match": None, "bytes": None, "flops": None,
               "chain_ms": None, "chain": None}
        model = d.analysis.model if d.analysis is not None else None
        try:
            if model is not None and model.is_affine:
                least = least_work(d.analysis, values)
                row.update(bytes=least.bytes, flops=least.flops,
                           bound_ms=least.bound(bytes_per_ms, flops_per_ms))
                chain = recurrence_chain(d.analysis, values)
                if chain is not None and figures.get("latency_ns"):
                    ns, ops = chain.per_trip(figures["latency_ns"])
                    row.update(chain_ms=chain.ms(figures["latency_ns"]),
                               chain=f"{chain.trips} trips of the loop at line {chain.line}, "
                               f"each waiting on the last: {ns:.3g} ns a trip "
                               f"({' + '.join(ops)})")
            if row["bytes"] and row["bound_ms"] and \
                    row["bytes"] / bytes_per_ms >= row["bound_ms"] * 0.999:
                row["copy_ms"] = copy_ms(row["bytes"], repeat)
            v = verdicts.get(d.kernel)
            if d.action != "unchanged" and v is not None:
                row.update(original_ms=v.original_ms, polycoal_ms=v.transformed_ms,
                           outputs_match=v.ok)
            elif model is not None:
                t = time_kernel_device(program, d.analysis.kernel, model, values, repeat)
                row.update(original_ms=t, polycoal_ms=t)
        except Exception as error:       # noqa: BLE001 - the row says why, the others go on
            row["reason"] = f"not measured: {type(error).__name__}: {error}"
        rows.append(_judged(row, d, figures.get("launch_ms", LAUNCH_MS), figures))
    return rows


# within this of its reference (a copy of the same bytes, cuBLAS for the same flops), a
# kernel below GOAL is at what the device does at that size: its reason says so
NEAR_REFERENCE = 1.1


def _references(row: dict, d, figures: dict) -> str | None:
    """Why the bound is out of reach at this size, where the device's own reference
    work shows it: a memory-bound kernel within NEAR_REFERENCE of a copy of its bytes
    (one launch, its ramp and drain: at 64 MiB a copy reaches about 80% of the
    bandwidth of a GiB), a product within NEAR_REFERENCE of cuBLAS SGEMM for its flops
    (FP32 as written, no tensor cores); else what the reference says, after `open`."""
    ms = row["polycoal_ms"]
    if row.get("copy_ms"):
        c = row["copy_ms"]
        text = (f"a copy of the same {row['bytes'] / 2 ** 20:.3g} MiB (read and written, one "
                f"launch) takes {c * 1e3:.3g} us here, {row['bound_ms'] / c:.0%} of the bound; "
                f"polycoal's form at {c / ms:.0%} of that copy")
        return ("size-bound: " + text) if ms <= NEAR_REFERENCE * c else text
    if d.action == "product" and row.get("flops"):
        ref = sgemm_reference(row["flops"], figures)
        if ref is None:
            return None
        c, n = ref
        text = (f"cuBLAS SGEMM for the same flops (at n = {n}, this run) takes {c:.4g} ms, "
                f"{row['bound_ms'] / c:.0%} of the FP32 bound; polycoal's form "
                f"{ms / c:.2f}x its time")
        return ("product-bound: " + text) if ms <= NEAR_REFERENCE * c else text
    return None


def _judged(row: dict, d, launch_ms: float = LAUNCH_MS, figures: dict | None = None) -> dict:
    if row["bound_ms"] and row["polycoal_ms"]:
        row["fraction"] = row["bound_ms"] / row["polycoal_ms"]
    if row["reason"] is not None or (row.get("fraction") or 0) >= GOAL:
        return row
    if row["bound_ms"] is None:
        row["reason"] = "no bound: the kernel is outside the affine model"
    elif row["polycoal_ms"] is not None and row["bound_ms"] < launch_ms and \
            row["polycoal_ms"] < 2.5 * launch_ms:
        row["reason"] = (f"launch-dominated: its work bounds it at {row['bound_ms'] * 1e3:.2g} "
                         f"us, below the {launch_ms * 1e3:.2g} us a launch timed alone takes; "
                         "only fewer launches (kernels fused, graphs) come nearer")
    elif row["polycoal_ms"] is None:
        row["reason"] = "not measured: the harness cannot run it alone"
    else:
        choice = d.predicted
        form = choice.chosen if choice is not None else None
        bound = dict(choice.candidates).get(form, choice.original).bound \
            if choice is not None else None
        row["reason"] = (f"open: polycoal's form ({d.action}) is {bound} by the model"
                         if bound else KEPT.get(d.code, f"open: polycoal keeps it ({d.code})"))
        if row.get("chain_ms") and row["chain_ms"] > row["bound_ms"]:
            # a physical bound of its own: the trips of one thread wait on each other
            row["reason"] = (f"chain-bound: {row['chain']}, whatever the form: at least "
                             f"{row['chain_ms']:.3g} ms ({row['chain_ms'] / row['bound_ms']:.1f}x "
                             f"the bound of bytes and flops); polycoal's form at "
                             f"{row['chain_ms'] / row['polycoal_ms']:.0%} of it")
        # a launch timed alone adds its overhead to any kernel: bound / (bound + launch)
        # is the most a single launch reaches
        cap = row["bound_ms"] / (row["bound_ms"] + launch_ms)
        if cap < GOAL:
            row["reason"] += (f"; the launch's {launch_ms * 1e3:.2g} us caps one launch at "
                              f"{cap:.0%} of the bound")
        reference = _references(row, d, figures or {})
        if reference is not None and not row["reason"].startswith("chain-bound"):
            row["reason"] = reference if reference.startswith(("size-bound", "product-bound")) \
                else f"{row['reason']}; {reference}"
    return row


def markdown(rows: list[dict]) -> str:
    lines = ["| program | kernel | size | bound ms | original ms | polycoal ms | "
             "fraction | reason |", "|---|---|---|---|---|---|---|---|"]

    def ms(x):
        return "-" if x is None else f"{x:.4g}"
    for r in rows:
        fraction = "-" if r["fraction"] is None else f"{r['fraction']:.0%}"
        lines.append(f"| {r['program'].split('/')[-1]} | {r['kernel']} | {r['size']} | "
                     f"{ms(r['bound_ms'])} | {ms(r['original_ms'])} | {ms(r['polycoal_ms'])} "
                     f"| {fraction} | {r['reason'] or ''} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict]) -> str:
    """An SVG bar chart: each kernel's fraction of its bound, as written and by
    polycoal (log scale, 0.1% to 100%), the 80% goal drawn across."""
    import math
    measured = [r for r in rows if r["fraction"] and r["original_ms"]]
    bar, gap, left, top, height = 9, 6, 250, 30, 300
    width = left + len(measured) * (2 * bar + gap) + 20

    def y(f):
        f = min(max(f, 1e-3), 1.0)
        return top + height * (-math.log10(f)) / 3.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 230}"'
           ' font-family="sans-serif" font-size="10">',
           f'<text x="{left}" y="16" font-size="13">Fraction of the roofline bound '
           '(grey: as written, blue: polycoal; log scale)</text>']
    for f in (1.0, 0.1, 0.01, 0.001):
        out.append(f'<line x1="{left - 5}" x2="{width - 10}" y1="{y(f):.1f}" y2="{y(f):.1f}" '
                   'stroke="#ddd"/><text x="{0}" y="{1:.1f}" text-anchor="end">{2:g}%</text>'
                   .format(left - 8, y(f) + 3, f * 100))
    out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(GOAL):.1f}" y2="{y(GOAL):.1f}" '
               'stroke="#c00" stroke-dasharray="4 3"/>')
    for k, r in enumerate(measured):
        x = left + k * (2 * bar + gap)
        for j, (f, color) in enumerate(((r["bound_ms"] / r["original_ms"], "#999"),
                                        (r["fraction"], "#27c"))):
            out.append(f'<rect x="{x + j * bar}" y="{y(f):.1f}" width="{bar - 1}" '
                       f'height="{top + height - y(f):.1f}" fill="{color}"/>')
        name = f"{r['program'].split('/')[-1][:-3]} {r['kernel']} {r['size'][:28]}"
        out.append(f'<text transform="translate({x + bar},{top + height + 6}) rotate(60)">'
                   f'{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--sizes", default="standard,large")
    ap.add_argument("--table")
    ap.add_argument("--plot", nargs=2, metavar=("ROOFLINE_JSON", "OUT_SVG"))
    ap.add_argument("--product-sizes", action="append", default=[],
                    metavar="[KERNEL:]tile=T,...", help="tiled products' shapes forced, "
                    "as polycoal's --sizes (to measure a shape the model does not choose)")
    args = ap.parse_args()
    if args.table:
        print(markdown(json.load(open(args.table))), end="")
        return 0
    if args.plot:
        with open(args.plot[1], "w") as f:
            f.write(plot(json.load(open(args.plot[0]))))
        return 0
    if not args.out:
        ap.error("--out is required")
    import cupy as cp
    from polycoal.options import parse_sizes
    from polycoal.validate.device import load_pycuda
    driver, _ = load_pycuda()
    figures = machine(cp, args.repeat)
    figures["cublas"] = cublas(cp, args.repeat)
    print(json.dumps(figures), flush=True)
    specs = [(s, "given") for s in args.programs] or \
        [(s, size) for size, group in (("standard", POLYBENCH), ("large", LARGE))
         if size in args.sizes.split(",") for s in group]
    rows = []
    for spec, size in specs:
        try:
            found = kernel_rows(spec, size, figures, args.repeat,
                                tuple(parse_sizes(t) for t in args.product_sizes))
        except Exception as error:      # noqa: BLE001 - reported, the others go on
            found = [{"program": spec, "kernel": None, "size": size, "bound_ms": None,
                      "original_ms": None, "polycoal_ms": None, "fraction": None,
                      "reason": f"not run: {type(error).__name__}: {error}"}]
        for r in found:
            print(json.dumps(r), flush=True)
        rows += found
    device = driver.Device(0).name()
    stem = f"roofline-{device.split()[-1].lower()}-{datetime.date.today().isoformat()}"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        json.dump(rows, f, indent=1)
    figures.update(device=device, date=datetime.date.today().isoformat(),
                   command="python tools/roofline_report.py " + " ".join(sys.argv[1:]),
                   repeat=args.repeat)
    with open(os.path.join(args.out, stem + "-machine.json"), "w") as f:
        json.dump(figures, f, indent=1)
    with open(os.path.join(args.out, stem + ".svg"), "w") as f:
        f.write(plot(rows))
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
