"""`transform_program`: decide, generate, validate and splice, kernel by kernel.

For each kernel, in this order of preference:
1. polyhedral restructuring (affine, race-free kernels without synchronisation): the
   restructuring ILP chooses the dims for the new thread axes; the kernel is generated
   from the isl AST, its launches rewritten, and the result proven equivalent by
   translation validation, or the kernel is kept;
2. a reduction form (one warp per row, a column split, a block per 32 columns, tiles);
3. a permutation of the thread axes (kernels outside the affine model);
4. otherwise it is left byte-identical, with a diagnostic and a reason code that say why.
Decisions are immutable values (polycoal/decisions.py); every change goes through the
validators of its kind (VALIDATORS) before it is emitted. Only the text of transformed
kernels and of their launch statements changes.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from polycoal.analysis import KernelAnalysis, analyze_kernel
from polycoal.analysis.aliasing import distinct_arrays
from polycoal.codegen.kernel import describe_dim, default_block, generate_kernel
from polycoal.codegen.launch import rewrite_launch
from polycoal.decisions import (CHANGED, GENERATED, REASSOCIATING, KernelDecision,
                                TransformOptions, TransformResult, internal_error)
from polycoal.diagnostics import Diagnostic, InputError, Location
from polycoal.dynamic.empirical import candidate_sources, search
from polycoal.frontend import lower, read_program
from polycoal.frontend.lexer import line_ending, line_ends, tokenize, with_line_ending
from polycoal.frontend.launches import known_values
from polycoal.frontend.program import JUDGED, Kernel, Program, Span
from polycoal.codegen.permute import (Refusal, indirect_uses, permute_kernel,
                                      permute_launch, reads_indirectly,
                                      warp_functions_called)
from polycoal.frontend.dialect import cuda_dialect
from polycoal.analysis.dependences import condition_text, detect_races, racing_values
from polycoal.optimize.assumptions import (both, decided, disjoint_pointers,
                                           race_free_assumption)
from polycoal.analysis.roofline import Choice, Prediction, choose, predict, shipped_machine
from polycoal.analysis.warp_cost import MIN_GAIN, block_costs
from polycoal.analysis.work import Geometry, form_work
from polycoal.optimize.permutation import (Permutation, is_identity, launch_takes, needs_guard,
                                           solve_permutation)
from polycoal.codegen.column import (generate_column_blocks, generate_column_phases,
                                     generate_column_split,
                                     generate_tiled_reduction, split_extents)
from polycoal.optimize.phases import MIN_SPLIT_TRIPS, PhasePlan, plan_phases
from polycoal.optimize.reduction import (Obstacle, column_reduction_obstacle, one_thread,
                                         reduction_geometry, row_reduction_obstacle)
from polycoal.optimize.restructure import (Mapping, mapping_geometry, original_axes,
                                           solve_mapping)
from polycoal.codegen.product import vector_width
from polycoal.optimize.products import product_plan, tile_set
from polycoal.optimize.staging import staging_plan
from polycoal.passes import PASSES
from polycoal.passes.base import Candidate, mapping_of
from polycoal.passes.products import forced_sizes
from polycoal.validate import compiles
from polycoal.validate.lanes import lane_split_problems, promotion_problems
from polycoal.validate.tiles import offsets_problems, skip_problems
from polycoal.validate.translation import validate_translation
from polycoal.model import isl_helpers
from polycoal.model.extract import extract_model
from polycoal.optimize.layout_plan import LayoutDecision, plan_layouts, unroll_factors
from polycoal.codegen.layout import (NotRewritable, definition_end, group_parameters,
                                     rewrite_call, rewrite_kernel, runtime)
from polycoal.codegen.layout import rewrite_launch as rewrite_layout_launch
from polycoal.validate.layout import layout_is_injective, layout_problems
from polycoal.validate.irregular import checked_text, irregular_problems
from polycoal import reorganisation
from polycoal.codegen.irregular import groups as irregular_groups


def plan_kernel(program: Program, kernel: Kernel, options: TransformOptions) -> KernelDecision:
    """The decision for one kernel: the first check that refuses keeps the kernel with
    its reason code; otherwise the best change the model allows. A change made under a
    condition on the launch's values is reported with it."""
    d = _plan(program, kernel, options)
    if not d.checked:
        return d
    checks = "; ".join(d.runtime_checks())
    if d.action == "permuted":         # a permutation is not regenerated: no checked copy
        code = "race" if d.assumption is not None else "may-alias"
        return d.keep(code, f"the kernel is legal only under conditions checked at run time "
                      f"({checks}), and a permuted kernel is not emitted under them")
    if d.action in GENERATED:
        launches = program.launches_of(kernel.name)
        takes = [_takes_checked(d, launch) for launch in launches]
        if all(t is False for t in takes):
            return replace(d.keep(
                "no-launch-takes-copy", f"the change ({d.reason}) holds only under a "
                f"run-time check ({checks}) that the known values of every launch fail: "
                "the checked copy could never run"), assumption=None, disjoint=())
        return replace(d, reason=f"{d.reason}; under a run-time check at each launch: "
                       f"{checks} (the original kernel runs where it fails"
                       f"{_decided_note(launches, takes)})")
    return replace(d, assumption=None, disjoint=())


def _decided_note(launches, takes: list[bool | None], verdicts=(
        (True, "always passes it (no check written)", "always pass it (no check written)"),
        (False, "always fails it (left as written)", "always fail it (left as written)"))
        ) -> str:
    """`; the launch at line 40 always passes it...`: the launches whose known values
    decide a run-time check, by verdict (`verdicts`: the verdict and what one launch, or
    several, with it do)."""
    note = ""
    for verdict, one, several in verdicts:
        lines = [str(l.location.line) for l, t in zip(launches, takes) if t is verdict]
        if lines:
            many = len(lines) > 1
            note += (f"; the launch{'es' if many else ''} at line{'s' if many else ''} "
                     f"{', '.join(lines)} {several if many else one}")
    return note


def _takes_checked(d: KernelDecision, launch) -> bool | None:
    """Whether a launch runs a checked copy: its known values decide the race-freedom
    condition (True, False) or not (None); pointer ranges are known only at run time."""
    verdict = decided(d.assumption, known_values(launch)) if d.assumption else True
    return verdict if verdict is False or not d.disjoint else None


def _plan(program: Program, kernel: Kernel, options: TransformOptions) -> KernelDecision:
    name = kernel.name
    measured = dict(options.keep).get(name)
    if measured is not None:
        return KernelDecision(name, "unchanged", measured, code="measured-slower")
    if kernel.ast is None:
        return KernelDecision(name, "unchanged", kernel.unsupported or "does not parse",
                              code="unparsed")
    d = KernelDecision(name, "unchanged", "", analysis=analyze_kernel(kernel, program))
    judged = _judged(kernel, d)
    if judged is not None and judged.code == "opaque-statements" and d.analysis.races:
        return replace(judged, reason=f"{judged.reason}; races not judged: an opaque "
                       "statement may synchronise the threads")
    if d.analysis.races:
        d = _without_races(program, kernel, d, options)
        if d.action == "unchanged" and d.code:
            return d
    placed = judged or _placement_check(program, kernel, d, options)
    if placed.code in UNLAUNCHABLE:
        return _unlaunchable(program, kernel, d, placed, options)
    if placed.code:
        return placed
    return _plan_placed(program, kernel, d, options)


# Reasons a kernel cannot be changed in this file whatever the model says of it: its
# definition or its launches are elsewhere (a header, a macro, another translation unit),
# or it holds statements read only as opaque
UNLAUNCHABLE = frozenset({"not-in-text", "no-launch", "launch-not-in-text",
                          "opaque-statements"})


def _judged(kernel: Kernel, d: KernelDecision) -> KernelDecision | None:
    """A copy read only to judge a kernel (frontend/lower.py): why it is not changed."""
    if JUDGED not in kernel.name:
        return None
    lines = sorted({o.location.line for o in d.analysis.model.outside
                    if o.construct == "opaque statement"})
    if lines:
        return d.keep("opaque-statements", "statements read only as opaque (C++ outside "
                      f"polycoal's subset) at {', '.join(f'line {n}' for n in lines)}: "
                      "not transformed")
    return d.keep("no-launch", "no launch site in this file: the new geometry could "
                  "not be launched")


def _unlaunchable(program: Program, kernel: Kernel, d: KernelDecision,
                  placed: KernelDecision, options: TransformOptions) -> KernelDecision:
    """A kernel this file cannot change (`placed` says why) is still judged by the model:
    kept for the model's reason when the model would keep it too (already coalesced, a
    race...), else kept for `placed`'s reason with what the model would do."""
    if kernel.span is None and kernel.expanded:
        # judged as if its expanded definition ended the text (the planners read their
        # kernel's text); the code they make is never written
        text = program.text + "\n" + kernel.expanded
        program = replace(program, text=text, tokens=tuple(tokenize(text)))
        kernel = replace(kernel, span=Span(len(text) - len(kernel.expanded), len(text)))
    try:
        verdict = _plan_placed(program, kernel, d, options)
    except Exception:            # noqa: BLE001 - only a report: the kernel stays anyway
        return placed
    where = placed.reason.split(":")[0]
    if verdict.action == "unchanged":
        return replace(verdict, reason=f"{verdict.reason} ({where})", generated=None)
    return replace(placed, reason=f"{placed.reason}; the model would change it: "
                   f"{verdict.action} ({verdict.reason.split(';')[0]})")


