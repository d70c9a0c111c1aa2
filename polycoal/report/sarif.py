"""SARIF 2.1.0 rendering, for editors and code-scanning services."""

from __future__ import annotations

import os
from typing import Any

from polycoal import __version__
from polycoal.analysis import ProgramAnalysis
from polycoal.diagnostics import Diagnostic
from polycoal.report.findings import program_diagnostics

_RULES = {
    "race": "Threads of one launch access the same element and at least one writes.",
    "uncoalesced": "A warp's global-memory request touches more 32-byte sectors than needed.",
    "outside-model": "A construct outside the affine polyhedral model.",
    "suggestion": "A restructuring that would improve coalescing.",
    "syntax-error": "A kernel or device function has a syntax error (the C++ compiler's verdict).",
    "unsupported-construct": "A construct polycoal does not parse (C++ in kernels, templates).",
    "missing-header": "A header was not found and was preprocessed as empty.",
    "dynamic-geometry": "A launch's block shape is not a compile-time constant.",
    "no-launch": "A kernel without a launch site in the file.",
}
_LEVEL = {"error": "error", "warning": "warning", "note": "note"}


def render(pa: ProgramAnalysis) -> dict[str, Any]:
    return document(program_diagnostics(pa), pa.program.path, _RULES)


def document(diagnostics: list[Diagnostic], path: str, rules: dict[str, str]
             ) -> dict[str, Any]:
    """A SARIF log of one run: every diagnostic a result, `rules` id -> description."""
    results = []
    for d in diagnostics:
        result: dict[str, Any] = {"ruleId": d.code, "level": _LEVEL[d.severity],
                                  "message": {"text": d.message}}
        if d.location is not None:
            result["locations"] = [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(d.location.file)},
                "region": {"startLine": d.location.line, "startColumn": d.location.col}}}]
        if d.kernel:
            result["properties"] = {"kernel": d.kernel}
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "polycoal", "version": __version__,
                "informationUri": "https://github.com/polycoal/polycoal",
                "rules": [{"id": k, "shortDescription": {"text": v}} for k, v in rules.items()],
            }},
            "artifacts": [{"location": {"uri": _uri(path)}}],
            "results": results,
        }],
    }


def _uri(path: str) -> str:
    return path.replace(os.sep, "/")
