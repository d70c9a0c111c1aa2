"""Diagnostics: what polycoal tells the user, with a source position.

Every stage returns its diagnostics as plain values; only the command line turns them
into text and an exit status. `InputError` is raised for input polycoal cannot work on
at all (missing file, preprocessor failure, unknown kernel): the command line prints it
and exits with status 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "note")


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    severity: str          # "error" | "warning" | "note"
    code: str              # stable identifier, e.g. "race", "non-affine-subscript"
    message: str
    location: Location | None = None
    kernel: str | None = None

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else "polycoal: "
        return f"{where}{self.severity}: {self.message} [{self.code}]"


@dataclass
class InputError(Exception):
    """Input polycoal cannot process at all; reported with a location when known."""

    message: str
    location: Location | None = None
    details: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else "polycoal: "
        text = f"{where}error: {self.message}"
        return "\n".join([text, *self.details])


def require_usable(program) -> None:
    """Input `transform` and `validate` cannot work on (exit status 2): a syntax error in
    a kernel or device function (the C++ compiler's verdict, see frontend/syntax.py), or
    a header that is not found (the kernels would be read without its macros; a CUDA
    library's header, which polycoal has no use for, is only a note)."""
    unusable = [d for d in program.diagnostics
                if (d.code, d.severity) in (("syntax-error", "error"),
                                            ("missing-header", "warning"))]
    if unusable:
        first = unusable[0]
        message = first.message if first.code == "syntax-error" else \
            first.message.split(";")[0] + " (give its directory with -I)"
        raise InputError(message, first.location, [str(d) for d in unusable[1:]])
