"""Project mode of the tester (tools/difftest.py --project): a generated program written
as a small project and judged through `polycoal transform -p`.

The project (`layout` decides, `render` writes the texts):

    include/kernels.cuh     the macros, the C++ constructs' prelude, every kernel's
                            declarations (structs, __device__ helpers), and the kernels
                            placed in the header (templates, or `static __global__`)
    src/kernels.cu          kernels defined there, and host wrappers `launch_k(grid,
                            block, ...)` that launch a kernel of this unit or of the header
    src/main.cu             main(): prototypes of the other unit's kernels and wrappers,
                            the kernels it keeps, the launches it makes itself
    build/compile_commands.json   Bear style: `directory` (build/), `file`, `arguments`
                            (nvcc -I../include [-D...] -std=c++17 -x cu -c FILE -o OBJ)

so that each kernel is one of: defined and launched in main.cu; defined in kernels.cu
and launched from main.cu through a prototype (transformed in kernels.cu, its launches
rewritten in main.cu: polycoal/cross_unit.py); defined in kernels.cu and launched there through a wrapper
that main.cu calls; defined in the header and launched from main.cu, from kernels.cu's
wrapper, or from both (a kernel with several launches). Some macros guarded by
`#ifndef` come from the database's `-D` instead (the same values).

`judge_project` builds the original and each distinct output (the files `transform -p`
wrote, in place of their sources) for the CPU runtime, one object per unit linked with
it, runs them like single-file programs, and compiles each written unit with nvcc -c
(or -cubin) with its entry's flags: the verdicts are those of runner.Runner.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import time

from polycoal.difftest import cxx

HEADER = "include/kernels.cuh"
UNITS = ("src/main.cu", "src/kernels.cu")


# ----------------------------------------------------------------------- the layout

def layout(b, rng: random.Random, seed: int) -> dict:
    """Where each kernel is defined and each launch made; rewrites the launches of
    main that move into wrappers (calls of `launch_k`). Draws only from `rng`; of a few
    plans drawn, the first that puts something in kernels.cu is taken."""
    for attempt in range(6):
        places, moved = _plan(b, rng)
        if any(p == "unit" for p in places.values()) or any(moved.values()):
            break
    wrappers: dict[str, dict] = {}
    prototypes: list[str] = []
    for k in b.kernels:
        lines = cxx._launch_lines(b, k) or []
        if moved[k.name]:
            wrappers[k.name] = w = _wrapper(b, k, [b.main[n] for n in moved[k.name]], rng)
            for n in moved[k.name]:
                m = cxx._LAUNCH.match(b.main[n])
                pieces = [] if w["inline"] else cxx._top_level(m.group(4))[:2]
                args = pieces + (cxx._top_level(m.group(5)) if m.group(5).strip() else [])
                b.main[n] = f"{m.group(1)}{wrappers[k.name]['name']}({', '.join(args)});"
        if places[k.name] == "unit" and len(moved[k.name]) != len(lines) or \
                places[k.name] == "unit" and not lines:
            prototypes.append(k.name)          # launched from main.cu too
    b.shape.append("project: " + ", ".join(
        f"{k.name} in {places[k.name]}" + (" (wrapped)" if moved[k.name] else "")
        for k in b.kernels))
    return {"places": places, "wrappers": wrappers, "prototypes": prototypes,
            "defines_on_command_line": rng.random() < 0.5,
            "file_paths": rng.choice(("relative", "absolute"))}


def _plan(b, rng: random.Random) -> tuple[dict[str, str], dict[str, list[int]]]:
    """(kernel -> main | unit | header, kernel -> the lines of main whose launches go
    through a wrapper in kernels.cu)."""
    places, moved = {}, {}
    for k in b.kernels:
        lines = cxx._launch_lines(b, k)
        sync = cxx._synchronises(k)
        typed = bool(k.tparams) or "typename" in k.template
        choices = ["main"]
        if not sync and "<<<" not in k.after:
            choices += ["header", "header"]
        if not k.template and (not sync or lines):
            choices += ["unit", "unit"]
        place = rng.choice(choices)
        chosen: list[int] = []
        if lines and place != "main" and not (typed and not k.tvalues):
            # a kernel with barriers runs where its body is seen: all its launches there
            chosen = list(lines) if sync else [n for n in lines if rng.random() < 0.6]
        if sync and place == "unit" and (not lines or len(chosen) != len(lines)):
            place, chosen = "main", []
        places[k.name], moved[k.name] = place, chosen
    return places, moved


def _wrapper(b, k, launches: list[str], rng: random.Random) -> dict:
    """A host function of kernels.cu that launches `k`: with its geometry written in
    its parameters and macros where the launches' is (`launch_k(d_y, n)`), else with
    the geometry it is given (`launch_k(grid, block, d_y, n)`)."""
    ms = [cxx._LAUNCH.match(l) for l in launches]
    callee = ms[0].group(2)
    extras = cxx._top_level(ms[0].group(4))[2:]
    params = []
    for decl, _ in k.params:
        for t, v in k.tvalues.items():
            decl = re.sub(rf"\b{t}\b", v, decl)
        params.append(decl)
    names = ", ".join(cxx.param_name(d) for d in params)
    name = b.fresh(f"launch_{k.name}")
    config = cxx.config_of_parameters(b, k, ms)
    inline = config is not None and rng.random() < 0.8
    if inline:
        signature = ", ".join(params)
        body = f"  {callee}<<<{config}>>>({names});"
    else:
        signature = ", ".join(["dim3 grid", "dim3 block"] + params)
        body = f"  {callee}<<<grid, block{''.join(', ' + e for e in extras)}>>>({names});"
    return {"name": name, "signature": signature, "inline": inline,
            "text": f"void {name}({signature})\n{{\n{body}\n}}\n"}


# ----------------------------------------------------------------------- the files

def _kernel(k, static: bool = False) -> str:
    sig = ", ".join(p for p, _ in k.params)
    body = "\n".join("  " + l if l else "" for l in k.lines)
    head = "static " if static and not k.template else ""
    text = f"{k.template}{head}__global__ void {k.name}({sig})\n{{\n{body}\n}}\n"
    if k.namespace:
        text = f"namespace {k.namespace} {{\n\n{text}\n}} // namespace\n"
    return text


def _prototype(k) -> str:
    text = f"__global__ void {k.name}({', '.join(p for p, _ in k.params)});"
    return f"namespace {k.namespace} {{ {text} }}" if k.namespace else text


def render(b, plan: dict, comment: str) -> dict:
    """The project: files (path -> text), units, include directories, defines."""
    parts = b.parts
    on_line = plan["defines_on_command_line"]
    values = dict(b.defines)
    # (not one-letter names: -DT=5 would rename the template parameters of headers)
    defines = [f"{n}={values[n]}" for n, _ in b.defines
               if on_line and n in b.guarded and len(n) > 1]
    macros = []
    for name, value in b.defines:
        if name in b.guarded:
            macros += [f"#ifndef {name}", f"#define {name} {value}", "#endif"]
        else:
            macros.append(f"#define {name} {value}")
    prelude = list(b.prelude)
    if on_line:              # the #ifdef constructs' switches from the command line
        for line in list(prelude):
            m = re.fullmatch(r"#define (PC_\w+)( 1)?", line)
            if m:
                prelude.remove(line)
                defines.append(m.group(1) + ("=1" if m.group(2) else ""))
    places, wrappers = plan["places"], plan["wrappers"]
    header = ["#ifndef DIFFTEST_KERNELS_CUH", "#define DIFFTEST_KERNELS_CUH", ""]
    header += parts["includes"] + [""] + macros + [""]
    if prelude:
        header += prelude + [""]
    header += [k.before for k in b.kernels if k.before]
    header += [_kernel(k, static=True) for k in b.kernels if places[k.name] == "header"]
    header += ["#endif // DIFFTEST_KERNELS_CUH", ""]
    unit = [comment.rstrip(), '#include "kernels.cuh"', ""]
    unit += [_kernel(k) for k in b.kernels if places[k.name] == "unit"]
    unit += [w["text"] for w in wrappers.values()]
    main = [comment.rstrip(), '#include "kernels.cuh"', ""]
    protos = [_prototype(k) for k in b.kernels if k.name in plan["prototypes"]]
    protos += [f"void {w['name']}({w['signature']});" for w in wrappers.values()]
    if protos:
        main += ["// defined in kernels.cu"] + protos + [""]
    main += [_kernel(k) for k in b.kernels if places[k.name] == "main"]
    main += [k.after for k in b.kernels if k.after]
    main += b.host_functions
    main += parts["main"]
    files = {HEADER: "\n".join(header) + "\n", UNITS[0]: "\n".join(main) + "\n",
             UNITS[1]: "\n".join(unit) + "\n"}
    return {"files": files, "units": list(UNITS), "include_dirs": ["include"],
            "defines": defines, "file_paths": plan["file_paths"],
            "places": places, "wrapped": sorted(wrappers), "prototypes": plan["prototypes"]}


def write_project(project: dict, root: str) -> str:
    """The project's files under `root` and its database, build/compile_commands.json
    (as Bear writes it); the build directory."""
    for path, text in project["files"].items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    build = os.path.join(root, "build")
    os.makedirs(build, exist_ok=True)
    entries = []
    for unit in project["units"]:
        source = os.path.join(root, unit)
        named = source if project.get("file_paths") == "absolute" else \
            os.path.relpath(source, build)
        obj = f"CMakeFiles/app.dir/{unit}.o"
        entries.append({"directory": build, "file": named, "output": obj, "arguments": [
            "nvcc", *(f"-I{os.path.relpath(os.path.join(root, d), build)}"
                      for d in project["include_dirs"]),
            *(f"-D{d}" for d in project["defines"]), "-std=c++17", *relaxed(project),
            "-x", "cu", "-c",
            named, "-o", obj]})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(entries, f, indent=2)
    return build


def read_project(directory: str, meta: dict) -> dict:
    """A project saved by write_project (main.save_reproducer) with its metadata."""
    project = dict(meta)
    project["files"] = {}
    for path in meta["files"]:
        with open(os.path.join(directory, path)) as f:
            project["files"][path] = f.read()
    return project


# ----------------------------------------------------------------------- building

def build_cpu(cpu, project: dict, root: str, texts: dict[str, str], directory: str
              ) -> tuple[str | None, str]:
    """(executable, "") or (None, messages): each unit (its text in `texts`, by its path
    in the project) compiled for the CPU runtime with the project's flags, linked."""
    from polycoal.runtime.cpu_program import HEADER as RUNTIME_HEADER, rewrite_for_cpu
    os.makedirs(directory, exist_ok=True)
    objects = []
    for n, unit in enumerate(project["units"]):
        try:
            text = rewrite_for_cpu(texts[unit])
        except ValueError as e:
            return None, f"{unit}: launch rewriting: {e}"
        src = os.path.join(directory, f"unit{n}.cpp")
        with open(src, "w") as f:
            f.write(text)
        obj = os.path.join(directory, f"unit{n}.o")
        r = subprocess.run([cpu.cxx, *cpu.flags, "-c", "-I", cpu.include,
                            *(f"-I{os.path.join(root, d)}" for d in project["include_dirs"]),
                            *(f"-D{d}" for d in project["defines"]),
                            "-include", os.path.join(cpu.include, RUNTIME_HEADER), src,
                            "-o", obj], capture_output=True, text=True)
        if r.returncode != 0:
            return None, f"{unit}:\n{r.stderr}"
        objects.append(obj)
    exe = os.path.join(directory, "program")
    r = subprocess.run([cpu.cxx, *objects, cpu.object, *cpu.link_flags, "-o", exe],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"link:\n{r.stderr}"
    return exe, ""


def relaxed(project: dict) -> tuple[str, ...]:
    """nvcc's --expt-relaxed-constexpr where a file of the project names
    std::numeric_limits in a kernel (runner.relaxed_constexpr)."""
    from polycoal.difftest.judging import relaxed_constexpr
    return relaxed_constexpr("".join(project["files"].values()))


def nvcc_unit(nvcc, project: dict, root: str, path: str, directory: str) -> str | None:
    """nvcc on one unit's file `path` with the project's flags: None when it compiles,
    else its first error lines."""
    flag = "-cubin" if nvcc.mode == "cubin" else "-c"
    out = os.path.join(directory, os.path.basename(path) + ".o")
    try:
        r = subprocess.run([nvcc.nvcc, "-arch=sm_90", flag, "-std=c++17",
                            *relaxed(project),
                            *(f"-I{os.path.join(root, d)}" for d in project["include_dirs"]),
                            *(f"-D{d}" for d in project["defines"]), "-x", "cu", path,
                            "-o", out], capture_output=True, text=True, errors="replace",
                           timeout=600)
    except subprocess.TimeoutExpired:
        return "nvcc ran past 600 s"
    if r.returncode == 0:
        return None
    lines = (r.stdout + r.stderr).splitlines()
    keep = [l for l in lines if "error" in l.lower()][:8]
    return "\n".join(keep) or "\n".join(lines[-20:])


# ----------------------------------------------------------------------- transforming

def run_project_transform(build: str, out: str, args: list[str], timeout: int):
    """`polycoal transform -p build -o out --jobs 1 args` in this process; a
    runner.TransformOutcome (its text None: the outputs are files under `out`). An
    internal error a unit confined (exit 3) is classed by its traceback, as in the
    single-file mode (POLYCOAL_TRACEBACK=1 prints it)."""
    from polycoal.difftest.judging import TransformOutcome, _first_lines, dispatch
    saved = os.environ.get("POLYCOAL_TRACEBACK")
    os.environ["POLYCOAL_TRACEBACK"] = "1"
    try:
        status, stderr, failed = dispatch(["transform", "-p", build, "-o", out, "--jobs", "1"]
                                          + args, timeout, "transform -p")
    finally:
        if saved is None:
            os.environ.pop("POLYCOAL_TRACEBACK", None)
        else:
            os.environ["POLYCOAL_TRACEBACK"] = saved
    if failed is not None:
        return failed
    if status == 0:
        return TransformOutcome(0, None, stderr)
    if status == 3 and "Traceback (most recent call last)" in stderr:
        return TransformOutcome(3, None, stderr, _traceback_class_of(stderr), stderr[-3000:])
    if status == 1 and "[internal-error]" in stderr:
        return TransformOutcome(1, None, stderr, "internal-error",
                                _first_lines(stderr, "internal error"))
    if status == 1 and "validation failed" in stderr:
        return TransformOutcome(1, None, stderr, "validation-rejected",
                                _first_lines(stderr, "validation failed"))
    return TransformOutcome(status, None, stderr, f"exit-{status}", stderr[-2000:])


def _traceback_class_of(stderr: str) -> str:
    """traceback:<type>@<file>:<function> from a printed traceback (its innermost
    frame inside polycoal)."""
    block = stderr[stderr.rindex("Traceback (most recent call last)"):]
    frames = re.findall(r'File "([^"]+)", line \d+, in (\w+)', block)
    inner = [f for f in frames if f"{os.sep}polycoal{os.sep}" in f[0]] or frames
    last = [l for l in block.splitlines() if l and not l.startswith(" ")]
    kind = last[-1].split(":")[0].split(".")[-1] if last else "?"
    where = f"{os.path.basename(inner[-1][0])}:{inner[-1][1]}" if inner else "?"
    return f"traceback:{kind}@{where}"


# ----------------------------------------------------------------------- judging

def judge_project(runner, program, result, tmp: str, transformed=None) -> None:
    """runner.Runner's judgement of a project program (`transformed`: option -> {unit
    path: text}, instead of polycoal, for testing the judge)."""
    from polycoal.difftest.judging import (RUN_TIMEOUT, Failure, _errors, compare,
                                           kept_unchanged, parse_checks, run_verdict)
    project = program.project
    root = os.path.join(tmp, "project")
    build = write_project(project, root)
    original = {u: project["files"][u] for u in project["units"]}

    def timed(key, start):
        result.seconds[key] = result.seconds.get(key, 0.0) + time.monotonic() - start

    t = time.monotonic()
    exe, error = build_cpu(runner.cpu, project, root, original, os.path.join(tmp, "orig"))
    timed("gxx", t)
    if exe is None:
        result.failures.append(Failure("generator-invalid", [], "the original project does "
                                       "not build on the CPU path:\n" + _errors(error)))
        return
    t = time.monotonic()
    ref = runner.cpu.run(exe, RUN_TIMEOUT)
    rev = runner.cpu.run(exe, RUN_TIMEOUT, reverse=True)
    timed("run", t)
    if ref.failure:
        result.failures.append(Failure("generator-invalid", [], f"the original fails on the "
                                       f"CPU ({ref.failure}): {ref.stderr[-1500:]}"))
        return
    want = parse_checks(ref.stdout)
    if set(want) != set(program.checks):
        result.failures.append(Failure("generator-invalid", [], "the original prints "
                                       f"checksums of {sorted(want)}"))
        return
    want_reverse = parse_checks(rev.stdout) if not rev.failure else {}
    if not program.must_keep:
        diff = rev.failure or compare(program.checks, want, want_reverse)
        if diff:
            result.failures.append(Failure("generator-invalid", [], "the original's result "
                                           f"depends on the order: {diff}"))
            return
        want_reverse = want

    from polycoal.difftest.judging import OPTION_SETS
    outputs: dict[tuple, list[str]] = {}
    failures: dict[tuple[str, str], Failure] = {}

    def fail(cls, option, message, output=None):
        key = (cls, message.splitlines()[0] if message else "")
        if key in failures:
            failures[key].options.append(option)
        else:
            failures[key] = Failure(cls, [option], message, output)
        result.outcomes[option] = cls

    for n, option in enumerate(runner.options):
        out = os.path.join(tmp, f"out{n}")
        t = time.monotonic()
        if transformed is not None:
            texts = transformed.get(option)
            if texts is None:
                continue
            written = tuple(texts.get(u) for u in project["units"])
        else:
            outcome = run_project_transform(build, out, OPTION_SETS[option],
                                            runner.transform_timeout)
            timed("transform", t)
            if outcome.cls:
                fail(outcome.cls, option, outcome.detail)
                continue
            written = tuple(_read(os.path.join(out, os.path.relpath(u, "src")))
                            for u in project["units"])
        outputs.setdefault(written, []).append(option)
    result.distinct_outputs = len([w for w in outputs if any(x is not None for x in w)])
    whole_original = project["files"][HEADER] + "".join(original.values())
    original_nvcc: dict[str, str | None] = {}
    for n, (written, options) in enumerate(outputs.items()):
        changed = any(x is not None for x in written)
        for o in options:
            result.outcomes[o] = "changed" if changed else "unchanged"
        if not changed:
            continue
        texts = {u: w if w is not None else original[u]
                 for u, w in zip(project["units"], written)}
        shown = "\n".join(f"// ==== {u}\n{texts[u]}" for u in project["units"]
                          if texts[u] != original[u])
        if program.must_keep:
            whole = project["files"][HEADER] + "".join(texts.values())
            bad = False
            for o in options:
                why = kept_unchanged(whole_original, whole, program.kept_under(o))
                if why:
                    fail("changed-racy", o, why, shown)
                    bad = True
            if bad:
                continue
        directory = os.path.join(tmp, f"judge{n}")
        os.makedirs(directory, exist_ok=True)
        rejected = None
        if runner.nvcc is not None:
            t = time.monotonic()
            for unit, w in zip(project["units"], written):
                if w is None:
                    continue
                path = os.path.join(directory, os.path.basename(unit))
                with open(path, "w") as f:
                    f.write(w)
                error = nvcc_unit(runner.nvcc, project, root, path, directory)
                if error is None:
                    continue
                if unit not in original_nvcc:
                    original_nvcc[unit] = nvcc_unit(runner.nvcc, project, root,
                                                    os.path.join(root, unit), directory)
                if original_nvcc[unit] is not None:
                    result.failures.append(Failure("generator-invalid", options,
                                                   f"nvcc rejects the original {unit}:\n" +
                                                   original_nvcc[unit]))
                    timed("nvcc", t)
                    return
                rejected = f"{unit}: {error}"
                break
            timed("nvcc", t)
        if rejected:
            for o in options:
                fail("nvcc-error", o, rejected, shown)
            continue
        t = time.monotonic()
        exe, error = build_cpu(runner.cpu, project, root, texts, directory)
        timed("gxx", t)
        if exe is None:
            for o in options:
                fail("cpu-compile-error", o, _errors(error), shown)
            continue
        verdict = run_verdict(runner.cpu, exe, program.checks, want, want_reverse, timed)
        if verdict:
            for o in options:
                fail(verdict[0], o, verdict[1], shown)
    result.failures.extend(failures.values())
    shutil.rmtree(root, ignore_errors=True)


def _read(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()
