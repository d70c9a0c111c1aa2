"""`polycoal place --device`: the measured effect of each kernel's placement.

Each placed kernel runs on the GPU beside the kernel as written, as its first launch
site sets it up (validate/experiment.setup_launch: the launch's values and --arg, arrays
sized by their footprints and filled with fresh random values), both in one module
compiled for the device: the placed kernel as rewritten, its `__constant__` arrays
declared before it and filled from the launch's array (cudaMemcpyToSymbol's copy, a
device-to-device copy into the symbol) before each of its launches. Every array of the
two runs is compared (validate/device.DeviceInputs.compare). Times: the median of
event-timed launches after a warm-up, the fill outside them and timed apart (its median
over as many copies); the placed kernel's effective time adds the fill times the share of
launches that fill it (the model's fill_share: a copy kept while its source is
unchanged is filled once for many launches).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from polycoal.frontend.program import Program
from polycoal.validate.device import (SLOWER_BELOW, DeviceInputs, compile_on_device,
                                      device_context, device_source, load_pycuda,
                                      numpy_dtype)
from polycoal.validate.experiment import NotRunnable, rename_kernel, setup_launch
from polycoal.codegen.placement import symbol

TOLERANCE = 1e-5          # a placement changes no arithmetic: the results are the same


@dataclass
class PlacementMeasure:
    kernel: str
    ok: bool                       # ran, and the outputs agree
    message: str
    original_ms: float | None = None
    placed_ms: float | None = None
    fill_ms: float = 0.0           # one fill of its constant arrays
    fill_share: float = 1.0        # of its launches, those that fill (the model's)
    arrays: list[dict] = field(default_factory=list)

    @property
    def effective_ms(self) -> float | None:
        return None if self.placed_ms is None else \
            self.placed_ms + self.fill_ms * self.fill_share

    @property
    def speedup(self) -> float | None:
        if self.original_ms and self.effective_ms:
            return self.original_ms / self.effective_ms
        return None

    @property
    def slower(self) -> bool:
        return self.speedup is not None and self.speedup < SLOWER_BELOW


@dataclass
class Measurement:
    """What running one placed kernel beside its kernel as written needs."""

    setup: object                  # validate/experiment.LaunchSetup
    source: str                    # the module: declarations, both kernels
    names: tuple[str, str]         # the kernel as written, placed


def measurement(program: Program, placement, arguments: dict[str, int]) -> Measurement:
    """The module and launch of one applied KernelPlacement (NotRunnable: why not)."""
    from polycoal.model.extract import extract_model
    kernel = program.kernel(placement.kernel)
    setup = setup_launch(program, kernel, extract_model(kernel, program), arguments)
    names = (f"{kernel.name}__original", f"{kernel.name}__placed")
    placed = placement.placed_name or kernel.name
    source = device_source(setup.declarations + [placement.declarations], [
        rename_kernel(kernel.expanded, kernel.name, names[0]),
        rename_kernel(placement.written, placed, names[1])])
    return Measurement(setup, source, names)


def measure_kernel(program: Program, placement, arguments: dict[str, int],
                   repeats: int = 10) -> PlacementMeasure:
    """One applied KernelPlacement run and timed beside its kernel as written."""
    driver, SourceModule = load_pycuda()
    kernel = program.kernel(placement.kernel)
    share = max([a.fill_share for a in placement.arrays
                 if a.reads.array in placement.constants], default=0.0)
    try:
        m = measurement(program, placement, arguments)
    except NotRunnable as error:
        return PlacementMeasure(kernel.name, False, f"not run: {error}", fill_share=share)
    setup, names = m.setup, m.names
    with device_context(driver):
        inputs = DeviceInputs(driver, kernel, setup.values, setup.arrays)
        module = compile_on_device(driver, SourceModule, m.source, ["-O3"])
        original, placed = (module.get_function(n) for n in names)
        sizes = {a.name: (a.size, numpy_dtype(inputs.np, a.type).itemsize)
                 for a in setup.arrays}
        copies = []
        for array, (first, last) in placement.constants.items():
            target, room = module.get_global(symbol(kernel.name, array))
            elements, size = sizes[array]
            last = min(last, elements - 1, room // size - 1)
            if last >= first:
                copies.append((int(target) + first * size, array, first * size,
                               (last - first + 1) * size))

        def fill(bufs):
            for target, array, offset, length in copies:
                driver.memcpy_dtod(target, int(bufs[array]) + offset, length)

        host = inputs.fresh()
        bufs_o, bufs_p = inputs.upload(host), inputs.upload(host)
        inputs.launch(original, bufs_o, setup.grid, setup.block)
        fill(bufs_p)
        inputs.launch(placed, bufs_p, setup.grid, setup.block)
        driver.Context.synchronize()
        ok, results = inputs.compare(bufs_o, bufs_p, TOLERANCE)
        fills = []
        for _ in range(repeats if copies else 0):
            start, end = driver.Event(), driver.Event()
            start.record()
            fill(bufs_p)
            end.record()
            end.synchronize()
            fills.append(start.time_till(end))
        inputs.free(bufs_o)
        inputs.free(bufs_p)
        t_original = inputs.timed(original, setup.grid, setup.block, repeats)
        t_placed = inputs.timed(placed, setup.grid, setup.block, repeats, before=fill)
    message = "outputs match" if ok else "outputs differ: " + ", ".join(
        r["array"] for r in results if not r["ok"])
    return PlacementMeasure(kernel.name, ok, message, t_original, t_placed,
                            statistics.median(fills) if fills else 0.0, share, results)


def measure_placement(program: Program, result, arguments: dict[str, int],
                      repeats: int = 10) -> list[PlacementMeasure]:
    """Every applied placement of `result` (placement.ProgramPlacement) measured; a
    launch the driver refuses is that kernel's failure, reported."""
    out = []
    for k in result.kernels:
        if not k.applied:
            continue
        driver, _ = load_pycuda()
        try:
            out.append(measure_kernel(program, k, arguments, repeats))
        except driver.Error as error:
            out.append(PlacementMeasure(k.kernel, False, f"the GPU refused it: {error}"))
    return out
