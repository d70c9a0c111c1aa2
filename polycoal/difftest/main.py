"""The tester's command line (tools/difftest.py): generate, judge in parallel, save
reproducers, print the tables.

    python tools/difftest.py --count 300 --seed 1 --jobs 2 --out /tmp/findings
    python tools/difftest.py --replay /tmp/findings/mismatch/bounds-17.cu

Program n (0-based) has seed S + n and family FAMILIES[n % len(FAMILIES)] (or of
--families), so that a run's programs are fixed by --seed, --count and --families (and
--constructs, --project: the C++ constructs over them, cxx.py, and projects of two
units, project.py).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shlex
import sys
import time
from collections import Counter, defaultdict

from polycoal.difftest.cxx import CONSTRUCTS
from polycoal.difftest.generator import FAMILIES, GeneratedProgram, generate
from polycoal.difftest.runner import Runner
from polycoal.difftest.saved import load_program, program_metadata
from polycoal.difftest.judging import (OPTION_SETS, Nvcc, ProgramResult, command,
                                       install_read_cache, uninstall_read_cache)
from polycoal.runtime.cpu_program import CpuProgramRunner
from polycoal.runtime.gpu_program import GpuProgramRunner

NOT_POLYCOAL = {"generator-invalid"}        # the tester's own problems

_runner: Runner | None = None


def executor(cache: str, gpu: bool):
    """Where programs run: the GPU (nvcc builds them) or the CPU runtime."""
    return GpuProgramRunner() if gpu else CpuProgramRunner(cache)


def _init(cache: str, nvcc_mode: str | None, options: list[str], timeout: int,
          cache_reads: bool = True, gpu: bool = False, constructs=None,
          project: bool = False) -> None:
    global _runner
    if cache_reads:
        install_read_cache()
    _runner = Runner(executor(cache, gpu), Nvcc(nvcc_mode) if nvcc_mode else None, options,
                     timeout, constructs=constructs, project=project)


def _job(task: tuple[int, str]) -> ProgramResult:
    seed, family = task
    start = time.monotonic()
    try:
        r = _runner.run_seed(seed, family)
    except Exception:             # noqa: BLE001 - a tester bug must not stop the run
        import traceback
        from polycoal.difftest.judging import Failure
        r = ProgramResult(seed, family, "", "", [Failure(
            "generator-invalid", [], "the tester failed:\n" + traceback.format_exc()[-2000:])])
    r.seconds["total"] = time.monotonic() - start
    return r


PROJECT_EXCLUDED = ("place", "place-trace", "placement")


def constructs_mode(names: list[str]):
    """--constructs' words as generator.generate takes them: "mix", "none", "all", or a
    list of names."""
    for word in ("none", "all", "mix"):
        if word in names:
            return word
    return list(names)


def tasks(count: int, seed: int, families: list[str]) -> list[tuple[int, str]]:
    return [(seed + n, families[n % len(families)]) for n in range(count)]


def slug(cls: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", cls)


def save_reproducer(out: str, result: ProgramResult, failure, program: GeneratedProgram,
                    confirm: bool = False) -> str:
    """<out>/<class>/<family>-<seed>.cu (the program), .json (what the judge needs to
    replay it), .out.cu (the failing output, when there is one) and .txt (the commands
    and the message)."""
    directory = os.path.join(out, slug(failure.cls))
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, f"{result.family}-{result.seed}")
    with open(base + ".cu", "w") as f:
        f.write(program.source)
    for name, text in program.files.items():           # the headers it includes
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    if program.project is not None:                     # the project's tree beside it
        from polycoal.difftest.project import write_project
        write_project(program.project, base + ".project")
    with open(base + ".json", "w") as f:
        json.dump(dict(program_metadata(program), failure=failure.cls,
                       options=failure.options), f, indent=1)
    if failure.output is not None:
        with open(base + ".out.cu", "w") as f:
            f.write(failure.output)
    option = failure.options[0] if failure.options else "default"
    name, rest = command(OPTION_SETS.get(option, []))
    args = " ".join(shlex.quote(a) for a in rest)
    confirmed = confirm_with_cli(base + ".cu", option, failure) if confirm and \
        failure.cls not in NOT_POLYCOAL and program.project is None else "not checked"
    how = f"  polycoal {name} {os.path.basename(base)}.cu -o out.cu {args}\n" \
        if program.project is None else \
        f"  polycoal {name} -p {os.path.basename(base)}.project/build -o out {args}\n"
    with open(base + ".txt", "w") as f:
        f.write(f"class: {failure.cls}\nfamily: {result.family} ({result.variant})\n"
                f"seed: {result.seed}\noptions: {', '.join(failure.options)}\n"
                f"confirmed by the command line: {confirmed}\n"
                f"shape: {result.shape}\n\nreproduce:\n{how}"
                f"  nvcc -arch=sm_90 -c out.cu        # nvcc-error\n"
                f"  python tools/difftest.py --replay {base}.cu --options {option}"
                f"    # the whole judgement\n\nmessage:\n{failure.message}\n")
    return base + ".cu"


def confirm_with_cli(path: str, option: str, failure) -> str:
    """Re-run the failing transform as a user would (`python -m polycoal transform` in a
    subprocess) and say whether it agrees with the in-process run."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(path))) as tmp:
        # beside the input: its `#include "kernels_N.cuh"` stays as it is
        out = os.path.join(os.path.dirname(tmp), os.path.basename(tmp) + ".out.cu")
        name, rest = command(OPTION_SETS.get(option, []))
        try:
            r = subprocess.run([sys.executable, "-m", "polycoal", name, path, "-o", out,
                                *rest], capture_output=True, text=True,
                               errors="replace", timeout=600)
            text = open(out, errors="replace").read() if os.path.exists(out) else None
        finally:
            if os.path.exists(out):
                os.unlink(out)
    if "Traceback (most recent call last)" in r.stderr:
        last = [l for l in r.stderr.strip().splitlines() if l and not l.startswith(" ")]
        verdict = f"traceback ({last[-1] if last else '?'})"
        agrees = failure.cls.startswith("traceback:")
    elif r.returncode == 1 and "validation failed" in r.stderr:
        verdict, agrees = "exit 1, validation failed", failure.cls == "validation-rejected"
    elif r.returncode != 0:
        verdict, agrees = f"exit {r.returncode}", failure.cls == f"exit-{r.returncode}"
    else:
        agrees = failure.output is not None and text == failure.output
        verdict = "exit 0, " + ("the same output" if agrees else "a different output")
    return f"{'yes' if agrees else 'NO'}: {verdict}"


