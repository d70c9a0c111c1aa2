"""Run an instrumented kernel and collect its trace (`trace_kernel`), on the CPU or a GPU.

The kernel runs as its first launch site sets it up (validate/experiment.py: argument
values from the launch and --arg, arrays sized by their footprints and filled with
random values, int arrays of kernels with indirect references holding valid indices),
on the CPU through the harness of `validate --cpu` (templates/cpu_runtime.h) or on the
GPU through pycuda (validate/device.py). Both write the same 24-byte records
(templates/trace_runtime.h) into a buffer sized in advance so that it cannot overflow:

- whole blocks only, the first B in linear order (x fastest; the CPU runs only those,
  the GPU runs all and records those), at most SAMPLE_THREADS threads;
- per thread, the first C executions of each static id (dynamic ids 0 .. C-1);
- B * threads per block * static ids * C <= the record budget (--max-records).
Warps are always whole, since blocks are.
"""

from __future__ import annotations

import math
import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from typing import NamedTuple

from polycoal.analysis import KernelAnalysis
from polycoal.dynamic.instrument import Instrumented, NotInstrumentable, Site, instrument
from polycoal.frontend.program import Kernel, Program
from polycoal.templates import render_template
from polycoal.validate.cpu import build_harness, harness_arguments
from polycoal.validate.device import (compile_on_device, device_context, device_source,
                                      load_pycuda, numpy_dtype)
from polycoal.validate.experiment import LaunchSetup, NotRunnable, setup_launch

SAMPLE_THREADS = 8192            # threads traced at most (whole blocks)
DEFAULT_MAX_RECORDS = 2_000_000
DEFAULT_MAX_DYNAMIC = 256        # executions of one static id recorded per thread
_RECORD = struct.Struct("<iIIIq")


class Record(NamedTuple):
    sid: int
    dyn: int                     # the thread's execution number of this static id
    block: int                   # linear block id (x fastest)
    thread: int                  # linear thread id within the block
    offset: int                  # bytes from the start of the array


@dataclass(frozen=True)
class Sampling:
    blocks: int                  # traced: the first `blocks` blocks
    blocks_total: int
    threads_per_block: int
    cap: int                     # dynamic ids recorded per thread and static id
    capacity: int                # records the buffer holds

    @property
    def threads(self) -> int:
        return self.blocks * self.threads_per_block

    @property
    def threads_total(self) -> int:
        return self.blocks_total * self.threads_per_block


@dataclass
class KernelTrace:
    kernel: str
    analysis: KernelAnalysis
    executor: str                # "cpu" | "device"
    sites: list[Site] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    sampling: Sampling | None = None
    capped: bool = False         # some thread ran a static id more than `cap` times
    error: str | None = None     # why the kernel was not traced


