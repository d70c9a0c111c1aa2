"""The `polycoal` command line."""

from __future__ import annotations

import argparse
import json
import re
import sys

from polycoal import __version__
from polycoal.diagnostics import InputError, require_usable
from polycoal.frontend.preprocess import DEFAULT_STD
from polycoal.options import (add_arg_option, add_preprocessor_options, add_transform_options,
                              int_arguments, positive, preprocessor_options,
                              transform_options)


class _CMakeDir(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        import os
        print(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake"))
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="polycoal",
        description="Polyhedral source-to-source CUDA compiler for coalesced memory access.")
    parser.add_argument("--version", action="version", version=f"polycoal {__version__}")
    parser.add_argument("--cmake-dir", action=_CMakeDir, help="print the directory of the "
                        "CMake package (find_package(polycoal CONFIG PATHS <dir>))")
    sub = parser.add_subparsers(dest="command", required=True)
    analyze = sub.add_parser("analyze", help="report the coalescing of every kernel's "
                             "global-memory references, races and outside-model constructs")
    analyze.add_argument("input", help="a .cu file, or - for standard input")
    add_preprocessor_options(analyze)
    analyze.add_argument("--kernel", help="analyse only this kernel")
    analyze.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    analyze.add_argument("-o", "--output", help="write the report here instead of stdout")
    transform = sub.add_parser("transform", help="restructure kernels for coalesced access "
                               "and rewrite their launches")
    transform.add_argument("input", nargs="?", help="a .cu file, or - for standard input "
                           "(none with -p)")
    transform.add_argument("-o", "--output", default="-",
                           help="where to write the program (default: standard output); "
                           "with -p, the directory of the changed sources")
    transform.add_argument("-p", "--project", metavar="BUILD_DIR",
                           help="transform every CUDA translation unit of the compile "
                           "database BUILD_DIR/compile_commands.json, each with its own "
                           "flags (CMake: -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; Make: bear -- "
                           "make); the report goes to standard output")
    transform.add_argument("--root", metavar="DIR", help="with -p: the directory the "
                           "sources' paths under -o are relative to (default: their "
                           "deepest common directory)")
    transform.add_argument("-j", "--jobs", type=positive, metavar="N",
                           help="with -p: translation units transformed at once, each in "
                           "a process of its own (default: the CPUs available)")
    add_preprocessor_options(transform)
    add_transform_options(transform)
    transform.add_argument("--placement", action="store_true",
                           help="then place the arrays each kernel of the transformed "
                           "program only reads across memory kinds as polycoal place does, "
                           "by the memory specification's costs alone (its report on "
                           "standard error), instead of the placement pass (where the "
                           "performance model predicts a gain too)")
    add_arg_option(transform)
    transform.add_argument("--report", choices=("text", "json", "sarif"), default="text",
                           help="format of the report printed on standard error (with -p: "
                           "on standard output, and sarif too)")
    for what in ("model", "deps", "ilp", "schedule"):
        transform.add_argument(f"--dump-{what}", action="store_true",
                               help=f"print the {what} of each kernel on standard error")
    transform.add_argument("--measure", action="store_true",
                           help="run each changed kernel beside the original on the GPU at "
                           "the program's sizes (--arg), as validate --device does, and keep "
                           "the original where the change is not measured faster (needs "
                           "pycuda)")
    transform.add_argument("--repeat", type=int, default=10,
                           help="with --measure: timed launches per kernel (median)")
    transform.add_argument("--dump-sizes", action="store_true",
                           help="print the shape of each tiled kernel on standard error, "
                           "as --sizes reads it")
    validate = sub.add_parser("validate", help="transform, then run original and "
                              "transformed kernels on the same random inputs and compare")
    validate.add_argument("input", help="a .cu file")
    add_preprocessor_options(validate)
    where = validate.add_mutually_exclusive_group(required=True)
    where.add_argument("--cpu", action="store_true",
                       help="run both kernels on the CPU (small sizes: use -D)")
    where.add_argument("--device", action="store_true",
                       help="run and time both kernels on the GPU (needs pycuda)")
    validate.add_argument("--repeat", type=int, default=10,
                          help="timed launches per kernel with --device (median reported)")
    validate.add_argument("--report", choices=("text", "json"), default="text")
    add_transform_options(validate)
    _add_run_options(validate, "random seed (default: a fresh one, printed)", None)
    bench = sub.add_parser("bench", help="the performance model's prediction beside the "
                           "measurement on the GPU, for every kernel (needs pycuda)")
    bench.add_argument("input", nargs="?", help="a .cu file (or -p BUILD_DIR)")
    bench.add_argument("-p", "--project", metavar="BUILD_DIR",
                       help="every CUDA unit of the compile database in BUILD_DIR (or the "
                       "compile_commands.json named), each with its own flags")
    add_preprocessor_options(bench)
    bench.add_argument("--repeat", type=int, default=10,
                       help="timed launches per kernel (median reported)")
    bench.add_argument("--report", choices=("text", "json"), default="text")
    add_transform_options(bench)
    add_arg_option(bench)
    trace = sub.add_parser("trace", help="instrument every global load and store, run the "
                           "kernels, and report the core paper's Algorithm 1 per reference")
    trace.add_argument("input", help="a .cu file")
    add_preprocessor_options(trace)
    where = trace.add_mutually_exclusive_group()
    where.add_argument("--cpu", action="store_true", help="run on the CPU (the default; "
                       "small sizes: use -D)")
    where.add_argument("--device", action="store_true", help="run on the GPU (needs pycuda)")
    trace.add_argument("--hardware", "--ncu", dest="hardware", action="store_true",
                       help="also run the original kernels on the GPU under Nsight Compute "
                       "(ncu on PATH, or POLYCOAL_NCU) and report their global load/store "
                       "sectors per request beside the trace's")
    trace.add_argument("--kernel", help="trace only this kernel")
    trace.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    trace.add_argument("-o", "--output", help="write the report here instead of stdout")
    trace.add_argument("--max-records", type=positive, default=2_000_000,
                       help="trace records kept at most per kernel (whole blocks are sampled "
                       "to fit; default 2000000)")
    _add_run_options(trace, "random seed of the inputs (default 1)", 1)
    place = sub.add_parser("place", help="choose where each array a kernel only reads "
                           "lives (global, the read-only path, constant memory) by the "
                           "memory specification's cost model, and write the program so")
    place.add_argument("input", help="a .cu file, or - for standard input")
    place.add_argument("-o", "--output", default="-",
                       help="where to write the program (default: standard output)")
    add_preprocessor_options(place)
    place.add_argument("--memory-spec", metavar="FILE",
                       help="the memories (default: grammars/memory_sm90.toml, sm_90)")
    place.add_argument("--place", action="append", default=[], type=_placement,
                       metavar="[KERNEL:]ARRAY=MEMORY",
                       help="put ARRAY (of KERNEL, or of every kernel) in MEMORY whatever "
                       "the cost model says (it must be legal there); repeat for more")
    place.add_argument("--report", choices=("text", "json"), default="text",
                       help="format of the report printed on standard error")
    place.add_argument("--trace", action="store_true",
                       help="price the reads at subscripts that are not affine by their "
                       "addresses traced on the CPU (as polycoal trace runs the kernel: "
                       "sizes from the launch, -D and --arg), not drawn at random")
    place.add_argument("--device", action="store_true",
                       help="run each placed kernel beside the kernel as written on the GPU "
                       "(needs pycuda; sizes from the launch, -D and --arg): report the "
                       "measured effect, and leave as written a kernel whose outputs differ "
                       "or that runs slower")
    place.add_argument("--repeat", type=positive, default=10,
                       help="timed launches per kernel with --device (median reported)")
    _add_run_options(place, "random seed of the traced inputs (default 1)", 1)
    sub.add_parser("launch", usage="polycoal launch <compiler> [compiler arguments...]",
                   help="compiler launcher for builds: transform the CUDA sources of a "
                   "compile command, then run the compiler on them "
                   "(CMAKE_CUDA_COMPILER_LAUNCHER=\"polycoal;launch\")")
    prepare = sub.add_parser("prepare", help="the build step of one source: transformed "
                             "(or the original when polycoal cannot), with #line directives "
                             "to it, through the build cache")
    prepare.add_argument("input", help="a .cu file")
    prepare.add_argument("-o", "--output", required=True, help="the file to compile instead")
    add_preprocessor_options(prepare)
    prepare.add_argument("--std", default=DEFAULT_STD, help="language standard, as -std")
    prepare.add_argument("--depfile", help="write the files read here (make syntax)")
    prepare.add_argument("--compile-option", dest="compile_options", action="append",
                         default=[], metavar="OPTION",
                         help="an element of the build's compile options (the CMake "
                         "package gives a target's COMPILE_OPTIONS, `SHELL:` ones included, "
                         "as --compile-option=OPTION): the forced includes among them "
                         "(-include, --pre-include, -imacros) are read as -include and "
                         "-imacros are")
    return parser


def _placement(text: str) -> tuple[tuple[str | None, str], str]:
    m = re.fullmatch(r"(?:([A-Za-z_]\w*):)?([A-Za-z_]\w*)=([A-Za-z_]\w*)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}': expected [KERNEL:]ARRAY=MEMORY")
    return (m.group(1), m.group(2)), m.group(3)


def _add_run_options(p: argparse.ArgumentParser, seed_help: str, seed: int | None) -> None:
    """Options of commands that run kernels: int argument values and the input seed."""
    add_arg_option(p)
    p.add_argument("--seed", type=int, default=seed, help=seed_help)


def _read(args):
    from polycoal.frontend import read_program
    from polycoal.output import decode
    options = preprocessor_options(args)
    if args.input == "-":
        stream = getattr(sys.stdin, "buffer", None)      # bytes, as from a file
        text = decode(stream.read()) if stream is not None else sys.stdin.read()
        return read_program("<stdin>.cu", options, text=text)
    return read_program(args.input, options)


def _write(text: str, path: str | None) -> None:
    from polycoal.output import write_atomically, write_stdout
    if path is None or path == "-":
        write_stdout(text)
    else:
        write_atomically(path, text)


def _check_outputs(args) -> None:
    """Before any work: every file the command will write can take it (see
    polycoal.output.check_output)."""
    from polycoal.output import check_output
    if getattr(args, "project", None):
        return                          # an output directory: polycoal/project.py checks it
    inputs = (getattr(args, "input", None),)
    for name in ("output", "depfile"):
        check_output(getattr(args, name, None), inputs)


def _layouts(pa) -> list[dict]:
    """The arrays of structs of the analysed kernels, as reports show them."""
    from polycoal.optimize.layout_plan import plan_layouts, summary
    analyses = [ka for ka in pa.kernels if ka.model is not None]
    return [summary(d, analyses) for d in plan_layouts(pa.program, analyses)]


def _irregular(pa) -> list[dict]:
    """The irregular references of the analysed kernels and their reorganisations."""
    from polycoal.optimize.reorganise import plan_program, summary
    analyses = [ka for ka in pa.kernels if ka.model is not None]
    plans = plan_program(pa.program, analyses, analyses, [])
    return [summary(plans[ka.kernel.name]) for ka in analyses
            if ka.kernel.name in plans and plans[ka.kernel.name].found]


def cmd_analyze(args) -> int:
    from polycoal.analysis import analyze_program
    from polycoal.report import json_report, sarif, text
    from polycoal.report.findings import program_diagnostics
    program = _read(args)
    pa = analyze_program(program, args.kernel)
    layouts, irregular = _layouts(pa), _irregular(pa)
    if args.format == "json":
        out = json.dumps(json_report.render(pa, layouts, irregular), indent=2) + "\n"
    elif args.format == "sarif":
        out = json.dumps(sarif.render(pa), indent=2) + "\n"
    else:
        out = text.render(pa, layouts, irregular)
    _write(out, args.output)
    errors = [d for d in program_diagnostics(pa) if d.severity == "error"]
    return 1 if errors else 0


def _project_arguments(args) -> None:
    """The options `transform -p` takes (InputError for the others: they name one file,
    or what the compile database gives each unit)."""
    if args.input is not None:
        raise InputError("transform -p reads its sources from the compile database: give "
                         f"no input file ({args.input})")
    if args.output in (None, "-"):
        raise InputError("transform -p needs -o OUT_DIR, the directory of the changed "
                         "sources")
    given = [name for name, value in (
        ("-I", args.include_dirs), ("-D", args.defines), ("-U", args.undefines),
        ("-include", args.forced_includes), ("-imacros", args.imacros),
        ("--kernel", args.kernel), ("--placement", args.placement),
        *((f"--dump-{w}", getattr(args, f"dump_{w}"))
          for w in ("model", "deps", "ilp", "schedule", "sizes"))) if value]
    if given:
        raise InputError(f"transform -p: {given[0]} applies to one file" + (
            " (each unit's -I/-D/-U/-include come from its compile command)"
            if given[0] in ("-I", "-D", "-U", "-include", "-imacros") else ""))


def cmd_transform_project(args) -> int:
    from dataclasses import replace
    from polycoal.project import transform_project
    _project_arguments(args)
    options, jobs = transform_options(args), args.jobs
    if args.measure:
        from polycoal.bench import require_device
        require_device("transform -p --measure")
        # one unit at a time: units timed side by side on one GPU would slow each other
        options, jobs = replace(options, measure=args.repeat), 1
    return transform_project(args.project, args.output, options, args.root, jobs,
                             args.report)


def cmd_transform(args) -> int:
    from dataclasses import asdict
    from polycoal.report import dumps, json_report
    from polycoal.transform import transform_program
    if args.project:
        return cmd_transform_project(args)
    if args.input is None:
        raise InputError("transform: give a .cu file (or - for standard input), or -p "
                         "BUILD_DIR for a whole project")
    unused = [name for name, value in (("--root", args.root), ("--jobs", args.jobs)) if value]
    if unused:
        raise InputError(f"transform: {unused[0]} applies only with -p BUILD_DIR")
    if args.report == "sarif":
        raise InputError("transform: --report sarif is for a whole project (-p); one file's "
                         "report is text or json")
    program = _read(args)
    require_usable(program)
    options = transform_options(args)
    if args.measure:
        from polycoal.bench import measured_transform, measurement_notes
        result, verdicts = measured_transform(program, options, int_arguments(args),
                                              args.repeat)
        for note in measurement_notes(program, verdicts):
            print(f"polycoal: {note.message}", file=sys.stderr)
    else:
        result = transform_program(program, options)
    for d in result.decisions:
        for flag, fn in (("dump_model", dumps.dump_model), ("dump_deps", dumps.dump_dependences),
                         ("dump_ilp", dumps.dump_ilp), ("dump_schedule", dumps.dump_schedule),
                         ("dump_sizes", dumps.dump_sizes)):
            if getattr(args, flag):
                sys.stderr.write(fn(d))
    diagnostics = [x for x in program.diagnostics if x.kernel not in result.superseded] + \
        result.diagnostics
    if args.report == "json":
        report = {"schema": "polycoal-transform", "schema_version": 1, "file": program.path,
                  "kernels": [{"name": d.kernel, "action": d.action, "code": d.code, "reason": d.reason,
                               "axes": dict(d.generated.axis_dims) if d.generated else None,
                               "block": list(d.generated.block) if d.generated else None,
                               # the performance model's prices of the forms proposed
                               # and of the kernel as written, and the one taken
                               "predicted": d.predicted.as_json() if d.predicted else None,
                               "empirical": [asdict(f) for f in d.empirical.candidates]
                               if d.empirical else None,
                               # conditions each launch checks on the host before it
                               # runs the changed kernel (the original runs otherwise)
                               "runtime_checks": ([{"condition": d.assumption.constraint,
                                                    "kernel": d.emitted,
                                                    "why": d.assumption.purpose}]
                                                  if d.assumption else []) +
                               [{"condition": pair.describe(), "host": pair.to_c(),
                                 "kernel": d.emitted, "why": "pointer arguments distinct"}
                                for pair in d.disjoint]}
                              for d in result.decisions],
                  "diagnostics": [json_report.diagnostic(x) for x in diagnostics]}
    text, placed = result.text, None
    if args.placement:
        from polycoal.model.memory_spec import load_spec
        from polycoal.report.placement import placement_json, placement_text
        spec = load_spec()
        placed = _place_transformed(program, text, spec, args)
        text = placed.text
    if args.report == "json":
        if placed is not None:
            report["placement"] = placement_json(program, spec, placed)
        sys.stderr.write(json.dumps(report, indent=2) + "\n")
    else:
        for x in diagnostics:
            print(x, file=sys.stderr)
        if placed is not None:
            sys.stderr.write(placement_text(spec, placed))
    from polycoal.output import relocate_includes
    _write(relocate_includes(text, program.path, args.output), args.output)
    return 1 if any(x.severity == "error" for x in result.diagnostics) or \
        (placed is not None and any(d.severity == "error" for d in placed.diagnostics)) else 0


def _place_transformed(program, text: str, spec, args):
    """`transform --placement`: the transformed program's placement, as polycoal place
    makes it."""
    from polycoal.frontend import read_again
    from polycoal.placement import place_program
    preprocessor = preprocessor_options(args)
    transformed = read_again(program, preprocessor, text)
    return place_program(transformed, spec, {}, preprocessor)


def cmd_place(args) -> int:
    from polycoal.model.memory_spec import load_spec
    from polycoal.placement import place_program
    from polycoal.report.placement import placement_json, placement_text
    program = _read(args)
    require_usable(program)
    spec = load_spec(args.memory_spec)
    observed, notes = {}, {}
    if args.trace:
        from polycoal.placement import trace_reads
        observed, notes = trace_reads(program, int_arguments(args), args.seed)
    result = place_program(program, spec, dict(args.place), preprocessor_options(args),
                           observed, notes)
    measured = []
    if args.device:
        result, measured = _place_measured(program, spec, result, args, observed, notes)
    if args.report == "json":
        sys.stderr.write(json.dumps(placement_json(program, spec, result, measured),
                                    indent=2) + "\n")
    else:
        sys.stderr.write(placement_text(spec, result, measured))
    from polycoal.output import relocate_includes
    _write(relocate_includes(result.text, program.path, args.output), args.output)
    return 1 if any(d.severity == "error" for d in result.diagnostics) or \
        any(not m.ok and not m.message.startswith("not run") for m in measured) else 0


def _place_measured(program, spec, result, args, observed, notes):
    """`place --device`: every placed kernel measured; one whose outputs differ, or
    that ran slower than as written (a size the launch fixes: one chosen at run time
    leaves that to its launches), placed again with its arrays in global memory."""
    from polycoal.placement import place_program
    from polycoal.validate.device import load_pycuda
    from polycoal.validate.placement_device import measure_placement
    load_pycuda()
    measured = measure_placement(program, result, int_arguments(args), args.repeat)
    undo = {m.kernel for m in measured
            if (not m.ok and not m.message.startswith("not run")) or
            (m.slower and not next(k for k in result.kernels if k.kernel == m.kernel).sized)}
    if not undo:
        return result, measured
    overrides = dict(args.place)
    overrides.update({(k.kernel, a.reads.array): "global" for k in result.kernels
                      if k.kernel in undo for a in k.arrays})
    again = place_program(program, spec, overrides, preprocessor_options(args),
                          observed, notes)
    for k in again.kernels:
        if k.kernel in undo:
            m = next(m for m in measured if m.kernel == k.kernel)
            k.reason = (f"measured on this device: {m.message}" if not m.ok else
                        f"measured slower on this device (x{m.speedup:.2f})")
    return again, measured


def cmd_validate(args) -> int:
    import random
    from polycoal.transform import transform_program
    from polycoal.validate.cpu import validate_cpu
    arguments = int_arguments(args)
    program = _read(args)
    require_usable(program)
    options = transform_options(args)
    result = transform_program(program, options)
    if args.device:
        return _validate_device(program, result, options, arguments, args)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"polycoal validate --cpu {program.path} (seed {seed})")
    verdicts = validate_cpu(program, result, options, arguments, seed)
    failed = False
    for v in verdicts:
        status = "PASS" if v.ok else "FAIL"
        print(f"  {v.kernel:28s} {status}  {v.message}")
        for a in v.arrays:
            print(f"      {a.name:16s} {a.elements:9d} elements  max |diff| {a.max_abs:.3e}  "
                  f"rel L2 {a.rel_l2:.3e}  {'ok' if a.ok else 'MISMATCH'}")
        failed = failed or not v.ok
    for x in result.diagnostics:
        if x.severity == "error":
            print(x, file=sys.stderr)
            failed = True
    return 1 if failed else 0


