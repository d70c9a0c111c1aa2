"""Validate and time original against transformed kernels on a GPU, through pycuda.

For every kernel polycoal changed: both versions are compiled with nvcc (through pycuda,
for the device's own architecture) in one module; every array argument is sized from
the access footprint and filled with fresh random values on every run (never zeros:
they hide unwritten outputs), so any element one version fails to write keeps its
random value and shows up as a difference. Both kernels run on identical copies with
their own geometries; every array is compared (relative L2 error, NaN never passes).
Timing: CUDA events around each launch after a warm-up, the median of the repeats (as
many as fit in TIMING_MS, at least one: a naive product at 4096 takes seconds); when the
inputs fit in the L2 cache several input sets are rotated, so that the figures measure
memory, not the cache. Ahead of each timed launch the device is held busy (HOLD_MS, the
blocking kernel of nvbench's method), so that the host has queued the first event, the
launch (or every launch of a form of several) and the last event before the device
reaches them: the events time the device's work and its own gaps between launches, not
the host's time to make a launch through Python (about 8 us a launch, which timed alone
would cap a 17 us kernel at 68% of its bound).
"""

from __future__ import annotations

import math
import random
import re
import statistics
from contextlib import contextmanager
from dataclasses import dataclass, field

from polycoal.diagnostics import InputError
from polycoal.frontend.program import Program
from polycoal.optimize.products import SHARED_BYTES
from polycoal.decisions import KernelDecision, TransformOptions, TransformResult
from polycoal.validate.experiment import (NotRunnable, prepare, rename_kernel, run_changed,
                                          setup_launch)

L2_BYTES = 64 << 20
SLOWER_BELOW = 0.95      # a speedup under this is reported as a slowdown (noise is ~2%)
_NUMPY = {"float": "float32", "double": "float64", "int": "int32", "unsigned": "uint32",
          "unsigned int": "uint32", "long": "int64", "long long": "int64", "short": "int16",
          "char": "int8", "unsigned char": "uint8", "size_t": "uint64", "int32_t": "int32",
          "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64"}


def arrays_agree(np, x, y, tolerance: float) -> tuple[bool, float]:
    """(whether two runs' values of an array agree, the relative L2 error of their
    finite elements): NaN and infinities must be at the same elements (the same
    infinities), the finite rest within `tolerance`; NaN as the error where they are not."""
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    finite = np.isfinite(x64) & np.isfinite(y64)
    same = bool((np.isnan(x64) == np.isnan(y64)).all() and
                (x64[~finite] == y64[~finite]).sum() + np.isnan(x64).sum() == (~finite).sum())
    if not same:
        return False, float("nan")
    ref = float(np.linalg.norm(x64[finite])) or 1.0
    rel = float(np.linalg.norm(x64[finite] - y64[finite])) / ref
    return rel <= tolerance, rel


@dataclass
class DeviceVerdict:
    kernel: str
    ok: bool
    message: str
    original_ms: float | None = None
    transformed_ms: float | None = None
    bytes_moved: int = 0
    arrays: list[dict] = field(default_factory=list)
    grid: tuple = ()
    block: tuple = ()
    new_grid: tuple = ()
    new_block: tuple = ()

    @property
    def speedup(self) -> float | None:
        if self.original_ms and self.transformed_ms:
            return self.original_ms / self.transformed_ms
        return None

    @property
    def slower(self) -> bool:
        """The transformed kernel ran slower than the original, beyond timing noise."""
        return self.speedup is not None and self.speedup < SLOWER_BELOW


TIMING_MS = 5000.0        # the most the timed repeats of one kernel take together
HOLD_MS = 2.0             # the device held busy ahead of each timed launch (module doc)
HOLD_ATTEMPTS = 4         # a launch timed again where the hold ended before it was queued
_HOLD_SOURCE = r'''
extern "C" __global__ void pc_hold(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

extern "C" __global__ void pc_empty()
{
}
'''


