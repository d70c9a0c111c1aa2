"""The `polycoal` command line."""

from __future__ import annotations

import argparse
import json
import sys

from polycoal import __version__
from polycoal.diagnostics import InputError


def _add_preprocessor_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="add DIR to the include path (as the compiler driver does)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="define a macro")
    p.add_argument("-U", dest="undefines", action="append", default=[], metavar="NAME",
                   help="undefine a macro")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="polycoal",
        description="Polyhedral source-to-source CUDA compiler for coalesced memory access.")
    parser.add_argument("--version", action="version", version=f"polycoal {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    analyze = sub.add_parser("analyze", help="report the coalescing of every kernel's "
                             "global-memory references, races and outside-model constructs")
    analyze.add_argument("input", help="a .cu file, or - for standard input")
    _add_preprocessor_options(analyze)
    analyze.add_argument("--kernel", help="analyse only this kernel")
    analyze.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    analyze.add_argument("-o", "--output", help="write the report here instead of stdout")
    return parser


def _read(args) -> "Program":   # noqa: F821 - imported lazily below
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    options = PreprocessorOptions(tuple(args.include_dirs), tuple(args.defines),
                                  tuple(args.undefines))
    if args.input == "-":
        return read_program("<stdin>.cu", options, text=sys.stdin.read())
    return read_program(args.input, options)


def _write(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    from polycoal.output import write_atomically
    write_atomically(path, text)


def cmd_analyze(args) -> int:
    from polycoal.analysis import analyze_program
    from polycoal.report import json_report, sarif, text
    from polycoal.report.findings import program_diagnostics
    program = _read(args)
    pa = analyze_program(program, args.kernel)
    if args.format == "json":
        out = json.dumps(json_report.render(pa), indent=2) + "\n"
    elif args.format == "sarif":
        out = json.dumps(sarif.render(pa), indent=2) + "\n"
    else:
        out = text.render(pa)
    _write(out, args.output)
    errors = [d for d in program_diagnostics(pa) if d.severity == "error"]
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"analyze": cmd_analyze}[args.command](args)
    except InputError as error:
        print(error, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
