"""Reports of `polycoal trace`: text, JSON (docs/trace-json.md) and SARIF, like analyze's.

Each traced kernel's static ids are summarised by Algorithm 1 (dynamic/algorithm1.py)
and set beside the static analysis' verdict for the same reference; with --hardware, each
kernel's sectors per request as Nsight Compute counted them for the original kernel
beside the trace's (dynamic/hardware.py).
"""

from __future__ import annotations

from typing import Any

from polycoal import __version__
from polycoal.analysis.coalescing import ReferenceReport
from polycoal.diagnostics import Diagnostic
from polycoal.dynamic.algorithm1 import SiteStats, algorithm1
from polycoal.dynamic.collect import KernelTrace
from polycoal.dynamic.hardware import (METRICS, Comparison, Counters, Hardware, Measured,
                                       compare)
from polycoal.frontend.dialect import cuda_dialect
from polycoal.report import sarif
from polycoal.report.json_report import diagnostic, location
from polycoal.report.text import table

SCHEMA_VERSION = 1
RULES = {
    "uncoalesced": "A warp's global-memory request, as traced, has neighbouring lanes more "
                   "than one element apart.",
    "trace-sampled": "Only part of the launch was traced.",
    "trace-failed": "The kernel could not be instrumented or run.",
    "hardware-counters": "Global load and store sectors per request of the original kernel "
                         "as Nsight Compute counted them, beside the trace's figures.",
    "hardware-unavailable": "The hardware counters could not be read (Nsight Compute "
                            "missing or failing); the trace stands alone.",
}


def static_verdict(r: ReferenceReport | None, block: tuple[int, int, int] | None) -> str | None:
    """The static analysis' class of a reference, in Algorithm 1's words: a broadcast
    when the thread axes that vary within a warp of `block` all have stride 0."""
    if r is None or r.coalesced is None:
        return None
    bx, by, bz = block or (cuda_dialect().warp_size, 1, 1)
    warp = cuda_dialect().warp_size
    varying = {"x": bx > 1, "y": by > 1 and bx < warp, "z": bz > 1 and bx * by < warp}
    if all(r.strides[a] is not None and r.strides[a].is_constant() and
           r.strides[a].constant() == 0 for a, v in varying.items() if v):
        return "broadcast"
    return "coalesced" if r.coalesced else "uncoalesced"


def _static(t: KernelTrace, st: SiteStats) -> ReferenceReport | None:
    k = st.site.static
    return None if k is None else t.analysis.global_references[k]


def sampling_text(t: KernelTrace) -> str:
    s = t.sampling
    text = (f"traced {s.blocks} of {s.blocks_total} blocks; {s.threads} of "
            f"{s.threads_total} threads")
    if t.capped:
        text += (f"; the first {s.cap} executions of each reference per thread (threads ran "
                 "more)")
    return text


def _elements(value: float, size: int) -> str:
    v = value / size
    return str(int(v)) if v == int(v) else f"{v:.2f}"


def _histogram(st: SiteStats) -> str:
    return ", ".join(f"{s}: {share:.0%}" for s, share in st.histogram) or "-"


Summary = list[tuple[KernelTrace, list[SiteStats]]]


def summarise(traces: list[KernelTrace]) -> Summary:
    """Every trace with Algorithm 1's statistics of its static ids."""
    return [(t, algorithm1(t.sites, t.records)) for t in traces]


def _figure(c: Counters | None) -> str:
    return "-" if c is None or c.per_request is None else f"{c.per_request:.2f}"


def comparison_text(comparisons: list[Comparison]) -> str:
    """`loads 16.50 sectors/request (trace 16.50 as issued, 12.33 all) agree; stores ...`"""
    parts = []
    for c in comparisons:
        verdict = {True: "agree", False: "DISAGREE", None: ""}[c.agrees]
        parts.append(f"{c.kind}s {_figure(c.hardware)} sectors/request (trace "
                     f"{_figure(c.trace)} as issued, {_figure(c.trace_all)} all) {verdict}"
                     .rstrip())
    return "; ".join(parts)


# (the original kernel's launch, its counters compared with the trace, why there are none)
HardwareResult = tuple[Measured | None, list[Comparison] | None, str | None]


def hardware_result(t: KernelTrace, hardware: Hardware) -> HardwareResult:
    """The kernel's hardware counters set beside its trace, or why there are none."""
    m = hardware.of(t.kernel)
    problem = t.error or hardware.problem(m)
    if problem:
        return None, None, problem
    return m, compare(t.sites, t.records, m), None