def held_times(driver, launch, repeats: int, before=None) -> list[float]:
    """The times (ms) of `repeats` calls of `launch(k)`, CUDA events around each, the
    device held busy for HOLD_MS ahead of the first event (the module's doc);
    `before(k)` runs ahead of the k-th, outside the timing and the hold."""
    from pycuda.compiler import SourceModule
    import numpy as np
    hold = compile_on_device(driver, SourceModule, _HOLD_SOURCE).get_function("pc_hold")
    times = []
    for k in range(repeats):
        if before:
            before(k)
        for attempt in range(HOLD_ATTEMPTS):
            # the hold, twice as long each time the host was not done queueing in it
            hold(np.uint64(int(HOLD_MS * 1e6) << attempt), grid=(1, 1), block=(1, 1, 1))
            start, end = driver.Event(), driver.Event()
            start.record()
            launch(k)
            end.record()
            early = start.query()       # the device reached the first event already
            end.synchronize()
            if not early:
                break
        times.append(start.time_till(end))
    return times


def launch_floor_ms(repeats: int = 20) -> float:
    """The median time (ms) of an empty kernel's launch timed as every kernel is
    (held_times): what any one launch costs however little it does."""
    from pycuda.compiler import SourceModule
    driver, _ = load_pycuda()
    with device_context(driver):
        empty = compile_on_device(driver, SourceModule, _HOLD_SOURCE).get_function("pc_empty")
        empty(grid=(1, 1), block=(1, 1, 1))
        return statistics.median(held_times(
            driver, lambda k: empty(grid=(1, 1), block=(1, 1, 1)), repeats))


def load_pycuda():
    """pycuda's driver and compiler, or an InputError saying what is missing."""
    try:
        import pycuda.driver as driver
        from pycuda.compiler import SourceModule
    except ImportError:
        raise InputError("--device needs pycuda: pip install 'polycoal[device]'") from None
    try:
        driver.init()
        if driver.Device.count() == 0:
            raise InputError("--device: no CUDA device found")
    except driver.Error as e:
        raise InputError(f"--device: no usable CUDA device ({e})") from None
    return driver, SourceModule


def numpy_dtype(np, ctype: str):
    return np.dtype(_NUMPY.get(ctype, "int32"))


@contextmanager
def device_context(driver):
    """A context on the first GPU, current inside the `with` and released after it."""
    context = driver.Device(0).make_context()
    try:
        yield context
    finally:
        context.pop()
        context.detach()


def device_source(declarations, kernels: list[str], prelude: tuple[str, ...] = ()) -> str:
    """A pycuda module: the prelude, the program's __device__ declarations and the
    kernels, extern "C" so that their names are their symbols (a `static` kernel made
    external: the module is looked up by name)."""
    return "\n".join([*prelude, *declarations, 'extern "C" {',
                      *(external(k) for k in kernels), "}"])


def external(kernel: str) -> str:
    """A kernel's definition without `static` in its declaration (before its body): an
    internal symbol cannot be found in the module."""
    head = kernel.find("{")
    if head < 0:
        return kernel
    return re.sub(r"\bstatic\b\s*", "", kernel[:head]) + kernel[head:]


def compile_on_device(driver, SourceModule, source: str, options=()):
    """A module of `source` for the current context's device."""
    major, minor = driver.Context.get_device().compute_capability()
    return SourceModule(source, no_extern_c=True, arch=f"sm_{major}{minor}",
                        options=list(options) or None)


