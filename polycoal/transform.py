"""`transform_program`: decide, generate, validate and splice, kernel by kernel.

For each kernel, in this order of preference:
1. polyhedral restructuring (affine, race-free kernels without synchronisation): the
   restructuring ILP chooses the dims for the new thread axes; the kernel is generated
   from the isl AST, its launches rewritten, and the result proven equivalent by
   translation validation, or the kernel is kept;
2. otherwise it is left byte-identical, with a diagnostic that says why.
Only the text of transformed kernels and of their launch statements changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polycoal.analysis import KernelAnalysis, analyze_kernel
from polycoal.analysis.aliasing import distinct_arrays
from polycoal.codegen.kernel import GeneratedKernel, default_block, generate_kernel
from polycoal.codegen.launch import rewrite_launch
from polycoal.diagnostics import Diagnostic, InputError
from polycoal.dynamic.empirical import Choice, candidate_sources, search
from polycoal.frontend import read_program
from polycoal.frontend.lexer import tokenize
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.frontend.program import Kernel, Program, Span
from polycoal.codegen.permute import builtin_uses, permute_kernel, permute_launch
from polycoal.frontend.dialect import cuda_dialect
from polycoal.optimize.permutation import Permutation, is_identity, solve_permutation
from polycoal.codegen.column import (generate_column_blocks, generate_column_split,
                                     generate_tiled_reduction, split_extents)
from polycoal.optimize.reduction import column_reduction_obstacle, row_reduction_obstacle
from polycoal.optimize.restructure import Mapping, original_axes, solve_mapping
from polycoal.validate.translation import validate_translation
from polycoal.model.extract import extract_model


@dataclass(frozen=True)
class TransformOptions:
    kernel: str | None = None
    block: tuple[int, int, int] | None = None
    polyhedral: bool = True
    assume_no_alias: bool = False
    collapse_redundant: bool = False  # run one copy of threads racing along unread axes
    reduction: str = "auto"   # auto (warp rows, split columns) | warp | block | tiles | split
    #                                  | none: how reduction loops are restructured
    promote: bool = True             # register promotion of accumulators in new kernels
    empirical: bool = False          # choose permutations by tracing (dynamic/empirical.py)
    empirical_fallback: bool = True  # ... also when the static model cannot tell the axes apart
    arguments: tuple[tuple[str, int], ...] = ()   # int kernel arguments for those traces
    preprocessor: PreprocessorOptions = PreprocessorOptions()

# Actions whose kernels add floating-point values in another order than the original's.
REASSOCIATING = frozenset({"reduced", "columns", "split", "tiled"})
GENERATED = REASSOCIATING | {"restructured"}     # the kernel is regenerated (d.generated)
CHANGED = GENERATED | {"permuted"}                # the output differs from the input


@dataclass
class KernelDecision:
    kernel: str
    action: str                      # "restructured" | "permuted" | "unchanged"
    reason: str
    mapping: Mapping | None = None
    permutation: Permutation | None = None
    alias_evidence: str = ""
    collapsed: frozenset = frozenset()   # axes whose redundant copies were collapsed
    generated: GeneratedKernel | None = None
    analysis: KernelAnalysis | None = None
    empirical: Choice | None = None  # the traced candidates, when the search ran


@dataclass
class TransformResult:
    text: str
    decisions: list[KernelDecision]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _other_uses(program: Program, kernel: Kernel) -> list[int]:
    """Lines where the kernel's name is used other than in its definition or a launch."""
    spans = [kernel.span] + [l.span for l in program.launches_of(kernel.name)]
    lines = []
    for t in tokenize(program.text):
        if t.text == kernel.name and not any(s and s.start <= t.start < s.end for s in spans):
            lines.append(t.line)
    return lines


def _prototype_lines(program: Program, kernel: Kernel) -> set[int]:
    """Lines of forward declarations `__global__ void k(...);` (harmless uses)."""
    tokens = tokenize(program.text)
    out = set()
    for k, t in enumerate(tokens):
        if t.text == kernel.name and k + 1 < len(tokens) and tokens[k + 1].text == "(" and \
                any(x.text == "__global__" for x in tokens[max(0, k - 6):k]):
            out.add(t.line)
    return out


