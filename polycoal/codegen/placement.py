"""Write a placement (optimize/placement.py) into the program.

- read-only path (`ldg`): the pointer parameter becomes `const T *__restrict__ p` and
  every read `p[e]` becomes `__ldg(&p[e])`;
- constant memory: a `__constant__ T pc_const_<kernel>_<p>[last + 1]` before the kernel,
  every read `p[e]` becomes `pc_const_<kernel>_<p>[e]`, and each launch is preceded by
  `cudaMemcpyToSymbolAsync` of the elements the kernel reads, from the array the launch
  passes, on the launch's stream (ordered after whatever wrote the array there); where
  the host's writes to that array are all marked, only when it changed since the last
  copy (templates/placement_runtime.cu.j2).

A reference the text does not show as the model does (a macro, a member, a subscript of
a subscript) makes the kernel not rewritable: it stays as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from polycoal.codegen.launch import statement_indent
from polycoal.frontend.launch_text import has_side_effects, launch_parts
from polycoal.frontend.lexer import matching, tokenize
from polycoal.frontend.program import Kernel, Launch, Program
from polycoal.templates import render_template


class NotRewritable(Exception):
    """A kernel or launch the placement rewrite does not handle (the reason)."""


def symbol(kernel: str, array: str) -> str:
    return f"pc_const_{kernel}_{array}"


def _parameter_list(tokens, kernel: Kernel) -> tuple[int, int]:
    name = next((k for k, t in enumerate(tokens) if t.text == kernel.name and
                 k + 1 < len(tokens) and tokens[k + 1].text == "("), None)
    if name is None:
        raise NotRewritable("its parameter list is not written out")
    return name + 1, matching(tokens, name + 1)


def tile(array: str) -> str:
    return f"pc_tile_{array}"


@dataclass(frozen=True)
class Staging:
    """The shared-memory tile of one staged array: `rows` x `columns` elements from the
    block's first thread's element shifted by `top` rows and `low` columns (rows of
    `width` elements; width 0: one-dimensional, a tile of one row read at
    A[e] -> tile[e - base]); each element loaded where `inside` (C, of PC_ELEMENT)
    holds; `shifts`: each read's ((line, column), di, dj) in the text's order, its
    row and column offsets (Polys of the loops' counters by their source names;
    two-dimensional)."""

    low: int
    rows: int
    columns: int
    inside: str
    width: int = 0
    top: int = 0
    shifts: tuple = ()

    @property
    def size(self) -> int:
        return self.rows * self.columns


def _position(text: str, offset: int) -> tuple[int, int]:
    """(line, column), both from 1, of an offset into `text`."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _load_tile(array: str, element_type: str, st: Staging) -> list[str]:
    """The statements that fill one array's tile (before the kernel's barrier)."""
    t, base = tile(array), f"pc_base_{array}"
    if not st.width:
        element = f"({base} + pc_t)"
        head = [f"const long long {base} = (long long)blockIdx.x * blockDim.x + ({st.low});",
                f"for (int pc_t = threadIdx.x; pc_t < {st.size}; pc_t += blockDim.x)"]
    else:
        element = (f"((pc_row_{array} + pc_t / {st.columns}) * {st.width}LL + "
                   f"pc_col_{array} + pc_t % {st.columns})")
        head = [f"const long long pc_row_{array} = (long long)blockIdx.y * blockDim.y + "
                f"({st.top});",
                f"const long long pc_col_{array} = (long long)blockIdx.x * blockDim.x + "
                f"({st.low});",
                f"for (int pc_t = threadIdx.y * blockDim.x + threadIdx.x; pc_t < {st.size}; "
                f"pc_t += blockDim.x * blockDim.y)"]
    return [f"__shared__ {element_type} {t}[{st.size}];", *head,
            f"  if ({st.inside.replace('PC_ELEMENT', element)})",
            f"    {t}[pc_t] = {array}[{element}];"]