def plan_sampling(grid, block, sites: int, max_records: int,
                  max_dynamic: int = DEFAULT_MAX_DYNAMIC) -> Sampling:
    """Blocks and per-thread dynamic ids to record within the budget (module doc)."""
    per_block = math.prod(block)
    total = math.prod(grid)
    per_thread = max(sites, 1)
    cap = min(max_dynamic, max_records // (per_block * per_thread))
    if cap < 1:
        raise NotRunnable(f"--max-records {max_records} cannot hold one execution of each of "
                          f"the {per_thread} references by one block of {per_block} threads")
    blocks = min(total, max(1, min(SAMPLE_THREADS // per_block,
                                   max_records // (per_block * per_thread * cap))))
    return Sampling(blocks, total, per_block, cap, blocks * per_block * per_thread * cap)


def parse_records(data: bytes) -> list[Record]:
    return [Record(*r) for r in _RECORD.iter_unpack(data)]


def _run_cpu(ins: Instrumented, kernel: Kernel, setup: LaunchSetup, sampling: Sampling,
             sync: bool, seed: int) -> tuple[list[Record], bool]:
    args, scalars = harness_arguments(kernel, setup.values)
    source = render_template(
        "cpu_trace.cpp.j2", name=ins.kernel, blocks=sampling.blocks, cap=sampling.cap,
        declarations=setup.declarations, kernel=ins.text, seed=seed, scalars=scalars,
        arrays=setup.arrays, records=sampling.capacity, grid=list(setup.grid),
        block=list(setup.block), sync=sync, args=args)
    with tempfile.TemporaryDirectory(prefix="polycoal-trace-") as tmp:
        exe, error = build_harness(tmp, source, ("cpu_runtime.h", "trace_runtime.h"))
        if exe is None:
            raise NotRunnable(f"the CPU trace harness does not compile: {error}")
        out = os.path.join(tmp, "trace.bin")
        try:
            run = subprocess.run([exe, out], capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise NotRunnable("the CPU run timed out: give smaller sizes with -D") from None
        if run.returncode != 0:
            raise NotRunnable(f"the CPU run failed (status {run.returncode}): "
                              f"{run.stderr.strip()[:200]}")
        with open(out, "rb") as f:
            records = parse_records(f.read())
    capped = run.stdout.split()[-1] != "0"
    return records, capped


def device_arguments(driver, np, rng, kernel: Kernel, setup: LaunchSetup) -> list:
    """The kernel's arguments on the GPU: its arrays uploaded with random values (int
    arrays of indirect references: valid indices), its int arguments from the setup,
    other scalars random."""
    buffers = []
    for a in setup.arrays:
        dt = numpy_dtype(np, a.type)
        host = (rng.integers(0, a.index_bound, a.size) if a.index_bound
                else rng.uniform(-8, 8, a.size)).astype(dt)
        buffers.append(driver.to_device(host))
    arrays = iter(buffers)
    return [next(arrays) if p.is_pointer else numpy_dtype(np, p.type).type(
        setup.values.get(p.name, rng.uniform(0.5, 1.5))) for p in kernel.parameters]


def launch_once(driver, module, name: str, args: list, setup: LaunchSetup) -> None:
    module.get_function(name)(*args, grid=tuple(map(int, setup.grid)),
                              block=tuple(map(int, setup.block)))
    driver.Context.synchronize()


def _run_device(ins: Instrumented, kernel: Kernel, setup: LaunchSetup, sampling: Sampling,
                seed: int) -> tuple[list[Record], bool]:
    import numpy as np
    driver, SourceModule = load_pycuda()
    runtime = (resources.files("polycoal.templates") / "trace_runtime.h").read_text()
    source = device_source(setup.declarations, [ins.text],
                           (f"#define PC_TRACE_BLOCKS {sampling.blocks}u",
                            f"#define PC_TRACE_CAP {sampling.cap}u", runtime))
    rng = np.random.default_rng(seed)
    with device_context(driver):
        module = compile_on_device(driver, SourceModule, source)
        args = device_arguments(driver, np, rng, kernel, setup)
        records = driver.mem_alloc(max(sampling.capacity, 1) * _RECORD.size)
        for name, value in (("pc_trace_records", np.uint64(int(records))),
                            ("pc_trace_count", np.uint64(0)), ("pc_trace_capped", np.uint32(0))):
            driver.memcpy_htod(module.get_global(name)[0], value)
        launch_once(driver, module, ins.kernel, args, setup)
        count, capped = np.zeros(1, np.uint64), np.zeros(1, np.uint32)
        driver.memcpy_dtoh(count, module.get_global("pc_trace_count")[0])
        driver.memcpy_dtoh(capped, module.get_global("pc_trace_capped")[0])
        data = np.empty(int(count[0]) * _RECORD.size, np.uint8)
        driver.memcpy_dtoh(data, records)
    return parse_records(data.tobytes()), bool(capped[0])


def trace_kernel(ka: KernelAnalysis, program: Program, arguments: dict[str, int],
                 executor: str = "cpu", max_records: int = DEFAULT_MAX_RECORDS,
                 seed: int = 1) -> KernelTrace:
    """Instrument, run and collect one kernel; a KernelTrace with `error` set when the
    kernel cannot be traced."""
    result = KernelTrace(ka.kernel.name, ka, executor)
    try:
        if ka.model is None:
            raise NotInstrumentable(f"kernel '{ka.kernel.name}' does not parse: "
                                    f"{ka.kernel.unsupported or 'syntax error'}")
        ins = instrument(ka, program)
        setup = setup_launch(program, ka.kernel, ka.model, arguments)
        result.sites, result.grid, result.block = ins.sites, setup.grid, setup.block
        sampling = plan_sampling(setup.grid, setup.block, len(ins.sites), max_records)
        result.sampling = sampling
        sync = ka.model.synchronises
        run = _run_device(ins, ka.kernel, setup, sampling, seed) if executor == "device" \
            else _run_cpu(ins, ka.kernel, setup, sampling, sync, seed)
        result.records, result.capped = run
    except (NotInstrumentable, NotRunnable) as error:
        result.error = str(error)
    return result


def trace_program(analyses: list[KernelAnalysis], program: Program, arguments: dict[str, int],
                  executor: str = "cpu", max_records: int = DEFAULT_MAX_RECORDS,
                  seed: int = 1) -> list[KernelTrace]:
    return [trace_kernel(ka, program, arguments, executor, max_records, seed)
            for ka in analyses]
