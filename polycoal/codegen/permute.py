"""Apply a thread-axis permutation to a kernel's text and to its launches.

In the kernel, every `threadIdx.o`, `blockIdx.o`, `blockDim.o` and `gridDim.o` of an
original axis o becomes the new axis that o moved to; in the launch, the grid and the
block are permuted the same way, so every thread keeps its (logical) coordinates and
its block mates. Nothing else in the text changes.

Thread indices read indirectly (`indirect_uses`): in the permuted copy, a macro use whose
expansion reads thread indices (`#define ROW (blockIdx.y * blockDim.y + threadIdx.y)`)
is replaced by its expansion, as the preprocessor wrote it, and a `__device__` helper
that reads them (itself or through helpers it calls) by a static copy with the same axes
permuted (`gid__pc_perm_<kernel>`), written before the kernel's copy. The macros'
definitions, the helpers and the kernel as written stay as they are, for everything
else that uses them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from polycoal.codegen.launch import statement_indent
from polycoal.frontend.launch_text import launch_parts, plain_text, qualified_names
from polycoal.templates import render_template
from polycoal.frontend import callees
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import apply_edits, matching, tokenize
from polycoal.frontend.program import Kernel, Launch, Program, Span
from polycoal.optimize.permutation import Permutation, launch_takes, open_checks


def builtin_uses(text: str) -> int:
    d = cuda_dialect()
    names = {d.thread_index, d.block_index, d.block_dim, d.grid_dim}
    tokens = tokenize(text)
    return sum(1 for k, t in enumerate(tokens[:-2]) if t.text in names and
               tokens[k + 1].text == "." and tokens[k + 2].text in d.axes)


def permute_kernel(original: str, kernel: Kernel, perm: Permutation,
                   name: str | None = None, indirect: "IndirectUses | None" = None) -> str:
    """The kernel's text with its thread axes permuted (and named `name` when given: a
    permuted copy beside the original). With `indirect`, the copy reads the thread
    indices its macros and helpers read (see `indirect_uses`): the helpers' permuted
    copies come first."""
    text = indirect.kernel_text if indirect else original[kernel.span.start:kernel.span.end]
    renamed = {h.name: helper_copy_name(h.name, kernel.name) for h in
               (indirect.helpers if indirect else ())}
    text = _renamed(_permute_axes(text, perm), renamed)
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
                text = text[:head.start] + name + text[head.end:at] + comment + text[at:]
            else:
                text = text[:at] + comment + text[at:]
            copies = [f"/* polycoal: {h.name} with thread axes permuted ({perm.describe()}) "
                      f"for {name or kernel.name} */\n"
                      + _static(_renamed(_permute_axes(h.text, perm), renamed),
                                renamed[h.name])
                      for h in (indirect.helpers if indirect else ())]
            return "\n\n".join(copies + [text])
    raise ValueError(f"cannot find the body of kernel {kernel.name}")


def helper_copy_name(helper: str, kernel: str) -> str:
    """The name of the permuted copy of `helper` that the copy of `kernel` calls."""
    return f"{helper}__pc_perm_{kernel}"


def _permute_axes(text: str, perm: Permutation) -> str:
    """Every `threadIdx.o`, `blockIdx.o`, `blockDim.o`, `gridDim.o` of `text` on the axis
    that o moved to."""
    d = cuda_dialect()
    names = {d.thread_index, d.block_index, d.block_dim, d.grid_dim}
    target = {o: n for n, o in perm.source.items()}
    tokens = tokenize(text)
    out, pos = [], 0
    for k, t in enumerate(tokens[:-2]):
        if t.text in names and tokens[k + 1].text == "." and tokens[k + 2].text in d.axes:
            axis = tokens[k + 2]
            out.append(text[pos:axis.start])
            out.append(target[axis.text])
            pos = axis.end
    out.append(text[pos:])
    return "".join(out)


def _renamed(text: str, names: dict[str, str]) -> str:
    """`text` with the identifiers in `names` renamed (not members: `.f`, `->f`)."""
    if not names:
        return text
    tokens = tokenize(text)
    out, pos = [], 0
    for k, t in enumerate(tokens):
        if t.kind == "id" and t.text in names and not (k and tokens[k - 1].text in
                                                       (".", "->")):
            out.append(text[pos:t.start])
            out.append(names[t.text])
            pos = t.end
    out.append(text[pos:])
    return "".join(out)


def _static(definition: str, name: str) -> str:
    """A helper's definition declared static (after its `template <...>`, if any)."""
    tokens = tokenize(definition)
    head = next(k for k, t in enumerate(tokens) if t.text == name)
    if any(t.text == "static" for t in tokens[:head]):
        return definition
    at = 0
    if tokens[0].text == "template" and len(tokens) > 1 and tokens[1].text == "<":
        depth = 0
        for t in tokens[1:head]:
            depth += t.text.count("<") - t.text.count(">")
            if depth <= 0:
                at = t.end
                break
    return definition[:at] + (" static " if at else "static ") + definition[at:].lstrip(" ")


