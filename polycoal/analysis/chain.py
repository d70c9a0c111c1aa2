"""The chain of a recurrence: a lower bound that bytes and flops do not give.

A thread that runs `X[i][j] = X[i][j] - X[i][j-1] * A[i][j] / B[i][j-1]` along j waits,
at every trip, for the value the last trip made: whatever the form, the trips of one
row run one after another, and the row takes at least its trips times the latency of
the operations between a value read and the value it makes (ADI's row sweeps: a
multiply, a division and a subtraction a trip). The bound of a kernel is then also
max over rows of (trips x the longest path of a trip), which holds for every schedule
that computes the same values the same way (a reassociated sum is another
computation: reductions are left out, polycoal reassociates them).

The dataflow is the model's, exact (isl's last writer of each read of one thread).
Each flow from a write of statement W to a read r of statement R becomes an edge
W -> R whose distance is the trips between them along one loop (0: within a trip) and
whose weight is the operations on the path from r up to the value R writes (an
addition of a product contracted with it into one FMA; a division entered by its
numerator or its denominator, whose latencies differ). The time a trip must take is
the largest ratio weight / distance over the graph's cycles, evaluated with latencies
measured on the device (`per_trip`). Edges the analysis cannot place (a distance
that varies, along two loops) are left out, which only lowers the bound: it stays one.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl
from pycparser import c_ast, c_generator

from polycoal.analysis.dependences import one_thread
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel, Statement

# the most statements whose cycles are enumerated (a kernel past it gets no chain)
MOST_STATEMENTS = 12
REDUCING = ("+", "*", "min", "max")
# the operators a scan of an update reassociates
SCANS = {"+": ("+", "-"), "*": ("*",)}


@dataclass(frozen=True)
class Edge:
    source: str                 # statement names
    sink: str
    loop: str | None            # the counter the trips run along (None: within a trip)
    distance: int               # trips from the write to the read
    ops: tuple[str, ...]        # latency classes on the path: "ffma", "fdiv_num", ...


@dataclass(frozen=True)
class Chain:
    loop: str                   # the counter of the loop whose trips wait on each other
    line: int                   # its line in the source
    trips: int                  # its trips at the launch's values
    edges: tuple[Edge, ...]

    def per_trip(self, latency_ns: dict[str, float]) -> tuple[float, tuple[str, ...]]:
        """The least time a trip takes (ns) and the operations of the cycle that
        binds it, by `latency_ns` (a class it lacks counts nothing)."""
        return per_trip(self.edges, latency_ns)

    def ms(self, latency_ns: dict[str, float]) -> float:
        return self.trips * self.per_trip(latency_ns)[0] * 1e-6


def per_trip(edges, latency_ns: dict[str, float]) -> tuple[float, tuple[str, ...]]:
    """The largest weight / distance over the simple cycles of the edges' graph."""
    nodes = sorted({e.source for e in edges} | {e.sink for e in edges})
    out: dict[str, list[Edge]] = {n: [] for n in nodes}
    for e in edges:
        out[e.source].append(e)
    best, ops = 0.0, ()

    def walk(start: str, at: str, path: list[Edge]):
        nonlocal best, ops
        for e in out[at]:
            if e.sink == start:
                cycle = path + [e]
                distance = sum(x.distance for x in cycle)
                if distance > 0:
                    weight = sum(latency_ns.get(o, 0.0) for x in cycle for o in x.ops)
                    if weight / distance > best:
                        best = weight / distance
                        ops = tuple(o for x in cycle for o in x.ops)
            elif e.sink > start and e.sink not in {x.sink for x in path}:
                walk(start, e.sink, path + [e])

    for n in nodes:
        walk(n, n, [])
    return best, ops


def recurrence_chain(analysis, values: dict[str, int] | None = None) -> Chain | None:
    """The chain of the kernel of `analysis` at the launch's values and `values`, or
    None where no cycle of flows crosses a loop's trips (or the model cannot say)."""
    model = analysis.model
    if model is None or not model.is_affine or not model.statements or \
            len(model.statements) > MOST_STATEMENTS:
        return None
    edges = [e for e in _edges(model) if e is not None]
    loops = {e.loop for e in edges if e.loop is not None}
    best = None
    for loop in sorted(loops):
        along = tuple(e for e in edges if e.loop in (loop, None))
        if not _cycles(along):
            continue
        trips = _trips(model, loop, {**model.parameter_values, **(values or {})},
                       {e.source for e in along if e.loop == loop} |
                       {e.sink for e in along if e.loop == loop})
        if not trips:
            continue
        line = next(l.location.line for s in model.statements for l in s.loops
                    if l.counter == loop)
        chain = Chain(loop, line, trips, along)
        best = chain if best is None or chain.trips > best.trips else best
    return best


