"""The driver: `transform_program` runs the passes (polycoal/passes/) over a program,
chooses, validates and splices.

For each kernel whose definition and launches are in the file, after the legality
checks (races, aliasing, where the launches are):
1. kernels in the affine model: the restructuring ILP's mapping is solved once; each
   pass proposes its form (passes/staging.py, products.py, mapping.py with the
   reduction forms of passes/reduction.py), the performance model prices every form and
   the kernel as written at the launch's sizes (analysis/roofline.py), and the first
   form predicted MARGIN times faster is taken, else the kernel is kept
   (`no-predicted-gain`);
2. kernels outside it: a permutation of the thread axes (passes/permutation.py), priced
   the same way;
3. then the program's passes: data layouts of arrays of structs (passes/layout.py) and
   irregular references read from reorganised copies (passes/reorganisation.py);
4. otherwise a kernel is left byte-identical, with a diagnostic and a reason code.
Decisions are immutable values (polycoal/decisions.py); every change goes through the
validators of its kind (VALIDATORS) before it is emitted, and the output through nvcc
where it is installed. Only the text of transformed kernels, their launch statements
and a layout's or reorganisation's host code changes.
"""

from __future__ import annotations

import re
from dataclasses import replace

from polycoal.analysis import KernelAnalysis, analyze_kernel
from polycoal.analysis.aliasing import distinct_arrays
from polycoal.codegen.kernel import generate_kernel
from polycoal.decisions import (CHANGED, GENERATED, REASSOCIATING, KernelDecision,
                                TransformOptions, TransformResult, internal_error)
from polycoal.diagnostics import Diagnostic, InputError, Location
from polycoal.frontend import lower, read_again
from polycoal.frontend.lexer import line_ending, line_ends, tokenize, with_line_ending
from polycoal.frontend.launches import counted_up, known_values
from polycoal.frontend.program import JUDGED, Kernel, Program, Span
from polycoal.analysis.dependences import condition_text, copies_proof, racing_values
from polycoal.optimize.assumptions import (Assumption, both, decided, disjoint_pointers,
                                           nonnegative, race_free_assumption, unsigned_sides)
from polycoal.analysis.roofline import Choice, choose
from polycoal.optimize.phases import plan_phases
from polycoal.optimize.reduction import Obstacle, column_reduction_obstacle
from polycoal.optimize.restructure import solve_mapping
from polycoal.codegen.product import vector_width
from polycoal.optimize.products import full_set, placements, product_plan, tile_set
from polycoal.optimize.staging import staging_plan
from polycoal.optimize.sweep import sweep_plan, vector_obstacle
from polycoal.optimize.window import window_plan
from polycoal.codegen.edits import replacements, splice
from polycoal.passes import PASSES
from polycoal.passes.mapping import form_geometry, plan_mapped
from polycoal.passes.layout import (layout_host_edits, layout_notes, plan_program_layouts,
                                    price_layouts, with_layouts)
from polycoal.passes.host_loops import host_loops
from polycoal.passes.permutation import plan_permutation
from polycoal.passes.base import Candidate, decided_note, form_code, price_forms
from polycoal.passes.products import forced_sizes
from polycoal.validate import compiles
from polycoal.validate.lanes import lane_split_problems, promotion_problems
from polycoal.validate.tiles import full_problems, offsets_problems, skip_problems
from polycoal.validate.translation import validate_translation
from polycoal.model import isl_helpers
from polycoal.model.extract import extract_model, unsigned_arguments
from polycoal.model.kernel_model import is_launch_parameter, reserved_argument
from polycoal.codegen.layout import group_parameters
from polycoal.validate.layout import layout_is_injective, layout_problems
from polycoal.validate.irregular import checked_text, irregular_problems
from polycoal.passes import placement, reorganisation
from polycoal.codegen.irregular import groups as irregular_groups


def plan_kernel(program: Program, kernel: Kernel, options: TransformOptions) -> KernelDecision:
    """The decision for one kernel: the first check that refuses keeps the kernel with
    its reason code; otherwise the best change the model allows. A change made under a
    condition on the launch's values is reported with it."""
    d = _signs(program, kernel, _plan(program, kernel, options), options)
    d = _unsigned_sides(program, kernel, d, options)
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
                       f"{decided_note(launches, takes)})")
    return replace(d, assumption=None, disjoint=())


