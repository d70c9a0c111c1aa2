"""Whether, and where, a kernel's irregular references are read from a reorganised copy
(analysis/irregular.py finds them; codegen/irregular.py writes the code).

A copy is built on the GPU before a launch and is worth building only if launches reuse
it: building reads what one original launch reads and writes the copy, so a launch that
rebuilds it each time is slower than the original. The copy stays valid while the
arrays it was built from are unchanged; the runtime keeps, per array, the time of the
host's last write to it (its version) and rebuilds when one moved. Those writes are found in
the host code (frontend/struct_arrays.py's scan of device pointers): a cudaMemcpy or
cudaMemset into one, its allocation or release, a launch of a kernel that writes the
parameter it is passed to. Where a source array is not a cudaMalloc allocation of this
file, or escapes (pointer arithmetic, a call polycoal does not know), nothing says when
it changes, and the copy would be rebuilt at every launch: no gain.

Reuse is estimated per launch site as (launches per run) / (builds per run), from the
host loops around the launch (optimize/layout_cost.host_loops) and the loops that also
hold a write: a loop around both rebuilds each trip. The run-time selector in the
runtime decides the rest with the sizes and the index arrays it sees
(templates/irregular_runtime.cu.j2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from polycoal.analysis.aliasing import distinct_arrays
from polycoal.analysis.irregular import Irregular, irregular_references, read_only_parameters
import islpy as isl

from polycoal.model.isl_c import condition_to_c, pw_aff_to_c
from polycoal.frontend.launch_text import has_side_effects, launch_parts, launch_values
from polycoal.frontend.program import Launch, Program, Span
from polycoal.optimize.layout_cost import host_loops, weight_at

# launches per build below which a copy cannot pay for itself, by kind (the runtime's
# selector uses the same numbers, templates/irregular_runtime.cu.j2). Measured on the
# H200 (BENCHMARKS.md, "Irregular references"): a gather's copy costs about one launch
# of the kernel and saves up to half of it; a segment remap (slice widths, offsets, one
# copy per array) costs about three launches of CSR SpMV and saves about 12% of one. A
# gather's padded form (a counting sort of P and the packed elements, built as a trial
# candidate where the kernel's only reads follow P) costs some 20 launches of such a
# gather at 2^20 threads (H100) and could save at most half of one.
MIN_REUSE = {"gather": 2.0, "segment": 25.0, "padding": 50.0}
# copies one launch site holds (templates/irregular_runtime.cu.j2: POLYCOAL_IRREGULAR_COPIES
# slots, the last one the segments' offsets): arrays read along one loop's runs
MAX_SEGMENT_COPIES = 7
# element types of the device pointers whose writes the host scan follows
SCALAR_TYPES = ("float", "double", "int", "unsigned", "long", "short", "char", "bool",
                "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                "uint32_t", "uint64_t", "size_t", "half", "__half", "float2", "float4",
                "double2", "int2", "int4")
# element types a copy may hold (the runtime's copy kernels move them as they are)
ELEMENT_BYTES = {"float": 4, "int": 4, "unsigned": 4, "double": 8, "long": 8, "short": 2,
                 "char": 1, "bool": 1, "int32_t": 4, "uint32_t": 4, "int64_t": 8,
                 "uint64_t": 8, "size_t": 8, "int8_t": 1, "uint8_t": 1, "int16_t": 2,
                 "uint16_t": 2}
WRITING_CALLS = ("cudaMalloc", "cudaFree", "cudaMemset", "cudaMemsetAsync")
COPIES = ("cudaMemcpy", "cudaMemcpyAsync")


@dataclass
class Site:
    """One launch of a reorganised kernel: its argument texts for each source array,
    the bounds of each reference at this launch's values, and its reuse."""

    launch: Launch
    launches: float                  # per run of the program (host loops)
    builds: float                    # of the copies, per run
    bounds: dict[str, tuple[str, str]] = field(default_factory=dict)   # ref text -> lo, hi
    why_not: str | None = None       # why this launch reads the original

    @property
    def reuse(self) -> float:
        return self.launches / self.builds if self.builds else self.launches


