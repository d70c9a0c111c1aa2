"""What `transform` decided for each kernel, as plain immutable values.

A decision is one of a few kinds (`action`): the kernel is restructured, reduced (one
warp per row), split / columns / tiled (column reductions), permuted, or kept
("unchanged"), with a reason code (`code`, stable, for programs: the build plugin, the
JSON report, tests) and a reason (prose, for people). The driver (polycoal.transform)
chooses them by named checks that return reason codes, and every kind of change has a
validator that must accept it before it is emitted (validator_of). This module sits
below the driver and the executors (validate/, dynamic/): they read decisions, none of
them imports the driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from polycoal.diagnostics import Diagnostic
from polycoal.frontend.preprocess import PreprocessorOptions

if TYPE_CHECKING:                      # types only: no import of the layers above
    from polycoal.analysis import KernelAnalysis
    from polycoal.codegen.kernel import GeneratedKernel
    from polycoal.dynamic.empirical import Choice
    from polycoal.frontend.program import Program
    from polycoal.optimize.assumptions import Assumption
    from polycoal.optimize.permutation import Permutation
    from polycoal.optimize.restructure import Mapping


@dataclass(frozen=True)
class TransformOptions:
    kernel: str | None = None
    block: tuple[int, int, int] | None = None
    polyhedral: bool = True
    assume_no_alias: bool = False
    collapse_redundant: bool = False  # run one copy of threads racing along unread axes
    # ... by default where one copy's result is proven theirs (transform.copies_proof:
    # each copy reads of the kernel's output only what it wrote; off: --keep-redundant-threads)
    collapse_proven: bool = True
    reduction: str = "auto"   # auto (warp rows, split columns) | warp | block | tiles | split
    #                                  | none: how reduction loops are restructured
    promote: bool = True             # register promotion of accumulators in new kernels
    empirical: bool = False          # choose permutations by tracing (dynamic/empirical.py)
    empirical_fallback: bool = False  # ... only where the static model cannot tell the axes
    #                                   apart (opt-in: tracing compiles and runs user code)
    arguments: tuple[tuple[str, int], ...] = ()   # int kernel arguments for those traces
    # shapes of the column forms for tuning experiments (None: polycoal's choice): the
    # split's (rows, groups[, columns]) and the block form's rows of threads; the command
    # line reads them from POLYCOAL_SPLIT and POLYCOAL_COLUMN_GROUPS (options.transform_options)
    split: tuple[int, ...] | None = None
    column_groups: int | None = None
    preprocessor: PreprocessorOptions = PreprocessorOptions()
    runtime_checks: bool = True     # transform under conditions checked at each launch
    staging: bool = True            # shared-memory tiles for two-direction kernels
    window: bool = True             # stencils: rows a thread, the window in registers
    window_always: bool = False     # ... proposed at unknown sizes, rows sharing nothing too
    sweep: bool = True              # a thread's dependent loop along its row on tiles
    sweep_rows: int | None = None   # ... rows a warp runs (None: by the rows' count)
    # host loops of launches: the waits for the device between them dropped, one after
    # the loop (optimize/launch_waits.py)
    launch_waits: bool = True
    # host loops of one launch: one launch, each thread running the trips, where no two
    # threads touch one element in different trips (optimize/launch_trips.py)
    launch_trips: bool = True
    # the performance model chooses among the passes' forms and the kernel as written
    # (analysis/roofline.py); off: the first form proposed is taken (the model reports)
    model: bool = True
    # sizes the model prices the forms at, beside the launch's known values (int kernel
    # arguments by name): polycoal bench's run sizes; transform and validate price at
    # the launch's values alone (unknown sizes: analysis/work.DEFAULT_EXTENT), so that
    # the values a validation runs at never change the decision it validates
    price_at: tuple[tuple[str, int], ...] = ()
    # kernels kept as written whatever the passes propose, with why: those
    # `transform --measure` found no faster on the device (kernel, reason)
    keep: tuple[tuple[str, str], ...] = ()
    # transform -p --measure: each unit measured on the device as `transform --measure`
    # measures one file, this many timed launches a kernel (0: not measured)
    measure: int = 0
    # the shapes of tiled products (--sizes): (kernel or "" for every kernel, tile,
    # threads, chunk, blocks), the last that names a kernel wins; none: chosen by the sizes
    sizes: tuple[tuple[str, int, int, int, int], ...] = ()
    # price a permutation on the whole block (shared memory, divergence) before making
    # it; off only to measure what the price prevents (tools/bench_never_slower.py)
    price_on_chip: bool = True
    # data layout of arrays of structs: auto (by the cost model), soa, grouped, none
    layout: str = "auto"
    # irregular references (gathers, segment loops) read from reorganised copies:
    # auto (where launches reuse them and the run-time selector agrees), none
    reorganise: str = "auto"
    # the compiler that must accept the output where it accepts the input (validate/
    # compiles.py): clang (libclang; none where it is not installed), nvcc, none
    compile_check: str = "clang"
    # the placement pass (passes/placement.py): "auto" places arrays where the planner
    # and the performance model both predict a gain, "none" leaves every array in place
    placement: str = "auto"
    # where the model reads the warps a multiprocessor holds of each form: "ptxas" (the
    # registers and shared memory nvcc's ptxas allocates the kernel as written and each
    # form, where nvcc is present and the occupancy could change the choice; else
    # estimated) or "estimate" (never compiled: --no-ptxas)
    occupancy: str = "ptxas"


# Actions whose kernels add floating-point values in another order than the original's.
REASSOCIATING = frozenset({"reduced", "columns", "split", "tiled"})
GENERATED = REASSOCIATING | {"restructured", "staged", "product", "windowed", "swept",
                             "vectorised"}   # d.generated
# Actions whose kernels synchronise the threads of a block (__syncthreads between phases)
SYNCHRONISING = REASSOCIATING | {"staged", "product", "swept", "vectorised"}
# "layout": the kernel's arrays of structs are in a new layout (optimize/layout.py), a
# whole-program change: its launches and the host calls on the arrays change with it
# "reorganised": its irregular references read copies built before each launch (or
# reused), the launches and the host's writes to the copies' sources change with it
CHANGED = GENERATED | {"permuted", "layout", "reorganised"}   # the output differs

# Reason codes of kept kernels whose code is as good as polycoal can make it: nothing
# would be better (not: polycoal could not).
FINE_AS_IS = frozenset({"already-coalesced", "best-axis-order", "small-gain",
                        "no-predicted-gain"})


@dataclass(frozen=True)
class KernelDecision:
    kernel: str
    action: str                      # "unchanged" or one of CHANGED
    reason: str                      # prose
    code: str = ""                   # reason code: the action, or why the kernel is kept
    mapping: "Mapping | None" = None
    permutation: "Permutation | None" = None
    alias_evidence: str = ""
    collapsed: frozenset = frozenset()   # axes whose redundant copies were collapsed
    collapse_proof: str = ""             # why one copy leaves what they leave (by default)
    generated: "GeneratedKernel | None" = None
    analysis: "KernelAnalysis | None" = None
    empirical: "Choice | None" = None  # the traced candidates, when the search ran
    # a condition on the launch's values under which the change is legal: the changed
    # kernel is a copy, run by each launch where the condition holds (optimize/assumptions)
    assumption: "Assumption | None" = None
    # pointer arguments each launch checks do not overlap (optimize/assumptions.Disjoint),
    # where the program shows no evidence that they are distinct arrays
    disjoint: tuple = ()
    layout: object = None              # optimize/layout.LayoutDecision of a "layout" kernel
    layout_text: str = ""              # the kernel's text in the new layout
    # optimize/reorganise.Reorganisation: a "reorganised" kernel's plan, or a kept
    # kernel's irregular references and why they stay
    reorganisation: object = None
    # codegen/permute.IndirectUses: the macro expansions and helper copies a permuted
    # kernel that reads thread indices through them needs (None: it reads none so)
    indirect: object = None
    # analysis/roofline.Choice: the forms the passes proposed and the kernel as written,
    # priced by the performance model, and the one taken (None: not priced)
    predicted: object = None

    @property
    def checked(self) -> bool:
        """Whether the change holds only under conditions each launch checks."""
        return self.assumption is not None or bool(self.disjoint)

    @property
    def reassociates(self) -> bool:
        """Whether the output adds floating-point values in another order than the
        original: the reduction forms, and tiled products that add a value's terms to
        the accumulator one at a time."""
        return self.action in REASSOCIATING or \
            bool(getattr(getattr(self.generated, "tiles", None), "split", False))

    def runtime_checks(self) -> list[str]:
        """What each launch checks, in words."""
        return ([f"{self.assumption.constraint} ({self.assumption.purpose})"]
                if self.assumption else []) \
            + [f"{x.describe()} (pointer arguments)" for x in self.disjoint]

    @property
    def emitted(self) -> str:
        """The name the changed kernel has in the output: its own, or, for a permutation
        chosen where the launch's geometry is known only at run time, its permuted
        copy's (the original stays, for launches the permuted geometry does not fit)."""
        if self.action == "permuted" and self.permutation and self.permutation.guarded:
            return f"{self.kernel}__pc_permuted"
        if self.action in GENERATED and self.checked:
            return f"{self.kernel}__pc_checked"
        return self.kernel

    def keep(self, code: str, reason: str) -> "KernelDecision":
        """The kernel left as it is, for `reason` (code `code`)."""
        return replace(self, action="unchanged", code=code, reason=reason, generated=None)

    def change(self, action: str, reason: str, **values) -> "KernelDecision":
        return replace(self, action=action, code=action, reason=reason, **values)


@dataclass(frozen=True)
class TransformResult:
    text: str
    decisions: list[KernelDecision]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # the program the changed decisions refer to: the input, or its lowering (a template's
    # instantiation or a header's kernel copied into the text, frontend/lower.py)
    program: "Program | None" = None
    # kernels of the input read through Clang: the C-subset front end's diagnostics about
    # them no longer apply
    superseded: frozenset = frozenset()
    # the placement pass's result (placement.ProgramPlacement) where it ran
    placement: object = None


def internal_error(kernel: str, location, error: Exception, stage: str
                   ) -> tuple[Diagnostic, str]:
    """A failure inside polycoal while working on one kernel: the error reported at its
    definition (file:line, naming the exception), and the reason the kernel is kept."""
    message = (str(error).splitlines() or [""])[0]
    what = type(error).__name__ + (f": {message}" if message else "")
    return (Diagnostic("error", "internal-error", f"kernel '{kernel}': internal error in "
                       f"polycoal while {stage} ({what}); the kernel is left unchanged",
                       location, kernel),
            f"internal error while {stage} ({what})")

