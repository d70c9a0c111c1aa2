"""Data placement across memory kinds for a whole program (`polycoal place`): for every
kernel, the arrays it reads, their legal memories and predicted costs
(optimize/placement.py), the chosen placement, and the program rewritten with it
(codegen/placement.py). A kernel whose placement cannot be written, or whose rewritten
text does not read back as the same accesses, stays as written, with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections import Counter
from collections.abc import Mapping

import islpy as isl

from polycoal.analysis.aliasing import distinct_arrays
from polycoal.analysis.dependences import detect_races
from polycoal.analysis.irregular import read_only_parameters
from polycoal.analysis.placement_cost import array_reads, split_offset, store_waits, tile_shape
from polycoal.codegen.irregular import mark_writes, runtime_position
from polycoal.model.isl_c import condition_to_c, pw_aff_to_c
from polycoal.frontend.launch_text import launch_parts, launch_values
from polycoal.codegen.placement import (NotRewritable, Staging, constant_declarations,
                                        fill_states, prototype_edits, renamed, rewrite_kernel,
                                        rewrite_launch, runtime, symbol)
from polycoal.decisions import internal_error
from polycoal.diagnostics import Diagnostic, InputError
from polycoal.frontend.cexpr import evaluate
from polycoal.frontend.program import Program, Span
from polycoal.model.kernel_model import reserved_argument
from polycoal.model.memory_spec import MemorySpec
from polycoal.model.poly import Poly
from polycoal.optimize.layout_cost import host_loops, weight_at
from polycoal.optimize.placement import ArrayChoice, KernelPlacement, choose, gain_terms, options
from polycoal.optimize.reorganise import (HostWrites, host_writes, launches_per_build,
                                         plain_name, written_parameters)

_SIZES = {"char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "short": 2,
          "unsigned short": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4,
          "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8,
          "double": 8, "size_t": 8, "float2": 8, "int2": 8, "float4": 16, "int4": 16,
          "double2": 16}
LARGE_PARAMETER = 1 << 24    # a size known only at run time, when choosing for large ones


@dataclass
class ProgramPlacement:
    kernels: list[KernelPlacement] = field(default_factory=list)
    text: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)


class _Allocations(Mapping):
    """`_allocation_bytes`, read (a preprocessor run) the first time a size is asked."""

    def __init__(self, program: Program, preprocessor):
        self._program, self._preprocessor, self._bytes = program, preprocessor, None

    def _read(self) -> dict[str, int]:
        if self._bytes is None:
            self._bytes = _allocation_bytes(self._program, self._preprocessor)
        return self._bytes

    def __getitem__(self, name: str) -> int:
        return self._read()[name]

    def __iter__(self):
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _allocation_bytes(program: Program, preprocessor) -> dict[str, int]:
    """Bytes of each variable's cudaMalloc where the size is a constant: read from the
    preprocessed program (its macros expanded, a header's too), sizeof of the basic
    types known; a variable allocated twice, the smaller."""
    from polycoal.frontend.preprocess import preprocess
    try:
        text = preprocess(program.path, preprocessor, text=program.text).user_text()
    except Exception:                 # no preprocessor: the sizes stay unknown
        return {}
    out: dict[str, int] = {}
    for m in re.finditer(r"\bcudaMalloc\s*\(\s*(?:\([^()]*\)\s*)?&\s*(\w+)\s*,", text):
        depth, k = 1, m.end()
        while k < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        size = re.sub(r"\bsizeof\s*\(\s*([\w ]+?)\s*\)",
                      lambda x: str(_SIZES.get(x.group(1), "sizeof")), text[m.end():k - 1])
        value = evaluate(size)
        if isinstance(value, int) and value > 0:
            out[m.group(1)] = min(value, out.get(m.group(1), value))
    return out


def _argument_elements(program: Program, kernel, allocated: dict[str, int]) -> dict[str, int]:
    """Per pointer parameter, the elements of the allocation every launch passes it
    (the same variable, allocated once with a constant size)."""
    out = {}
    launches = program.launches_of(kernel.name)
    for k, p in enumerate(kernel.parameters):
        if not p.is_pointer or not launches or p.type not in _SIZES:
            continue
        names = {lz.arguments[k].strip() if k < len(lz.arguments) else "" for lz in launches}
        if len(names) == 1 and next(iter(names)) in allocated:
            out[p.name] = allocated[next(iter(names))] // _SIZES[p.type]
    return out


@dataclass(frozen=True)
class HostFacts:
    """What the host code says about refilling copies: its loops and its writes to
    the arrays passed to kernels."""

    loops: list
    writes: HostWrites

    @staticmethod
    def of(program: Program) -> "HostFacts":
        loops = host_loops(program.tokens, [k.span for k in program.kernels if k.span])
        passed = {plain_name(a) for lz in program.launches for a in lz.arguments} - {None}
        return HostFacts(loops, host_writes(program, passed, written_parameters(program.kernels)))

    def fill_share(self, program: Program, kernel, array: str) -> tuple[float, bool]:
        """(the share of the kernel's launches that fill a copy of `array`: its fills
        over its launches per run, each launch site filling once per trip of a host loop
        around it that also writes the array; whether the copy can be kept between
        launches: every launch passes a variable whose host writes polycoal follows)."""
        position = next(k for k, p in enumerate(kernel.parameters) if p.name == array)
        launches = fills = 0.0
        for launch in program.launches_of(kernel.name):
            name = plain_name(launch.arguments[position]) \
                if position < len(launch.arguments) else None
            if name is None or launch.span is None or name not in self.writes.tracked or \
                    name in self.writes.escaped:
                return 1.0, False
            runs = weight_at(self.loops, launch.span.start)
            launches += runs
            fills += runs / launches_per_build(self.loops, launch.span.start, self.writes,
                                               {name})
        return (min(fills / launches, 1.0), True) if launches else (1.0, False)


def _assumed(placement, placed: dict[str, str]):
    """The parameters' values the staged arrays' tiles assume (ArrayReads.assumed),
    where they are not every value; else None."""
    out = None
    for a in placement.arrays:
        if placed.get(a.reads.array) == "shared" and a.reads.assumed is not None:
            out = a.reads.assumed if out is None else out.intersect(a.reads.assumed)
    if out is None or out.is_equal(isl.Set.universe(out.get_space())):
        return None
    return out


def _parameters(condition) -> list[str]:
    return [condition.get_dim_name(isl.dim_type.param, k)
            for k in range(condition.dim(isl.dim_type.param))]


def _block(program: Program, kernel, model) -> tuple[int, int] | None:
    """(x, y) threads of every launch's block where all launches use blocks of one
    shape known when compiling, one- or two-dimensional, of whole warps; else None."""
    shapes = {lz.block_shape for lz in program.launches_of(kernel.name)}
    if len(shapes) != 1 or None in shapes:
        return None
    x, y, z = next(iter(shapes))
    return (x, y) if z == 1 and (x * y) % 32 == 0 else None


def _thread_obstacle(model) -> str | None:
    """Why the kernel's threads may not be independent (a race, or a write polycoal
    cannot place), or None."""
    unknown = [a for _, a in model.accesses() if a.kind == "write" and a.space == "global"
               and not a.atomic and (a.flat is None or not a.flat.is_affine())]
    if unknown:
        return (f"its write {unknown[0].text} is not affine: polycoal cannot show its "
                "threads independent")
    races = detect_races(model)
    if races:
        return (f"its threads race on '{races[0].array}' ({races[0].kind}, threads apart "
                f"along {', '.join(races[0].thread_dims)}): its result depends on their "
                "order, which a placement would change")
    return None


def plan_kernel(program: Program, kernel, model, spec: MemorySpec,
                overrides: dict[str, str], allocated: dict[str, int],
                host: HostFacts | None = None, observed: dict | None = None
                ) -> KernelPlacement:
    placement = KernelPlacement(kernel.name)
    reads = array_reads(model, _argument_elements(program, kernel, allocated), observed)
    read_only = read_only_parameters(kernel) or set()
    distinct, evidence = distinct_arrays(program, kernel, model)
    pointers = {p.name: p.type for p in kernel.parameters if p.is_pointer}
    obstacle = _thread_obstacle(model)
    block = _block(program, kernel, model)
    # sizes the launches give only at run time: priced large, the launches decide
    unknown = [p for p in model.parameters if p not in model.parameter_values]
    large = {p: model.parameter_values.get(p, LARGE_PARAMETER) for p in model.parameters} \
        if unknown else None
    for name, r in sorted(reads.items()):
        alias = None if distinct else evidence
        share = host.fill_share(program, kernel, name)[0] if host and name in pointers \
            else 1.0
        tile = tile_shape(r, block) if block and r.halo is not None else (0, 0)
        choice = ArrayChoice(r, options(r, spec, name in read_only, alias, pointers.get(name),
                                        share, large, obstacle, block), fill_share=share,
                             tile_bytes=tile[0] * tile[1] * r.element_size)
        wanted = overrides.get(name)
        if wanted is not None:
            spec.memory(wanted)
            option = next(o for o in choice.options if o.memory == wanted)
            if option.cost is None:
                raise InputError(f"--place {kernel.name}:{name}={wanted}: {option.why_not}")
            choice.chosen, choice.forced = wanted, True
        placement.arrays.append(choice)
    if not placement.arrays:
        placement.reason = "it reads no global array"
        return placement
    restrict = {p.name for p in kernel.parameters if p.is_pointer and p.is_restrict}
    placement.ordered = frozenset(m.name for m in spec.memories if m.ordered)
    placement.waits = store_waits(model, reads, spec, restrict, large)
    placement = choose(placement, spec)
    if obstacle and not placement.applied:
        placement.reason = obstacle
    placement.sized = placement.applied and large is not None and \
        not any(a.forced for a in placement.arrays) and any(
        a.chosen != "global" and spec.memory(a.chosen).fill_cost > 0 for a in placement.arrays)
    return placement


def launch_condition(program: Program, launch, kernel, terms, fill: float,
                     kept: str | None) -> str:
    """C text, true where this launch should run the placed kernel: its predicted gain
    (the sum of gain_terms at its arguments and geometry) against the fill: with `kept`
    (the arguments of polycoal_fill_worth before the gain: a copy kept between launches),
    rent or buy; else the gain must pay the whole fill at each launch."""
    values = launch_values(program.text, launch, kernel, "double")
    parts = []
    for poly, lanes, gain in terms:
        for monomial, coefficient in poly.terms.items():
            factors = [f"{float(coefficient) * gain / lanes!r}"]
            for v in monomial:
                if v not in values:
                    raise NotRewritable(f"the launch at line {launch.location.line} does not "
                                        f"give '{v}' plainly")
                factors.append(values[v])
            parts.append(" * ".join(factors))
    gain = " + ".join(parts) or "0.0"
    if kept:
        return f"polycoal_fill_worth({kept}, {gain}, {fill!r})"
    return f"{gain} > {fill!r}"


def kept_copy(program: Program, launch, kernel, constants, cached) -> str | None:
    """The state, source and stream of the first constant array's copy where every one
    is kept between launches (they are filled together), as arguments of
    polycoal_fill_worth; else None."""
    if not constants or set(constants) - set(cached):
        return None
    _, config, args = launch_parts(program.text, launch)
    stream = config[3] if len(config) > 3 else "0"
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    first = sorted(constants)[0]
    return (f"{symbol(kernel.name, first)}_filled, (const void *)({args[position[first]]}), "
            f"(cudaStream_t)({stream})")


def _same_reads(before, after, renamed: dict[str, str],
                staged: dict[str, Staging] | None = None,
                block: tuple[int, int] | None = None) -> bool:
    """Whether two models read and write the same elements, the arrays of `renamed`
    under their new names, and each staged array read from its tile where the tile
    holds that element: one-dimensional, A[f] as pc_tile_A[f - (blockIdx.x B + low)];
    two-dimensional, A[(gy + di) W + gx + dj] as pc_tile_A[(ty + di - top) C + tx +
    dj - low], each read in the text's order (the kernel's barrier splits its indices
    gx into B bx + tx, gy into B' by + ty; the statements that fill the tiles aside)."""
    staged = staged or {}
    names = [d.name for d in before.thread_dims]
    split = sorted(names) in (["gx"], ["gx", "gy"]) and \
        {d.name for d in after.thread_dims} == {"bx", "tx", "by", "ty"} - \
        ({"by", "ty"} if names == ["gx"] else set())
    # the block's size: the launches', or blockDim where the kernel checked is not
    # launched (a second kernel each launch chooses)
    sizes = [(Poly.const(block[0]), Poly.const(block[1]))] if block else []
    sizes.append((Poly.var("blockDim_x"), Poly.var("blockDim_y")))
    return any(_same_under(before, after, renamed, staged, size if split else None)
               for size in sizes)