def _takes_checked(d: KernelDecision, launch) -> bool | None:
    """Whether a launch runs a checked copy: its known values decide the race-freedom
    condition (True, False) or not (None); pointer ranges are known only at run time."""
    verdict = decided(d.assumption, known_values(launch)) if d.assumption else True
    return verdict if verdict is False or not d.disjoint else None


def _unsigned_sides(program: Program, kernel: Kernel, d: KernelDecision,
                    options: TransformOptions) -> KernelDecision:
    """A kernel no change was found for whose unsigned comparisons have sides over its
    arguments that may be negative (gaussian's `... >= Size - 1 - t`, which wraps where
    t >= Size and then bounds no thread): planned again under the condition that they
    are not, which each launch checks (the original runs where it fails); taken where
    that plan generates a new kernel."""
    if d.action in GENERATED or not options.runtime_checks or d.analysis is None or \
            d.analysis.model is None:
        return d
    sides = unsigned_sides(d.analysis.model)
    launches = program.launches_of(kernel.name)
    if sides is None or launches and all(
            decided(sides, known_values(l)) is False for l in launches):
        return d
    try:
        anew = _signs(program, kernel, _plan(program, kernel, options, sides=sides),
                      options, sides=sides)
    except Exception:        # noqa: BLE001 - the decision made without it stands
        return d
    return anew if anew.action in GENERATED else d


def _signs(program: Program, kernel: Kernel, d: KernelDecision,
           options: TransformOptions, sides: Assumption | None = None) -> KernelDecision:
    """A kernel generated anew under a model that takes its int arguments non-negative
    (KernelModel.signed: isl drops the bounds the signs imply, the lanes of `j > k`
    start at k + 1) is legal only where they are. Where the launches do not show that,
    the kernel is planned again with nothing assumed of the signs but what every launch
    shows (a literal, the counter of a host loop counting up from zero: counted_up):
    the same kind of change holds for every value then; otherwise the change runs only
    where each launch checks the signs (the original elsewhere)."""
    if d.action not in GENERATED or d.analysis.model.signed is not True:
        return d
    model = d.analysis.model
    launches = program.launches_of(kernel.name)
    unsigned = unsigned_arguments(kernel)
    ints = [p for p in model.parameters if not is_launch_parameter(p) and p not in unsigned]
    # per launch, the arguments it shows non-negative: a known value (as the parameter
    # receives it), the counter of a host loop counting up from zero
    shows = [{p for p, v in known_values(l).items() if v >= 0} | counted_up(l, kernel)
             for l in launches]
    shown = frozenset(p for p in ints if all(p in s for s in shows))
    unknown = [p for p in ints if p not in shown]
    if not unknown:
        return d
    try:       # the second plan takes non-negative what the launches show so, only
        anew = _plan(program, kernel, options, signed=shown, sides=sides)
    except Exception:        # noqa: BLE001 - the change made so stands, checked
        anew = None
    if anew is not None and anew.action == d.action:
        return anew
    if not options.runtime_checks:
        return d.keep("sign", f"the change ({d.reason}) holds only where the int arguments "
                      f"{', '.join(unknown)} are not negative, which the launches do not "
                      "show (and run-time checks are off)")
    signs = nonnegative(model, unknown)
    return replace(d, assumption=signs if d.assumption is None else both(d.assumption, signs))