def rewrite_kernel(program: Program, kernel: Kernel, placed: dict[str, str],
                   sizes: dict[str, int], reads: dict[str, int],
                   staging: dict[str, Staging] | None = None) -> str:
    """The kernel's text with each array of `placed` (array -> spelling "ldg" |
    "constant" | "shared") read from its memory; `sizes`: the constant arrays'
    elements; `reads`: the model's reads of each array (the text must show as many);
    `staging`: each staged array's tile."""
    staging = staging or {}
    text = program.text[kernel.span.start:kernel.span.end]
    tokens = tokenize(text)
    open_, close = _parameter_list(tokens, kernel)
    edits: list[tuple[int, int, str]] = []
    types = {p.name: p.type for p in kernel.parameters}
    for array, spelling in placed.items():
        mentions = [k for k, t in enumerate(tokens) if t.text == array and k > close and
                    not tokens[k - 1].text in (".", "->", "::")]
        if len(mentions) != reads[array]:
            raise NotRewritable(f"'{array}' is read {reads[array]} times but written "
                                f"{len(mentions)} times in the kernel's text (a macro?)")
        for k in mentions:
            if k + 1 >= len(tokens) or tokens[k + 1].text != "[":
                raise NotRewritable(f"'{array}' is used other than as `{array}[e]`")
            end = matching(tokens, k + 1)
            if end + 1 < len(tokens) and tokens[end + 1].text in ("[", ".", "->"):
                raise NotRewritable(f"'{array}[e]' is subscripted again or a struct")
            if spelling == "ldg":
                edits.append((tokens[k].start, tokens[k].start, "__ldg(&"))
                edits.append((tokens[end].end, tokens[end].end, ")"))
            elif spelling == "shared" and staging[array].width:
                # the k-th mention is the model's k-th read in the text's order (a macro
                # expanded before it moves its column, never its line or its order)
                st = staging[array]
                (line, _), row, column = st.shifts[mentions.index(k)]
                if line != _position(program.text, kernel.span.start + tokens[k].start)[0]:
                    raise NotRewritable(f"a read of '{array}' is not where the model has it")
                edits.append((tokens[k].start, tokens[end].end,
                              f"{tile(array)}[((int)threadIdx.y + ({(row - st.top).to_c()})) "
                              f"* {st.columns} + (int)threadIdx.x + "
                              f"({(column - st.low).to_c()})]"))
            elif spelling == "shared":
                edits.append((tokens[k].start, tokens[k + 1].end, f"{tile(array)}[("))
                edits.append((tokens[end].start, tokens[end].end, f") - pc_base_{array}]"))
            else:
                edits.append((tokens[k].start, tokens[k].end, symbol(kernel.name, array)))
        if spelling == "ldg":
            declared = [k for k in range(open_ + 1, close) if tokens[k].text == array]
            if len(declared) != 1:
                raise NotRewritable(f"the parameter '{array}' is not declared plainly")
            k = declared[0]
            first = k
            while first > open_ + 1 and tokens[first - 1].text != ",":
                first -= 1
            words = {t.text for t in tokens[first:k]}
            if "*" not in words:
                raise NotRewritable(f"the parameter '{array}' is not a pointer")
            if not words & {"__restrict__", "__restrict", "restrict"}:
                edits.append((tokens[k].start, tokens[k].start, "__restrict__ "))
            if "const" not in words:
                edits.append((tokens[first].start, tokens[first].start, "const "))
    if staging:
        body = next((k for k in range(close + 1, len(tokens)) if tokens[k].text == "{"), None)
        if body is None:
            raise NotRewritable("its body is not written out")
        lines = [x for array, st in staging.items()
                 for x in _load_tile(array, types[array], st)]
        lines.append("__syncthreads();")
        edits.append((tokens[body].end, tokens[body].end,
                      " /* polycoal: tiles staged in shared memory */\n  " +
                      "\n  ".join(lines)))
    out = text
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + new + out[end:]
    return constant_declarations(kernel, placed, sizes) + out