def _same_under(before, after, renamed, staged, size) -> bool:
    sub = {} if size is None else {"gx": Poly.var("bx") * size[0] + Poly.var("tx"),
                                   "gy": Poly.var("by") * size[1] + Poly.var("ty")}
    tiles = {f"pc_tile_{a}" for a in staged}
    filling = {s.name for s in after.statements
               if any(a.kind == "write" and a.array in tiles for a in s.accesses)}

    def flat(a):
        return None if a.flat is None else a.flat.substitute(sub)

    old, ordered = Counter(), {}
    for _, a in before.accesses():
        if a.space == "private":
            continue
        if a.array in staged and (size is None or a.flat is None):
            return False
        st = staged.get(a.array)
        if st is not None and st.width:
            ordered.setdefault(f"pc_tile_{a.array}", []).append((a.location, a))
        elif st is not None:
            shift = Poly.var("bx") * size[0] + st.low
            old[(f"pc_tile_{a.array}", a.kind, str(flat(a) - shift))] += 1
        else:
            old[(renamed.get(a.array, a.array), a.kind, str(flat(a)))] += 1
    new, tiled = Counter(), {}
    for s, a in after.accesses():
        if a.space == "private" or s.name in filling:
            continue
        if a.array in ordered:
            tiled.setdefault(a.array, []).append((a.location, a))
        else:
            new[(a.array, a.kind, str(a.flat))] += 1
    for name, reads in ordered.items():
        # each read's own row and column offsets (di, dj), from its subscript (not from
        # the plan the rewrite followed), against the tile read at its place in the text
        st, expected = staged[name[len("pc_tile_"):]], []
        for _, a in sorted(reads, key=lambda x: (x[0].line, x[0].col)):
            parts = split_offset(a.flat - Poly.var("gx") - Poly.var("gy") * st.width,
                                 st.width)
            if parts is None:
                return False
            expected.append(str((Poly.var("ty") + parts[0] - st.top) * st.columns +
                                Poly.var("tx") + parts[1] - st.low))
        found = [str(a.flat) for _, a in sorted(tiled.get(name, []),
                                                key=lambda x: (x[0].line, x[0].col))]
        if expected != found:
            return False
    return old == new