def summarize(results: list[ProgramResult], options: list[str]) -> dict:
    per_family: dict[str, Counter] = defaultdict(Counter)
    per_option: dict[str, Counter] = defaultdict(Counter)
    per_construct: dict[str, Counter] = defaultdict(Counter)
    construct_programs: Counter = Counter()
    programs: Counter = Counter()
    failing_programs: Counter = Counter()
    examples: dict[str, list] = defaultdict(list)
    for r in results:
        programs[r.family] += 1
        constructs = r.constructs or ["(none)"]
        for c in constructs:
            construct_programs[c] += 1
        classes = set()
        for f in r.failures:
            per_family[f.cls][r.family] += 1
            classes.add(f.cls)
            for o in f.options:
                per_option[f.cls][o] += 1
            for c in constructs:        # a program of several constructs counts in each
                per_construct[f.cls][c] += 1
            examples[f.cls].append(f"{r.family}-{r.seed}")
        if classes - NOT_POLYCOAL:
            failing_programs[r.family] += 1
    return {"programs": dict(programs), "failing_programs": dict(failing_programs),
            "per_family": {k: dict(v) for k, v in per_family.items()},
            "per_option": {k: dict(v) for k, v in per_option.items()},
            "per_construct": {k: dict(v) for k, v in per_construct.items()},
            "construct_programs": dict(construct_programs),
            "examples": {k: v[:5] for k, v in examples.items()}}


