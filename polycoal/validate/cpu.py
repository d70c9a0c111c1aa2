"""CPU execution of original and transformed kernels on the same random inputs.

Both kernels are compiled for the host as C++ (templates/cpu_runtime.h defines CUDA's
builtins; threads run one after another, or as std::threads meeting at a barrier when
the kernel synchronises) and launched with their own geometry: the original with its
launch site's grid and block, the new one with the grid the rewritten launch computes.
Every array argument is sized from the kernel's access footprint, filled with fresh
random values, and compared after both runs (relative L2 error; NaN never passes).
Sizes must be small: give the size macros with -D and int arguments with --arg.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources

import islpy as isl

from polycoal.codegen.launch import GRID_LIMITS
from polycoal.diagnostics import InputError
from polycoal.frontend import read_program
from polycoal.frontend.program import Kernel, Program
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel
from polycoal.templates import render_template
from polycoal.transform import KernelDecision, TransformOptions, TransformResult

MAX_INSTANCES = 200_000_000      # statement instances one CPU run may execute
_C_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "long", "long long",
            "short", "char", "unsigned char", "size_t", "int32_t", "uint32_t", "int64_t",
            "uint64_t"}


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


def _rename_kernel(text: str, name: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", new, text, count=1)


def _footprint(model: KernelModel, array: str, values: dict[str, int]) -> int:
    """1 + the largest element index any access of `array` touches."""
    fixed = " and ".join(f"{p} = {v}" for p, v in values.items() if p in model.parameters)
    top = 0
    for s, a in model.accesses():
        if a.array != array or a.flat is None:
            continue
        flat = a.flat.substitute({p: v for p, v in values.items()})
        if not flat.is_affine():
            raise InputError(f"access {a.text}: size depends on unknown parameters "
                             f"{sorted(flat.variables - set(model.dims))}")
        dom = isl_helpers.domain(model, s)
        if fixed:
            dom = dom.intersect_params(isl.Set(f"[{', '.join(model.parameters)}] -> "
                                               f"{{ : {fixed} }}"))
        if dom.is_empty():
            continue
        image = isl.Map(f"[{', '.join(model.parameters)}] -> {{ {s.name}[{', '.join(model.dims)}]"
                        f" -> [{flat.to_c('*')}] }}").intersect_domain(dom).range()
        point = image.lexmax().sample_point()
        low = image.lexmin().sample_point()
        if int(low.get_coordinate_val(isl.dim_type.set, 0).to_python()) < 0:
            raise InputError(f"access {a.text} reaches a negative index")
        top = max(top, int(point.get_coordinate_val(isl.dim_type.set, 0).to_python()) + 1)
    return max(top, 1)


def _instances(model: KernelModel, values: dict[str, int]) -> int:
    from polycoal.analysis.counting import count_statement
    total = 0
    for s in model.statements:
        c = count_statement(model, s)
        try:
            total += int(c.formula.value(values))
        except ValueError:
            total += int(c.value or 0)
    return total


def _declarations(program: Program) -> list[str]:
    lines = [g.expanded for g in program.globals.values() if g.expanded]
    lines += [f.expanded for f in program.device_functions.values() if f.expanded]
    return lines


def validate_kernel_cpu(program: Program, new_program: Program, d: KernelDecision,
                        arguments: dict[str, int], seed: int) -> CpuVerdict:
    kernel: Kernel = program.kernel(d.kernel)
    model = d.analysis.model
    launches = program.launches_of(kernel.name)
    launch = launches[0]
    if launch.block_shape is None or launch.grid_shape is None:
        return CpuVerdict(kernel.name, False, f"the launch at line {launch.location.line} has no "
                          "compile-time geometry: give the sizes with -D")
    values = {**{k: int(v) for k, v in launch.constant_arguments.items()
                 if isinstance(v, (int, float))}, **arguments}
    ints = [p for p in kernel.parameters if not p.is_pointer and p.type in _C_TYPES
            and p.type not in ("float", "double")]
    used = {v for st in model.statements for c in st.constraints
            for v in re.findall(r"[A-Za-z_]\w*", c)}
    used |= {v for _, a in model.accesses() if a.flat is not None for v in a.flat.variables}
    for p in ints:      # arguments the model does not use: any value serves both kernels
        if p.name not in values and p.name not in used:
            values[p.name] = 1
    missing = [p.name for p in ints if p.name not in values]
    if missing:
        return CpuVerdict(kernel.name, False, "no value for int argument(s) "
                          f"{', '.join(missing)}: give --arg NAME=VALUE")
    work = _instances(model, values)
    if work > MAX_INSTANCES:
        return CpuVerdict(kernel.name, False, f"{work} statement instances are too many for "
                          "the CPU: give smaller sizes with -D")
    arrays, original_args, scalars = [], [], []
    for p in kernel.parameters:
        if p.is_pointer:
            if p.type not in _C_TYPES:
                return CpuVerdict(kernel.name, False, f"array '{p.name}' of type {p.type} "
                                  "is not supported by the CPU runner")
            arrays.append({"name": p.name, "type": p.type,
                           "size": _footprint(model, p.name, values)})
            original_args.append(f"pc_o_{p.name}.data()")
        elif p in ints:
            original_args.append(p.name)
        else:
            scalars.append({"name": p.name, "type": p.type})
            original_args.append(f"pc_s_{p.name}")
    new_args = [a.replace("pc_o_", "pc_n_") for a in original_args]
    grid = launch.grid_shape
    block = launch.block_shape
    launch_values = []
    for k, a in enumerate("xyz"):
        launch_values += [{"name": f"gridDim_{a}", "value": grid[k]},
                          {"name": f"blockDim_{a}", "value": block[k]},
                          {"name": f"nthreads_{a}", "value": grid[k] * block[k]}]
    if d.action == "permuted":
        source = d.permutation.source
        ranges, new_block = [], [block["xyz".index(source[n])] for n in "xyz"]
        new_grid = [str(grid["xyz".index(source[n])]) for n in "xyz"]
    else:
        g = d.generated
        ranges, new_block = g.ranges, list(g.block)
        new_args += g.hidden
        new_grid = []
        for r in g.ranges:
            b = g.block["xyz".index(r.axis)]
            new_grid.append(f"(unsigned)std::min<long long>(std::max<long long>("
                            f"(pc_extent_{r.axis} + {b - 1}) / {b}, 1), {GRID_LIMITS[r.axis]})")
        new_grid += ["1"] * (3 - len(new_grid))
    new_kernel = new_program.kernel(kernel.name)
    sync = any(o.construct == "__syncthreads" for o in model.outside)
    source = render_template(
        "cpu_harness.cpp.j2", name=kernel.name, declarations=_declarations(program),
        original=_rename_kernel(kernel.expanded, kernel.name, f"{kernel.name}__orig"),
        transformed=_rename_kernel(new_kernel.expanded, kernel.name, f"{kernel.name}__new"),
        seed=seed, int_params=[{"name": p.name, "value": values[p.name]} for p in ints],
        scalars=scalars, arrays=arrays, launch_values=launch_values, grid=list(grid),
        block=list(block), sync=sync, original_args=original_args, ranges=ranges,
        new_grid=new_grid, new_block=new_block, new_args=new_args, tolerance="1e-5")
    return _compile_and_run(kernel.name, source)


def _compile_and_run(name: str, source: str) -> CpuVerdict:
    with tempfile.TemporaryDirectory(prefix="polycoal-cpu-") as tmp:
        runtime = (resources.files("polycoal.templates") / "cpu_runtime.h").read_text()
        with open(os.path.join(tmp, "cpu_runtime.h"), "w") as f:
            f.write(runtime)
        src = os.path.join(tmp, "harness.cpp")
        with open(src, "w") as f:
            f.write(source)
        exe = os.path.join(tmp, "harness")
        cxx = os.environ.get("CXX", "g++")
        build = subprocess.run([cxx, "-std=c++20", "-O1", "-ffp-contract=off", "-pthread", "-w",
                                src, "-o", exe], capture_output=True, text=True)
        if build.returncode != 0:
            return CpuVerdict(name, False, "the CPU harness does not compile: "
                              + build.stderr.strip().splitlines()[0] if build.stderr else "")
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
    verdicts = []
    restructured = [d for d in result.decisions if d.action != "unchanged"]
    new_program = read_program(program.path, options.preprocessor, text=result.text) \
        if restructured else None
    for d in result.decisions:
        if d.action == "unchanged":
            verdicts.append(CpuVerdict(d.kernel, True, f"unchanged ({d.reason})"))
            continue
        verdicts.append(validate_kernel_cpu(program, new_program, d, arguments, seed))
    return verdicts
