"""Rewrite launch sites for a new thread geometry.

A launch statement `k<<<grid, block[, shmem[, stream]]>>>(args);` becomes a block that
computes, on the host and from the values of this launch, the range of each new thread
axis, and launches enough blocks to cover it (clamped to the hardware's grid limits:
the kernel's grid-stride loops cover the rest). The range expressions are the ones of
the model, in the kernel's integer arguments (replaced by this launch's argument
expressions) and, when the domain depends on the original geometry (a kernel without a
guard runs exactly its launch's threads), in the original grid and block.
"""

from __future__ import annotations

import re

from polycoal.frontend.lexer import matching, split_top_level, tokenize
from polycoal.frontend.program import Kernel, Launch

GRID_LIMITS = {"x": 2147483647, "y": 65535, "z": 65535}
_SIMPLE = re.compile(r"^\s*(?:[A-Za-z_]\w*|\d+[uUlL]*)\s*$")


def launch_parts(original: str, launch: Launch) -> tuple[str, list[str], list[str]]:
    """(kernel name text, configuration, arguments) of a launch, as written."""
    text = original[launch.span.start:launch.span.end]
    tokens = tokenize(text)
    open_ = next(k for k, t in enumerate(tokens) if t.text == "<<<")
    close = next(k for k, t in enumerate(tokens) if t.text == ">>>")
    paren = close + 1
    end = matching(tokens, paren)

    def src(run):
        return text[run[0].start:run[-1].end] if run else ""
    config = [src(p) for p in split_top_level(tokens[open_ + 1:close])]
    args = [src(p) for p in split_top_level(tokens[paren + 1:end]) if p]
    return text[:tokens[open_].start].rstrip(), config, args


def _substitute(expr: str, values: dict[str, str]) -> str:
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: values.get(m.group(0), m.group(0)), expr)


def rewrite_launch(original: str, launch: Launch, kernel: Kernel, ranges, block,
                   hidden: list[str], note: str) -> str:
    """The replacement text of the launch statement."""
    name, config, args = launch_parts(original, launch)
    line_start = original.rfind("\n", 0, launch.span.start) + 1
    indent = re.match(r"[ \t]*", original[line_start:launch.span.start]).group(0)
    inner = indent + "  "
    lines = [f"{{ /* polycoal: {note}; was {name}<<<{', '.join(config)}>>> */"]
    unused = [c for c in config[:2] if _SIMPLE.match(c) and not c.strip()[0].isdigit()]
    if unused:   # the original geometry variables are no longer read: keep nvcc quiet
        lines.append(inner + " ".join(f"(void){c.strip()};" for c in unused))
    values: dict[str, str] = {}
    int_params = [p for p in kernel.parameters if not p.is_pointer]
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    used_text = " ".join(r.host_lo + " " + r.host_hi for r in ranges)
    launch_args = list(args)
    for p in int_params:
        if not re.search(rf"\b{re.escape(p.name)}\b", used_text):
            continue
        k = position[p.name]
        if k >= len(args):
            continue
        if _SIMPLE.match(args[k]):
            values[p.name] = f"({args[k].strip()})"
        else:
            tmp = f"pc_arg{k}"
            lines.append(f"{inner}const auto {tmp} = ({args[k]});")
            values[p.name] = tmp
            launch_args[k] = tmp
    if hidden or re.search(r"\b(pc_)?(nthreads|blockDim|gridDim)_[xyz]\b", used_text):
        lines.append(f"{inner}const dim3 pc_grid0({config[0]}), pc_block0({config[1]});")
        for a in "xyz":
            for prefix in ("", "pc_"):
                values[f"{prefix}gridDim_{a}"] = f"pc_grid0.{a}"
                values[f"{prefix}blockDim_{a}"] = f"pc_block0.{a}"
                values[f"{prefix}nthreads_{a}"] = f"((long long)pc_grid0.{a} * pc_block0.{a})"
    grid = []
    for r in ranges:
        lo = _substitute(r.host_lo, values)
        hi = _substitute(r.host_hi, values)
        ext = f"pc_extent_{r.axis}"
        b = block["xyz".index(r.axis)]
        lines.append(f"{inner}const long long {ext} = (long long)({hi}) - (long long)({lo}) + 1;")
        blocks = f"({ext} + {b - 1}) / {b}"
        grid.append(f"(unsigned)({ext} < 1 ? 1 : {blocks} < {GRID_LIMITS[r.axis]} ? "
                    f"{blocks} : {GRID_LIMITS[r.axis]})")
    while len(grid) < 3:
        grid.append("1")
    extra = [values[h] if h in values else h for h in hidden]
    rest = "".join(f", {c}" for c in config[2:])
    lines.append(f"{inner}{name}<<<dim3({', '.join(grid)}), dim3({', '.join(map(str, block))})"
                 f"{rest}>>>({', '.join(launch_args + extra)});")
    lines.append(f"{indent}}}")
    return "\n".join(lines)
