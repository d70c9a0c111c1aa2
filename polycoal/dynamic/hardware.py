"""Hardware counters of the original kernels (Nsight Compute), beside the trace's figures.

Nsight Compute (`ncu`, found on PATH or through POLYCOAL_NCU) wraps a whole process, so
`measure` writes a job (programs, their preprocessor options, int arguments, seed and
kernels), runs `ncu --csv --page raw --metrics <METRICS> python -m
polycoal.dynamic.originals JOB MANIFEST`, which launches every ORIGINAL kernel once as its
first launch site sets it up (the trace's setup and inputs, without instrumentation: the
trace's stores would inflate the counts), and reads back ncu's CSV (one row per launch)
and the runner's manifest (the launches in order). Rows are matched to kernels by the
identifier of ncu's kernel name (demangled `ns::k<T>(float *, int)` or mangled `_Z1kPfi`
alike), in launch order, so that two programs' kernels of the same name stay apart.

Per kernel the hardware figure is sectors per request over its global loads, and over
its stores (l1tex__t_sectors / l1tex__t_requests of the LSU's global ld and st). The
trace's figure is aggregated the same way over the requests the compiled code issues
(`issued_counters`): the compiler serves some references from registers, which a
source-level trace records; a thread's load of the address it accessed last with no
store of its own since (`tmp[i] += ...` in a loop: the load is forwarded from the
previous iteration's store), and a store the thread overwrites before it loads anything,
are not issued. A request is dropped when all its lanes' accesses are. The trace samples
whole blocks: ratios stay comparable. When ncu is missing or fails, `Hardware.error`
says why and the trace report goes on.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field

from polycoal.analysis.coalescing import request_sectors
from polycoal.dynamic.algorithm1 import request_groups
from polycoal.dynamic.collect import Record
from polycoal.dynamic.instrument import Site

METRICS = {
    ("load", "sectors"): "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    ("load", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ("store", "sectors"): "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    ("store", "requests"): "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}
KINDS = ("load", "store")
TOLERANCE = 0.10            # relative difference of two sectors/request figures that agree
NCU_TIMEOUT_S = 600
_HEADER = '"ID","Process ID"'
_NAME_COLUMNS = ("Kernel Name", "Function Name", "Demangled Name")


@dataclass(frozen=True)
class Counters:
    sectors: int
    requests: int

    @property
    def per_request(self) -> float | None:
        return self.sectors / self.requests if self.requests else None


@dataclass(frozen=True)
class Measured:
    """One launch of the runner: a kernel of a program, its counters or why none."""
    program: str
    kernel: str
    counters: dict[str, Counters] | None = None      # "load" / "store"
    grid: str = ""
    block: str = ""
    error: str | None = None


@dataclass
class Hardware:
    tool: str | None                                  # the ncu used
    error: str | None = None                          # why no counters at all
    kernels: list[Measured] = field(default_factory=list)

    def of(self, kernel: str, program: str | None = None) -> Measured | None:
        return next((m for m in self.kernels if m.kernel == kernel and
                     (program is None or m.program == program)), None)

    def problem(self, m: Measured | None) -> str | None:
        """Why a kernel (its launch `m`, from `of`) has no counters, or None."""
        if self.error or m is None or m.counters is None:
            return self.error or (m.error if m else "the kernel was not launched")
        return None


# --- locating and running ncu -------------------------------------------------------

def find_ncu() -> str | None:
    """POLYCOAL_NCU when set (a path or a name on PATH), else `ncu` on PATH."""
    wanted = os.environ.get("POLYCOAL_NCU")
    if wanted:
        return shutil.which(wanted) or (wanted if os.access(wanted, os.X_OK) else None)
    return shutil.which("ncu")


def ncu_command(ncu: str, job: str, manifest: str) -> list[str]:
    return [ncu, "--csv", "--page", "raw", "--clock-control", "none",
            "--metrics", ",".join(METRICS.values()),
            sys.executable, "-m", "polycoal.dynamic.originals", job, manifest]


def _environment() -> dict[str, str]:
    """This process's environment with polycoal importable by the runner."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def error_lines(output: str) -> str:
    """ncu's own complaints (==ERROR== / ==WARNING== lines), or the output's tail."""
    lines = [ln.strip() for ln in output.splitlines() if ln.startswith(("==ERROR==",
                                                                         "==WARNING=="))]
    return " ".join(lines)[:600] if lines else output.strip()[-600:]