@dataclass
class Reorganisation:
    kernel: str
    found: list[Irregular]
    applied: list[Irregular] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    reason: str | None = None        # why nothing is reorganised
    dropped: list[tuple[Irregular, str]] = field(default_factory=list)   # kept, and why
    text: str = ""                   # the kernel rewritten (codegen/irregular.py)
    preprocessor: object = None      # the options the program was read with

    @property
    def changes(self) -> bool:
        return bool(self.applied) and self.reason is None and \
            any(s.why_not is None for s in self.sites)

    def describe(self) -> str:
        parts = []
        for r in self.applied:
            parts.append(f"{r.text} ({r.describe}) from {reading(r)}")
        parts += [f"{r.text} kept: {why}" for r, why in self.dropped]
        reuse = ", ".join(f"line {s.launch.location.line}: "
                          + (f"reused ~{s.reuse:g}x" if s.why_not is None else s.why_not)
                          for s in self.sites)
        return "; ".join(parts) + (f" [{reuse}]" if reuse else "")


def reading(r: Irregular) -> str:
    """What the reorganised kernel reads for reference r: the variants the runtime
    builds (the trial launches choose among them and the original)."""
    if r.kind != "gather":
        return "a padded column-major copy of its runs (slices of 32 rows)"
    variants = ["a duplicated copy (A2[e] = A[P[e]])"]
    if r.shareable:
        variants.append("its block's elements in shared memory (sharing)")
    if r.single_pattern:
        variants.append(f"its threads reordered by P and A packed (padding, where a "
                        f"launch reuses it {MIN_REUSE['padding']:g} times or more)")
    how = ", or ".join(variants) + (" (the trials choose)" if len(variants) > 1 else "")
    if r.thread_index and not r.single_pattern:
        how += "; padding on request (POLYCOAL_IRREGULAR_VARIANT=padded)"
    return how


@dataclass
class HostWrites:
    """The host code's writes to device arrays: the spans to mark (each bumps the
    runtime's epoch) and the arrays that cannot be followed."""

    tracked: set[str] = field(default_factory=set)
    escaped: set[str] = field(default_factory=set)
    assigned: set[str] = field(default_factory=set)   # assigned to or from another one
    # (span, "call" | "launch", the array's variable, its allocation's bytes as written
    # when the call is a cudaMalloc, else None)
    marks: list[tuple[Span, str, str, str | None]] = field(default_factory=list)

    def positions(self, variables: set[str]) -> list[int]:
        """Where the arrays of `variables` may be written (any variable they are
        assigned to or from counts as theirs)."""
        group = set(variables)
        if group & self.assigned:
            group |= self.assigned & self.tracked
        return [span.start for span, _, v, _ in self.marks if v in group]


def plain_name(text: str) -> str | None:
    """The variable an argument names, casts aside (`(const float *)d_x` -> d_x), or
    None for anything else."""
    t = text.strip()
    while t.startswith("(") and ")" in t:           # casts: `(const float *)d_x`
        close = t.index(")")
        inner = t[1:close]
        if re.fullmatch(r"[\w\s\*]+", inner) and not re.fullmatch(r"\s*\w+\s*", inner):
            t = t[close + 1:].strip()
        else:
            break
    return t if re.fullmatch(r"[A-Za-z_]\w*", t) else None


