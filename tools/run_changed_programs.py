#!/usr/bin/env python3
"""The programs of a corpus sweep that polycoal changed, built and run beside their
originals on the GPU with their Makefiles' `run` arguments (issue 32's acceptance).

    # here: copy each changed program twice (as written, and with polycoal's output in
    # place of its changed sources) into an ignored folder of the repository
    python tools/run_changed_programs.py prepare SWEEP_DIR/sweep.json ROOT... --into .corpus-run
    # on the device (device tool; carry .corpus-run): build both with make, run both
    python3 tools/run_changed_programs.py run .corpus-run --out $OUT/changed.json
    # here: the table
    python tools/run_changed_programs.py table changed.json

Third-party sources are never committed: `.corpus-run/` is ignored. `prepare` runs
`polycoal transform` again for each changed source, writing the output beside the input
(so its includes stay as written) before moving it into the second copy. `run` builds
each copy with `make ARCH=sm_90` (CUDA 13: `-DcudaThreadSynchronize=cudaDeviceSynchronize`
through EXTRA_CFLAGS), runs `make run` (a time limit each), and compares the two outputs
line by line with the numbers of lines that report times masked; the time is the first
number of the first line mentioning a time (the program's own report), and the run's
wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIME_LINE = re.compile(r"time|elapsed|throughput|bandwidth|GB/s|GFLOP|ms\b|\bus\b|sec",
                       re.I)
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def program_dir(file: Path) -> Path:
    """The program's folder: HeCBench's src/<name>-cuda, Rodinia's cuda/<name>."""
    parts = file.parts
    for marker in ("src", "cuda"):
        if marker in parts:
            k = len(parts) - 1 - parts[::-1].index(marker)
            if k + 1 < len(parts) - 1:
                return Path(*parts[:k + 2])
    return file.parent


def _relocated(flags: list[str], directory: Path, copy: Path) -> list[str]:
    """The build's flags with the paths under the program's folder or beside it moved to
    where prepare copies them (copy is into/<name>/<side>; a sibling is
    into/<name>/<sibling>, where `../sibling` from the copy reaches)."""
    out = []
    for flag, value in zip(flags[::2], flags[1::2]):
        path = Path(value)
        if flag in ("-I", "-include") and path.is_absolute():
            if path == directory or directory in path.parents:
                value = str(copy / path.relative_to(directory))
            elif path.parent == directory.parent or directory.parent in path.parents:
                value = str(copy.parent / path.relative_to(directory.parent))
        out += [flag, value]
    return out


def prepare(sweep: Path, roots: list[Path], into: Path) -> int:
    records = json.loads(sweep.read_text())
    changed = [r for r in records if r.get("changed")]
    by_program: dict[Path, list[Path]] = {}
    flags: dict[Path, list[str]] = {}       # a sweep with --build-flags: the Makefile's
    for r in changed:
        source = next((root.parent / r["file"] for root in roots
                       if (root.parent / r["file"]).is_file()), None)
        if source is None:
            print(f"not found: {r['file']}", file=sys.stderr)
            continue
        by_program.setdefault(program_dir(source), []).append(source)
        flags[source] = r.get("flags", [])
    into.mkdir(parents=True, exist_ok=True)
    programs = []
    for directory, sources in sorted(by_program.items()):
        if not (directory / "Makefile").is_file():
            print(f"no Makefile: {directory}", file=sys.stderr)
            continue
        name = directory.name
        for side in ("orig", "new"):
            target = into / name / side
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(directory, target, symlinks=False,
                            ignore=shutil.ignore_patterns("*.o", ".git"))
        # what programs reach by relative paths: HeCBench's src/include, Rodinia's
        # common/make.config and its data (copies at into/<name>/<side>: ../../x is into/x)
        for shared, there in ((directory.parent / "include", into / "include"),
                              (directory.parent.parent / "common", into / "common"),
                              (directory.parent.parent / "data" / name,
                               into / "data" / name)):
            if shared.is_dir() and not there.exists():
                shutil.copytree(shared, there)
        # folders beside the program its Makefile's -I names (`-I../openmp-omp`), where
        # that path reaches from a copy (into/<name>/<side>/../openmp-omp)
        for source in sources:
            for flag, value in zip(flags[source][::2], flags[source][1::2]):
                beside = Path(value)
                if flag == "-I" and beside.parent == directory.parent and beside.is_dir() \
                        and not (into / name / beside.name).exists():
                    shutil.copytree(beside, into / name / beside.name)
        done = []
        for source in sources:
            rel = source.relative_to(directory)
            beside = into / name / "orig" / rel.parent / (rel.name + ".pc.cu")
            r = subprocess.run([sys.executable, "-m", "polycoal", "transform",
                                str(into / name / "orig" / rel), "-I",
                                str(into / name / "orig" / rel.parent),
                                *_relocated(flags[source], directory, into / name / "orig"),
                                "-o", str(beside)],
                               capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
            if beside.exists():
                shutil.move(beside, into / name / "new" / rel)
                done.append(str(rel))
            else:
                print(f"{source}: exit {r.returncode}", file=sys.stderr)
        if done:
            programs.append({"program": name, "sources": done})
    (into / "programs.json").write_text(json.dumps(programs, indent=1))
    print(f"{len(programs)} programs in {into}")
    return 0


def _masked(stdout: str) -> list[str]:
    return [NUMBER.sub("#", line) if TIME_LINE.search(line) else line.strip()
            for line in stdout.splitlines() if line.strip()]


def _reported_time(stdout: str) -> float | None:
    for line in stdout.splitlines():
        if TIME_LINE.search(line):
            m = NUMBER.search(line.split(":")[-1]) or NUMBER.search(line)
            if m:
                return float(m.group())
    return None


def _has_run_target(directory: Path) -> bool:
    makefile = directory / "Makefile"
    return makefile.is_file() and re.search(r"^run\s*:", makefile.read_text(
        errors="replace"), re.M) is not None


def _make(directory: Path, target: str, timeout: int) -> tuple[int, str, float]:
    """`make` (target "": build; "run": the program's run, by its Makefile's run target
    or, as Rodinia writes it, its `run` script)."""
    started = time.monotonic()
    flags = "-DcudaThreadSynchronize=cudaDeviceSynchronize"
    if target == "run" and not _has_run_target(directory) and (directory / "run").is_file():
        command = ["bash", "run"]
    else:
        command = ["make", "-s", *([target] if target else []),
                   "ARCH=sm_90", f"EXTRA_CFLAGS={flags}", "-j2"]
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                           cwd=directory)
        return r.returncode, r.stdout + r.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        return -1, out + "\n[timeout]", time.monotonic() - started


