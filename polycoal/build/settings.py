"""Everything besides the source that decides what a build step produces, as one frozen
value built once per command from the command line and the environment, and hashed
whole into the build cache's key (see build/prepare.py), so that no change of a setting
can reuse a stale result.

It holds:
- the transformation's options (POLYCOAL_OPTIONS, the compile command's -I/-D/-U, -std
  and forced includes (-include, -imacros) as preprocessor options, and the column
  forms' shapes POLYCOAL_SPLIT and POLYCOAL_COLUMN_GROUPS, read with them by
  options.transform_options);
- the environment settings that change the output (`OUTPUT_ENVIRONMENT`): those shapes
  again as written, the preprocessor (POLYCOAL_CPP) and the host compiler of the CPU
  traces (CXX);
- the tools that read the source: the preprocessor and the C++ compiler that judges
  syntax errors (frontend/syntax.py), each as the file it resolves to, with its size and
  modification time (an upgraded compiler may predefine other macros).

Settings that change how a build runs but not what polycoal writes (POLYCOAL_DISABLE,
POLYCOAL_STRICT, POLYCOAL_VERBOSE, POLYCOAL_CACHE_DIR, POLYCOAL_NVCC) stay out of it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass

from polycoal.frontend.preprocess import PreprocessorOptions, preprocessor_command
from polycoal.frontend.syntax import compiler
from polycoal.transform import TransformOptions

OUTPUT_ENVIRONMENT = ("POLYCOAL_SPLIT", "POLYCOAL_COLUMN_GROUPS", "POLYCOAL_CPP", "CXX")


@dataclass(frozen=True)
class Tool:
    """An executable as a build step runs it."""

    command: tuple[str, ...]
    path: str | None = None          # the file it resolves to (symlinks followed)
    size: int = 0
    mtime_ns: int = 0


@dataclass(frozen=True)
class BuildOptions:
    transform: TransformOptions
    environment: tuple[tuple[str, str], ...] = ()    # OUTPUT_ENVIRONMENT's set names
    tools: tuple[Tool, ...] = ()

    @property
    def preprocessor(self) -> PreprocessorOptions:
        return self.transform.preprocessor

    def key_part(self) -> dict:
        """The whole value, as the cache key's options part (JSON-serialisable)."""
        return asdict(self)


def tool(command: list[str] | None, search_path: str | None) -> Tool:
    """`command` with the file its executable resolves to on `search_path`."""
    if not command:
        return Tool(())
    found = shutil.which(command[0], path=search_path)
    if found is None:
        return Tool(tuple(command))
    real = os.path.realpath(found)
    st = os.stat(real)
    return Tool(tuple(command), real, st.st_size, st.st_mtime_ns)


def build_options(environ, transform: TransformOptions) -> BuildOptions:
    """The build's options from `environ` (the launcher's environment) and the
    transformation's options, built once per command."""
    environment = tuple((name, environ[name]) for name in OUTPUT_ENVIRONMENT
                        if name in environ)
    search_path = environ.get("PATH")
    tools = (tool(preprocessor_command(environ), search_path),
             tool(compiler(environ), search_path))
    return BuildOptions(transform, environment, tools)