def _staging(reads, block: tuple[int, int]) -> Staging:
    """The tile of a staged array (codegen/placement.Staging).

    Why the tile serves every read: one-dimensional, a thread of block b reads
    A[gx + o], gx in [b B, b B + B) (B = blockDim.x), o in [low, high]; so the block
    reads elements of [b B + low, b B + B + high], the tile's B + high - low elements
    from b B + low. Two-dimensional, the same along each axis: a thread reads the
    element of row gy + di and column gx + dj (a column: proven, analysis/
    placement_cost._rows), within the block's rows [by B' + top, by B' + B' + bottom]
    and columns likewise. An element is loaded only where the launch reads it (between
    the lowest and highest element any thread reads, where the kernel reads any):
    every element a thread reads is loaded, and nothing the original would not read
    is (the array is contiguous between them)."""
    low, high = reads.halo
    lowest, highest = reads.bounds
    where = lowest.domain().intersect(highest.domain()).params()
    # the launch's sizes, read inside the kernel
    names = {f"nthreads_{a}": f"((long long)gridDim.{a} * blockDim.{a})" for a in "xyz"}
    names.update({f"gridDim_{a}": f"((long long)gridDim.{a})" for a in "xyz"})
    names.update({f"blockDim_{a}": f"((long long)blockDim.{a})" for a in "xyz"})
    inside = (f"PC_ELEMENT >= ({pw_aff_to_c(lowest, names)}) && "
              f"PC_ELEMENT <= ({pw_aff_to_c(highest, names)})")
    if not where.is_equal(isl.Set.universe(where.get_space())):
        inside = f"({condition_to_c(where, names)}) && {inside}"
    rows, columns = tile_shape(reads, block)
    if reads.rows is None:
        return Staging(low, rows, columns, inside)
    width, top, _ = reads.rows
    return Staging(low, rows, columns, inside, width, top, reads.shifts)


