"""The performance model: one roofline for every candidate form of a kernel.

A form (the kernel as written, or a pass's restructured, tiled, staged or reduced copy)
is described by its `Work` over one launch, in warp terms; `predict` prices it on the
`Machine` of grammars/memory_sm90.toml ([roofline], [operations]) and says which
resource binds. The time of a launch is that of its busiest resource, each spread over
the multiprocessors its blocks occupy:

- issue: warp instructions, four a clock per multiprocessor; an operation costs the
  issue slots [operations] gives it (a powf is some 80 fused multiply-adds' worth: the
  special-function unit serves a quarter-warp a clock, and the library's range
  reduction is arithmetic), a memory request one slot; slower where the warps a
  multiprocessor holds, times the independent chains each interleaves, do not cover
  the latency of a dependent instruction (`issue_latency`) on its four schedulers;
- L1 / shared memory: one 128-byte wavefront a clock (a request whose lanes touch
  sectors of different lines needs one wavefront each);
- L2 and DRAM: bytes at the calibrated rates, the whole device's share where the grid
  covers it, a smaller one where a few blocks cannot draw it (four multiprocessors'
  worth per block at most);
- latency: a warp's dependent path, once per wave of the warps a multiprocessor holds
  together (its occupancy): a loop accumulating into global memory through a pointer
  that is not `__restrict__` waits each trip for its own store and for its loads (the
  memory latency where a read reaches a new sector every trip); any other loop waits a
  quarter of its loads' latency a trip (the compiler unrolls by four);
plus each launch's overhead. Kernels are compute bound where issue binds: a tiled or
restructured copy moves fewer bytes but issues the same arithmetic, and is no faster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import lru_cache

from polycoal.model.memory_spec import MemorySpec, load_spec


@dataclass(frozen=True)
class Machine:
    multiprocessors: int = 132
    clock_ghz: float = 1.66
    issue_per_clock: float = 4.0
    dram_bytes_per_clock: float = 19.0
    l2_bytes_per_clock: float = 60.0
    l1_wavefronts_per_clock: float = 1.0
    shared_wavefronts_per_clock: float = 1.0
    launch_us: float = 10.0
    max_warps: int = 64
    max_blocks: int = 32
    registers: int = 65536
    register_unit: int = 256         # a warp's registers are allocated in these units
    shared_bytes: int = 233472
    shared_reserved: int = 1024      # shared memory the runtime keeps each block
    l2_bytes: int = 50 << 20
    memory_latency: float = 500.0
    l2_latency: float = 300.0
    store_wait: float = 250.0
    alu_latency: float = 4.0
    issue_latency: float = 6.0
    operations: tuple[tuple[str, float], ...] = ()

    def operation(self, name: str) -> float:
        """Issue slots of one operation (1 where [operations] does not list it)."""
        return dict(self.operations).get(name, 1.0)


def machine_of(spec: MemorySpec) -> Machine:
    """The machine a memory specification describes (its [roofline] and [operations]
    tables; keys it leaves out keep the shipped values)."""
    shipped = load_spec() if spec.roofline == () or spec.operations == () else spec
    table = {**dict(shipped.roofline), **dict(spec.roofline)}
    known = {f.name: f.type for f in fields(Machine)}
    values = {k: (int(v) if known[k] == "int" else float(v))
              for k, v in table.items() if k in known and k != "operations"}
    return replace(Machine(multiprocessors=spec.multiprocessors, **values),
                   operations=tuple(sorted({**dict(shipped.operations),
                                            **dict(spec.operations)}.items())))


@lru_cache(maxsize=1)
def shipped_machine() -> Machine:
    return machine_of(load_spec())


@dataclass(frozen=True)
class Work:
    """What one form of a kernel does in one launch, over the whole grid."""

    issue: float = 0.0               # warp issue slots (arithmetic, requests, loop control)
    l1_wavefronts: float = 0.0       # global requests' wavefronts through the L1
    shared_wavefronts: float = 0.0
    l2_bytes: float = 0.0            # bytes the L1 does not serve
    dram_bytes: float = 0.0          # bytes to and from memory
    chain: float = 0.0               # clocks of one warp's dependent path
    warps: float = 1.0               # warps launched
    block_warps: float = 8.0         # warps a block
    resident: float = 64.0           # warps a multiprocessor holds together
    launches: int = 1
    ilp: float = 1.0                 # independent chains of arithmetic a warp interleaves
    heaviest: str = ""               # the operation with the most issue slots
    heaviest_share: float = 0.0      # its share of `issue`
    # every thread makes one round trip to memory (no loop), its data past the L2: a
    # wave's transfer follows its requests' latency instead of overlapping the next trip's
    round_trip: bool = False
    assumed: tuple[str, ...] = ()    # sizes taken without the launch's values


@dataclass(frozen=True)
class Prediction:
    time_us: float
    bound: str                       # what binds: "powf-bound", "memory-bound", ...
    pipes: tuple[tuple[str, float], ...]   # microseconds each resource needs

    def describe(self) -> str:
        return f"{self.time_us:.4g} us, {self.bound}"


# the resources, and how a kernel bound by each is called
_BOUND_NAMES = {"issue": "compute-bound", "l1": "L1-bound", "shared": "shared-memory-bound",
                "l2": "L2-bound", "dram": "memory-bound", "latency": "latency-bound"}


def predict(work: Work, m: Machine | None = None) -> Prediction:
    """The time of one launch of `work` on `m` (the shipped sm_90 machine by default)."""
    m = m or shipped_machine()
    blocks = max(1.0, math.ceil(work.warps / max(work.block_warps, 1.0)))
    sms = min(float(m.multiprocessors), blocks)
    drawing = min(float(m.multiprocessors), 4.0 * blocks)
    per_sm = work.warps / sms
    resident = max(1.0, min(work.resident, per_sm))
    waves = math.ceil(per_sm / resident - 1e-9)
    # a scheduler issues every clock only where its warps' independent instructions
    # cover the latency of a dependent one
    ready = min(1.0, resident * work.ilp / (m.issue_per_clock * m.issue_latency))
    clocks = {
        "issue": work.issue / m.issue_per_clock / sms / ready,
        "l1": work.l1_wavefronts / m.l1_wavefronts_per_clock / sms,
        "shared": work.shared_wavefronts / m.shared_wavefronts_per_clock / sms,
        "l2": work.l2_bytes / (m.l2_bytes_per_clock * drawing),
        "dram": work.dram_bytes / (m.dram_bytes_per_clock * drawing),
        "latency": waves * work.chain,
    }
    if work.round_trip:
        # a wave of threads that each load once and store: its loads' latency, then
        # their transfer (measured on the H200: a copy of one float a thread, or a
        # stencil of one output a thread, takes about the two added, not the larger)
        clocks["latency"] += clocks["dram"]
    per_us = m.clock_ghz * 1e3
    busiest = max(clocks, key=clocks.get)
    bound = _BOUND_NAMES[busiest]
    if busiest == "issue" and work.heaviest and work.heaviest_share >= 0.5:
        bound = f"{work.heaviest}-bound"
    time = clocks[busiest] / per_us + work.launches * m.launch_us
    return Prediction(time, bound, tuple((k, v / per_us) for k, v in clocks.items()))


# A candidate is taken only where it is predicted this much faster than the kernel as
# written (and a later candidate of the passes' order only where this much faster than
# the one before it): the model's error on one kernel is of this order, and a change
# that gains less is not worth its risk.
MARGIN = 1.1

FORM_NAMES = {"staged": "the staged kernel", "product": "the tiled product",
              "windowed": "the register window", "swept": "the staged sweep",
              "vectorised": "the vectorised sweep",
              "restructured": "the restructured kernel", "reduced": "the warp-per-row form",
              "columns": "the column-block form", "split": "the split reduction",
              "tiled": "the tiled reduction", "permuted": "the permuted kernel",
              "original": "the kernel as written"}


@dataclass(frozen=True)
class Choice:
    """The forms of one kernel priced by the model, and the one taken."""

    original: Prediction
    candidates: tuple[tuple[str, Prediction], ...]     # (form, prediction), in order
    chosen: str                                          # "original" or a form
    assumed: tuple[str, ...] = ()                        # sizes taken as DEFAULT_EXTENT
    # (form, warps a multiprocessor holds, occupancy.Resources) of the forms whose
    # occupancy ptxas decided (passes/base.price_forms); the others' is estimated
    occupancy: tuple = ()

    def as_json(self) -> dict:
        occupancy = {"occupancy": [{"form": f, "warps": w, **r.as_json()}
                                   for f, w, r in self.occupancy]} if self.occupancy else {}
        return {**occupancy, "unit": "us", "original": round(self.original.time_us, 3),
                "chosen": self.chosen,
                "candidates": [{"form": "original", "time": round(self.original.time_us, 3),
                                "bound": self.original.bound}] +
                [{"form": f, "time": round(p.time_us, 3), "bound": p.bound}
                 for f, p in self.candidates],
                "assumed_sizes": list(self.assumed)}

    def kept_because(self) -> str:
        """Why no candidate was taken, in words: the best of them against the original."""
        form, best = min(self.candidates, key=lambda c: c[1].time_us)
        how = slower_in_words(best.time_us / self.original.time_us)
        read = next((f"; ptxas: {r.registers} registers a thread, {r.shared} bytes of "
                     f"shared memory a block, {w} warps a multiprocessor"
                     for f, w, r in self.occupancy if f == form), "")
        return (f"kept: {FORM_NAMES.get(form, form)} is predicted {how} "
                f"({self.original.bound}; {self.original.time_us:.4g} us as written, "
                f"{best.time_us:.4g} us {FORM_NAMES.get(form, form).split(' ', 1)[1]}"
                f"{read})")


def slower_in_words(ratio: float) -> str:
    """A form's time over the original's, as a kept form's reason says it: "1.45x
    slower", "only 1.04x faster", "no faster"."""
    return f"{ratio:.3g}x slower" if ratio >= 1.005 else \
        f"only {1 / ratio:.3g}x faster" if ratio < 0.995 else "no faster"