def _plan_placed(program: Program, kernel: Kernel, d: KernelDecision,
                 options: TransformOptions) -> KernelDecision:
    """The decision for a kernel whose definition and launches are in the file."""
    d = _alias_check(program, kernel, d, options)
    if d.code:
        return d
    model = d.analysis.model
    if model.is_affine and model.statements and \
            all(isl_helpers.domain(model, s).is_empty() for s in model.statements):
        return d.keep("no-instances", "no statement of the kernel ever runs (its guards and "
                      "loop bounds exclude every thread and iteration)")
    if not model.is_affine or not options.polyhedral:
        first = model.outside[0] if model.outside else None
        why = (f"outside the affine model ({first.construct} at line {first.location.line})"
               if first else "polyhedral restructuring disabled (--no-polyhedral)")
        return _plan_permutation(program, kernel, d, why, options)
    mapping = solve_mapping(model, d.analysis.dependences, d.analysis.global_references)
    d = replace(d, mapping=mapping)
    old = original_axes(model)
    if not mapping.axes:
        return d.keep("no-parallel-dimension", "no dimension is free of dependences")
    old_cost = mapping.costs.get(old[0]) if old else None
    new_cost = mapping.costs[mapping.axes[0]]
    # a new x with a single value (a loop of one iteration) runs one lane per warp: no gain
    single = isl_helpers.known_extent(model, mapping.axes[0]) == 1
    no_gain = tuple(mapping.axes) == old or (old_cost is not None and new_cost >= old_cost) \
        or single
    reductions = [l for l in d.analysis.loops if l.reduction]
    # the passes' whole forms (passes/): staged tiles for references that coalesce along
    # two different dims, whatever the order; register and shared-memory tiles for sums
    # of products
    candidates = [c for c in (p.propose(program, kernel, d, options)
                              for p in PASSES) if c is not None]
    try:
        rest = _plan_mapped(program, kernel, d, options, old, old_cost, new_cost, single,
                            no_gain, reductions)
    except Exception as error:        # noqa: BLE001 - the other candidates still stand
        if not candidates:
            raise
        rest = d.keep("internal-error", internal_error(kernel.name, kernel.location, error,
                                                       "planning a candidate")[1])
    return _chosen(d, candidates, rest, options, kernel.name)


def _plan_mapped(program: Program, kernel: Kernel, d: KernelDecision,
                 options: TransformOptions, old, old_cost, new_cost, single: bool,
                 no_gain: bool, reductions) -> KernelDecision:
    """The decision along the restructuring ILP's mapping: restructured, a reduction
    form, phases, or kept."""
    model, mapping = d.analysis.model, d.mapping
    starved = _starved(model, old, mapping) if old_cost is not None and \
        new_cost <= old_cost and not single else None
    if no_gain and starved is None:
        kept = _kept_order(d)
        if not reductions:
            # a reduction beside statements its loop carries other dependences for may
            # still be distributed from them (optimize/phases.py)
            plan = _phase_plan(d, options) if any(s.update for s in model.statements) \
                else None
            if isinstance(plan, PhasePlan):
                return _plan_column_phases(program, kernel, d, options, plan)
            return kept
        reduced = _plan_reduction(program, kernel, d, options, reductions[0])
        if reduced.action != "unchanged":
            return reduced
        return kept.keep(kept.code, f"{kept.reason}; loop '{reductions[0].loop.source_name}' "
                         f"carries a reduction ({reduced.reason})")
    unbounded = [a for a in mapping.axes if not all(isl_helpers.dim_bounds(model, a))]
    if unbounded:
        return d.keep("unbounded-range", f"the range of {unbounded[0]} has no affine bound, "
                      "so no grid can be computed for it")
    block = options.block or default_block(len(mapping.axes))
    return d.change("restructured", "new geometry: " + ", ".join(
        f"{a} = {what}" for a, what in _axis_descriptions(model, mapping)) + (
        f"; {starved}" if starved else ""),
        generated=generate_kernel(program.text, kernel, model, mapping, block))


def _geometry(d: KernelDecision, options: TransformOptions) -> Geometry:
    """How the form `_plan_mapped` chose runs, for the performance model."""
    if d.action == "restructured":
        return mapping_geometry(d.analysis.model, d.mapping, d.generated.block,
                                options.promote)
    launches = len(d.generated.stages) if d.generated else 1
    loops = [l.loop.counter for l in d.analysis.loops if l.reduction]
    # one warp a row, or a block of 32 x 32 threads a 32 columns: 32 threads a row or
    # column of the dims the reduction leaves
    if d.action in ("reduced", "columns") and d.mapping is not None and loops:
        rows = tuple(a for a in d.mapping.axes if a != loops[0])
        return reduction_geometry(launches, rows, loops[0] if d.action == "reduced" else None)
    return reduction_geometry(launches)


def _priced(d: KernelDecision, options: TransformOptions,
            forms: list[tuple[str, Geometry]]) -> tuple[Prediction, list, tuple[str, ...]]:
    """The kernel as written and each form (name, geometry) priced by the performance
    model at the launch's sizes (and polycoal bench's, `price_at`), with the sizes it
    took without knowing them."""
    m = shipped_machine()
    values = dict(options.price_at)
    work = form_work(d.analysis, m, values=values)
    return (predict(work, m),
            [(form, predict(form_work(d.analysis, m, g, values), m)) for form, g in forms],
            work.assumed)


def _forced(d: KernelDecision, options: TransformOptions, name: str) -> bool:
    """Whether the options ask for this form by name (--sizes for a tiled product,
    --reduction warp/block/tiles/split for a reduction form): taken whatever the model
    predicts, as a tuning experiment wants."""
    if d.action == "product":
        return forced_sizes(options, name) is not None
    return d.action in REASSOCIATING and options.reduction in ("warp", "block", "tiles", "split")


def _chosen(d: KernelDecision, candidates: list[Candidate],
            rest: KernelDecision, options: TransformOptions, name: str) -> KernelDecision:
    """The cheapest of the forms the passes proposed and the kernel as written, by the
    performance model (analysis/roofline.py): a form is taken only where predicted
    MARGIN times faster than the original. The choice rides on the decision
    (`predicted`), for the reports."""
    if rest.action != "unchanged":
        candidates = candidates + [Candidate(rest, _geometry(rest, options))]
    original, priced, assumed = _priced(d, options, [(c.decision.action, c.geometry)
                                                      for c in candidates])
    taken = choose(original, priced)
    forced = [k for k, c in enumerate(candidates) if _forced(c.decision, options, name)]
    if forced or (candidates and not options.model):   # the model only reports
        taken = forced[0] if forced else 0
    choice = Choice(original, tuple(priced), "original" if taken is None else priced[taken][0],
                    assumed)
    if taken is not None:
        return replace(candidates[taken].decision, predicted=choice)
    if not candidates:
        return replace(rest, predicted=choice)
    why = choice.kept_because()
    if rest.action == "unchanged" and rest.reason:
        why += f"; {rest.reason}"
    return replace(d.keep("no-predicted-gain", why), predicted=choice)


# A launch of fewer threads than this leaves most of an H100/H200 idle (132
# multiprocessors: under 4 warps each); a mapping that puts a parallel loop on threads
# as well, at no higher coalescing cost, is taken when it gives STARVED_GAIN times more.
STARVED_THREADS = 16384
STARVED_GAIN = 8


def _starved(model, old: tuple[str, ...], mapping) -> str | None:
    """Why the mapping pays although it coalesces no better (the original runs too few
    threads and the mapping adds parallel loops as thread axes), else None. Known counts
    only: the launch's values must fix the ranges."""
    threads_dims = [t.name for t in model.thread_dims]
    extra = [a for a in mapping.axes if a not in threads_dims]
    if not old or not extra:
        return None
    spans = [isl_helpers.known_span(model, a) for a in threads_dims]
    more = [isl_helpers.known_span(model, a) for a in extra]
    if None in spans or None in more:
        return None
    threads = math.prod(spans)
    if threads >= STARVED_THREADS or threads * math.prod(more) < STARVED_GAIN * threads:
        return None
    loops = ", ".join(describe_dim(model, a) for a in extra)
    return (f"the original runs {threads} threads, too few to fill the GPU: the parallel "
            f"{loops} on threads as well ({threads * math.prod(more)} threads)")


def _without_races(program: Program, kernel: Kernel, d: KernelDecision,
                   options: TransformOptions) -> KernelDecision:
    """A racy kernel is kept (code "race"), unless its races are only copies of each
    thread along axes it never reads and --collapse-redundant-threads asks for one copy:
    then the decision goes on with the analysis of one copy (code left empty)."""
    raced = d.keep("race", "threads race in the original kernel" + _racing_when(d.analysis)
                   + " (polycoal analyze shows the races)")
    checked = _race_free_where_checked(program, kernel, d, options)
    if checked is not None:
        return checked
    redundant = redundant_axes(d.analysis)
    if not redundant:
        return raced
    if not options.collapse_redundant:
        return raced.keep("redundant-copies", raced.reason + (
            f"; they are copies along axis {', '.join(sorted(redundant))}, which the kernel "
            "never reads: --collapse-redundant-threads runs one copy"))
    collapsed = analyze_kernel(kernel, program, frozenset(redundant))
    if collapsed.races:
        return raced
    return replace(d, analysis=collapsed, collapsed=frozenset(redundant))


def _racing_when(analysis) -> str:
    """` when m >= 65`: the parameter values for which the races happen, when they
    happen only for some."""
    when = racing_values(analysis.races)
    return "" if when is None else " when " + condition_text(when)


# the names of the launch geometry in the model's parameters (host values pc_grid0/pc_block0)
_GEOMETRY = re.compile(r"(gridDim|blockDim|nthreads)_[xyz]")