class DeviceInputs:
    """A kernel's arguments on the device: its int values, random arrays (fresh on
    every upload, never zeros), launches, the comparison of two runs' arrays, and
    event-timed launches rotating input sets when the inputs fit in the L2 cache."""

    def __init__(self, driver, kernel, values: dict[str, int], arrays, seed=None):
        import numpy as np
        self.np, self.driver, self.kernel, self.arrays = np, driver, kernel, arrays
        self.rng = np.random.default_rng(random.SystemRandom().randrange(1 << 62)
                                         if seed is None else seed)
        self.bytes = sum(numpy_dtype(np, a.type).itemsize * a.size for a in arrays)
        self.sets = 1 if self.bytes >= 2 * L2_BYTES else \
            max(1, min(4, math.ceil(2 * L2_BYTES / max(self.bytes, 1))))
        self.scalars = {}
        for p in kernel.parameters:
            if not p.is_pointer:
                dt = numpy_dtype(np, p.type)
                self.scalars[p.name] = dt.type(values[p.name]) if p.name in values else \
                    dt.type(self.rng.uniform(0.5, 1.5))

    def fresh(self) -> dict:
        np, out = self.np, {}
        for a in self.arrays:
            dt = numpy_dtype(np, a.type)
            out[a.name] = ((self.rng.standard_normal(a.size) + 0.5).astype(dt)
                           if dt.kind == "f" else
                           self.rng.integers(1, 100, a.size).astype(dt))
        return out

    def upload(self, host: dict) -> dict:
        bufs = {}
        for name, arr in host.items():
            bufs[name] = self.driver.mem_alloc(max(arr.nbytes, 1))
            self.driver.memcpy_htod(bufs[name], arr)
        return bufs

    @staticmethod
    def free(bufs: dict) -> None:
        for buf in bufs.values():
            buf.free()

    def launch(self, fn, bufs, grid, block, extra=()) -> None:
        """`fn` on these buffers; grid None: `fn` launches itself (several stages)."""
        args = [bufs[p.name] if p.is_pointer else self.scalars[p.name]
                for p in self.kernel.parameters] + [self.np.int64(h) for h in extra]
        if grid is None:
            fn(*args)
        else:
            fn(*args, grid=tuple(map(int, grid)), block=tuple(map(int, block)))

    def compare(self, a: dict, b: dict, tolerance: float) -> tuple[bool, list[dict]]:
        """Whether every array of two runs agrees (relative L2 error of the finite
        elements; NaN and infinities at the same elements)."""
        np, results, ok = self.np, [], True
        for arr in self.arrays:
            dt = numpy_dtype(np, arr.type)
            x, y = np.empty(arr.size, dt), np.empty(arr.size, dt)
            self.driver.memcpy_dtoh(x, a[arr.name])
            self.driver.memcpy_dtoh(y, b[arr.name])
            good, rel = arrays_agree(np, x, y, tolerance)
            ok = ok and good
            results.append({"array": arr.name, "elements": arr.size, "rel_l2": rel,
                            "ok": good, "nan": [int(np.isnan(x).sum()),
                                                int(np.isnan(y).sum())]})
        return ok, results

    def timed(self, fn, grid, block, repeats: int, extra=(), before=None) -> float:
        """The median time (ms) of `repeats` launches after a warm-up, CUDA events
        around each; `before(bufs)` runs ahead of each launch, outside the timing."""
        driver = self.driver
        pool = [self.upload(self.fresh()) for _ in range(self.sets)]
        if before:
            before(pool[0])
        start, end = driver.Event(), driver.Event()
        start.record()
        self.launch(fn, pool[0], grid, block, extra)          # warm-up
        end.record()
        end.synchronize()
        # a launch of seconds (a naive product at 4096) is timed fewer times: the
        # repeats together take about TIMING_MS, at least one
        repeats = max(1, min(repeats, int(TIMING_MS / max(start.time_till(end), 1e-3))))
        times = held_times(
            driver, lambda k: self.launch(fn, pool[k % self.sets], grid, block, extra),
            repeats, (lambda k: before(pool[k % self.sets])) if before else None)
        for bufs in pool:
            self.free(bufs)
        return statistics.median(times)


