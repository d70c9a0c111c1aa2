"""Where each array a kernel reads should live (PORPLE's placement search): the legal
memories of each array, priced by analysis/placement_cost.py, and the search for the
cheapest assignment within the memories' capacities.

Legality: the kernel's threads must not race (their writes' order would depend on how
the rewritten code is scheduled: PolyBench/GPU's kernels launched with idle copies of
each thread along y are such); an array goes anywhere but global memory only where the
kernel provably only reads it (no write, no address taken, analysis/irregular.read_only_parameters) and no
argument the kernel writes may alias it (analysis/aliasing.distinct_arrays): the
read-only path and constant memory are not kept coherent with the kernel's own stores.
A memory that needs a static size (constant memory: a `__constant__` array is sized when
compiling) takes only an array whose elements read are known at the launch's values;
shared-memory staging takes a one-dimensional kernel's array read at A[i + o], o within
constant bounds (stencils): each block's reads fit in a tile of blockDim.x + the spread
elements; or a two-dimensional kernel's array read at A[(i + di) W + j + dj] (W a
constant, j + dj proven a column): a tile of blockDim.y + the rows' spread by
blockDim.x + the columns' (codegen/placement.py).

Search: the costs of the arrays add up, so the only coupling is capacity. The paper's
greedy takes, first, the arrays most of whose requests broadcast one address (constant
memory's strength), by gain per byte, while they fit; then each other array its cheapest
memory with room left. Branch and bound (used up to BRANCH_AND_BOUND_ARRAYS arrays)
finds the optimum: arrays in order of their regret (second-cheapest cost minus the
cheapest), each branch bounded by its cost so far plus every later array's cheapest.
A placement other than all-global is applied only where it is predicted MIN_GAIN
cheaper over the kernel's reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from polycoal.analysis.placement_cost import ArrayReads, placement_cost, request_cost, tile_shape
from polycoal.model.memory_spec import Memory, MemorySpec

BRANCH_AND_BOUND_ARRAYS = 12
MAX_HALO = 256                  # staging: elements a thread's reads may spread over
MIN_GAIN = 1.03
BROADCAST_SHARE = 0.5           # greedy: constant memory first for these arrays
LDG_TYPES = ("char", "signed char", "unsigned char", "short", "unsigned short", "int",
             "unsigned", "unsigned int", "long", "unsigned long", "long long",
             "unsigned long long", "float", "double", "char2", "char4", "short2", "short4",
             "int2", "int4", "uint2", "uint4", "float2", "float4", "double2")


@dataclass(frozen=True)
class Option:
    memory: str
    cost: float | None               # None: not legal
    why_not: str | None = None


@dataclass
class ArrayChoice:
    reads: ArrayReads
    options: list[Option]
    chosen: str = "global"
    forced: bool = False
    fill_share: float = 1.0          # launches that fill its copy, of all its launches
    tile_bytes: int = 0              # a block's tile, where it can be staged

    def cost(self, memory: str) -> float | None:
        return next((o.cost for o in self.options if o.memory == memory), None)


@dataclass
class KernelPlacement:
    kernel: str
    arrays: list[ArrayChoice] = field(default_factory=list)
    # statements whose trips wait for their stores while any array they read is in an
    # `ordered` memory (analysis/placement_cost.store_waits), and those memories
    waits: list = field(default_factory=list)
    ordered: frozenset = frozenset({"global"})
    method: str = ""                 # "branch-and-bound" | "greedy"
    applied: bool = False
    reason: str | None = None        # why nothing changes
    # chosen for large sizes the launch gives at run time: each launch takes it where its
    # predicted gain outweighs the fills (gain_terms), else runs the kernel as written
    sized: bool = False
    traced: str | None = None        # how its references' addresses were traced, or why not
    # where applied: the kernel as rewritten (preprocessed), the declarations of its
    # __constant__ arrays, and each constant array's elements copied (first, last)
    written: str | None = None
    placed_name: str | None = None   # its name in the program (beside the original: _pc_placed)
    assumed: str | None = None       # what each launch checks before taking it (staging)
    declarations: str = ""
    constants: dict = field(default_factory=dict)
    # the performance model's times (us) as written and placed, where it judged it
    predicted: tuple | None = None

    def total(self, choice: dict[str, str] | None = None) -> float:
        choice = choice or {a.reads.array: a.chosen for a in self.arrays}
        return sum(a.cost(choice[a.reads.array]) or 0.0 for a in self.arrays) + \
            sum(w.cost for w in self.waiting(choice))

    def waiting(self, choice: dict[str, str]) -> list:
        """The waits that remain under `choice`."""
        return [w for w in self.waits
                if any(choice.get(a, "global") in self.ordered for a in w.arrays)]

    @property
    def baseline(self) -> float:
        return self.total({a.reads.array: "global" for a in self.arrays})


def _why_not(reads: ArrayReads, memory: Memory, read_only: bool, alias: str | None,
             pointer_type: str | None, block: tuple[int, int] | None = None) -> str | None:
    if memory.name == "global":
        return None
    if "staging" in memory.needs:
        if reads.halo is None:
            return ("its reads are not all A[i + o] (i the thread's index of a "
                    "one-dimensional kernel, o within constant bounds) or "
                    "A[(i + di) W + j + dj] (threads (j, i), W a constant, j + dj a column)")
        if not block or (reads.rows is None and block[1] != 1):
            return ("the launches' blocks are not of one size known when compiling"
                    + (", one-dimensional" if reads.rows is None else ""))
        rows, columns = tile_shape(reads, block)
        tile = rows * columns * reads.element_size
        if memory.capacity and tile > memory.capacity:
            return f"a block's {tile} bytes exceed its {memory.capacity} bytes"
        if reads.halo[1] - reads.halo[0] > MAX_HALO or rows - block[1] > MAX_HALO:
            return f"its reads spread over more than {MAX_HALO} elements around a thread's"
    if "read-only" in memory.needs:
        if reads.written or not read_only:
            return "the kernel writes it (or takes its address)"
        if alias:
            return f"it may alias an array the kernel writes ({alias})"
    if pointer_type is None:
        return "it is not a pointer parameter of the kernel"
    if memory.spelling == "ldg" and pointer_type not in LDG_TYPES:
        return f"__ldg does not read '{pointer_type}'"
    if "static-size" in memory.needs and "staging" not in memory.needs:
        if reads.footprint is None or reads.first is None or reads.first < 0:
            return "the elements it reads are not known when compiling"
        if memory.capacity and (reads.last + 1) * reads.element_size > memory.capacity:
            return f"{(reads.last + 1) * reads.element_size} bytes exceed its " \
                   f"{memory.capacity} bytes"
    if memory.spelling == "constant" and any(not r.affine for r in reads.references) and \
            reads.first is None:
        return "the elements it reads are not known when compiling"
    return None


def options(reads: ArrayReads, spec: MemorySpec, read_only: bool, alias: str | None,
            pointer_type: str | None, fill_share: float = 1.0,
            values: dict[str, int] | None = None, obstacle: str | None = None,
            block: tuple[int, int] | None = None) -> list[Option]:
    """Each memory's predicted cost for the array, or why it cannot go there;
    `fill_share`: the share of launches that fill a copy (1 / launches per fill);
    `values`: the parameters to price at (default: the launch's or nominal ones);
    `obstacle`: why the kernel's arrays stay in global memory, whatever they are."""
    out = []
    for m in spec.memories:
        why = _why_not(reads, m, read_only, alias, pointer_type, block)
        if m.name != "global" and obstacle:
            why = obstacle
        out.append(Option(m.name, None if why else
                          placement_cost(reads, m, spec.multiprocessors, fill_share, values,
                                         spec.memory("global"), block), why))
    return out


def gain_terms(placement: "KernelPlacement", spec: MemorySpec
               ) -> tuple[list[tuple[object, float, float]], float]:
    """The chosen placement's gain over all-global reads per launch, as terms
    (instances formula, active lanes per warp, gain per request spread over the
    multiprocessors) to be summed at a launch's values, and the cost of one fill of its
    copies: where sizes are known only at run time, the launches decide (rent or buy,
    templates/placement_runtime.cu.j2)."""
    terms, fill = [], 0.0
    chosen = {a.reads.array: a.chosen for a in placement.arrays}
    base = {a: "global" for a in chosen}
    kept = placement.waiting(chosen)
    for w in placement.waiting(base):
        if w not in kept and w.instances is not None:
            terms.append((w.instances, w.lanes, w.per_request))
    for a in placement.arrays:
        if a.chosen == "global":
            continue
        memory, base = spec.memory(a.chosen), spec.memory("global")
        fill += memory.fill_cost
        for r in a.reads.references:
            gain = (request_cost(a.reads, r, base) - request_cost(a.reads, r, memory)) / \
                max(spec.multiprocessors, 1)
            if r.instances is not None and gain:
                terms.append((r.instances, r.lanes, gain))
    return terms, fill


def _bytes(choice: ArrayChoice, memory: Memory) -> int:
    """What the array takes of the memory: a block's tile where it is staged."""
    r = choice.reads
    if "staging" in memory.needs:
        return choice.tile_bytes
    return (r.last + 1) * r.element_size if r.last is not None else 0


def _fits(assignment: dict[str, str], arrays: list[ArrayChoice], spec: MemorySpec) -> bool:
    used: dict[str, int] = {}
    for a in arrays:
        m = assignment.get(a.reads.array)
        if m is not None and m != "global":
            used[m] = used.get(m, 0) + _bytes(a, spec.memory(m))
    return all(not spec.memory(m).capacity or b <= spec.memory(m).capacity
               for m, b in used.items())


def branch_and_bound(arrays: list[ArrayChoice], spec: MemorySpec,
                     placement: "KernelPlacement | None" = None) -> dict[str, str]:
    """The cheapest legal assignment within capacities (forced arrays keep theirs); with
    `placement`, its store waits counted at each complete assignment (they only add, so
    the arrays' cheapest costs still bound every branch)."""
    def legal(a):
        if a.forced:
            return [(a.cost(a.chosen) or 0.0, a.chosen)]
        return sorted((o.cost, o.memory) for o in a.options if o.cost is not None)

    choices = {a.reads.array: legal(a) for a in arrays}
    order = sorted(arrays, key=lambda a: -(choices[a.reads.array][1][0] -
                                           choices[a.reads.array][0][0]
                                           if len(choices[a.reads.array]) > 1 else 0.0))
    floor = [sum(choices[a.reads.array][0][0] for a in order[k:])
             for k in range(len(order) + 1)]
    best: list = [float("inf"), None]

    def search(k: int, cost: float, assignment: dict[str, str]) -> None:
        if cost + floor[k] >= best[0] - 1e-9:
            return
        if k == len(order):
            total = cost + (sum(w.cost for w in placement.waiting(assignment))
                            if placement is not None else 0.0)
            if total < best[0] - 1e-9:
                best[0], best[1] = total, dict(assignment)
            return
        name = order[k].reads.array
        for c, m in choices[name]:
            assignment[name] = m
            if _fits(assignment, arrays, spec):
                search(k + 1, cost + c, assignment)
            del assignment[name]

    search(0, 0.0, {})
    return best[1] or {a.reads.array: "global" for a in arrays}


def greedy(arrays: list[ArrayChoice], spec: MemorySpec) -> dict[str, str]:
    """PORPLE's greedy: constant memory first for broadcast-heavy arrays (by gain per
    byte), then every other array its cheapest memory with room left."""
    assignment = {a.reads.array: a.chosen for a in arrays if a.forced}
    free = [a for a in arrays if not a.forced]
    constant = [m.name for m in spec.memories if m.spelling == "constant"]

    def gain(a, m):
        c = a.cost(m)
        return None if c is None else (a.cost("global") or 0.0) - c

    for m in constant:
        broadcast = [a for a in free if a.reads.uniform >= BROADCAST_SHARE and
                     (gain(a, m) or 0.0) > 0]
        broadcast.sort(key=lambda a: -gain(a, m) / max(_bytes(a, spec.memory(m)), 1))
        for a in broadcast:
            trial = dict(assignment, **{a.reads.array: m})
            if _fits(trial, arrays, spec):
                assignment = trial
    for a in free:
        if a.reads.array in assignment:
            continue
        for c, m in sorted((o.cost, o.memory) for o in a.options if o.cost is not None):
            trial = dict(assignment, **{a.reads.array: m})
            if _fits(trial, arrays, spec):
                assignment = trial
                break
    return assignment


def choose(placement: KernelPlacement, spec: MemorySpec) -> KernelPlacement:
    """Fill in each array's memory (the search) and whether the kernel changes."""
    arrays = placement.arrays
    if len([a for a in arrays if not a.forced]) <= BRANCH_AND_BOUND_ARRAYS:
        assignment, placement.method = branch_and_bound(arrays, spec, placement), \
            "branch-and-bound"
    else:
        assignment, placement.method = greedy(arrays, spec), "greedy"
    for a in arrays:
        a.chosen = assignment.get(a.reads.array, "global")
    forced = any(a.forced for a in arrays)
    if all(a.chosen == "global" for a in arrays):
        placement.reason = "every array it reads is cheapest in global memory"
    elif not forced and placement.baseline < MIN_GAIN * placement.total():
        placement.reason = (f"predicted gain {placement.baseline / placement.total():.3f}x, "
                            f"below {MIN_GAIN}x")
        for a in arrays:
            a.chosen = "global"
    placement.applied = any(a.chosen != "global" for a in arrays)
    return placement
