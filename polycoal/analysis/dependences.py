"""Dependences (isl dataflow) and races between threads.

The threads of a kernel without `__syncthreads` are unordered: any two statement
instances of different threads that touch the same element, one of them writing, race.
Races are found memory-based (no kills): the relation W ; A^-1 restricted to pairs whose
thread coordinates differ. Atomic updates do not race with each other.

Within a thread, dependences come from isl's dataflow analysis under the original
schedule (thread dimensions outermost, then the program order): flow (read after write),
anti (write after read) and output (write after write), one array at a time so that each
dependence names its array. A loop carries a dependence when the two instances agree on
the thread dimensions and on every outer loop but not on that loop's counter.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from polycoal.model import isl_helpers
from polycoal.model.kernel_model import Access, KernelModel, Loop, Statement


@dataclass(frozen=True)
class Dependence:
    kind: str            # "flow" | "anti" | "output"
    array: str
    source: str          # statement names
    sink: str
    relation: isl.Map


@dataclass(frozen=True)
class Race:
    array: str
    first: tuple[Statement, Access]
    second: tuple[Statement, Access]
    kind: str            # "write/write" | "read/write"
    thread_dims: tuple[str, ...]     # dims along which the racing threads differ
    when: isl.Set | None = None      # parameter values for which it races, if not all


def racing_values(races) -> isl.Set | None:
    """The parameter values for which any of `races` happens (coalesced), or None when
    one of them happens for every value (or there is none)."""
    if not races or any(r.when is None for r in races):
        return None
    when = races[0].when
    for r in races[1:]:
        when = when.union(r.when)
    return when.coalesce()


def condition_text(condition: isl.Set) -> str:
    """`m >= 65` from `[m] -> { : m >= 65 }`."""
    return str(condition).split(":", 1)[-1].strip(" }")


def _pair_relation(model: KernelModel, s1: Statement, s2: Statement, text: str) -> isl.Map:
    dims = model.dims
    primed = [f"{d}_2" for d in dims]
    subst = dict(zip(dims, primed))
    for d, p in subst.items():
        text = text.replace(f"{d}'", p)
    return isl.Map(f"[{', '.join(model.parameters)}] -> {{ {s1.name}[{', '.join(dims)}] -> "
                   f"{s2.name}[{', '.join(primed)}] : {text} }}")


def _threads_differ(model: KernelModel, s1: Statement, s2: Statement,
                    dims: list[str] | None = None) -> isl.Map:
    names = dims if dims is not None else isl_helpers.thread_names(model)
    text = " or ".join(f"{d} != {d}'" for d in names) or "false"
    return _pair_relation(model, s1, s2, text)


def _threads_equal(model: KernelModel) -> str:
    return " and ".join(f"{d} = {d}'" for d in isl_helpers.thread_names(model)) or "true"


def one_thread(model: KernelModel, s1: Statement, s2: Statement) -> isl.Map:
    """The pairs of instances of s1 and s2 that one thread runs."""
    return _pair_relation(model, s1, s2, _threads_equal(model))


def detect_races(model: KernelModel, spaces: tuple[str, ...] = ("global", "shared")
                 ) -> list[Race]:
    races: list[Race] = []
    seen: set[tuple] = set()
    accesses = [(s, a) for s, a in model.accesses()
                if a.space in spaces and a.subscripts is not None]
    for i, (s1, w) in enumerate(accesses):
        if w.kind != "write":
            continue
        wmap = isl_helpers.access_map(model, s1, w)
        for s2, a in accesses:
            if a.array != w.array or (w.atomic and a.atomic):
                continue
            # per pair of references (two on one line may race for different values)
            key = (w.array, *sorted([(s1.name, w.kind, w.location.line, w.text),
                                     (s2.name, a.kind, a.location.line, a.text)]))
            if key in seen:
                continue
            amap = isl_helpers.access_map(model, s2, a)
            if wmap is None or amap is None:
                continue
            same = wmap.apply_range(amap.reverse())
            if same.is_empty():
                continue
            conflict = same.intersect(_threads_differ(model, s1, s2))
            if conflict.is_empty():
                continue
            seen.add(key)
            dims = tuple(d for d in isl_helpers.thread_names(model)
                         if not same.intersect(_threads_differ(model, s1, s2, [d])).is_empty())
            when = conflict.params().gist(isl_helpers.context(model))
            if when.is_equal(isl.Set.universe(when.get_space())):
                when = None
            races.append(Race(w.array, (s1, w), (s2, a),
                              "write/write" if a.kind == "write" else "read/write", dims,
                              when))
    return races


def compute_dependences(model: KernelModel) -> list[Dependence]:
    """Intra-thread dataflow dependences, per array and kind."""
    schedule = isl_helpers.union_of(isl_helpers.schedule_map(model, s) for s in model.statements)
    if schedule is None:
        return []
    deps: list[Dependence] = []
    by_name = {s.name: s for s in model.statements}
    arrays = sorted({a.array for _, a in model.accesses() if a.subscripts is not None})
    for array in arrays:
        reads = isl_helpers.union_of(isl_helpers.access_map(model, s, a)
                                     for s, a in model.accesses()
                                     if a.array == array and a.kind == "read")
        writes = isl_helpers.union_of(isl_helpers.access_map(model, s, a)
                                      for s, a in model.accesses()
                                      if a.array == array and a.kind == "write")
        if writes is None:
            continue
        pairs = [("output", writes, writes, "must")]
        if reads is not None:
            pairs += [("flow", reads, writes, "must"), ("anti", writes, reads, "may")]
        for kind, sink, source, how in pairs:
            info = isl.UnionAccessInfo.from_sink(sink)
            info = info.set_must_source(source) if how == "must" else info.set_may_source(source)
            flow = info.set_schedule_map(schedule).compute_flow()
            relation = flow.get_may_dependence()
            maps = relation.get_map_list()
            for m in (maps.get_at(k) for k in range(maps.n_map())):
                src = m.get_tuple_name(isl.dim_type.in_)
                dst = m.get_tuple_name(isl.dim_type.out)
                # only pairs of one thread: pairs of different threads are races
                m = m.intersect(_pair_relation(model, by_name[src], by_name[dst],
                                               _threads_equal(model)))
                if m.is_empty():
                    continue
                if kind == "output" and src == dst and m.is_identity():
                    continue
                deps.append(Dependence(kind, array, src, dst, m))
    return deps


def carried_by(model: KernelModel, deps: list[Dependence], loop: Loop, depth: int
               ) -> list[Dependence]:
    """The dependences carried by `loop` (at `depth`) within one thread."""
    by_name = {s.name: s for s in model.statements}
    carried = []
    for d in deps:
        s1, s2 = by_name[d.source], by_name[d.sink]
        if len(s1.loops) <= depth or len(s2.loops) <= depth or \
                s1.loops[depth] != loop or s2.loops[depth] != loop:
            continue
        same = [_threads_equal(model)] + [f"c{k} = c{k}'" for k in range(depth)]
        text = " and ".join(same + [f"c{depth} != c{depth}'"])
        if not d.relation.intersect(_pair_relation(model, s1, s2, text)).is_empty():
            carried.append(d)
    return carried


def varies_along(model: KernelModel, deps: list[Dependence], dim: str) -> bool:
    """Does some dependence relate instances with different values of `dim`?

    A dimension along which no dependence varies is parallel: its instances can run
    in any order, in particular on different threads (the parallelism constraint).
    """
    by_name = {s.name: s for s in model.statements}
    for d in deps:
        s1, s2 = by_name[d.source], by_name[d.sink]
        if not d.relation.intersect(_pair_relation(model, s1, s2, f"{dim} != {dim}'")).is_empty():
            return True
    return False


def exposed_reads(model: KernelModel) -> list[tuple[Statement, Access]]:
    """The references that read an element of an array the kernel writes, for some
    instance, before any write of that element by the same thread (in the thread's
    order): what a thread reads of the kernel's own output it did not write itself. A
    reference whose subscript is outside the model counts as exposed.

    Each read reference is its own sink (tagged `S__readK`, at its statement's place in
    the schedule), the writes of its array the sources; the schedule runs threads one
    after another, so the last write before a read is the thread's own wherever the
    thread wrote the element before."""
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    schedule = isl_helpers.union_of(isl_helpers.schedule_map(model, s) for s in model.statements)
    exposed = []
    for array in sorted(written):
        pairs = [(s, a) for s, a in model.accesses() if a.array == array]
        writes = [(s, isl_helpers.access_map(model, s, a)) for s, a in pairs if a.kind == "write"]
        reads = [(s, a) for s, a in pairs if a.kind == "read"]
        if any(m is None for _, m in writes):
            exposed += reads
            continue
        sources = isl_helpers.union_of(m for _, m in writes)
        for k, (s, a) in enumerate(reads):
            access = isl_helpers.access_map(model, s, a)
            if access is None or schedule is None:
                exposed.append((s, a))
                continue
            tag = f"{s.name}__read{k}"
            sink = access.set_tuple_name(isl.dim_type.in_, tag)
            timed = schedule.union(isl.UnionMap.from_map(
                isl_helpers.schedule_map(model, s).set_tuple_name(isl.dim_type.in_, tag)))
            flow = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(sink)) \
                .set_must_source(sources).set_schedule_map(timed).compute_flow()
            found = flow.get_may_dependence()
            reader = _Named(tag)
            own = None
            for w, _ in writes:
                same = found.intersect(isl.UnionMap.from_map(
                    _pair_relation(model, w, reader, _threads_equal(model))))
                own = same if own is None else own.union(same)
            covered = own.range()
            instances = isl.UnionSet.from_set(sink.domain())
            if not instances.subtract(covered).is_empty():
                exposed.append((s, a))
    return exposed


def copies_proof(model: KernelModel | None) -> tuple[str, str]:
    """For the model of one copy of a kernel whose threads race only as copies along
    axes it never reads: (why one copy leaves what the copies leave, "") or ("", why
    that is not shown). The copies never read their own index along those axes, so at
    every step they compute the same values: run in lockstep (each step's loads before
    its stores, an interleaving the original may take) they leave what one copy leaves.
    Where each copy also reads of the kernel's output only what it wrote itself before
    (exposed_reads: none), run one after another in any order they leave it too: a
    later copy recomputes the same values from inputs nobody writes."""
    if model is None or not model.is_affine:
        return "", ("one copy's result is not shown to be theirs (the kernel is outside "
                    "the affine model)")
    exposed = exposed_reads(model)
    if exposed:
        s, a = exposed[0]
        return "", (f"one copy's result is what they leave run in lockstep, not run one "
                    f"after another: {a.text} at line {a.location.line} is read before the "
                    "copy writes it (each copy builds on what the others left)")
    written = sorted({a.array for _, a in model.accesses() if a.kind == "write"})
    read_back = sorted({a.array for _, a in model.accesses() if a.kind == "read"} &
                       set(written))
    own = (f"every read of {', '.join(read_back)} follows the copy's own write of it"
           if read_back else "it reads nothing it writes")
    return (f"each copy computes what it writes ({', '.join(written)}) from data the kernel "
            f"does not write ({own}), so its copies leave what one copy leaves, run in "
            "lockstep or one after another in any order"), ""


@dataclass(frozen=True)
class _Named:
    name: str                 # a statement's name, for _pair_relation
