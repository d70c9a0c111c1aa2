"""May two pointer arguments of a kernel point into the same memory?

The model treats every pointer argument as its own array; dependences, races and every
transformation rest on that. It holds when there is evidence: every pointer argument is
`__restrict__`; or the kernel has at most one pointer argument that is written; or
every launch passes pointer arguments that are distinct variables (or fields of
structs, `bufs.in`), each allocated by its own cudaMalloc in the program (two arguments
that are only read may share one). Otherwise polycoal does not transform the kernel,
unless told to assume it (--assume-no-alias), which is then reported.
"""

from __future__ import annotations

import re

from polycoal.frontend.lexer import matching, tokenize
from polycoal.frontend.program import Kernel, Program
from polycoal.model.kernel_model import KernelModel

_PATH = re.compile(r"[A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*)*")


def _uncast(argument: str) -> str:
    """A launch argument without the casts in front of it (`(const float (*)[N])d_in`
    passes d_in), spaces removed."""
    tokens = tokenize(argument)
    while len(tokens) > 2 and tokens[0].text == "(":
        close = matching(tokens, 0)
        if close + 1 >= len(tokens) or tokens[close + 1].kind != "id" or \
                not all(t.kind == "id" or t.text in ("*", "(", ")", "[", "]", "&") or
                        t.kind == "num" for t in tokens[1:close]):
            break
        tokens = tokens[close + 1:]
    return "".join(t.text for t in tokens)


def distinct_arrays(program: Program, kernel: Kernel, model: KernelModel
                    ) -> tuple[bool, str]:
    """(True, evidence) when the pointer arguments cannot alias, else (False, why not)."""
    pointers = [p for p in kernel.parameters if p.is_pointer]
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    if len([p for p in pointers if p.name in written]) == 0 or len(pointers) <= 1:
        return True, "at most one pointer argument"
    if all(p.is_restrict for p in pointers):
        return True, "every pointer argument is __restrict__"
    if len([p for p in pointers if p.name in written]) == 1 and \
            all(p.is_restrict or p.is_const for p in pointers if p.name not in written) and \
            all(p.is_restrict for p in pointers if p.name in written):
        return True, "the written pointer is __restrict__"
    allocated = program.allocations
    positions = [k for k, p in enumerate(kernel.parameters) if p.is_pointer]
    launches = program.launches_of(kernel.name)
    if not launches:
        return False, "no launch shows what the pointer arguments are"
    for launch in launches:
        args = [_uncast(launch.arguments[k]) if k < len(launch.arguments) else ""
                for k in positions]
        if not all(_PATH.fullmatch(a) for a in args):
            return False, (f"the launch at line {launch.location.line} passes pointer "
                           "expressions, not plain variables")
        missing = [a for a in args if a not in allocated]
        if missing:
            return False, (f"'{missing[0]}' (launch at line {launch.location.line}) is not "
                           "allocated by cudaMalloc in this file")
        # one allocation behind two arguments is harmless when neither is written
        passed: dict[str, list[str]] = {}
        for k, a in zip(positions, args):
            passed.setdefault(allocated[a], []).append(kernel.parameters[k].name)
        if any(len(names) > 1 and written & set(names) for names in passed.values()):
            return False, f"the launch at line {launch.location.line} passes one allocation twice"
    return True, ("every launch passes distinct cudaMalloc allocations to the pointers "
                  "it writes")
