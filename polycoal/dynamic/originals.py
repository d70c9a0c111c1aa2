"""Launch every original kernel of a job once, on the GPU: the process Nsight Compute
profiles for `polycoal trace --hardware` (dynamic/hardware.py).

    python -m polycoal.dynamic.originals JOB.json MANIFEST.json

JOB: {"programs": [{"path", "defines", "undefines", "include_dirs", "forced_includes",
"imacros", "arguments", "seed", "kernels"}]} ("kernels" null: all). Each kernel runs as the trace runs it (its first
launch site's setup, the same random inputs for the same seed, collect.py's device
helpers), uninstrumented. MANIFEST: the kernels in launch order, each
{"program", "kernel", "launched", "error"}; written even when some kernels fail. Exit
status 0, or 2 without pycuda or a GPU (the manifest then lists nothing launched).
"""

from __future__ import annotations

import json
import sys

from polycoal.diagnostics import InputError


def read_job_program(spec: dict):
    """A job's program (path, include dirs, defines, undefines) read and analysed:
    (program, the analyses of its wanted kernels)."""
    from polycoal.analysis import analyze_program
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    options = PreprocessorOptions(tuple(spec.get("include_dirs", ())),
                                  tuple(spec.get("defines", ())),
                                  tuple(spec.get("undefines", ())),
                                  forced_includes=tuple(spec.get("forced_includes", ())),
                                  imacros=tuple(spec.get("imacros", ())))
    program = read_program(spec["path"], options)
    wanted = spec.get("kernels")
    return program, [ka for ka in analyze_program(program).kernels
                     if wanted is None or ka.kernel.name in wanted]


def launch_kernel(driver, SourceModule, np, program, ka, arguments: dict, seed: int) -> None:
    """One launch of the original kernel as the trace sets it up; raises on failure."""
    from polycoal.dynamic.collect import device_arguments, launch_once
    from polycoal.validate.device import compile_on_device, device_source
    from polycoal.validate.experiment import NotRunnable, setup_launch
    if ka.model is None:
        raise NotRunnable(f"kernel '{ka.kernel.name}' does not parse")
    setup = setup_launch(program, ka.kernel, ka.model, arguments)
    module = compile_on_device(driver, SourceModule, device_source(setup.declarations, [ka.kernel.expanded]))
    args = device_arguments(driver, np, np.random.default_rng(seed), ka.kernel, setup)
    launch_once(driver, module, ka.kernel.name, args, setup)


def run_job(job: dict) -> list[dict]:
    import numpy as np
    from polycoal.validate.device import device_context, load_pycuda
    driver, SourceModule = load_pycuda()
    manifest = []
    with device_context(driver):
        for spec in job["programs"]:
            try:
                program, kernels = read_job_program(spec)
            except InputError as e:
                manifest.append({"program": spec["path"], "kernel": "*", "launched": False,
                                 "error": str(e)})
                continue
            for ka in kernels:
                entry = {"program": spec["path"], "kernel": ka.kernel.name,
                         "launched": False, "error": None}
                try:
                    launch_kernel(driver, SourceModule, np, program, ka,
                                  spec.get("arguments", {}), spec.get("seed", 1))
                    entry["launched"] = True
                except Exception as e:        # any failure of one kernel: report, go on
                    entry["error"] = f"{type(e).__name__}: {str(e).strip()[:300]}"
                manifest.append(entry)
    return manifest


def main(argv: list[str]) -> int:
    job_path, manifest_path = argv
    with open(job_path) as f:
        job = json.load(f)
    try:
        manifest = run_job(job)
        status = 0
    except InputError as e:
        print(e, file=sys.stderr)
        manifest, status = [], 2
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