def irregular_reads(model) -> bool:
    """Whether the kernel reads global memory at a subscript that is not affine."""
    return any(a.kind == "read" and a.space == "global" and (a.flat is None or
                                                             not a.flat.is_affine())
               for _, a in model.accesses())


def trace_reads(program: Program, arguments: dict[str, int], seed: int = 1
                ) -> tuple[dict[str, dict], dict[str, str]]:
    """The traced requests (dynamic/algorithm1.observed_loads) of every kernel that
    reads at subscripts that are not affine, run on the CPU as `polycoal trace` runs it;
    and per such kernel what was traced, or why it could not be."""
    from polycoal.analysis import analyze_kernel
    from polycoal.dynamic.algorithm1 import observed_loads
    from polycoal.dynamic.collect import trace_kernel
    observed, notes = {}, {}
    for kernel in program.kernels:
        if kernel.ast is None or kernel.is_template:
            continue
        try:
            ka = analyze_kernel(kernel, program)
            if ka.model is None or not irregular_reads(ka.model):
                continue
            trace = trace_kernel(ka, program, arguments, "cpu", seed=seed)
        except InputError:
            raise
        except Exception as error:      # the kernel is priced without its trace
            notes[kernel.name] = f"not traced: {type(error).__name__}: {error}"
            continue
        if trace.error:
            notes[kernel.name] = f"not traced: {trace.error}"
            continue
        observed[kernel.name] = observed_loads(trace.sites, trace.records)
        notes[kernel.name] = (f"traced on the CPU: {trace.sampling.blocks} of "
                              f"{trace.sampling.blocks_total} blocks, "
                              f"{len(trace.records)} records")
    return observed, notes


