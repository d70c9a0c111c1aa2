"""Statements of a kernel the C subset cannot read, as opaque statements (issue 32).

A kernel Clang reads cleanly may hold statements no lowering spells in C: a library's
block-wide primitive (`BlockReduce(temp).Sum(x)`), a cooperative group (`cg::thread_block
b = cg::this_thread_block(); b.sync();`), a lambda, a range loop, a reference, a member
function call. Each such statement (the smallest statement of a block that holds the
construct) becomes a call `__pc_opaque(a, b, ...)` of the kernel's variables it names, so
that the rest of the kernel is read: its global references, loops and thread geometry
reach the model, which treats the call as a statement of unknown memory effects.

A kernel read this way is only judged, never transformed: the opaque statements may read
thread indices (`thread_rank()`), synchronise, or touch memory in ways the model cannot
see, so no rewrite of it could be shown legal. The driver reads it through a copy no
launch runs (lower.py's judged copies), and its report names the opaque lines.

A declaration among them keeps its variables where C can spell their types (`int v =
__pc_opaque(x);`), so that later statements still read them; a variable of a type C
cannot spell (a class of a namespace or a template) is dropped, and every statement that
names it is opaque too.
"""

from __future__ import annotations

import itertools
import re

# words of C++ that no lowering spells in C (a `::` inside a range another lowering
# rewrites, `std::sqrt`, is that lowering's)
_WORDS = frozenset({"::", "typename", "template", "this", "new", "delete", "throw",
                    "decltype", "operator", "static_assert", "try", "catch"})
# statements and expressions of C++ only
_KINDS = frozenset({"LAMBDA_EXPR", "CXX_FOR_RANGE_STMT", "CXX_TRY_STMT", "CXX_CATCH_STMT",
                    "CXX_THROW_EXPR", "CXX_NEW_EXPR", "CXX_DELETE_EXPR", "CXX_THIS_EXPR",
                    "CXX_TYPEID_EXPR", "TEMPLATE_REF", "NAMESPACE_REF"})
# a type C spells: a number, a vector type or a file-scope struct, pointers to them, or a
# template parameter (replaced by a type in the copy)
_SPELLABLE = re.compile(r"(?:const\s+|volatile\s+)*(?:unsigned\s+|signed\s+|struct\s+)?"
                        r"(?:long long|long double|[A-Za-z_]\w*)(?:\s*\*(?:\s*const)?)*")
MARK = "__pc_opaque"
_DIRECTIVE = re.compile(r"^[ \t]*#", re.M)
_LIMITS = re.compile(r"(?:(?:::\s*)?std\s*::\s*)?numeric_limits\s*<[^;<>]*>\s*::\s*"
                     r"(?:max|min|lowest|epsilon|infinity|quiet_NaN)\s*\(\s*\)")