# ---- thread indices read through macros and helpers ----------------------------------

@dataclass(frozen=True)
class HelperCopy:
    name: str
    span: Span | None       # its definition in the program's text (None: a header's)
    text: str               # that definition, its thread-index macros expanded


@dataclass(frozen=True)
class IndirectUses:
    """What a permuted copy of a kernel needs beyond its own text: the definition with the
    macro uses that read thread indices expanded, and the helpers (callees first) whose
    copies it calls."""
    kernel_text: str
    helpers: tuple[HelperCopy, ...] = ()


@dataclass(frozen=True)
class Refusal:
    code: str
    reason: str


_MARK = "__pcmk_"
_MARKER = re.compile(r"\b__pcmk_([besw])(\d+)_\b")
_LINEMARKER_LINE = re.compile(r"^\s*#.*$", re.M)
_NOT_HEADS = frozenset(
    "if for while switch return sizeof do else case goto break continue default typedef "
    "alignof decltype static_cast reinterpret_cast const_cast dynamic_cast new delete "
    "throw operator template typename".split())


def reads_indirectly(program: Program, kernel: Kernel) -> bool:
    """Whether the kernel reads thread indices through macros or called helpers (the
    permutation needs `indirect_uses`)."""
    if bool(callees.helpers_called(program, kernel.expanded)) and bool(
            _thread_helpers(program, kernel)):
        return True
    # a kernel not in the text (a header's, judged only) has no written form to compare
    return kernel.span is not None and builtin_uses(
        program.text[kernel.span.start:kernel.span.end]) != builtin_uses(kernel.expanded)


def indirect_uses(program: Program, kernel: Kernel, options) -> IndirectUses | Refusal:
    """The kernel's text with its thread-index macros expanded, and the helpers it calls
    that read thread indices, each with its own macros expanded (the preprocessor run
    with `options` over the program's text with markers around every name: what is
    between a name's markers in its output is its expansion); checked by preprocessing
    the expanded texts again: the same tokens, and every thread index (and call of a
    copied helper) now written out."""
    helpers = _thread_helpers(program, kernel)
    if isinstance(helpers, Refusal):
        return helpers
    names = set(helpers)
    tokens = list(program.tokens) or tokenize(program.text)
    spans = [kernel.span]
    written, included = [], {}
    for name in helpers:
        if program.device_functions[name].location.file != program.path:
            # a header's: its copy is its definition as the preprocessor expanded it
            expanded = _included_helper(program, name)
            if isinstance(expanded, Refusal):
                return expanded
            included[name] = expanded
            continue
        span = _helper_span(program, tokens, name, kernel)
        if isinstance(span, Refusal):
            return span
        spans.append(span)
        written.append(name)
    if _MARK in program.text:
        return Refusal("thread-index-in-macro", "the text already holds polycoal's markers")
    try:
        texts = _expanded_uses(program, spans, names, options)
    except ValueError as e:
        return Refusal("thread-index-in-macro", f"its macros could not be expanded: {e}")
    if isinstance(texts, Refusal):
        return texts
    problem = _check_expanded(program, spans, texts, names, options,
                              [kernel.expanded] + [program.device_functions[n].expanded
                                                   for n in written])
    if problem:
        return Refusal("thread-index-in-macro", problem)
    copies = dict(zip(written, zip(spans[1:], texts[1:])))
    return IndirectUses(texts[0], tuple(
        HelperCopy(n, *copies[n]) if n in copies else HelperCopy(n, None, included[n])
        for n in helpers))


