"""Apply a thread-axis permutation to a kernel's text and to its launches.

In the kernel, every `threadIdx.o`, `blockIdx.o`, `blockDim.o` and `gridDim.o` of an
original axis o becomes the new axis that o moved to; in the launch, the grid and the
block are permuted the same way, so every thread keeps its (logical) coordinates and
its block mates. Nothing else in the text changes.
"""

from __future__ import annotations

from polycoal.codegen.launch import _plain, launch_parts, qualified_names, statement_indent
from polycoal.templates import render_template
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import matching, tokenize
from polycoal.frontend.program import Kernel, Launch
from polycoal.optimize.permutation import Permutation, launch_takes, open_checks


def builtin_uses(text: str) -> int:
    d = cuda_dialect()
    names = {d.thread_index, d.block_index, d.block_dim, d.grid_dim}
    tokens = tokenize(text)
    return sum(1 for k, t in enumerate(tokens[:-2]) if t.text in names and
               tokens[k + 1].text == "." and tokens[k + 2].text in d.axes)


def permute_kernel(original: str, kernel: Kernel, perm: Permutation,
                   name: str | None = None) -> str:
    """The kernel's text with its thread axes permuted (and named `name` when given: a
    permuted copy beside the original)."""
    d = cuda_dialect()
    names = {d.thread_index, d.block_index, d.block_dim, d.grid_dim}
    target = {o: n for n, o in perm.source.items()}
    text = original[kernel.span.start:kernel.span.end]
    tokens = tokenize(text)
    out, pos = [], 0
    for k, t in enumerate(tokens[:-2]):
        if t.text in names and tokens[k + 1].text == "." and tokens[k + 2].text in d.axes:
            axis = tokens[k + 2]
            out.append(text[pos:axis.start])
            out.append(target[axis.text])
            pos = axis.end
    out.append(text[pos:])
    text = "".join(out)
    tokens = tokenize(text)
    for k, t in enumerate(tokens):
        if t.text == "(" and k and tokens[k - 1].text == kernel.name:
            close = matching(tokens, k)
            body = next(j for j in range(close, len(tokens)) if tokens[j].text == "{")
            at = tokens[body].end
            comment = (f"\n  /* polycoal: thread axes permuted for coalesced access: "
                       f"{perm.describe()} (new <- original) */")
            if name and name != kernel.name:
                head = tokens[k - 1]
                return (text[:head.start] + name + text[head.end:at] + comment + text[at:])
            return text[:at] + comment + text[at:]
    raise ValueError(f"cannot find the body of kernel {kernel.name}")


def permute_launch(original: str, launch: Launch, perm: Permutation,
                   kernel: str | None = None) -> str | None:
    """The launch with grid and block permuted like the kernel's axes; with `kernel`
    (a permuted copy's name) and a guarded permutation, the copy runs where the launch's
    geometry fits the permuted axes and the original kernel elsewhere: the checks that
    the launch's known components decide are left out, and a launch that can never take
    the copy is not rewritten (None)."""
    name, config, args = launch_parts(original, launch)
    indent = statement_indent(original, launch)
    permuted = {"name": name, "grid": [f"pc_grid0.{perm.source[n]}" for n in "xyz"],
                "block": [f"pc_block0.{perm.source[n]}" for n in "xyz"]}
    checks, fallback = [], None
    if perm.guarded and kernel:
        block, grid = tuple(launch.block_parts), tuple(launch.grid_parts)
        if launch_takes(perm.source, block, grid) is False:
            return None
        qualifier, arguments = qualified_names(name, launch.kernel)
        permuted["name"] = qualifier + kernel + arguments
        checks = open_checks(perm.source, block, grid, "pc_block0", "pc_grid0")
        if checks:
            fallback = {"name": name, "grid": [f"pc_grid0.{n}" for n in "xyz"],
                        "block": [f"pc_block0.{n}" for n in "xyz"], "args": args}
    return render_template(
        "launch.cu.j2", note=f"thread axes permuted ({perm.describe()})"
        + (" where the launch's geometry allows" if checks else ""), name=_plain(name),
        was=[_plain(c) for c in config], config=config, evaluate_config=True,
        temporaries=[], original_geometry=True, extents=[], counts=[],
        launches=[permuted], main=0, extra=config[2:], stream=None, args=args,
        indent=indent, inner=indent + "  ", checks=checks, fallback=fallback)
