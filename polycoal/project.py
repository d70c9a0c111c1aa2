"""Whole projects: `polycoal transform -p BUILD_DIR -o OUT_DIR`.

The compile database (BUILD_DIR/compile_commands.json, as CMake's
CMAKE_EXPORT_COMPILE_COMMANDS and Bear write it: entries with `directory`, `file`, and
`command` or `arguments`) names every translation unit and its command line. Each entry
that compiles CUDA (a `.cu` file, or any C/C++ file after `-x cu`) is a `Unit`: its
command read by polycoal/build/command.py (`-I/-isystem`, `-D`, `-U`, `-std`, `-include`,
`-imacros`, response files), relative paths resolved against the entry's `directory`. Each unit is
transformed as one file is (`transform_program`), in worker processes (`--jobs`), and
every source whose text changed is written to OUT_DIR at its path relative to the
sources' common root (`--root`). Headers are never written: a kernel in a header is
transformed as a copy in each unit that launches it, as in single-file mode.

What the project adds to the per-file pipeline:

- Kernels that cross units. A kernel defined in one unit and launched in another,
  through a prototype, is one the per-file pipeline cannot see whole: where it is
  defined it has no launch (code `no-launch`), and where it is launched it has no
  definition. Each unit is first transformed alone; where its own unit launches such a
  kernel too and changed it, that unit is transformed again with the kernel kept
  (`keep_marker`). Then polycoal/cross_unit.py decides the kernel on the units read as
  one program and makes its edits (the kernel where it is defined, the launches where
  they are, declarations of the new kernels they run) on those texts; where it cannot,
  the kernel is left as written (code `launched-in-other-unit`, with the reason and
  where it is launched).
- Internal linkage. Two units that include one header may each add a transformed copy
  of its kernel (`row_scale__pc_float`); as in single-file mode, every `__global__`
  function polycoal adds to a unit is `static` (frontend/lower.py, the run-time support's
  templates), so that the units link.
- One source, several entries (two targets with different `-D`): each entry is
  transformed with its own flags; identical results are written once, different ones
  as variants beside each other, `name.<target>.cu` (the target from CMake's object
  path, `CMakeFiles/<target>.dir/...`, else `entry<N>`), and the report says which
  entry compiles which file.

The functions here are pure (plain data in, plain data out) except `read_database`,
`transform_unit` (the worker), `run_units`, `Progress`, `check_out_dir`, `check_writes`,
`write_outputs` and `transform_project`, which wires them for the command line.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, replace

from polycoal.build.command import parse_command
from polycoal.diagnostics import Diagnostic, InputError, Location, require_usable
from polycoal.frontend.kernel_heads import KernelRecord, global_functions
from polycoal.frontend.preprocess import DEFAULT_STD, PreprocessorOptions

SCHEMA = "polycoal-project"
SCHEMA_VERSION = 1
OTHER_UNIT = "launched-in-other-unit"         # the reason code of a kernel crossing units
# what the per-file pipeline says of a kernel launched only elsewhere, or marked
_LAUNCHES_ELSEWHERE = ("no-launch", "used-elsewhere")
_STATUS_WORDS = {0: "ok", 1: "failed validation", 2: "unusable input", 3: "internal error"}


# --------------------------------------------------------------------------- the database

@dataclass(frozen=True)
class Unit:
    """One entry of the compile database that compiles CUDA."""

    entry: int                          # its index in compile_commands.json (from 0)
    source: str                         # absolute, normalised
    directory: str
    object: str | None                  # the entry's `output`, or its -o (absolute)
    preprocessor: PreprocessorOptions   # -include files named from `directory` if there
    target: str = ""                    # CMake's target, from the object's path


def database_path(build: str) -> str:
    """BUILD_DIR/compile_commands.json, or `build` itself when it names a file."""
    return build if os.path.isfile(build) else os.path.join(build, "compile_commands.json")


def read_database(build: str) -> tuple[str, list]:
    """(its path, the entries) of the compile database of `build`; InputError when it
    cannot be read or is not a list of objects."""
    path = database_path(build)
    if not os.path.exists(path):
        hint = "" if os.path.isdir(build) else f" ({build} does not exist)"
        raise InputError(f"{path}: no compile database{hint}; CMake writes one with "
                         "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON, Bear for Make (bear -- make)")
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from error
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a compile database: {error}") from error
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"{path}: not a compile database: expected a JSON list of objects")
    return path, entries


def _arguments(entry: dict, where: str) -> list[str]:
    if isinstance(entry.get("arguments"), list) and \
            all(isinstance(a, str) for a in entry["arguments"]):
        return list(entry["arguments"])
    if isinstance(entry.get("command"), str):
        try:
            return shlex.split(entry["command"])
        except ValueError as error:
            raise InputError(f"{where}: cannot split its command: {error}") from None
    raise InputError(f"{where}: neither 'arguments' (a list of strings) nor 'command'")


def _absolute(path: str, directory: str) -> str:
    return os.path.normpath(os.path.join(directory, path))


def _response_files_absolute(args: list[str], directory: str) -> list[str]:
    """`@file` and `--options-file file[,file]` named from `directory` (nvcc reads them
    from the directory it runs in; polycoal runs elsewhere)."""
    out, k = [], 0
    while k < len(args):
        arg = args[k]
        if arg.startswith("@") and len(arg) > 1:
            out.append("@" + _absolute(arg[1:], directory))
        elif arg in ("-optf", "--options-file") and k + 1 < len(args):
            out += [arg, ",".join(_absolute(p, directory) for p in args[k + 1].split(","))]
            k += 1
        elif arg.split("=", 1)[0] in ("-optf", "--options-file") and "=" in arg:
            name, value = arg.split("=", 1)
            out.append(name + "=" + ",".join(_absolute(p, directory) for p in value.split(",")))
        else:
            out.append(arg)
        k += 1
    return out


_CMAKE_OBJECT = re.compile(r"(?:^|/)CMakeFiles/([^/]+)\.dir/")


def target_of(object_path: str | None) -> str:
    """CMake's target of an object (`.../CMakeFiles/<target>.dir/src/k.cu.o`), or ""."""
    m = _CMAKE_OBJECT.search((object_path or "").replace(os.sep, "/"))
    return m.group(1) if m else ""


