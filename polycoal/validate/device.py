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
from dataclasses import dataclass, field

from polycoal.diagnostics import InputError
from polycoal.frontend.cexpr import evaluate
from polycoal.frontend.program import Program
from polycoal.transform import KernelDecision, TransformOptions, TransformResult
from polycoal.validate.cpu import _C_TYPES, _footprint, _rename_kernel

L2_BYTES = 64 << 20
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


def _new_geometry(d: KernelDecision, grid, block, values: dict[str, int]):
    if d.action == "permuted":
        src = d.permutation.source
        return (tuple(grid["xyz".index(src[n])] for n in "xyz"),
                tuple(block["xyz".index(src[n])] for n in "xyz"))
    g = d.generated
    launch_values = dict(values)
    for k, a in enumerate("xyz"):
        launch_values[f"gridDim_{a}"] = grid[k]
        launch_values[f"blockDim_{a}"] = block[k]
        launch_values[f"nthreads_{a}"] = grid[k] * block[k]
    new_grid = []
    limits = {"x": 2147483647, "y": 65535, "z": 65535}
    for r in g.ranges:
        lo = evaluate(r.host_lo, lambda n, m: launch_values.get(n))
        hi = evaluate(r.host_hi, lambda n, m: launch_values.get(n))
        if lo is None or hi is None:
            raise InputError(f"cannot evaluate the range of axis {r.axis} ({r.host_lo}.."
                             f"{r.host_hi})")
        extent = int(hi) - int(lo) + 1
        b = g.block["xyz".index(r.axis)]
        new_grid.append(max(1, min(-(-extent // b), limits[r.axis])))
    new_grid += [1] * (3 - len(new_grid))
    return tuple(new_grid), tuple(g.block)


def validate_kernel_device(program: Program, new_program: Program, d: KernelDecision,
                           arguments: dict[str, int], repeats: int = 10,
                           tolerance: float = 1e-5) -> DeviceVerdict:
    import numpy as np
    driver, SourceModule = load_pycuda()
    kernel = program.kernel(d.kernel)
    model = d.analysis.model
    launch = program.launches_of(kernel.name)[0]
    if launch.block_shape is None or launch.grid_shape is None:
        return DeviceVerdict(kernel.name, False, "the launch has no compile-time geometry: "
                             "give the sizes with -D")
    values = {**{k: int(v) for k, v in launch.constant_arguments.items()
                 if isinstance(v, (int, float))}, **arguments}
    pointer_types = [p.type for p in kernel.parameters if p.is_pointer]
    if any(t not in _NUMPY for t in pointer_types):
        return DeviceVerdict(kernel.name, False, "an array of a type the runner lacks")
    for p in kernel.parameters:
        if not p.is_pointer and p.type not in ("float", "double") and p.name not in values:
            values[p.name] = 1
    new_grid, new_block = _new_geometry(d, launch.grid_shape, launch.block_shape, values)
    decls = [g.expanded for g in program.globals.values() if g.expanded]
    decls += [f.expanded for f in program.device_functions.values() if f.expanded]
    source = "\n".join(decls + [
        'extern "C" ' + _rename_kernel(kernel.expanded, kernel.name, "pc_original"),
        'extern "C" ' + _rename_kernel(new_program.kernel(kernel.name).expanded, kernel.name,
                                       "pc_transformed")])
    device = driver.Device(0)
    context = device.make_context()
    try:
        major, minor = device.compute_capability()
        module = SourceModule(source, no_extern_c=True, arch=f"sm_{major}{minor}",
                              options=["-O3"])
        original = module.get_function("pc_original")
        transformed = module.get_function("pc_transformed")
        rng = np.random.default_rng(random.SystemRandom().randrange(1 << 62))
        arrays = []
        for p in kernel.parameters:
            if p.is_pointer:
                size = _footprint(model, p.name, values)
                arrays.append((p.name, np.dtype(_NUMPY[p.type]), size))
        total_bytes = sum(dt.itemsize * n for _, dt, n in arrays)
        sets = max(1, min(4, math.ceil(2 * L2_BYTES / max(total_bytes, 1)))) \
            if total_bytes < 2 * L2_BYTES else 1

        def fresh():
            host = {}
            for name, dt, n in arrays:
                if dt.kind == "f":
                    host[name] = (rng.standard_normal(n) + 0.5).astype(dt)
                else:
                    host[name] = rng.integers(1, 100, n).astype(dt)
            return host

        def scalars():
            out = {}
            for p in kernel.parameters:
                if not p.is_pointer:
                    dt = np.dtype(_NUMPY.get(p.type, "int32"))
                    out[p.name] = dt.type(values[p.name]) if p.name in values else \
                        dt.type(rng.uniform(0.5, 1.5))
            return out
        scalar = scalars()

        def args_for(buffers, hidden=()):
            out = []
            for p in kernel.parameters:
                out.append(buffers[p.name] if p.is_pointer else scalar[p.name])
            return out + [np.int64(h) for h in hidden]
        hidden = []
        if d.action == "restructured":
            g = launch.grid_shape
            b = launch.block_shape
            lv = {}
            for k, a in enumerate("xyz"):
                lv.update({f"gridDim_{a}": g[k], f"blockDim_{a}": b[k],
                           f"nthreads_{a}": g[k] * b[k]})
            hidden = [lv[h] for h in d.generated.hidden]

        def upload(host):
            bufs = {}
            for name, arr in host.items():
                bufs[name] = driver.mem_alloc(max(arr.nbytes, 1))
                driver.memcpy_htod(bufs[name], arr)
            return bufs

        def run(fn, bufs, grid, block, extra=()):
            fn(*args_for(bufs, extra), grid=tuple(int(v) for v in grid),
               block=tuple(int(v) for v in block))

        # correctness on fresh inputs
        host = fresh()
        bufs_o, bufs_n = upload(host), upload(host)
        run(original, bufs_o, launch.grid_shape, launch.block_shape)
        run(transformed, bufs_n, new_grid, new_block, hidden)
        driver.Context.synchronize()
        results, ok = [], True
        for name, dt, n in arrays:
            a = np.empty(n, dt)
            b = np.empty(n, dt)
            driver.memcpy_dtoh(a, bufs_o[name])
            driver.memcpy_dtoh(b, bufs_n[name])
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            nan = bool(np.isnan(a64).any() or np.isnan(b64).any())
            ref = float(np.linalg.norm(a64)) or 1.0
            rel = float(np.linalg.norm(a64 - b64)) / ref if not nan else float("nan")
            good = not nan and rel <= tolerance
            ok = ok and good
            results.append({"array": name, "elements": n, "rel_l2": rel, "ok": good})
        for bufs in (bufs_o, bufs_n):
            for buf in bufs.values():
                buf.free()

        # timing, on rotated input sets
        def timed(fn, grid, block, extra=()):
            pool = [upload(fresh()) for _ in range(sets)]
            run(fn, pool[0], grid, block, extra)            # warm-up
            driver.Context.synchronize()
            times = []
            for k in range(repeats):
                start, end = driver.Event(), driver.Event()
                start.record()
                run(fn, pool[k % sets], grid, block, extra)
                end.record()
                end.synchronize()
                times.append(start.time_till(end))
            for bufs in pool:
                for buf in bufs.values():
                    buf.free()
            return statistics.median(times)
        t_orig = timed(original, launch.grid_shape, launch.block_shape)
        t_new = timed(transformed, new_grid, new_block, hidden)
    finally:
        context.pop()
        context.detach()
    message = "outputs match" if ok else "outputs differ: " + ", ".join(
        r["array"] for r in results if not r["ok"])
    return DeviceVerdict(kernel.name, ok, message, t_orig, t_new, total_bytes, results,
                         launch.grid_shape, launch.block_shape, new_grid, new_block)


def validate_device(program: Program, result: TransformResult, options: TransformOptions,
                    arguments: dict[str, int], repeats: int = 10) -> list[DeviceVerdict]:
    from polycoal.frontend import read_program
    changed = [d for d in result.decisions if d.action != "unchanged"]
    if changed:
        load_pycuda()
    new_program = read_program(program.path, options.preprocessor, text=result.text) \
        if changed else None
    out = []
    for d in result.decisions:
        if d.action == "unchanged":
            out.append(DeviceVerdict(d.kernel, True, f"unchanged ({d.reason})"))
        else:
            out.append(validate_kernel_device(program, new_program, d, arguments, repeats))
    return out
