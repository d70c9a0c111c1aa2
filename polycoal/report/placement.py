"""`polycoal place`'s report: per kernel, each array it reads, the memory chosen, the
predicted cost in each memory (or why it cannot go there), and the search used."""

from __future__ import annotations

from polycoal.model.memory_spec import MemorySpec


def _gain(k) -> float | None:
    total = k.total()
    return k.baseline / total if k.arrays and total > 0 else None


def _measured_line(m) -> str:
    if m.placed_ms is None:
        return f"  measured: {m.message}"
    fill = f", fill {m.fill_ms:.4f} ms x {m.fill_share:.2f} of launches" if m.fill_ms else ""
    return (f"  measured: {m.original_ms:.4f} ms as written, {m.placed_ms:.4f} ms placed"
            f"{fill}: x{m.speedup:.2f}; {m.message}")


def _measured_json(m) -> dict:
    return {"ok": m.ok, "message": m.message, "original_ms": m.original_ms,
            "placed_ms": m.placed_ms, "fill_ms": m.fill_ms, "fill_share": m.fill_share,
            "speedup": m.speedup, "arrays": m.arrays}


def placement_text(spec: MemorySpec, result, measured=()) -> str:
    measures = {m.kernel: m for m in measured}
    lines = [f"memory specification: {spec.name} "
             f"({', '.join(m.name for m in spec.memories)})"]
    for k in result.kernels:
        gain = _gain(k)
        head = f"kernel '{k.kernel}': " + (
            f"placed ({k.method}, predicted {gain:.2f}x)" if k.applied else
            f"unchanged: {k.reason}")
        lines.append(head)
        if k.kernel in measures:
            lines.append(_measured_line(measures[k.kernel]))
        if k.traced:
            lines.append(f"  addresses of its irregular reads: {k.traced}")
        for a in k.arrays:
            costs = ", ".join(f"{o.memory} {o.cost:.0f}" if o.cost is not None else
                              f"{o.memory}: {o.why_not}" for o in a.options)
            where = f"{a.reads.footprint} bytes" if a.reads.footprint is not None else \
                "size unknown"
            traced = " traced" if any(r.traced for r in a.reads.references) else ""
            lines.append(f"  {a.reads.array} ({a.reads.element_type}, {where}, "
                         f"{100 * a.reads.uniform:.0f}% of{traced} requests one address): "
                         f"{a.chosen}{' (forced)' if a.forced else ''}; predicted {costs}")
    for d in result.diagnostics:
        lines.append(str(d))
    return "\n".join(lines) + "\n"


def placement_json(program, spec: MemorySpec, result, measured=()) -> dict:
    measures = {m.kernel: _measured_json(m) for m in measured}
    return {
        "schema": "polycoal-place", "schema_version": 1, "file": program.path,
        "memory_spec": spec.name,
        "kernels": [{
            "name": k.kernel, "applied": k.applied, "reason": k.reason, "search": k.method,
            "trace": k.traced, "measured": measures.get(k.kernel),
            "predicted_gain": _gain(k),
            "arrays": [{
                "array": a.reads.array, "element_type": a.reads.element_type,
                "footprint_bytes": a.reads.footprint, "broadcast_share": a.reads.uniform,
                "traced": any(r.traced for r in a.reads.references),
                "chosen": a.chosen, "forced": a.forced,
                "options": [{"memory": o.memory, "predicted_cost": o.cost,
                             "why_not": o.why_not} for o in a.options]}
                for a in k.arrays]}
            for k in result.kernels],
        "diagnostics": [str(d) for d in result.diagnostics]}