def _included_helper(program: Program, name: str) -> str | Refusal:
    """The definition of a helper of an included file, as the preprocessor expanded it,
    for a copy in the program's text (after the includes, so what it names is declared
    there): one definition, at the file scope of its file, not extern."""
    f = program.device_functions[name]
    why = f"the device function {name} reads thread indices and "
    try:
        with open(f.location.file, encoding="utf-8", errors="surrogateescape") as handle:
            tokens = tokenize(handle.read())
    except OSError:
        return Refusal("thread-index-in-callee", why + "its file cannot be read")
    heads = [k for k, t in enumerate(tokens[:-1]) if t.text == name and
             tokens[k + 1].text == "(" and
             (close := matching(tokens, k + 1)) + 1 < len(tokens) and
             tokens[close + 1].text in ("{", "const")]
    if len(heads) != 1 or not f.expanded:
        return Refusal("thread-index-in-callee", why + "is defined more than once in "
                       f"{f.location.file} (overloads or branches of #if)")
    if _enclosing(tokens, tokens[heads[0]].start):
        return Refusal("thread-index-in-callee", why + "is defined in a namespace or "
                       f"class of {f.location.file}")
    inside = tokenize(f.expanded)
    head = next((k for k, t in enumerate(inside) if t.text == name), None)
    if head is None or any(t.text == "extern" for t in inside[:head]):
        return Refusal("thread-index-in-callee", why + "is declared extern")
    return f.expanded


def warp_functions_called(program: Program, kernel: Kernel) -> tuple[str, str] | None:
    """A helper the kernel calls, directly or through helpers, that exchanges values
    between the lanes of a warp (`__shfl_down_sync`, `warpSize`...), with that function;
    None when there is none. Wherever the helper is defined (a header too), the kernel
    then depends on which threads share a warp, as if it used the function itself."""
    return callees.first_use(program, callees.body(kernel.expanded, kernel.name),
                             callees.warp_words())


def _thread_helpers(program: Program, kernel: Kernel) -> list[str] | Refusal:
    """The helpers the kernel calls, directly or through helpers, that read thread
    indices themselves or through the helpers they call; callees first. A recursive one
    is refused."""
    helpers = program.device_functions
    calls = {n: callees.helpers_called(program, callees.body(f.expanded, n))
             for n, f in helpers.items()}
    reached = []
    todo = callees.helpers_called(program, callees.body(kernel.expanded, kernel.name))
    while todo:
        n = todo.pop()
        if n not in reached:
            reached.append(n)
            todo += calls[n]
    reads = {n for n in reached if builtin_uses(helpers[n].expanded)}
    changed = True
    while changed:
        more = {n for n in reached if n not in reads and set(calls[n]) & reads}
        reads |= more
        changed = bool(more)
    order: list[str] = []

    def visit(n: str, path: tuple[str, ...]) -> Refusal | None:
        if n in path:
            return Refusal("thread-index-in-callee", f"the device function {n}, which reads "
                           "thread indices, is recursive")
        if n in order:
            return None
        for c in calls[n]:
            if c in reads:
                refused = visit(c, path + (n,))
                if refused:
                    return refused
        order.append(n)
        return None
    for n in sorted(reads, key=reached.index):
        refused = visit(n, ())
        if refused:
            return refused
    return order


def _enclosing(tokens, offset: int) -> tuple[int, ...]:
    """The braces open at `offset` (their token indices): the scope a definition is in."""
    stack: list[int] = []
    for k, t in enumerate(tokens):
        if t.start >= offset:
            break
        if t.text == "{":
            stack.append(k)
        elif t.text == "}" and stack:
            stack.pop()
    return tuple(stack)


def _helper_span(program: Program, tokens, name: str, kernel: Kernel) -> Span | Refusal:
    """Where the helper is defined in the program's text, once, before the kernel and in
    its scope (its copy goes before the kernel's copy)."""
    from polycoal.frontend.kernels import locate_in_original
    f = program.device_functions[name]
    why = f"the device function {name} reads thread indices and "
    if f.location.file != program.path:
        return Refusal("thread-index-in-callee", why + "is not defined in the file's text")
    span = None
    for marker in dict.fromkeys(t.text for t in tokens if t.line == f.location.line):
        span = locate_in_original(tokens, name, marker, f.location.line)
        if span is not None:
            break
    if span is None:
        return Refusal("thread-index-in-callee", why + "its definition is not found as written")
    definitions = 0
    for k, t in enumerate(tokens[:-1]):
        if t.text == name and tokens[k + 1].text == "(":
            close = matching(tokens, k + 1)
            if close + 1 < len(tokens) and tokens[close + 1].text in ("{", "const"):
                definitions += 1
    if definitions != 1:
        return Refusal("thread-index-in-callee", why + "is defined more than once "
                       "(overloads or branches of #if)")
    if span.end > kernel.span.start:
        return Refusal("thread-index-in-callee", why + "is defined after the kernel")
    if _enclosing(tokens, span.start) != _enclosing(tokens, kernel.span.start):
        return Refusal("thread-index-in-callee", why + "is defined in another scope")
    inside = tokenize(program.text[span.start:span.end])
    head = next(k for k, t in enumerate(inside) if t.text == name)
    if any(t.text == "extern" for t in inside[:head]):
        return Refusal("thread-index-in-callee", why + "is declared extern")
    return span