def host_writes(program: Program, watched: set[str], written_params) -> HostWrites:
    """Where the host code may write the device arrays named `watched` (and the arrays
    assigned to or from them): calls and launches to mark. `written_params(kernel)`:
    the kernel's written pointer parameters (None: unknown, every one)."""
    from polycoal.frontend.struct_arrays import struct_array_uses
    uses = struct_array_uses(program, {t: t for t in SCALAR_TYPES})
    out = HostWrites()
    assigned: set[str] = set()
    for arrays in uses.values():
        out.tracked |= arrays.variables
        out.escaped |= arrays.escaped
        assigned |= arrays.assigned
    out.assigned = assigned
    # a macro naming an array may write it where the scan does not look (its uses are
    # not at the array's mentions): such an array is not followed
    for m in re.finditer(r"^[ \t]*#[ \t]*define[^\n]*(?:\\\n[^\n]*)*", program.text, re.M):
        out.escaped |= set(re.findall(r"\b[A-Za-z_]\w*\b", m.group(0))) & out.tracked
    group = set(watched)
    if group & assigned:
        group |= assigned & out.tracked
    for arrays in uses.values():
        for call in arrays.calls:
            target = plain_name(call.arguments[0].replace("&", "")) if call.arguments \
                else None
            if call.function in WRITING_CALLS + COPIES and target in group:
                size = call.arguments[1] if call.function == "cudaMalloc" and \
                    len(call.arguments) == 2 and not has_side_effects(call.arguments[1]) \
                    else None
                out.marks.append((call.span, "call", target, size))
        for launch, position in arrays.launches:
            name = launch.arguments[position].strip()
            if name not in group or launch.span is None:
                continue
            written = written_params(launch.kernel)
            kernel = program.kernel(launch.kernel)
            param = kernel.parameters[position].name if kernel and \
                position < len(kernel.parameters) else None
            if written is None or param is None or param in written:
                if all(m[0] != launch.span or m[2] != name for m in out.marks):
                    out.marks.append((launch.span, "launch", name, None))
    return out


def _builds(loops, at: int, writes: list[int]) -> float:
    """Builds per run of a copy used at `at`: once, times the trips of every host loop
    around it that also holds a write."""
    builds = 1.0
    for start, end, trips in loops:
        if start <= at < end and any(start <= w < end for w in writes):
            builds *= trips
    return builds


def launches_per_build(loops, at: int, writes: HostWrites, variables: set[str]) -> float:
    """How often the launch at `at` runs per build of a copy of the arrays `variables`
    hold (host loops around it, divided by those that also write one of them)."""
    return weight_at(loops, at) / _builds(loops, at, writes.positions(variables))


def _host_value(program: Program, launch: Launch, kernel, pw, names: dict) -> str:
    """A bound (isl piecewise affine value of the kernel's parameters) in this
    launch's host values."""
    values = launch_values(program.text, launch, kernel, "long long")
    text = pw_aff_to_c(pw)
    where = pw.domain().params()
    if not where.is_equal(isl.Set.universe(where.get_space())):
        # outside the parameters' values where the reference runs, the range is empty:
        # the bound is the lowest one (nothing built)
        text = f"(({condition_to_c(where)}) ? ({text}) : (long long)0)"
    used = set(re.findall(r"\b[A-Za-z_]\w*\b", text))
    missing = [u for u in used if u not in values and u not in ("min", "max", "long")]
    if missing:
        raise ValueError(f"'{missing[0]}' has no value at the launch")
    names.update({u: values[u] for u in used if u in values})
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: values.get(m.group(0), m.group(0)), text)


def _site_builds(program: Program, kernel, launch: Launch, eligible: list[Irregular],
                 writes: HostWrites, loops, distinct: bool, why: str, written: set[str]
                 ) -> tuple[str | None, dict[str, float]]:
    """(why this launch cannot build copies, or None; each reference's builds per run)."""
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    try:
        _, config, args = launch_parts(program.text, launch)
    except (StopIteration, ValueError):
        return "its launch cannot be read", {}
    if len(args) != len(kernel.parameters) or any(has_side_effects(c) for c in config):
        return "its arguments or configuration cannot be evaluated twice", {}
    if any(has_side_effects(a) for a in args):
        return "an argument has a side effect", {}
    names = [args[position[a]] for r in eligible for a in _arrays_of(r)]
    plain = [plain_name(a) for a in names]
    bad = [a for a, p in zip(names, plain) if p is None or p not in writes.tracked
           or p in writes.escaped]
    if bad:
        return (f"'{bad[0].strip()}' is not followed in the host code (a cudaMalloc "
                "allocation of this file used only by calls polycoal knows): the copy would "
                "be rebuilt at every launch"), {}
    targets = [plain_name(args[position[p.name]]) for p in kernel.parameters
               if p.name in written and p.is_pointer]
    if not distinct and (any(t is None or t not in writes.tracked for t in targets) or
                         any(p in writes.assigned or p in targets for p in plain)):
        return (f"its pointer arguments may alias ({why}): a copy would not see the "
                "kernel's own writes"), {}
    at = launch.span.start
    return None, {r: _builds(loops, at, writes.positions(
        {plain_name(args[position[a]]) for a in _arrays_of(ref)}))
        for ref in eligible for r in (ref.text,)}