def _plan(program: Program, kernel: Kernel, options: TransformOptions,
          signed: "bool | frozenset[str]" = True,
          sides: Assumption | None = None) -> KernelDecision:
    name = kernel.name
    measured = dict(options.keep).get(name)
    if measured is not None:
        return KernelDecision(name, "unchanged", measured, code="measured-slower")
    if kernel.ast is None:
        return KernelDecision(name, "unchanged", kernel.unsupported or "does not parse",
                              code="unparsed")
    reserved = reserved_argument(kernel)
    if reserved:
        return KernelDecision(name, "unchanged", reserved, code="reserved-name")
    d = KernelDecision(name, "unchanged", "", assumption=sides, analysis=analyze_kernel(
        kernel, program, assumed=(sides.constraint,) if sides else (), signed=signed))
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
        signs = [p for p in model.parameters if not is_launch_parameter(p) and
                 (model.signed is True or p in model.signed)] if model.signed else []
        return d.keep("no-instances", "no statement of the kernel ever runs (its guards and "
                      "loop bounds exclude every thread and iteration" +
                      (f" where {', '.join(signs)} {'is' if len(signs) == 1 else 'are'} not "
                       "negative, as the model takes them" if signs else "") + ")")
    if not model.is_affine or not options.polyhedral:
        first = model.outside[0] if model.outside else None
        why = (f"outside the affine model ({first.construct} at line {first.location.line})"
               if first else "polyhedral restructuring disabled (--no-polyhedral)")
        return plan_permutation(program, kernel, d, why, options)
    mapping = solve_mapping(model, d.analysis.dependences, d.analysis.global_references)
    d = replace(d, mapping=mapping)
    if not mapping.axes:
        return d.keep("no-parallel-dimension", "no dimension is free of dependences")
    # the passes' whole forms (passes/): staged tiles for references that coalesce along
    # two different dims, whatever the order; register and shared-memory tiles for sums
    # of products
    candidates = [c for c in (p.propose(program, kernel, d, options)
                              for p in PASSES) if c is not None]
    try:
        rest = plan_mapped(program, kernel, d, options)
    except Exception as error:        # noqa: BLE001 - the other candidates still stand
        if not candidates:
            raise
        rest = d.keep("internal-error", internal_error(kernel.name, kernel.location, error,
                                                       "planning a candidate")[1])
    return _chosen(program, kernel, d, candidates, rest, options)


def _forced(d: KernelDecision, options: TransformOptions, name: str) -> bool:
    """Whether the options ask for this form by name (--sizes for a tiled product,
    --reduction warp/block/tiles/split for a reduction form): taken whatever the model
    predicts, as a tuning experiment wants."""
    if d.action == "product":
        return forced_sizes(options, name) is not None
    return d.action in REASSOCIATING and options.reduction in ("warp", "block", "tiles", "split")


def _chosen(program: Program, kernel: Kernel, d: KernelDecision, candidates: list[Candidate],
            rest: KernelDecision, options: TransformOptions) -> KernelDecision:
    """The cheapest of the forms the passes proposed and the kernel as written, by the
    performance model (analysis/roofline.py): a form is taken only where predicted
    MARGIN times faster than the original. The choice rides on the decision
    (`predicted`), for the reports."""
    if rest.action != "unchanged":
        candidates = candidates + [Candidate(rest, form_geometry(rest, options))]
    p = price_forms(d, options, [(c.decision.action, c.geometry) for c in candidates],
                    form_code(program, kernel, [c.decision for c in candidates]))
    taken = choose(p.original, p.forms)
    forced = [k for k, c in enumerate(candidates) if _forced(c.decision, options, kernel.name)]
    if forced or (candidates and not options.model):   # the model only reports
        taken = forced[0] if forced else 0
    choice = Choice(p.original, tuple(p.forms),
                    "original" if taken is None else p.forms[taken][0], p.assumed, p.occupancy)
    if taken is not None:
        return replace(candidates[taken].decision, predicted=choice)
    if not candidates:
        return replace(rest, predicted=choice)
    why = choice.kept_because()
    if rest.action == "unchanged" and rest.reason:
        why += f"; {rest.reason}"
    return replace(d.keep("no-predicted-gain", why), predicted=choice)


def _without_races(program: Program, kernel: Kernel, d: KernelDecision,
                   options: TransformOptions) -> KernelDecision:
    """A racy kernel is kept (code "race"), unless its races are only copies of each
    thread along axes it never reads: then the decision goes on with the analysis of one
    copy (code left empty) where one copy's result is proven what the copies leave
    (collapse_proof), or where --collapse-redundant-threads asks for one copy."""
    raced = d.keep("race", "threads race in the original kernel" + _racing_when(d.analysis)
                   + " (polycoal analyze shows the races)")
    checked = _race_free_where_checked(program, kernel, d, options)
    if checked is not None:
        return checked
    redundant = redundant_axes(d.analysis)
    if not redundant:
        return raced
    collapsed = analyze_kernel(kernel, program, frozenset(redundant),
                               signed=d.analysis.model.signed)
    if collapsed.races:
        return raced
    axes = ", ".join(sorted(redundant))
    proof, why_not = copies_proof(collapsed.model)
    if options.collapse_redundant or (proof and options.collapse_proven):
        return replace(d, analysis=collapsed, collapsed=frozenset(redundant),
                       collapse_proof=proof if not options.collapse_redundant else "")
    return raced.keep("redundant-copies", raced.reason + (
        f"; they are copies along axis {axes}, which the kernel never reads: "
        f"{why_not or 'their collapse is switched off (--keep-redundant-threads)'}; "
        "--collapse-redundant-threads runs one copy"))


