"""Apply a data layout to a program's text: kernels, launches and host calls.

In a kernel, a parameter `S *p` whose layout changed becomes one pointer per group of
fields (`float4 *p__x_y_z_m, float4 *p__vx_vy_vz`), and every field access `p[E].f`
(`p->f`) becomes the access to its group, `p__x_y_z_m[E].x`: the element index E is kept
as written. A launch passes, for the array, the start of each of its segments; the host
calls on the array (cudaMalloc, cudaMemcpy, cudaMemset, cudaFree) go through the layout
runtime emitted once after the struct's definition (templates/layout_runtime.cu.j2),
which registers each allocation's element count and converts at the copies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from polycoal.frontend.launch_text import has_side_effects
from polycoal.frontend.lexer import (ASSIGNMENTS, Token, apply_edits, matching,
                                     split_top_level, tokenize)
from polycoal.frontend.program import Kernel, Launch, Program
from polycoal.frontend.struct_arrays import HostCall
from polycoal.optimize.layout import Layout
from polycoal.templates import render_template


class NotRewritable(Exception):
    """A use of the array the layout rewrite does not handle (the reason)."""


def _suffix(layout: Layout, k: int) -> str:
    return "_".join(re.sub(r"\W", "", leaf.path.replace(".", "_").replace("[", "_"))
                    for leaf in layout.groups[k].leaves)


def group_parameters(name: str, layout: Layout) -> list[str]:
    return [f"{name}__{_suffix(layout, k)}" for k in range(len(layout.groups))]


def prefix(layout: Layout) -> str:
    return "polycoal_" + re.sub(r"\W", "_", layout.struct.name)


def _path(tokens: list[Token], k: int, text: str) -> tuple[str, int]:
    """A field path starting at token k (after the element): `.pos.x`, `.v[2]`; returns
    (path, index of the token after it)."""
    words = []
    while k < len(tokens):
        t = tokens[k]
        if (t.text == "." or t.text == "->" and not words) and k + 1 < len(tokens) and \
                tokens[k + 1].kind == "id":
            words.append(("." if words else "") + tokens[k + 1].text)
            k += 2
        elif t.text == "[" and words:
            close = matching(tokens, k)
            inner = text[tokens[k].end:tokens[close].start].strip()
            if not inner.isdigit():
                raise NotRewritable(f"a field array indexed by '{inner}'")
            words.append(f"[{int(inner)}]")
            k = close + 1
        else:
            break
    return "".join(words), k


def _element(tokens: list[Token], k: int, text: str) -> tuple[str, str, int] | None:
    """(element index as written, field path, index of the token after) of the access
    that starts with the pointer at token k: `p[E].f...` or `p->f...` (index 0); None
    when the pointer is used otherwise."""
    nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
    if nxt == "[":
        end = matching(tokens, k + 1)
        path, after = _path(tokens, end + 1, text)
        return text[tokens[k + 1].end:tokens[end].start].strip(), path, after
    if nxt == "->" and k + 2 < len(tokens) and tokens[k + 2].kind == "id":
        path, after = _path(tokens, k + 1, text)
        return "0", path, after
    return None


def _written_leaves(tokens: list[Token], body: int, p: str, text: str,
                    aliases: set[str] = frozenset(), skip: tuple = ()) -> set[str] | None:
    """The field paths of `p` the kernel writes (`p[E].f = / op= / ++`, `q->f = ` for
    a pointer q to one of its elements); None when a write cannot be told (the whole
    element, an unknown form)."""
    out: set[str] = set()
    k = body
    while k < len(tokens):
        t = tokens[k]
        if (t.text != p and t.text not in aliases) or tokens[k - 1].text in (".", "->", "::") \
                or any(first <= k <= last for first, last in skip):
            k += 1
            continue
        found = _element(tokens, k, text)
        if found is None:
            return None
        _, path, after = found
        before = tokens[k - 1].text
        nxt = tokens[after].text if after < len(tokens) else ""
        if nxt in ASSIGNMENTS or before in ("++", "--", "&"):
            if not path:
                return None
            out.add(path)
        k = after
    return out


def _aliases(tokens: list[Token], body: int, layouts: dict[str, Layout], text: str
             ) -> dict[str, tuple[str, str, int, int]]:
    """Pointers to one element (`Body *b = &p[i];`): name -> (array, index as written,
    first and last token of the declaration), where the index has no side effects and
    neither the pointer nor a name in the index is assigned after it."""
    out = {}
    for k in range(body, len(tokens) - 6):
        if not (tokens[k].text == "*" and tokens[k + 1].kind == "id" and
                tokens[k + 2].text == "=" and tokens[k + 3].text == "&" and
                tokens[k + 4].text in layouts and tokens[k + 5].text == "["):
            continue
        close = matching(tokens, k + 5)
        if close + 1 >= len(tokens) or tokens[close + 1].text != ";":
            continue
        j = k - 1
        while j > body and (tokens[j].kind == "id" or tokens[j].text == "::"):
            j -= 1
        if tokens[j].text not in (";", "{", "}") or j == k - 1:
            continue
        inner = tokens[k + 6:close]
        index = text[tokens[k + 5].end:tokens[close].start].strip()
        if has_side_effects(index):
            continue
        names = {x.text for x in inner if x.kind == "id"} | {tokens[k + 1].text}
        later = tokens[close + 2:]
        if any(x.text in names and ((n + 1 < len(later) and later[n + 1].text in ASSIGNMENTS)
                                    or (n and later[n - 1].text in ("++", "--")))
               for n, x in enumerate(later)):
            continue
        out[tokens[k + 1].text] = (tokens[k + 4].text, index, j + 1, close + 1)
    return out


def pointee_const(param: list[Token]) -> bool:
    """Whether the parameter's declaration makes its elements const (`const S *p`,
    `S const *p`), not only the pointer itself (`S *const p`, which the kernel may
    write through)."""
    star = next((k for k, t in enumerate(param) if t.text == "*"), len(param))
    return any(t.text == "const" for t in param[:star])


def _field(p: str, layout: Layout, path: str, index: str) -> str:
    """The access to field `path` of element `index` of `p` in the new layout."""
    g_index, group = layout.group_of(path)
    _, component = group.slot(path)
    name = group_parameters(p, layout)[g_index]
    return f"{name}[{index}]" + (f".{component}" if component else "")


_BOUNDARY = (";", "{", "}", ")", ":")


def _whole(tokens: list[Token], text: str, k: int, after: int, p: str, index: str,
           path: str, layouts: dict[str, Layout], line: int) -> tuple[int, int, str]:
    """(start, end, text) replacing the statement that reads or writes the whole element
    (or the sub-struct `path`) at tokens[k:after]: a declaration `S v = p[E];`, an
    assignment `v = p[E];`, a store `p[E] = v;` or a copy `p[E] = q[F];`, each written
    field by field."""
    layout = layouts[p]
    leaves = layout.struct.leaves_under(path)
    where = f"line {line + tokens[k].line - 1}"
    if not leaves:
        raise NotRewritable(f"no field '{path}' in {layout.struct.name} ({where})")
    if has_side_effects(index):
        raise NotRewritable(f"the index '{index}' of a whole element has side effects or "
                            f"calls ({where})")

    def suffix(leaf) -> str:
        rest = leaf.path[len(path):]
        return rest if rest.startswith(("[", ".")) else "." + rest
    end_token = tokens[after] if after < len(tokens) else None
    if k >= 2 and tokens[k - 1].text == "=" and tokens[k - 2].kind == "id" and \
            end_token is not None and end_token.text == ";":
        target = tokens[k - 2].text
        j = k - 3
        while j >= 0 and (tokens[j].kind == "id" or tokens[j].text == "::"):
            j -= 1
        if j < 0 or tokens[j].text not in _BOUNDARY:
            raise NotRewritable(f"a whole element read inside an expression ({where})")
        declared = [x.text for x in tokens[j + 1:k - 2] if x.text != "const"]
        if declared and tokens[j].text not in (";", "{", "}"):
            raise NotRewritable(f"a declaration as the body of a statement ({where})")
        first = tokens[j + 1] if declared else tokens[k - 2]
        body = " ".join(f"{target}{suffix(leaf)} = {_field(p, layout, leaf.path, index)};"
                        for leaf in leaves)
        # a declaration stays in its block; an assignment becomes one compound
        # statement (it may be the body of an `if` or a loop)
        return first.start, end_token.end, (f"{' '.join(declared)} {target}; {body}"
                                            if declared else f"{{ {body} }}")
    if k >= 1 and tokens[k - 1].text in _BOUNDARY and end_token is not None and \
            end_token.text == "=" and after + 2 < len(tokens) and \
            tokens[after + 1].text in layouts and tokens[after + 2].text == "[" and \
            layouts[tokens[after + 1].text].struct == layout.struct:
        # an element copied from another array of the struct: field by field
        source = tokens[after + 1].text
        close = matching(tokens, after + 2)
        other = text[tokens[after + 2].end:tokens[close].start].strip()
        other_path, stop = _path(tokens, close + 1, text)
        if other_path != path or stop >= len(tokens) or tokens[stop].text != ";" or \
                has_side_effects(other):
            raise NotRewritable(f"an element copied in a form polycoal does not rewrite "
                                f"({where})")
        body = " ".join(f"{_field(p, layout, leaf.path, index)} = "
                        f"{_field(source, layouts[source], leaf.path, other)};"
                        for leaf in leaves)
        return tokens[k].start, tokens[stop].end, f"{{ {body} }}"
    if k >= 1 and tokens[k - 1].text in _BOUNDARY and end_token is not None and \
            end_token.text == "=":
        j = after + 1
        while j < len(tokens) and (tokens[j].kind == "id" or tokens[j].text in (".", "->")):
            j += 1
        value = text[tokens[after + 1].start:tokens[j - 1].end] if j > after + 1 else ""
        if not value or j >= len(tokens) or tokens[j].text != ";":
            raise NotRewritable(f"a whole element stored from an expression ({where})")
        body = " ".join(f"{_field(p, layout, leaf.path, index)} = {value}{suffix(leaf)};"
                        for leaf in leaves)
        return tokens[k].start, tokens[j].end, f"{{ {body} }}"
    raise NotRewritable(f"'{text[tokens[k].start:tokens[after - 1].end]}' used as a whole "
                        f"element other than in `S v = ...;`, `v = ...;` or `... = v;` "
                        f"({where})")


def rewrite_kernel(program: Program, kernel: Kernel, layouts: dict[str, Layout],
                   unroll: dict[int, tuple[int, str]] | None = None) -> str:
    """The kernel's text with the parameters of `layouts` (name -> layout) split into
    their groups and their field accesses redirected; the loops of `unroll` (by the line
    of their `for`: factor, 0 for completely) get an unroll pragma on the same line."""
    text = program.text[kernel.span.start:kernel.span.end]
    tokens = tokenize(text)
    first_line = program.text.count("\n", 0, kernel.span.start) + 1
    pending = dict(unroll or {})
    name_at = next(k for k, t in enumerate(tokens) if t.text == kernel.name
                   and k + 1 < len(tokens) and tokens[k + 1].text == "(")
    close = matching(tokens, name_at + 1)
    body = next(k for k in range(close, len(tokens)) if tokens[k].text == "{")
    edits: list[tuple[int, int, str]] = []
    taken = {t.text for t in tokens if t.kind == "id"}
    aliases = _aliases(tokens, body, layouts, text)
    for name, (_, _, first, last) in aliases.items():
        edits.append((tokens[first].start, tokens[last].end, ""))   # the pointer goes
    for param in split_top_level(tokens[name_at + 2:close]):
        ids = [t for t in param if t.kind == "id"]
        if not ids or ids[-1].text not in layouts:
            continue
        p = ids[-1].text
        layout = layouts[p]
        names = group_parameters(p, layout)
        clash = set(names) & taken
        if clash:
            raise NotRewritable(f"the name '{sorted(clash)[0]}' is taken")
        const = "const " if pointee_const(param) else ""
        written = _written_leaves(
            tokens, body, p, text, {a for a, (q, _, _, _) in aliases.items() if q == p},
            tuple((first, last) for _, _, first, last in aliases.values())) \
            if len(layouts) == 1 else None
        decls = []
        for g, n in zip(layout.groups, names):
            # a group the kernel only reads: its own segment, which no other pointer
            # of the kernel reaches (the array's other uses are the layout's): read-only
            if written is not None and not any(leaf in layout.struct.leaves_under(w)
                                              for w in written for leaf in g.leaves):
                decls.append(f"const {g.type} *__restrict__ {n}")
            else:
                decls.append(f"{const}{g.type} *{n}")
        edits.append((param[0].start, param[-1].end, ", ".join(decls)))
    declarations = [(first, last) for _, _, first, last in aliases.values()]
    k = body + 1
    while k < len(tokens):
        t = tokens[k]
        line = first_line + t.line - 1
        skip = next((last for first, last in declarations if first <= k <= last), None)
        if skip is not None:
            k = skip + 1
            continue
        if t.kind == "id" and t.text in aliases and tokens[k - 1].text not in (".", "->",
                                                                               "::"):
            array, index, _, _ = aliases[t.text]
            found = _element(tokens, k, text)
            path, after = found[1:] if found else ("", k + 1)
            if tokens[k + 1].text != "->" or layouts[array].struct.leaf(path) is None:
                raise NotRewritable(f"the element pointer '{t.text}' used other than by "
                                    f"one field (line {kernel.location.line + t.line - 1})")
            edits.append((t.start, tokens[after - 1].end,
                          _field(array, layouts[array], path, index)))
            k = after
            continue
        if t.text == "for" and line in pending:
            factor = pending.pop(line)[0]
            edits.append((t.start, t.start,
                          f'_Pragma("unroll{f" {factor}" if factor else ""}") '))
        if t.kind != "id" or t.text not in layouts or \
                tokens[k - 1].text in (".", "->", "::"):
            k += 1
            continue
        p, layout = t.text, layouts[t.text]
        found = _element(tokens, k, text)
        if found is not None:
            index, path, after = found
        else:
            raise NotRewritable(f"'{p}' used other than through a field (line "
                                f"{kernel.location.line + t.line - 1})")
        leaf = layout.struct.leaf(path) if path else None
        if leaf is None:
            # a whole element or a sub-struct (`Body b = p[i];`, `p[i] = b;`,
            # `float3 q = p[i].pos;`): the statement, field by field
            start, end, new = _whole(tokens, text, k, after, p, index, path, layouts,
                                     kernel.location.line)
            edits.append((start, end, new))
            k = next(j for j in range(after, len(tokens)) if tokens[j].end >= end) + 1
            continue
        edits.append((t.start, tokens[after - 1].end, _field(p, layout, path, index)))
        k = after
    new_text = apply_edits(text, edits)
    described = "; ".join(f"'{p}': {layout.describe()}" for p, layout in layouts.items())
    at = tokenize(new_text)
    brace = next(j for j in range(len(at)) if at[j].text == "{" and j > 0 and
                 any(x.text == kernel.name for x in at[:j]))
    return (new_text[:at[brace].end] + f" /* polycoal: struct arrays in a new layout: "
            f"{described} */" + new_text[at[brace].end:])


def rewrite_launch(program: Program, launch: Launch, positions: dict[int, Layout]) -> str:
    """The launch with each argument at `positions` replaced by its segments' starts."""
    text = program.text[launch.span.start:launch.span.end]
    tokens = tokenize(text)
    close = next(k for k, t in enumerate(tokens) if t.text == ">>>")
    end = matching(tokens, close + 1)
    args = split_top_level(tokens[close + 2:end])
    out, pos = [], 0
    for n, arg in enumerate(args):
        if n not in positions or not arg:
            continue
        layout = positions[n]
        value = text[arg[0].start:arg[-1].end]
        segments = [f"({g.type} *)polycoal_layout_segment({value}, {layout.segment_bytes(k)})"
                    for k, g in enumerate(layout.groups)]
        out.append(text[pos:arg[0].start])
        out.append(", ".join(segments))
        pos = arg[-1].end
    out.append(text[pos:])
    return "".join(out)