def plan_kernel(program: Program, kernel: Kernel, options: TransformOptions) -> KernelDecision:
    name = kernel.name
    if kernel.ast is None:
        return KernelDecision(name, "unchanged", kernel.unsupported or "does not parse")
    analysis = analyze_kernel(kernel, program)
    model = analysis.model
    d = KernelDecision(name, "unchanged", "", analysis=analysis)
    if analysis.races:
        d.reason = "threads race in the original kernel (see the race diagnostics)"
        redundant = redundant_axes(analysis)
        if not redundant:
            return d
        if not options.collapse_redundant:
            d.reason += (f"; they are copies along axis {', '.join(sorted(redundant))}, which "
                         "the kernel never reads: --collapse-redundant-threads runs one copy")
            return d
        collapsed = analyze_kernel(kernel, program, frozenset(redundant))
        if collapsed.races:
            return d
        analysis = d.analysis = collapsed
        model = analysis.model
        d.collapsed = frozenset(redundant)
    if kernel.span is None:
        d.reason = "the definition is not in the input file's text (a macro or a header)"
        return d
    if sum(1 for k in program.kernels if k.name == name) > 1:
        d.reason = (f"another kernel is named '{name}' (in another namespace, or an "
                    "overload): their launches cannot be told apart")
        return d
    launches = program.launches_of(name)
    if not launches:
        d.reason = "no launch site in this file: the new geometry could not be launched"
        return d
    if any(l.span is None for l in launches):
        d.reason = "a launch site cannot be located in the source text (a macro?)"
        return d
    others = set(_other_uses(program, kernel)) - _prototype_lines(program, kernel)
    if others:
        d.reason = (f"the kernel is referenced outside its launches (line "
                    f"{min(others)}), where a new geometry could not be applied")
        return d
    distinct, evidence = distinct_arrays(program, kernel, model)
    if not distinct and not options.assume_no_alias:
        d.reason = (f"its pointer arguments may alias ({evidence}); mark them __restrict__ "
                    "or pass --assume-no-alias")
        return d
    d.alias_evidence = evidence if distinct else "assumed (--assume-no-alias)"
    if not model.is_affine or not options.polyhedral:
        first = model.outside[0] if model.outside else None
        why = (f"outside the affine model ({first.construct} at line {first.location.line})"
               if first else "polyhedral restructuring disabled (--no-polyhedral)")
        return _plan_permutation(program, kernel, d, why, options)
    mapping = solve_mapping(model, analysis.dependences, analysis.global_references)
    d.mapping = mapping
    old = original_axes(model)
    if not mapping.axes:
        d.reason = "no dimension is free of dependences"
        return d
    old_cost = mapping.costs.get(old[0]) if old else None
    new_cost = mapping.costs[mapping.axes[0]]
    if tuple(mapping.axes) == old or (old_cost is not None and new_cost >= old_cost):
        reductions = [l for l in analysis.loops if l.reduction]
        d.reason = "already coalesced: no permutation lowers the cost"
        if reductions:
            why_not = _plan_reduction(program, kernel, d, options, reductions[0])
            if why_not is None:
                return d
            d.reason += (f"; loop '{reductions[0].loop.source_name}' carries a reduction "
                         f"({why_not})")
        return d
    block = options.block or default_block(len(mapping.axes))
    d.generated = generate_kernel(program.text, kernel, model, mapping, block)
    d.action = "restructured"
    d.reason = "new geometry: " + ", ".join(
        f"{a} = {what}" for a, what in _axis_descriptions(model, mapping))
    return d


def redundant_axes(analysis: KernelAnalysis) -> set[str]:
    """Axes along which every race runs, when the kernel never reads them: the threads
    along such an axis are copies doing the same work (PolyBench/GPU's ATAX and MVT, a
    1-D kernel launched with a 32x8 block)."""
    model = analysis.model
    axis_of = {t.name: t.axis for t in model.thread_dims}
    axes = {axis_of[d] for r in analysis.races for d in r.thread_dims}
    if not axes or axes & set(model.used_axes):
        return set()
    if any(not r.thread_dims for r in analysis.races):
        return set()
    return axes


