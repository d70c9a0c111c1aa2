"""Occupancy read from the compiler: the registers a thread and the static shared memory
a block of each kernel of a module, as ptxas reports them (`nvcc -cubin -Xptxas -v`),
and the warps a multiprocessor then holds together.

A multiprocessor holds as many blocks of a kernel as its four limits allow together:
its warp slots (`max_warps`), its block slots (`max_blocks`), its register file (a
warp's registers allocated in units of `register_unit`: 32 threads times the
registers a thread, rounded up) and its shared memory (a block's static shared memory
plus `shared_reserved` bytes the runtime keeps a block, out of `shared_bytes`). The
model's estimate (analysis/work.py) assumes the first two alone; where the registers
or the shared memory a form needs would bind, only the compiler knows, and the choice
among forms may turn on it (passes/base.py compiles a kernel's forms only then).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass

from polycoal.analysis.roofline import Machine

WARP = 32


@dataclass(frozen=True)
class Resources:
    """What ptxas allocated one kernel."""

    registers: int                   # a thread's
    shared: int                      # static shared memory a block, bytes
    spills: int = 0                  # bytes of spill stores

    def as_json(self) -> dict:
        return {"registers": self.registers, "shared_bytes": self.shared,
                "spill_bytes": self.spills}


def resident_warps(r: Resources, block_threads: int, m: Machine) -> int:
    """The warps a multiprocessor holds of blocks of `block_threads` threads that need
    `r` (0 where not even one block fits: the launch would fail)."""
    block_warps = max(1, math.ceil(block_threads / WARP))
    per_warp = math.ceil(max(r.registers, 1) * WARP / m.register_unit) * m.register_unit
    by_registers = (m.registers // per_warp) // block_warps
    by_shared = m.shared_bytes // (r.shared + m.shared_reserved) if r.shared else m.max_blocks
    blocks = min(m.max_blocks, m.max_warps // block_warps, by_registers, by_shared)
    return max(0, blocks) * block_warps


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_SPILLS = re.compile(r"(\d+) bytes spill stores")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(output: str) -> dict[str, Resources]:
    """Each entry function's resources in ptxas's verbose report."""
    found: dict[str, Resources] = {}
    current, spills = None, 0
    for line in output.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current, spills = entry.group(1), 0
            continue
        spilled = _SPILLS.search(line)
        if spilled and current:
            spills = int(spilled.group(1))
        used = _USED.search(line)
        if used and current:
            found[current] = Resources(int(used.group(1)), int(used.group(2) or 0), spills)
            current = None
    return found


def nvcc_path() -> str | None:
    """The nvcc that reads kernels' resources ($NVCC, else the one on PATH), or None."""
    nvcc = os.environ.get("NVCC", "nvcc")
    return shutil.which(nvcc)


@functools.lru_cache(maxsize=256)
def compiled_resources(source: str, arch: str = "sm_90") -> tuple[tuple[str, Resources], ...]:
    """The resources of each kernel of `source`, a whole module, compiled for `arch`:
    (mangled symbol, Resources); () where nvcc is absent or refuses the module. Cached
    by the module's text and the compiler, in the process and on disk (a form is
    compiled once: a build that runs polycoal again pays nothing)."""
    nvcc = nvcc_path()
    if nvcc is None:
        return ()
    stamp = os.stat(nvcc)
    key = hashlib.sha256(f"{os.path.realpath(nvcc)}:{stamp.st_mtime_ns}:{arch}:"
                         f"{source}".encode()).hexdigest()
    cached = _cached(key)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="polycoal-occupancy-") as directory:
        src = os.path.join(directory, "forms.cu")
        with open(src, "w") as f:
            f.write(source)
        try:
            r = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-w", src,
                                "-o", os.path.join(directory, "forms.cubin")],
                               capture_output=True, text=True, errors="replace", timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return ()
    found = tuple(parse_ptxas(r.stdout + r.stderr).items()) if r.returncode == 0 else ()
    _store(key, found)
    return found


def cache_directory() -> str:
    """Where read resources are kept: occupancy/ under $POLYCOAL_CACHE_DIR (the build
    plugin's cache, where a build sets it), else under polycoal/ in $XDG_CACHE_HOME or
    ~/.cache."""
    base = os.environ.get("POLYCOAL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "polycoal")
    return os.path.join(base, "occupancy")


def _cached(key: str) -> tuple | None:
    try:
        with open(os.path.join(cache_directory(), key + ".json")) as f:
            return tuple((name, Resources(**r)) for name, r in json.load(f))
    except (OSError, ValueError, TypeError):
        return None


def _store(key: str, found: tuple) -> None:
    """Written whole or not at all (a temporary file renamed); a cache that cannot be
    written is no error."""
    directory = cache_directory()
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, delete=False,
                                         suffix=".tmp") as f:
            json.dump([[name, asdict(r)] for name, r in found], f)
        os.replace(f.name, os.path.join(directory, key + ".json"))
    except OSError:
        pass