def _forced(files: tuple[str, ...], directory: str) -> tuple[str, ...]:
    """-include (-imacros) files as the compiler finds them: from the directory it runs
    in, else (as named) on the include path."""
    return tuple(_absolute(f, directory) if os.path.exists(_absolute(f, directory)) else f
                 for f in files)


def unit_of(entry: dict, index: int, where: str) -> Unit | None:
    """The entry as a unit, None when it compiles no CUDA (host C++, a link, -E);
    InputError when it is not an entry of a compile database."""
    for key in ("directory", "file"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise InputError(f"{where}: no '{key}'")
    directory = os.path.normpath(entry["directory"])
    if not os.path.isabs(directory):
        raise InputError(f"{where}: 'directory' is not an absolute path: {directory}")
    args = _arguments(entry, where)
    if not args:
        raise InputError(f"{where}: an empty command")
    command = parse_command(_response_files_absolute(args[1:], directory))
    source = _absolute(entry["file"], directory)
    if not command.compiles or \
            source not in {_absolute(p, directory) for p in command.source_paths}:
        return None
    output = entry.get("output") if isinstance(entry.get("output"), str) else command.output
    obj = _absolute(output, directory) if output else None
    options = PreprocessorOptions(
        tuple(_absolute(d, directory) for d in command.include_dirs), command.defines,
        command.undefines, command.std or DEFAULT_STD,
        _forced(command.forced_includes, directory), _forced(command.imacros, directory))
    return Unit(index, source, directory, obj, options, target_of(obj))


def units_of(entries: list, path: str) -> tuple[list[Unit], int]:
    """The CUDA units of the database's entries and how many entries compile no CUDA."""
    units, skipped = [], 0
    for index, entry in enumerate(entries):
        unit = unit_of(entry, index, f"{path}: entry {index}")
        if unit is None:
            skipped += 1
        else:
            units.append(unit)
    if not units:
        raise InputError(f"{path}: no entry compiles CUDA (a .cu file, or -x cu); "
                         f"{len(entries)} entries")
    return units, skipped


def common_root(sources: list[str]) -> str:
    """The deepest directory holding every source."""
    return os.path.commonpath([os.path.dirname(s) for s in sources])


def output_path(out_dir: str, root: str, source: str) -> str:
    return os.path.join(out_dir, os.path.relpath(source, root))


def variant_path(path: str, tag: str) -> str:
    """`dir/name.<tag>.cu` for `dir/name.cu`."""
    stem, suffix = os.path.splitext(path)
    return f"{stem}.{tag}{suffix}"


# --------------------------------------------------------------------------- text edits

def keep_marker(kernels: tuple[str, ...], ending: str = "\n") -> str:
    """Text appended to a unit so that the per-file pipeline keeps `kernels` as written:
    a mention of each outside its launches (which the pipeline must keep working for:
    code `used-elsewhere`), in a block the preprocessor drops, so that nothing else
    reads it. `remove_marker` takes it out of the output again."""
    names = ", ".join(f"(void *)&{k}" for k in kernels)
    return ending.join(["", "#if 0 /* polycoal: launched from other translation units */",
                        f"static void *const polycoal_launched_elsewhere[] = {{{names}}};",
                        "#endif", ""])


def remove_marker(text: str, marker: str) -> str | None:
    """`text` without the one copy of `marker` it holds (new code appended after it stays
    where it is), None when it does not hold exactly one."""
    if text.count(marker) != 1:
        return None
    return text.replace(marker, "", 1)


# --------------------------------------------------------------------------- the worker

@dataclass(frozen=True)
class Launched:
    """A launch (or a mention) of a kernel the unit does not define."""

    kernel: str
    file: str
    line: int
    launch: bool = True                 # False: named otherwise (cudaLaunchKernel(k, ...))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class UnitResult:
    status: int                         # 0, 1 (a kernel failed), 2 (unusable), 3 (bug)
    text: str | None = None             # the transformed text; None: unchanged or failed
    kernels: tuple[KernelRecord, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    error: str = ""                     # why the unit was not transformed
    defined: tuple[str, ...] = ()       # every kernel the unit defines (headers included)
    external: tuple[str, ...] = ()      # those defined in its own text, not static
    launched: tuple[Launched, ...] = ()  # launches of kernels it does not define
    dependencies: tuple[str, ...] = ()  # the files it reads (its source first)
    changed: tuple[str, ...] = ()       # kernels whose own definition the text changes
    kept: tuple[str, ...] = ()          # kernels kept for the other units (keep_marker)


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


def _defines_static(program, kernel) -> bool:
    """Whether the definition says `static` before the kernel's name."""
    from polycoal.frontend.lexer import tokenize
    head = program.text[kernel.span.start:kernel.span.end].split("(", 1)[0]
    return any(t.text == "static" for t in tokenize(head))


def _location(d, result, program) -> tuple[str, int]:
    for x in result.diagnostics:
        if x.kernel == d.kernel and x.location is not None:
            return os.path.normpath(x.location.file), x.location.line
    for p in (program, result.program):
        k = p.kernel(d.kernel) if p is not None else None
        if k is not None:
            return os.path.normpath(k.location.file), k.location.line
    return program.path, 0


def transform_unit(unit: Unit, options, keep: tuple[str, ...] = ()) -> UnitResult:
    """One unit transformed as `polycoal transform` transforms one file, its own
    preprocessor options replacing `options`'; `keep`: kernels to leave as written
    (launched from other units). Never raises: a failure is the result's status."""
    from polycoal.frontend import read_program, read_source
    from polycoal.frontend.preprocess import preprocess
    try:
        try:
            original = read_source(unit.source)
        except OSError as error:
            raise InputError(f"{unit.source}: cannot read: {error.strerror}") from error
        source = preprocess(unit.source, unit.preprocessor)
        program = read_program(unit.source, unit.preprocessor, text=original, source=source)
        return _transform(unit, options, keep, original, source, program)
    except InputError as error:
        return UnitResult(2, error=str(error))
    except Exception as error:      # a bug: confined to the unit, reported, not raised
        if os.environ.get("POLYCOAL_TRACEBACK", "") not in ("", "0"):
            import traceback
            traceback.print_exc()
        message = _first_line(error)
        return UnitResult(3, error=f"polycoal: internal error: {unit.source}: "
                          f"{type(error).__name__}"
                          + (f": {message}" if message and message != type(error).__name__
                             else "") + " (a bug in polycoal; POLYCOAL_TRACEBACK=1 shows "
                          "where)")


def _transform(unit, options, keep, original, source, program) -> UnitResult:
    from polycoal.decisions import CHANGED
    from polycoal.frontend import read_program
    from polycoal.frontend.lexer import line_ending
    from polycoal.frontend.preprocess import preprocess, stub_include_dir
    from polycoal.transform import transform_program
    stubs = str(stub_include_dir())
    dependencies = tuple(dict.fromkeys(
        os.path.normpath(name) for name, _ in source.origins
        if os.path.isfile(name) and not name.startswith(stubs)))
    defined = tuple(dict.fromkeys(k.name for k in program.kernels))
    external = tuple(dict.fromkeys(k.name for k in program.kernels if k.span is not None
                                   and not _defines_static(program, k)))
    launched = tuple(Launched(l.kernel, os.path.normpath(l.location.file), l.location.line)
                     for l in program.launches if l.kernel not in defined)
    require_usable(program)
    options = replace(options, preprocessor=unit.preprocessor)
    marker = keep_marker(keep, line_ending(original)) if keep else ""
    if keep:
        marked = original + marker
        program = read_program(unit.source, unit.preprocessor, text=marked,
                               source=preprocess(unit.source, unit.preprocessor, text=marked))
    if options.measure:
        from polycoal.bench import measured_transform, measurement_notes
        result, verdicts = measured_transform(program, replace(options, measure=0),
                                              dict(options.arguments), options.measure)
        result = replace(result, diagnostics=result.diagnostics +
                         measurement_notes(program, verdicts))
    else:
        result = transform_program(program, options)
    text = result.text
    if keep:
        text = remove_marker(text, marker)
        if text is None:
            raise RuntimeError("the mark of the kernels launched from other units is "
                               "not in the output once")
    text = None if text == original else text
    diagnostics = tuple(x for x in program.diagnostics if x.kernel not in result.superseded) \
        + tuple(result.diagnostics)
    kernels = []
    for d in result.decisions:
        file, line = _location(d, result, program)
        kernels.append(KernelRecord(d.kernel, file, line, d.action, d.code, d.reason))
    changed = tuple(d.kernel for d in result.decisions
                    if d.action in CHANGED and d.kernel in external)
    status = 1 if any(x.severity == "error" for x in result.diagnostics) else 0
    return UnitResult(status, text, tuple(kernels), diagnostics, "", defined, external,
                      launched, dependencies, changed, tuple(keep))


def _work(task) -> UnitResult:
    """The worker's entry point (a top-level function: process pools pickle it)."""
    unit, options, keep = task
    return transform_unit(unit, options, keep)


def run_units(tasks: list, jobs: int, done) -> list[UnitResult]:
    """`_work` on every task, in `jobs` processes (in this one for 1), calling
    `done(index, result)` as each finishes; results in the order of `tasks`. A worker
    that dies (a crash in a native library) fails its unit alone: the units it left run
    again one at a time, each in a process of its own."""
    results: list[UnitResult | None] = [None] * len(tasks)
    if jobs <= 1 or len(tasks) <= 1:
        for k, task in enumerate(tasks):
            results[k] = _work(task)
            done(k, results[k])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    try:
        with ProcessPoolExecutor(min(jobs, len(tasks)), mp_context=context) as pool:
            futures = {pool.submit(_work, task): k for k, task in enumerate(tasks)}
            for future in as_completed(futures):
                k = futures[future]
                try:
                    results[k] = future.result()
                except BrokenProcessPool:
                    continue
                done(k, results[k])
    except BrokenProcessPool:
        pass
    for k, task in enumerate(tasks):
        if results[k] is None:
            results[k] = _alone(task, context)
            done(k, results[k])
    return results


def _alone(task, context) -> UnitResult:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    try:
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            return pool.submit(_work, task).result()
    except BrokenProcessPool:
        return UnitResult(3, error=f"polycoal: internal error: {task[0].source}: the process "
                          "transforming it died (a crash in polycoal or a library it uses)")


# --------------------------------------------------------------------------- the project

@dataclass(frozen=True)
class UnitOutcome:
    """A unit's final result, with the file its entry compiles."""

    unit: Unit
    result: UnitResult
    output: str | None = None           # the file written for it; None: the original


@dataclass(frozen=True)
class ProjectResult:
    database: str
    root: str
    out_dir: str
    units: tuple[UnitOutcome, ...]
    skipped: int = 0                    # entries compiling no CUDA
    notes: tuple[str, ...] = ()         # sources written as variants

    @property
    def status(self) -> int:
        return max((o.result.status for o in self.units), default=0)


def cross_unit_uses(results: list[UnitResult], sources: list[tuple[str, str] | None]
                    ) -> dict[str, list[Launched]]:
    """Per kernel defined (not static) in the text of some unit, its launches and
    mentions in the units that do not define it: the launches their front end found,
    and the mentions (`cudaLaunchKernel(k, ...)`) in their text (`sources`: each unit's
    (path, text), read again, so that units polycoal could not transform count too,
    with the kernels their text defines; None for a source that cannot be read, which
    no build compiles)."""
    from polycoal.frontend.host import other_mentions
    from polycoal.frontend.lexer import tokenize
    external = {name for r in results for name in r.external}
    uses: dict[str, set[Launched]] = {}
    for r, source in zip(results, sources):
        defined = set(r.defined)
        if r.status >= 2 and source is not None:        # not read: its text's definitions
            defined = set(defined_in(source[1]))
        names = external - defined
        if not names:
            continue
        for l in r.launched:
            if l.kernel in names:
                uses.setdefault(l.kernel, set()).add(l)
        if source is None:              # in no build that runs
            continue
        path, text = source
        launched = {(l.kernel, l.file, l.line) for l in r.launched}
        for name, lines in other_mentions(tuple(tokenize(text)),
                                          {n: [] for n in names}).items():
            for line in lines:
                if (name, path, line) not in launched:
                    uses.setdefault(name, set()).add(Launched(name, path, line, False))
    return {k: sorted(v, key=lambda l: (l.file, l.line, not l.launch)) for k, v in uses.items()}


def defined_in(text: str) -> list[str]:
    """The `__global__` functions `text` defines (a body follows), outside templates."""
    from polycoal.frontend.lexer import matching, tokenize
    tokens = tokenize(text)
    found = []
    for _, k, name in global_functions(tokens):
        j = k + 1
        while tokens[j].text != name or tokens[j + 1].text != "(":
            j += 1
        close = matching(tokens, j + 1)
        if close + 1 < len(tokens) and tokens[close + 1].text == "{":
            found.append(name)
    return found


def _places(uses: list[Launched], limit: int = 4) -> str:
    shown = ", ".join(f"{u}" + ("" if u.launch else " (named)") for u in uses[:limit])
    return shown + (f" and {len(uses) - limit} more" if len(uses) > limit else "")


def relabel(result: UnitResult, uses: dict[str, list[Launched]],
            refusals: dict[str, str] | None = None) -> UnitResult:
    """The unit's decisions for kernels it defines that other units launch and that the
    cross-unit pass did not take (`refusals`: why, per kernel): kept where the per-file
    pipeline had no launch of them (or was told to keep them), with code
    `launched-in-other-unit` and where they are launched; other decisions of such kernels
    say where else they run."""
    refusals = refusals or {}
    crossing = {k: uses[k] for k in result.external if k in uses}
    if not crossing:
        return result
    kernels, notes, relabelled = [], [], set()
    for k in result.kernels:
        if k.name not in crossing:
            kernels.append(k)
            continue
        where = crossing[k.name]
        launches = tuple(str(u) for u in where)
        launched = any(u.launch for u in where)
        verb = "launched" if launched else "named"
        if k.action == "unchanged" and k.code in _LAUNCHES_ELSEWHERE:
            if k.code == "no-launch":
                what = "launched from" if launched else "named in"
            else:                       # launched here too (the pipeline checks that first)
                what = "launched here and " + ("from" if launched else "named in")
            why = refusals.get(k.name, "no unit built with it (its CMake target) "
                               "launches it")
            reason = (f"{what} other translation units: {_places(where)}; left as "
                      f"written: {why}")
            k = replace(k, code=OTHER_UNIT, reason=reason, launches=launches)
            relabelled.add(k.name)
            notes.append(Diagnostic("note", OTHER_UNIT, f"kernel '{k.name}' left unchanged: "
                                    f"{reason}", Location(k.file, k.line), k.name))
        else:
            elsewhere = f"{verb} {'from' if launched else 'in'} other translation units"
            k = replace(k, reason=f"{k.reason}; also {elsewhere} ({_places(where)})",
                        launches=launches)
        kernels.append(k)
    diagnostics = tuple(x for x in result.diagnostics
                        if not (x.kernel in relabelled and x.severity == "note")) + tuple(notes)
    return replace(result, kernels=tuple(kernels), diagnostics=diagnostics)


def assign_outputs(units: list[Unit], results: list[UnitResult], root: str, out_dir: str
                   ) -> tuple[list[str | None], list[tuple[str, str, str]], list[str]]:
    """Where each unit's text goes: (per unit the path or None, the files to write as
    (path, source, text), notes about sources written as variants)."""
    by_source: dict[str, list[int]] = {}
    for k, u in enumerate(units):
        by_source.setdefault(u.source, []).append(k)
    outputs: list[str | None] = [None] * len(units)
    writes, notes = [], []
    for source, ks in by_source.items():
        plain = output_path(out_dir, root, source)
        texts = [results[k].text for k in ks]
        if all(t == texts[0] for t in texts):
            if texts[0] is not None:
                writes.append((plain, source, texts[0]))
                for k in ks:
                    outputs[k] = plain
            continue
        groups: dict[str, list[int]] = {}
        for k, t in zip(ks, texts):
            if t is not None:
                groups.setdefault(t, []).append(k)
        targets = [_safe(units[k].target) for k in ks]
        tags = [_safe(units[g[0]].target) for g in groups.values()]
        if not all(targets) or len(set(targets)) < len(targets):   # not one target each
            tags = [f"entry{units[g[0]].entry}" for g in groups.values()]
        for tag, (text, members) in zip(tags, groups.items()):
            path = variant_path(plain, tag)
            writes.append((path, source, text))
            for k in members:
                outputs[k] = path
        which = "; ".join(
            f"entry {units[k].entry}" + (f" ({units[k].target})" if units[k].target else "")
            + f" -> {os.path.basename(outputs[k]) if outputs[k] else 'the original'}"
            for k in ks)
        notes.append(f"{source}: its {len(ks)} entries transform differently (their flags "
                     f"differ): written as variants, {which}")
    return outputs, writes, notes


def _safe(tag: str) -> str:
    """A target's name as part of a file name ("" stays "")."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", tag)


# --------------------------------------------------------------------------- reports

def _shown(path: str) -> str:
    """`path` relative to the working directory where it lies below it."""
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return path if relative.startswith("..") else relative


def _unit_name(unit: Unit) -> str:
    return f"{_shown(unit.source)} (entry {unit.entry}" + \
        (f", {unit.target})" if unit.target else ")")


def kernel_rows(project: ProjectResult) -> list[tuple[UnitOutcome, KernelRecord]]:
    return [(o, k) for o in project.units for k in o.result.kernels]


def counts(project: ProjectResult) -> dict[str, int]:
    """Kernels by reason code (a header's kernel counted in each unit transforming it)."""
    return dict(sorted(Counter(k.code for _, k in kernel_rows(project)).items()))


def render_text(project: ProjectResult) -> str:
    lines = [f"polycoal transform -p {_shown(project.database)}: {len(project.units)} "
             f"translation unit{'s' if len(project.units) != 1 else ''}"
             + (f" ({project.skipped} other entries compile no CUDA)" if project.skipped
                else "") + f", sources under {_shown(project.root)}, written to "
             f"{_shown(project.out_dir)}"]
    for o in project.units:
        r = o.result
        state = (f"written to {_shown(o.output)}" if o.output else
                 "not transformed" if r.status >= 2 else "unchanged")
        lines.append(f"{_unit_name(o.unit)}: {state}")
        if r.error:
            lines.append(f"  {r.error}")
        for k in r.kernels:
            lines.append(f"  {_shown(k.file)}:{k.line}: kernel {k.name} {k.action} "
                         f"[{k.code}]: {k.reason}")
        for x in r.diagnostics:
            if x.severity in ("error", "warning"):
                lines.append(f"  {x}")
    lines += [f"note: {n}" for n in project.notes]
    lines.append("kernels by reason code: " + (", ".join(
        f"{code} {n}" for code, n in counts(project).items()) or "none"))
    lines.append(f"exit status {project.status} ({_STATUS_WORDS[project.status]})")
    return "\n".join(lines) + "\n"


def render_json(project: ProjectResult) -> dict:
    from polycoal.report.json_report import diagnostic
    units = []
    for o in project.units:
        r = o.result
        units.append({"entry": o.unit.entry, "file": o.unit.source,
                      "directory": o.unit.directory, "object": o.unit.object,
                      "target": o.unit.target or None, "output": o.output,
                      "status": r.status, "error": r.error or None,
                      "defines": list(o.unit.preprocessor.defines),
                      "diagnostics": [diagnostic(x) for x in r.diagnostics]})
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "database": project.database, "root": project.root,
            "output_directory": project.out_dir, "status": project.status,
            "units": units,
            "kernels": [{"unit": o.unit.source, "entry": o.unit.entry, "file": k.file,
                         "line": k.line, "name": k.name, "action": k.action,
                         "code": k.code, "reason": k.reason,
                         "launched_in_other_units": list(k.launches)}
                        for o, k in kernel_rows(project)],
            "counts": counts(project), "skipped_entries": project.skipped,
            "notes": list(project.notes)}


def render_sarif(project: ProjectResult) -> dict:
    from polycoal.report.sarif import document
    diagnostics = []
    for o, k in kernel_rows(project):
        severity = "error" if k.code in ("internal-error", "validation-failed") else "note"
        diagnostics.append(Diagnostic(severity, k.code, f"kernel '{k.name}' {k.action} in "
                                      f"{o.unit.source} (entry {o.unit.entry}): {k.reason}",
                                      Location(k.file, max(k.line, 1)), k.name))
    for o in project.units:
        if o.result.error:
            diagnostics.append(Diagnostic("error", "unit-not-transformed", o.result.error,
                                          Location(o.unit.source, 1)))
        diagnostics += [x for x in o.result.diagnostics if x.severity in ("error", "warning")]
    rules = {code: f"polycoal's reason code '{code}' (README, polycoal transform)"
             for code in dict.fromkeys(d.code for d in diagnostics)}
    log = document(diagnostics, project.database, rules)
    log["runs"][0]["artifacts"] = [{"location": {"uri": s.replace(os.sep, "/")}}
                                   for s in dict.fromkeys(o.unit.source
                                                          for o in project.units)]
    return log


# --------------------------------------------------------------------------- progress

class Progress:
    """On a terminal, a bar redrawn as units finish; elsewhere, one line per unit."""

    def __init__(self, stream, total: int):
        self.stream, self.total, self.finished = stream, total, 0
        self.bar = bool(getattr(stream, "isatty", lambda: False)())

    def extend(self, more: int) -> None:
        self.total += more

    def unit(self, unit: Unit, result: UnitResult, again: bool = False) -> None:
        self.finished += 1
        changed = sum(1 for k in result.kernels if k.action != "unchanged")
        what = (f"not transformed ({_STATUS_WORDS[result.status]})" if result.error else
                f"{changed} kernel{'s' if changed != 1 else ''} changed, "
                f"{len(result.kernels) - changed} unchanged")
        if again:
            what = f"again, keeping {', '.join(result.kept)} as written: {what}"
        line = f"polycoal: [{self.finished}/{self.total}] {_unit_name(unit)}: {what}"
        if not self.bar:
            self.stream.write(line + "\n")
        else:
            width = 30
            filled = width * self.finished // max(self.total, 1)
            bar = (f"polycoal [{'#' * filled}{'.' * (width - filled)}] "
                   f"{self.finished}/{self.total} {_shown(unit.source)}")
            columns = shutil.get_terminal_size((80, 24)).columns
            self.stream.write("\r\033[K" + bar[:max(columns - 1, width + 12)])
        self.stream.flush()

    def close(self) -> None:
        if self.bar:
            self.stream.write("\r\033[K")
            self.stream.flush()


# --------------------------------------------------------------------------- the command

def check_out_dir(out_dir: str, root: str) -> None:
    """Before any work: OUT_DIR is a directory polycoal may create or write, and not the
    sources' root (polycoal never overwrites its input)."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputError(f"{out_dir}: not a directory (-o names the output directory "
                         "with -p)")
    if os.path.realpath(out_dir) == os.path.realpath(root):
        raise InputError(f"{out_dir}: is the sources' root; polycoal never overwrites its "
                         "input (name another output directory)")
    existing = os.path.abspath(out_dir)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{out_dir}: {existing} is not a writable directory")


def _identity(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_writes(writes, inputs: list[str]) -> None:
    """No file to write is one polycoal reads (a source, a header, the database), and each
    one's directory can be made: InputError before anything is written."""
    read = {i for i in map(_identity, inputs) if i is not None}
    for path, _, _ in writes:
        if _identity(path) in read:
            raise InputError(f"{path}: is an input of the project; polycoal never "
                             "overwrites its input (name another output directory)")
        existing = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            raise InputError(f"{path}: {existing} is not a directory")
        if os.path.isdir(path):
            raise InputError(f"{path}: is a directory")


def write_outputs(writes) -> None:
    from polycoal.output import relocate_includes, write_atomically
    for path, source, text in writes:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as error:
            raise InputError(f"{path}: cannot make its directory: {error.strerror}") \
                from error
        write_atomically(path, relocate_includes(text, source, path))


def transform_project(build: str, out_dir: str, options, root: str | None = None,
                      jobs: int | None = None, report: str = "text",
                      stdout=None, stderr=None) -> int:
    """`polycoal transform -p BUILD -o OUT_DIR`: the exit status (the worst unit's)."""
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    database, entries = read_database(build)
    units, skipped = units_of(entries, database)
    if root is None:
        root = common_root([u.source for u in units])
    root = os.path.abspath(root)
    outside = [u.source for u in units if os.path.commonpath([root, u.source]) != root]
    if outside:
        raise InputError(f"{outside[0]}: not under the root {root} (--root)")
    out_dir = os.path.abspath(out_dir)
    check_out_dir(out_dir, root)
    jobs = jobs or _cpus()
    # one task per source and preprocessor options: duplicate entries share it
    keys = [(u.source, u.preprocessor) for u in units]
    distinct = list(dict.fromkeys(keys))
    tasks = [(next(u for u, k in zip(units, keys) if k == key), options, ())
             for key in distinct]
    progress = Progress(stderr, len(tasks))
    try:
        results = run_units(tasks, jobs, lambda k, r: progress.unit(tasks[k][0], r))
        uses = cross_unit_uses(results, [_readable(task[0].source) for task in tasks])
        again = [k for k, r in enumerate(results)
                 if any(name in uses for name in r.changed)]
        if again:
            progress.extend(len(again))
            redo = [(tasks[k][0], options, tuple(n for n in results[k].external if n in uses))
                    for k in again]
            for k, r in zip(again, run_units(redo, jobs,
                                             lambda j, r: progress.unit(redo[j][0], r, True))):
                if r.status < 2 and any(name in uses for name in r.changed):
                    r = replace(r, status=3, text=None, error="polycoal: internal error: "
                                f"{tasks[k][0].source}: kernels launched from other units could "
                                "not be kept as written; the unit is not transformed")
                results[k] = r
        # kernels defined in one unit and launched from others (polycoal/cross_unit.py)
        results, refusals, handled = transform_crossing(
            [task[0] for task in tasks], _targets(units, keys, distinct), results, uses,
            root, options)
    finally:
        progress.close()
    results = [relabel(r, {k: v for k, v in uses.items() if k not in handled.get(t, ())},
                       refusals.get(t, {})) for t, r in enumerate(results)]
    per_unit = [results[distinct.index(key)] for key in keys]
    outputs, writes, notes = assign_outputs(units, per_unit, root, out_dir)
    inputs = [database] + [u.source for u in units] + \
        [d for r in results for d in r.dependencies]
    check_writes(writes, inputs)
    write_outputs(writes)
    project = ProjectResult(database, root, out_dir,
                            tuple(UnitOutcome(u, r, o) for u, r, o in
                                  zip(units, per_unit, outputs)), skipped, tuple(notes))
    for o in project.units:
        if o.result.status >= 2:
            print(o.result.error, file=stderr)
        for x in o.result.diagnostics:
            if x.severity == "error":
                print(x, file=stderr)
    for n in notes:
        print(f"polycoal: note: {n}", file=stderr)
    if report == "json":
        stdout.write(json.dumps(render_json(project), indent=2) + "\n")
    elif report == "sarif":
        stdout.write(json.dumps(render_sarif(project), indent=2) + "\n")
    else:
        stdout.write(render_text(project))
    stdout.flush()
    return project.status


def _targets(units: list[Unit], keys: list, distinct: list) -> list[frozenset[str]]:
    """Per task, the CMake targets of the entries it stands for ("" where not known)."""
    return [frozenset(u.target for u, k in zip(units, keys) if k == key) for key in distinct]


def transform_crossing(task_units: list[Unit], targets: list[frozenset[str]],
                       results: list[UnitResult], uses: dict[str, list[Launched]],
                       root: str, options):
    """The kernels defined in one unit and launched from others transformed where they
    are defined, their launches rewritten where they are (polycoal/cross_unit.py): (the
    results, per task the reasons its kernels are kept, per task the kernels it took
    over)."""
    from polycoal import cross_unit
    if not uses:
        return results, {}, {}
    texts = [_readable(u.source) for u in task_units]
    crossings, refusals = cross_unit.plan(task_units, targets, results, uses, texts, root)
    done = cross_unit.run(crossings, task_units, results, texts, options, root)
    for t, more in done.refusals.items():
        refusals.setdefault(t, {}).update(more)
    return cross_unit.apply(done, task_units, results, texts), refusals, done.handled


def _readable(path: str) -> tuple[str, str] | None:
    """(path, text) of a source for the scan of its mentions, None when unreadable."""
    from polycoal.frontend import read_source
    try:
        return path, read_source(path)
    except (OSError, InputError):
        return None


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def bench_project(build: str, options, arguments: dict[str, int],
                  repeats: int = 10) -> list[dict]:
    """`polycoal bench -p BUILD`: every CUDA unit of the compile database benched as one
    file is, with its own preprocessor options (a source compiled twice with the same
    options, once): [{"file", "entry", "rows"} or {"file", "entry", "error"}]."""
    from polycoal.bench import bench, require_device
    from polycoal.frontend import read_program
    require_device("bench -p")
    path, entries = read_database(build)
    units, _ = units_of(entries, path)
    seen, out = set(), []
    for unit in units:
        key = (unit.source, unit.preprocessor)
        if key in seen:
            continue
        seen.add(key)
        try:
            program = read_program(unit.source, unit.preprocessor)
            rows = bench(program, replace(options, preprocessor=unit.preprocessor),
                         arguments, repeats)
            out.append({"file": unit.source, "entry": unit.entry, "rows": rows})
        except InputError as error:            # this unit only: the others go on
            out.append({"file": unit.source, "entry": unit.entry, "error": str(error)})
    return out