def _race_free_where_checked(program: Program, kernel: Kernel, d: KernelDecision,
                             options: TransformOptions) -> KernelDecision | None:
    """A kernel whose races happen only for some values of its integer arguments or of
    its launch geometry (covariance's m > M): the decision goes on with its analysis
    under the condition that excludes them, which each launch then checks; None when
    there is no such condition (or --no-runtime-checks)."""
    if not options.runtime_checks:
        return None
    assumption = race_free_assumption(d.analysis.model, d.analysis.races)
    scalars = {p.name for p in kernel.parameters if not p.is_pointer}
    if assumption is None or not all(p in scalars or _GEOMETRY.fullmatch(p)
                                     for p in assumption.parameters):
        return None
    assumed = analyze_kernel(kernel, program, assumed=(assumption.constraint,))
    for _ in range(3):      # races the first condition hides (another pair of references)
        more = race_free_assumption(assumed.model, assumed.races)
        if more is None:
            break
        assumption = both(assumption, more)
        assumed = analyze_kernel(kernel, program, assumed=(assumption.constraint,))
    if assumed.races or not _keeps_instances(d.analysis.model, assumed.model):
        return None
    return replace(d, analysis=assumed, assumption=assumption)


def _keeps_instances(model, assumed) -> bool:
    """Whether every statement that runs for some parameter values still does under the
    assumption (a condition met only where the kernel does nothing, atax's `nx <= 0`
    when every thread's copies along an unread axis race, is no way to run it)."""
    if not model.is_affine:
        return True
    return all(isl_helpers.domain(model, s).is_empty() or
               not isl_helpers.domain(assumed, t).is_empty()
               for s, t in zip(model.statements, assumed.statements))


def _placement_check(program: Program, kernel: Kernel, d: KernelDecision,
                     options: TransformOptions) -> KernelDecision:
    """Can a new kernel and new launches be put in the text? (code when not)"""
    if kernel.span is None:
        return d.keep("not-in-text", "the definition is not in the input file's text (a "
                      "macro or a header)")
    if sum(1 for k in program.kernels if k.name == kernel.name) > 1:
        return d.keep("name-shared", f"another kernel is named '{kernel.name}' (in another "
                      "namespace, or an overload): their launches cannot be told apart")
    launches = program.launches_of(kernel.name)
    if not launches:
        return d.keep("no-launch", "no launch site in this file: the new geometry could "
                      "not be launched")
    if any(l.span is None for l in launches):
        return d.keep("launch-not-in-text", "a launch site cannot be located in the source "
                      "text (a macro?)")
    others = program.references.get(kernel.name, ())
    if others:
        return d.keep("used-elsewhere", f"the kernel is referenced outside its launches "
                      f"(line {min(others)}), where a new geometry could not be applied")
    return d


def _alias_check(program: Program, kernel: Kernel, d: KernelDecision,
                 options: TransformOptions) -> KernelDecision:
    """Are the pointer arguments distinct arrays? (the evidence, or code "may-alias")"""
    distinct, evidence = distinct_arrays(program, kernel, d.analysis.model)
    if distinct or options.assume_no_alias:
        return replace(d, alias_evidence=evidence if distinct
                       else "assumed (--assume-no-alias)")
    pairs = disjoint_pointers(d.analysis.model, [p.name for p in kernel.parameters
                                                 if p.is_pointer]) \
        if options.runtime_checks else None
    if not pairs:
        why = "" if options.runtime_checks else "; --no-runtime-checks"
        if options.runtime_checks and pairs is None:
            why = "; the elements a pointer touches have no bounds to check at run time"
        return d.keep("may-alias", f"its pointer arguments may alias ({evidence}{why}); mark "
                      "them __restrict__ or pass --assume-no-alias")
    shared = _passed_twice(program, kernel, pairs)
    if shared:
        return d.keep("may-alias", f"its pointer arguments alias: every launch passes "
                      f"{shared} ({evidence}; a run-time check would always fail)")
    return replace(d, alias_evidence=f"checked at each launch ({evidence})", disjoint=pairs)


def _passed_twice(program: Program, kernel: Kernel, pairs) -> str | None:
    """A pair of pointers to check to which every launch of the kernel passes one
    variable (`k<<<g, b>>>(d_A, d_A)`): the copy behind the check could never run."""
    pointers = [p.name for p in kernel.parameters]
    launches = program.launches_of(kernel.name)
    for pair in pairs:
        p, q = pair.first.pointer, pair.second.pointer
        if not launches or p not in pointers or q not in pointers:
            continue
        a, b = pointers.index(p), pointers.index(q)
        passed = [(l.arguments[a].strip(), l.arguments[b].strip()) for l in launches
                  if max(a, b) < len(l.arguments)]
        if len(passed) == len(launches) and all(
                x == y and re.fullmatch(r"[A-Za-z_]\w*(?:(?:\.|->)\w+)*", x) for x, y in passed):
            return f"{', '.join(sorted({x for x, _ in passed}))} to both '{p}' and '{q}'"
    return None


def _kept_order(d: KernelDecision) -> KernelDecision:
    """The order of the dims is kept, with a reason true of the references as analyze
    reports them ("already coalesced" only when no global reference is uncoalesced)."""
    bad = [r for r in d.analysis.global_references if r.coalesced is False]
    if not bad:
        return d.keep("already-coalesced", "already coalesced: no permutation lowers the cost")
    return d.keep("no-better-order", (
        f"no permutation lowers the cost ({len(bad)} uncoalesced reference"
        f"{'s' if len(bad) > 1 else ''} stay{'' if len(bad) > 1 else 's'} so: "
        f"{bad[0].access.text} at line {bad[0].access.location.line})"))


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
                    options: TransformOptions, loop) -> KernelDecision:
    """Restructure a reduction as options.reduction says (auto: one warp per row for an
    uncoalesced row reduction, a split for a coalesced but starved column reduction);
    the changed decision, or the kernel kept with why not."""
    model, analysis = d.analysis.model, d.analysis
    if options.reduction == "none":
        return d.keep("reduction-disabled", "reduction restructuring disabled (--reduction "
                      "none)")
    row = row_reduction_obstacle(model, analysis)
    if options.reduction in ("auto", "warp") and row is None:
        return _plan_row_reduction(program, kernel, d, options, loop)
    shape = column_reduction_obstacle(model, analysis)
    if options.reduction == "tiles":
        refusal = row or shape
        if refusal is not None:
            return d.keep(refusal.code, refusal.text)
        return d.change(
            "tiled", f"row reduction over '{loop.loop.source_name}' (into {loop.reduction}): "
            "the core paper's partial sums in 16x16 tiles, shared memory and atomicAdd; "
            "floating-point additions are reassociated",
            generated=generate_tiled_reduction(program.text, kernel, model, loop.loop.counter),
            mapping=mapping_of(d, (loop.loop.counter, model.thread_dims[0].name), ()))
    if options.reduction in ("auto", "block") and row is not None and (
            row.code == "reduction-shape" or
            (row.code == "coalesced-along-threads" and shape is not None)):
        plan = _phase_plan(d, options)
        if not isinstance(plan, Obstacle):
            return _plan_column_phases(program, kernel, d, options, plan)
        if row.code == "reduction-shape" and plan.code != "reduction-shape":
            return d.keep(plan.code, plan.text)
    if options.reduction in ("auto", "block", "split") and row is not None and \
            row.code == "coalesced-along-threads":
        if shape is not None:
            return d.keep(shape.code, shape.text)
        extents = split_extents(model, loop.loop.counter)
        if extents[1] is not None and extents[1] < 1024:   # does not pay for its launches
            return d.keep("short-loop", f"its loop runs {extents[1]} times: too short to split")
        return _plan_column_reduction(program, kernel, d, options, extents, loop)
    if row is None:
        return d.keep("row-reduction", f"a row reduction, which --reduction "
                      f"{options.reduction} does not restructure")
    return d.keep(row.code, row.text)


def _plan_column_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                           options: TransformOptions, extents: tuple[int | None, int | None],
                           loop) -> KernelDecision:
    """A coalesced but starved column reduction: split over row chunks (2-D blocks,
    atomicAdd), or block-cooperative when asked (`--reduction block`: one launch, a block
    per 32 columns, no atomics, so the sums come out the same on every run; it keeps fewer
    loads in flight and measured 10% slower at n = 16384 on the H200)."""
    model = d.analysis.model
    fallback = ""
    if options.reduction == "block":
        try:
            generated = generate_column_blocks(program.text, kernel, model, loop.loop.counter,
                                               options.column_groups)
        except ValueError as e:
            fallback = f" (not one block per 32 columns: {e})"
        else:
            return d.change(
                "columns", f"column reduction over '{loop.loop.source_name}' (into "
                f"{loop.reduction}): a block of {generated.block[0]}x{generated.block[1]} "
                "threads per 32 columns, its rows split the loop and add up in shared "
                "memory; floating-point additions are reassociated", generated=generated,
                mapping=mapping_of(d, (model.thread_dims[0].name,), (loop.loop.counter,)))
    generated = generate_column_split(program.text, kernel, model, loop.loop.counter, extents,
                                      options.split)
    columns, rows = generated.per_block[:2]
    return d.change(
        "split", f"column reduction over '{loop.loop.source_name}' (into {loop.reduction}) "
        f"split over more threads: {columns} columns x {rows} rows per block "
        f"({columns // 32} per thread), register sums, a shared-memory combine and "
        "atomicAdd; floating-point additions are reassociated" + fallback,
        generated=generated,
        mapping=mapping_of(d, (model.thread_dims[0].name, loop.loop.counter), ()))


