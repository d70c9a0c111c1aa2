"""What running original and transformed kernels side by side needs, on any executor.

An `Experiment` fixes, for one changed kernel: the values of its int arguments (from the
launch site and --arg; arguments the model never reads get 1, as any value serves both
kernels alike), the arrays with their element types and footprints, the original launch
geometry and the new one (computed from the same range expressions the rewritten launch
uses), the extra arguments carrying the original geometry, and the two kernels' source
texts (preprocessed, renamed apart). The CPU and GPU executors only run it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import islpy as isl

from polycoal.codegen.kernel import capped_y_blocks
from polycoal.codegen.launch import GRID_LIMITS
from polycoal.frontend.cexpr import evaluate
from polycoal.frontend.launches import geometry_for
from polycoal.frontend.program import Kernel, Launch, Program
from polycoal.model import isl_helpers
from polycoal.optimize.assumptions import holds
from polycoal.model.kernel_model import KernelModel
from polycoal.decisions import SYNCHRONISING, KernelDecision

SCALAR_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "long", "long long",
                "short", "char", "unsigned char", "size_t", "int32_t", "uint32_t", "int64_t",
                "uint64_t", "clock_t", "time_t", "ptrdiff_t", "long long int", "unsigned long",
                "unsigned long long"}
UNKNOWN_MARGIN = 32             # extra elements of an array without a footprint


class NotRunnable(Exception):
    """The experiment cannot be set up; the message says what to give."""


@dataclass
class Array:
    name: str
    type: str
    size: int
    index_bound: int = 0                  # > 0: an int array filled with indices below it


@dataclass
class Experiment:
    kernel: Kernel
    model: KernelModel
    launch: Launch
    values: dict[str, int]                # int arguments
    arrays: list[Array]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    stages: list[StageRun]                # the transformed program's launches, in order
    hidden: list[int]                     # values of the extra arguments of the new kernel
    declarations: list[str]               # __device__ functions and variables
    original: str                         # kernel texts, renamed to the names below
    transformed: str
    original_name: str
    transformed_name: str
    synchronising: bool                   # the original needs its threads run together
    tolerance: float = 1e-5               # relative L2 error allowed


def rename_kernel(text: str, name: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", new, text, count=1)


def footprint(model: KernelModel, array: str, values: dict[str, int]) -> int:
    """1 + the largest element index any access of `array` touches."""
    fixed = " and ".join(f"{p} = {v}" for p, v in values.items() if p in model.parameters)
    top = 0
    for s, a in model.accesses():
        if a.array != array or a.flat is None:
            continue
        flat = a.flat.substitute({p: v for p, v in values.items()})
        if not flat.is_affine():
            raise NotRunnable(f"access {a.text}: its size depends on unknown parameters "
                              f"{sorted(flat.variables - set(model.dims))}")
        dom = isl_helpers.domain(model, s)
        if fixed:
            dom = dom.intersect_params(isl.Set(f"[{', '.join(model.parameters)}] -> "
                                               f"{{ : {fixed} }}"))
        if dom.is_empty():
            continue
        image = isl.Map(f"[{', '.join(model.parameters)}] -> {{ {s.name}[{', '.join(model.dims)}]"
                        f" -> [{flat.to_c('*')}] }}").intersect_domain(dom).range()
        high = image.lexmax().sample_point()
        low = image.lexmin().sample_point()
        if int(low.get_coordinate_val(isl.dim_type.set, 0).to_python()) < 0:
            raise NotRunnable(f"access {a.text} reaches a negative index")
        top = max(top, int(high.get_coordinate_val(isl.dim_type.set, 0).to_python()) + 1)
    return max(top, 1)


def launch_values(grid, block) -> dict[str, int]:
    """The model's launch parameters for a launch of this grid and block."""
    out = {}
    for k, a in enumerate("xyz"):
        out.update({f"gridDim_{a}": grid[k], f"blockDim_{a}": block[k],
                    f"nthreads_{a}": grid[k] * block[k]})
    return out


@dataclass
class StageRun:
    kernel: str                           # name in the experiment's source
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    synchronising: bool
    shared: int = 0                       # dynamic shared memory (codegen/kernel.Stage)


