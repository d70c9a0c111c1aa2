"""A generated program on disk, as the tester saves a reproducer: its metadata (seed,
family, checks, files, project) beside its source, and the program read back."""

from __future__ import annotations

import json
import os
import re

from polycoal.difftest.generator import Check, GeneratedProgram


def program_metadata(p: GeneratedProgram) -> dict:
    meta = {"seed": p.seed, "family": p.family, "variant": p.variant, "shape": p.shape,
            "must_keep": p.must_keep, "keep_exempt": p.keep_exempt,
            "checks": {k: [c.kind, c.terms, c.ctype] for k, c in p.checks.items()}}
    if p.constructs:
        meta["constructs"] = p.constructs
    if p.files:
        meta["files"] = sorted(p.files)             # beside the program
    if p.project is not None:
        meta["project"] = {k: v for k, v in p.project.items() if k != "files"}
        meta["project"]["files"] = sorted(p.project["files"])     # in <name>.project/
    return meta


def load_program(path: str) -> GeneratedProgram:
    with open(path) as f:
        source = f.read()
    meta_path = os.path.splitext(path)[0] + ".json"
    meta = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    checks = {k: Check(*v) for k, v in meta.get("checks", {}).items()}
    names = re.findall(r'checksum\("(\w+)"', source)
    checks = {n: checks.get(n, Check()) for n in names}
    files = {}
    for name in meta.get("files", []):
        with open(os.path.join(os.path.dirname(path), name)) as f:
            files[name] = f.read()
    project = None
    if "project" in meta:
        from polycoal.difftest.project import read_project
        project = read_project(os.path.splitext(path)[0] + ".project", meta["project"])
    return GeneratedProgram(meta.get("seed", 0), meta.get("family", "replay"), source, checks,
                            meta.get("must_keep", []), meta.get("shape", ""),
                            meta.get("variant", ""), meta.get("keep_exempt", {}),
                            meta.get("constructs", []), files, project)
