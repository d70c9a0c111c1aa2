"""Front end: a .cu file in, its kernels and launch sites out (see `read_program`)."""

from __future__ import annotations

import os

from polycoal.diagnostics import InputError
from polycoal.frontend.kernels import read_functions
from polycoal.frontend.launches import find_launches
from polycoal.frontend.preprocess import PreprocessedSource, PreprocessorOptions, preprocess
from polycoal.frontend.program import Program


def read_source(path: str) -> str:
    """The text of a source file, bytes kept (surrogate escapes), newlines as they are."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        return f.read()


def read_program(path: str, options: PreprocessorOptions = PreprocessorOptions(),
                 text: str | None = None, source: PreprocessedSource | None = None) -> Program:
    """Preprocess and read `path` (or `text` given for it, e.g. from stdin; with `source`
    as well, the text already preprocessed with `options`)."""
    if text is None:
        if not os.path.isfile(path):
            raise InputError(f"{path}: no such file")
        try:
            text = read_source(path)
        except OSError as error:
            raise InputError(f"{path}: cannot read: {error.strerror}") from error
        source = preprocess(path, options)
    elif source is None:
        source = preprocess(path, options, text=text)
    kernels, device_functions, variables, diagnostics = read_functions(source, text)
    launches = find_launches(source, text)
    by_name = {k.name: k for k in kernels}
    for launch in launches:
        kernel = by_name.get(launch.kernel)
        if kernel is None:
            continue
        launch.constant_arguments = {
            kernel.parameters[int(i)].name: v for i, v in launch.constant_arguments.items()
            if int(i) < len(kernel.parameters)}
    return Program(path, text, kernels, launches, device_functions, variables,
                   source.diagnostics + diagnostics)