def measure(programs: list[dict], timeout: int = NCU_TIMEOUT_S) -> Hardware:
    """Counters of every kernel of the job's programs (each a dict: path, defines,
    undefines, include_dirs, forced_includes, imacros, arguments, seed, kernels (null:
    all)); never raises."""
    ncu = find_ncu()
    if ncu is None:
        return Hardware(None, "Nsight Compute (ncu) not found: put it on PATH or set "
                              "POLYCOAL_NCU")
    with tempfile.TemporaryDirectory(prefix="polycoal-ncu-") as tmp:
        job, manifest = os.path.join(tmp, "job.json"), os.path.join(tmp, "manifest.json")
        with open(job, "w") as f:
            json.dump({"programs": programs}, f)
        try:
            run = subprocess.run(ncu_command(ncu, job, manifest), capture_output=True,
                                 text=True, timeout=timeout, env=_environment())
        except subprocess.TimeoutExpired:
            return Hardware(ncu, f"ncu did not finish within {timeout} s")
        except OSError as e:
            return Hardware(ncu, f"ncu could not be started: {e}")
        output = run.stdout + "\n" + run.stderr
        if not os.path.exists(manifest):
            return Hardware(ncu, f"the kernels were not launched under ncu (status "
                                 f"{run.returncode}): {error_lines(output)}")
        with open(manifest) as f:
            launches = json.load(f)
    if not launches:
        return Hardware(ncu, f"the runner launched nothing (status {run.returncode}): "
                             f"{error_lines(output)}")
    rows = parse_csv(run.stdout)
    if not rows and any(e["launched"] for e in launches):
        return Hardware(ncu, f"ncu reported no counters (status {run.returncode}): "
                             f"{error_lines(output)}")
    return Hardware(ncu, None, match(launches, rows))


# --- ncu's CSV ----------------------------------------------------------------------

def number(text: str) -> float | None:
    """A CSV value: thousands separators dropped; None for n/a and the like."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_csv(output: str) -> list[dict[str, str]]:
    """The rows of `ncu --csv --page raw`, one per profiled launch, in ID order: the
    table starts at the header line after the program's own output; the units row and
    anything after the table are dropped."""
    lines = output.splitlines()
    start = next((k for k, ln in enumerate(lines) if ln.startswith(_HEADER)), None)
    if start is None:
        return []
    table = []
    for ln in lines[start:]:
        if not ln.startswith('"'):
            break
        table.append(ln)
    header, *body = list(csv.reader(table))
    rows = [dict(zip(header, r)) for r in body]
    return [r for r in rows if (r.get("ID") or "").strip().isdigit()]


def identifier(name: str) -> str:
    """The kernel's own identifier in a name as ncu prints it: `atax_kernel1`,
    `void ns::k<float>(float *, int)`, `_Z12atax_kernel1PfS_S_`, `_ZN2ns1kIfEEvPf`."""
    name = name.strip()
    if name.startswith("_Z"):
        return _mangled_identifier(name[2:])
    depth, cut = 0, len(name)
    for k, c in enumerate(name):                 # the parameter list: first '(' outside <>
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            cut = k
            break
    name = name[:cut]
    while True:
        shorter = re.sub(r"<[^<>]*>", "", name)
        if shorter == name:
            break
        name = shorter
    return name.split()[-1].split("::")[-1] if name.split() else name


def _mangled_identifier(rest: str) -> str:
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    last = rest
    while True:
        m = re.match(r"(\d+)", rest)
        if not m:
            return last
        n = int(m.group(1))
        last, rest = rest[m.end():m.end() + n], rest[m.end() + n:]
        if not nested or not rest or rest[0] in "EI":
            return last


def counters(row: dict[str, str]) -> dict[str, Counters] | None:
    values = {key: number(row.get(metric, "")) for key, metric in METRICS.items()}
    if any(v is None for v in values.values()):
        return None
    return {kind: Counters(int(values[(kind, "sectors")]), int(values[(kind, "requests")]))
            for kind in KINDS}


def _name(row: dict[str, str]) -> str:
    return next((row[c] for c in _NAME_COLUMNS if row.get(c)), "")


def match(launches: list[dict], rows: list[dict[str, str]]) -> list[Measured]:
    """Each launch of the manifest with the first unused row of its kernel's name."""
    used: set[int] = set()
    out = []
    for e in launches:
        if not e["launched"]:
            out.append(Measured(e["program"], e["kernel"], error=e["error"]))
            continue
        k = next((k for k, r in enumerate(rows) if k not in used and
                  identifier(_name(r)) == e["kernel"]), None)
        if k is None:
            out.append(Measured(e["program"], e["kernel"],
                                error="ncu reported no launch of this kernel"))
            continue
        used.add(k)
        c = counters(rows[k])
        out.append(Measured(e["program"], e["kernel"], c, rows[k].get("Grid Size", ""),
                            rows[k].get("Block Size", ""),
                            None if c else "ncu reported no value for a counter"))
    return out