def statements(ci, kernel, text: str, covered: list[tuple[int, int]], at,
               errors: list[tuple[int, int]] = ()) -> tuple[
        tuple[int, int, str], ...] | None:
    """(start, end, replacement) of each opaque statement of `kernel` (offsets of its
    file, through `at`); () when there is none; None when a construct or an error is
    outside every statement (its signature) and the kernel cannot be read this way.
    `covered`: the ranges other lowerings rewrite; `errors`: (line, column) of Clang's
    errors inside the kernel (a name of a library polycoal declares nothing of: the
    statement holding it is opaque, and so is each that uses a declaration Clang found
    invalid)."""
    K = ci.CursorKind
    body = next((c for c in kernel.get_children() if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return None if errors else ()
    # numeric_limits<T>::max() is a literal in a copy (limits.py)
    covered = list(covered) + [(m.start(), m.end()) for m in _LIMITS.finditer(
        text, at(body.extent.start), at(body.extent.end))]

    def inside(position: int) -> bool:
        return any(a <= position < b for a, b in covered)

    tokens = list(body.get_tokens())
    marks = []
    for k, t in enumerate(tokens):
        start = at(t.extent.start)
        if t.spelling in _WORDS and not inside(start) and not (
                t.spelling == "::" and k + 1 < len(tokens) and
                inside(at(tokens[k + 1].extent.start))):
            marks.append(start)
    if not marks and not errors and not _hinted([t.spelling for t in tokens]):
        return ()                   # a kernel of C (the walk below costs)
    # one walk: the statements of blocks, the variables, every cursor of the body
    blocks, variables, cursors = [], {}, []
    for c in kernel.walk_preorder():
        if c.kind == K.COMPOUND_STMT:
            blocks.extend(c.get_children())
        elif c.kind in (K.VAR_DECL, K.PARM_DECL):
            variables[c.hash] = c
        cursors.append(c)
    extents = [(at(s.extent.start), at(s.extent.end), s) for s in blocks]
    invalid = ci.conf.lib.clang_isInvalidDeclaration
    starts = {a for a, _ in covered}

    def deduced(d) -> bool:         # `auto` a lowering spells (ClangKernel.words)
        return any(t.spelling == "auto" and at(t.extent.start) in starts
                   for t in d.get_tokens())
    dropped = {h for h, d in variables.items() if d.kind == K.VAR_DECL and (
        invalid(d) or (_spelling(ci, d.type) is None and not deduced(d)))}
    first, last = at(body.extent.start), at(body.extent.end)
    lines = [0] + [k + 1 for k, ch in enumerate(text) if ch == "\n"]
    unheld = []                 # statements Clang dropped (an invalid declaration)
    for line, column in errors:
        holding = [(a, s) for a, _, s in extents if _holds(s.extent, line, column)]
        if holding:
            marks.append(max(holding, key=lambda x: x[0])[0])
            continue
        written = _written_statement(text, lines[line - 1] + column - 1, first + 1, last - 1) \
            if 0 < line <= len(lines) else None
        if written is None:
            return None
        unheld.append(written)
    for c in cursors:
        start = at(c.extent.start)
        if not first <= start < last or inside(start):
            continue
        ref = c.referenced if c.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) else None
        if c.kind.name in _KINDS or _method_call(ci, c, ref) or _temporary(ci, c) or \
                _constructed(ci, c) or \
                (ref is not None and ref.kind != K.PARM_DECL and invalid(ref)) or \
                (c.kind == K.DECL_REF_EXPR and ref is not None and ref.hash in dropped) or \
                (c.kind == K.VAR_DECL and c.hash in dropped):
            marks.append(start)
    # a name an unheld statement declares (`using X = ...;`, `__shared__ ... temp;`) is
    # unknown wherever it is used
    for a, b in unheld:
        name = _declared_name(text[a:b])
        marks += [at(t.extent.start) for t in tokens if t.spelling == name and
                  not a <= at(t.extent.start) < b] if name else []
    if not marks and not unheld:
        return ()
    chosen = [(a, b, None) for a, b in unheld]
    for m in marks:
        holding = [(a, b, s) for a, b, s in extents if a <= m < b]
        if not holding and any(a <= m < b for a, b in unheld):
            continue
        if not holding:
            return None
        chosen.append(min(holding, key=lambda x: x[1] - x[0]))
    chosen = list(dict.fromkeys(chosen))
    outer = [x for x in chosen if not any(
        y[0] <= x[0] and x[1] <= y[1] and y[:2] != x[:2] for y in chosen)]
    if any(a < d and c < b and (a, b) != (c, d) for a, b, _ in outer for c, d, _ in outer):
        return None                 # a written statement across Clang's: not one statement
    if any(_DIRECTIVE.search(text, a, b) for a, b, _ in outer):
        return None                 # `#ifdef` lines inside: replacing them unbalances them
    out = []
    for a, b, s in sorted(outer, key=lambda x: x[0]):
        new = f"{MARK}();" if s is None else _replacement(ci, s, variables, dropped)
        # an expression's extent (a return's) stops before its `;`
        out.append((a, b, new[:-1] if new.endswith(";") and
                    text[b:b + 64].lstrip().startswith(";") else new))
    return tuple(out)


def _written_statement(text: str, position: int, low: int, high: int
                       ) -> tuple[int, int] | None:
    """[start, end) of the statement of `text` that holds `position` (inside the body
    [low, high)), read from the text: after the `;`, `{` or `}` before it, through the
    `;` that ends it at its depth; None where brackets do not close in between."""
    start = position
    while start > low and text[start - 1] not in ";{}":
        start -= 1
    depth, end = 0, position
    while end < high:
        ch = text[end]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif ch == ";" and depth == 0:
            return (start + len(text[start:position]) - len(text[start:position].lstrip()),
                    end + 1)
        end += 1
    return None


def _hinted(words: list[str]) -> bool:
    """Whether the tokens of a body hint at C++ a cursor shows (a member function call,
    a reference, a lambda, a range loop): only then is the body walked."""
    for k, w in enumerate(words[:-2]):
        if w in (".", "->") and words[k + 2] == "(":
            return True
        if w == "&" or (w == "[" and words[k + 1] in ("]", "=", "&")):
            return True
        if words[k + 2] in ("(", "{") and w.isidentifier() and words[k + 1].isidentifier() \
                and w not in ("return", "else", "case", "goto"):
            return True             # `RNG rng(seed)`: a constructor, maybe
    return words.count(":") > words.count("?")


def _declared_name(statement: str) -> str | None:
    """The name a declaration written in `statement` declares: `using X = ...;`, or the
    last identifier before its `=`, `[` or `;`."""
    m = re.match(r"\s*using\s+(\w+)\s*=", statement)
    if m:
        return m.group(1)
    head = re.split(r"[=\[;(]", statement, maxsplit=1)[0]
    names = re.findall(r"[A-Za-z_]\w*", head)
    return names[-1] if len(names) >= 2 else None


def _constructed(ci, cursor) -> bool:
    """A variable of a class initialised by a constructor on arguments (`RNG rng(seed);`,
    `Acc a{x, y}` with a user constructor): C has no constructors."""
    if cursor.kind != ci.CursorKind.VAR_DECL:
        return False
    words = [t.spelling for t in cursor.get_tokens()]
    if cursor.spelling not in words:
        return False
    after = words.index(cursor.spelling) + 1
    if after >= len(words) or words[after] not in ("(", "{"):
        return False                # `T v = e;`: a copy, which C writes so
    for child in cursor.get_children():
        ctor = child.referenced if child.kind == ci.CursorKind.CALL_EXPR else None
        if ctor is not None and ctor.kind == ci.CursorKind.CONSTRUCTOR and \
                not ctor.is_copy_constructor() and not ctor.is_move_constructor() and \
                any(True for _ in child.get_arguments()):
            return True
    return False


def _temporary(ci, cursor) -> bool:
    """An object of a class built where it is written (`CustomDifference()`, `Op{}`),
    which C reads as a type: not a copy Clang builds implicitly."""
    if cursor.kind != ci.CursorKind.CALL_EXPR or cursor.referenced is None or \
            cursor.referenced.kind != ci.CursorKind.CONSTRUCTOR:
        return False
    words = [t.spelling for t in itertools.islice(cursor.get_tokens(), 2)]
    return len(words) == 2 and words[0] == cursor.referenced.spelling and \
        words[1] in ("(", "{")


def _holds(extent, line: int, column: int) -> bool:
    return (extent.start.line, extent.start.column) <= (line, column) < \
        (extent.end.line, extent.end.column)


def _method_call(ci, cursor, ref) -> bool:
    """A member function named in the text (`b.sync()`), not an implicit conversion
    (`float f = h;` of a __half calls its `operator float` where nothing names it)."""
    return cursor.kind == ci.CursorKind.MEMBER_REF_EXPR and ref is not None and \
        ref.kind == ci.CursorKind.CXX_METHOD and \
        any(t.spelling == ref.spelling for t in cursor.get_tokens())


def _spelling(ci, type_) -> str | None:
    """How C spells a variable's type, or None (a class of a namespace or template, a
    reference); arrays and types of template parameters as written."""
    T = ci.TypeKind
    if type_.kind in (T.LVALUEREFERENCE, T.RVALUEREFERENCE):
        return None
    if type_.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY, T.VARIABLEARRAY,
                      T.DEPENDENTSIZEDARRAY):
        return "" if _spelling(ci, type_.element_type) is not None else None
    canonical = type_.get_canonical().spelling
    spelling = type_.spelling if "type-parameter-" in canonical else canonical
    if re.search(r"\b(?:auto|decltype)\b", spelling):      # not deduced (a template's)
        return None
    if "::" in spelling or "<" in spelling or not _SPELLABLE.fullmatch(spelling.strip()):
        # a template's dependent type as written (`T`, `const T *`) stays: the copy names it
        written = type_.spelling
        if "type-parameter-" in canonical and _SPELLABLE.fullmatch(written.strip()):
            return written
        return None
    return spelling


