"""Run one generated program through polycoal and judge the outputs.

For each program: `polycoal transform` with every option set of OPTION_SETS (in-process,
through the command line's own entry point, so that exit statuses and diagnostics are
the user's; a Python exception is a failure), outputs deduplicated; each distinct output
compiled with nvcc for sm_90 and run on the CPU (polycoal.runtime.cpu_program) beside
the original; checksums compared with the tolerance of each array (generator.Check);
kernels the generator marked must-stay-unchanged compared byte for byte.

Failure classes:
  traceback:<Exception>@<file>:<function>   an uncaught exception inside transform
  validation-rejected   exit 1 with "validation failed": polycoal generated a kernel its
                        own translation validation rejected (the original is kept)
  exit-<n>              any other nonzero exit (2: polycoal refused a valid program)
  transform-timeout     transform ran past its time limit
  nvcc-error            nvcc rejects an output (the original compiles)
  cpu-compile-error     g++ rejects an output on the CPU path while nvcc accepts it
  runtime:<what>        the output fails on the CPU: invalid-launch (a launch CUDA would
                        refuse), memory-fault / out-of-bounds-write (outside an
                        allocation), deadlock (a barrier not every thread reaches),
                        timeout, crash
  mismatch              checksums differ beyond the array's tolerance
  race                  the output's checksums change when blocks and threads run in the
                        reverse order (POLYCOAL_CPU_ORDER=reverse): an order-dependent
                        result, which the original (race-free) does not have
  changed-racy          a kernel that had to stay byte-identical (racy, aliasing) changed
  generator-invalid     the ORIGINAL does not compile or run cleanly (a tester bug; not
                        counted against polycoal)
"""

from __future__ import annotations

import os
import tempfile
import time

from polycoal.difftest.generator import GeneratedProgram, generate
from polycoal.difftest.judging import (OPTION_SETS, RUN_TIMEOUT, TRANSFORM_TIMEOUT, Failure,
                                       Nvcc, ProgramResult, TransformOutcome, _errors,
                                       clear_read_cache, compare, kept_unchanged,
                                       parse_checks, run_transform, run_verdict)
from polycoal.runtime.cpu_program import CpuProgramRunner