@dataclass
class _Node:
    index: int
    first: int              # its tokens [first, last] in its span's tokens
    last: int
    children: list


def _nodes(tokens, lo: int, hi: int, out: list, into: list) -> None:
    """Every name of tokens[lo:hi], with the parenthesised arguments that follow it (a
    use of a function-like macro, or a call), its arguments' names its children."""
    k = lo
    while k < hi:
        t = tokens[k]
        if t.kind != "id" or t.text in _NOT_HEADS or (k and tokens[k - 1].text in
                                                      (".", "->")):
            k += 1
            continue
        last = matching(tokens, k + 1) if k + 1 < hi and tokens[k + 1].text == "(" else k
        node = _Node(len(out), k, last, [])
        out.append(node)
        into.append(node)
        if last > k:
            _nodes(tokens, k + 2, last, out, node.children)
        k = last + 1


def _unmarked(text: str) -> str:
    """Preprocessor output without the markers (and the spaces they brought, beside a
    bracket, a dot or a comma)."""
    def space(m: re.Match) -> str:
        before = text[m.start() - 1:m.start()]
        after = text[m.end():m.end() + 1]
        return "" if before in _TIGHT or after in _TIGHT else " "
    return re.sub(r" *\b__pcmk_[bes]\d+_\b *", space, text).strip()


_TIGHT = set("()[].,;{}")


def _reads(text: str, names: set[str]) -> bool:
    return bool(builtin_uses(text)) or any(t.kind == "id" and t.text in names
                                           for t in tokenize(text))


def _same_tokens(a: str, b: str) -> bool:
    return [t.text for t in tokenize(a)] == [t.text for t in tokenize(b)]


def _expanded_uses(program: Program, spans: list[Span], names: set[str], options
                   ) -> list[str] | Refusal:
    """Each span's text with the uses of macros whose expansion reads thread indices (or
    calls a helper in `names`) replaced by that expansion."""
    from polycoal.frontend.preprocess import preprocess
    inserts: list[tuple[int, int, str]] = []
    per_span = []
    count = 0
    for span in spans:
        text = program.text[span.start:span.end]
        tokens = tokenize(text)
        nodes: list[_Node] = []
        roots: list[_Node] = []
        _nodes(tokens, 0, len(tokens), nodes, roots)
        base = count
        for node in nodes:
            i = base + node.index
            inserts.append((span.start + tokens[node.first].start, 1, f" {_MARK}b{i}_ "))
            inserts.append((span.start + tokens[node.last].end, 0, f" {_MARK}e{i}_ "))
        per_span.append((span, text, tokens, nodes, roots, base))
        count += len(nodes)
    marked, pos = [], 0
    for at, _, mark in sorted(inserts, key=lambda m: (m[0], m[1])):
        marked.append(program.text[pos:at])
        marked.append(mark)
        pos = at
    marked.append(program.text[pos:])
    output = preprocess(program.path, options, text="".join(marked)).text
    found: dict[str, list[tuple[int, int]]] = {}
    for m in _MARKER.finditer(output):
        found.setdefault(m.group(1) + m.group(2), []).append((m.start(), m.end()))
    results = []
    for span, text, tokens, nodes, roots, base in per_span:
        expansion: dict[int, str | None] = {}
        for node in nodes:
            i = base + node.index
            b, e = found.get(f"b{i}", []), found.get(f"e{i}", [])
            if len(b) != 1 or len(e) != 1 or b[0][1] > e[0][0]:
                expansion[node.index] = None
                continue
            raw = _LINEMARKER_LINE.sub(" ", output[b[0][1]:e[0][0]]).replace("\n", " ")
            expansion[node.index] = _unmarked(raw)
        edits: list[tuple[int, int, str]] = []

        def decide(node: _Node) -> Refusal | None:
            own = expansion[node.index]
            if own is None:         # not preprocessed (an #if branch left out)
                return None
            written = text[tokens[node.first].start:tokens[node.last].end]
            parts, at = [], tokens[node.first].start
            plain = True
            for child in node.children:
                value = expansion[child.index]
                if value is None:
                    plain = False
                    break
                parts.append(text[at:tokens[child.first].start])
                parts.append(value)
                at = tokens[child.last].end
            if plain:
                parts.append(text[at:tokens[node.last].end])
                plain = _same_tokens(own, "".join(parts))
            if plain:               # not a macro: its arguments may hold some
                for child in node.children:
                    refused = decide(child)
                    if refused:
                        return refused
                return None
            if not _reads(own, names):
                return None
            if _MARK in own:
                return Refusal("thread-index-in-macro", f"the expansion of '{written}' "
                               "cannot be read (stringified or pasted arguments)")
            edits.append((tokens[node.first].start, tokens[node.last].end, own))
            return None
        for root in roots:
            refused = decide(root)
            if refused:
                return refused
        results.append(apply_edits(text, edits))
    return results