def _racing_when(analysis) -> str:
    """` when m >= 65`: the parameter values for which the races happen, when they
    happen only for some."""
    when = racing_values(analysis.races)
    return "" if when is None else " when " + condition_text(when)


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
    if assumption is None or not all(p in scalars or is_launch_parameter(p)
                                     for p in assumption.parameters):
        return None
    if d.assumption is not None:       # the unsigned comparisons' sides (_unsigned_sides)
        assumption = both(d.assumption, assumption)
    signed = d.analysis.model.signed
    assumed = analyze_kernel(kernel, program, assumed=(assumption.constraint,), signed=signed)
    for _ in range(3):      # races the first condition hides (another pair of references)
        more = race_free_assumption(assumed.model, assumed.races)
        if more is None:
            break
        assumption = both(assumption, more)
        assumed = analyze_kernel(kernel, program, assumed=(assumption.constraint,),
                                 signed=signed)
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


# Validators: every kind of change is checked by its own validator before it is
# emitted; each returns the problems it finds (none: accepted).

def _read_back(new_program: Program | None, d: KernelDecision):
    """The model of the decision's kernel as the output reads back, or why there is none."""
    if new_program is None:
        return "the generated program does not preprocess"
    new_kernel = new_program.kernel(d.emitted)
    if new_kernel is None or new_kernel.ast is None:
        return "the generated kernel does not parse"
    # the copy runs only where the launch's check holds
    return extract_model(new_kernel, new_program, signed=d.analysis.model.signed,
                         assumed=(d.assumption.constraint,) if d.assumption else ())


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
    return offsets_problems(plan.sizes.threads,
                            *placements(plan.sizes, vector_width(model, plan)),
                            plan.sizes.rows, plan.tile) + \
        skip_problems(model, plan.output_statement, plan.i, plan.j,
                      (plan.sizes.rows, plan.tile), tile_set(model, plan)) + \
        full_problems(model, plan.output_statement, plan.i, plan.j,
                      (plan.sizes.rows, plan.tile), full_set(model, plan))


