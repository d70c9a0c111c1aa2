"""Rewrite launch sites for a new thread geometry.

A launch statement `k<<<grid, block[, shmem[, stream]]>>>(args);` becomes a block that
computes, on the host and from the values of this launch, the range of each new thread
axis, and launches enough blocks to cover it (clamped to the hardware's grid limits:
the kernel's grid-stride loops cover the rest). The range expressions are the ones of
the model, in the kernel's integer arguments (replaced by this launch's argument
expressions) and, when the domain depends on the original geometry (a kernel without a
guard runs exactly its launch's threads), in the original grid and block.

The block evaluates what the original launch evaluated, each expression exactly once
and in the original's order (CUDA evaluates the configuration before the arguments):

- the grid and the block go into `pc_grid0`, `pc_block0` whenever they read a variable
  or call a function (their side effects happen, the variables stay used: a `dim3 grid`
  the new launch no longer reads would otherwise be "set but never used", a warning);
- when an argument has a side effect (`p++`, `f()`, `i += 1`), every argument up to the
  last such one is bound to a temporary, in order (literals aside: a null pointer
  constant must reach its pointer parameter as written); the arguments after it are
  side-effect free and are evaluated by the launch, after all the side effects, as in
  the original order;
- shared-memory size and stream, when they have side effects, are bound as well (the
  stream is used by every launch of a multi-kernel replacement).

A launch through a qualified name (`ns::k`, `::k`) keeps its qualifier on every launch
of the replacement (the generated kernels sit next to the original, in its namespace).
"""

from __future__ import annotations

import re

from polycoal.model.isl_c import condition_to_c
from polycoal.frontend.launch_text import (has_side_effects, launch_parts, plain_text, received,
                                          qualified_names)
from polycoal.frontend.lexer import apply_edits, line_ending, tokenize
from polycoal.frontend.program import Kernel, Launch
from polycoal.optimize.products import SHARED_BYTES as STATIC_SHARED_BYTES
from polycoal.templates import render_template

GRID_LIMITS = {"x": 2147483647, "y": 65535, "z": 65535}
_SIMPLE = re.compile(r"^\s*(?:[A-Za-z_]\w*|\d+[uUlL]*)\s*$")
_LITERAL = re.compile(r"^\s*(?:[-+]?\s*[\d.][\w.+-]*|'(?:\\.|[^'])*'|\"(?:\\.|[^\"])*\"|"
                      r"NULL|nullptr|true|false)\s*$")
_TYPE_WORDS = {"dim3", "int", "unsigned", "signed", "long", "short", "char", "float",
               "double", "bool", "size_t", "const", "sizeof", "alignof", "static_cast",
               "reinterpret_cast", "const_cast", "void"}


def _reads_variables(expression: str) -> bool:
    """Whether a (preprocessed) expression names anything but types and literals."""
    return any(t.kind == "id" and t.text not in _TYPE_WORDS for t in tokenize(expression))


def _substitute(expr: str, values: dict[str, str]) -> str:
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: values.get(m.group(0), m.group(0)), expr)


def statement_indent(original: str, launch: Launch) -> str:
    """The white space before the launch statement on its line."""
    line_start = original.rfind("\n", 0, launch.span.start) + 1
    return re.match(r"[ \t]*", original[line_start:launch.span.start]).group(0)


def _bound_arguments(args: list[str], needed: set[int]) -> list[int]:
    """Positions of the arguments bound to temporaries: every one up to the last with a
    side effect (literals aside), and those the host ranges read that are not plain
    names or literals (evaluated once, not once per use)."""
    effects = [k for k, a in enumerate(args) if has_side_effects(a)]
    last = effects[-1] if effects else -1
    return [k for k, a in enumerate(args)
            if (k <= last and not _LITERAL.match(a))
            or (k in needed and not _SIMPLE.match(a))]