def _validate_device(program, result, options, arguments, args) -> int:
    from polycoal.validate.device import validate_device
    verdicts = validate_device(program, result, options, arguments, args.repeat)
    if args.report == "json":
        print(json.dumps([{"kernel": v.kernel, "ok": v.ok, "message": v.message,
                           "original_ms": v.original_ms, "transformed_ms": v.transformed_ms,
                           "speedup": v.speedup, "bytes": v.bytes_moved, "arrays": v.arrays,
                           "grid": list(v.grid), "block": list(v.block),
                           "new_grid": list(v.new_grid), "new_block": list(v.new_block),
                           "slower": v.slower}
                          for v in verdicts], indent=2))
    else:
        print(f"polycoal validate --device {program.path}")
        print(f"  {'kernel':24s} {'verdict':8s} {'original ms':>12s} {'new ms':>10s} "
              f"{'speedup':>8s}  message")
        for v in verdicts:
            t = (f"{v.original_ms:12.4f} {v.transformed_ms:10.4f} {v.speedup:8.1f}x"
                 if v.speedup else f"{'':12s} {'':10s} {'':8s} ")
            verdict = "FAIL" if not v.ok else "SLOWER" if v.slower else "PASS"
            print(f"  {v.kernel:24s} {verdict:8s} {t}  {v.message}")
    for v in verdicts:
        if v.slower:
            print(f"polycoal: warning: kernel '{v.kernel}' ran slower transformed than as "
                  f"written ({v.original_ms:.4f} ms -> {v.transformed_ms:.4f} ms, "
                  f"x{v.speedup:.2f}) on this device", file=sys.stderr)
    return 0 if all(v.ok and not v.slower for v in verdicts) else 1


