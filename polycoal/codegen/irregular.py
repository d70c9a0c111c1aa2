"""Write a reorganisation (optimize/reorganise.py) into the program: the kernel reads its
irregular references from the copies, each launch builds (or reuses) them first, and
the host's writes to their source arrays are marked for the runtime
(templates/irregular_runtime.cu.j2).

In the kernel, every occurrence of a reorganised reference becomes a choice on the new
pointer parameter, uniform over the launch: `x[P[i]]` -> `(pc_x__via_P ? pc_x__via_P[i]
: x[P[i]])`; in a segment loop `for (k = B[r]; ...)`, preceded by the run's position in
the copy `pc_run0 = off[r / 32] + r % 32 - 32 * B[r]` where the row's slice is copied (`pc_use0`),
`A[k]` -> `(pc_use0 ? pc_A__by_B[pc_run0 + 32 * k] : A[k])`. A null pointer (the
selector's choice, or a launch that cannot reuse a copy) runs the original reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from polycoal.analysis.irregular import same_text
from polycoal.codegen.launch import statement_indent
from polycoal.frontend.launch_text import launch_parts
from polycoal.frontend.lexer import Token, matching, split_top_level, tokenize
from polycoal.frontend.program import Kernel, Launch, Program, Span
from polycoal.optimize.reorganise import MAX_SEGMENT_COPIES, MIN_REUSE
from polycoal.templates import render_template


class NotRewritable(Exception):
    """A reference or launch the rewrite does not handle (the reason)."""


@dataclass(frozen=True)
class Group:
    """References sharing one index structure: a gather (one reference), or the
    arrays read along one segment loop's runs."""

    kind: str                        # "gather" | "segment"
    references: tuple                # analysis.irregular.Irregular
    pointer: str                     # gather: its copy; segment: the slices' offsets
    copies: tuple[str, ...]          # segment: each array's copy

    @property
    def first(self):
        return self.references[0]

    @property
    def shared(self) -> bool:
        """A gather whose shared-memory form the kernel can read."""
        return self.kind == "gather" and self.first.shareable

    @property
    def padded(self) -> bool:
        """A gather whose padded form (threads reordered) the kernel can read."""
        return self.kind == "gather" and bool(self.first.thread_index)

    @property
    def padding(self) -> int:
        """The runtime's `reorderable`: 0 no padded form, 1 built on request, 2 a
        candidate of the selector (the kernel's reads all follow P)."""
        return int(self.padded) + int(self.padded and self.first.single_pattern)

    def padded_names(self) -> tuple[str, str, str]:
        """(order, packed, rank) of the padded form."""
        return f"{self.pointer}_order", f"{self.pointer}_packed", f"{self.pointer}_rank"

    def shared_names(self) -> tuple[str, str, str, str]:
        """(values, slots, counts, tile) of the shared form."""
        return (f"{self.pointer}_shared", f"{self.pointer}_slot", f"{self.pointer}_count",
                "pc_tile" + self.pointer[2:])


def groups(references) -> list[Group]:
    out: list[Group] = []
    segments: dict[tuple, list] = {}
    reordering = sum(1 for r in references if r.kind == "gather" and r.thread_index)
    for r in references:
        if r.kind == "gather" and r.thread_index and reordering > 1:
            # one order of the threads per kernel: two gathers cannot both choose it
            r = replace(r, thread_index="", thread_init="", single_pattern=False)
        if r.kind == "gather":
            name = f"pc_{r.array}__via_{r.index_array}"
            while any(g.pointer == name for g in out):
                name += "_"
            out.append(Group("gather", (r,), name, ()))
        else:
            segments.setdefault((r.index_array, r.length_array, r.index, r.loop_line),
                                []).append(r)
    for (b, _, _, line), refs in segments.items():
        refs = refs[:MAX_SEGMENT_COPIES]          # the runtime's slots; the rest as written
        name = f"pc_{b}__slices{line}"
        out.append(Group("segment", tuple(refs), name,
                         tuple(f"pc_{r.array}__by_{b}{line}" for r in refs)))
    return out


