"""The empirical search: choose a kernel's thread geometry by tracing its candidates.

For a kernel outside the affine model the permutation ILP (optimize/permutation.py)
prices only the references whose strides the static model knows; an indirect subscript
(`A[P[i] * n + j]`) counts the same along every axis. The search settles it by
execution instead:

- candidates: the identity (the kernel as it is), and each other original thread axis
  that can be x (not one thread wide in every block) as the new x, the remaining axes
  kept in place as far as the hardware limits of the launches allow;
- each candidate's program is the text the "permuted" action would emit (the caller
  renders it), read back by the front end and traced on the CPU as `polycoal trace`
  does (its first launch site, random inputs, whole blocks within a record budget);
- the score is the 32-byte sectors the warps' requests touch beyond the fewest their
  distinct elements need (Algorithm 1's sectors against the ideal, summed over all
  requests of all references): a request that is uncoalesced costs the more, the more
  memory it wastes, which a count of uncoalesced requests would not tell (a request
  split over two rows is uncoalesced, as is one spread over 32);
- the best candidate is the one with the lowest score; ties, and candidates no better
  than the identity, keep the identity (the kernel is left unchanged).

Every candidate traces the same number of blocks and threads (the sampling depends
only on the grid's and the block's sizes and the number of references, which a
permutation keeps), so their scores compare like with like; with sizes small enough
for the whole launch to be traced (-D), they describe the whole kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from polycoal.optimize.permutation import AXES, can_be_x, fits, is_identity, moved_axes

MAX_RECORDS = 1_000_000          # trace records per candidate (half of `trace`'s default)


@dataclass(frozen=True)
class Figures:
    """What the trace of one candidate measured."""

    source: dict[str, str]           # new axis -> original axis
    requests: int = 0                # warp-level requests traced
    uncoalesced: int = 0             # of them, those of references measured uncoalesced
    excess: int = 0                  # sectors beyond the ideal, over all requests
    traced: str = ""                 # "traced B of N blocks"
    error: str | None = None         # why the candidate could not be traced

    @property
    def is_identity(self) -> bool:
        return is_identity(self.source)

    def label(self) -> str:
        return moved_axes(self.source) or "identity"

    def describe(self) -> str:
        if self.error:
            return f"{self.label()}: not traced ({self.error})"
        return (f"{self.label()}: {self.uncoalesced} of {self.requests} requests "
                f"uncoalesced, {self.excess} sectors beyond ideal")


@dataclass(frozen=True)
class Choice:
    candidates: list[Figures]        # identity first
    best: Figures                    # the identity when no candidate is better

    def describe(self) -> str:
        return "; ".join(f.describe() for f in self.candidates)


def candidate_sources(blocks: list[tuple[int, int, int]],
                      grids: list[tuple[int, int, int]]) -> list[dict[str, str]]:
    """The identity (the kernel as it is), then one permutation (new axis -> original
    axis) per other original axis that can be x: among those within the hardware
    limits, the one that moves the fewest axes."""
    identity = dict(zip(AXES, AXES))
    out = [identity]
    for o in AXES[1:]:
        if not can_be_x(o, blocks):
            continue
        legal = [dict(zip(AXES, p)) for p in permutations(AXES) if p[0] == o and
                 all(fits(n, q, blocks, grids) for n, q in zip(AXES, p))]
        if legal:
            out.append(max(legal, key=lambda s: sum(n == q for n, q in s.items())))
    return out


def measure(source: dict[str, str], trace) -> Figures:
    """The figures of a candidate from its KernelTrace (collect.py)."""
    from polycoal.dynamic.algorithm1 import algorithm1   # (imports the executors)
    if trace.error:
        return Figures(source, error=trace.error)
    stats = algorithm1(trace.sites, trace.records)
    s = trace.sampling
    return Figures(
        source, requests=sum(x.requests for x in stats),
        uncoalesced=sum(x.requests for x in stats if not x.coalesced),
        excess=sum(round(x.requests * (x.sectors_avg - x.ideal_avg)) for x in stats),
        traced=f"traced {s.blocks} of {s.blocks_total} blocks")


def choose(candidates: list[Figures]) -> Choice:
    """The candidate with the fewest sectors beyond ideal; the identity on ties, or when
    any candidate could not be traced (the comparison would be incomplete)."""
    identity = candidates[0]
    if any(f.error for f in candidates):
        return Choice(candidates, identity)
    return Choice(candidates, min(candidates, key=lambda f: (f.excess, not f.is_identity)))


def search(path: str, preprocessor, kernel_name: str, sources: list[dict[str, str]],
           render, arguments: dict[str, int], seed: int = 1,
           max_records: int = MAX_RECORDS) -> Choice:
    """Trace every candidate and choose; `render(source)` is the text of the program at
    `path` with the kernel and its launches permuted as the transformation emits them,
    read with the same preprocessor options."""
    from polycoal.analysis import analyze_kernel
    from polycoal.diagnostics import InputError
    from polycoal.dynamic.collect import trace_kernel
    from polycoal.frontend import read_program
    figures = []
    for source in sources:
        try:
            candidate = read_program(path, preprocessor, text=render(source))
        except InputError as e:
            figures.append(Figures(source, error=f"the permuted text does not read: {e}"))
            continue
        kernel = candidate.kernel(kernel_name)
        if kernel is None or kernel.ast is None:
            figures.append(Figures(source, error="the permuted kernel does not parse"))
            continue
        ka = analyze_kernel(kernel, candidate)
        figures.append(measure(source, trace_kernel(ka, candidate, arguments, "cpu",
                                                    max_records, seed)))
    return choose(figures)
