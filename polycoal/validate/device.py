"""Validate and time original against transformed kernels on a GPU, through pycuda.

For every kernel polycoal changed: both versions are compiled with nvcc (through pycuda,
for the device's own architecture) in one module; every array argument is sized from
the access footprint and filled with fresh random values on every run (never zeros:
they hide unwritten outputs), so any element one version fails to write keeps its
random value and shows up as a difference. Both kernels run on identical copies with
their own geometries; every array is compared (relative L2 error, NaN never passes).
Timing: CUDA events around each launch after a warm-up, the median of the repeats;
when the inputs fit in the L2 cache several input sets are rotated, so that the
figures measure memory, not the cache.
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
from polycoal.decisions import KernelDecision, TransformOptions, TransformResult
from polycoal.validate.experiment import NotRunnable, prepare, run_changed

L2_BYTES = 64 << 20
SLOWER_BELOW = 0.95      # a speedup under this is reported as a slowdown (noise is ~2%)
_NUMPY = {"float": "float32", "double": "float64", "int": "int32", "unsigned": "uint32",
          "unsigned int": "uint32", "long": "int64", "long long": "int64", "short": "int16",
          "char": "int8", "unsigned char": "uint8", "size_t": "uint64", "int32_t": "int32",
          "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64"}


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


def validate_kernel_device(program: Program, new_program: Program, d: KernelDecision,
                           arguments: dict[str, int], repeats: int = 10,
                           tolerance: float = 1e-5, time_original: bool = True) -> DeviceVerdict:
    import numpy as np
    driver, SourceModule = load_pycuda()
    try:
        e = prepare(program, new_program, d, arguments)
    except NotRunnable as error:
        return DeviceVerdict(d.kernel, False, str(error))
    source = device_source(e.declarations, [e.original, e.transformed])
    rng = np.random.default_rng(random.SystemRandom().randrange(1 << 62))
    total_bytes = sum(numpy_dtype(np, a.type).itemsize * a.size for a in e.arrays)
    # input sets to rotate so that repeated launches do not run from the L2 cache
    sets = 1 if total_bytes >= 2 * L2_BYTES else \
        max(1, min(4, math.ceil(2 * L2_BYTES / max(total_bytes, 1))))
    scalars = {}
    for p in e.kernel.parameters:
        if not p.is_pointer:
            dt = numpy_dtype(np, p.type)
            scalars[p.name] = dt.type(e.values[p.name]) if p.name in e.values else \
                dt.type(rng.uniform(0.5, 1.5))

    def fresh():
        out = {}
        for a in e.arrays:
            dt = numpy_dtype(np, a.type)
            out[a.name] = ((rng.standard_normal(a.size) + 0.5).astype(dt) if dt.kind == "f"
                           else rng.integers(1, 100, a.size).astype(dt))
        return out

    with device_context(driver):
        module = compile_on_device(driver, SourceModule, source, ["-O3"])
        original = module.get_function(e.original_name)
        stages = [(module.get_function(st.kernel), st.grid, st.block) for st in e.stages]

        def transformed(*args, grid=None, block=None):
            for fn, g, b in stages:
                fn(*args, grid=g, block=b)

        def upload(host):
            bufs = {}
            for name, arr in host.items():
                bufs[name] = driver.mem_alloc(max(arr.nbytes, 1))
                driver.memcpy_htod(bufs[name], arr)
            return bufs

        def free(bufs):
            for buf in bufs.values():
                buf.free()

        def launch(fn, bufs, grid, block, extra=()):
            args = [bufs[p.name] if p.is_pointer else scalars[p.name]
                    for p in e.kernel.parameters] + [np.int64(h) for h in extra]
            if grid is None:
                fn(*args)
            else:
                fn(*args, grid=tuple(map(int, grid)), block=tuple(map(int, block)))

        host = fresh()
        bufs_o, bufs_n = upload(host), upload(host)
        launch(original, bufs_o, e.grid, e.block)
        launch(transformed, bufs_n, None, None, e.hidden)
        driver.Context.synchronize()
        results, ok = [], True
        for a in e.arrays:
            dt = numpy_dtype(np, a.type)
            x, y = np.empty(a.size, dt), np.empty(a.size, dt)
            driver.memcpy_dtoh(x, bufs_o[a.name])
            driver.memcpy_dtoh(y, bufs_n[a.name])
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            nan = bool(np.isnan(x64).any() or np.isnan(y64).any())
            ref = float(np.linalg.norm(x64)) or 1.0
            rel = float("nan") if nan else float(np.linalg.norm(x64 - y64)) / ref
            good = not nan and rel <= max(tolerance, e.tolerance)
            ok = ok and good
            results.append({"array": a.name, "elements": a.size, "rel_l2": rel, "ok": good})
        free(bufs_o)
        free(bufs_n)

        def timed(fn, grid, block, extra=()):
            pool = [upload(fresh()) for _ in range(sets)]
            launch(fn, pool[0], grid, block, extra)          # warm-up
            driver.Context.synchronize()
            times = []
            for k in range(repeats):
                start, end = driver.Event(), driver.Event()
                start.record()
                launch(fn, pool[k % sets], grid, block, extra)
                end.record()
                end.synchronize()
                times.append(start.time_till(end))
            for bufs in pool:
                free(bufs)
            return statistics.median(times)
        t_original = timed(original, e.grid, e.block) if time_original else None
        t_transformed = timed(transformed, None, None, e.hidden)
    message = "outputs match" if ok else "outputs differ: " + ", ".join(
        r["array"] for r in results if not r["ok"])
    return DeviceVerdict(d.kernel, ok, message, t_original, t_transformed, total_bytes,
                         results, e.grid, e.block, e.stages[-1].grid if len(e.stages) == 1
                         else tuple(st.grid for st in e.stages),
                         e.stages[-1].block if len(e.stages) == 1
                         else tuple(st.block for st in e.stages))


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
