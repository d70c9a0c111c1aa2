"""The permutation pass, for kernels outside the affine model (barriers, data-dependent
conditions, indirect subscripts): the thread axes permuted so that lanes run along
the dim the global references coalesce on, the kernel's text otherwise as written
(codegen/permute.py). The order comes from the permutation ILP (optimize/permutation.py)
or from tracing the addresses (dynamic/empirical.py); it is taken where the whole
block's cost falls by MIN_GAIN and the roofline predicts MARGIN at the launch's sizes."""

from __future__ import annotations

from dataclasses import replace

from polycoal.analysis import KernelAnalysis
from polycoal.analysis.dependences import detect_races
from polycoal.analysis.roofline import Choice, choose
from polycoal.analysis.warp_cost import MIN_GAIN, block_costs
from polycoal.analysis.work import Geometry
from polycoal.codegen.edits import replacements, splice
from polycoal.codegen.permute import (Refusal, indirect_uses, reads_indirectly,
                                      warp_functions_called)
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.dynamic.empirical import candidate_sources, search
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import tokenize
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.permutation import (Permutation, is_identity, launch_takes, needs_guard,
                                           solve_permutation)
from polycoal.passes.base import decided_note, price_forms


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


def plan_permutation(program: Program, kernel: Kernel, d: KernelDecision, why: str,
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
    p = price_forms(d, options, [("permuted", Geometry(x=dim))])
    taken = choose(p.original, p.forms)
    return Choice(p.original, tuple(p.forms), "original" if taken is None else "permuted",
                  p.assumed)


def _guard_note(launches, takes: list[bool | None]) -> str:
    """What the launches of a permuted kernel check, for its reason: nothing where each
    one's known geometry fits the permuted axes; otherwise which launches check at run
    time, which fit without a check and which never take the permuted copy."""
    if all(t is True for t in takes):
        return ""
    if all(t is None for t in takes):
        return ("; the launch checks at run time that its geometry fits the permuted axes "
                "and runs the original kernel where it does not")
    return decided_note(launches, takes, (
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
        return splice(program.text, replacements(program, [trial]))
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