def hardware_text(hardware: Hardware, result: HardwareResult) -> str:
    """The kernel's hardware line of the reports."""
    m, comparisons, problem = result
    if problem:
        return f"hardware counters {'unavailable' if hardware.error else 'missing'}: {problem}"
    return (f"hardware (ncu, original kernel, grid {m.grid} block {m.block}): "
            f"{comparison_text(comparisons)}")


def _hardware_diagnostics(summary: Summary, hardware: Hardware,
                          results: list[HardwareResult]) -> list[Diagnostic]:
    if hardware.error:
        return [Diagnostic("note", "hardware-unavailable",
                           f"hardware counters unavailable: {hardware.error}")]
    return [Diagnostic("note", "hardware-counters", f"kernel '{t.kernel}': "
                       f"{hardware_text(hardware, r)}", t.analysis.kernel.location, t.kernel)
            for (t, _), r in zip(summary, results) if not t.error]


def diagnostics(summary: Summary, hardware: Hardware | None = None,
                results: list[HardwareResult] | None = None) -> list[Diagnostic]:
    """The reports' diagnostics; with `hardware`, its notes first (`results`: the kernels'
    hardware results when the caller has them already)."""
    out = []
    if hardware is not None:
        results = results or [hardware_result(t, hardware) for t, _ in summary]
        out = _hardware_diagnostics(summary, hardware, results)
    for t, stats in summary:
        where = t.analysis.kernel.location
        if t.error:
            out.append(Diagnostic("error", "trace-failed", f"kernel '{t.kernel}' not traced: "
                                  f"{t.error}", where, t.kernel))
            continue
        if t.sampling.blocks < t.sampling.blocks_total or t.capped:
            out.append(Diagnostic("note", "trace-sampled", f"kernel '{t.kernel}': "
                                  f"{sampling_text(t)}", where, t.kernel))
        for st in stats:
            if not st.coalesced:
                size = st.site.element_size
                out.append(Diagnostic(
                    "warning", "uncoalesced",
                    f"uncoalesced {st.site.kind} {st.site.text} in kernel '{t.kernel}' (traced"
                    f"{', irregular' if st.site.irregular else ''}): stride "
                    f"{_elements(st.min_stride, size)}/{_elements(st.avg_stride, size)}/"
                    f"{_elements(st.max_stride, size)} elements (min/avg/max), "
                    f"{st.sectors_avg:.1f} sectors per request (ideal {st.ideal_avg:.1f}); "
                    f"{st.advice}", st.site.location, t.kernel))
    return out


def _reorganisation(irregular: dict | None, kernel: str, text: str) -> str | None:
    """What reorganises an irregular reference (optimize/reorganise.summary), in words."""
    for r in (irregular or {}).get(kernel, {}).get("references", ()):
        if "".join(r["reference"].split()) == "".join(text.split()):
            how = r["reorganisation"] or f"none ({r['why_not']})"
            return f"{r['through']}; reorganisation: {how}"
    return None


def render_text(summary: Summary, hardware: Hardware | None = None,
                irregular: dict | None = None) -> str:
    """`irregular`: kernel -> the summary of its irregular references' plan."""
    out = []
    for t, stats in summary:
        result = None if hardware is None else hardware_result(t, hardware)
        out.append(f"kernel {t.kernel}  ({t.analysis.kernel.location})")
        if t.error:
            out += [f"  not traced: {t.error}", ""]
            continue
        out.append(f"  {t.executor}: grid {'x'.join(map(str, t.grid))}, block "
                   f"{'x'.join(map(str, t.block))}; {sampling_text(t)}; "
                   f"{len(t.records)} records")
        rows, notes = [], []
        for st in stats:
            s, size = st.site, st.site.element_size
            rows.append([s.text + (" *" if s.irregular else ""), s.kind,
                         f"{s.location.line}:{s.location.col}", str(st.requests),
                         "/".join(_elements(v, size) for v in
                                  (st.min_stride, st.avg_stride, st.max_stride)),
                         f"{st.sectors_avg:.1f}/{st.ideal_avg:.1f}",
                         _elements(st.largest_gap, size),
                         st.verdict.upper() if not st.coalesced else st.verdict,
                         static_verdict(_static(t, st), t.block) or "-"])
            if st.advice:
                notes.append(f"  {s.text} ({s.kind}): {st.advice}")
            if s.irregular:
                notes.append(f"  {s.text} ({s.kind}) is irregular; strides (elements: share): "
                             f"{_histogram(st)}")
                how = _reorganisation(irregular, t.kernel, s.text)
                if how:
                    notes.append(f"  {s.text} ({s.kind}): {how}")
        if rows:
            out += table(rows, ["reference", "type", "line:col", "requests",
                                 "stride min/avg/max", "sectors/ideal", "largest gap",
                                 "verdict", "static"])
        if hardware is not None and not hardware.error:
            notes.append(f"  {hardware_text(hardware, result)}")
        out += notes + [""]
    if hardware is not None and hardware.error:
        out += [f"hardware counters unavailable: {hardware.error}", ""]
    diags = diagnostics(summary)          # the hardware lines are in the kernels' notes
    if diags:
        out.append("diagnostics:")
        out += [str(d) for d in diags]
    return "\n".join(out) + "\n"