def _plan_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                    options: TransformOptions, loop) -> str | None:
    """Restructure a reduction as options.reduction says (auto: one warp per row for an
    uncoalesced row reduction, a split for a coalesced but starved column reduction);
    None when done, else why not."""
    model, analysis = d.analysis.model, d.analysis
    if options.reduction == "none":
        return "reduction restructuring disabled (--reduction none)"
    row = row_reduction_obstacle(model, analysis)
    if options.reduction in ("auto", "warp") and row is None:
        _plan_row_reduction(program, kernel, d, options)
        return None
    shape = column_reduction_obstacle(model, analysis)
    if options.reduction == "tiles":
        if row is not None or shape is not None:
            return row or shape
        d.generated = generate_tiled_reduction(program.text, kernel, model, loop.loop.counter)
        d.mapping = Mapping((loop.loop.counter, model.thread_dims[0].name), (),
                            d.mapping.costs, d.mapping.parallel, d.mapping.ilp)
        d.action = "tiled"
        d.reason = (f"row reduction over '{loop.loop.source_name}' (into {loop.reduction}): the "
                    "core paper's partial sums in 16x16 tiles, shared memory and atomicAdd; "
                    "floating-point additions are reassociated")
        return None
    if options.reduction in ("auto", "block", "split") and row is not None and \
            "coalesced along the threads" in row:
        if shape is not None:
            return shape
        extents = split_extents(model, loop.loop.counter)
        if extents[1] is not None and extents[1] < 1024:   # does not pay for its launches
            return f"its loop runs {extents[1]} times: too short to split"
        _plan_column_reduction(program, kernel, d, options.reduction, extents)
        return None
    return row


def _plan_column_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                           form: str, extents: tuple[int | None, int | None]
                           ) -> KernelDecision:
    """A coalesced but starved column reduction: split over row chunks (2-D blocks,
    atomicAdd), or block-cooperative when asked (`--reduction block`: one launch, a block
    per 32 columns, no atomics, so the sums come out the same on every run; it keeps fewer
    loads in flight and measured 10% slower at n = 16384 on the H200)."""
    model = d.analysis.model
    loop = next(l for l in d.analysis.loops if l.reduction)
    fallback = ""
    if form == "block":
        try:
            d.generated = generate_column_blocks(program.text, kernel, model,
                                                 loop.loop.counter)
        except ValueError as e:
            fallback = f" (not one block per 32 columns: {e})"
        else:
            d.mapping = Mapping((model.thread_dims[0].name,), (loop.loop.counter,),
                                d.mapping.costs, d.mapping.parallel, d.mapping.ilp)
            d.action = "columns"
            d.reason = (f"column reduction over '{loop.loop.source_name}' (into "
                        f"{loop.reduction}): a block of {d.generated.block[0]}x"
                        f"{d.generated.block[1]} threads per 32 columns, its rows split the "
                        "loop and add up in shared memory; floating-point additions are "
                        "reassociated")
            return d
    d.mapping = Mapping((model.thread_dims[0].name, loop.loop.counter), (), d.mapping.costs,
                        d.mapping.parallel, d.mapping.ilp)
    d.generated = generate_column_split(program.text, kernel, model, loop.loop.counter,
                                        extents)
    d.action = "split"
    columns, rows = d.generated.per_block[:2]
    d.reason = (f"column reduction over '{loop.loop.source_name}' (into {loop.reduction}) "
                f"split over more threads: {columns} columns x {rows} rows per block "
                f"({columns // 32} per thread), register sums, a shared-memory combine and "
                "atomicAdd; floating-point additions are reassociated" + fallback)
    return d


def _plan_row_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                        options: TransformOptions) -> KernelDecision:
    """One warp per row: the reduction loop split over the lanes (see codegen.kernel)."""
    model = d.analysis.model
    loop = next(l for l in d.analysis.loops if l.reduction)
    d.mapping = Mapping((model.thread_dims[-1].name,), (loop.loop.counter,), d.mapping.costs,
                        d.mapping.parallel, d.mapping.ilp)
    block = options.block if options.block and options.block[0] % 32 == 0 and \
        options.block[1:] == (1, 1) else (256, 1, 1)     # whole warps along x only
    d.generated = generate_kernel(program.text, kernel, model, d.mapping, block,
                                  warp_reduction=loop.loop.counter)
    d.action = "reduced"
    d.reason = (f"row reduction over '{loop.loop.source_name}' (into {loop.reduction}): one "
                "warp per row, the lanes split the loop (coalesced) and add up with a shuffle "
                "tree; floating-point additions are reassociated")
    return d