def _kernel_tokens(program: Program, kernel: Kernel) -> list[Token]:
    return [t for t in program.tokens if kernel.span.start <= t.start < kernel.span.end]


def _subscripted(tokens: list[Token], text: str, array: str, index: str, first: int = 0,
                 last: int | None = None) -> list[tuple[int, int]]:
    """(token of the array, token of the closing `]`) of each `array[index]`."""
    out = []
    last = len(tokens) if last is None else last
    for k in range(first, last - 1):
        t = tokens[k]
        if t.text != array or tokens[k + 1].text != "[" or \
                k and tokens[k - 1].text in (".", "->", "::"):
            continue
        close = matching(tokens, k + 1)
        if same_text(text[tokens[k + 1].end:tokens[close].start], index):
            out.append((k, close))
    return out


def _statement_end(tokens: list[Token], k: int) -> int:
    """Index of the last token of the statement starting at token k (a block, or an
    expression statement)."""
    if tokens[k].text == "{":
        return matching(tokens, k)
    if tokens[k].text in ("if", "for", "while", "do", "switch", "else"):
        raise NotRewritable("a loop body that is a control statement without braces")
    depth = 0
    while k < len(tokens):
        depth += tokens[k].text in "([{"
        depth -= tokens[k].text in ")]}"
        if tokens[k].text == ";" and depth == 0:
            return k
        k += 1
    raise NotRewritable("a loop body without an end")


def _unread_local(tokens: list[Token], text: str, r, g: Group, uses: int, plan_groups
                  ) -> list[tuple[int, int, str]]:
    """Where the local holding P[e] (`int j = P[i];`) is read only by this group's
    reference, its definition skips the read of P when the copy is there:
    `int j = (pc ? 0 : P[i]);`."""
    if sum(1 for x in plan_groups if x.kind == "gather" and x.first.local == r.local) > 1:
        return []
    if r.local_reads != uses:       # read elsewhere too (maybe through a macro)
        return []
    mentions = [k for k, t in enumerate(tokens) if t.text == r.local and
                not (k and tokens[k - 1].text in (".", "->"))]
    definitions = [k for k in mentions if k + 1 < len(tokens) and tokens[k + 1].text == "="]
    if len(definitions) != 1 or len(mentions) != uses + 1:
        return []
    k = definitions[0] + 2
    end = k
    while end < len(tokens) and tokens[end].text not in (";", ","):
        end += 1
    init = text[tokens[k].start:tokens[end - 1].end]
    if not same_text(init, f"{r.index_array}[{r.index}]"):
        return []
    skip = f"({g.pointer} ? 0 : {init})"
    if g.shared:
        skip = f"({g.shared_names()[0]} ? 0 : {skip})"
    if g.padded:
        skip = f"({g.padded_names()[1]} ? 0 : {skip})"
    return [(tokens[k].start, tokens[end - 1].end, skip)]


def _index_definition(tokens: list[Token], text: str, r) -> tuple[int, int, str]:
    """(start, end, text) of the initialiser of the kernel's one global thread index
    (`int i = blockIdx.x * blockDim.x + threadIdx.x;`) as written."""
    for k in range(len(tokens) - 2):
        if tokens[k].text == r.thread_index and tokens[k + 1].text == "=" and \
                k and (tokens[k - 1].kind == "id" or tokens[k - 1].text in ("*", ",")):
            end = k + 2
            depth = 0
            while end < len(tokens) and not (depth == 0 and tokens[end].text in (";", ",")):
                depth += tokens[end].text in "([{"
                depth -= tokens[end].text in ")]}"
                end += 1
            start, stop = tokens[k + 2].start, tokens[end - 1].end
            if "threadIdx" in text[start:stop]:
                return start, stop, text[start:stop]
    raise NotRewritable(f"the thread index '{r.thread_index}' is not defined as written")


def reordered_index(g: Group, physical: str) -> str:
    """The padded form's thread index: the launch's thread `physical` runs the thread
    the order gives it."""
    order = g.padded_names()[0]
    return f"({order} ? {order}[{physical}] : ({physical}))"


