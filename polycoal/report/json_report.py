"""The JSON rendering of an analysis; its schema is documented in docs/analysis-json.md.

The schema is versioned (`schema_version`); fields are only ever added within a version.
"""

from __future__ import annotations

from typing import Any

from polycoal import __version__
from polycoal.analysis import KernelAnalysis, ProgramAnalysis
from polycoal.analysis.coalescing import ReferenceReport
from polycoal.diagnostics import Diagnostic, Location
from polycoal.frontend.dialect import cuda_dialect
from polycoal.report.findings import program_diagnostics

SCHEMA_VERSION = 1


def location(loc: Location | None) -> dict[str, Any] | None:
    return None if loc is None else {"file": loc.file, "line": loc.line, "column": loc.col}


def diagnostic(d: Diagnostic) -> dict[str, Any]:
    return {"severity": d.severity, "code": d.code, "message": d.message,
            "location": location(d.location), "kernel": d.kernel}


def _poly(p) -> str | None:
    return None if p is None else str(p)


def reference(r: ReferenceReport) -> dict[str, Any]:
    a = r.access
    axes = cuda_dialect().axes
    return {
        "array": a.array, "text": a.text, "location": location(a.location),
        "statement": r.statement.name,
        "type": "load" if r.is_load else "store", "space": a.space, "atomic": a.atomic,
        "element_type": a.element_type, "element_bytes": a.element_size,
        "subscripts": None if a.subscripts is None else [str(s) for s in a.subscripts],
        "affine": a.reason is None and a.subscripts is not None,
        "reason": a.reason,
        "stride_elements": {x: _poly(r.strides[x]) for x in axes},
        "stride_bytes": {x: _poly(None if r.strides[x] is None
                                  else r.strides[x] * a.unit_bytes) for x in axes},
        "member": a.member, "struct": a.struct,
        "class": dict(r.classes), "c": list(r.c), "u": list(r.u), "z": list(r.z),
        "sectors_per_request": r.sectors, "ideal_sectors": r.ideal_sectors,
        "coalesced": r.coalesced,
        "count": {"value": r.count.value, "formula": str(r.count.formula),
                  "exact": r.count.exact},
        "note": r.note,
    }


def kernel(ka: KernelAnalysis) -> dict[str, Any]:
    k = ka.kernel
    m = ka.model
    status = "unparsed" if m is None else ("affine" if m.is_affine else "outside-model")
    total, unco, exact = ka.totals() if m is not None else (None, None, False)
    out: dict[str, Any] = {
        "name": k.name, "location": location(k.location), "status": status,
        "unsupported": k.unsupported,
        "parameters": [{"name": p.name, "type": p.type, "pointer": p.is_pointer,
                        "restrict": p.is_restrict, "const": p.is_const} for p in k.parameters],
    }
    if m is None:
        return out
    out.update({
        "thread_dims": [{"name": d.name, "axis": d.axis, "kind": d.kind,
                         "extent": str(d.extent)} for d in m.thread_dims],
        "used_axes": sorted(m.used_axes),
        "block": list(m.block_shape) if m.block_shape else None,
        "parameter_values": dict(m.parameter_values),
        "loop_depth": m.depth,
        "statements": [{"name": s.name, "text": s.text, "location": location(s.location),
                        "loops": [l.source_name for l in s.loops], "exact": s.exact}
                       for s in m.statements],
        "outside_model": [{"construct": o.construct, "location": location(o.location),
                           "detail": o.detail, "fallback": o.fallback} for o in m.outside],
        "references": [reference(r) for r in ka.global_references],
        "totals": {"accesses": total, "uncoalesced": unco, "exact": exact},
        "races": [{"array": r.array, "kind": r.kind, "thread_dims": list(r.thread_dims),
                   "statements": [r.first[0].name, r.second[0].name],
                   "lines": [r.first[1].location.line, r.second[1].location.line]}
                  for r in ka.races],
        "dependences": [{"kind": d.kind, "array": d.array, "source": d.source,
                         "sink": d.sink, "relation": str(d.relation)} for d in ka.dependences],
        "loops": [{"variable": l.loop.source_name, "line": l.loop.location.line,
                   "depth": l.depth, "parallel": l.parallel, "reduction": l.reduction}
                  for l in ka.loops],
        "suggestions": {"best_x": ka.best_x, "axis_costs": ka.axis_costs,
                        "text": list(ka.suggestions)},
    })
    return out


def render(pa: ProgramAnalysis, layouts: list[dict] = (), irregular: list[dict] = ()
           ) -> dict[str, Any]:
    names = {ka.kernel.name for ka in pa.kernels}
    return {
        "schema": "polycoal-analysis", "schema_version": SCHEMA_VERSION,
        "tool": {"name": "polycoal", "version": __version__},
        "file": pa.program.path,
        "kernels": [kernel(ka) for ka in pa.kernels],
        "launches": [{"kernel": l.kernel, "location": location(l.location),
                      "function": l.function, "grid": l.grid, "block": l.block,
                      "shared_bytes": l.shared_bytes, "stream": l.stream,
                      "grid_shape": list(l.grid_shape) if l.grid_shape else None,
                      "block_shape": list(l.block_shape) if l.block_shape else None,
                      "arguments": l.arguments}
                     for l in pa.program.launches if l.kernel in names],
        "struct_arrays": list(layouts),
        "irregular": list(irregular),
        "diagnostics": [diagnostic(d) for d in program_diagnostics(pa)],
    }