def _plan_permutation(program: Program, kernel: Kernel, d: KernelDecision, why: str,
                      options: TransformOptions) -> KernelDecision:
    """Geometry permutation (any kernel), when it is legal and lowers the cost: the
    static ILP's choice, or the empirical search's when it is asked for or when some
    reference's strides are unknown to the static model (which then cannot tell the
    axes apart by it)."""
    dialect = cuda_dialect()
    words = {t.text for t in tokenize(kernel.expanded)}
    warp = sorted(words & (dialect.warp_functions | {"warpSize"}))
    launches = program.launches_of(kernel.name)
    if warp:
        d.reason = f"{why}; no permutation: the kernel uses {warp[0]}, which depends on warps"
        return d
    callees = [f for f in program.device_functions.values() if f.name in words]
    if any(builtin_uses(f.expanded) for f in callees):
        d.reason = f"{why}; no permutation: a called device function reads thread indices"
        return d
    if builtin_uses(program.text[kernel.span.start:kernel.span.end]) != \
            builtin_uses(kernel.expanded):
        d.reason = f"{why}; no permutation: thread indices are used through macros"
        return d
    if any(l.block_shape is None or l.grid_shape is None for l in launches):
        d.reason = (f"{why}; no permutation: a launch's grid or block is not a compile-time "
                    "constant, so the hardware limits of the permuted geometry are unknown")
        return d
    blocks, grids = [l.block_shape for l in launches], [l.grid_shape for l in launches]
    perm = solve_permutation(d.analysis.global_references, blocks, grids)
    d.permutation = perm
    if perm.obstacle:
        d.reason = f"{why}; no permutation: {perm.obstacle}"
        return d
    unknown = any(r.access.flat is None for r in d.analysis.global_references)
    traced = ""
    if options.empirical or (unknown and options.empirical_fallback):
        traced = _search_permutation(program, kernel, d, blocks, grids, options)
    if d.permutation.is_identity or d.permutation.cost >= d.permutation.identity_cost:
        d.reason = f"{why}; the thread axes are already in the best order{traced}"
        return d
    d.action = "permuted"
    d.reason = (f"{why}; thread axes permuted ({d.permutation.describe()}, new <- "
                f"original){traced}")
    return d


def _search_permutation(program: Program, kernel: Kernel, d: KernelDecision, blocks, grids,
                        options: TransformOptions) -> str:
    """Run the empirical search (dynamic/empirical.py) over the candidates that the
    launches allow; when every candidate was traced, its choice replaces the static one
    in d.permutation (its costs: sectors beyond ideal). Returns how the choice was made,
    for the reason, or "" when there was nothing to search (one candidate)."""
    sources = candidate_sources(blocks, grids)
    if len(sources) < 2:
        return ""

    def render(source: dict[str, str]) -> str:
        if is_identity(source):
            return program.text
        trial = KernelDecision(kernel.name, "permuted", "",
                               permutation=Permutation(source, 0, 0, ""))
        return _splice(program.text, _replacements(program, [trial]))
    d.empirical = search(program.path, options.preprocessor, kernel.name, sources, render,
                         dict(options.arguments))
    failed = [f for f in d.empirical.candidates if f.error]
    if failed:
        return (f" (static choice: the empirical search could not trace "
                f"{failed[0].label()}: {failed[0].error})")
    best, identity = d.empirical.best, d.empirical.candidates[0]
    d.permutation = Permutation(best.source, best.excess, identity.excess, "")
    return " (chosen by tracing)"


def _axis_descriptions(model, mapping: Mapping) -> list[tuple[str, str]]:
    from polycoal.codegen.kernel import _describe_dim
    return [(a, _describe_dim(model, dim)) for a, dim in zip("xyz", mapping.axes)]


def _splice(text: str, replacements: list[tuple[Span, str]]) -> str:
    out = []
    pos = 0
    for span, new in sorted(replacements, key=lambda r: r[0].start):
        if span.start < pos:
            raise ValueError("overlapping replacements")
        out.append(text[pos:span.start])
        out.append(new)
        pos = span.end
    out.append(text[pos:])
    return "".join(out)


def _replacements(program: Program, decisions: list[KernelDecision]) -> list[tuple[Span, str]]:
    out = []
    for d in decisions:
        if d.action == "permuted":
            kernel = program.kernel(d.kernel)
            out.append((kernel.span, permute_kernel(program.text, kernel, d.permutation)))
            for launch in program.launches_of(d.kernel):
                out.append((launch.span, permute_launch(program.text, launch, d.permutation)))
        if d.action not in GENERATED:
            continue
        kernel = program.kernel(d.kernel)
        out.append((kernel.span, d.generated.text))
        note = {"reduced": "one warp per row: ", "split": "column reduction split: ",
                "columns": "one block per 32 columns: ",
                "tiled": "row reduction in tiles: "}.get(
            d.action, "restructured geometry: ") + ", ".join(
            f"{a} = {what.split(' (')[0]}" for a, what in
            _axis_descriptions(d.analysis.model, d.mapping))
        for launch in program.launches_of(d.kernel):
            out.append((launch.span, rewrite_launch(program.text, launch, kernel,
                                                    d.generated.stages, d.generated.hidden,
                                                    note)))
    return out