def _staging(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A staged kernel: the plan, made again from the original's model, must be the one
    the generated kernel carries out (optimize/staging.py's conditions)."""
    plan = staging_plan(d.analysis.model, d.analysis)
    if isinstance(plan, Obstacle):
        return [plan.text]
    return [] if plan == d.generated.tiles else ["the generated tiles differ from the plan"]


def _window(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A register window: the plan, made again from the original's model (its
    conditions: optimize/window.py), must be the one the generated kernel carries out,
    every register replacing references to one element."""
    made = d.generated.tiles
    plan = window_plan(d.analysis.model, d.analysis, made.x, made.rows)
    if isinstance(plan, Obstacle):
        return [plan.text]
    return [] if plan == made else ["the generated window differs from the plan"]


def _sweep(program: Program, new_program: Program | None, d: KernelDecision) -> list[str]:
    """A staged sweep: the plan, made again from the original's model (its conditions:
    optimize/sweep.py), must be the one the generated kernel carries out, at the rows a
    warp runs it chose (any of a warp's lanes: each runs a row of its own)."""
    plan = sweep_plan(d.analysis.model, d.analysis)
    if isinstance(plan, Obstacle):
        return [plan.text]
    made = d.generated.tiles
    if made.warp_rows not in (1, 2, 4, 8, 16, 32):
        return [f"a warp runs {made.warp_rows} rows"]
    return [] if replace(plan, warp_rows=made.warp_rows) == made else \
        ["the generated sweep differs from the plan"]


def _vectorised(program: Program, new_program: Program | None, d: KernelDecision
                ) -> list[str]:
    """A vectorised sweep: the plan, made again from the original's model, must be the
    one the generated kernel carries out, and no trip of a row may read what an earlier
    trip wrote (optimize/sweep.vector_obstacle)."""
    plan = sweep_plan(d.analysis.model, d.analysis)
    if isinstance(plan, Obstacle):
        return [plan.text]
    obstacle = vector_obstacle(plan)
    if obstacle is not None:
        return [obstacle.text]
    return [] if plan == d.generated.tiles else ["the generated sweep differs from the plan"]


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
            new_program = read_again(program, d.reorganisation.preprocessor, text)
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
              "staged": (_staging,), "product": (_product,), "windowed": (_window,),
              "swept": (_sweep,), "vectorised": (_vectorised,)}


def _validate(program: Program, text: str, decisions: list[KernelDecision],
              options: TransformOptions, errors: list[Diagnostic]) -> list[KernelDecision]:
    """Every changed decision through the validators of its kind; a rejected kernel is
    kept (an error says why), a validator's own failure is confined to its kernel."""
    try:
        new_program = read_again(program, options.preprocessor, text)
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
    """(first line, last line, kernel) of each edit in the spliced text (splice: the
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
    return out, splice(program.text, [(span, new) for span, new, _ in edits])


def _edits(program: Program, decisions: list[KernelDecision], errors: list[Diagnostic]
           ) -> tuple[list[KernelDecision], list[tuple[Span, str, str | None]]]:
    """The decisions (a failure to render one confined to its kernel) and the edits of
    the program text they make, each with the kernel whose edit it is (None: the host
    side of the reorganisations and layouts, shared by their kernels)."""
    out, edits = [], []
    for d in decisions:
        try:
            edits += [(span, new, d.kernel) for span, new in replacements(program, [d])]
        except Exception as error:
            d = _fail(program, d, error, "rendering it and its launches", errors)
        out.append(d)
    shared = []
    try:
        shared += reorganisation.edits(program, out)
    except Exception as error:          # confined: every reorganised kernel stays
        out = [_fail(program, d, error, "rendering its reorganised references", errors)
               if d.action == "reorganised" else d for d in out]
    shared += layout_host_edits(program, out)
    return out, edits + [(span, new, None) for span, new in shared]


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
    result = None
    if lower.needs_lowering(program):
        lowerings = lower.plan(program, options.preprocessor)
        lowerings += [l for l in lower.macro_launches(program)
                      if not any(x.kernel == l.kernel for x in lowerings)]
        if lowerings:
            result = _transform_lowered(program, lowerings, options)
    if result is None:
        result = _transform(program, options)
    if (options.launch_waits or options.launch_trips) and options.kernel is None:
        try:
            result = host_loops(program, result, options)
        except Exception as error:      # confined: the host code stays as it is
            message = (str(error).splitlines() or [""])[0]
            result = replace(result, diagnostics=result.diagnostics + [Diagnostic(
                "error", "internal-error", "host loops: internal error in polycoal while "
                f"rewriting them ({type(error).__name__}: {message}); they are left as "
                "written", Location(program.path, 1))])
    return result


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
        p = read_again(program, options.preprocessor, lowered.text)
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
    plans = plan_program_layouts(program, decisions, options, errors)
    planned = decisions
    decisions = with_layouts(decisions, plans)
    decisions, text = _rendered(program, decisions, errors)
    if any(d.action == "layout" for d in decisions):
        # a layout is whole-program: one kernel it cannot be shown for keeps them all
        checked = _validate(program, text, [d for d in decisions if d.action == "layout"],
                            options, errors)
        for plan in plans:
            failed = [d for d in checked if d.layout is plan and d.action != "layout"]
            if plan.changes and failed:
                plan.reason = f"kernel '{failed[0].kernel}': {failed[0].reason}"
        priced = {d.kernel: d.predicted for d in
                  price_layouts(program, text, checked, plans, options) if d.predicted}
        decisions = [replace(d, predicted=priced[d.kernel]) if d.action == "layout" and
                     d.kernel in priced else d for d in with_layouts(planned, plans)]
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
    placed = None
    if options.placement != "none" and options.kernel is None and finish is None:
        placed, text = placement.place(program, text, options, errors,
                                       placement.candidates(decisions, options))
    diagnostics = list(errors) + layout_notes(program, plans)
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
                    "copies of each other; the transformed kernel runs one copy " + (
                        f"({d.collapse_proof}; --keep-redundant-threads keeps them)"
                        if d.collapse_proof else "(--collapse-redundant-threads)"),
                    kernel.location, d.kernel))
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
    return TransformResult(text, decisions, diagnostics, program, placement=placed)
