"""The --dump-* views of each pipeline stage (for `polycoal transform`)."""

from __future__ import annotations

from polycoal.model import isl_helpers
from polycoal.decisions import KernelDecision


def dump_model(d: KernelDecision) -> str:
    m = d.analysis.model if d.analysis else None
    if m is None:
        return f"kernel {d.kernel}: no model\n"
    lines = [f"kernel {d.kernel}: dims [{', '.join(m.dims)}], parameters "
             f"[{', '.join(m.parameters)}]"]
    for t in m.thread_dims:
        lines.append(f"  thread dim {t.name}: axis {t.axis}, {t.kind}, extent {t.extent}"
                     + (" (grid-stride)" if t.strided else ""))
    for o in m.outside:
        lines.append(f"  outside the model: {o.construct} at line {o.location.line}: {o.detail}")
    for s in m.statements:
        lines.append(f"  {s.name} (line {s.location.line}): {s.text}")
        lines.append(f"    domain   {isl_helpers.domain(m, s)}")
        lines.append(f"    schedule {isl_helpers.schedule_map(m, s)}")
        for a in s.accesses:
            am = isl_helpers.access_map(m, s, a)
            lines.append(f"    {a.kind:5s} {am if am is not None else a.text + ' (non-affine)'}")
    return "\n".join(lines) + "\n"


def dump_dependences(d: KernelDecision) -> str:
    a = d.analysis
    if a is None or a.model is None:
        return f"kernel {d.kernel}: no dependences\n"
    lines = [f"kernel {d.kernel}: {len(a.dependences)} dependences, {len(a.races)} races"]
    for dep in a.dependences:
        lines.append(f"  {dep.kind:6s} {dep.array}: {dep.relation}")
    for r in a.races:
        lines.append(f"  race {r.kind} on {r.array} between {r.first[0].name} and "
                     f"{r.second[0].name}, threads differing in {', '.join(r.thread_dims)}")
    return "\n".join(lines) + "\n"


def dump_ilp(d: KernelDecision) -> str:
    if d.mapping is None:
        return f"kernel {d.kernel}: no ILP solved ({d.reason})\n"
    m = d.mapping
    lines = [f"kernel {d.kernel}: candidates (x-cost): "
             + ", ".join(f"{k}={v}" for k, v in m.costs.items()),
             f"  parallel dims: {', '.join(m.parallel) or 'none'}",
             f"  solution: {m.describe() or 'none'}; sequential: {', '.join(m.sequential)}"]
    lines += ["  " + line for line in m.ilp.splitlines()]
    return "\n".join(lines) + "\n"


def dump_schedule(d: KernelDecision) -> str:
    g = d.generated
    if g is None:
        return f"kernel {d.kernel}: original schedule kept ({d.reason})\n"
    lines = [f"kernel {d.kernel}: thread axes "
             + ", ".join(f"{a} <- {dim} in [{r.lo}, {r.hi}]"
                         for (a, dim), r in zip(g.axis_dims.items(), g.ranges)),
             f"  block {'x'.join(map(str, g.block))}"]
    for name, sched in g.schedules.items():
        lines.append(f"  {name} -> [{', '.join(sched)}]")
    return "\n".join(lines) + "\n"


def dump_sizes(d: KernelDecision) -> str:
    """The tile shape of a tiled product, in --sizes form; other kernels: what they are."""
    sizes = getattr(d.generated.tiles, "sizes", None) if d.generated else None
    if sizes is None:
        return f"kernel {d.kernel}: not tiled ({d.action})\n"
    return f"kernel {d.kernel}: --sizes {d.kernel}:{sizes.text}\n"