def new_launches(d: KernelDecision, grid, block, values: dict[str, int],
                 renamed: dict[str, str]) -> list[StageRun]:
    """The launches that replace one original launch of this grid and block."""
    if d.action == "permuted":
        src = d.permutation.source
        return [StageRun(renamed[d.kernel], tuple(grid["xyz".index(src[n])] for n in "xyz"),
                         tuple(block["xyz".index(src[n])] for n in "xyz"), False)]
    known = {**values, **launch_values(grid, block)}
    runs = []
    for st in d.generated.stages:
        new_grid = []
        for r in st.ranges:
            lo = evaluate(r.host_lo, lambda n, m: known.get(n))
            hi = evaluate(r.host_hi, lambda n, m: known.get(n))
            if lo is None or hi is None:
                raise NotRunnable(f"the range of axis {r.axis} ({r.host_lo} .. {r.host_hi}) "
                                  "needs values for its arguments: give --arg NAME=VALUE")
            extent = int(hi) - int(lo) + 1
            b = st.per_block["xyz".index(r.axis)]
            new_grid.append(max(1, min(-(-extent // b), GRID_LIMITS[r.axis])))
        if len(new_grid) >= 2:
            new_grid[1] = capped_y_blocks(new_grid[1], new_grid[0], st.target_blocks)
        new_grid += [1] * (3 - len(new_grid))
        runs.append(StageRun(renamed.get(st.kernel, st.kernel), tuple(new_grid),
                             tuple(st.block), d.action in SYNCHRONISING, st.shared))
    return runs


def reassociation_tolerance(model: KernelModel, values: dict[str, int]) -> float:
    """Relative error a reassociated float32 sum of length L may show: the rounding
    errors of the two orders are random walks of about sqrt(L) unit roundoffs each, so
    8 * 2^-24 * sqrt(L) leaves a wide margin while still catching a wrong or missing
    term (which moves the result by about 1/L, far more for the lengths used)."""
    from polycoal.analysis.counting import count_statement
    rows = 1
    for t in model.thread_dims:
        v = t.extent.substitute(values)
        rows *= int(v.constant()) if v.is_constant() else 1
    longest = 1
    for s in model.statements:
        if s.loops:
            c = count_statement(model, s).value or 1
            longest = max(longest, c // max(rows, 1))
    return 8 * 2.0 ** -24 * longest ** 0.5


@dataclass
class LaunchSetup:
    """What running a kernel as its (first) launch site sets it up needs."""

    launch: Launch
    values: dict[str, int]                # int arguments
    arrays: list[Array]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    declarations: list[str]               # __device__ functions and variables


def setup_launch(program: Program, kernel: Kernel, model: KernelModel,
                 arguments: dict[str, int]) -> LaunchSetup:
    """Argument values, arrays and geometry of the kernel's first launch site.

    An array without a footprint (reached through a non-affine subscript, `x[P[i]]`, or
    only outside the model, `rowptr[i + 1]` in a loop bound) gets the size B of the
    largest other array or of the launch, whichever is larger, plus UNKNOWN_MARGIN
    elements for neighbours' reads; the int arrays of such a kernel hold indices below
    B, so that indirect references stay in bounds."""
    launches = program.launches_of(kernel.name)
    if not launches:
        raise NotRunnable(f"kernel '{kernel.name}' has no launch site in the file")
    launch = launches[0]
    values = {k: int(v) for k, v in launch.constant_arguments.items()
              if isinstance(v, (int, float))}
    # a value given for a variable of the launching function (`--arg n=1000` where main
    # passes n to the kernel's nrows) is its parameter's value, and the geometry's
    parameters = {p.name for p in kernel.parameters}
    host = {name: v for name, v in arguments.items() if name not in parameters}
    for position, argument in enumerate(launch.arguments):
        if argument.strip() in host and position < len(kernel.parameters):
            values.setdefault(kernel.parameters[position].name, host[argument.strip()])
    values.update({name: v for name, v in arguments.items() if name in parameters})
    grid, block = geometry_for(launch, kernel, values, host)
    if block is None or grid is None:
        raise NotRunnable(f"the launch at line {launch.location.line} has no compile-time "
                          "geometry: give the sizes with -D, or the values it is computed "
                          "from (kernel arguments or the launching function's variables) "
                          "with --arg NAME=VALUE")
    used = {v for st in model.statements for c in st.constraints
            for v in re.findall(r"[A-Za-z_]\w*", c)}
    used |= {v for _, a in model.accesses() if a.flat is not None for v in a.flat.variables}
    ints = [p for p in kernel.parameters if not p.is_pointer and p.type in SCALAR_TYPES
            and p.type not in ("float", "double")]
    for p in ints:
        if p.name not in values and p.name not in used:
            values[p.name] = 1
    missing = [p.name for p in ints if p.name not in values]
    if missing:
        raise NotRunnable(f"no value for int argument(s) {', '.join(missing)}: "
                          "give --arg NAME=VALUE")
    arrays = []
    fixed = {**values, **launch_values(grid, block)}    # a run-time geometry's parameters
    for p in kernel.parameters:
        if p.is_pointer:
            if p.type not in SCALAR_TYPES:
                raise NotRunnable(f"array '{p.name}' of type {p.type} is not supported")
            arrays.append(Array(p.name, p.type, footprint(model, p.name, fixed)))
        elif p.type not in SCALAR_TYPES:
            raise NotRunnable(f"argument '{p.name}' of type {p.type} is not supported")
    affine = {a.array for _, a in model.accesses() if a.flat is not None}
    unknown = {a.array for _, a in model.accesses() if a.flat is None}
    unknown |= {a.name for a in arrays} - affine
    if unknown & {a.name for a in arrays}:
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        bound = max([a.size for a in arrays if a.name not in unknown] + [threads])
        arrays = [replace(a, size=bound + UNKNOWN_MARGIN) if a.name in unknown else a
                  for a in arrays]
        arrays = [replace(a, index_bound=bound) if a.type not in ("float", "double") else a
                  for a in arrays]
    return LaunchSetup(launch, values, arrays, grid, block, program_declarations(program))


def program_declarations(program: Program) -> list[str]:
    """What the program's kernels may use beside their own text, as a module of them
    declares it: the file's integer constants first (kernels and device functions may
    read them), its __device__ variables, then its device functions."""
    declarations = []
    for name, value in sorted(program.constants.items()):
        declared = program.constant_types.get(name, "?")   # unsigned compares unsigned
        ctype = "long long" if declared == "?" else declared
        declarations.append(f"static const {ctype} {name} = ({ctype}){value}LL;")
    declarations += [g.expanded for g in program.globals.values() if g.expanded]
    declarations += [f.expanded for f in program.device_functions.values() if f.expanded]
    return declarations


def prepare(program: Program, new_program: Program, d: KernelDecision,
            arguments: dict[str, int]) -> Experiment:
    kernel = program.kernel(d.kernel)
    model = d.analysis.model
    if d.assumption is not None:       # the arrays for any values, not only the checked
        model = replace(model, context=[c for c in model.context
                                        if c != d.assumption.constraint])
    setup = setup_launch(program, kernel, model, arguments)
    launch, values, arrays = setup.launch, setup.values, setup.arrays
    grid, block = setup.grid, setup.block
    if d.collapsed:      # the original's meaning without its racing copies: one of each
        keep = ["xyz"[k] not in d.collapsed for k in range(3)]
        grid = tuple(g if k else 1 for g, k in zip(grid, keep))
        block = tuple(b if k else 1 for b, k in zip(block, keep))
    names = (f"{kernel.name}__original", f"{kernel.name}__transformed")
    if d.assumption is not None and \
            holds(d.assumption, {**values, **launch_values(grid, block)}) is False:
        # the launch's run-time check fails at these values: the output runs the original
        return Experiment(
            kernel, model, launch, values, arrays, grid, block,
            [StageRun(names[1], grid, block, model.synchronises)], [], setup.declarations,
            rename_kernel(kernel.expanded, kernel.name, names[0]),
            rename_kernel(kernel.expanded, kernel.name, names[1]), names[0], names[1],
            model.synchronises)
    stages = new_launches(d, grid, block, values, {kernel.name: names[1]})
    hidden = []
    if d.action != "permuted":
        lv = launch_values(grid, block)
        hidden = [lv[h] for h in d.generated.hidden]
    # and the device variables the new kernels declare (a column split's partial sums)
    declarations = setup.declarations + [
        g.expanded for name, g in new_program.globals.items()
        if name not in program.globals and g.expanded]
    transformed = [rename_kernel(new_program.kernel(d.emitted).expanded, d.emitted,
                                 names[1])]
    if d.action != "permuted":
        transformed = [new_program.kernel(st.kernel).expanded if st.kernel != kernel.name
                       else transformed[0] for st in d.generated.stages]
    tolerance = 1e-5
    if d.reassociates:
        tolerance = max(tolerance, reassociation_tolerance(model, values))
    return Experiment(
        kernel, model, launch, values, arrays, grid, block, stages, hidden, declarations,
        rename_kernel(kernel.expanded, kernel.name, names[0]), "\n\n".join(transformed),
        names[0], names[1], model.synchronises,
        tolerance)


def run_changed(program: Program, result, options, run, unchanged):
    """run(program, new_program, decision) for every changed kernel, unchanged(decision)
    for the others, in the program's order."""
    from polycoal.frontend import read_again
    program = result.program or program        # the lowered program the decisions name
    changed = [d for d in result.decisions if d.action != "unchanged"]
    new_program = read_again(program, options.preprocessor, result.text) \
        if changed else None
    return [run(program, new_program, d) if d.action != "unchanged" else unchanged(d)
            for d in result.decisions]