def site(t: KernelTrace, st: SiteStats) -> dict[str, Any]:
    s, size = st.site, st.site.element_size
    static = _static(t, st)
    verdict = static_verdict(static, t.block)
    return {
        "sid": s.sid, "array": s.array, "text": s.text, "location": location(s.location),
        "type": s.kind, "element_bytes": size, "irregular": s.irregular,
        "requests": st.requests, "accesses": st.accesses,
        "stride_bytes": {"min": st.min_stride, "avg": st.avg_stride, "max": st.max_stride},
        "stride_elements": {"min": st.min_stride / size, "avg": st.avg_stride / size,
                            "max": st.max_stride / size},
        "stride_histogram": [{"elements": e, "share": share} for e, share in st.histogram],
        "sectors_per_request": {"min": st.sectors_min, "avg": st.sectors_avg,
                                "max": st.sectors_max, "ideal_avg": st.ideal_avg},
        "largest_gap_bytes": st.largest_gap,
        "coalesced": st.coalesced, "broadcast": st.broadcast, "verdict": st.verdict,
        "advice": st.advice,
        "static": None if static is None else {
            "statement": static.statement.name, "verdict": verdict,
            "sectors_per_request": static.sectors, "ideal_sectors": static.ideal_sectors},
        "agrees": None if verdict is None else verdict == st.verdict,
    }


def _counters(c: Counters | None) -> dict[str, Any] | None:
    return None if c is None else {"sectors": c.sectors, "requests": c.requests,
                                   "sectors_per_request": c.per_request}


def kernel_hardware(result: HardwareResult) -> dict[str, Any]:
    """The kernel's `hardware` object of the JSON report (docs/trace-json.md)."""
    m, comparisons, problem = result
    if problem:
        return {"error": problem}
    out: dict[str, Any] = {"error": None, "grid": m.grid, "block": m.block}
    for c in comparisons:
        out[c.kind] = {"hardware": _counters(c.hardware), "trace": _counters(c.trace),
                       "trace_all": _counters(c.trace_all), "agrees": c.agrees}
    return out


def kernel(t: KernelTrace, stats: list[SiteStats],
           hardware: HardwareResult | None = None, irregular: dict | None = None
           ) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.kernel, "location": location(t.analysis.kernel.location),
                           "executor": t.executor, "error": t.error}
    if t.error:
        return out
    s = t.sampling
    out.update({
        "grid": list(t.grid), "block": list(t.block),
        "sampling": {"blocks": s.blocks, "blocks_total": s.blocks_total,
                     "threads": s.threads, "threads_total": s.threads_total,
                     "dynamic_cap": s.cap, "capped": t.capped,
                     "sampled": s.blocks < s.blocks_total or t.capped,
                     "text": sampling_text(t)},
        "records": len(t.records),
        "references": [site(t, st) for st in stats],
    })
    if hardware is not None:
        out["hardware"] = kernel_hardware(hardware)
    if irregular and t.kernel in irregular:
        out["irregular"] = irregular[t.kernel]
    return out


def render_json(path: str, summary: Summary, hardware: Hardware | None = None,
                irregular: dict | None = None) -> dict[str, Any]:
    results = None if hardware is None else [hardware_result(t, hardware) for t, _ in summary]
    out = {"schema": "polycoal-trace", "schema_version": SCHEMA_VERSION,
           "tool": {"name": "polycoal", "version": __version__}, "file": path,
           "kernels": [kernel(t, stats, r, irregular) for (t, stats), r in
                       zip(summary, results or [None] * len(summary))],
           "diagnostics": [diagnostic(d) for d in diagnostics(summary, hardware, results)]}
    if hardware is not None:
        out["hardware"] = {"tool": hardware.tool, "error": hardware.error,
                           "metrics": sorted(METRICS.values())}
    return out


def render_sarif(path: str, summary: Summary, hardware: Hardware | None = None
                 ) -> dict[str, Any]:
    return sarif.document(diagnostics(summary, hardware), path, RULES)
