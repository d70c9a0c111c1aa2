#!/usr/bin/env python3
"""polycoal over a corpus of public CUDA sources, as a new user runs it (issue 32).

    python tools/sweep_corpus.py ROOT [ROOT ...] --out DIR [--jobs N] [--nvcc] [--limit N]
                                 [--build-flags]
    python tools/sweep_corpus.py --table DIR/sweep.json [--root FOLDER]

ROOT is a checkout of Rodinia (its `cuda/` sources) or HeCBench (its `src/*-cuda/`
programs), fetched outside the project (no third-party source is kept here). For each
`.cu` file: `polycoal transform FILE -I DIR --report json -o OUT` (DIR its directory);
the exit status, every kernel's action and reason code; with `--nvcc`, for files that
exit 2 or change, `nvcc -arch=sm_90 -c -I DIR` on the original and on the output. With
`--build-flags`, each file also gets the -I/-D/-U/-include its project's Makefile compiles
it with (`make -n -B`: the commands, not run), in polycoal, Clang and nvcc alike.

The table classifies each kept kernel's reason as about *the kernel* (coalescing,
dependences, races, irregular accesses, no gain) or about *reading the code* (not
parsed, not in the file's text, no launch found): the issue's acceptance is that at least
90% of kernels reach the model. Results go to DIR/sweep.json, one record per file.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import functools
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Reason codes that say polycoal did not get to read the kernel (front end and launch
# discovery), as opposed to a verdict about the kernel itself.
READING = frozenset({
    "unparsed", "not-in-text", "no-launch", "launch-not-in-text",
    "thread-index-in-macro", "thread-index-in-callee", "name-shared", "used-elsewhere",
    "internal-error", "syntax-error", "refused", "timeout", "not-instantiated",
    "crash", "lowering-rejected", "opaque-statements"})

# Clang's errors in a file read alone (with -I its folder): a file with errors is not a
# translation unit of its project (a fragment another file includes, or one that needs
# flags of its build); its kernels are also read where they are included
_UNIT_ERRORS = """
import sys
from polycoal.frontend import clang
from polycoal.frontend.preprocess import PreprocessorOptions
path, folder, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
pairs = list(zip(flags[::2], flags[1::2]))
text = open(path, encoding="utf-8", errors="surrogateescape").read()
options = PreprocessorOptions(
    include_dirs=(folder,) + tuple(v for f, v in pairs if f == "-I"),
    defines=("cudaThreadSynchronize=cudaDeviceSynchronize",) +
    tuple(v for f, v in pairs if f == "-D"),
    undefines=tuple(v for f, v in pairs if f == "-U"),
    forced_includes=tuple(v for f, v in pairs if f == "-include"))
print(len(clang.error_sites(path, options, text)))
"""


def unit_errors(path: Path, flags: tuple[str, ...] = (), timeout: int = 120) -> int | None:
    """How many errors Clang reports in the file read alone, with the build's `flags`
    (pairs: -I DIR, -D NAME...) if any (None: not known)."""
    try:
        r = subprocess.run([sys.executable, "-c", _UNIT_ERRORS, str(path), str(path.parent),
                            *flags],
                           capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        return int(r.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return None


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def quoted_includes(path: Path, base: Path) -> list[str]:
    """The files of the corpus that `path` includes with quotes (relative to `base`,
    the folder the corpus roots are in), as its directory resolves them."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for m in _INCLUDE.finditer(text):
        target = (path.parent / m.group(1)).resolve()
        if target.is_file() and base.resolve() in target.parents:
            out.append(str(target.relative_to(base.resolve())))
    return out


_COMPILER = re.compile(r"(?:^|/)(?:nvcc|clang\+\+|clang|g\+\+|gcc|c\+\+)$")
_FLAGS = ("-I", "-D", "-U", "-include")