class Runner:
    """Judges programs; `cpu` is shared (its runtime object is built once)."""

    def __init__(self, cpu: CpuProgramRunner, nvcc: Nvcc | None, options: list[str] | None = None,
                 transform_timeout: int = TRANSFORM_TIMEOUT, judge_outputs: bool = True,
                 constructs=None, project: bool = False):
        # False: only the transforms are judged, and the original only has to be valid
        # C++ (the shrinker's quick mode for transform-level classes)
        self.judge_outputs = judge_outputs
        self.constructs = constructs         # generator.generate's: None, "mix", names
        self.project = project               # programs as projects (project.py)
        self.cpu = cpu
        self.nvcc = nvcc
        self.options = options or list(OPTION_SETS)
        self.transform_timeout = transform_timeout

    def run_seed(self, seed: int, family: str | None = None) -> ProgramResult:
        return self.run_program(generate(seed, family, self.constructs, self.project))

    def run_program(self, program: GeneratedProgram, transformed: dict[str, str] | None = None
                    ) -> ProgramResult:
        """Judge `program`. `transformed` (option -> output text) replaces polycoal, for
        testing the judge itself."""
        result = ProgramResult(program.seed, program.family, program.variant, program.shape,
                               source=program.source, constructs=list(program.constructs))
        with tempfile.TemporaryDirectory(prefix="polycoal-difftest-") as tmp:
            if program.project is not None:
                from polycoal.difftest.project import judge_project
                judge_project(self, program, result, tmp, transformed)
            else:
                self._run(program, result, tmp, transformed)
        return result

    def _time(self, result: ProgramResult, key: str, start: float) -> None:
        result.seconds[key] = result.seconds.get(key, 0.0) + time.monotonic() - start

    def _run(self, program: GeneratedProgram, result: ProgramResult, tmp: str,
             transformed: dict[str, str] | None) -> None:
        path = os.path.join(tmp, f"{program.family}_{program.seed}.cu")
        with open(path, "w") as f:
            f.write(program.source)
        for name, text in program.files.items():      # headers beside it (cxx: header)
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        found = self._original(program, result, tmp)
        if found is not None:
            self._transforms_and_outputs(program, result, tmp, transformed, path, *found)

    def _original(self, program: GeneratedProgram, result: ProgramResult, tmp: str
                  ) -> tuple[dict[str, tuple[float, float]], dict] | None:
        """The original's checksums (run on the CPU) in the usual order and with blocks
        and threads in the reverse order, or None with a generator-invalid failure
        recorded. Without judge_outputs, only its syntax is checked ({}, {}). A race-free
        original must give the same in both orders; a racy one (the kernels that must
        stay as they are, or run as they are where a run-time check fails) may not, and
        its output is then held to the original's own result in each order."""
        t = time.monotonic()
        if not self.judge_outputs:
            error = self.cpu.syntax_errors(program.source, tmp)
            self._time(result, "gxx", t)
            if error is None:
                return {}, {}
            result.failures.append(Failure("generator-invalid", [], "the original is not "
                                           "valid C++:\n" + _errors(error)))
            return None
        exe, error = self.cpu.compile(program.source, tmp, "original")
        self._time(result, "gxx", t)
        if exe is None:
            result.failures.append(Failure("generator-invalid", [], "the original does not "
                                           "compile on the CPU path:\n" + _errors(error)))
            return None
        t = time.monotonic()
        ref = self.cpu.run(exe, RUN_TIMEOUT)
        self._time(result, "run", t)
        if ref.failure:
            result.failures.append(Failure("generator-invalid", [], f"the original fails on "
                                           f"the CPU ({ref.failure}): {ref.stderr[-1500:]}"))
            return None
        want = parse_checks(ref.stdout)
        if set(want) != set(program.checks):
            result.failures.append(Failure("generator-invalid", [], "the original prints "
                                           f"checksums of {sorted(want)}"))
            return None
        t = time.monotonic()
        rev = self.cpu.run(exe, RUN_TIMEOUT, reverse=True)
        self._time(result, "run", t)
        if program.must_keep and not rev.failure:
            return want, parse_checks(rev.stdout)
        # the generator's other programs are race-free: the reverse order gives the same
        diff = compare(program.checks, want, parse_checks(rev.stdout)) if \
            not rev.failure else rev.failure
        if diff:
            result.failures.append(Failure("generator-invalid", [], "the original's "
                                           f"result depends on the order: {diff}"))
            return None
        return want, want

    def _transforms_and_outputs(self, program: GeneratedProgram, result: ProgramResult,
                                tmp: str, transformed: dict[str, str] | None, path: str,
                                want: dict[str, tuple[float, float]],
                                want_reverse: dict[str, tuple[float, float]]) -> None:
        # transform with every option set
        outputs: dict[str, list[str]] = {}
        failures: dict[tuple[str, str], Failure] = {}

        def fail(cls: str, option: str, message: str, output: str | None = None):
            key = (cls, message.splitlines()[0] if message else "")
            if key in failures:
                failures[key].options.append(option)
            else:
                failures[key] = Failure(cls, [option], message, output)
            result.outcomes[option] = cls

        clear_read_cache()
        for option in self.options:
            t = time.monotonic()
            if transformed is not None:
                text = transformed.get(option)
                outcome = TransformOutcome(0, text, "") if text is not None else \
                    TransformOutcome(None, None, "", None)
                if text is None:
                    continue
            else:
                outcome = run_transform(path, os.path.join(tmp, "out.cu"), OPTION_SETS[option],
                                        self.transform_timeout)
            self._time(result, "transform", t)
            if outcome.cls:
                fail(outcome.cls, option, outcome.detail, outcome.text)
                continue
            outputs.setdefault(outcome.text, []).append(option)
        clear_read_cache()
        result.distinct_outputs = len([t for t in outputs if t != program.source])
        if not self.judge_outputs:
            result.failures.extend(failures.values())
            return
        # judge each distinct output
        original_nvcc: list[str | None] = []
        for n, (text, options) in enumerate(outputs.items()):
            for o in options:
                result.outcomes[o] = "unchanged" if text == program.source else "changed"
            if text == program.source:
                continue
            if program.must_keep:
                changed = False
                headers = "".join(program.files.values())   # never written by polycoal
                for o in options:
                    why = kept_unchanged(headers + program.source, headers + text,
                                         program.kept_under(o))
                    if why:
                        fail("changed-racy", o, why, text)
                        changed = True
                if changed:
                    continue
            name = f"out{n}"
            if self.nvcc is not None:
                t = time.monotonic()
                error = self.nvcc.check(text, tmp, name)
                self._time(result, "nvcc", t)
                if error is not None:
                    if not original_nvcc:
                        t = time.monotonic()
                        original_nvcc.append(self.nvcc.check(program.source, tmp, "orig"))
                        self._time(result, "nvcc", t)
                    if original_nvcc[0] is not None:
                        result.failures.append(Failure(
                            "generator-invalid", options, "nvcc rejects the original:\n" +
                            original_nvcc[0]))
                        return
                    for o in options:
                        fail("nvcc-error", o, error, text)
                    continue
            t = time.monotonic()
            exe, error = self.cpu.compile(text, tmp, name)
            self._time(result, "gxx", t)
            if exe is None:
                for o in options:
                    fail("cpu-compile-error", o, _errors(error), text)
                continue
            verdict = run_verdict(self.cpu, exe, program.checks, want, want_reverse,
                                  lambda stage, t: self._time(result, stage, t))
            if verdict:
                for o in options:
                    fail(verdict[0], o, verdict[1], text)
        result.failures.extend(failures.values())