_SYNC = (re.compile(r"(\w+)\.sync\(\);?"),
         re.compile(r"(?:cg|cooperative_groups)::sync\((\w+)\);?"))
_BLOCK_SYNC = re.compile(r"(?:cg|cooperative_groups)::this_thread_block\(\)\.sync\(\);?")


# a cooperative group's handle, and how one is obtained
_GROUP = re.compile(r"\bcooperative_groups::(?:__v1::)?(?:thread_block|thread_block_tile|"
                    r"coalesced_group)\b")
_HANDLE = re.compile(r"(?:(?:cg|cooperative_groups)::)?(?:this_thread_block\(\)|"
                     r"tiled_partition(?:<\d+>)?\(\w+(?:,\d+)?\)|coalesced_threads\(\))")


def _barrier(ci, statement, variables: dict) -> str | None:
    """A cooperative group's barrier as the C subset writes it: a thread block's
    `b.sync()`, `cg::sync(b)`, `cg::this_thread_block().sync()` as __syncthreads(); a
    tile's (at most a warp) or a coalesced group's as __syncwarp()."""
    written = "".join(t.spelling for t in statement.get_tokens())
    if _BLOCK_SYNC.fullmatch(written):
        return "__syncthreads();"
    m = next((m for m in (r.fullmatch(written) for r in _SYNC) if m), None)
    group = next((v for v in variables.values() if v.spelling == m.group(1)), None) \
        if m else None
    if group is None:
        return None
    kind = group.type.get_canonical().spelling
    if "thread_block_tile" in kind or "coalesced_group" in kind:
        return "__syncwarp();"
    if re.search(r"\bthread_block\b", kind):
        return "__syncthreads();"
    return None