def _reordered_index(tokens: list[Token], text: str, g: Group, definition
                     ) -> tuple[int, int, str]:
    start, stop, physical = definition
    return start, stop, reordered_index(g, physical)


def shared_prefix(g: Group) -> str:
    """The shared form's load, first in the kernel's body (one line, whole statements):
    the block's elements into shared memory, every thread of the block taking part."""
    values, _, counts, tile = g.shared_names()
    t = g.first.element_type
    return (f" __shared__ {t} {tile}[1024]; if ({values}) {{ const int {tile}_count = "
            f"{counts}[blockIdx.x]; for (int pc_q = threadIdx.x; pc_q < {tile}_count; "
            f"pc_q += blockDim.x) {tile}[pc_q] = {values}[(long long)blockIdx.x * blockDim.x "
            f"+ pc_q]; __syncthreads(); }}")


def _shared_prefix_edit(tokens: list[Token], kernel: Kernel, g: Group) -> tuple[int, int, str]:
    name = next(k for k, t in enumerate(tokens) if t.text == kernel.name and
                k + 1 < len(tokens) and tokens[k + 1].text == "(")
    body = next(k for k in range(matching(tokens, name + 1), len(tokens))
                if tokens[k].text == "{")
    return (tokens[body].end, tokens[body].end, shared_prefix(g))


def rewrite_kernel(program: Program, kernel: Kernel, plan_groups: list[Group]) -> str:
    """The kernel's text reading its reorganised references from the copies."""
    text = program.text
    tokens = _kernel_tokens(program, kernel)
    edits: list[tuple[int, int, str]] = []
    segments = []
    if len({g.first.loop_line for g in plan_groups if g.kind == "segment"}) < \
            sum(1 for g in plan_groups if g.kind == "segment"):
        raise NotRewritable("one loop walks the runs of two index arrays")
    padded = [g for g in plan_groups if g.padded]
    definition = _index_definition(tokens, text, padded[0].first) if padded else None
    physical = definition[2] if definition else ""
    for g in plan_groups:
        r = g.first
        if g.kind == "gather":
            index = r.local or f"{r.index_array}[{r.index}]"
            hits = _subscripted(tokens, text, r.array, index)
            if not hits:
                raise NotRewritable(f"'{r.text}' is not written as such in the kernel")
            for k, close in hits:
                original = text[tokens[k].start:tokens[close].end]
                choice = f"({g.pointer} ? {g.pointer}[{r.index}] : {original})"
                if g.shared:
                    values, slots, _, tile = g.shared_names()
                    choice = f"({values} ? {tile}[{slots}[{r.index}]] : {choice})"
                if g.padded:
                    order, packed, rank = g.padded_names()
                    choice = f"({packed} ? {packed}[{rank}[{physical}]] : {choice})"
                edits.append((tokens[k].start, tokens[close].end, choice))
            if g.shared:
                edits.append(_shared_prefix_edit(tokens, kernel, g))
            if g.padded:
                edits.append(_reordered_index(tokens, text, g, definition))
            if r.local:
                edits += _unread_local(tokens, text, r, g, len(hits), plan_groups)
            continue
        loops = [k for k, t in enumerate(tokens) if t.text == "for" and t.line == r.loop_line]
        if len(loops) != 1:
            raise NotRewritable(f"the loop at line {r.loop_line} is not one `for` as written")
        segments.append((g, loops[0]))
    for g, at in segments:
        edits = _split_loop(tokens, text, g, at, edits)
    # the new parameters, after the last one
    name = next(k for k, t in enumerate(tokens) if t.text == kernel.name and
                k + 1 < len(tokens) and tokens[k + 1].text == "(")
    params_end = matching(tokens, name + 1)
    edits.append((tokens[params_end].start, tokens[params_end].start,
                  "".join(", " + p for p in new_parameters(plan_groups))))
    return _applied(text, kernel.span.start, kernel.span.end, edits)