def rewrite_launch(original: str, launch: Launch, kernel: Kernel, stages, hidden: list[str],
                   note: str, assumption=None, copy: str | None = None,
                   disjoint=()) -> str:
    """The replacement text of the launch statement (templates/launch.cu.j2): one launch
    per stage, in order, on the original's stream, each with its grid computed on the
    host from this launch's values. With an `assumption` (optimize/assumptions.py), the
    new kernel is the copy `copy`: the stages run where the assumption holds at this
    launch's values, the original kernel, as launched, elsewhere; the same with
    `disjoint` pointer pairs, whose byte ranges at this launch's values must not
    overlap."""
    name, config, args = launch_parts(original, launch)
    qualifier, template_args = qualified_names(name, kernel.name)
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    condition = " && ".join(([condition_to_c(assumption.as_set())] if assumption else []) +
                            [f"({pair.to_c()})" for pair in disjoint])
    used_text = " ".join(r.host_lo + " " + r.host_hi for st in stages for r in st.ranges) \
        + " " + condition
    needed = {position[p.name] for p in kernel.parameters
              if not p.is_pointer and position[p.name] < len(args)
              and re.search(rf"\b{re.escape(p.name)}\b", used_text)}
    bound = _bound_arguments(args, needed)
    launch_args = [f"pc_arg{k}" if k in bound else a for k, a in enumerate(args)]
    temporaries = [{"name": f"pc_arg{k}", "value": args[k]} for k in bound]
    # host values in long long, as the device's bounds (model/isl_c.py): a size_t
    # or unsigned size would wrap at `n - 1` and mix types in the comparisons
    values = {p.name: received(p, launch_args[position[p.name]], "long long")
              for p in kernel.parameters if position[p.name] in needed}
    values.update({p.name: f"({launch_args[position[p.name]].strip()})"
                   for p in kernel.parameters if p.is_pointer and position[p.name] < len(args)
                   and re.search(rf"\b{re.escape(p.name)}\b", condition)})
    original_geometry = bool(hidden) or bool(condition) or bool(
        re.search(r"\b(pc_)?(nthreads|blockDim|gridDim)_[xyz]\b", used_text))
    if original_geometry:
        for a in "xyz":
            for prefix in ("", "pc_"):
                values[f"{prefix}gridDim_{a}"] = f"((long long)pc_grid0.{a})"
                values[f"{prefix}blockDim_{a}"] = f"((long long)pc_block0.{a})"
                values[f"{prefix}nthreads_{a}"] = f"((long long)pc_grid0.{a} * pc_block0.{a})"
    evaluate_config = original_geometry or any(
        _reads_variables(c) or has_side_effects(c) for c in (launch.grid, launch.block))
    extra = config[2:]
    if any(has_side_effects(c) for c in extra):
        for k, c in enumerate(extra):
            temporaries.insert(k, {"name": ("pc_shared", "pc_stream")[k], "value": c})
        extra = ["pc_shared", "pc_stream"][:len(extra)]
    stream = extra[1] if len(extra) > 1 else None
    extents, launches, seen, counts = [], [], {}, []
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
        if st.target_blocks and len(grid) >= 2:
            # capped_y_blocks, in the launch's host arithmetic
            x, y = f"pc_blocks_{len(counts)}", f"pc_blocks_{len(counts) + 1}"
            cap = f"({st.target_blocks}u + {x} - 1u) / {x}"
            counts += [{"name": x, "value": grid[0]},
                       {"name": y, "value": f"{grid[1]} < {cap} ? {grid[1]} : {cap}"}]
            grid[:2] = [x, y]
        grid += ["1"] * (3 - len(grid))
        suffix = template_args if st.kernel == kernel.name else ""
        named = copy if copy and st.kernel == kernel.name else st.kernel
        launches.append({"name": qualifier + named + suffix, "grid": grid,
                         "block": list(st.block), "shared": st.shared,
                         "raise": st.shared > STATIC_SHARED_BYTES})
    indent = statement_indent(original, launch)
    main = next(k for k, st in enumerate(stages) if st.kernel == kernel.name)
    checks, fallback = [], None
    if condition:
        checks = [_substitute(condition, values)]
        fallback = {"name": name.strip(), "grid": [f"pc_grid0.{a}" for a in "xyz"],
                    "block": [f"pc_block0.{a}" for a in "xyz"], "args": launch_args}
    return render_template(
        "launch.cu.j2", note=note + (" where the run-time check holds" if checks else ""),
        name=plain_text(name), was=[plain_text(c) for c in config],
        config=config, evaluate_config=evaluate_config or bool(checks),
        temporaries=temporaries,
        original_geometry=original_geometry, extents=extents, counts=counts, launches=launches,
        main=main, extra=extra, stream=stream,
        args=launch_args + [values.get(h, h) for h in hidden], indent=indent,
        inner=indent + "  ", checks=checks, fallback=fallback)