def rewrite_call(call: HostCall, layout: Layout) -> str:
    """A runtime call on a tracked array through the layout runtime."""
    p, a = prefix(layout), call.arguments
    if call.function == "cudaMalloc":
        target = a[0] if "void" in a[0] else f"(void **)({a[0]})"
        return f"{p}_malloc({target}, {a[1]})"
    if call.function == "cudaFree":
        return f"{p}_free({a[0]})"
    stream = (a[4] if len(a) > 4 else "0") if call.function == "cudaMemcpyAsync" else \
        (a[3] if len(a) > 3 else "0") if call.function == "cudaMemsetAsync" else "0"
    if call.function in ("cudaMemset", "cudaMemsetAsync"):
        return f"{p}_memset({a[0]}, {a[1]}, {a[2]}, {stream})"
    if call.function in ("cudaMemcpy", "cudaMemcpyAsync"):
        if call.tracked == (0, 1):
            return f"{p}_copy({a[0]}, {a[1]}, {a[2]}, {stream})"
        if call.tracked == (0,):
            return f"{p}_to_device({a[0]}, {a[1]}, {a[2]}, {a[3]}, {stream})"
        return f"{p}_to_host({a[0]}, {a[1]}, {a[2]}, {a[3]}, {stream})"
    raise NotRewritable(f"{call.function} on an array of {layout.struct.name}")