def _arrays_of(r: Irregular) -> list[str]:
    return [r.array, r.index_array] + ([r.length_array] if r.length_array else [])


def plan_reorganisation(program: Program, analysis, loops=None,
                        writes: HostWrites | None = None) -> Reorganisation:
    """The plan for one kernel (its analysis: kernel, model)."""
    kernel, model = analysis.kernel, analysis.model
    found = [r if r.obstacle or r.element_type in ELEMENT_BYTES else
             replace(r, obstacle=f"'{r.array}' has elements of type '{r.element_type}'")
             for r in (irregular_references(kernel, model) if model is not None else [])]
    plan = Reorganisation(kernel.name, found)
    eligible = [r for r in found if r.obstacle is None]
    if not found:
        plan.reason = "no irregular reference"
        return plan
    if not eligible:
        plan.reason = "; ".join(f"{r.text}: {r.obstacle}" for r in found)
        return plan
    if kernel.is_template or kernel.span is None:
        plan.reason = "a template kernel (its copies would need each instance's types)"
        return plan
    distinct, why = distinct_arrays(program, kernel, model)
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    launches = program.launches_of(kernel.name)
    if not launches:
        plan.reason = "no launch of the kernel in this file"
        return plan
    if program.references.get(kernel.name):
        plan.reason = "the kernel is named outside its launches (its signature must stay)"
        return plan
    loops = host_loops(program.tokens, [k.span for k in program.kernels if k.span]) \
        if loops is None else loops
    writes = writes or HostWrites()
    # per launch: whether it can build the copies, and each reference's builds
    builds: dict[int, dict[str, float]] = {}
    for launch in launches:
        site = Site(launch, weight_at(loops, launch.span.start if launch.span else -1), 0.0)
        plan.sites.append(site)
        site.why_not, builds[id(site)] = _site_builds(program, kernel, launch, eligible,
                                                      writes, loops, distinct, why, written)
    # a reference is reorganised where some launch reuses its copy
    plan.applied = [r for r in eligible if any(
        s.why_not is None and s.launches / builds[id(s)][r.text] >= MIN_REUSE[r.kind]
        for s in plan.sites)]
    per_loop: dict[tuple, int] = {}
    for r in list(plan.applied):
        key = (r.kind, r.index_array, r.length_array, r.index, r.loop_line)
        per_loop[key] = per_loop.get(key, 0) + 1
        if r.kind == "segment" and per_loop[key] > MAX_SEGMENT_COPIES:
            plan.applied.remove(r)
    dropped = [r for r in eligible if r not in plan.applied]
    crowded = [r for r in dropped if per_loop.get((r.kind, r.index_array, r.length_array,
                                                    r.index, r.loop_line), 0) >
               MAX_SEGMENT_COPIES]
    for site in plan.sites:
        if site.why_not is not None:
            site.builds = site.launches
            continue
        site.builds = max([builds[id(site)][r.text] for r in plan.applied] or [site.launches])
        try:
            for r in plan.applied:
                used: dict = {}
                site.bounds[r.text] = (_host_value(program, site.launch, kernel, r.range[0],
                                                   used),
                                       _host_value(program, site.launch, kernel, r.range[1],
                                                   used))
        except ValueError as error:
            site.why_not = str(error)
            continue
        needed = max([MIN_REUSE[r.kind] for r in plan.applied] or [0.0])
        if site.reuse < needed:
            site.why_not = (f"launched ~{site.launches:g}x per build of the copies, fewer "
                            f"than the {needed:g} launches they need to pay for themselves")
    plan.dropped = [(r, f"one loop's runs give copies to {MAX_SEGMENT_COPIES} arrays at most")
                    if r in crowded else
                    (r, "no launch reuses its copy the "
                     f"{MIN_REUSE[r.kind]:g} times it needs to pay for itself (a write to "
                     "its source arrays between launches, or too few launches)")
                    for r in dropped]
    if not any(s.why_not is None for s in plan.sites) or not plan.applied:
        plan.reason = "; ".join(sorted({s.why_not for s in plan.sites if s.why_not} |
                                       {why for _, why in plan.dropped}))
    return plan


