#!/usr/bin/env python3
"""The measurement behind issue 13's front-end decision: for each .cu file, what the
current front end (pycparser over the C subset) makes of every kernel, beside what
libclang in CUDA mode reads of the same file.

    python tools/frontend_survey.py [FILE.cu | DIR ...] [--markdown]

Current front end: the kernel is found, parsed, and modelled (`affine`), or the reason
it is not (from `analyze`). libclang (pip install libclang; skipped when it is missing):
polycoal.frontend.clang (-x cuda -nocudainc --cuda-host-only, CUDA's declarations from
grammars/clang_cuda.h); reported: errors, the kernels (in any file the program
includes, template or not), their launch sites with the template arguments there, the
file-scope constants a kernel reads with the values Clang evaluates, the parse time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

def current(path: Path) -> dict[str, str]:
    """kernel -> what the current front end and model make of it ('affine' or why not)
    and what transform decides (its action, or the reason code of a kept kernel)."""
    from polycoal.analysis import analyze_program
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.transform import TransformOptions, transform_program
    try:
        program = read_program(str(path), PreprocessorOptions(include_dirs=(str(path.parent),)))
        decisions = {d.kernel: d for d in transform_program(program, TransformOptions()).decisions}
    except Exception as error:                      # noqa: BLE001 - a survey row
        return {"*": f"unusable input: {str(error).splitlines()[0][:90]}"}
    out = {}
    for k in analyze_program(program).kernels:
        kernel = k.kernel
        if kernel.ast is None or kernel.unsupported:
            model = f"not parsed: {(kernel.unsupported or 'syntax')[:60]}"
        elif k.model is None:
            model = "no model"
        elif k.model.is_affine:
            model = "affine"
        else:
            model = "outside: " + "; ".join(sorted({o.construct for o in k.model.outside}))[:60]
        d = decisions.get(kernel.name)
        out[kernel.name] = f"{model} / {d.action if d.action != 'unchanged' else d.code}" \
            if d else model
    return out


def clang_survey(path: Path) -> dict:
    """What polycoal.frontend.clang reads of `path`, and how long it takes."""
    from polycoal.frontend import clang
    start = time.monotonic()
    unit = clang.read(str(path))
    seconds = time.monotonic() - start
    kernels = {k.name: {"file": Path(k.place.file).name, "line": k.place.line,
                        "template": k.is_template,
                        "constants": [f"{n}={v}" for n, v in k.constants]}
               for k in unit.kernels}
    launches: dict[str, list[str]] = {}
    for launch in unit.launches:
        name = launch.kernel.split("::")[-1]
        args = f"<{', '.join(launch.template_arguments)}>" if launch.template_arguments else ""
        launches.setdefault(name, []).append(
            f"{launch.line}: {launch.kernel}{args}" + (" (dependent)" if launch.dependent else ""))
    return {"seconds": seconds, "errors": [e.split(": ", 1)[-1] for e in unit.errors],
            "kernels": kernels, "launches": launches}


def files(arguments: list[str]) -> list[Path]:
    out = []
    for a in arguments:
        p = Path(a)
        out += sorted(p.rglob("*.cu")) if p.is_dir() else [p]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[str(ROOT / "testsuite" / "fixtures" / "styles")])
    args = ap.parse_args(argv)
    from polycoal.frontend import clang
    if not clang.available():
        print("libclang is not installed (pip install libclang): its column is left out")
    print("| file | kernel | current front end | libclang: kernel | launches | constants |"
          " errors | ms |")
    print("|---|---|---|---|---|---|---|---|")
    totals = {"kernels": 0, "affine": 0, "clang": 0, "clean": 0}
    for path in files(args.paths):
        now = current(path)
        seen = clang_survey(path) if clang.available() else {
            "kernels": {}, "launches": {}, "errors": [], "seconds": 0}
        names = list(dict.fromkeys(list(seen["kernels"]) + [k for k in now if k != "*"]))
        for name in names:
            c = seen["kernels"].get(name)
            totals["kernels"] += 1
            totals["affine"] += now.get(name, "").startswith("affine")
            totals["clang"] += c is not None
            totals["clean"] += c is not None and not seen["errors"]
            where = "" if c is None else (f"{c['file']}:{c['line']}" +
                                          (", template" if c["template"] else ""))
            print(f"| {path.name} | {name} | {now.get(name, now.get('*', 'not found'))} | "
                  f"{where or 'not found'} | {'; '.join(seen['launches'].get(name, []))} | "
                  f"{', '.join(c['constants']) if c else ''} | "
                  f"{len(seen['errors'])}{': ' + seen['errors'][0] if seen['errors'] else ''} | "
                  f"{1000 * seen['seconds']:.0f} |")
    print(f"\n{totals['kernels']} kernels: {totals['affine']} modelled by the current front "
          f"end; {totals['clang']} found by libclang, {totals['clean']} in files it reads "
          "without an error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
