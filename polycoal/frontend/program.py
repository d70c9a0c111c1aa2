"""Plain data the front end produces: a program's kernels and launch sites."""

from __future__ import annotations

from dataclasses import dataclass, field

from pycparser import c_ast

from polycoal.diagnostics import Diagnostic, Location


# the name of a copy read only to judge a kernel follows the kernel's with this
JUDGED = "__pc_judged"


@dataclass(frozen=True)
class Span:
    """Character offsets [start, end) in the original file's text."""

    start: int
    end: int


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str               # element type for pointers ("float"), else the scalar type
    is_pointer: bool
    is_restrict: bool = False
    is_const: bool = False


@dataclass(frozen=True)
class Kernel:
    name: str
    location: Location
    parameters: list[Parameter]
    ast: c_ast.FuncDef | None           # None when the kernel could not be parsed
    span: Span | None                   # position in the original file, for splicing
    shared_lines: frozenset[int] = frozenset()   # lines holding __shared__ declarations
    unsupported: str | None = None      # why the kernel is outside what polycoal parses
    is_template: bool = False
    expanded: str = ""                  # the definition after preprocessing (macros expanded)


@dataclass(frozen=True)
class DeviceFunction:
    name: str
    location: Location
    parameters: list[Parameter]
    ast: c_ast.FuncDef | None
    expanded: str = ""


@dataclass(frozen=True)
class GlobalVariable:
    """A file-scope `__constant__` / `__device__` variable kernels may reference."""

    name: str
    space: str              # "constant" | "global"
    type: str
    location: Location
    expanded: str = ""                  # the declaration after preprocessing


@dataclass(frozen=True)
class Launch:
    kernel: str
    location: Location
    span: Span | None                   # the launch statement in the original file
    grid: str                           # the configuration's expressions, as written
    block: str                          # (after preprocessing)
    shared_bytes: str | None
    stream: str | None
    arguments: list[str]
    block_shape: tuple[int, int, int] | None    # when a compile-time constant
    grid_shape: tuple[int, int, int] | None
    constant_arguments: dict[str, int | float] = field(default_factory=dict)
    block_parts: tuple = (None, None, None)     # each component, when a constant
    grid_parts: tuple = (None, None, None)
    function: str | None = None         # the host function holding the launch
    context: object = None              # launches.LaunchContext, for geometry_for


@dataclass(frozen=True)
class Program:
    """The translation unit, read once (frontend.read_program): everything downstream
    reads this and returns edits of `text`; nothing re-reads the text."""

    path: str
    text: str                           # the original file, untouched
    kernels: list[Kernel]
    launches: list[Launch]
    device_functions: dict[str, DeviceFunction]
    globals: dict[str, GlobalVariable]
    diagnostics: list[Diagnostic]
    # file-scope integer constants (`constexpr int ROWS = 512;`) with their values, as
    # Clang evaluates them (frontend/clang.py): kernels and launches read them as numbers
    constants: dict[str, int] = field(default_factory=dict)
    tokens: tuple = ()                  # the tokens of `text` (lexer.tokenize)
    # variables and fields holding a cudaMalloc allocation -> the allocated variable
    allocations: dict[str, str] = field(default_factory=dict)
    # kernel name -> lines naming it outside its definition, launches and prototypes
    references: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # struct types by every name they are written with (frontend/structs.py)
    structs: dict = field(default_factory=dict)
    # the constants' declared types, as Clang reads them (`unsigned int` for a `constexpr
    # u32 W`): an unsigned constant compares in unsigned arithmetic
    constant_types: dict[str, str] = field(default_factory=dict)

    def kernel(self, name: str) -> Kernel | None:
        return next((k for k in self.kernels if k.name == name), None)

    def launches_of(self, name: str) -> list[Launch]:
        """The launches of a kernel; of a copy read only to judge a kernel
        (`k__pc_judged`, frontend/lower.py), the kernel's: how the program runs it."""
        own = [launch for launch in self.launches if launch.kernel == name]
        if own or JUDGED not in name:
            return own
        return [launch for launch in self.launches
                if launch.kernel == name[:name.index(JUDGED)]]