def _phase_plan(d: KernelDecision, options: TransformOptions) -> PhasePlan | Obstacle | None:
    """The kernel's phases (optimize/phases.py) where options allow the form; asked for
    by name (--reduction block), it is made for short loops too."""
    if options.reduction not in ("auto", "block"):
        return None
    return plan_phases(d.analysis.model, d.analysis,
                       0 if options.reduction == "block" else MIN_SPLIT_TRIPS)


def _plan_column_phases(program: Program, kernel: Kernel, d: KernelDecision,
                        options: TransformOptions, plan: PhasePlan) -> KernelDecision:
    """A column kernel whose thread runs a sequence of loops, one of them a reduction
    (optimize/phases.py): a block per 32 columns, its rows splitting each loop in turn."""
    model = d.analysis.model
    try:
        generated = generate_column_phases(program.text, kernel, plan, options.column_groups)
    except ValueError as e:
        return d.keep("reduction-shape", f"not one block per 32 columns: {e}")
    return d.change(
        "columns", f"a column kernel in phases: a block of {generated.block[0]}x"
        f"{generated.block[1]} threads per 32 columns; {plan.describe()}; floating-point "
        "additions are reassociated", generated=generated,
        mapping=mapping_of(d, (model.thread_dims[0].name,), ("c0",)))


def _plan_row_reduction(program: Program, kernel: Kernel, d: KernelDecision,
                        options: TransformOptions, loop) -> KernelDecision:
    """One warp per row: the reduction loop split over the lanes (see codegen.kernel)."""
    model = d.analysis.model
    mapping = mapping_of(d, (model.thread_dims[-1].name,), (loop.loop.counter,))
    block = options.block if options.block and options.block[0] % 32 == 0 and \
        options.block[1:] == (1, 1) else (256, 1, 1)     # whole warps along x only
    how = ("a single thread ran it: one warp splits the loop (32 loads in flight instead "
           "of one) and adds up" if one_thread(model, [s for s in model.statements if s.loops])
           else "one warp per row, the lanes split the loop (coalesced) and add up")
    return d.change(
        "reduced", f"row reduction over '{loop.loop.source_name}' (into {loop.reduction}): "
        f"{how} with a shuffle tree; floating-point additions are reassociated",
        mapping=mapping,
        generated=generate_kernel(program.text, kernel, model, mapping, block,
                                  warp_reduction=loop.loop.counter))


def _global_races_across_barriers(analysis: KernelAnalysis) -> str | None:
    """An array of global memory threads of a kernel with barriers race on when the
    barriers are not counted (the race analysis is skipped for such kernels: a barrier
    orders a block's phases, and the model does not place it); None when there is none."""
    model = analysis.model
    if model is None or not model.synchronises or not model.statements:
        return None
    try:
        return next((r.array for r in detect_races(model, ("global",))), None)
    except Exception:       # noqa: BLE001 - not judged: taken as a race (never a change)
        return "(its arrays: not judged)"


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
        return d.keep("warp-dependent", f"{why}; no permutation: the kernel uses {warp[0]}, "
                      "which depends on warps")
    if (called := warp_functions_called(program, kernel)) is not None:
        return d.keep("warp-dependent", f"{why}; no permutation: the kernel calls "
                      f"{called[0]}, which uses {called[1]} (it depends on warps)")
    if reads_indirectly(program, kernel):
        # thread indices read through macros or helpers: the copy expands those macros
        # and calls permuted copies of those helpers (codegen/permute.indirect_uses)
        indirect = indirect_uses(program, kernel, options.preprocessor)
        if isinstance(indirect, Refusal):
            return d.keep(indirect.code, f"{why}; no permutation: {indirect.reason}")
        d = replace(d, indirect=indirect)
    # a component known only at run time is None: the launch checks it (guarded)
    blocks = [l.block_shape or tuple(l.block_parts) for l in launches]
    grids = [l.grid_shape or tuple(l.grid_parts) for l in launches]
    d = replace(d, permutation=solve_permutation(d.analysis.global_references, blocks, grids))
    if d.permutation.obstacle:
        return d.keep("no-permutation", f"{why}; no permutation: {d.permutation.obstacle}")
    unknown = any(r.access.flat is None for r in d.analysis.global_references)
    traced = ""
    if options.empirical or (unknown and options.empirical_fallback):
        d, traced = _search_permutation(program, kernel, d, blocks, grids, options)
    if d.permutation.is_identity or d.permutation.cost >= d.permutation.identity_cost:
        narrow = d.permutation.narrow
        if narrow and not traced:
            return d.keep("no-launch-takes-copy", f"{why}; thread axes not permuted: every "
                          f"launch's block has {' and '.join(f'{a} = 1' for a in narrow)}, "
                          f"so a copy with {' or '.join(narrow)} as the new x (which would "
                          "lower the global-memory cost) could never run")
        return d.keep("best-axis-order", f"{why}; the thread axes are already in the best "
                      f"order{traced}")
    source = d.permutation.source
    takes = [launch_takes(source, b, g) for b, g in zip(blocks, grids)]
    veto = options.price_on_chip and _on_chip_veto(
        d.analysis.model, source, [b for b, t in zip(blocks, takes) if t is not False],
        "chosen by tracing" in traced)
    if veto:
        return d.keep(veto[0], f"{why}; thread axes not permuted ({d.permutation.describe()}"
                      f" would lower the global-memory cost{traced}): {veto[1]}")
    racing = _global_races_across_barriers(d.analysis)
    if racing:
        return d.keep("race", f"{why}; thread axes not permuted ({d.permutation.describe()} "
                      f"would lower the global-memory cost{traced}): threads may race on "
                      f"'{racing}' (global memory; polycoal does not tell which barrier "
                      "orders them)")
    permuted = d.change("permuted", f"{why}; thread axes permuted ({d.permutation.describe()}, "
                        f"new <- original){traced}{_guard_note(launches, takes)}")
    choice = _priced_permutation(d, options)
    if choice is not None and choice.chosen == "original" and options.model and not traced:
        return replace(d.keep("no-predicted-gain", f"{why}; thread axes not permuted "
                              f"({d.permutation.describe()} would lower the global-memory "
                              f"cost): {choice.kept_because()}"), predicted=choice)
    return replace(permuted, predicted=choice)


def _priced_permutation(d: KernelDecision, options: TransformOptions) -> Choice | None:
    """The model's prices of a permutation and of the kernel as written. A permutation
    must pass two judges: its warp-level cost on the whole block (on-chip veto,
    MIN_GAIN: shared memory and divergence, which the roofline does not see) and the
    roofline's MARGIN at the launch's sizes (a kernel whose data sits in the L2, or whose
    time is the launch's, gains nothing from coalescing). An order chosen by tracing the
    addresses (strides the static model does not know) is taken on the trace's word."""
    model = d.analysis.model
    x = d.permutation.source.get("x", "x")
    dim = next((t.name for t in model.thread_dims if t.axis == x and t.kind != "block"), None)
    if dim is None:
        return None
    original, priced, assumed = _priced(d, options, [("permuted", Geometry(x=dim))])
    taken = choose(original, priced)
    return Choice(original, tuple(priced), "original" if taken is None else "permuted",
                  assumed)


def _guard_note(launches, takes: list[bool | None]) -> str:
    """What the launches of a permuted kernel check, for its reason: nothing where each
    one's known geometry fits the permuted axes; otherwise which launches check at run
    time, which fit without a check and which never take the permuted copy."""
    if all(t is True for t in takes):
        return ""
    if all(t is None for t in takes):
        return ("; the launch checks at run time that its geometry fits the permuted axes "
                "and runs the original kernel where it does not")
    return _decided_note(launches, takes, (
        (None, "checks at run time that its geometry fits the permuted axes",
         "check at run time that their geometry fits the permuted axes"),
        (True, "fits the permuted axes (no check written)",
         "fit the permuted axes (no check written)"),
        (False, "never fits the permuted axes (left as written)",
         "never fit the permuted axes (left as written)")))


def _on_chip_veto(model, source: dict[str, str], blocks: list[tuple], traced: bool
                  ) -> tuple[str, str] | None:
    """Why a permutation the global-memory ILP chose is not applied (reason code, prose),
    or None: the whole block's cost (analysis/warp_cost.py: global sectors, shared-memory
    wavefronts, warps issued under thread-index guards) must fall by MIN_GAIN at every
    launch's block shape. Where a block shape is known only at run time, a kernel with
    shared-memory references is left alone (its bank conflicts depend on it). A choice
    made by tracing saw the global references the static model cannot (indirect
    subscripts): it is priced again only where there is shared memory it did not see."""
    shared = [a.text for _, a in model.accesses() if a.space == "shared"]
    if traced and not shared:
        return None
    shapes = sorted({b for b in blocks if all(isinstance(v, int) for v in b)})
    if len(shapes) < len(set(blocks)):
        if shared:
            return ("uncertain-gain", "the gain is uncertain: a launch's block shape is known "
                    f"only at run time, and the shared-memory accesses ({shared[0]}) may "
                    "conflict in banks under the new axes")
        return None
    identity = {a: a for a in source}
    for block in shapes:
        before, after = block_costs(model, [identity, source], block)
        if after.unpriced:
            return ("uncertain-gain", f"the gain is uncertain: shared-memory access "
                    f"{after.unpriced[0]} cannot be priced under the new axes")
        gain = before.total / after.total if after.total else float("inf")
        if gain < MIN_GAIN:
            verdict = "slower" if gain < 1 else "too small a gain"
            return ("small-gain", f"the whole block's cost predicts {verdict} (x{gain:.2f} "
                    f"for a {block[0]}x{block[1]}x{block[2]} block: {before.describe()} "
                    f"now, {after.describe()} permuted)")
    return None