def cmd_bench(args) -> int:
    from polycoal.bench import bench, table
    from polycoal.project import bench_project
    if args.project:
        if args.input is not None:
            raise InputError("bench -p reads its sources from the compile database: give "
                             f"no input file ({args.input})")
        units = bench_project(args.project, transform_options(args), int_arguments(args),
                              args.repeat)
        if args.report == "json":
            print(json.dumps(units, indent=1))
        else:
            for u in units:
                print(table(u["file"], u["rows"]) if "rows" in u else
                      f"polycoal bench {u['file']}: {u['error']}", end="" if "rows" in u
                      else "\n")
        return 0 if all("rows" in u and all(r["measured"] is None or r["measured"]["ok"]
                                            for r in u["rows"]) for u in units) else 1
    if args.input is None:
        raise InputError("bench: give a .cu file, or -p BUILD_DIR for a whole project")
    program = _read(args)
    require_usable(program)
    rows = bench(program, transform_options(args), int_arguments(args), args.repeat)
    print(json.dumps(rows, indent=1) if args.report == "json" else table(program.path, rows),
          end="" if args.report == "text" else "\n")
    return 0 if all(r["measured"] is None or r["measured"]["ok"] for r in rows) else 1


def _trace_hardware(args, arguments):
    """Counters of the original kernels under Nsight Compute (reported, never fatal)."""
    from polycoal.dynamic.hardware import measure
    return measure([{"path": args.input, "defines": args.defines,
                     "undefines": args.undefines, "include_dirs": args.include_dirs,
                     "forced_includes": args.forced_includes, "imacros": args.imacros,
                     "arguments": arguments, "seed": args.seed,
                     "kernels": [args.kernel] if args.kernel else None}])


