"""Delta debugging (ddmin) over the lines of a failing program.

A candidate (the program with some lines removed) is interesting when the judge still
finds the same failure class with the same option set, and the candidate's original is
itself a valid program (it compiles and runs cleanly on the CPU path: the runner reports
anything else as generator-invalid, which is not interesting; and, when the run uses nvcc,
nvcc -c builds it, which also needs the declarations g++ finds in the CPU runtime's
header, printf's <cstdio> say). Checksums are compared for
the arrays whose checksum lines remain. Transform-level classes (tracebacks, validation,
exit statuses) do not judge outputs; only nvcc-error candidates run nvcc.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import replace

from polycoal.difftest.generator import Check, GeneratedProgram
from polycoal.difftest.runner import Runner
from polycoal.difftest.judging import Nvcc

TRANSFORM_CLASSES = ("traceback:", "validation-rejected", "exit-", "transform-timeout",
                     "no-output")


def candidate_program(program: GeneratedProgram, lines: list[str]) -> GeneratedProgram:
    source = "".join(lines)
    names = re.findall(r'checksum\("(\w+)"', source)
    checks = {n: program.checks.get(n, Check()) for n in names}
    return replace(program, source=source, checks=checks)


def make_predicate(runner: Runner, program: GeneratedProgram, cls: str, option: str):
    transform_only = cls.startswith(TRANSFORM_CLASSES)
    judge = Runner(runner.cpu, runner.nvcc if cls == "nvcc-error" else None, [option],
                   runner.transform_timeout, judge_outputs=not transform_only)
    whole = Nvcc("c", runner.nvcc.nvcc) if runner.nvcc is not None else None
    cache: dict[str, bool] = {}

    def builds(source: str) -> bool:
        if whole is None:
            return True
        with tempfile.TemporaryDirectory(prefix="polycoal-shrink-") as tmp:
            for name, text in program.files.items():      # headers it includes
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            return whole.check(source, tmp, "candidate") is None

    def interesting(lines: list[str]) -> bool:
        cand = candidate_program(program, lines)
        if not cand.checks and not transform_only:
            return False
        key = hashlib.sha256(cand.source.encode()).hexdigest()
        if key not in cache:
            result = judge.run_program(cand)
            cache[key] = any(f.cls == cls for f in result.failures) and \
                not any(f.cls == "generator-invalid" for f in result.failures) and \
                builds(cand.source)
        return cache[key]
    return interesting


def ddmin(lines: list[str], interesting, deadline: float) -> list[str]:
    """Zeller's ddmin over `lines` (complements first), then single lines, until no
    removal keeps the failure or the deadline passes."""
    n = 2
    while len(lines) >= 2 and time.monotonic() < deadline:
        size = max(1, len(lines) // n)
        chunks = [lines[i:i + size] for i in range(0, len(lines), size)]
        reduced = False
        for k in range(len(chunks)):
            if time.monotonic() >= deadline:
                break
            complement = [l for j, c in enumerate(chunks) if j != k for l in c]
            if interesting(complement):
                lines = complement
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(lines):
                break
            n = min(len(lines), 2 * n)
    k = 0
    while k < len(lines) and time.monotonic() < deadline:
        cand = lines[:k] + lines[k + 1:]
        if interesting(cand):
            lines = cand
        else:
            k += 1
    return lines


def shrink_program(runner: Runner, program: GeneratedProgram, cls: str, option: str,
                   budget: float = 120.0) -> GeneratedProgram | None:
    """The smallest program found within `budget` seconds that still fails with `cls`
    under `option`, or None when even the whole program no longer does."""
    interesting = make_predicate(runner, program, cls, option)
    lines = program.source.splitlines(keepends=True)
    if not interesting(lines):
        return None
    return candidate_program(program, ddmin(lines, interesting, time.monotonic() + budget))


def shrink_saved(runner: Runner, path: str, cls: str, budget: float = 120.0,
                 log: bool = True) -> str | None:
    """Shrink the reproducer saved at `path` (main.save_reproducer) into <name>.min.cu
    (with its .json); returns that path, or None."""
    from polycoal.difftest.saved import load_program, program_metadata
    import json
    program = load_program(path)
    option = "default"
    txt = os.path.splitext(path)[0] + ".txt"
    if os.path.exists(txt):
        for line in open(txt):
            if line.startswith("options:"):
                option = line.split(":", 1)[1].split(",")[0].strip() or "default"
                break
    start = time.monotonic()
    small = shrink_program(runner, program, cls, option, budget)
    if small is None:
        if log:
            print(f"shrink {path}: the failure does not reproduce", flush=True)
        return None
    out = os.path.splitext(path)[0] + ".min.cu"
    with open(out, "w") as f:
        f.write(small.source)
    with open(os.path.splitext(out)[0] + ".json", "w") as f:
        json.dump(dict(program_metadata(small), failure=cls, options=[option]), f, indent=1)
    if log:
        print(f"shrink {path}: {len(program.source.splitlines())} -> "
              f"{len(small.source.splitlines())} lines in {time.monotonic() - start:.0f} s "
              f"({out})", flush=True)
    return out