def waits_after_loops(text: str, loops) -> str:
    """`text` with each loop's waits for the device dropped and one wait made after the
    loop (optimize/launch_waits.LaunchLoop): a wait alone on its line goes with its
    line, a wait that is a loop's or an if's whole body becomes the empty statement; a
    loop that is itself such a body is braced with its wait."""
    ending = line_ending(text)
    edits = []
    for loop in loops:
        for w in loop.waits:
            first = text.rfind("\n", 0, w.start) + 1
            last = text.find("\n", w.end)
            last = len(text) if last < 0 else last
            if not w.in_block:
                edits.append((w.start, w.end, ";"))
            elif not text[first:w.start].strip() and not text[w.end:last].strip():
                edits.append((first, min(last + 1, len(text)), ""))
            else:
                edits.append((w.start, w.end, ""))
        many = len(loop.waits) > 1
        wait = (f"{loop.spelling};  /* polycoal: the loop's {len(loop.waits)} wait"
                f"{'s' if many else ''} for the device, once after it (launches into one "
                "stream run in order) */")
        if loop.in_block:
            first = text.rfind("\n", 0, loop.start) + 1
            indent = re.match(r"[ \t]*", text[first:loop.start]).group(0)
            edits.append((loop.end, loop.end, ending + indent + wait))
        else:
            edits.append((loop.start, loop.start, "{ "))
            edits.append((loop.end, loop.end, " " + wait + " }"))
    return apply_edits(text, edits)


_GLOBAL_HEAD = (r"\s*(?:static\s+)?__global__\s+(?:__launch_bounds__\s*\(([^()]*)\)\s+)?"
                r"void\s+{name}\s*\(")


def trips_kernels(kernel_text: str, name: str, parameters: list[str], parameter: str,
                  inclusive: bool) -> tuple[str, str, str] | None:
    """The kernel `name` (its definition as written) as the device function
    `name__pc_trip`, and the kernel that runs its trips from `pc_first` up to `pc_end`
    (optimize/launch_trips.py: the host loop's values, each converted to the parameter's
    type as the launch converted it): (the trips kernel's name, the device function, the
    trips kernel); None where the definition's head is not `[static] __global__
    [__launch_bounds__(...)] void name(`."""
    m = re.match(_GLOBAL_HEAD.format(name=re.escape(name)), kernel_text)
    if not m:
        return None
    depth, close = 0, None
    for k in range(m.end() - 1, len(kernel_text)):
        depth += {"(": 1, ")": -1}.get(kernel_text[k], 0)
        if depth == 0:
            close = k
            break
    if close is None:
        return None
    params = kernel_text[m.end():close]
    bounds = f"__launch_bounds__({m.group(1)}) " if m.group(1) else ""
    trips = f"{name}__pc_trips" + ("_through" if inclusive else "")
    args = ", ".join("pc_trip" if p == parameter else p for p in parameters)
    device = (f"__device__ __forceinline__ void {name}__pc_trip({params})"
              f"{kernel_text[close + 1:]}")
    text = (f"/* polycoal: {name} run for each trip of a host loop, each thread running its\n"
            f" * trips in order (no two threads touch one element in different trips) */\n"
            f"__global__ {bounds}void {trips}({params}, long long pc_first, long long pc_end)"
            f"\n{{\n"
            f"  for (long long pc_trip = pc_first; "
            f"pc_trip {'<=' if inclusive else '<'} pc_end; pc_trip++)\n"
            f"    {name}__pc_trip({args});\n}}")
    return trips, device, text


def trips_launch(loop, trips: str, indent: str) -> str:
    """The statement that replaces the host loop `loop` (optimize/launch_trips.TripLoop):
    the first trip's value, one launch of `trips` when the loop runs, the variable left
    as the loop leaves it, and the loop's wait after the launch."""
    inner = indent + "  "
    test = f"{loop.var} {'<=' if loop.inclusive else '<'} ({loop.hi})"
    lines = [f"{{ /* polycoal: the host loop over {loop.var} in one launch of {loop.kernel}, "
             "each thread running the trips */",
             f"{inner}{loop.declared + ' ' if loop.declared else ''}{loop.var} = {loop.lo};",
             f"{inner}if ({test}) {{",
             f"{inner}  {trips}<<<{loop.config}>>>({', '.join(loop.arguments)}, "
             f"(long long)({loop.var}), (long long)({loop.hi}));"]
    if not loop.declared:
        last = f"({loop.hi}) + 1" if loop.inclusive else loop.hi
        lines.append(f"{inner}  {loop.var} = {last};")
    if loop.wait:
        lines.append(f"{inner}  {loop.wait};")
    lines += [f"{inner}}}", f"{indent}}}"]
    return "\n".join(lines)