def _search_permutation(program: Program, kernel: Kernel, d: KernelDecision, blocks, grids,
                        options: TransformOptions) -> tuple[KernelDecision, str]:
    """Run the empirical search (dynamic/empirical.py) over the candidates that the
    launches allow; when every candidate was traced, its choice replaces the static one
    (its costs: sectors beyond ideal). Returns the decision and how the choice was made,
    for the reason, or "" when there was nothing to search (one candidate)."""
    sources = candidate_sources(blocks, grids)
    if len(sources) < 2:
        return d, ""

    def render(source: dict[str, str]) -> str:
        if is_identity(source):
            return program.text
        trial = KernelDecision(kernel.name, "permuted", "",
                               permutation=Permutation(source, 0, 0, ""),
                               indirect=d.indirect)
        return _splice(program.text, _replacements(program, [trial]))
    choice = search(program.path, options.preprocessor, kernel.name, sources, render,
                    dict(options.arguments))
    d = replace(d, empirical=choice)
    failed = [f for f in choice.candidates if f.error]
    if failed:
        return d, (f" (static choice: the empirical search could not trace "
                   f"{failed[0].label()}: {failed[0].error})")
    best, identity = choice.best, choice.candidates[0]
    return replace(d, permutation=Permutation(
        best.source, best.excess, identity.excess, "",
        guarded=needs_guard(best.source, blocks, grids))), " (chosen by tracing)"


def _axis_descriptions(model, mapping: Mapping) -> list[tuple[str, str]]:
    return [(a, describe_dim(model, dim)) for a, dim in zip("xyz", mapping.axes)]


def _splice(text: str, replacements: list[tuple[Span, str]]) -> str:
    """`text` with the replacements, their lines ended as the file's (CRLF stays CRLF)."""
    ending = line_ending(text)
    out = []
    pos = 0
    for span, new in sorted(replacements, key=lambda r: (r[0].start, r[0].end)):
        if span.start < pos:
            raise ValueError("overlapping replacements")
        out.append(text[pos:span.start])
        out.append(with_line_ending(new, ending))
        pos = span.end
    out.append(text[pos:])
    return "".join(out)


def _replacements(program: Program, decisions: list[KernelDecision]) -> list[tuple[Span, str]]:
    out = []
    for d in decisions:
        if d.action == "layout":
            out.append((program.kernel(d.kernel).span, d.layout_text))
            for launch, positions in d.layout.launches:
                if launch.kernel == d.kernel:
                    out.append((launch.span, rewrite_layout_launch(program, launch,
                                                                   positions)))
        if d.action == "permuted":
            kernel = program.kernel(d.kernel)
            if d.indirect is None and reads_indirectly(program, kernel):
                raise ValueError(f"kernel {kernel.name} reads thread indices through "
                                 "macros or helpers, and their expansions are not known")
            permuted = permute_kernel(program.text, kernel, d.permutation, d.emitted,
                                      d.indirect)
            if d.emitted != d.kernel:          # the original stays for the launches'
                permuted = program.text[kernel.span.start:kernel.span.end] + "\n\n" + permuted
            out.append((kernel.span, permuted))
            for launch in program.launches_of(d.kernel):
                text = permute_launch(program.text, launch, d.permutation, d.emitted)
                if text is not None:        # None: the launch never takes the copy
                    out.append((launch.span, text))
        if d.action not in GENERATED:
            continue
        kernel = program.kernel(d.kernel)
        generated = d.generated.text
        if d.emitted != d.kernel:      # a copy under a run-time check; the original stays
            generated = program.text[kernel.span.start:kernel.span.end] + "\n\n" + re.sub(
                rf"\b{re.escape(d.kernel)}(?=\s*\()", d.emitted, generated)
        out.append((kernel.span, generated))
        note = {"reduced": "one warp per row: ", "split": "column reduction split: ",
                "columns": "one block per 32 columns: ",
                "tiled": "row reduction in tiles: ",
                "staged": "32x32 tiles staged in shared memory: ",
                "product": "a product in register and shared-memory tiles: "}.get(
            d.action, "restructured geometry: ") + ", ".join(
            f"{a} = {what.split(' (')[0]}" for a, what in
            _axis_descriptions(d.analysis.model, d.mapping))
        for launch in program.launches_of(d.kernel):
            assumption = d.assumption
            if assumption is not None:
                verdict = decided(assumption, known_values(launch))
                if verdict is False:
                    continue        # never runs the copy: the launch stays as written
                assumption = None if verdict else assumption
            out.append((launch.span, rewrite_launch(
                program.text, launch, kernel, d.generated.stages, d.generated.hidden, note,
                assumption, d.emitted if d.emitted != d.kernel else None, d.disjoint)))
    return out


# Validators: every kind of change is checked by its own validator before it is
# emitted; each returns the problems it finds (none: accepted).

def _read_back(new_program: Program | None, d: KernelDecision):
    """The model of the decision's kernel as the output reads back, or why there is none."""
    if new_program is None:
        return "the generated program does not preprocess"
    new_kernel = new_program.kernel(d.emitted)
    if new_kernel is None or new_kernel.ast is None:
        return "the generated kernel does not parse"
    model = extract_model(new_kernel, new_program)
    if d.assumption is not None:       # the copy runs only where the launch's check holds
        model.context = model.context + [d.assumption.constraint]
    return model