def _ldg_parameter(tokens, first: int, last: int, what: str) -> list[tuple[int, int, str]]:
    """Edits (offsets into the tokens' text) making the parameter of tokens[first:last]
    (a declarator, named or not) `const T *__restrict__`, as rewrite_kernel makes the
    definition's: `const` before it unless it has one, `__restrict__` after its last
    `*` unless it has one."""
    words = {t.text for t in tokens[first:last]}
    stars = [k for k in range(first, last) if tokens[k].text == "*"]
    if not stars:
        raise NotRewritable(f"the parameter '{what}' of a declaration is not a pointer")
    edits = []
    if not words & {"__restrict__", "__restrict", "restrict"}:
        after = stars[-1] + 1
        edits.append((tokens[after].start, tokens[after].start, "__restrict__ ")
                     if after < last else
                     (tokens[stars[-1]].end, tokens[stars[-1]].end, " __restrict__"))
    if "const" not in words:
        edits.append((tokens[first].start, tokens[first].start, "const "))
    return edits


def prototype_edits(program: Program, kernel: Kernel, placed: dict[str, str],
                    name: str) -> list[tuple[int, int, str]]:
    """Edits ([start, end) of the program's text -> text) of the kernel's forward
    declarations (`__global__ void k(float *, float *);`, as a copy's prototype before
    its first launch, or one the input writes) so that they declare what the placement
    defines: the parameters read through the read-only path `const T *__restrict__`
    (the definition's; else the launch calls an overload declared and never defined);
    where the placed kernel is a second one (`name`, each launch choosing), its
    prototype beside each of the kernel's."""
    tokens = program.tokens or tuple(tokenize(program.text))
    ldg = {k for k, p in enumerate(kernel.parameters) if placed.get(p.name) == "ldg"}
    if not ldg and name == kernel.name:
        return []
    out = []
    for k, t in enumerate(tokens):
        if t.text != kernel.name or kernel.span.start <= t.start < kernel.span.end or \
                k + 1 >= len(tokens) or tokens[k + 1].text != "(":
            continue
        close = matching(tokens, k + 1)
        if close + 1 >= len(tokens) or tokens[close + 1].text != ";":
            continue
        # the declaration's words before the name: specifiers, attributes' arguments
        first = k
        while first > 0 and (tokens[first - 1].kind == "id" or
                             tokens[first - 1].text in ("*", "&", "::", ")")):
            if tokens[first - 1].text == ")":
                first = matching(tokens, first - 1)
            first -= 1
        if not any(x.text == "__global__" for x in tokens[first:k]):
            continue
        # its parameters, split at the commas of the list's own level
        parameters, start, depth = [], k + 2, 0
        for j in range(k + 2, close + 1):
            x = tokens[j].text
            if x in ("(", "[", "{", "<"):
                depth += 1
            elif x in (")", "]", "}", ">"):
                depth -= 1
            if (x == "," and depth == 0) or j == close:
                parameters.append((start, j))
                start = j + 1
        if len(parameters) != len(kernel.parameters):
            raise NotRewritable(f"a declaration of '{kernel.name}' at line {t.line} does not "
                                "declare its parameters as the definition does")
        base = tokens[first].start
        edits = [e for position in sorted(ldg) for e in
                 _ldg_parameter(tokens, *parameters[position],
                                kernel.parameters[position].name)]
        declaration = program.text[base:tokens[close + 1].end]
        for start_, end_, new in sorted(edits, reverse=True):
            declaration = declaration[:start_ - base] + new + declaration[end_ - base:]
        if name != kernel.name:      # the kernel as written stays; the placed one beside
            declaration = program.text[base:tokens[close + 1].end] + " " + \
                renamed(declaration, kernel.name, name)
        out.append((base, tokens[close + 1].end, declaration))
    return out