@functools.lru_cache(maxsize=None)
def make_commands(directory: Path, timeout: int = 60) -> dict[Path, tuple[str, ...]]:
    """The preprocessor flags (-I, -D, -U, -include) of each CUDA source the Makefile of
    `directory` compiles, as `make -n -B` prints its commands (nothing is built);
    relative paths resolved against `directory`."""
    try:
        r = subprocess.run(["make", "-n", "-B"], cwd=directory, capture_output=True,
                           text=True, timeout=timeout)
    except (subprocess.TimeoutExpired, OSError):
        return {}
    commands: dict[Path, tuple[str, ...]] = {}
    for line in r.stdout.splitlines():
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if not words or not _COMPILER.search(words[0]):
            continue
        flags, sources, k = [], [], 1
        while k < len(words):
            w = words[k]
            flag = next((f for f in _FLAGS if w == f or (w.startswith(f) and f != "-include")),
                        None)
            if flag is not None:
                value = w[len(flag):] if w != flag else (words[k + 1] if k + 1 < len(words)
                                                         else "")
                k += 1 if w != flag else 2
                if flag in ("-I", "-include") and value:
                    value = str((directory / value).resolve())
                if value:
                    flags += [flag, value]
                continue
            if w.endswith(".cu"):
                sources.append((directory / w).resolve())
            k += 1
        for source in sources:
            commands.setdefault(source, tuple(flags))
    return commands


def build_flags(path: Path, root: Path) -> tuple[str, ...]:
    """The flags the project's Makefile compiles `path` with (the nearest folder from
    the file's up to `root` that has a Makefile), or () when no Makefile compiles it
    (a file another includes, a program not built by make)."""
    folder = path.parent
    while True:
        if any((folder / m).is_file() for m in ("Makefile", "makefile", "GNUmakefile")):
            return make_commands(folder).get(path.resolve(), ())
        if folder == root or root not in folder.parents:
            return ()
        folder = folder.parent


def corpus_files(root: Path) -> list[Path]:
    """The CUDA sources of a Rodinia or HeCBench checkout (any other tree: every .cu)."""
    if (root / "src").is_dir() and any(root.glob("src/*-cuda")):
        return sorted(p for p in root.glob("src/*-cuda/**/*.cu") if p.is_file())
    if (root / "cuda").is_dir():
        return sorted(p for p in root.glob("cuda/**/*.cu") if p.is_file())
    return sorted(p for p in root.rglob("*.cu") if p.is_file())