def _validate(program: Program, text: str, decisions: list[KernelDecision],
              options: TransformOptions) -> list[Diagnostic]:
    """Translation validation of every restructured kernel; failures are reverted."""
    diagnostics = []
    try:
        new_program = read_program(program.path, options.preprocessor, text=text)
    except InputError as e:
        for d in decisions:
            if d.action == "restructured":
                d.action, d.reason = "unchanged", f"generated code does not preprocess: {e}"
        return diagnostics
    for d in decisions:
        if d.action != "restructured":
            continue
        new_kernel = new_program.kernel(d.kernel)
        problems = []
        if new_kernel is None or new_kernel.ast is None:
            problems = ["the generated kernel does not parse"]
        else:
            new_model = extract_model(new_kernel, new_program)
            problems = validate_translation(d.analysis.model, new_model, d.generated)
        if problems:
            d.action = "unchanged"
            d.reason = "translation validation failed: " + "; ".join(problems[:3])
            kernel = program.kernel(d.kernel)
            diagnostics.append(Diagnostic("error", "validation-failed",
                                          f"kernel '{d.kernel}': {d.reason}; the original "
                                          "kernel is kept", kernel.location, d.kernel))
    return diagnostics


def _empirical_note(d: KernelDecision, kernel: Kernel) -> Diagnostic:
    """The empirical search's figures, every candidate's."""
    choice = d.empirical
    if any(f.error for f in choice.candidates):
        head = "the empirical search could not trace every candidate; the static choice is kept"
    else:
        head = (f"thread geometry chosen by tracing each candidate on the CPU "
                f"({choice.best.traced}): {choice.best.label()}")
    return Diagnostic("note", "empirical", f"kernel '{d.kernel}': {head} (sectors beyond "
                      f"ideal decide; {choice.describe()})", kernel.location, d.kernel)


def transform_program(program: Program, options: TransformOptions = TransformOptions()
                      ) -> TransformResult:
    kernels = [k for k in program.kernels if options.kernel in (None, k.name)]
    if options.kernel is not None and not kernels:
        known = ", ".join(k.name for k in program.kernels) or "none"
        raise InputError(f"{program.path}: no kernel named '{options.kernel}' "
                         f"(kernels: {known})")
    decisions = [plan_kernel(program, k, options) for k in kernels]
    text = _splice(program.text, _replacements(program, decisions))
    diagnostics = []
    if any(d.action == "restructured" for d in decisions):
        diagnostics = _validate(program, text, decisions, options)
        if options.promote:
            # the validated kernels, with their accumulators promoted to registers: a
            # local rewrite that is legal by itself (one element, loop-invariant, no other
            # access to its array in the loop, arrays distinct) and keeps the order of the
            # additions, so results are identical; both executors run this final text
            for d in decisions:
                if d.action == "restructured":
                    kernel = program.kernel(d.kernel)
                    d.generated = generate_kernel(program.text, kernel, d.analysis.model,
                                                  d.mapping, d.generated.block, promote=True)
        text = _splice(program.text, _replacements(program, decisions))
    for d in decisions:
        kernel = program.kernel(d.kernel)
        if d.action in CHANGED:
            diagnostics.append(Diagnostic("note", d.action,
                                          f"kernel '{d.kernel}' {d.action}: {d.reason} "
                                          f"(pointer arguments distinct: {d.alias_evidence})",
                                          kernel.location, d.kernel))
            if d.collapsed:
                diagnostics.append(Diagnostic(
                    "warning", "collapsed-copies",
                    f"kernel '{d.kernel}': its threads along axis "
                    f"{', '.join(sorted(d.collapsed))} (never read by the kernel) raced as "
                    "copies of each other; the transformed kernel runs one copy "
                    "(--collapse-redundant-threads)", kernel.location, d.kernel))
            if d.alias_evidence.startswith("assumed"):
                diagnostics.append(Diagnostic(
                    "warning", "assumed-no-alias",
                    f"kernel '{d.kernel}': its pointer arguments were assumed not to alias "
                    "(--assume-no-alias); the transformation is wrong if they do",
                    kernel.location, d.kernel))
        elif not any(x.kernel == d.kernel and x.code == "validation-failed"
                     for x in diagnostics):
            diagnostics.append(Diagnostic("note", "unchanged",
                                          f"kernel '{d.kernel}' left unchanged: {d.reason}",
                                          kernel.location, d.kernel))
        if d.empirical:
            diagnostics.append(_empirical_note(d, kernel))
    return TransformResult(text, decisions, diagnostics)