def _replacement(ci, statement, variables: dict, dropped: set) -> str:
    """The opaque statement: `__pc_opaque(names);`, a declaration's variables declared
    from it where C spells their types; a cooperative group's barrier as the barrier."""
    K = ci.CursorKind
    barrier = _barrier(ci, statement, variables)
    if barrier is not None:
        return barrier
    declared = [v for v in statement.get_children() if v.kind == K.VAR_DECL]
    if statement.kind == K.DECL_STMT and declared and all(
            _GROUP.search(v.type.get_canonical().spelling) and _HANDLE.fullmatch(
                "".join(t.spelling for t in v.get_tokens()).split("=", 1)[-1])
            for v in declared):
        return ";"          # a handle on the block or a tile: its uses say what it does
    names = []
    for c in statement.walk_preorder():
        ref = c.referenced if c.kind == K.DECL_REF_EXPR else None
        if ref is not None and ref.hash in variables and ref.hash not in dropped and \
                ref.spelling not in names and ref.type.kind not in (
                    ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
            names.append(ref.spelling)
    call = f"{MARK}({', '.join(names)})"
    if statement.kind == K.DECL_STMT:
        kept = []
        for v in statement.get_children():
            if v.kind == K.VAR_DECL and v.hash not in dropped:
                spelling = _spelling(ci, v.type)
                if spelling:             # arrays and dropped ones are not declared
                    kept.append(f"{spelling} {v.spelling} = {call};")
        if kept:
            return " ".join(kept)
    return f"{call};"