def nvcc_compiles(path: Path, include: Path, flags: tuple[str, ...] = (),
                  timeout: int = 300) -> tuple[bool, str]:
    """Whether nvcc compiles the file alone (no linking), and its first error line."""
    with_obj = Path(os.environ.get("TMPDIR", "/tmp")) / \
        f"sweep-{os.getpid()}-{threading.get_ident()}.o"
    try:
        r = subprocess.run(["nvcc", "-arch=sm_90", "-c", "-w", "-I", str(include), *flags,
                            "-DcudaThreadSynchronize=cudaDeviceSynchronize",
                            str(path), "-o", str(with_obj)],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timeout"
    finally:
        with_obj.unlink(missing_ok=True)
    first = next((x for x in r.stderr.splitlines() if "error" in x), "")
    return r.returncode == 0, first[:300]


def sweep_file(path: Path, base: Path, out: Path, nvcc: bool, timeout: int,
               flags: tuple[str, ...] = ()) -> dict:
    rel = path.relative_to(base)
    dest = out / "outputs" / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)
    started = time.monotonic()
    cmd = [sys.executable, "-m", "polycoal", "transform", str(path), "-I", str(path.parent),
           *flags, "--report", "json", "-o", str(dest)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        rc, stderr = r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        rc, stderr = -1, "timeout"
    record = {"file": str(rel), "rc": rc, "seconds": round(time.monotonic() - started, 2),
              "kernels": [], "diagnostics": [], "stderr": "", "flags": list(flags)}
    start = stderr.find("{")
    try:
        report = json.loads(stderr[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        report = None
    if report:
        record["kernels"] = [{"name": k["name"], "action": k["action"], "code": k["code"],
                              "reason": k["reason"][:300]} for k in report["kernels"]]
        record["diagnostics"] = [{"code": d["code"], "severity": d["severity"],
                                  "message": d["message"][:300]}
                                 for d in report["diagnostics"]
                                 if d["severity"] == "error" or d["code"] in HOST_LOOPS]
    else:
        record["stderr"] = stderr[-1500:]
    # the output's includes are relocated to its folder: a changed file is one where a
    # kernel or a host loop of launches changed
    record["host_changed"] = any(d["code"] in ("waits-moved", "trips-fused")
                                 for d in record["diagnostics"])
    changed = dest.exists() and (any(k["action"] != "unchanged" for k in record["kernels"])
                                 or record["host_changed"])
    record["changed"] = changed
    record["unit_errors"] = unit_errors(path, flags)
    record["includes"] = quoted_includes(path, base)
    if nvcc and (rc == 2 or changed):
        ok, why = nvcc_compiles(path, path.parent, flags)
        record["nvcc_original"] = [ok, why]
        if changed:
            ok, why = nvcc_compiles(dest, path.parent, flags)
            record["nvcc_output"] = [ok, why]
    if not changed:
        dest.unlink(missing_ok=True)
    return record



# the host loops pass's notes (passes/host_loops.py), kept beside the errors
HOST_LOOPS = frozenset(("waits-moved", "waits-kept", "trips-fused", "trips-kept"))

def outcome(k: dict) -> str:
    return "changed" if k["action"] != "unchanged" else k["code"] or "unknown"


def is_instance(k: dict) -> bool:
    """A template's instantiation or a header kernel's copy, reported beside the kernel
    it is read from (whose code is then `lowered` when none of them changed)."""
    return "<" in k["name"] or "__pc" in k["name"]


def definitions(r: dict) -> list[dict]:
    """The kernel definitions a file's report names: a kernel read through its
    instantiations (code `lowered`, or a changed instance) reaches the model through
    them."""
    instances: dict[str, list[dict]] = {}
    for k in r["kernels"]:
        if is_instance(k):
            instances.setdefault(k["name"].split("<")[0].split("__pc")[0], []).append(k)
    out = []
    for k in r["kernels"]:
        if is_instance(k):
            continue
        read = instances.get(k["name"], [])
        if any(x["action"] != "unchanged" for x in read):
            k = dict(k, action="changed-instance")
        elif k["code"] == "lowered" and not any(outcome(x) not in READING for x in read):
            # read through instances none of which reached the model
            k = dict(k, code=next((outcome(x) for x in read), "unparsed"))
        out.append(k)
    return out


def as_built(records: list[dict]) -> list[dict]:
    """The kernel definitions as the projects' builds read them: a file another file
    of the corpus includes (`#include "kernels.cu"`) is not a translation unit of its
    build; its kernels are counted in the reports of the units that include it (once
    per such unit, where the build compiles them), not again as a file of its own; a
    kernel no including unit names is counted as the file read alone found it. Needs
    the sweep's `includes`."""
    by_file = {r["file"]: r for r in records}
    included_by: dict[str, set[str]] = collections.defaultdict(set)
    for r in records:
        for f in r.get("includes", ()):
            if f in by_file and f != r["file"]:
                included_by[f].add(r["file"])

    def units(f: str) -> set[str]:
        seen, todo = set(), [f]
        while todo:
            for u in included_by.get(todo.pop(), ()):
                if u not in seen:
                    seen.add(u)
                    todo.append(u)
        return {u for u in seen if u not in included_by}

    out = []
    for r in records:
        own = definitions(r)
        if r["file"] not in included_by:
            out += own
            continue
        including = [definitions(by_file[u]) for u in sorted(units(r["file"]))]
        for k in own:
            seen = [x for ks in including for x in ks if x["name"] == k["name"]]
            if not seen:
                out.append(k)
    return out


def table(records: list[dict]) -> str:
    """Counts by kernel definition (definitions()), and as the builds read them
    (as_built())."""
    kernels, kernels_with_files = [], []
    for r in records:
        for k in definitions(r):
            kernels.append(k)
            kernels_with_files.append((k, r))
    by_code = collections.Counter(outcome(k) for k in kernels)
    files_by_rc = collections.Counter(r["rc"] for r in records)
    reading = sum(n for c, n in by_code.items() if c in READING)
    built = as_built(records)
    built_reading = sum(1 for k in built if outcome(k) in READING)
    units = [k for k, r in kernels_with_files if r.get("unit_errors") == 0]
    unit_reading = sum(1 for k in units if outcome(k) in READING)
    flagged = sum(1 for r in records if r.get("flags"))
    lines = [f"files: {len(records)}; exit status: " +
             ", ".join(f"{rc}: {n}" for rc, n in sorted(files_by_rc.items())) +
             (f"; given their Makefile's flags: {flagged}" if flagged else ""),
             f"kernels: {len(kernels)}; reach the model: {len(kernels) - reading} "
             f"({100.0 * (len(kernels) - reading) / max(len(kernels), 1):.1f}%)",
             f"kernels of files Clang compiles alone (translation units, "
             f"{sum(1 for r in records if r.get('unit_errors') == 0)} files): {len(units)}; "
             f"reach the model: {len(units) - unit_reading} "
             f"({100.0 * (len(units) - unit_reading) / max(len(units), 1):.1f}%)",
             *([f"kernels as the builds read them (a file another includes counted through "
                f"its including units, {sum(1 for r in records if any(r['file'] in x.get('includes', ()) for x in records))} such files): "
                f"{len(built)}; reach the model: {len(built) - built_reading} "
                f"({100.0 * (len(built) - built_reading) / max(len(built), 1):.1f}%)"]
               if any("includes" in r for r in records) else []),
             f"files changed: {sum(r['changed'] for r in records)} (host loops in "
             f"{sum(r.get('host_changed', False) for r in records)}); kernels changed: "
             f"{by_code.get('changed', 0)}",
             f"internal errors: {sum(1 for r in records for d in r['diagnostics'] if d['code'] == 'internal-error') + files_by_rc.get(3, 0)}"]
    exit2 = [r for r in records if r["rc"] == 2]
    if any("nvcc_original" in r for r in exit2):
        valid = [r for r in exit2 if r.get("nvcc_original", [False])[0]]
        lines.append(f"exit 2 on files nvcc compiles: {len(valid)} of {len(exit2)}")
    outs = [r for r in records if "nvcc_output" in r]
    if outs:
        broken = [r["file"] for r in outs if r["nvcc_original"][0] and not r["nvcc_output"][0]]
        lines.append(f"outputs nvcc rejects where the input compiles: {len(broken)} of "
                     f"{len(outs)}" + (": " + ", ".join(broken) if broken else ""))
    lines.append("")
    lines.append("| outcome | kernels | about |")
    lines.append("|---|---|---|")
    for code, n in by_code.most_common():
        lines.append(f"| {code} | {n} | {'reading the code' if code in READING else 'the kernel'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("roots", nargs="*", type=Path)
    p.add_argument("--out", type=Path, default=Path("sweep-out"))
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--nvcc", action="store_true")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--match", default="", help="only files whose path contains this")
    p.add_argument("--table", type=Path, help="print the table of an earlier sweep")
    p.add_argument("--root", type=Path, help="with --table: the folder the corpus roots "
                   "are in, to read the includes of a sweep that did not record them")
    p.add_argument("--build-flags", action="store_true",
                   help="give each file the -I/-D/-U/-include flags its project's Makefile "
                        "compiles it with (`make -n -B` in the nearest folder with a "
                        "Makefile; nothing is built); files no Makefile compiles get none")
    p.add_argument("--again", type=Path, metavar="OLD/sweep.json",
                   help="sweep again only the files of an earlier sweep where a kernel's "
                        "reason is about reading the code, or that changed; the others' "
                        "records are carried over (a quick look, not a measurement)")
    args = p.parse_args(argv)
    if args.table:
        records = json.loads(args.table.read_text())
        if args.root:                   # an earlier sweep's includes, read now
            for r in records:
                r.setdefault("includes", quoted_includes(args.root / r["file"], args.root))
        print(table(records))
        return 0
    work = [(f, root) for root in args.roots for f in corpus_files(root)
            if args.match in str(f)]
    carried = []
    if args.again:
        old = json.loads(args.again.read_text())
        redo = {r["file"] for r in old if r.get("changed") or r["rc"] != 0 or any(
            k.get("code") in READING or k.get("code") == "lowered" for k in r["kernels"])}
        carried = [r for r in old if r["file"] not in redo]
        work = [(f, root) for f, root in work
                if str(f.relative_to(root.parent)) in redo]
    if args.limit:
        work = work[:args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    records = list(carried)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(sweep_file, f, root.parent, args.out, args.nvcc, args.timeout,
                               build_flags(f, root) if args.build_flags else ())
                   for f, root in work]
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            r = fut.result()
            records.append(r)
            print(f"[{i}/{len(work)}] {r['file']}: exit {r['rc']}, "
                  f"{len(r['kernels'])} kernels, {r['seconds']} s", flush=True)
    records.sort(key=lambda r: r["file"])
    (args.out / "sweep.json").write_text(json.dumps(records, indent=1))
    print(table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