def run(into: Path, out: Path, timeout: int) -> int:
    import concurrent.futures
    programs = json.loads((into / "programs.json").read_text())
    builds = [(p["program"], side) for p in programs for side in ("orig", "new")]
    # builds in parallel (the CPUs), runs one at a time (the GPU)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        built = dict(zip(builds, pool.map(
            lambda b: _make(into / b[0] / b[1], "", 540), builds)))
    results = []
    for p in programs:
        row = {"program": p["program"], "sources": p["sources"]}
        for side in ("orig", "new"):
            directory = into / p["program"] / side
            rc, log, _ = built[(p["program"], side)]
            row[f"{side}_build"] = rc
            if rc != 0:
                row[f"{side}_log"] = log[-1500:]
                continue
            rc, log, wall = _make(directory, "run", timeout)
            row[f"{side}_rc"], row[f"{side}_wall_s"] = rc, round(wall, 3)
            row[f"{side}_time"] = _reported_time(log)
            row[f"{side}_out"] = log[-3000:]
        if row.get("orig_rc") == 0 and row.get("new_rc") == 0:
            a, b = _masked(row["orig_out"]), _masked(row["new_out"])
            row["same_output"] = a == b
            row["differing"] = [(x, y) for x, y in zip(a, b) if x != y][:5]
        results.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith(("_out", "_log"))}),
              flush=True)
    out.write_text(json.dumps(results, indent=1))
    return 0


def table(path: Path) -> int:
    rows = json.loads(path.read_text())
    print("| program | changed sources | builds | output | original | polycoal | "
          "wall original / polycoal (s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        builds = "yes" if r.get("orig_build") == 0 and r.get("new_build") == 0 else \
            f"orig {r.get('orig_build')}, new {r.get('new_build')}"
        same = {True: "same", False: "DIFFERS", None: "not run"}[r.get("same_output")]
        print(f"| {r['program']} | {', '.join(r['sources'])} | {builds} | {same} | "
              f"{r.get('orig_time')} | {r.get('new_time')} | "
              f"{r.get('orig_wall_s')} / {r.get('new_wall_s')} |")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("sweep", type=Path)
    a.add_argument("roots", nargs="+", type=Path)
    a.add_argument("--into", type=Path, default=Path(".corpus-run"))
    b = sub.add_parser("run")
    b.add_argument("into", type=Path)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--timeout", type=int, default=120)
    c = sub.add_parser("table")
    c.add_argument("results", type=Path)
    args = p.parse_args(argv)
    if args.command == "prepare":
        return prepare(args.sweep, args.roots, args.into)
    if args.command == "run":
        return run(args.into, args.out, args.timeout)
    return table(args.results)


if __name__ == "__main__":
    sys.exit(main())
