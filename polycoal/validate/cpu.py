"""CPU execution of original and transformed kernels on the same random inputs.

Both kernels are compiled for the host as C++ (templates/cpu_runtime.h defines CUDA's
builtins; threads run one after another, or as std::threads meeting at a barrier when
the kernel synchronises) and launched with their own geometry, as the experiment
(validate/experiment.py) sets it up. Every array argument is filled with fresh random
values and compared after both runs (relative L2 error; NaN never passes). Sizes must
be small: give the size macros with -D and int arguments with --arg.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources

from polycoal.analysis.counting import count_statement
from polycoal.frontend.program import Kernel, Program
from polycoal.model.kernel_model import KernelModel
from polycoal.runtime.cpu_program import dynamic_shared_for_cpu
from polycoal.templates import render_template
from polycoal.decisions import KernelDecision, TransformOptions, TransformResult
from polycoal.validate.experiment import NotRunnable, prepare, run_changed

MAX_INSTANCES = 200_000_000      # statement instances one CPU run may execute


@dataclass
class ArrayComparison:
    name: str
    elements: int
    max_abs: float
    rel_l2: float
    ok: bool


@dataclass
class CpuVerdict:
    kernel: str
    ok: bool
    message: str
    arrays: list[ArrayComparison] = field(default_factory=list)


def _instances(model: KernelModel, values: dict[str, int]) -> int:
    total = 0
    for s in model.statements:
        c = count_statement(model, s)
        try:
            total += int(c.formula.value(values))
        except ValueError:
            total += int(c.value or 0)
    return total


def harness_arguments(kernel: Kernel, values: dict[str, int]) -> tuple[list[str], list[dict]]:
    """The harness's call arguments for the kernel (arrays pc_o_NAME, known ints as
    constants, other scalars pc_s_NAME) and the scalars it must declare."""
    args, scalars = [], []
    for p in kernel.parameters:
        if p.is_pointer:
            args.append(f"pc_o_{p.name}.data()")
        elif p.name in values:
            args.append(f"(long long){values[p.name]}")
        else:
            scalars.append({"name": p.name, "type": p.type})
            args.append(f"pc_s_{p.name}")
    return args, scalars


def build_harness(directory: str, source: str, headers: tuple[str, ...] = ("cpu_runtime.h",)
                  ) -> tuple[str | None, str]:
    """Compile the harness `source` (its dynamic shared memory the runtime's buffer:
    dynamic_shared_for_cpu) with the runtime headers in `directory`: (executable, "")
    or (None, the compiler's first error line)."""
    for header in ("cuda_types.h",) + headers:      # the types both CPU runtimes include
        text = (resources.files("polycoal.templates") / header).read_text()
        with open(os.path.join(directory, header), "w") as f:
            f.write(text)
    src = os.path.join(directory, "harness.cpp")
    with open(src, "w") as f:
        f.write(dynamic_shared_for_cpu(source))
    exe = os.path.join(directory, "harness")
    cxx = os.environ.get("CXX", "g++")
    build = subprocess.run([cxx, "-std=c++20", "-O1", "-ffp-contract=off", "-pthread", "-w",
                            src, "-o", exe], capture_output=True, text=True)
    if build.returncode != 0:
        lines = build.stderr.strip().splitlines()
        # the first error, not the `In function ...` line that heads it
        first = [l for l in lines if "error" in l][:1] or lines[:1]
        return None, first[0] if first else "?"
    return exe, ""


def validate_kernel_cpu(program: Program, new_program: Program, d: KernelDecision,
                        arguments: dict[str, int], seed: int) -> CpuVerdict:
    try:
        e = prepare(program, new_program, d, arguments)
    except NotRunnable as error:
        return CpuVerdict(d.kernel, False, str(error))
    work = _instances(e.model, e.values)
    if work > MAX_INSTANCES:
        return CpuVerdict(d.kernel, False, f"{work} statement instances are too many for "
                          "the CPU: give smaller sizes with -D")
    args, scalars = harness_arguments(e.kernel, e.values)
    new_args = [a.replace("pc_o_", "pc_n_") for a in args] + [f"{h}LL" for h in e.hidden]
    sync_permuted = e.synchronising and d.action == "permuted"
    launches = [{"name": st.kernel, "grid": list(st.grid), "block": list(st.block),
                 "sync": st.synchronising or sync_permuted} for st in e.stages]
    source = render_template(
        "cpu_harness.cpp.j2", name=e.kernel.name, declarations=e.declarations,
        original=e.original, transformed=e.transformed, original_name=e.original_name,
        seed=seed, scalars=scalars, arrays=e.arrays, grid=list(e.grid),
        block=list(e.block), sync=e.synchronising, launches=launches,
        original_args=args, new_args=new_args, tolerance=f"{e.tolerance:.3e}")
    return _compile_and_run(d.kernel, source)


def _compile_and_run(name: str, source: str) -> CpuVerdict:
    with tempfile.TemporaryDirectory(prefix="polycoal-cpu-") as tmp:
        exe, error = build_harness(tmp, source)
        if exe is None:
            return CpuVerdict(name, False, f"the CPU harness does not compile: {error}")
        try:
            run = subprocess.run([exe], capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return CpuVerdict(name, False, "the CPU run timed out: give smaller sizes")
    arrays = []
    for line in run.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "ARRAY":
            arrays.append(ArrayComparison(parts[1], int(parts[2]), float(parts[3]),
                                          float(parts[4]), parts[5] == "ok"))
    ok = run.returncode == 0 and arrays and all(a.ok for a in arrays)
    message = "outputs match" if ok else (
        "outputs differ: " + ", ".join(a.name for a in arrays if not a.ok) if arrays
        else f"the CPU run failed (status {run.returncode}): {run.stderr.strip()[:200]}")
    return CpuVerdict(name, bool(ok), message, arrays)


def validate_cpu(program: Program, result: TransformResult, options: TransformOptions,
                 arguments: dict[str, int], seed: int) -> list[CpuVerdict]:
    return run_changed(
        program, result, options,
        lambda p, new, d: validate_kernel_cpu(p, new, d, arguments, seed),
        lambda d: CpuVerdict(d.kernel, True, f"unchanged ({d.reason})"))
