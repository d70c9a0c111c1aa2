"""Compiler command lines (nvcc, or gcc/clang style) as plain data, and their rewriting.

`parse_command` reads what polycoal needs from the arguments after the compiler: the
CUDA sources (`.cu`, or any C/C++ file after `-x cu` / `-x cuda`), the preprocessor's
`-I/-isystem/-D/-U` and `-std`, the files read before the source (`-include`, nvcc's
`--pre-include`, `-imacros`), the output (`-o`) and the dependency file that `-MD/-MMD`
write (`-MF`, or the name the driver derives from `-o` or from the source). Everything
else (`-arch`, `-gencode`, `-Xcompiler`...) is carried through unchanged. Response files
(`@file`, nvcc's `--options-file/-optf`) are expanded. `rewrite_command` swaps sources
for their transformed copies and puts the originals' directories first on the include
path, so that `#include "x.h"` still resolves as it did beside the original.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from polycoal.diagnostics import InputError

# options whose value is the next argument (nvcc's short and long names, gcc's)
_VALUE_OPTIONS = frozenset("""
-o --output-file -include --pre-include -l --library -D --define-macro -U --undefine-macro
-I --include-path -isystem --system-include -L --library-path -odir --output-directory
-ccbin --compiler-bindir -arbin --archiver-binary -ldir --libdevice-directory -target-dir
--target-directory -opt-info --optimization-info -dopt --dopt -Xcompiler --compiler-options
-Xlinker --linker-options -Xarchive --archive-options -Xptxas --ptxas-options -Xnvlink
--nvlink-options -t --threads -split-compile --split-compile -keep-dir --keep-dir -time
--time -run-args --run-args -idp --input-drive-prefix -ddp --dependency-drive-prefix -dp
--drive-prefix -MT --dependency-target-name -MQ -MF --dependency-output -arch
--gpu-architecture -code --gpu-code -gencode --generate-code -maxrregcount --maxrregcount
-diag-error --diag-error -diag-suppress --diag-suppress -diag-warn --diag-warn -jtd
--jump-table-density -frandom-seed --frandom-seed -sanitize --sanitize -x --x -std --std
-m --machine -rdc --relocatable-device-code -cudart --cudart -cudadevrt --cudadevrt
-default-stream --default-stream -hls --host-linker-script -iquote -idirafter -imacros
-Xassembler -Xpreprocessor -Xcudafe -Xclang
""".split())
_RESPONSE_OPTIONS = ("-optf", "--options-file")
_INCLUDE = ("-I", "--include-path", "-isystem", "--system-include")
_DEFINE = ("-D", "--define-macro")
_UNDEFINE = ("-U", "--undefine-macro")
_FORCED = ("-include", "--pre-include")
# modes that compile nothing: preprocessing, dependency generation only, queries
_NO_COMPILE = frozenset("""-E --preprocess -M -MM --generate-dependencies
--generate-nonsystem-dependencies --version -V --help -h -dryrun --dryrun --list-gpu-arch
--list-gpu-code""".split())
_DEPFILE_FLAGS = frozenset(("-MD", "-MMD", "--generate-dependencies-with-compile",
                            "--generate-nonsystem-dependencies-with-compile"))
CUDA_SUFFIXES = (".cu",)
_C_SUFFIXES = (".c", ".cc", ".cp", ".cpp", ".cxx", ".c++", ".C")
_CUDA_LANGUAGES = ("cu", "cuda")


@dataclass(frozen=True)
class CompileCommand:
    args: tuple[str, ...]                # after the compiler, response files expanded
    sources: tuple[int, ...]             # indices in args of the CUDA sources
    include_dirs: tuple[str, ...]
    defines: tuple[str, ...]
    undefines: tuple[str, ...]
    std: str | None                      # e.g. "c++17"
    output: str | None
    depfile: str | None                  # written by the compiler (-MD), None if none
    compiles: bool                       # False: -E, -M, --version... (run it as it is)
    forced_includes: tuple[str, ...] = ()    # -include, --pre-include
    imacros: tuple[str, ...] = ()            # -imacros

    @property
    def source_paths(self) -> list[str]:
        return [self.args[i] for i in self.sources]


def expand_response_files(args: list[str], depth: int = 0) -> list[str]:
    """`@file` and `--options-file file[,file]` replaced by the arguments in the files."""
    if depth > 8:
        raise InputError("response files nest too deeply")
    out: list[str] = []
    k = 0
    while k < len(args):
        arg = args[k]
        files: list[str] = []
        if arg.startswith("@") and len(arg) > 1:
            files = [arg[1:]]
        elif arg in _RESPONSE_OPTIONS and k + 1 < len(args):
            k += 1
            files = args[k].split(",")
        elif arg.split("=", 1)[0] in _RESPONSE_OPTIONS and "=" in arg:
            files = arg.split("=", 1)[1].split(",")
        else:
            out.append(arg)
        for name in files:
            try:
                with open(name, encoding="utf-8") as f:
                    out += expand_response_files(shlex.split(f.read()), depth + 1)
            except OSError as error:
                raise InputError(f"{name}: cannot read response file: {error.strerror}") \
                    from error
        k += 1
    return out


def _option(args: list[str], k: int) -> tuple[str, str | None, int]:
    """(option name, its value or None, index of the next argument) at args[k]."""
    arg = args[k]
    if arg in _VALUE_OPTIONS:
        return arg, (args[k + 1] if k + 1 < len(args) else ""), k + 2
    name, eq, value = arg.partition("=")
    if eq and name in _VALUE_OPTIONS:
        return name, value, k + 1
    for short in ("-I", "-D", "-U", "-x", "-isystem"):
        if arg.startswith(short) and len(arg) > len(short):
            return short, arg[len(short):], k + 1
    return arg, None, k + 1


def _is_cuda(path: str, language: str | None) -> bool:
    if language is not None:
        return language in _CUDA_LANGUAGES and path.endswith(CUDA_SUFFIXES + _C_SUFFIXES)
    return path.endswith(CUDA_SUFFIXES)


def parse_command(argv: list[str]) -> CompileCommand:
    """Read the arguments after the compiler (see the module's docstring)."""
    args = expand_response_files(list(argv))
    sources, includes, defines, undefines, forced, imacros = [], [], [], [], [], []
    std = output = depfile = None
    language = None
    wants_depfile = False
    compiles = True
    k = 0
    while k < len(args):
        arg = args[k]
        if not arg.startswith("-") or arg == "-":
            if _is_cuda(arg, language):
                sources.append(k)
            k += 1
            continue
        name, value, k = _option(args, k)
        if name in _INCLUDE:
            includes.append(value)
        elif name in _DEFINE:
            defines.append(value)
        elif name in _UNDEFINE:
            undefines.append(value)
        elif name in _FORCED:             # nvcc's take a list: --pre-include a.h,b.h
            forced += [f for f in value.split(",") if f]
        elif name == "-imacros":
            imacros.append(value)
        elif name in ("-x", "--x"):
            language = None if value == "none" else value
        elif name in ("-std", "--std"):
            std = value
        elif name in ("-o", "--output-file"):
            output = value
        elif name in ("-MF", "--dependency-output"):
            depfile = value
        elif name in _DEPFILE_FLAGS:
            wants_depfile = True
        elif name in _NO_COMPILE:
            compiles = False
    if wants_depfile and depfile is None and (output or len(sources) == 1):
        base = output if output else os.path.basename(args[sources[0]])
        depfile = os.path.splitext(base)[0] + ".d"
    return CompileCommand(tuple(args), tuple(sources), tuple(includes), tuple(defines),
                          tuple(undefines), std, output, depfile if wants_depfile else None,
                          compiles, tuple(forced), tuple(imacros))


def rewrite_command(command: CompileCommand, copies: dict[str, str]) -> list[str]:
    """The arguments with each source in `copies` (original -> transformed copy) replaced,
    and the originals' directories first on the include path."""
    args = list(command.args)
    first: list[str] = []
    for k in command.sources:
        if args[k] in copies:
            directory = os.path.dirname(os.path.abspath(args[k]))
            if directory not in first:
                first.append(directory)
            args[k] = copies[args[k]]
    return [f"-I{d}" for d in first] + args