def occupancy_decides(original: Work, forms: list[Work], m: Machine | None = None) -> bool:
    """Whether the warps a multiprocessor holds of each form (its occupancy), anywhere
    between one block and the most its warp and block slots allow, could change which
    form `choose` takes: some comparison `choose` makes (a form MARGIN times faster
    than the original, or than a form before it) holds at one end of the forms'
    occupancies and fails at the other. A form's time only grows as its occupancy
    falls, so the ends decide. Only then is the compiler asked (passes/base.py)."""
    m = m or shipped_machine()

    def span(w: Work) -> tuple[float, float]:
        full = min(float(m.max_warps), m.max_blocks * w.block_warps)
        return (predict(replace(w, resident=full), m).time_us,
                predict(replace(w, resident=w.block_warps), m).time_us)

    spans = [span(w) for w in [original, *forms]]
    for k, (fast, slow) in enumerate(spans[1:], start=1):
        for bar_fast, bar_slow in spans[:k]:
            if (slow * MARGIN <= bar_fast) != (fast * MARGIN <= bar_slow):
                return True
    return False


def choose(original: Prediction, candidates: list[tuple[str, Prediction]]) -> int | None:
    """The index of the candidate taken, or None (the kernel as written): the first, in
    the passes' order of preference, predicted MARGIN times faster than the original,
    replaced by a later one only where that is MARGIN times faster again."""
    taken = None
    for k, (_, p) in enumerate(candidates):
        bar = original.time_us if taken is None else candidates[taken][1].time_us
        if p.time_us * MARGIN <= bar:
            taken = k
    return taken
