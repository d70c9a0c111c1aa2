#!/usr/bin/env python3
"""What polycoal does with each kernel of a corpus of complete programs (issue 13's
acceptance: testsuite/fixtures/styles), and whether what it does holds.

    python tools/corpus_report.py [DIR | FILE.cu ...] [--markdown] [--no-run] [--seed N]
    python tools/corpus_report.py --device --markdown      # on the GPU machine

For each program (its directory on the include path): `transform`; for each kernel
decision (a template's instantiations and a header's kernels as transform names them)
the action, or the reason code and reason of a kept kernel; for the changed ones the
per-kernel CPU validation (`validate --cpu`, with the values of run-time sizes a line
`// validate: --arg n=1000` of the program gives); for the whole program, the original and
the output run on the CPU runtime and compared (the numbers they print), and nvcc
compiling the output (`-arch=sm_90 -c`). The counts by outcome end the report.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def arguments(text: str) -> dict[str, int]:
    """Values of kernel arguments that are run-time sizes, as a program of the corpus
    gives them for validation: a line `// validate: --arg n=1000 --arg cols=300`."""
    out = {}
    for line in re.findall(r"^// validate:(.*)$", text, re.M):
        for name, value in re.findall(r"--arg\s+(\w+)=(-?\d+)", line):
            out[name] = int(value)
    return out


def numbers(stdout: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", stdout)]


def alike(a: list[float], b: list[float]) -> bool:
    return bool(a) and len(a) == len(b) and all(
        abs(x - y) <= 1e-4 * max(abs(x), 1.0) for x, y in zip(a, b))


def program_report(path: Path, seed: int, run: bool, device: bool = False) -> dict:
    from polycoal.decisions import CHANGED
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.transform import TransformOptions, transform_program
    from polycoal.validate.cpu import validate_cpu
    preprocessor = PreprocessorOptions(include_dirs=(str(path.parent),))
    options = TransformOptions(preprocessor=preprocessor)
    try:
        program = read_program(str(path), preprocessor)
        result = transform_program(program, options)
    except Exception as error:                      # noqa: BLE001 - a report row
        return {"path": path, "error": f"{type(error).__name__}: {error}", "rows": []}
    verdicts = {}
    if run and any(d.action in CHANGED for d in result.decisions):
        if device:
            from polycoal.validate.device import validate_device
            found = validate_device(program, result, options, arguments(program.text), 10)
        else:
            found = validate_cpu(program, result, options, arguments(program.text), seed)
        verdicts = {v.kernel: v for v in found}
    rows = []
    for d in result.decisions:
        v = verdicts.get(d.kernel)
        speedup = getattr(v, "speedup", None) if v is not None else None
        rows.append({"kernel": d.kernel, "outcome": d.action if d.action in CHANGED else d.code,
                     "reason": (f"{speedup:.1f}x ({v.original_ms:.3f} -> "
                                f"{v.transformed_ms:.3f} ms); " if speedup else "") + d.reason,
                     "cpu": None if d.action not in CHANGED or v is None else v.ok})
    report = {"path": path, "rows": rows, "changed": result.text != program.text,
              "alike": None, "nvcc": None}
    if run and report["changed"]:
        report["alike"] = (gpu_alike if device else whole_program_alike)(
            program.text, result.text, path.parent)
        report["nvcc"] = nvcc_compiles(result.text, path.parent)
    return report


def gpu_alike(original: str, output: str, directory: Path) -> bool:
    """Both programs built by nvcc (-O2, no FMA contraction) run on the GPU and print
    the same numbers."""
    printed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("original", original), ("output", output)):
            src = Path(tmp) / f"{name}.cu"
            src.write_text(text)
            exe = Path(tmp) / name
            r = subprocess.run(["nvcc", "-arch=sm_90", "-O2", "--fmad=false", "-w", str(src),
                                "-o", str(exe), f"-I{directory}"], capture_output=True,
                               text=True)
            if r.returncode != 0:
                return False
            r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                return False
            printed.append(numbers(r.stdout))
    return alike(*printed)


def whole_program_alike(original: str, output: str, directory: Path) -> bool:
    from polycoal.runtime.cpu_program import CpuProgramRunner
    cpu = CpuProgramRunner()
    printed = []
    for text in (original, output):
        result, _ = cpu.compile_and_run(text, include_dirs=(str(directory),))
        if result is None or result.failure:
            return False
        printed.append(numbers(result.stdout))
    return alike(*printed)


def nvcc_compiles(text: str, directory: Path) -> bool | None:
    if shutil.which("nvcc") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.cu"
        out.write_text(text)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(out), "-o", str(out) + ".o",
                            f"-I{directory}"], capture_output=True, text=True)
        return r.returncode == 0


def files(arguments: list[str]) -> list[Path]:
    out = []
    for a in arguments:
        p = Path(a)
        out += sorted(p.glob("*.cu")) if p.is_dir() else [p]
    return out


def mark(value) -> str:
    return "" if value is None else ("yes" if value else "NO")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "testsuite/fixtures/styles")])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-run", action="store_true", help="decisions only: no CPU "
                        "validation, no whole-program runs, no nvcc")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", action="store_true", help="validate on the GPU (pycuda; "
                        "the speed-ups of the changed kernels) and run the whole programs "
                        "there")
    args = parser.parse_args(argv)
    reports = [program_report(p, args.seed, not args.no_run, args.device)
               for p in files(args.paths)]
    counts = collections.Counter()
    bad = 0
    if args.markdown:
        where = "--device" if args.device else "--cpu"
        print(f"| program | kernel | outcome | reason | validate {where} | program alike "
              f"({'GPU' if args.device else 'CPU runtime'}) | nvcc |")
        print("|---|---|---|---|---|---|---|")
    for r in reports:
        if "error" in r:
            print(f"{r['path'].name}: {r['error']}")
            bad += 1
            continue
        for n, row in enumerate(r["rows"]):
            counts[row["outcome"]] += 1
            first = n == 0
            cells = [r["path"].name if first else "", row["kernel"], row["outcome"],
                     row["reason"][:110].replace("|", "/"), mark(row["cpu"]),
                     mark(r["alike"]) if first else "", mark(r["nvcc"]) if first else ""]
            bad += row["cpu"] is False
            print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(
                c for c in cells if c))
        bad += (r["alike"] is False) + (r["nvcc"] is False)
    print()
    total = sum(counts.values())
    print(f"{len(reports)} programs, {total} kernel decisions: " + ", ".join(
        f"{k} {v}" for k, v in counts.most_common()))
    print(f"failures (error, CPU validation, whole program, nvcc): {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