def place_program(program: Program, spec: MemorySpec,
                  overrides: dict[tuple[str | None, str], str] | None = None,
                  preprocessor=None, observed: dict[str, dict] | None = None,
                  trace_notes: dict[str, str] | None = None, veto=None,
                  only: set[str] | None = None) -> ProgramPlacement:
    """Every kernel's placement and the program with the applied ones written in;
    `observed`: per kernel, traced requests of its irregular reads (trace_reads), and
    `trace_notes` what was traced; `veto(program, kernel, placement)`: why a placement
    the planner chose is not taken (a second judge: the driver's performance model),
    or None; `only`: the kernels to place (None: every kernel)."""
    from polycoal.frontend import read_again
    from polycoal.model.extract import extract_model
    from polycoal.frontend.preprocess import PreprocessorOptions
    overrides = overrides or {}
    observed, trace_notes = observed or {}, trace_notes or {}
    preprocessor = preprocessor or PreprocessorOptions()
    result = ProgramPlacement(text=program.text)
    allocated = _Allocations(program, preprocessor)
    host = HostFacts.of(program)
    edits: list[tuple[Span, str]] = []
    cached_variables: set[str] = set()
    for kernel in program.kernels:
        if only is not None and kernel.name not in only:
            result.kernels.append(KernelPlacement(kernel.name, reason="not a candidate of "
                                                  "the placement pass"))
            continue
        reserved = reserved_argument(kernel)
        if kernel.ast is None or kernel.span is None or kernel.is_template or reserved:
            result.kernels.append(KernelPlacement(kernel.name, reason=kernel.unsupported or
                                                  reserved or "a template, or not parsed"))
            continue
        mine = {a: m for (k, a), m in overrides.items() if k in (None, kernel.name)}
        try:
            model = extract_model(kernel, program, signed=False)
            placement = plan_kernel(program, kernel, model, spec, mine, allocated, host,
                                    observed.get(kernel.name))
            placement.traced = trace_notes.get(kernel.name)
        except InputError:
            raise
        except Exception as error:     # confined to this kernel: it stays as written
            diagnostic, reason = internal_error(kernel.name, kernel.location, error,
                                                "planning its placement")
            result.kernels.append(KernelPlacement(kernel.name, reason=reason))
            result.diagnostics.append(diagnostic)
            continue
        result.kernels.append(placement)
        if placement.applied and veto is not None and not any(a.forced for a in placement.arrays):
            why = veto(program, kernel, placement)
            if why:
                placement.applied, placement.reason = False, why
                for a in placement.arrays:
                    a.chosen = "global"
        if not placement.applied:
            continue
        placed = {a.reads.array: spec.memory(a.chosen).spelling for a in placement.arrays
                  if a.chosen != "global"}
        constants = {a.reads.array: (a.reads.first, a.reads.last) for a in placement.arrays
                     if placed.get(a.reads.array) == "constant"}
        counts = Counter(a.array for _, a in model.accesses() if a.space == "global")
        block = _block(program, kernel, model)
        staging = {a.reads.array: _staging(a.reads, block) for a in placement.arrays
                   if placed.get(a.reads.array) == "shared"}
        cached = {a for a in constants if host.fill_share(program, kernel, a)[1]}
        try:
            written = rewrite_kernel(program, kernel, placed,
                                     {a: last + 1 for a, (_, last) in constants.items()},
                                     {a: counts[a] for a in placed}, staging)
            text = fill_states(kernel, constants) + written
            name = kernel.name
            assumed = _assumed(placement, placed)
            if placement.sized or assumed is not None:   # both kernels; each launch chooses
                name = f"{kernel.name}_pc_placed"
                terms, fill = gain_terms(placement, spec)
                text = program.text[kernel.span.start:kernel.span.end] + "\n" + \
                    renamed(text, kernel.name, name)

                def condition(lz):
                    parts = []
                    if assumed is not None:     # the tiles' assumption at this launch
                        values = launch_values(program.text, lz, kernel, "long long")
                        if not set(_parameters(assumed)) <= set(values):
                            raise NotRewritable(f"the launch at line {lz.location.line} does "
                                                "not give the sizes the staging assumes "
                                                "plainly")
                        parts.append(condition_to_c(assumed, values))
                    if placement.sized:
                        parts.append(launch_condition(
                            program, lz, kernel, terms, fill,
                            kept_copy(program, lz, kernel, constants, cached)))
                    return " && ".join(f"({x})" for x in parts)
                launches = [(lz.span, rewrite_launch(program, lz, kernel, constants, cached,
                                                     name, condition(lz)))
                            for lz in program.launches_of(kernel.name) if lz.span is not None]
                placement.assumed = None if assumed is None else condition_to_c(assumed)
            else:
                launches = [(lz.span, rewrite_launch(program, lz, kernel, constants, cached))
                            for lz in program.launches_of(kernel.name) if lz.span is not None]
            # the kernel's forward declarations (a copy's prototype) as placed
            declared = prototype_edits(program, kernel, placed, name)
            check = read_again(program, preprocessor, program.text[
                :kernel.span.start] + text + program.text[kernel.span.end:])
            after = extract_model(check.kernel(name), check, signed=False)
            if not _same_reads(model, after, {a: symbol(kernel.name, a)
                                              for a in constants}, staging, block):
                raise NotRewritable("the rewritten kernel does not read back as the same "
                                    "accesses")
        except Exception as why:       # NotRewritable, or confined: it stays as written
            placement.applied, placement.reason = False, str(why)
            for a in placement.arrays:
                a.chosen = "global"
            if not isinstance(why, NotRewritable):
                diagnostic, placement.reason = internal_error(
                    kernel.name, kernel.location, why, "writing its placement")
                result.diagnostics.append(diagnostic)
            continue
        placement.written, placement.constants = check.kernel(name).expanded, constants
        placement.placed_name = name
        placement.declarations = constant_declarations(
            kernel, placed, {a: last + 1 for a, (_, last) in constants.items()})
        edits.append((kernel.span, text))
        edits.extend(launches)
        edits.extend((Span(start, end), new) for start, end, new in declared)
        position = {p.name: k for k, p in enumerate(kernel.parameters)}
        cached_variables |= {plain_name(lz.arguments[position[a]])
                             for lz in program.launches_of(kernel.name) for a in cached}
    read = {(k.kernel, a.reads.array) for k in result.kernels for a in k.arrays}
    for (kernel, array), memory in overrides.items():
        if not any(array == a and kernel in (None, k) for k, a in read):
            who = f"kernel '{kernel}' reads" if kernel else "no kernel reads"
            raise InputError(f"--place {kernel + ':' if kernel else ''}{array}={memory}: "
                             f"{who} a global array '{array}'" if not kernel else
                             f"--place {kernel}:{array}={memory}: {who} no global array "
                             f"'{array}'")
    if any(spec.memory(a.chosen).spelling == "constant" for k in result.kernels
           for a in k.arrays):
        marks = host_writes(program, cached_variables, written_parameters(program.kernels)).marks \
            if cached_variables else []
        replaced = {span.start for span, _ in edits}
        edits += mark_writes([m for m in marks
                              if not (m[1] == "call" and m[0].start in replaced)])
        first = min(span.start for span, _ in edits)
        at = runtime_position(program, first)
        edits.append((Span(at, at), runtime()))
    out = program.text
    # from the end; at one position a replacement before the insertions there
    for span, text in sorted(edits, key=lambda e: (e[0].start, e[0].end > e[0].start),
                             reverse=True):
        out = out[:span.start] + text + out[span.end:]
    result.text = out
    return result