def _applied(text: str, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
    """text[start:end] with the edits inside it."""
    out, pos = [], start
    for first, last, new in sorted(edits, key=lambda e: (e[0], e[1])):
        if first < pos:
            raise NotRewritable("overlapping references")
        out.append(text[pos:first])
        out.append(new)
        pos = last
    out.append(text[pos:end])
    return "".join(out)


def _split_loop(tokens: list[Token], text: str, g: Group, at: int,
                edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The edits with the segment loop at token `at` split in two: the iterations whose
    elements the row's slice holds read the copies, the rest (and every iteration of a
    row whose slice is not copied) the original. Same iterations, same order:

        { const bool pc_use = <the slice is copied>;
          const long long pc_run = <the row's first element in the copies> - 32 * first;
          const long long pc_split = first + <the slice's width, 0 when not copied>;
          init; for (; cond && k < pc_split; step) body-reading-the-copies
          for (; cond; step) body }
    """
    r = g.first
    close = matching(tokens, at + 1)
    end = _statement_end(tokens, close + 1)
    begin, pragmas = loop_pragmas(tokens, text, at)
    header = split_top_level(tokens[at + 2:close], ";")
    if len(header) != 3 or not header[0] or not header[1]:
        raise NotRewritable(f"the loop at line {r.loop_line} has no first value or condition")
    part = [text[h[0].start:h[-1].end] if h else "" for h in header]
    inner = [e for e in edits if tokens[close].end <= e[0] and e[1] <= tokens[end].end]
    outer = [e for e in edits if e not in inner]
    if any(begin <= e[0] < tokens[end].end for e in outer):
        raise NotRewritable(f"a reference in the header of the loop at line {r.loop_line}")
    run, use = run_names(g)
    split = run.replace("pc_run", "pc_split")
    copied = list(inner)
    for ref, copy in zip(g.references, g.copies):
        hits = _subscripted(tokens, text, ref.array, ref.subscript, close + 1, end + 1)
        if not hits:
            raise NotRewritable(f"'{ref.text}' is not written as such in the loop")
        for k, c in hits:
            copied.append((tokens[k].start, tokens[c].end,
                           f"{copy}[{run} + 32LL * ({ref.counter})]"))
    body_start, body_end = tokens[close].end, tokens[end].end
    row = f"(long long)({r.index})"
    here, after = f"{g.pointer}[{row} >> 5]", f"{g.pointer}[({row} >> 5) + 1]"
    first = f"(long long)({r.start})"
    new = (f"{{ const bool {use} = {g.pointer} && {after} > {here}; "
           f"const long long {run} = {use} ? {here} + ({row} & 31) - 32LL * {first} : 0; "
           f"const long long {split} = {first} + ({use} ? ({after} - {here}) / 32 : 0); "
           f"{part[0]}; {pragmas}for (; ({part[1]}) && (long long)({r.counter}) < {split}; "
           f"{part[2]}){_applied(text, body_start, body_end, copied)}\n"
           f"{pragmas}for (; {part[1]}; {part[2]}){_applied(text, body_start, body_end, inner)}"
           " }")
    return outer + [(begin, tokens[end].end, new)]


_PRAGMA_LINE = re.compile(r"^[ \t]*#[ \t]*pragma\b(?:[^\n]*\\\n)*[^\n]*", re.M)
_DIRECTIVE_LINE = re.compile(r"^[ \t]*#", re.M)


def loop_pragmas(tokens: list[Token], text: str, at: int) -> tuple[int, str]:
    """The pragmas written right before the loop whose `for` is tokens[at] (`#pragma
    unroll 4` lines, `_Pragma("unroll")` operators, in any mix), which apply to that
    loop: (where the first begins, else the loop's start; their text, to be written
    before each loop the rewrite makes of it, every directive on a line of its own).
    A rewrite replacing the loop from there moves them with it: a pragma left before a
    statement that is not a loop does not compile."""
    found: list[str] = []
    begin, k = tokens[at].start, at
    while True:
        gap_start = tokens[k - 1].end if k else 0
        gap = text[gap_start:begin]
        lines = list(_PRAGMA_LINE.finditer(gap))
        if len(lines) != len(_DIRECTIVE_LINE.findall(gap)):
            if lines:
                raise NotRewritable(f"the pragmas before the loop at line {tokens[at].line} "
                                    "are among other directives")
            break
        if lines:
            found[:0] = ["\n" + m.group(0).strip() + "\n" for m in lines]
            begin = gap_start + lines[0].start() + len(lines[0].group(0)) - \
                len(lines[0].group(0).lstrip())
        if k >= 4 and tokens[k - 4].text == "_Pragma" and tokens[k - 3].text == "(" and \
                tokens[k - 2].kind == "str" and tokens[k - 1].text == ")":
            found.insert(0, text[tokens[k - 4].start:tokens[k - 1].end] + " ")
            begin, k = tokens[k - 4].start, k - 4
            continue
        break
    return begin, "".join(found)


def run_names(g: Group) -> tuple[str, str]:
    """The private scalars of a segment group's loop: the run's position in the copies,
    and whether the row's slice is copied."""
    suffix = f"{g.first.loop_line}_{g.first.index_array}"
    return f"pc_run{suffix}", f"pc_use{suffix}"


def new_parameters(plan_groups: list[Group]) -> list[str]:
    out = []
    for g in plan_groups:
        if g.kind == "gather":
            out.append(f"const {g.first.element_type} *__restrict__ {g.pointer}")
            if g.shared:
                values, slots, counts, _ = g.shared_names()
                out += [f"const {g.first.element_type} *__restrict__ {values}",
                        f"const int *__restrict__ {slots}", f"const int *__restrict__ {counts}"]
            if g.padded:
                order, packed, rank = g.padded_names()
                out += [f"const int *__restrict__ {order}",
                        f"const {g.first.element_type} *__restrict__ {packed}",
                        f"const int *__restrict__ {rank}"]
        else:
            out.append(f"const long long *__restrict__ {g.pointer}")
            out += [f"const {r.element_type} *__restrict__ {c}"
                    for r, c in zip(g.references, g.copies)]
    return out


def rewrite_launch(program: Program, launch: Launch, kernel: Kernel, plan_groups: list[Group],
                   bounds: dict[str, tuple[str, str]] | None, reuse: float, site: int
                   ) -> str:
    """The launch statement, preceded by the building (or reuse) of the copies at
    this launch's values; `bounds` None: this launch reads the originals."""
    text = program.text[launch.span.start:launch.span.end]
    tokens = tokenize(text)
    _, config, args = launch_parts(program.text, launch)
    end = matching(tokens, next(k for k, t in enumerate(tokens) if t.text == ">>>") + 1)
    position = {p.name: k for k, p in enumerate(kernel.parameters)}
    stream = config[3] if len(config) > 3 else "0"
    indent = statement_indent(program.text, launch)
    lines, extra, sites = [], [], []
    for g in plan_groups:
        r = g.first
        if bounds is None:
            extra += [f"(const {x.element_type} *)0" for x in g.references] \
                if g.kind == "gather" else \
                ["(const long long *)0"] + [f"(const {x.element_type} *)0"
                                           for x in g.references]
            if g.shared:
                extra += [f"(const {r.element_type} *)0", "(const int *)0", "(const int *)0"]
            if g.padded:
                extra += ["(const int *)0", f"(const {r.element_type} *)0", "(const int *)0"]
            continue
        lo, hi = bounds[r.text]
        index = f"({args[position[r.index_array]]})"
        var = f"pc_irregular_{len(lines)}"
        site_name = f"polycoal_irregular_sites[{site}]"
        if g.kind == "gather":
            geometry = f"dim3({config[1]}).x, dim3({config[0]}).x" \
                if g.shared or g.padded else "0u, 0u"
            if g.shared or g.padded:   # one-dimensional launches only: checked at run time
                geometry = (f"dim3({config[1]}).y * dim3({config[1]}).z * dim3({config[0]}).y"
                            f" * dim3({config[0]}).z == 1 ? {geometry.split(', ')[0]} : 0u, "
                            f"{geometry.split(', ')[1]}")
            lines.append(f"polycoal_gathered<{r.element_type}> {var} = polycoal_gather("
                         f"{site_name}, 0, ({args[position[r.array]]}), {index}, {lo}, {hi}, "
                         f"{reuse:g}, {geometry}, {stream}, {g.padding});")
            extra.append(f"{var}.copy")
            if g.shared:
                extra += [f"{var}.shared", f"{var}.slot", f"{var}.count"]
            if g.padded:
                extra += [f"{var}.order", f"{var}.packed", f"{var}.rank"]
        else:
            length = f"({args[position[r.length_array]]})" if r.length_array else \
                "(const int *)0"
            fed = next((x for x in g.references if x.feeds), None)
            gather = (f"({args[position[fed.array]]}), (int)sizeof({fed.feeds_type})"
                      if fed and fed.feeds in position else "(const int *)0, 0")
            lines.append(f"const long long *{var} = polycoal_segments({site_name}, {index}, "
                         f"{length}, {lo}, {hi}, {reuse:g}, {gather}, {stream});")
            copies = []
            for k, x in enumerate(g.references):
                name = f"{var}_{k}"
                lines.append(f"const {x.element_type} *{name} = polycoal_segment_copy("
                             f"{site_name}, {k}, ({args[position[x.array]]}), {index}, "
                             f"{length}, {stream});")
                copies.append(name)
            lines.append(f"if (!{site_name}.serve) {var} = 0;")
            extra += [var] + copies
        sites.append(site_name)
        site += 1
    launch_text = text[:tokens[end].start] + "".join(", " + e for e in extra) + \
        text[tokens[end].start:]
    if not lines:
        return launch_text
    inner = indent + "  "
    lines += [f"polycoal_irregular_time({x}, 0, {stream});" for x in sites]
    after = [f"polycoal_irregular_time({x}, 1, {stream});" for x in sites]
    return ("{ /* polycoal: irregular references read from reorganised copies, built "
            "here or reused */\n" + "".join(inner + x + "\n" for x in lines) + inner +
            launch_text + "\n" + "".join(inner + x + "\n" for x in after) + indent + "}")


def sites_of(plan_groups: list[Group]) -> int:
    return len(plan_groups)


def mark_writes(marks: list[tuple[Span, str, str, str | None]]) -> list[tuple[Span, str]]:
    """Edits marking the host's writes to source arrays (each moves the array's
    version): a call is wrapped (the variable read after it; an allocation's size
    recorded), a launch preceded, in a block of its own."""
    out = []
    launches: dict[Span, list[str]] = {}
    for span, what, variable, size in marks:
        if what == "call":
            out.append((Span(span.start, span.start), "polycoal_irregular_written("))
            out.append((Span(span.end, span.end), f", &{variable}" +
                        (f", (size_t)({size}))" if size else ")")))
        else:
            launches.setdefault(span, []).append(variable)
    for span, variables in launches.items():
        out.append((Span(span.start, span.start), "{ " + "".join(
            f"polycoal_irregular_wrote({v}); " for v in variables)))
        out.append((Span(span.end, span.end), " }"))
    return out


def runtime(sites: int) -> str:
    return render_template("irregular_runtime.cu.j2", sites=max(sites, 1),
                           gather_reuse=MIN_REUSE["gather"],
                           padding_reuse=MIN_REUSE["padding"],
                           segment_reuse=MIN_REUSE["segment"]) + "\n"


def runtime_position(program: Program, first_use: int) -> int:
    """Where the runtime goes: after the last #include before `first_use` outside any
    conditional block of the preprocessor (the start of the next line), else at the top
    of the file."""
    at, depth, pos = 0, 0, 0
    for line in program.text.splitlines(keepends=True):
        end = pos + len(line)
        if end > first_use:
            break
        directive = re.match(r"[ \t]*#[ \t]*(\w+)", line)
        word = directive.group(1) if directive else ""
        if word in ("if", "ifdef", "ifndef"):
            depth += 1
        elif word == "endif":
            depth -= 1
        elif word == "include" and depth == 0 and line.endswith("\n"):
            at = end
        pos = end
    return at