@dataclass(frozen=True)
class _Leaf:
    path: str
    component: str


def runtime(layout: Layout, first: bool) -> str:
    groups = []
    for k, g in enumerate(layout.groups):
        groups.append({"type": g.type, "size": g.size, "before": layout.segment_bytes(k),
                       "leaves": [_Leaf(leaf.path, "." + g.slot(leaf.path)[1]
                                        if g.slot(leaf.path)[1] else "")
                                  for leaf in g.leaves]})
    size = layout.struct.size
    # elements staged through shared memory by words: 256 of them in at most 32 KiB
    words = size // 4 if size % 4 == 0 and 256 * size <= 32768 else 0
    return render_template("layout_runtime.cu.j2", first=first, struct=layout.struct.name,
                           words=words,
                           prefix=prefix(layout), groups=groups, bytes=layout.element_bytes,
                           describe=layout.describe(), original=layout.struct.size)


def definition_end(program: Program, struct: str) -> int | None:
    """The offset just after the definition of `struct` in the file (`};` or
    `} Alias;`), None when it is not defined in the file."""
    tokens = program.tokens
    for k, t in enumerate(tokens):
        if t.text not in ("struct", "class") or k + 1 >= len(tokens):
            continue
        j = k + 1
        tag = tokens[j].text if tokens[j].kind == "id" else None
        if tag is not None:
            j += 1
        if j >= len(tokens) or tokens[j].text != "{":
            continue
        close = matching(tokens, j)
        m = close + 1
        names = {tag} if tag else set()
        while m < len(tokens) and tokens[m].text != ";":
            if tokens[m].kind == "id":
                names.add(tokens[m].text)
            m += 1
        if struct in names and m < len(tokens):
            return tokens[m].end
    return None