def constant_declarations(kernel: Kernel, placed: dict[str, str], sizes: dict[str, int]) -> str:
    """The `__constant__` arrays of the kernel's arrays placed in constant memory."""
    types = {p.name: p.type for p in kernel.parameters}
    return "".join(f"__constant__ {types[a]} {symbol(kernel.name, a)}[{sizes[a]}];\n"
                   for a, s in placed.items() if s == "constant")


def fill_states(kernel: Kernel, constants) -> str:
    """The declarations of the fill states of the kernel's constant copies
    (templates/placement_runtime.cu.j2)."""
    return "".join(f"static polycoal_filled {symbol(kernel.name, a)}_filled;\n"
                   for a in sorted(constants))


def renamed(text: str, old: str, new: str) -> str:
    """`text` (a kernel definition or a launch) with the function's name changed: its
    first mention followed by `(` or `<<<`."""
    for t in tokenize(text):
        if t.text == old:
            return text[:t.start] + new + text[t.end:]
    raise NotRewritable(f"'{old}' is not named in its own text")


def rewrite_launch(program: Program, launch: Launch, kernel: Kernel,
                   constants: dict[str, tuple[int, int]], cached: set[str],
                   placed: str | None = None, condition: str | None = None) -> str:
    """The launch preceded by the copies into constant memory of the elements
    [first, last] of each array of `constants` (array -> (first, last)); those of
    `cached` only when their source changed since the last copy (their host writes are
    marked). With `condition`, the kernel `placed` runs (after the copies) where the
    condition holds at the launch, the kernel as written elsewhere."""
    text = program.text[launch.span.start:launch.span.end]
    if not constants and condition is None:
        return text
    # a launch before the definition calls the kernel through its prototype
    # (prototype_edits declares the placed one beside it); a constant array is
    # declared with the definition
    if constants and launch.span.start < kernel.span.start:
        raise NotRewritable(f"the launch at line {launch.location.line} comes before the "
                            f"kernel's definition (the constant array is declared there)")
    _, config, args = launch_parts(program.text, launch)
    stream = config[3] if len(config) > 3 else "0"
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    types = {p.name: p.type for p in kernel.parameters}
    lines = []
    for array, (first, last) in constants.items():
        arg = args[position[array]] if position[array] < len(args) else ""
        if not arg or has_side_effects(arg) or has_side_effects(stream):
            raise NotRewritable(f"the launch at line {launch.location.line} passes "
                                f"'{arg}' (evaluated twice)")
        size = f"sizeof({types[array]})"
        copy = (f"cudaMemcpyToSymbolAsync({symbol(kernel.name, array)}, "
                f"(const char *)({arg}) + {first} * {size}, {last - first + 1} * {size}, "
                f"{first} * {size}, cudaMemcpyDeviceToDevice, {stream});")
        if array in cached:
            copy = (f"if (polycoal_fill_stale({symbol(kernel.name, array)}_filled, "
                    f"(const void *)({arg}), (cudaStream_t)({stream})))\n" +
                    statement_indent(program.text, launch) + "    " + copy)
        lines.append(copy)
    outer = statement_indent(program.text, launch)
    indent = outer + "  "
    if condition is None:
        return ("{ /* polycoal: arrays placed in constant memory, filled for this launch */\n" +
                "".join(indent + x + "\n" for x in lines) + indent + text + "\n" + outer + "}")
    inner = indent + "  "
    return ("{ /* polycoal: the kernel with its arrays placed where this launch's sizes allow "
            "it (its tiles' assumptions; the predicted gain against filling copies) */\n" +
            f"{indent}if ({condition}) {{\n" +
            "".join(inner + x.replace("\n" + outer + "    ", "\n" + inner + "  ") + "\n"
                    for x in lines) +
            inner + renamed(text, kernel.name, placed) + "\n" +
            f"{indent}}} else {{\n{inner}{text}\n{indent}}}\n{outer}}}")


def runtime() -> str:
    return render_template("placement_runtime.cu.j2") + "\n"
