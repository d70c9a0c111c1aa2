"""Whole CUDA programs on a GPU: the counterpart of cpu_program.CpuProgramRunner (the same
compile/run/syntax_errors interface, so the differential tester's judge runs either).

A program is built as written, `nvcc -arch=sm_90 -O2 --fmad=false` (no contraction of a
multiply and an add into an FMA, so that an output whose arithmetic is the original's,
operation for operation, gives the same bits as the original, as on the CPU path with
-ffp-contract=off), and run on the machine's GPU. There is no order to reverse on a GPU:
`reverse` runs the program again, where a race may show as another result. A program
that reports a CUDA error on its standard output ("launch error", the generated
programs' check of cudaGetLastError) fails with the class `cuda-error`.
"""

from __future__ import annotations

import os
import subprocess

from polycoal.runtime.cpu_program import CpuProgramRunner, RunResult

CUDA_ERROR_STATUS = 82                 # cpu_program.EXIT_STATUSES: "cuda-error"
NVCC_FLAGS = ("-arch=sm_90", "-O2", "--fmad=false", "-w")


class GpuProgramRunner:
    def __init__(self, nvcc: str | None = None, flags: tuple[str, ...] = NVCC_FLAGS):
        self.nvcc = nvcc or os.environ.get("NVCC", "nvcc")
        self.flags = tuple(flags)

    def _build(self, source: str, directory: str, name: str, *mode: str
               ) -> tuple[str | None, str]:
        src = os.path.join(directory, name + ".cu")
        with open(src, "w") as f:
            f.write(source)
        exe = os.path.join(directory, name)
        try:
            # kernels calling std::numeric_limits (constexpr host functions) are built
            # as such code is, with --expt-relaxed-constexpr (difftest runner's
            # relaxed_constexpr); any other program as written
            relaxed = ("--expt-relaxed-constexpr",) if "numeric_limits" in source else ()
            r = subprocess.run([self.nvcc, *self.flags, *relaxed, *mode, src, "-o", exe],
                               capture_output=True, text=True, errors="replace", timeout=600)
        except subprocess.TimeoutExpired:
            return None, "nvcc ran past 600 s"
        return (exe, "") if r.returncode == 0 else (None, r.stdout + r.stderr)

    def compile(self, source: str, directory: str, name: str = "program"
                ) -> tuple[str | None, str]:
        """(executable, "") or (None, nvcc's messages)."""
        return self._build(source, directory, name)

    def syntax_errors(self, source: str, directory: str) -> str | None:
        _, error = self._build(source, directory, "syntax", "-c")
        return error or None

    @staticmethod
    def run(exe: str, timeout: float = 60.0, reverse: bool = False) -> RunResult:
        r = CpuProgramRunner.run(exe, timeout)
        if r.failure is None and "launch error" in r.stdout:
            return RunResult(CUDA_ERROR_STATUS, r.stdout, r.stderr)
        return r