def table(rows: dict[str, dict], columns: list[str], title: str) -> str:
    width = max([len(title)] + [len(r) for r in rows]) + 2
    cols = [c[:14] for c in columns]
    cw = [max(len(c), 5) + 1 for c in cols]
    out = [title.ljust(width) + "".join(c.rjust(w) for c, w in zip(cols, cw)) + "  total".rjust(8)]
    for name in sorted(rows):
        r = rows[name]
        out.append(name.ljust(width) + "".join(str(r.get(c, "")).rjust(w)
                                               for c, w in zip(columns, cw)) +
                   str(sum(r.values())).rjust(8))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="difftest", description="polycoal's random "
                                "differential tester")
    p.add_argument("--count", type=int, default=100, help="programs to generate (default 100)")
    p.add_argument("--seed", type=int, default=1, help="seed of the first program")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", default="difftest-out", help="directory for reproducers and "
                   "summary.json (default ./difftest-out)")
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    p.add_argument("--select", nargs="+", choices=FAMILIES, metavar="FAMILY",
                   help="run only the programs of these families out of the --count (the "
                   "same programs as in the whole run: CI runs one family per test)")
    p.add_argument("--options", nargs="+", choices=list(OPTION_SETS), default=list(OPTION_SETS),
                   help="transform option sets to run (default all)")
    p.add_argument("--no-nvcc", action="store_true", help="do not compile outputs with nvcc")
    p.add_argument("--nvcc-mode", choices=("cubin", "c"), default="cubin",
                   help="nvcc -cubin (default: front end and ptxas, no host compiler) or -c")
    p.add_argument("--timeout", type=int, default=120, help="seconds per transform")
    p.add_argument("--shrink", action="store_true", help="reduce one reproducer per "
                   "class and family (slow: seconds per step)")
    p.add_argument("--shrink-budget", type=float, default=120.0,
                   help="seconds of shrinking per reproducer (default 120)")
    p.add_argument("--replay", metavar="FILE.cu", help="judge one saved program (with its "
                   ".json beside it) and print the verdict")
    p.add_argument("--no-read-cache", action="store_true", help="read the program afresh in "
                   "every transform (by default the front end is memoized per program)")
    p.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="do not re-run the first failures of each class through a "
                   "`polycoal transform` subprocess")
    p.add_argument("--cache", default=None, help="directory for the CPU runtime object")
    p.add_argument("--gpu", action="store_true", help="run original and outputs on this "
                   "machine's GPU (built by nvcc -arch=sm_90 --fmad=false) instead of the "
                   "CPU runtime")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop taking results after this long and summarise the programs "
                   "judged so far (a run inside a time-limited job still reports)")
    p.add_argument("--constructs", nargs="+", metavar="CONSTRUCT", default=["mix"],
                   choices=["mix", "none", "all", *CONSTRUCTS],
                   help="C++ constructs over the programs (polycoal/difftest/cxx.py): mix "
                   "(the default: a quarter of the programs get one to three), none (the "
                   "programs of the C-style generator, as before them), all (two to five "
                   "in every program), or names, each applied to every program: "
                   + ", ".join(CONSTRUCTS))
    p.add_argument("--project", action="store_true", help="write each program as a project "
                   "(two translation units and a header, a compile database) and judge "
                   "`polycoal transform -p` on it (polycoal/difftest/project.py)")
    p.add_argument("--quiet", "-q", action="store_true")
    args = p.parse_args(argv)
    constructs = constructs_mode(args.constructs)
    if args.project and args.gpu:
        p.error("--project runs on the CPU runtime only (not with --gpu)")
    if args.project:
        # place does not take a project, nor does transform -p take --placement
        args.options = [o for o in args.options if o not in PROJECT_EXCLUDED] or ["default"]
    # on the GPU every output is built by nvcc anyway: no separate nvcc check
    nvcc_mode = None if args.no_nvcc or args.gpu else args.nvcc_mode
    cache = args.cache or os.path.join(os.path.abspath(args.out), ".cpu-runtime")
    cpu = executor(cache, args.gpu)        # builds the CPU runtime once, before the workers

    if args.replay:
        if not args.no_read_cache:
            install_read_cache()
        runner = Runner(cpu, Nvcc(nvcc_mode) if nvcc_mode else None, args.options, args.timeout)
        try:
            program = load_program(args.replay)
            if program.project is not None:
                runner.options = [o for o in runner.options if o not in PROJECT_EXCLUDED]
            result = runner.run_program(program)
        finally:
            uninstall_read_cache()
        print(json.dumps(result.to_json(), indent=1))
        for f in result.failures:
            print(f"\n[{f.cls}] {', '.join(f.options)}\n{f.message}")
        return 1 if result.failures else 0

    os.makedirs(args.out, exist_ok=True)
    work = tasks(args.count, args.seed, args.families)
    if args.select:
        work = [t for t in work if t[1] in args.select]
    start = time.monotonic()
    results: list[ProgramResult] = []
    saved: dict[str, list[str]] = defaultdict(list)
    init = (cache, nvcc_mode, args.options, args.timeout, not args.no_read_cache, args.gpu,
            constructs, args.project)
    if args.jobs > 1:
        # forkserver, not fork: a caller with threads (a test session, the CPU runtime's
        # executors) would hand its locks to forked workers, which then hang on them
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["polycoal.cli", "polycoal.transform",
                                    "polycoal.difftest.main"])
        pool = ctx.Pool(args.jobs, initializer=_init, initargs=init, maxtasksperchild=50)
        stream = pool.imap_unordered(_job, work, chunksize=1)
    else:
        _init(*init)
        pool = None
        stream = map(_job, work)
    stopped = False
    try:
        for n, r in enumerate(stream, 1):
            if args.time_limit is not None and time.monotonic() - start > args.time_limit:
                stopped = True
                break
            results.append(r)
            for f in r.failures:
                program = generate(r.seed, r.family, constructs, args.project)
                confirm = args.confirm and len(saved[f.cls]) < 3
                saved[f.cls].append(save_reproducer(args.out, r, f, program, confirm))
            if not args.quiet:
                mark = ", ".join(sorted({f.cls for f in r.failures})) or "ok"
                extra = f" [{'+'.join(r.constructs)}]" if r.constructs else ""
                print(f"[{n}/{len(work)}] {r.family}-{r.seed} ({r.variant}){extra} "
                      f"{r.distinct_outputs} outputs, {r.seconds.get('total', 0):.1f}s: {mark}",
                      flush=True)
    finally:
        if pool is not None:
            if stopped:
                pool.terminate()
            else:
                pool.close()
            pool.join()
        else:
            uninstall_read_cache()        # ran in this process (see --replay)
    elapsed = time.monotonic() - start

    if args.shrink:
        from polycoal.difftest.shrink import shrink_saved
        runner = Runner(cpu, Nvcc(nvcc_mode) if nvcc_mode else None, args.options, args.timeout)
        for cls, paths in sorted(saved.items()):
            if cls in NOT_POLYCOAL:
                continue
            seen_families = set()
            for path in paths:
                family = os.path.basename(path).split("-")[0]
                if family in seen_families or args.project:   # lines of one file only
                    continue
                seen_families.add(family)
                shrink_saved(runner, path, cls, args.shrink_budget, log=not args.quiet)

    summary = summarize(results, args.options)
    seconds = defaultdict(float)
    for r in results:
        for k, v in r.seconds.items():
            seconds[k] += v
    summary.update({
        "count": len(results), "asked": len(work), "stopped_by_time_limit": stopped,
        "seed": args.seed, "families": args.families,
        "constructs": args.constructs, "project": args.project,
        "options": args.options, "jobs": args.jobs, "nvcc": nvcc_mode,
        "elapsed_s": round(elapsed, 1),
        "seconds_per_program": {k: round(v / max(1, len(results)), 3)
                                for k, v in sorted(seconds.items())},
        "failures": sum(len([f for f in r.failures if f.cls not in NOT_POLYCOAL])
                        for r in results),
        "validation_rejected": sum(1 for r in results for f in r.failures
                                   if f.cls == "validation-rejected"),
        "reproducers": {k: sorted(v, key=os.path.getsize)[:3] for k, v in saved.items()},
        "results": [r.to_json() for r in results]})
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    fams = [f for f in FAMILIES if f in summary["programs"]]
    print()
    print(table(summary["per_family"], fams, "class \\ family"))
    print("programs".ljust(len("class \\ family") + 2) + str(summary["programs"]))
    print()
    print(table(summary["per_option"], args.options, "class \\ option"))
    print()
    if set(summary["construct_programs"]) - {"(none)"}:
        names = [c for c in CONSTRUCTS + ("(none)",) if c in summary["construct_programs"]]
        print(table(summary["per_construct"], names, "class \\ construct"))
        print("programs".ljust(len("class \\ construct") + 2) +
              str(summary["construct_programs"]))
        print()
    for cls, paths in sorted(summary["reproducers"].items()):
        print(f"{cls}: e.g. {paths[0]}")
    if stopped:
        print(f"\nstopped by --time-limit: {len(results)} of {len(work)} programs judged")
    print(f"\n{len(results)} programs in {elapsed:.0f} s with {args.jobs} jobs "
          f"({elapsed / max(1, len(results)):.2f} s per program); per program: " +
          ", ".join(f"{k} {v:.2f}s" for k, v in summary["seconds_per_program"].items()))
    rejected = sum(1 for r in results for f in r.failures if f.cls == "validation-rejected")
    print(f"{summary['failures']} failures ({summary['failures'] - rejected} wrong results, "
          f"crashes and rejected outputs; {rejected} validation-rejected); summary in "
          f"{os.path.join(args.out, 'summary.json')}")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
