#!/usr/bin/env python3
"""The measurement behind issue 13's front-end decision: for each .cu file, what the
current front end (pycparser over the C subset) makes of every kernel, beside what
libclang in CUDA mode reads of the same file.

    python tools/frontend_survey.py [FILE.cu | DIR ...] [--markdown]

Current front end: the kernel is found, parsed, and modelled (`affine`), or the reason
it is not (from `analyze`). libclang (pip install libclang; skipped when it is missing):
the file parsed with -x cuda -nocudainc --cuda-host-only, CUDA's declarations from
grammars/clang_cuda.h, the CUDA headers as empty stubs and the host compiler's builtin
headers (libclang's wheel carries none); reported: errors, the kernels (in any file
the program includes, template or not), their launch sites with the template
arguments written there, the constants a kernel reads that clang evaluates
(constexpr/const variables: `clang_Cursor_Evaluate`), and the parse time.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CUDA_HEADERS = ("cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "device_launch_parameters.h",
                "cuda_fp16.h", "device_functions.h", "math_functions.h", "vector_types.h",
                "driver_types.h", "cooperative_groups.h", "helper_cuda.h")


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


class Clang:
    def __init__(self):
        import clang.cindex as ci
        self.ci = ci
        self.index = ci.Index.create()
        self.stubs = tempfile.mkdtemp(prefix="polycoal-clang-stubs-")
        for h in CUDA_HEADERS:
            Path(self.stubs, h).write_text("#pragma once\n")
        builtin = subprocess.run(["cc", "-print-file-name=include"], capture_output=True,
                                 text=True).stdout.strip()
        self.args = ["-x", "cuda", "--cuda-gpu-arch=sm_90", "-nocudainc", "-nocudalib",
                     "--cuda-host-only", "-std=c++17", "-w",
                     "-include", str(ROOT / "grammars" / "clang_cuda.h"),
                     "-isystem", self.stubs, "-isystem", builtin]
        lib = ci.conf.lib
        lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
        lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
        lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
        self.lib = lib

    def evaluate(self, cursor) -> int | None:
        result = self.lib.clang_Cursor_Evaluate(cursor)
        if not result:
            return None
        try:
            return self.lib.clang_EvalResult_getAsLongLong(result) \
                if self.lib.clang_EvalResult_getKind(result) == 1 else None
        finally:
            self.lib.clang_EvalResult_dispose(result)

    def survey(self, path: Path) -> dict:
        ci = self.ci
        start = time.monotonic()
        # nvcc reads `k << < g, b >> > (...)` as a launch, clang does not: the spaced
        # brackets are closed up (same length, so lines and columns stay)
        text = path.read_text(errors="replace")
        text = re.sub(r"<<\s<", "<<< ", re.sub(r">>\s>", ">>> ", text))
        tu = self.index.parse(str(path), args=self.args + [f"-I{path.parent}"],
                              unsaved_files=[(str(path), text)])
        seconds = time.monotonic() - start
        errors = [f"{d.location.line}: {d.spelling}" for d in tu.diagnostics if d.severity >= 3]
        ours = (str(ROOT / "grammars"), self.stubs)
        kernels: dict[str, dict] = {}
        launches: dict[str, list[str]] = {}

        def user_file(c) -> bool:
            f = c.location.file
            return f is not None and not f.name.startswith(("/usr/", *ours))

        def visit(c, depth=0):
            for ch in c.get_children():
                if ch.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE) \
                        and user_file(ch) and ch.is_definition() and any(
                            a.kind == ci.CursorKind.CUDAGLOBAL_ATTR for a in ch.get_children()):
                    constants = set()
                    for e in ch.walk_preorder():
                        if e.kind == ci.CursorKind.DECL_REF_EXPR and e.referenced is not None \
                                and e.referenced.kind == ci.CursorKind.VAR_DECL \
                                and e.referenced.semantic_parent is not None \
                                and e.referenced.semantic_parent.kind in (
                                    ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE,
                                    ci.CursorKind.STRUCT_DECL, ci.CursorKind.CLASS_DECL):
                            value = self.evaluate(e.referenced)
                            if value is not None:
                                constants.add(f"{e.spelling}={value}")
                    kernels[ch.spelling] = {
                        "file": Path(ch.location.file.name).name, "line": ch.location.line,
                        "template": ch.kind == ci.CursorKind.FUNCTION_TEMPLATE,
                        "constants": sorted(constants)}
                if ch.kind == ci.CursorKind.CALL_EXPR and user_file(ch):
                    # a CUDAKernelCallExpr: the callee, then the launch configuration (a
                    # call of __cudaPushCallConfiguration), then the arguments
                    if any(k.kind == ci.CursorKind.CALL_EXPR and
                           k.spelling == "__cudaPushCallConfiguration"
                           for k in ch.get_children()):
                        callee = ch.referenced
                        name = callee.spelling if callee is not None else ch.spelling
                        args = ""
                        if callee is not None and callee.get_num_template_arguments() > 0:
                            args = "<" + ", ".join(
                                str(callee.get_template_argument_type(k).spelling or
                                    callee.get_template_argument_value(k))
                                for k in range(callee.get_num_template_arguments())) + ">"
                        launches.setdefault(name, []).append(f"{ch.location.line}: {name}{args}")
                visit(ch, depth + 1)
        visit(tu.cursor)
        return {"seconds": seconds, "errors": errors, "kernels": kernels, "launches": launches}


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
    try:
        clang = Clang()
    except ImportError:
        clang = None
        print("libclang is not installed (pip install libclang): its column is left out")
    print("| file | kernel | current front end | libclang: kernel | launches | constants |"
          " errors | ms |")
    print("|---|---|---|---|---|---|---|---|")
    totals = {"kernels": 0, "affine": 0, "clang": 0, "clean": 0}
    for path in files(args.paths):
        now = current(path)
        seen = clang.survey(path) if clang else {"kernels": {}, "launches": {}, "errors": [],
                                                 "seconds": 0}
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