def _translation(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """Restructured kernels: read back from the output and checked with isl (the same
    instances, each once, the same accesses, every dependence respected)."""
    new_model = _read_back(new_program, d)
    if isinstance(new_model, str):
        return [new_model]
    return validate_translation(d.analysis.model, new_model, d.generated)


def _lanes(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """Warp-per-row and block-cooperative reductions: every iteration of each split loop
    on exactly one lane (validate/lanes.py)."""
    return [p for split in d.generated.lane_splits for p in lane_split_problems(split)]


def _reduction_shape(program: Program, new_program: Program | None,
                     d: KernelDecision) -> list[str]:
    """Column splits and tiles sum every (column, row) of a rectangle with atomicAdd: the
    model must be one (a sum over a rectangle of columns and rows without gaps)."""
    refusal = column_reduction_obstacle(d.analysis.model, d.analysis)
    return [refusal.text] if refusal else []


def _phases(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A column kernel in phases: the plan, made again from the original's model, must
    be the one the generated kernel carries out (optimize/phases.py's conditions)."""
    if not d.generated.phases:
        return []
    plan = plan_phases(d.analysis.model, d.analysis, 0)
    if isinstance(plan, Obstacle):
        return [plan.text]
    return [] if plan.kinds == d.generated.phases else \
        ["the generated phases differ from the plan's"]


def _promotion(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """Promoted accumulators: loaded and stored exactly where the loop runs."""
    return [p for loop in d.generated.promoted for p in promotion_problems(loop)]


def _reparses(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """Permuted kernels: the output's kernel parses and has the original's references."""
    new_model = _read_back(new_program, d)
    if isinstance(new_model, str):
        return [new_model]
    old_model = d.analysis.model
    # the thread indices in the references are renamed; the arrays and kinds are not
    if sorted((a.array, a.kind) for _, a in new_model.accesses()) != \
            sorted((a.array, a.kind) for _, a in old_model.accesses()):
        return ["the permuted kernel's references differ from the original's"]
    return []


def _product(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A product in tiles: the plan, made again from the original's model, must be the
    one the generated kernel carries out (optimize/products.py's conditions)."""
    made = d.generated.tiles
    model = d.analysis.model
    plan = product_plan(model, d.analysis, d.mapping, getattr(made, "sizes", None),
                        getattr(made, "split", False))
    if isinstance(plan, Obstacle):
        return [plan.text]
    if plan != made:
        return ["the generated tiles differ from the plan"]
    # the threads' accumulators cover each tile once; no skipped tile holds an output
    return offsets_problems(plan.sizes.threads, plan.micro, vector_width(model, plan)) + \
        skip_problems(model, plan.output_statement, plan.i, plan.j, plan.tile,
                      tile_set(model, plan))


def _staging(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A staged kernel: the plan, made again from the original's model, must be the one
    the generated kernel carries out (optimize/staging.py's conditions)."""
    plan = staging_plan(d.analysis.model, d.analysis)
    if isinstance(plan, Obstacle):
        return [plan.text]
    return [] if plan == d.generated.tiles else ["the generated tiles differ from the plan"]


def _layout(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A kernel in a new layout: read back, every statement the same over the same
    domain, every access the original's moved by the layout (validate/layout.py)."""
    new_model = _read_back(new_program, d)
    if isinstance(new_model, str):
        return [new_model]
    params = d.layout.kernels[d.kernel]
    names = {p: group_parameters(p, layout) for p, layout in params.items()}
    # the original as written (the analysis' model may carry a race-free assumption)
    old_model = extract_model(program.kernel(d.kernel), program)
    return layout_is_injective(d.layout.layout) + \
        layout_problems(old_model, new_model, params, names)


def _reorganised(program: Program, new_program: Program | None, d: KernelDecision
                 ) -> list[str]:
    """A kernel reading reorganised copies: read back, checked against the original
    (validate/irregular.py)."""
    plan_groups = irregular_groups(d.reorganisation.applied)
    if any(g.shared or g.padded for g in plan_groups) and new_program is not None:
        kernel = new_program.kernel(d.emitted)
        text = checked_text(new_program.text, plan_groups,
                            kernel.span if kernel is not None else None)
        if text is None:
            return ["a shared form's load is not in the kernel once"]
        try:
            new_program = read_program(program.path, d.reorganisation.preprocessor, text=text,
                                       constants=program.constants)
        except InputError:
            new_program = None
    new_model = _read_back(new_program, d)
    if isinstance(new_model, str):
        return [new_model]
    old_model = extract_model(program.kernel(d.kernel), program)
    return irregular_problems(old_model, new_model, plan_groups)


VALIDATORS = {"layout": (_layout,), "reorganised": (_reorganised,),
              "restructured": (_translation, _promotion), "reduced": (_lanes,),
              "columns": (_lanes, _phases), "split": (_reduction_shape,),
              "tiled": (_reduction_shape,), "permuted": (_reparses,),
              "staged": (_staging,), "product": (_product,)}


def _validate(program: Program, text: str, decisions: list[KernelDecision],
              options: TransformOptions, errors: list[Diagnostic]) -> list[KernelDecision]:
    """Every changed decision through the validators of its kind; a rejected kernel is
    kept (an error says why), a validator's own failure is confined to its kernel."""
    try:
        new_program = read_program(program.path, options.preprocessor, text=text,
                                   constants=program.constants)
    except InputError:
        new_program = None
    out = []
    for d in decisions:
        try:
            problems = [p for check in VALIDATORS.get(d.action, ())
                        for p in check(program, new_program, d)]
        except Exception as error:
            d = _fail(program, d, error, "validating it", errors)
            problems = []
        if problems:
            d = d.keep("validation-failed",
                       "translation validation failed: " + "; ".join(problems[:3]))
            errors.append(Diagnostic("error", "validation-failed",
                                     f"kernel '{d.kernel}': {d.reason}; the original "
                                     "kernel is kept", program.kernel(d.kernel).location,
                                     d.kernel))
        out.append(d)
    return out


# The compile check (validate/compiles.py): the output must compile wherever the input
# does. A change that breaks it is found by leaving the changes out in turn, those whose
# text holds an error first, and is kept as written with an error.

def _compile_checked(program: Program, decisions: list[KernelDecision], text: str,
                     options: TransformOptions, errors: list[Diagnostic], finish,
                     baseline=None) -> tuple[list[KernelDecision], str]:
    """The decisions and the text, every change whose output (as `finish` makes it of
    the text) does not compile where the input does (`baseline()`: the errors allowed,
    by default the program's own) left as written (code `output-rejected`, an error
    naming the compiler's first message). An output without errors is all it costs."""
    checker = options.compile_check
    units = _change_units(decisions)
    if not units or not compiles.available(checker):
        return decisions, text

    def compiled(output: str):
        return compiles.compile_errors(checker, program.path, finish(output),
                                       options.preprocessor)
    after = compiled(text)
    if after == ():
        return decisions, text
    before = baseline() if baseline is not None else \
        compiles.compile_errors(checker, program.path, program.text, options.preprocessor)
    if before is None:
        return decisions, text

    def new_errors(output: str) -> list[compiles.CompileError] | None:
        after = compiled(output)
        return None if after is None else compiles.new_errors(before, after)

    found = None if after is None else compiles.new_errors(before, after)
    if found is None:
        found = [compiles.CompileError(0, "the output cannot be compiled at all")]
    if not found:
        return decisions, text
    _, edits = _edits(program, decisions, [])
    ordered = _suspects_first(units, _edit_lines(program.text, edits), found)

    def without(left_out: list[tuple[str, ...]]):
        kept = {k for unit in left_out for k in unit}
        _, trial = _rendered(program, [d.keep("output-rejected", "") if d.kernel in kept
                                       else d for d in decisions], [])
        return new_errors(trial)

    rejected = {k: error for unit, error in compiles.culprits(ordered, found, without).items()
                for k in unit}
    out = []
    for d in decisions:
        if d.kernel in rejected:
            why = rejected[d.kernel].describe(checker)
            d = d.keep("output-rejected", f"the transformed program does not compile where "
                       f"the input does ({why}); the kernel is left as written")
            errors.append(Diagnostic("error", "output-rejected", f"kernel '{d.kernel}': "
                                     f"{d.reason}", program.kernel(d.kernel).location,
                                     d.kernel))
        out.append(d)
    return _rendered(program, out, errors)


def _change_units(decisions: list[KernelDecision]) -> list[tuple[str, ...]]:
    """The changes that stand or fall together, as the kernels they change: one kernel,
    or every kernel of one layout (a whole-program change)."""
    units: list[list[str]] = []
    layouts: dict[int, list[str]] = {}
    for d in decisions:
        if d.action not in CHANGED:
            continue
        if d.action == "layout" and id(d.layout) in layouts:
            layouts[id(d.layout)].append(d.kernel)
            continue
        units.append([d.kernel])
        if d.action == "layout":
            layouts[id(d.layout)] = units[-1]
    return [tuple(u) for u in units]


def _edit_lines(text: str, edits: list[tuple[Span, str, str | None]]
                ) -> list[tuple[int, int, str | None]]:
    """(first line, last line, kernel) of each edit in the spliced text (_splice: the
    edits in order, their lines ended as the file's)."""
    ending = line_ending(text)
    out, shift = [], 0
    for span, new, kernel in sorted(edits, key=lambda e: (e[0].start, e[0].end)):
        new = with_line_ending(new, ending)
        first = line_ends(text[:span.start]) + 1 + shift
        out.append((first, first + line_ends(new), kernel))
        shift += line_ends(new) - line_ends(text[span.start:span.end])
    return out


def _suspects_first(units: list[tuple[str, ...]], lines: list[tuple[int, int, str | None]],
                    found: list[compiles.CompileError]) -> list[tuple[str, ...]]:
    """The units in the order to leave them out: those with an error inside their edits
    first (in the order of the errors), then the others."""
    def rank(unit: tuple[str, ...]) -> int:
        return next((n for n, e in enumerate(found) for first, last, kernel in lines
                     if kernel in unit and first <= e.line <= last), len(found))
    return sorted(units, key=rank)


def _fail(program: Program, d: KernelDecision, error: Exception, stage: str,
          errors: list[Diagnostic]) -> KernelDecision:
    """A failure inside polycoal while working on one kernel: the kernel is left as it
    is, with an error at its definition (file:line) that names the exception."""
    diagnostic, reason = internal_error(d.kernel, program.kernel(d.kernel).location, error,
                                        stage)
    errors.append(diagnostic)
    return d.keep("internal-error", reason)


def _planned(program: Program, kernel: Kernel, options: TransformOptions,
             errors: list[Diagnostic]) -> KernelDecision:
    """plan_kernel, a failure in it confined to the kernel (see _fail)."""
    try:
        return plan_kernel(program, kernel, options)
    except Exception as error:
        return _fail(program, KernelDecision(kernel.name, "unchanged", ""), error,
                     "planning it", errors)


def _rendered(program: Program, decisions: list[KernelDecision], errors: list[Diagnostic]
              ) -> tuple[list[KernelDecision], str]:
    """The program text with every decision's edits (a kernel and its launches); a
    failure to render one is confined to its kernel (see _fail)."""
    out, edits = _edits(program, decisions, errors)
    return out, _splice(program.text, [(span, new) for span, new, _ in edits])


def _edits(program: Program, decisions: list[KernelDecision], errors: list[Diagnostic]
           ) -> tuple[list[KernelDecision], list[tuple[Span, str, str | None]]]:
    """The decisions (a failure to render one confined to its kernel) and the edits of
    the program text they make, each with the kernel whose edit it is (None: the host
    side of the reorganisations and layouts, shared by their kernels)."""
    out, edits = [], []
    for d in decisions:
        try:
            edits += [(span, new, d.kernel) for span, new in _replacements(program, [d])]
        except Exception as error:
            d = _fail(program, d, error, "rendering it and its launches", errors)
        out.append(d)
    shared = []
    try:
        shared += reorganisation.edits(program, out)
    except Exception as error:          # confined: every reorganised kernel stays
        out = [_fail(program, d, error, "rendering its reorganised references", errors)
               if d.action == "reorganised" else d for d in out]
    shared += _layout_host_edits(program, out)
    return out, edits + [(span, new, None) for span, new in shared]


def _layout_host_edits(program: Program, decisions: list[KernelDecision]
                       ) -> list[tuple[Span, str]]:
    """The host side of each layout in the output (made with the plan): the runtime
    after the struct's definition, the runtime calls on its arrays through it."""
    plans: list[LayoutDecision] = []
    for d in decisions:
        if d.action == "layout" and all(p is not d.layout for p in plans):
            plans.append(d.layout)
    out = []
    for k, plan in enumerate(plans):       # the runtime's shared part with the first
        out.append((Span(plan.insert_at, plan.insert_at), "\n" + plan.runtimes[k > 0]))
        out += plan.host_edits
    return out


def _layout_plans(program: Program, decisions: list[KernelDecision],
                  options: TransformOptions, errors: list[Diagnostic]) -> list[LayoutDecision]:
    """The layouts of the program's arrays of structs (optimize/layout.py), each with the
    text of its kernels in the new layout, or the reason it stays."""
    if options.kernel is not None or options.layout == "none":
        return []
    analyses = [d.analysis for d in decisions if d.analysis and d.analysis.model]
    try:
        plans = plan_layouts(program, analyses, options.layout)
    except Exception as error:          # confined: the layouts stay, the kernels go on
        errors.append(Diagnostic("error", "internal-error", "internal error in polycoal "
                                 f"while choosing data layouts ({type(error).__name__}: "
                                 f"{error}); every layout is left as it is",
                                 program.kernels[0].location if program.kernels else None))
        return []
    by_name = {d.kernel: d for d in decisions}
    for plan in plans:
        if not plan.changes:
            continue
        plan.texts = {}
        name = None
        try:
            for name, params in plan.kernels.items():
                d = by_name.get(name)
                if d is None or d.analysis is None or d.analysis.model is None:
                    raise NotRewritable(f"kernel '{name}' is not modelled")
                if JUDGED in name:          # its kernel is read, and written, as it is
                    raise NotRewritable(f"kernel '{name.split(JUDGED)[0]}' is read only "
                                        "to judge it")
                model = d.analysis.model
                plan.unrolled[name] = unroll_factors(model, plan.layout, set(params))
                plan.texts[name] = rewrite_kernel(program, program.kernel(name), params,
                                                  plan.unrolled[name])
            name = None
            plan.host_edits = [(call.span, rewrite_call(call, plan.layout))
                               for call in plan.calls]
            plan.runtimes = (runtime(plan.layout, True), runtime(plan.layout, False))
            plan.description = f"{plan.layout.describe()}: {plan.summary()}"
        except NotRewritable as error:
            plan.reason = f"kernel '{name}': {error}" if name else str(error)
            continue
        except Exception as error:        # confined: this struct's arrays stay as they are
            what = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
            where = program.kernel(name) if name else program.kernel(next(iter(plan.kernels)))
            errors.append(Diagnostic("error", "internal-error", "internal error in polycoal "
                                     f"while rewriting the arrays of {plan.struct.name} "
                                     f"({what}); their layout is left as it is",
                                     where.location if where else None, name))
            plan.reason = f"internal error ({what})"
            continue
        at = definition_end(program, plan.struct.name)
        first_use = min([program.kernel(n).span.start for n in plan.kernels] +
                        [c.span.start for c in plan.calls])
        plan.insert_at = at if at is not None else None
        if at is None or at > first_use:
            plan.reason = (f"struct {plan.struct.name} is not defined in this file before "
                           "its arrays are used")
    return plans


def _layout_notes(program: Program, plans: list[LayoutDecision]) -> list[Diagnostic]:
    """Why an array of structs that kernels read with a stride keeps its layout."""
    out = []
    for plan in plans:
        if plan.changes or plan.layout.kind == "aos" and not plan.reason:
            continue
        kernel = program.kernel(plan.uses[0].kernel)
        out.append(Diagnostic("note", "layout-kept", f"arrays of {plan.struct.name} keep "
                              f"their layout: {plan.reason}",
                              kernel.location if kernel else None, kernel.name if kernel
                              else None))
    return out


def _with_layouts(decisions: list[KernelDecision], plans: list[LayoutDecision]
                  ) -> list[KernelDecision]:
    out = []
    for d in decisions:
        plan = next((p for p in plans if p.changes and d.kernel in p.kernels), None)
        if plan is None:
            out.append(d)
            continue
        params = ", ".join(f"'{p}'" for p in plan.kernels[d.kernel])
        unrolled = "".join(f"; {why}" for _, why in
                           sorted(plan.unrolled.get(d.kernel, {}).values()))
        out.append(replace(d, action="layout", code="layout", layout=plan,
                           layout_text=plan.texts[d.kernel], reason=(
                               f"its array of {plan.struct.name} ({params}) is stored as "
                               f"{plan.description}{unrolled}"),
                           generated=None, mapping=None, assumption=None, disjoint=()))
    return out


def _promoted(program: Program, d: KernelDecision, errors: list[Diagnostic]) -> KernelDecision:
    """A validated restructured kernel with its accumulators promoted to registers: a
    local rewrite that is legal by itself (one element, loop-invariant, no other access
    to its array in the loop, arrays distinct) and keeps the order of the operations, so
    results are identical; its loads and stores are checked by _promotion."""
    if d.action != "restructured":
        return d
    try:
        generated = generate_kernel(program.text, program.kernel(d.kernel), d.analysis.model,
                                    d.mapping, d.generated.block, promote=True)
    except Exception as error:
        return _fail(program, d, error, "promoting its accumulators", errors)
    return replace(d, generated=generated)


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
    """The program with its kernels transformed where that is shown legal and a gain.
    Kernels the C-subset front end cannot read as written (templates, a header's
    kernels, C++ types) are read through their lowering (frontend/lower.py); a lowering
    stays in the output only where its kernel is transformed."""
    if lower.needs_lowering(program):
        lowerings = lower.plan(program, options.preprocessor)
        lowerings += [l for l in lower.macro_launches(program)
                      if not any(x.kernel == l.kernel for x in lowerings)]
        if lowerings:
            return _transform_lowered(program, lowerings, options)
    return _transform(program, options)


def _transform_lowered(program: Program, lowerings: list[lower.Lowering],
                       options: TransformOptions) -> TransformResult:
    """Transform the lowered program, through the lowerings that compile wherever the
    input does (the others are refused, with an error, before any kernel is read
    through them)."""
    lowerings, refused, baseline = _compiling_lowerings(program, lowerings, options)
    result = _transform_lowerings(program, lowerings, options, baseline) if lowerings else \
        _transform(program, options)
    return _with_refused(result, refused, options.compile_check)


def _compiling_lowerings(program: Program, lowerings: list[lower.Lowering],
                         options: TransformOptions):
    """The lowerings whose lowered program compiles wherever the input does (the copy of
    a template's instantiation, its redirected launches, helpers inlined), the others,
    each with the compiler's first error it caused (validate/compiles.py), and how to
    get the input's errors (the errors the outputs read through the lowerings may
    have; None: not judged). A lowered program without errors is all it costs."""
    checker = options.compile_check
    # a copy read only to judge a kernel (never launched, never in an output) is not
    # compiled: a wrong reading of it changes a report, never a program
    judged = [l for l in lowerings if l.generic]
    lowerings = [l for l in lowerings if not l.generic]
    if not compiles.available(checker) or not lowerings:
        return lowerings + judged, [], None

    def compiled(text: str):
        return compiles.compile_errors(checker, program.path, text, options.preprocessor)

    def original():
        return compiled(program.text)
    lowered = lower.apply(program.text, lowerings)
    after = compiled(lowered.text)
    if after == ():
        return lowerings + judged, [], original
    before = original()
    if before is None:
        return lowerings + judged, [], None

    def new_errors(chosen: list[lower.Lowering]) -> list[compiles.CompileError] | None:
        after = compiled(lower.apply(program.text, chosen).text)
        return None if after is None else compiles.new_errors(before, after)

    found = None if after is None else compiles.new_errors(before, after)
    if found is None:
        found = [compiles.CompileError(0, "the lowered program cannot be compiled at all")]
    if not found:
        return lowerings + judged, [], original
    bad = compiles.culprits(_by_errors(program.text, lowerings, lowered, found), found,
                            lambda left_out: new_errors([l for l in lowerings
                                                         if l not in left_out]))
    return [l for l in lowerings if l not in bad] + judged, \
        [(l, e) for l, e in bad.items()], original


def _by_errors(text: str, lowerings: list[lower.Lowering], lowered: lower.Lowered,
               found: list[compiles.CompileError]) -> list[lower.Lowering]:
    """The lowerings (`lowered`: the input `text` with them) in the order to leave them
    out: those whose copy or edits hold an error first (in the order of the errors).
    The input's lines keep their numbers in the lowered text; the copies follow it."""
    lines = [(first, first + count - 1, l) for first, count, l in lowered.copies]
    lines += [(line_ends(text[:start]) + 1, line_ends(text[:start]) + 1 + line_ends(new), l)
              for l in lowerings for start, _, new in l.edits]
    return sorted(lowerings, key=lambda l: next(
        (n for n, e in enumerate(found) for first, last, x in lines
         if x is l and first <= e.line <= last), len(found)))


def _with_refused(result: TransformResult,
                  refused: list[tuple[lower.Lowering, compiles.CompileError]],
                  checker: str) -> TransformResult:
    """The result with a warning (lowering-rejected) for each lowering refused, at its
    kernel's definition; a copy's instantiation is kept as written (its decision). A
    lowering is how polycoal reads a kernel, not an output: where it does not compile,
    polycoal could not read the kernel (a bug of the reading, which the compile check
    keeps out of every output), and the rest of the file is transformed as usual."""
    decisions, diagnostics = list(result.decisions), list(result.diagnostics)
    for lowering, error in refused:
        what = "its copy for this instantiation" if lowering.copy else \
            "its reading through Clang (helpers inlined, aliases and macros expanded)"
        reason = (f"not read: {what} does not compile where the input does "
                  f"({error.describe(checker, 'the program lowered')}); "
                  + ("the kernel is left as written" if lowering.copy
                     else "the kernel is read as written instead"))
        # a template read at stated arguments only to judge it: a note
        diagnostics.append(Diagnostic("note" if lowering.generic else "warning",
                                      "lowering-rejected",
                                      f"kernel '{lowering.shown}': {reason}",
                                      Location(lowering.file, lowering.line), lowering.shown))
        if not any(d.kernel == lowering.shown for d in decisions):
            decisions.append(KernelDecision(lowering.shown, "unchanged", reason,
                                            code="lowering-rejected"))
    return replace(result, decisions=decisions, diagnostics=diagnostics)


def _transform_lowerings(program: Program, lowerings: list[lower.Lowering],
                         options: TransformOptions, baseline=None) -> TransformResult:
    """Transform the lowered program; then once more with only the lowerings whose kernel
    changed (a lowered kernel left unchanged leaves the input's text as it was).
    `baseline`: how to get the errors the outputs may have (the input's)."""
    def run(chosen):
        lowered = lower.apply(program.text, chosen)
        p = read_program(program.path, options.preprocessor, text=lowered.text,
                         constants=program.constants)
        return lowered, p, _transform(p, options, {l.kernel: l.shown for l in chosen},
                                      lambda text: _declared(text, chosen), baseline)

    lowered, p, first = run(lowerings)
    first_lowered = lowered
    changed = {d.kernel for d in first.decisions if d.action in CHANGED}
    kept = [l for l in lowerings if l.kernel in changed]
    final, final_program = first, p
    if len(kept) < len(lowerings):
        if kept:
            lowered, final_program, final = run(kept)
        else:
            final, final_program = _transform(program, options), program
    dropped = [l for l in lowerings if l not in kept]
    shown = {l.kernel: l for l in lowerings}
    # a dropped copy of a plain kernel (a header's, one taking structs) speaks for it: its
    # decision and notes replace the input kernel's (read as the C subset reads it)
    # a copy read only to judge a kernel that could not be read either says nothing: the
    # kernel's own decision and notes stand
    unread = {d.kernel for d in first.decisions if d.code == "unparsed"}
    silent = [l for l in lowerings if l.generic and l.kernel in unread]
    speaks = {l.shown: l for l in dropped if l.copy and l.shown == _original_name(l) and
              l not in silent}
    decisions = [replace(d, reason=_original_lines(d.reason, lowered)) if d.kernel in shown
                 else d for d in final.decisions
                 if (d.kernel not in shown or d.action in CHANGED) and d.kernel not in speaks]
    decisions += [replace(d, kernel=shown[d.kernel].shown,
                          reason=_original_lines(d.reason, first_lowered))
                  for d in first.decisions if d.kernel in shown and shown[d.kernel] in dropped
                  and shown[d.kernel] not in silent]
    notes = [x for x in final.diagnostics if x.kernel not in shown and x.kernel not in speaks]
    notes += [_lowered_diagnostic(x, lowered, shown[x.kernel]) for x in final.diagnostics
              if x.kernel in shown and shown[x.kernel] in kept]
    notes += [_lowered_diagnostic(x, first_lowered, shown[x.kernel]) for x in first.diagnostics
              if x.kernel in shown and shown[x.kernel] in dropped and
              shown[x.kernel] not in silent]
    superseded = frozenset(_original_name(l) for l in lowerings if l not in silent) | \
        frozenset(name for l in kept for name in l.inlined)
    copies: dict[str, list[lower.Lowering]] = {}
    for l in lowerings:
        if l.copy and l.shown not in speaks and l not in silent:
            copies.setdefault(_original_name(l), []).append(l)
    decisions = [d.keep("lowered", _copied(copies[d.kernel], kept))
                 if d.kernel in copies and d.action == "unchanged" else d for d in decisions]
    notes = [replace(x, message=f"kernel '{x.kernel}' left unchanged: "
                     f"{_copied(copies[x.kernel], kept)}")
             if x.kernel in copies and x.code == "unchanged" else x for x in notes]
    text = _declared(final.text, kept)
    return TransformResult(text, decisions, notes, final_program, superseded)


def _copied(copies: list[lower.Lowering], kept: list[lower.Lowering]) -> str:
    """What became of a kernel read through copies (a template's instantiations, a
    header's kernel): which were transformed, under which names."""
    moved = [f"{l.shown} as {l.kernel}" for l in copies if l in kept]
    read = [l.shown + (f" ({l.why})" if l.generic and l.why else "") for l in copies
            if l not in kept]
    parts = ([f"its launches of {', '.join(moved)} run transformed copies (it stays for "
              "its other uses)"] if moved else []) + \
        ([f"read as {', '.join(read)}, not transformed (see there)"] if read else [])
    return "; ".join(parts)


def _original_name(lowering: lower.Lowering) -> str:
    return lowering.shown.split("<")[0].split("::")[-1]


def _lowered_diagnostic(x: Diagnostic, lowered: lower.Lowered, lowering: lower.Lowering
                        ) -> Diagnostic:
    """A diagnostic about a lowered kernel, named as the input names it and placed at its
    definition's line (a copy's lines are past the end of the input)."""
    location = x.location
    origin = lowered.origin(location.line) if location is not None else None
    if origin is not None:
        location = replace(location, file=origin[0], line=origin[1])
    renamed = lowering.copy and x.code in CHANGED      # the copy is in the output
    name = f"'{lowering.shown}' (as '{lowering.kernel}')" if renamed else f"'{lowering.shown}'"

    message = _original_lines(x.message.replace(f"'{lowering.kernel}'", name), lowered)
    return replace(x, message=message, location=location,
                   kernel=lowering.kernel if renamed else lowering.shown)


def _original_lines(text: str, lowered: lower.Lowered) -> str:
    """`line N` of a copy (past the end of the input) as the definition's line."""
    def line(m: re.Match) -> str:
        mapped = lowered.origin(int(m.group(1)))
        return f"line {mapped[1] if mapped else m.group(1)}"
    return re.sub(r"\bline (\d+)", line, text)


def _declared(text: str, lowerings: list[lower.Lowering]) -> str:
    """A transformed lowered program with each copy declared as transformed
    (lower.declared_before_use)."""
    for lowering in lowerings:
        if lowering.generic:        # read only to judge a kernel: never in an output
            text = text.replace(lowering.copy, "\n" * lowering.copy.count("\n"))
        elif lowering.copy:
            text = lower.declared_before_use(text, lowering)
    return text


def _transform(program: Program, options: TransformOptions,
               shown: dict[str, str] | None = None, finish=None, baseline=None
               ) -> TransformResult:
    """`shown`: names of lowered kernels as the input names them (for --kernel);
    `finish`: what the caller makes of the text before it is written (the compile
    check judges that); `baseline`: how to get the errors the compile check allows
    (default: the program's own; a lowered program's are its input's)."""
    shown = shown or {}
    kernels = [k for k in program.kernels
               if options.kernel in (None, k.name, shown.get(k.name, "").split("<")[0])]
    if options.kernel is not None and not kernels:
        known = ", ".join(k.name for k in program.kernels) or "none"
        raise InputError(f"{program.path}: no kernel named '{options.kernel}' "
                         f"(kernels: {known})")
    errors: list[Diagnostic] = []      # internal errors and rejections, per kernel
    decisions = [_planned(program, k, options, errors) for k in kernels]
    plans = _layout_plans(program, decisions, options, errors)
    planned = decisions
    decisions = _with_layouts(decisions, plans)
    decisions, text = _rendered(program, decisions, errors)
    if any(d.action == "layout" for d in decisions):
        # a layout is whole-program: one kernel it cannot be shown for keeps them all
        checked = _validate(program, text, [d for d in decisions if d.action == "layout"],
                            options, errors)
        for plan in plans:
            failed = [d for d in checked if d.layout is plan and d.action != "layout"]
            if plan.changes and failed:
                plan.reason = f"kernel '{failed[0].kernel}': {failed[0].reason}"
        decisions = _with_layouts(planned, plans)
        decisions, text = _rendered(program, decisions, errors)
    if any(d.action in CHANGED and d.action != "layout" for d in decisions):
        # translation validation of the plain restructured kernels (promotion's register
        # code is outside what the front end reads back), then their promotion, checked
        # by its own validator; a promotion it rejects falls back to the plain kernel
        validated = iter(_validate(program, text, [d for d in decisions
                                                   if d.action != "layout"], options, errors))
        decisions = [d if d.action == "layout" else next(validated) for d in decisions]
        if options.promote:
            promoted = [_promoted(program, d, errors) for d in decisions]
            decisions = [d if p.action == "restructured" and _promotion(program, None, p)
                         else p for d, p in zip(decisions, promoted)]
        decisions, text = _rendered(program, decisions, errors)
    if options.reorganise != "none" and options.kernel is None:
        decisions = reorganisation.plan_all(program, decisions, errors, options.preprocessor)
        if any(d.action == "reorganised" for d in decisions):
            decisions, text = _rendered(program, decisions, errors)
            checked = iter(_validate(program, text, [d for d in decisions
                                                     if d.action == "reorganised"],
                                     options, errors))
            decisions = [next(checked) if d.action == "reorganised" else d
                         for d in decisions]
            decisions, text = _rendered(program, decisions, errors)
    decisions, text = _compile_checked(program, decisions, text, options, errors,
                                       finish or (lambda t: t), baseline)
    diagnostics = list(errors) + _layout_notes(program, plans)
    for d in decisions:
        kernel = program.kernel(d.kernel)
        if d.action in CHANGED:
            evidence = "" if d.action in ("layout", "reorganised") else \
                f" (pointer arguments distinct: {d.alias_evidence})"
            diagnostics.append(Diagnostic("note", d.action,
                                          f"kernel '{d.kernel}' {d.action}: {d.reason}"
                                          f"{evidence}", kernel.location, d.kernel))
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
        elif not any(x.kernel == d.kernel and x.code in ("validation-failed", "internal-error",
                                                          "output-rejected")
                     for x in diagnostics):
            diagnostics.append(Diagnostic("note", "unchanged",
                                          f"kernel '{d.kernel}' left unchanged: {d.reason}",
                                          kernel.location, d.kernel))
        if d.empirical:
            diagnostics.append(_empirical_note(d, kernel))
    return TransformResult(text, decisions, diagnostics, program)
