"""The readable text rendering: one table per kernel, then the diagnostics."""

from __future__ import annotations

from polycoal.analysis import KernelAnalysis, ProgramAnalysis
from polycoal.report.findings import program_diagnostics, stride_text


def table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[k]) for r in rows + [header]) for k in range(len(header))]
    fmt = lambda r: "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return [fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def kernel_text(ka: KernelAnalysis) -> list[str]:
    k = ka.kernel
    m = ka.model
    lines = [f"kernel {k.name}  ({k.location})"]
    if m is None:
        lines.append(f"  not analysed: {k.unsupported or 'does not parse'}")
        return lines
    dims = ", ".join(f"{d.name} < {d.extent}" for d in m.thread_dims) or "none"
    block = "x".join(map(str, m.block_shape)) if m.block_shape else "unknown"
    status = "affine" if m.is_affine else "outside the affine model"
    lines.append(f"  thread dims: {dims}; block {block}; loop depth {m.depth}; {status}")
    rows = []
    for r in ka.global_references:
        verdict = {True: "coalesced", False: "UNCOALESCED", None: "unknown"}[r.coalesced]
        rows.append([r.access.text, "load" if r.is_load else "store",
                     "/".join(stride_text(r, a) for a in ("x", "y", "z")),
                     " ".join(r.classes[a] for a in ("x", "y", "z")),
                     "-" if r.sectors is None else f"{r.sectors}/{r.ideal_sectors}",
                     str(r.count), verdict])
    if rows:
        lines += table(rows, ["reference", "type", "stride x/y/z (elements)", "class x y z",
                               "sectors/ideal", "count", "verdict"])
    total, unco, exact = ka.totals()
    if total is not None:
        lines.append(f"  accesses: {total} total, {unco} uncoalesced"
                     + ("" if exact else " (estimate)"))
    for lr in ka.loops:
        what = (f"reduction into {lr.reduction}" if lr.reduction
                else "parallel" if lr.parallel else "carries a dependence")
        lines.append(f"  loop {lr.loop.source_name} (line {lr.loop.location.line}): {what}")
    if ka.best_x:
        lines.append(f"  best x: {ka.best_x}")
    for s in ka.suggestions:
        lines.append(f"  suggestion: {s}")
    return lines


def struct_text(summary: dict) -> list[str]:
    """One array-of-structs type: the fields read together, each candidate layout's
    predicted requests and sectors, the choice; the wasted sectors of each field."""
    s = summary
    lines = [f"struct {s['struct']} ({s['bytes']} bytes; kernels "
             f"{', '.join(s['kernels'])}; device arrays {', '.join(s['arrays']) or '-'})"]
    for u in s["read_together"]:
        lines.append(f"  {u['kind']:5} together in {u['kernel']} (lines "
                     f"{', '.join(map(str, u['lines']))}): {{{', '.join(u['fields'])}}}, "
                     f"lane stride {u['lane_stride']} elements, {u['requests']:.3g} warp "
                     "requests")
    rows = [[c["kind"], f"{c['element_bytes']}", f"{c['requests']:.3g}", f"{c['sectors']:.3g}",
             f"{c['sectors_per_request']:.1f}", c["layout"]] for c in s["candidates"]]
    lines += ["  " + line for line in table(rows, ["layout", "bytes", "requests", "sectors",
                                                    "sectors/request", "groups"])]
    verdict = (f"  chosen: {s['chosen']}" if s["applied"] else
               f"  kept as it is: {s['reason']}")
    lines.append(verdict)
    for f in s["fields"]:
        if f["wasted"]:
            lines.append(f"  field {f['field']} in {f['kernel']}: {f['sectors']} sectors per "
                         f"request where {f['ideal']} would do ({f['wasted']} wasted)")
    return lines


def irregular_text(s: dict) -> list[str]:
    """A kernel's irregular references: how each is read, and its reorganisation."""
    lines = [f"irregular references of kernel {s['kernel']}"]
    rows = [[r["reference"], r["kind"], r["through"],
             r["reorganisation"] or f"none: {r['why_not']}"] for r in s["references"]]
    lines += ["  " + line for line in table(rows, ["reference", "kind", "read",
                                                    "reorganisation"])]
    for launch in s["launches"]:
        lines.append(f"  launch at line {launch['line']}: ~{launch['launches_per_run']:g} "
                     f"launches per run, ~{launch['builds_per_run']:g} builds of the copies"
                     + ("" if launch["reads_copies"] else f": reads the originals "
                        f"({launch['why_not']})"))
    return lines


def render(pa: ProgramAnalysis, layouts: list[dict] = (), irregular: list[dict] = ()) -> str:
    out: list[str] = []
    for ka in pa.kernels:
        out += kernel_text(ka) + [""]
    for summary in layouts:
        out += struct_text(summary) + [""]
    for summary in irregular:
        out += irregular_text(summary) + [""]
    diags = program_diagnostics(pa)
    if diags:
        out.append("diagnostics:")
        out += [str(d) for d in diags]
    return "\n".join(out) + "\n"