# --- the trace's figures, aggregated as the hardware counts -------------------------

def not_issued(sites: list[Site], records: list[Record]) -> set[int]:
    """Indices of records the compiled code serves from registers (module doc): per
    thread, in the order it ran (the trace buffer keeps each thread's order)."""
    kind = {s.sid: s.kind for s in sites}
    array = {s.sid: s.array for s in sites}
    history: dict[tuple, list[int]] = defaultdict(list)
    for k, r in enumerate(records):
        history[(r.block, r.thread)].append(k)
    out: set[int] = set()
    for indices in history.values():
        last: dict[tuple, int] = {}          # address -> index of the thread's last access
        stores_seen = loads_seen = 0
        seen_at: dict[int, tuple[int, int]] = {}
        for k in indices:
            r = records[k]
            address = (array[r.sid], r.offset)
            before = last.get(address)
            if kind[r.sid] == "load":
                if before is not None and seen_at[before][0] == stores_seen:
                    out.add(k)                 # no store of the thread since that access
                loads_seen += 1
            else:
                if before is not None and kind[records[before].sid] == "store" and \
                        seen_at[before][1] == loads_seen:
                    out.add(before)            # overwritten before any load: dead
                stores_seen += 1
            last[address] = k
            seen_at[k] = (stores_seen, loads_seen)
    return out


def issued_counters(sites: list[Site], records: list[Record],
                    drop: set[int] | None = None) -> dict[str, Counters]:
    """Sectors and warp-level requests of the trace's loads and of its stores, without
    the requests all of whose lanes' records are in `drop` (default: not_issued)."""
    drop = not_issued(sites, records) if drop is None else drop
    site = {s.sid: s for s in sites}
    totals = {k: [0, 0] for k in KINDS}
    for (sid, *_), indices in request_groups(records).items():
        if all(k in drop for k in indices):
            continue
        t = totals[site[sid].kind]
        t[0] += request_sectors((records[k].offset for k in indices),
                                site[sid].element_size)[0]
        t[1] += 1
    return {k: Counters(*v) for k, v in totals.items()}


def agrees(trace: float | None, hardware: float | None, tolerance: float = TOLERANCE) -> bool | None:
    """Two sectors/request figures agree within `tolerance` (relative); None when either
    is missing (no such requests)."""
    if trace is None or hardware is None:
        return None
    return abs(trace - hardware) <= tolerance * max(trace, hardware)


@dataclass(frozen=True)
class Comparison:
    """One kind of access (loads or stores) of one kernel: hardware against trace."""
    kind: str
    hardware: Counters | None
    trace: Counters                  # the requests the compiled code issues
    trace_all: Counters              # every request the trace recorded

    @property
    def agrees(self) -> bool | None:
        if self.hardware is None:
            return None
        return agrees(self.trace.per_request, self.hardware.per_request)


def compare(sites: list[Site], records: list[Record],
            measured: Measured | None) -> list[Comparison]:
    """Loads, then stores: the kernel's hardware figures beside the trace's."""
    issued = issued_counters(sites, records)
    every = issued_counters(sites, records, drop=set())
    hw = measured.counters if measured is not None and measured.counters else {}
    return [Comparison(k, hw.get(k), issued[k], every[k]) for k in KINDS]