def written_parameters(kernels):
    """kernel name -> its pointer parameters that may be written (every one not provably
    only read, analysis/irregular.read_only_parameters; None: not parsed, any), for the
    kernels given."""
    kernels = {k.name: k for k in kernels}

    def written(kernel: str):
        k = kernels.get(kernel)
        read_only = read_only_parameters(k) if k is not None else None
        if read_only is None:
            return None
        return {p.name for p in k.parameters if p.is_pointer and p.name not in read_only}
    return written


def watched_arrays(program: Program, plan: Reorganisation, references) -> set[str]:
    """The launch arguments behind the source arrays of `references` (the plan's)."""
    kernel = program.kernel(plan.kernel)
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    out = set()
    for launch in program.launches_of(plan.kernel):
        for r in references:
            for a in (r.array, r.index_array, r.length_array):
                if a and a in position and position[a] < len(launch.arguments):
                    out.add(launch.arguments[position[a]].strip())
    return out


def plan_program(program: Program, candidates, analyses, failed=None
                 ) -> dict[str, Reorganisation]:
    """The plans of the `candidates` (kernel analyses): a first pass finds the arrays
    behind their references, the host scan where those are written, a second pass
    prices each launch's reuse. `failed` collects (kernel, exception) of plans that
    raised (the kernel then has none)."""
    loops = host_loops(program.tokens, [k.span for k in program.kernels if k.span])
    plans: dict[str, Reorganisation] = {}
    for a in candidates:
        try:
            plans[a.kernel.name] = plan_reorganisation(program, a, loops)
        except Exception as error:
            if failed is None:
                raise
            failed.append((a.kernel.name, error))
    eligible = [p for p in plans.values() if any(r.obstacle is None for r in p.found)]
    if not eligible:
        return plans
    watched = set().union(*(watched_arrays(program, p, [r for r in p.found if not r.obstacle])
                            for p in eligible))
    writes = host_writes(program, watched, written_parameters(a.kernel for a in analyses))
    for a in candidates:
        if plans.get(a.kernel.name) in eligible:
            try:
                plans[a.kernel.name] = plan_reorganisation(program, a, loops, writes)
            except Exception as error:
                if failed is None:
                    raise
                del plans[a.kernel.name]
                failed.append((a.kernel.name, error))
    return plans


def summary(plan: Reorganisation) -> dict:
    """Plain data for reports: each irregular reference, what reorganises it or why
    nothing does, and each launch's reuse."""
    applied = {r.text for r in plan.applied} if plan.changes else set()
    dropped = dict((r.text, why) for r, why in plan.dropped)
    refs = []
    for r in plan.found:
        how = reading(r)
        refs.append({
            "reference": r.text, "line": r.line, "kind": r.kind, "array": r.array,
            "through": r.describe, "index_array": r.index_array, "index": r.index,
            "loop_line": r.loop_line or None,
            "reorganisation": how if r.text in applied else None,
            "why_not": None if r.text in applied else
            (r.obstacle or dropped.get(r.text) or plan.reason)})
    return {"kernel": plan.kernel, "references": refs, "applied": bool(applied),
            "reason": None if applied else plan.reason,
            "launches": [{"line": s.launch.location.line, "launches_per_run": s.launches,
                          "builds_per_run": s.builds, "reuse": s.reuse,
                          "reads_copies": s.why_not is None, "why_not": s.why_not}
                         for s in plan.sites]}
