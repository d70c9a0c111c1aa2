#!/usr/bin/env python3
"""Turn a bench.json of tools/bench_polybench.py into the GPU section of BENCHMARKS.md
and a PNG chart of the speedups (matplotlib, when installed); an agreement.json of
tools/agreement.py into its agreement section.

    python tools/render_benchmarks.py docs/results/bench-h200.json \
        [docs/results/reductions-h200.json]
    python tools/render_benchmarks.py --agreement docs/results/agreement.json
"""

from __future__ import annotations

import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
COPY_CEILING_GBS = 4234.0          # ../shared/ANCHORS.md: H200 device-to-device copy
BEGIN, END = "<!-- gpu-results:begin -->", "<!-- gpu-results:end -->"
RBEGIN, REND = "<!-- reduction-results:begin -->", "<!-- reduction-results:end -->"
ABEGIN, AEND = "<!-- agreement-results:begin -->", "<!-- agreement-results:end -->"


def reduction_section(report: dict) -> str:
    lines = [RBEGIN, "## Row and column reductions against cuBLAS", "",
             f"- Date: {report['date']}. Device: {report['device']}. Command (on the device): "
             f"`python {report['command']}`.",
             "- Each program transformed with its size macros at n (-D), the reduced kernel "
             "validated against the original on fresh random inputs (relative L2 error "
             "within the reassociation tolerance) and timed: median of 20 CUDA-event-timed "
             "launches after a warm-up. cuBLAS: CuPy's `A @ x` (sgemv) on the same shapes, "
             "once per matrix the kernel reads, timed the same way in the same run.", "",
             "| n | kernel | original ms | polycoal ms | speedup | GB/s | % of copy ceiling "
             "| cuBLAS ms | polycoal vs cuBLAS | max rel. L2 error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        gbs = r["bytes"] / (r["transformed_ms"] * 1e-3) / 1e9
        err = max(a["rel_l2"] for a in r["arrays"])
        cublas = r.get("cublas_ms")
        ratio = cublas / r["transformed_ms"] if cublas else None
        versus = "n/a" if ratio is None else (f"{ratio:.2f}x faster" if ratio >= 1 else
                                               f"{1 / ratio:.2f}x slower")
        lines.append(f"| {r['n']} | {r['program']} {r['kernel']} ({r.get('action', '')}) | "
                     f"{r['original_ms']:.3f} | "
                     f"{r['transformed_ms']:.4f} | {r['speedup']:.1f}x | {gbs:.0f} | "
                     f"{100 * gbs / COPY_CEILING_GBS:.1f}% | "
                     f"{cublas:.4f} | {versus} | {err:.1e} |" if cublas else
                     f"| {r['n']} | {r['kernel']} | ... |")
    if report.get("tuning"):
        lines += ["", "Column-reduction shapes on bicg_kernel1, same run (`--column-forms`; "
                  "auto: the default, split:ROWS:GROUPS:COLUMNS: rows per block, threads per "
                  "column, columns per thread; block:G: one block of 32xG threads per 32 "
                  "columns, no atomics):", "", "| form | n | polycoal ms | check |",
                  "|---|---|---|---|"]
        lines += [f"| {t['form']} | {t['n']} | {t['transformed_ms']:.4f} | "
                  f"{'PASS' if t['ok'] else 'FAIL'} |" for t in report["tuning"]]
    lines.append(REND)
    return "\n".join(lines) + "\n"


def _replace(current: str, begin: str, end: str, text: str) -> str:
    if begin in current:
        return re.sub(re.escape(begin) + ".*?" + re.escape(end) + "\n", lambda m: text,
                      current, flags=re.S)
    return current.rstrip("\n") + "\n\n" + text


def section(report: dict, chart: str | None) -> str:
    lines = [BEGIN, "## PolyBench/GPU on the GPU: original against transformed", "",
             f"- Date: {report['date']}. Device: {report['device']} ({report['arch']}), "
             "CUDA 13.0, kernels built by nvcc through pycuda with -O3.",
             f"- Command (on the device): `python {report['command']}`; this table: "
             "`python tools/render_benchmarks.py docs/results/bench-h200.json`.",
             "- Sizes: the standard PolyBench/GPU dataset of polybench_inputs/ (e.g. "
             "covariance and correlation M = N = 2048, atax/bicg/mvt/gesummv 4096).",
             "- Kernel times: median of 10 CUDA-event-timed launches after one warm-up, "
             "fresh random inputs, several input sets rotated when they fit in L2. GB/s: "
             "the arrays' footprint (each element read or written once) over the time, "
             f"against the {COPY_CEILING_GBS:.0f} GB/s copy ceiling.", "",
             "| program | kernel | original ms | transformed ms | speedup | GB/s (transformed) "
             "| % of copy ceiling | new geometry | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for k in report["kernels"]:
        if k.get("original_ms") is None:
            continue
        gbs = k["bytes"] / (k["transformed_ms"] * 1e-3) / 1e9
        lines.append(
            f"| {k['program']} | {k['kernel']} | {k['original_ms']:.3f} | "
            f"{k['transformed_ms']:.3f} | {k['speedup']:.1f}x | {gbs:.0f} | "
            f"{100 * gbs / COPY_CEILING_GBS:.1f}% | grid {tuple(k['new_grid'])} block "
            f"{tuple(k['new_block'])} | {'PASS' if k['ok'] else 'FAIL'} |")
    failed = [k for k in report["kernels"] if not k["ok"]]
    if failed:
        lines += ["", "Changed kernels this run could not check or time on the device:", ""]
        lines += [f"- {k['program']} {k['kernel']} ({k['action']}): {k['message']}"
                  for k in failed]
    lines += ["", "Kernels left unchanged (their text is byte-identical, so their time is the "
              "original's):", "", "| program | kernel | why |", "|---|---|---|"]
    for k in report["kernels"]:
        if k["action"] == "unchanged":
            lines.append(f"| {k['program']} | {k['kernel']} | {k['reason']} |")
    lines += ["", "Whole programs (each program's own CPU-vs-GPU comparison, and its "
              "GPU time as it prints it, one run):", "",
              "| program | transform s | original: mismatches, GPU s | transformed: "
              "mismatches, GPU s |", "|---|---|---|---|"]
    for p in report["programs"]:
        o = p["original"]
        t = p.get("transformed")
        tt = f"{t['mismatches']}, {t['gpu_seconds']}" if t else "(byte-identical)"
        lines.append(f"| {p['program']} | {p['transform_seconds']:.3f} | "
                     f"{o.get('mismatches')}, {o.get('gpu_seconds')} | {tt} |")
    if chart:
        lines += ["", f"![speedups]({chart})"]
    lines.append(END)
    return "\n".join(lines) + "\n"


def draw(report: dict, path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    timed = [k for k in report["kernels"] if k.get("speedup")]
    labels = [f"{k['program']}\n{k['kernel']}" for k in timed]
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(timed) + 2), 3.5))
    bars = ax.bar(labels, [k["speedup"] for k in timed], color="#3a7ab8")
    ax.set_ylim(0, max(k["speedup"] for k in timed) * 1.15)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylabel("speedup over the original")
    ax.set_title(f"polycoal on {report['device']}, {report['date']}")
    for b, k in zip(bars, timed):
        ax.annotate(f"{k['speedup']:.0f}x", (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def _hardware_cell(row: dict, kind: str, report: dict) -> str:
    """`hardware / trace as issued (trace, all requests)`, with a mark when they differ."""
    figures = (row.get("figures") or {}).get(kind)
    if not figures or figures["trace"] is None:
        return "-"
    trace = f"{figures['trace']:.2f} ({figures['trace_all']:.2f})"
    hw = row.get("hardware")
    if report.get("hardware") is None or hw is None:
        return f"not run / {trace}"
    if hw.get("error") or kind not in hw or hw[kind]["sectors_per_request"] is None:
        return f"n/a / {trace}"
    mark = {True: "", False: " **differs**", None: ""}[hw[kind]["agrees"]]
    return f"{hw[kind]['sectors_per_request']:.2f} / {trace}{mark}"


def _disagreements(row: dict) -> str:
    parts = [f"`{d['reference']}` {d['type']} (line {d['line']}): static {d['static']}, "
             f"trace {d['trace']}: {d['explanation'] or 'UNEXPLAINED'}"
             for d in row["disagreements"]]
    if row["unclassified"]:
        parts.append("not classified statically (not affine): " + ", ".join(
            f"`{u}`" for u in row["unclassified"]))
    return "; ".join(parts) or "-"


def agreement_section(report: dict) -> str:
    hw = report.get("hardware")
    where = "on the GPU (pycuda)" if report["executor"] == "device" else "on the CPU"
    status = ("not measured in this run (`--hardware` on the device fills them)" if hw is None
              else f"unavailable: {hw['error']}" if hw["error"] else f"Nsight Compute "
              f"(`{os.path.basename(hw['tool'])} --clock-control none`)")
    rows = report["rows"]
    agree = sum(r["agree"] for r in rows)
    total = sum(r["references"] for r in rows)
    lines = [ABEGIN, "## Static analysis, trace and hardware counters", "",
             f"- Date: {report['date']}. Machine: {report['machine']}. Trace {where}. "
             f"Command: `python {report['command']}` ({report['seconds']:.0f} s); this "
             "section: `python tools/render_benchmarks.py --agreement agreement.json`.",
             "- Every kernel of polybench_inputs/ at small sizes (tools/agreement.py SIZES, "
             "e.g. 64x64), run as its first launch site sets it up. A reference is a traced "
             "static id (a load or a store). *agree*: the static analysis and the trace give "
             "it the same class (coalesced / broadcast / uncoalesced).",
             "- Sectors per request per kernel, loads and stores: hardware / trace as the "
             "compiled code issues the requests (trace over all requests in parentheses; a "
             "load of the address the thread accessed last with no store since, and a "
             "store overwritten before any load, are served from registers: "
             "polycoal/dynamic/hardware.py). Hardware: "
             f"{status}; figures differing by more than 10% are marked.",
             f"- {agree} of {total} references agree; "
             f"{sum(len(r['disagreements']) for r in rows)} disagree; "
             f"{sum(len(r['unclassified']) for r in rows)} not classified statically; "
             f"{sum(1 for r in rows if r['error'])} kernels not traced.", "",
             "| program | kernel | traced | references | agree | disagreements | loads: "
             "hw / trace | stores: hw / trace |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        traced = "not traced: " + r["error"] if r["error"] else (r["sampling"] or "")
        lines.append(f"| {r['program']} | {r['kernel']} | {traced} | {r['references']} | "
                     f"{r['agree']} | {_disagreements(r)} | "
                     f"{_hardware_cell(r, 'load', report)} | "
                     f"{_hardware_cell(r, 'store', report)} |")
    lines.append(AEND)
    return "\n".join(lines) + "\n"


def write_sections(gpu: str | None = None, reductions: str | None = None,
                   agreement: str | None = None) -> None:
    """Replace (or append) the given sections of BENCHMARKS.md."""
    bench = os.path.join(ROOT, "BENCHMARKS.md")
    current = open(bench).read()
    for (begin, end), text in (((BEGIN, END), gpu), ((RBEGIN, REND), reductions),
                               ((ABEGIN, AEND), agreement)):
        if text is not None:
            current = _replace(current, begin, end, text)
    open(bench, "w").write(current)


def main() -> int:
    if sys.argv[1:2] == ["--agreement"]:
        write_sections(agreement=agreement_section(json.load(open(sys.argv[2]))))
        return 0
    report = json.load(open(sys.argv[1]))
    chart = "docs/results/speedups-h200.png"
    ok = draw(report, os.path.join(ROOT, chart))
    write_sections(section(report, chart if ok else None),
                   reduction_section(json.load(open(sys.argv[2])))
                   if len(sys.argv) > 2 else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
