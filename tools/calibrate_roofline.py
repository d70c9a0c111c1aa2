#!/usr/bin/env python3
"""Calibrate the performance model (polycoal/analysis/roofline.py) on the device: the
throughputs and latencies of grammars/memory_sm90.toml's [roofline] and [operations]
tables, measured with CuPy (CUDA events, a warm-up, the median of `--repeat`).

    python tools/calibrate_roofline.py --out calibration.json [--repeat 10]

Measured:
- the FP32 fused multiply-add throughput (eight independent chains a thread, 64 warps
  a multiprocessor): the issue clock, four warp instructions per clock per multiprocessor;
- each operation of [operations] (division, sqrtf, expf, logf, powf, sinf, tanhf, an
  integer division, double arithmetic...), the same way: its cost in warp-instruction
  issue slots (an FMA costs one);
- device-to-device copy bandwidth (CuPy's copy of 1 GiB: bytes read + written);
- L2 bandwidth (a 16 MiB array read again and again, float4 per lane);
- a gather of one 4-byte word per 32-byte sector from 1 GiB (DRAM sectors a second);
- a launch's overhead (an empty kernel launched 2000 times back to back);
- memory latency (one thread chasing pointers through 1 GiB, and through 4 MiB: L2).

Prints the JSON it writes: the raw figures, and the [roofline] / [operations] values
they give, to compare with the shipped file (the model's error is checked against
kernels by tools/check_model.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_copy_reference import timed  # noqa: E402  (median of event-timed runs)

THREADS = 256
CHAINS = 8

OPERATIONS = {
    # name: (C type, the step of one chain: `a` the chain's value, `x` a per-thread input)
    "fma": ("float", "a = fmaf(a, x, 0.5f)"),
    "add": ("float", "a = a + x"),
    "div": ("float", "a = x / a"),
    "sqrtf": ("float", "a = sqrtf(a + x)"),
    "rsqrtf": ("float", "a = rsqrtf(a + x)"),
    "expf": ("float", "a = expf(a * x)"),
    "logf": ("float", "a = logf(a + x)"),
    "powf": ("float", "a = powf(fabsf(a - x), p)"),
    "sinf": ("float", "a = sinf(a + x)"),
    "tanhf": ("float", "a = tanhf(a + x)"),
    "idiv": ("int", "a = (a + ix) / (ix | 3)"),
    "imod": ("int", "a = (a + ix) % (ix | 3)"),
    "imul": ("int", "a = a * ix + 7"),
    "dfma": ("double", "a = fma(a, (double)x, 0.5)"),
    "ddiv": ("double", "a = (double)x / a"),
    "dsqrt": ("double", "a = sqrt(a + (double)x)"),
    "dexp": ("double", "a = exp(a * (double)x)"),
}

SOURCE = r"""
extern "C" __global__ void op_{name}(float *out, int iters, float p)
{{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = 1.0f + 1e-7f * (t & 255);
    int ix = 3 + (t & 7);
    {ctype} acc[{chains}];
    #pragma unroll
    for (int c = 0; c < {chains}; c++) acc[c] = ({ctype})(1 + c + (t & 3));
    for (int i = 0; i < iters; i++) {{
        #pragma unroll
        for (int c = 0; c < {chains}; c++) {{ {ctype} a = acc[c]; {step}; acc[c] = a; }}
    }}
    {ctype} s = 0;
    #pragma unroll
    for (int c = 0; c < {chains}; c++) s += acc[c];
    if ((float)s == 1234.5f) out[t] = (float)s;
}}
"""

MEMORY = r"""
extern "C" __global__ void l2_read(const float4 *a, float *out, long long n, int rounds)
{
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.0f;
    for (int r = 0; r < rounds; r++)
        for (long long k = t; k < n; k += stride) { float4 v = a[k]; s += v.x + v.y + v.z + v.w; }
    if (s == 1234.5f) out[t] = s;
}
extern "C" __global__ void sector_gather(const float *a, float *out, long long sectors)
{
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t < sectors) out[t] = a[t * 8];
}
extern "C" __global__ void empty(float *out) { if (out == 0) out[threadIdx.x] = 0.0f; }
extern "C" __global__ void chase(const long long *next, long long *out, int steps)
{
    long long k = 0;
    for (int s = 0; s < steps; s++) k = next[k];
    out[0] = k;
}
"""


def operation_costs(cp, sms: int, repeat: int) -> dict:
    """Seconds per warp-level operation of each kind, and its cost in FMA issue slots."""
    out = cp.zeros(sms * 64 * 32, dtype=cp.float32)
    blocks = sms * 64 * 32 // THREADS
    seconds = {}
    for name, (ctype, step) in OPERATIONS.items():
        module = cp.RawModule(code=SOURCE.format(name=name, ctype=ctype, step=step,
                                                 chains=CHAINS),
                              options=("--std=c++17",))
        kernel = module.get_function(f"op_{name}")
        iters = 4096 if name in ("fma", "add", "imul") else 512
        ms = timed(cp, lambda: kernel((blocks,), (THREADS,), (out, cp.int32(iters),
                                                              cp.float32(1.37))), repeat)
        warp_ops = blocks * THREADS / 32 * iters * CHAINS
        seconds[name] = ms * 1e-3 / warp_ops
    fma = seconds["fma"]
    return {"seconds_per_warp_op": seconds,
            "issue_slots": {k: round(v / fma, 2) for k, v in seconds.items()},
            "clock_ghz": 1.0 / (fma * sms * 4) / 1e9}


def memory_figures(cp, sms: int, repeat: int) -> dict:
    module = cp.RawModule(code=MEMORY)
    figures = {}
    big = cp.ones(1 << 28, dtype=cp.float32)                 # 1 GiB
    other = cp.empty_like(big)
    ms = timed(cp, lambda: cp.copyto(other, big), repeat)
    figures["copy_gbs"] = 2 * big.nbytes / (ms * 1e-3) / 1e9
    small = cp.ones(1 << 22, dtype=cp.float32)               # 16 MiB: stays in L2
    out = cp.zeros(sms * 2048, dtype=cp.float32)
    rounds = 20
    ms = timed(cp, lambda: module.get_function("l2_read")(
        (sms * 8,), (THREADS,), (small, out, cp.int64(small.size // 4), cp.int32(rounds))),
        repeat)
    figures["l2_gbs"] = rounds * small.nbytes / (ms * 1e-3) / 1e9
    sectors = big.size // 8
    gathered = cp.zeros(sectors, dtype=cp.float32)
    ms = timed(cp, lambda: module.get_function("sector_gather")(
        ((sectors + THREADS - 1) // THREADS,), (THREADS,), (big, gathered, cp.int64(sectors))),
        repeat)
    figures["gather_sectors_per_s"] = sectors / (ms * 1e-3)
    empty = module.get_function("empty")
    launches = 2000
    ms = timed(cp, lambda: [empty((1,), (32,), (out,)) for _ in range(launches)], 3)
    figures["launch_us"] = ms * 1e3 / launches
    for name, elements in (("dram_latency_ns", 1 << 27), ("l2_latency_ns", 1 << 19)):
        order = cp.random.permutation(elements).astype(cp.int64)
        nxt = cp.empty(elements, dtype=cp.int64)
        nxt[order] = cp.roll(order, -1)                        # one cycle through all
        result = cp.zeros(1, dtype=cp.int64)
        steps = 20000
        ms = timed(cp, lambda: module.get_function("chase")((1,), (1,),
                                                            (nxt, result, cp.int32(steps))), 3)
        figures[name] = ms * 1e6 / steps
    return figures


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    result = {"device": props["name"].decode() if isinstance(props["name"], bytes)
              else props["name"], "multiprocessors": sms}
    result.update(operation_costs(cp, sms, args.repeat))
    result.update(memory_figures(cp, sms, args.repeat))
    clock = result["clock_ghz"] * 1e9
    result["roofline"] = {
        "clock_ghz": round(result["clock_ghz"], 3),
        "dram_bytes_per_clock": round(result["copy_gbs"] * 1e9 / clock / sms, 2),
        "l2_bytes_per_clock": round(result["l2_gbs"] * 1e9 / clock / sms, 2),
        "scattered_sectors_per_clock": round(result["gather_sectors_per_s"] / clock / sms, 3),
        "launch_us": round(result["launch_us"], 2),
        "dram_latency": round(result["dram_latency_ns"] * result["clock_ghz"]),
        "l2_latency": round(result["l2_latency_ns"] * result["clock_ghz"]),
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