def cmd_trace(args) -> int:
    from polycoal.analysis import analyze_program
    from polycoal.dynamic.collect import trace_program
    from polycoal.report import trace
    arguments = int_arguments(args)
    if args.device:
        from polycoal.validate.device import load_pycuda
        load_pycuda()
    program = _read(args)
    pa = analyze_program(program, args.kernel)
    traces = trace_program(pa.kernels, program, arguments,
                           "device" if args.device else "cpu", args.max_records, args.seed)
    summary = trace.summarise(traces)
    hardware = _trace_hardware(args, arguments) if args.hardware else None
    irregular = {s["kernel"]: s for s in _irregular(pa)}
    if args.format == "json":
        out = json.dumps(trace.render_json(program.path, summary, hardware, irregular),
                         indent=2) + "\n"
    elif args.format == "sarif":
        out = json.dumps(trace.render_sarif(program.path, summary, hardware), indent=2) + "\n"
    else:
        out = trace.render_text(summary, hardware, irregular)
    _write(out, args.output)
    return 1 if any(t.error for t in traces) else 0


def cmd_prepare(args) -> int:
    from polycoal.build.launcher import prepare_file
    options = preprocessor_options(args)
    if args.compile_options:
        from dataclasses import replace
        forced, imacros = forced_includes_of(args.compile_options)
        options = replace(options, forced_includes=options.forced_includes + forced,
                          imacros=options.imacros + imacros)
    return prepare_file(args.input, args.output, options, args.depfile)