def _cycles(edges) -> bool:
    """Whether the edges close a cycle that crosses trips (all weights counted 1)."""
    marked = tuple(Edge(e.source, e.sink, e.loop, e.distance, e.ops + ("trip",))
                   for e in edges)
    return per_trip(marked, {"trip": 1.0})[0] > 0


def _trips(model: KernelModel, counter: str, values: dict, names: set[str]) -> int | None:
    """The fewest trips of the loop that one of the statements `names` runs in one
    thread at the values (counted in its domain: a guard `j < 8` counts 8), or None
    where a parameter has no value."""
    position = isl_helpers.all_dims(model).index(counter)
    fewest = None
    for s in model.statements:
        if s.name not in names:
            continue
        d = isl_helpers.domain(model, s)
        for k in range(d.dim(isl.dim_type.param)):
            name = d.get_dim_name(isl.dim_type.param, k)
            if name not in values:
                return None
            d = d.fix_val(isl.dim_type.param, k, values[name])
        threads = len(model.thread_dims)
        # one thread's trips (any thread's bound the kernel's time from below): the
        # first thread's values of the counter, counted
        per = d.project_out(isl.dim_type.set, position + 1, d.dim(isl.dim_type.set) - position - 1)
        per = per.project_out(isl.dim_type.set, threads, position - threads)
        if per.is_empty() or not per.is_bounded():
            return None
        first = per.project_out(isl.dim_type.set, threads, 1).lexmin().sample_point()
        for k in range(threads):
            per = per.fix_val(isl.dim_type.set, k, first.get_coordinate_val(isl.dim_type.set, k))
        count = per.project_out(isl.dim_type.set, 0, threads).count_val().to_python()
        fewest = count if fewest is None else min(fewest, count)
    return fewest


def _edges(model: KernelModel):
    """One edge a flow from a write to a read of one thread (isl's last writer)."""
    schedule = isl_helpers.union_of(isl_helpers.schedule_map(model, s)
                                    for s in model.statements)
    by_name = {s.name: s for s in model.statements}
    for sink in model.statements:
        for r in sink.accesses:
            if r.kind != "read" or r.subscripts is None:
                continue
            writes = isl_helpers.union_of(
                isl_helpers.access_map(model, s, a) for s, a in model.accesses()
                if a.kind == "write" and a.array == r.array and a.subscripts is not None)
            read = isl_helpers.access_map(model, sink, r)
            if writes is None or read is None:
                continue
            info = isl.UnionAccessInfo.from_sink(isl.UnionMap.from_map(read))
            info = info.set_must_source(writes).set_schedule_map(schedule)
            flows = info.compute_flow().get_may_dependence().get_map_list()
            for k in range(flows.n_map()):
                flow = flows.get_at(k)
                source = by_name[flow.get_tuple_name(isl.dim_type.in_)]
                # a thread's own flows (the schedule runs threads one after another)
                flow = flow.intersect(one_thread(model, source, sink)).intersect_params(
                    isl_helpers.context(model))
                if flow.is_empty() or _reduces(source, sink, r):
                    continue
                yield _edge(model, source, sink, r, flow)


def _reduces(source: Statement, sink: Statement, r) -> bool:
    """A sum's own accumulator (`s += a[i]`, `X[i] = X[i] - e`): reassociable, no chain."""
    if source is not sink or sink.update not in REDUCING:
        return False
    return any(w.kind == "write" and w.array == r.array and w.subscripts == r.subscripts
               for w in sink.accesses)