def dynamic_shared(driver, fn, shared: int):
    """`fn` allowed `shared` bytes of dynamic shared memory (past the 48 KiB any launch
    may ask for, as the rewritten launch's cudaFuncSetAttribute does)."""
    if shared > SHARED_BYTES:
        fn.set_attribute(driver.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
    return fn


def validate_kernel_device(program: Program, new_program: Program, d: KernelDecision,
                           arguments: dict[str, int], repeats: int = 10,
                           tolerance: float = 1e-5, time_original: bool = True) -> DeviceVerdict:
    driver, SourceModule = load_pycuda()
    try:
        e = prepare(program, new_program, d, arguments)
    except NotRunnable as error:
        return DeviceVerdict(d.kernel, False, str(error))
    source = device_source(e.declarations, [e.original, e.transformed])
    with device_context(driver):
        inputs = DeviceInputs(driver, e.kernel, e.values, e.arrays)
        module = compile_on_device(driver, SourceModule, source, ["-O3"])
        original = module.get_function(e.original_name)
        stages = [(dynamic_shared(driver, module.get_function(st.kernel), st.shared),
                   st.grid, st.block, st.shared) for st in e.stages]

        def transformed(*args, grid=None, block=None):
            for fn, g, b, shared in stages:
                fn(*args, grid=g, block=b, shared=shared)

        host = inputs.fresh()
        bufs_o, bufs_n = inputs.upload(host), inputs.upload(host)
        inputs.launch(original, bufs_o, e.grid, e.block)
        inputs.launch(transformed, bufs_n, None, None, e.hidden)
        driver.Context.synchronize()
        ok, results = inputs.compare(bufs_o, bufs_n, max(tolerance, e.tolerance))
        inputs.free(bufs_o)
        inputs.free(bufs_n)
        t_original = inputs.timed(original, e.grid, e.block, repeats) \
            if time_original else None
        t_transformed = inputs.timed(transformed, None, None, repeats, e.hidden)
    message = "outputs match" if ok else "outputs differ: " + ", ".join(
        r["array"] + (f" (NaN: {r['nan'][0]} as written, {r['nan'][1]} transformed)"
                      if any(r.get("nan", ())) else "")
        for r in results if not r["ok"])
    return DeviceVerdict(d.kernel, ok, message, t_original, t_transformed, inputs.bytes,
                         results, e.grid, e.block, e.stages[-1].grid if len(e.stages) == 1
                         else tuple(st.grid for st in e.stages),
                         e.stages[-1].block if len(e.stages) == 1
                         else tuple(st.block for st in e.stages))


def time_kernel_device(program: Program, kernel, model, arguments: dict[str, int],
                       repeats: int = 10) -> float:
    """The median time (ms) of `repeats` launches of `kernel` as written, after a
    warm-up, at its first launch's geometry and `arguments` (the inputs and timing of
    validate_kernel_device): the time of a kernel polycoal keeps."""
    driver, SourceModule = load_pycuda()
    setup = setup_launch(program, kernel, model, arguments)
    entry = f"{kernel.name}__original"
    source = device_source(setup.declarations,
                           [rename_kernel(kernel.expanded, kernel.name, entry)])
    with device_context(driver):
        inputs = DeviceInputs(driver, kernel, setup.values, setup.arrays)
        module = compile_on_device(driver, SourceModule, source, ["-O3"])
        return inputs.timed(module.get_function(entry), setup.grid, setup.block, repeats)


def validate_device(program: Program, result: TransformResult, options: TransformOptions,
                    arguments: dict[str, int], repeats: int = 10,
                    time_original: bool = True) -> list[DeviceVerdict]:
    if any(d.action != "unchanged" for d in result.decisions):
        load_pycuda()

    def checked(p, new, d):
        """A launch the driver refuses (a block past the kernel's limits, say) is the
        kernel's failure, reported, not the command's."""
        driver, _ = load_pycuda()
        try:
            return validate_kernel_device(p, new, d, arguments, repeats,
                                          time_original=time_original)
        except driver.Error as error:
            return DeviceVerdict(d.kernel, False, f"the GPU refused it: {error}")
    return run_changed(
        program, result, options, checked,
        lambda d: DeviceVerdict(d.kernel, True, f"unchanged ({d.reason})"))
