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
from polycoal.templates import render_template

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


def _indent(original: str, launch: Launch) -> str:
    line_start = original.rfind("\n", 0, launch.span.start) + 1
    return re.match(r"[ \t]*", original[line_start:launch.span.start]).group(0)


def rewrite_launch(original: str, launch: Launch, kernel: Kernel, stages, hidden: list[str],
                   note: str) -> str:
    """The replacement text of the launch statement (templates/launch.cu.j2): one launch
    per stage, in order, on the original's stream, each with its grid computed on the
    host from this launch's values."""
    name, config, args = launch_parts(original, launch)
    unused = [c.strip() for c in config[:2] if _SIMPLE.match(c) and not c.strip()[0].isdigit()]
    values: dict[str, str] = {}
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    used_text = " ".join(r.host_lo + " " + r.host_hi for st in stages for r in st.ranges)
    launch_args, temporaries = list(args), []
    for p in kernel.parameters:
        if p.is_pointer or not re.search(rf"\b{re.escape(p.name)}\b", used_text):
            continue
        k = position[p.name]
        if k >= len(args):
            continue
        # host values in long long, as the device's bounds (codegen/isl_c.py): a size_t
        # or unsigned size would wrap at `n - 1` and mix types in the comparisons
        if _SIMPLE.match(args[k]):
            values[p.name] = f"((long long)({args[k].strip()}))"
        else:          # evaluate an argument with a call or side effect once
            temporaries.append({"name": f"pc_arg{k}", "value": args[k]})
            launch_args[k] = f"pc_arg{k}"
            values[p.name] = f"((long long)pc_arg{k})"
    original_geometry = bool(hidden) or bool(
        re.search(r"\b(pc_)?(nthreads|blockDim|gridDim)_[xyz]\b", used_text))
    if original_geometry:
        for a in "xyz":
            for prefix in ("", "pc_"):
                values[f"{prefix}gridDim_{a}"] = f"((long long)pc_grid0.{a})"
                values[f"{prefix}blockDim_{a}"] = f"((long long)pc_block0.{a})"
                values[f"{prefix}nthreads_{a}"] = f"((long long)pc_grid0.{a} * pc_block0.{a})"
    extents, launches, seen = [], [], {}
    for st in stages:
        grid = []
        for r in st.ranges:
            lo, hi = _substitute(r.host_lo, values), _substitute(r.host_hi, values)
            if (lo, hi) not in seen:
                seen[(lo, hi)] = f"pc_extent_{len(seen)}" if len(stages) > 1 \
                    else f"pc_extent_{r.axis}"
                extents.append({"name": seen[(lo, hi)], "lo": lo, "hi": hi})
            ext, b = seen[(lo, hi)], st.per_block["xyz".index(r.axis)]
            blocks = f"({ext} + {b - 1}) / {b}"
            grid.append(f"(unsigned)({ext} < 1 ? 1 : {blocks} < {GRID_LIMITS[r.axis]} ? "
                        f"{blocks} : {GRID_LIMITS[r.axis]})")
        grid += ["1"] * (3 - len(grid))
        launches.append({"name": st.kernel, "grid": grid, "block": list(st.block)})
    indent = _indent(original, launch)
    main = next(k for k, st in enumerate(stages) if st.kernel == kernel.name)
    return render_template(
        "launch.cu.j2", note=note, name=name, config=config, unused=unused,
        temporaries=temporaries, original_geometry=original_geometry, extents=extents,
        launches=launches, main=main, stream=config[3] if len(config) > 3 else None,
        args=launch_args + [values.get(h, h) for h in hidden], indent=indent,
        inner=indent + "  ")