def _edge(model: KernelModel, source: Statement, sink: Statement, r, flow: isl.Map
          ) -> Edge | None:
    """The flow's distance along one loop (same thread, the other loops' counters
    equal), with the operations from the read to the value the sink writes."""
    threads = len(model.thread_dims)
    common = 0
    while common < min(len(source.loops), len(sink.loops)) and \
            source.loops[common] == sink.loops[common]:
        common += 1
    deltas = []
    for k in range(threads + common):
        d = _delta(flow, k)
        if d is None:
            return None
        deltas.append(d)
    if any(deltas[:threads]):
        return None                                   # another thread's value
    moved = [(k, d) for k, d in enumerate(deltas[threads:]) if d]
    ops = path_ops(sink, r.text)
    if ops is None:
        return None
    if not moved:
        return Edge(source.name, sink.name, None, 0, ops)
    if len(moved) > 1:
        return None
    k, d = moved[0]
    loop = sink.loops[k]
    if d % loop.step:
        return None
    return Edge(source.name, sink.name, loop.counter, d // loop.step, ops)


def _delta(flow: isl.Map, k: int) -> int | None:
    """out[k] - in[k] when it is one constant over the flow, else None."""
    n_in, n_out = flow.dim(isl.dim_type.in_), flow.dim(isl.dim_type.out)
    m = flow.project_out(isl.dim_type.in_, k + 1, n_in - k - 1)
    m = m.project_out(isl.dim_type.in_, 0, k)
    m = m.project_out(isl.dim_type.out, k + 1, n_out - k - 1)
    m = m.project_out(isl.dim_type.out, 0, k)
    m = m.project_out(isl.dim_type.param, 0, m.dim(isl.dim_type.param))
    deltas = m.deltas()
    if deltas.is_empty() or not deltas.is_singleton():
        return None
    return deltas.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()


def path_ops(s: Statement, reference: str) -> tuple[str, ...] | None:
    """The latency classes from the read `reference` (as written) up to the value the
    statement stores, the longest over its occurrences; None where it is not found, or
    where the value only enters the statement's own sum (`a[j] += a[j - 1]`: a scan,
    which polycoal may reassociate as it does a reduction)."""
    paths = _paths(s, reference)
    if not paths or s.update in SCANS and all(
            isinstance(node, c_ast.BinaryOp) and node.op in SCANS[s.update]
            for path in paths for node, _ in path):
        return None
    kind = _kind(s)
    return max((_costs(p, kind) for p in paths), key=len)


def _paths(s: Statement, reference: str) -> list[list[tuple[c_ast.Node, str]]]:
    """Each occurrence of `reference` in the statement: the nodes above it up to the
    value stored, each with which of its children the path came from."""
    node = s.node
    if isinstance(node, c_ast.Decl):
        node = c_ast.Assignment("=", c_ast.ID(node.name), node.init)
    if not isinstance(node, c_ast.Assignment) or node.rvalue is None:
        return []
    text = c_generator.CGenerator()
    paths = []

    def walk(n, above: list[tuple[c_ast.Node, str]]):
        if isinstance(n, (c_ast.ArrayRef, c_ast.ID, c_ast.StructRef, c_ast.UnaryOp)) and \
                text.visit(n) == reference:
            paths.append(list(reversed(above)))
            return
        for name, child in n.children():
            walk(child, above + [(n, name)])

    walk(node.rvalue, [])
    if node.op != "=":
        # X op= e is X = X op (e): the target's old value enters on the left
        whole = c_ast.BinaryOp(node.op[:-1], node.lvalue, node.rvalue)
        paths = [p + [(whole, "right")] for p in paths]
        if text.visit(node.lvalue) == reference:
            paths.append([(whole, "left")])
    return paths


def _costs(path, kind: str) -> tuple[str, ...]:
    """Latency classes of the operations on a path from a leaf to the root (each entry
    the node above and which of its children the path came from)."""
    if kind == "int":
        return ()
    prefix = "d" if kind == "double" else "f"
    ops = []
    below = None
    for node, child in path:
        if isinstance(node, c_ast.BinaryOp):
            if node.op == "/" and isinstance(node.right, c_ast.Constant):
                ops.append(f"{prefix}fma")      # by a constant: a product at the least
            elif node.op == "/":
                ops.append(f"{prefix}div_{'num' if child == 'left' else 'den'}")
            elif node.op == "*":
                ops.append(f"{prefix}fma")
            elif node.op in ("+", "-"):
                # an addition of the product the path came through: one FMA with it
                if not (isinstance(below, c_ast.BinaryOp) and below.op == "*"):
                    ops.append(f"{prefix}fma")
        below = node
    return tuple(ops)


def _kind(s: Statement) -> str:
    types = {a.element_type for a in s.accesses if a.kind == "write"}
    if any("double" in t for t in types):
        return "double"
    if any("float" in t or t in ("half", "__half") for t in types):
        return "float"
    return "int"