def forced_includes_of(options: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the -include/--pre-include files, the -imacros files) of a target's compile
    options as CMake holds them (`SHELL:-include a.h` one element, split as a shell
    would; `-include;a.h` two)."""
    import shlex
    from polycoal.build.command import parse_command
    args: list[str] = []
    for option in options:
        if option.startswith("SHELL:"):
            try:
                args += shlex.split(option[len("SHELL:"):])
            except ValueError:
                args.append(option[len("SHELL:"):])
        elif option:
            args.append(option)
    command = parse_command(args)
    return tuple(command.forced_includes), tuple(command.imacros)


INTERNAL_ERROR = 3      # exit status of a failure inside polycoal (a bug), see README


def _internal_error(error: Exception) -> int:
    """One line on standard error instead of a traceback (POLYCOAL_TRACEBACK=1 prints
    the traceback too, for a bug report)."""
    import os
    import traceback
    if os.environ.get("POLYCOAL_TRACEBACK", "") not in ("", "0"):
        traceback.print_exc()
    message = (str(error).splitlines() or [""])[0]
    print(f"polycoal: internal error: {type(error).__name__}"
          + (f": {message}" if message else "")
          + " (a bug in polycoal; POLYCOAL_TRACEBACK=1 shows where)", file=sys.stderr)
    return INTERNAL_ERROR


def _closed_stdout() -> int:
    """Standard output closed under us (`polycoal transform in.cu | head`): say so once
    and keep Python from complaining again when it flushes at exit."""
    import os
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
    print("polycoal: error: standard output was closed before the output was written",
          file=sys.stderr)
    return 2


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["launch"]:           # everything after it belongs to the compiler
        from polycoal.build.launcher import launch
        return launch(argv[1:])
    args = _parser().parse_args(argv)
    try:
        _check_outputs(args)
        return {"analyze": cmd_analyze, "transform": cmd_transform, "validate": cmd_validate,
                "trace": cmd_trace, "prepare": cmd_prepare, "bench": cmd_bench,
                "place": cmd_place}[args.command](args)
    except InputError as error:
        print(error, file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0, 1 (a finding or a failed validation, per command), 2 (unusable
    input or output), 3 (an internal error), 130 (interrupted)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _closed_stdout()
    except Exception as error:          # a bug: one clear line, never a traceback
        return _internal_error(error)
