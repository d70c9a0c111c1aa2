"""Diagnostics derived from an analysis: races, constructs outside the model,
uncoalesced references, suggestions. Every renderer (text, JSON, SARIF) uses these."""

from __future__ import annotations

from polycoal.analysis import KernelAnalysis, ProgramAnalysis
from polycoal.analysis.coalescing import ReferenceReport
from polycoal.analysis.dependences import condition_text, racing_values
from polycoal.diagnostics import Diagnostic


def stride_text(r: ReferenceReport, axis: str) -> str:
    s = r.strides.get(axis)
    if s is None:
        return "?"
    return str(s)


def _race_diagnostics(ka: KernelAnalysis) -> list[Diagnostic]:
    out = []
    by_array: dict[str, list] = {}
    for race in ka.races:
        by_array.setdefault(race.array, []).append(race)
    model = ka.model
    dim_axes = {d.name: d for d in model.thread_dims} if model else {}
    for array, races in by_array.items():
        lines = sorted({r.first[1].location.line for r in races} |
                       {r.second[1].location.line for r in races})
        kinds = sorted({r.kind for r in races})
        dims = sorted({d for r in races for d in r.thread_dims})
        axes = ", ".join(f"{d} (axis {dim_axes[d].axis})" if d in dim_axes else d for d in dims)
        first = min((r.first[1] for r in races), key=lambda a: a.location.line)
        unused = [d for d in dims if d in dim_axes and dim_axes[d].axis not in model.used_axes]
        why = ""
        if unused:
            why = (" The kernel never reads thread axis "
                   + ", ".join(sorted({dim_axes[d].axis for d in unused}))
                   + ", but the launch has more than one thread along it: every thread's "
                   "work is done by several threads at once.")
        when = racing_values(races)
        if when is not None:
            text = condition_text(when)
            why += (f" This happens only when {text} (for example when a bound is larger "
                    "than the row length it indexes).")
        out.append(Diagnostic(
            "error", "race",
            f"race between threads in kernel '{ka.kernel.name}' on '{array}' "
            f"({'; '.join(kinds)}; lines {', '.join(map(str, lines))}): instances of "
            f"different threads, differing in {axes}, access the same element and at least "
            f"one writes.{why}", first.location, ka.kernel.name))
    return out


def kernel_diagnostics(ka: KernelAnalysis) -> list[Diagnostic]:
    name = ka.kernel.name
    out = list(ka.diagnostics)
    if ka.kernel.ast is None and ka.kernel.is_template:
        out.append(Diagnostic("warning", "unsupported-construct",
                              f"kernel '{name}': {ka.kernel.unsupported}; left unchanged",
                              ka.kernel.location, name))
    if ka.model is None:
        return out
    out += _race_diagnostics(ka)
    for o in ka.model.outside:
        out.append(Diagnostic("warning", "outside-model",
                              f"kernel '{name}' is outside the affine model: {o.construct}: "
                              f"{o.detail}; polycoal can still do: {o.fallback}",
                              o.location, name))
    for r in ka.global_references:
        if r.coalesced is False:
            kind = "load" if r.is_load else "store"
            out.append(Diagnostic(
                "warning", "uncoalesced",
                f"uncoalesced {kind} {r.access.text} in kernel '{name}': stride "
                f"{stride_text(r, 'x')} elements ({_bytes(r)} bytes) between neighbouring "
                f"threads along x, {r.sectors} sectors per warp request (ideal "
                f"{r.ideal_sectors}), executed {r.count} times", r.access.location, name))
    for text in ka.suggestions:
        out.append(Diagnostic("note", "suggestion", f"kernel '{name}': {text}",
                              ka.kernel.location, name))
    return out


def _bytes(r: ReferenceReport) -> str:
    s = r.strides.get("x")
    if s is None:
        return "?"
    return str(s * r.access.unit_bytes)


def program_diagnostics(pa: ProgramAnalysis) -> list[Diagnostic]:
    out = list(pa.program.diagnostics)
    analysed = {ka.kernel.name for ka in pa.kernels}
    for launch in pa.program.launches:
        if launch.kernel in analysed and launch.block_shape is None:
            out.append(Diagnostic("note", "dynamic-geometry",
                                  f"launch of '{launch.kernel}': block '{launch.block}' is not "
                                  "a compile-time constant; strides are priced with a 32-thread "
                                  "warp along x", launch.location, launch.kernel))
    for ka in pa.kernels:
        out += kernel_diagnostics(ka)
    seen = set()
    unique = []
    for d in out:
        key = (d.severity, d.code, d.message, d.location)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    if any(ka.kernel.name for ka in pa.kernels):
        names = {ka.kernel.name for ka in pa.kernels}
        unique = [d for d in unique if d.kernel is None or d.kernel in names]
    return unique