def _check_expanded(program: Program, spans: list[Span], texts: list[str], names: set[str],
                    options, expected: list[str]) -> str | None:
    """Why the expanded texts are not what the copies need (None: they are): in the
    program with them in place, each preprocesses to the tokens the definition as
    written did, and every thread index and every call of a helper in `names` there
    comes from the text as written (a marker after each one written shows it), so that
    the copy's rewriting reaches it (no macro reads them any more; those of #if branches
    left out are not counted)."""
    from polycoal.frontend.preprocess import preprocess
    out, pos = [], 0
    for j, (span, text) in enumerate(sorted(zip(spans, texts), key=lambda p: p[0].start)):
        out.append(program.text[pos:span.start])
        out.append(f" {_MARK}s{j}_ {_written_marked(text, names)} {_MARK}s{j}_ ")
        pos = span.end
    out.append(program.text[pos:])
    output = preprocess(program.path, options, text="".join(out)).text
    order = sorted(range(len(spans)), key=lambda i: spans[i].start)
    d = cuda_dialect()
    builtins = {d.thread_index, d.block_index, d.block_dim, d.grid_dim}
    written = f"{_MARK}w0_"
    for j, i in enumerate(order):
        marks = [m for m in _MARKER.finditer(output) if m.group(0) == f"{_MARK}s{j}_"]
        if len(marks) != 2:
            return "the expanded definition is not preprocessed as written"
        got = tokenize(_LINEMARKER_LINE.sub(" ", output[marks[0].end():marks[1].start()]))
        for k, t in enumerate(got):
            after = k + 3 if t.text in builtins and k + 2 < len(got) and \
                got[k + 1].text == "." and got[k + 2].text in d.axes else \
                k + 1 if t.kind == "id" and t.text in names else None
            if after is not None and (after >= len(got) or got[after].text != written):
                return "thread indices are used through macros that could not be expanded"
        got_tokens = [t.text for t in got if t.text != written]
        want = [t.text for t in tokenize(expected[i])]
        if got_tokens[len(got_tokens) - len(want):] != want:
            return "thread indices are used through macros whose expansion differs in place"
    return None


def _written_marked(text: str, names: set[str]) -> str:
    """`text` with a marker after each thread index and each name in `names` written."""
    d = cuda_dialect()
    builtins = {d.thread_index, d.block_index, d.block_dim, d.grid_dim}
    tokens = tokenize(text)
    ends = [tokens[k + 2].end for k, t in enumerate(tokens[:-2]) if t.text in builtins and
            tokens[k + 1].text == "." and tokens[k + 2].text in d.axes]
    ends += [t.end for k, t in enumerate(tokens) if t.kind == "id" and t.text in names
             and not (k and tokens[k - 1].text in (".", "->"))]
    out, pos = [], 0
    for end in sorted(ends):
        out.append(text[pos:end])
        out.append(f" {_MARK}w0_ ")
        pos = end
    out.append(text[pos:])
    return "".join(out)


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
        + (" where the launch's geometry allows" if checks else ""), name=plain_text(name),
        was=[plain_text(c) for c in config], config=config, evaluate_config=True,
        temporaries=[], original_geometry=True, extents=[], counts=[],
        launches=[permuted], main=0, extra=config[2:], stream=None, args=args,
        indent=indent, inner=indent + "  ", checks=checks, fallback=fallback)
