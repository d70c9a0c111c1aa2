"""Lowering what Clang reads to the C subset the model consumes (issue 13).

Kernels the C-subset front end cannot take as they are written become plain kernels in
the text the rest of polycoal reads:

- a template kernel, once per instantiation launched in the input file
  (`rowsum<float><<<g, b>>>(...)`): a copy named `rowsum__pc_float` with the template's
  parameters replaced by the launch's arguments, and those launches redirected to it;
- a kernel defined in another file (an included header): a copy `name__pc` in the input
  file, its launches there redirected to it (the header is not touched);
- every copy is `static` (launched from its unit alone: two units that include one
  header each have theirs, and link), and so is every kernel derived from it
  (`name__pc__pc_checked`: the transformations keep the copy's specifiers);
- a kernel of the input file whose type aliases the C subset does not know
  (`using real = float;`, in a namespace): the aliases replaced in place by the types
  they stand for.

A copy keeps the definition's line structure and is appended at the end of the text,
inside the kernel's namespaces; a prototype on the line where the declaration holding
its first launch starts declares it before that launch. Lines of the input keep their
numbers, so every diagnostic outside a copy stays true, and a copy's lines map back to
its definition's (`Lowered.origin`). The driver (transform.py) keeps a lowering only
where the lowered kernel is then transformed: otherwise the input stays byte-identical.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from polycoal.frontend.limits import with_limits
from polycoal.frontend.lexer import (ASSIGNMENTS, Token, apply_edits, line_ends, matching,
                                     qualifier_start, split_top_level, tokenize)
from polycoal.frontend.normalise import PURE_FUNCTIONS
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.frontend.program import JUDGED


@dataclass(frozen=True)
class Lowering:
    kernel: str             # the name the pipeline reads: the copy's, or the kernel's own
    shown: str              # how diagnostics name it: rowsum<float>, linalg::rowsum
    file: str               # where the definition is
    line: int               # its first line there
    edits: tuple[tuple[int, int, str], ...]     # [start, end) of the input text -> text
    copy: str = ""          # the copy appended at the end of the text ('' when in place)
    prototype: str = ""     # its declaration, inserted before its first launch
    namespaces: tuple[str, ...] = ()
    inlined: tuple[str, ...] = ()       # the helpers it calls, inlined where it can
    # launches in a host function template that run the copy for one instantiation of
    # it: ([start, end) of the launch statement, the condition on the template's
    # parameters, the launch redirected); apply() joins the branches of one statement
    branches: tuple[Branch, ...] = ()
    # a kernel read only to judge it (_judged): never launched, so never in an output;
    # `why` says how it was read (at which arguments, with which statements opaque)
    generic: bool = False
    why: str = ""


# the stated arguments of a template read generically (Lowering.generic)
GENERIC_TYPE, GENERIC_VALUE = "float", "128"


@dataclass(frozen=True)
class Branch:
    start: int
    end: int                # after the statement's `;`
    condition: str          # `ROWS == 64`, `pc_same<T, float>::value`
    launch: str             # the statement redirected to the copy, on one line
    scope: int              # where the file-scope declaration holding it starts


_STATIC_BEFORE = re.compile(r"\bstatic\s+\Z")        # `static` right before `__global__`


def declared_before_use(text: str, lowering: Lowering) -> str:
    """`text` (a transformed lowered program) with the copy's prototype written from its
    transformed definition (which may take more arguments: the original geometry), and
    one beside it for each kernel the transformation generated from the copy
    (`k__pc__pc_before`, stages launched before or after it); their definitions follow
    the copy's at the end."""
    at = text.find(lowering.prototype)
    if at < 0:
        return text
    opening = "".join(f"namespace {n} {{ " for n in lowering.namespaces)
    closing = " }" * len(lowering.namespaces)
    prototypes = []
    pattern = re.compile(r"__global__[^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)?\b(" +
                         re.escape(lowering.kernel) + r"\w*)\s*\(")
    for m in pattern.finditer(text, at + len(lowering.prototype)):
        static = "static " if _STATIC_BEFORE.search(text[max(0, m.start() - 80):m.start()]) \
            else ""
        prototypes.append(f"{opening}{static}{_signature(text[m.start():])};{closing} ")
    if not prototypes:
        return text
    return text[:at] + "".join(prototypes) + text[at + len(lowering.prototype):]


@dataclass(frozen=True)
class Lowered:
    text: str
    # per copy: (first line in `text`, its number of lines, lowering)
    copies: tuple[tuple[int, int, Lowering], ...]

    def origin(self, line: int) -> tuple[str, int, Lowering] | None:
        """(file, line, lowering) of a line of a copy; None for the input's own lines."""
        for first, count, lowering in self.copies:
            if first <= line < first + count:
                return lowering.file, lowering.line + line - first, lowering
        return None


_SCALAR_WORDS = {"int", "float", "double", "unsigned", "signed", "long", "short", "char",
                 "bool", "_Bool", "size_t", "int8_t", "uint8_t", "int16_t", "uint16_t",
                 "int32_t", "uint32_t", "int64_t", "uint64_t", "uint", "half", "ptrdiff_t"}


def needs_lowering(program) -> bool:
    """Whether the C-subset front end left a kernel it could not read or place (a
    template, a header's kernel, C++ in the kernel), or a kernel takes a struct by
    value or calls a `__device__` function (only then is Clang asked), or a launch is
    written inside a macro."""
    return bool(_launched_in_macros(program)) or any(
        k.ast is None or k.span is None or any(
            not p.is_pointer and not set(p.type.split()) & _SCALAR_WORDS for p in k.parameters)
        or _calls_helpers(k.ast, program.device_functions) for k in program.kernels)


def _launched_in_macros(program) -> list:
    """Launches of the file's own kernels that the preprocessor's output shows but the
    text does not (written inside a function-like macro)."""
    return [l for l in program.launches if l.span is None and program.kernel(l.kernel)
            is not None and l.location.file == program.path]


def macro_launches(program) -> list[Lowering]:
    """Launches written inside macros, each invocation expanded once in place
    (frontend/macros.py), so that the launch is in the text to be rewritten."""
    from polycoal.frontend.macros import expanded_launch, function_macros
    launches = _launched_in_macros(program)
    if not launches:
        return []
    macros = function_macros(program.text)
    tokens = list(program.tokens) or tokenize(program.text)
    found: dict[str, list] = {}
    for launch in launches:
        found.setdefault(launch.kernel, []).append(expanded_launch(
            program.text, tokens, launch.kernel, launch.location.line, macros))
    out = []
    for name, expansions in found.items():
        if None in expansions:
            continue          # one of its launches stays hidden: none is worth expanding
        kernel = program.kernel(name)
        edits = tuple(sorted({(start, end, _keep_lines(program.text[start:end], new))
                              for start, end, new in expansions}))
        out.append(Lowering(name, name, kernel.location.file, kernel.location.line, edits))
    return out


def _calls_helpers(ast, helpers) -> bool:
    from pycparser import c_ast

    class Calls(c_ast.NodeVisitor):
        found = False

        def visit_FuncCall(self, node):
            if isinstance(node.name, c_ast.ID) and node.name.name in helpers:
                self.found = True
            self.generic_visit(node)
    visitor = Calls()
    visitor.visit(ast)
    return visitor.found


def plan(program, options: PreprocessorOptions) -> list[Lowering]:
    """The lowerings of the program's kernels (none without libclang; none of a kernel
    Clang did not read cleanly: an error inside it, or a use of what Clang found
    invalid)."""
    from polycoal.frontend import clang
    if not clang.available():
        return []
    try:
        unit = clang.read(program.path, options, program.text)
    except Exception:             # noqa: BLE001 - Clang is an improvement, never a failure
        return []
    main = os.path.abspath(program.path)
    tokens = list(program.tokens) or tokenize(program.text)
    taken = {t.text for t in tokens if t.kind == "id"}
    lowerings: list[Lowering] = []
    for kernel in unit.kernels:
        if not kernel.clean and not kernel.opaque:
            continue            # Clang's errors inside it, or in what it uses
        mine = program.kernel(kernel.name)
        in_main = os.path.abspath(kernel.place.file) == main
        if kernel.opaque and (mine is None or mine.ast is None):
            # statements the C subset cannot read: judged through a copy, never changed
            judged = _judged(program.text, kernel, unit, in_main, taken, main)
            if judged is not None:
                taken.add(judged.kernel)
                lowerings.append(judged)
            continue
        if not kernel.clean:
            continue
        if in_main and not kernel.is_template and not kernel.records and \
                (mine is None or mine.ast is None) and (
                    _qualified_calls(program.text, kernel, unit.helpers) or
                    _has_class_parameters(program.text, kernel)):
            # calls C cannot spell (`dUtils::id(x)`, `get<T>(x)`) that stay calls, or
            # parameters of classes C cannot spell: the kernel is read through a copy
            # that names them plainly, and only judged
            judged = _judged(program.text, kernel, unit, in_main, taken, main)
            if judged is not None:
                taken.add(judged.kernel)
                lowerings.append(judged)
            continue
        if in_main and not kernel.is_template and not kernel.records:
            inlined = any(c.helper in unit.helpers for c in kernel.calls)
            cpp = kernel.aliases or kernel.casts or kernel.words or \
                with_limits(written := program.text[kernel.place.start:kernel.place.end]) \
                != written
            if mine is not None and (mine.ast is None and cpp or inlined):
                lowering = _in_place(program.text, kernel, unit.helpers)
                if lowering.edits[0][2] != program.text[kernel.place.start:kernel.place.end]:
                    lowerings.append(lowering)
            continue
        launches = [l for l in unit.launches if l.kernel == kernel.qualified and
                    not l.dependent and os.path.abspath(l.file) == main and
                    _written(program.text, l, kernel.name) and
                    _plain_records(program.text, l, kernel) and
                    (not l.instance or _dispatchable(tokens, l, options.std))]
        if not launches and (kernel.is_template or not in_main and (
                mine is None or mine.ast is None)):
            judged = _judged(program.text, kernel, unit, in_main, taken, main)
            if judged is not None:
                taken.add(judged.kernel)
                lowerings.append(judged)
            continue
        if not launches or _referenced_elsewhere(tokens, kernel, launches, in_main):
            continue
        definition = program.text if in_main else _read(kernel.place.file)
        if definition is None:
            continue
        for arguments in dict.fromkeys(l.template_arguments for l in launches):
            name = _fresh(f"{kernel.name}__pc" + "".join(
                "_" + _identifier(a) for a in arguments), taken)
            taken.add(name)
            lowerings.append(_copy(program.text, definition, kernel, unit.helpers, arguments,
                                   name,
                                   [l for l in launches if l.template_arguments == arguments]))
    return [replace(l, file=_as_named(l.file, program.path)) for l in lowerings]


def _as_named(file: str, path: str) -> str:
    """A file Clang names by its absolute path, named as the input's path names its
    directory (as the preprocessor's line markers name it)."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.abspath(file) == os.path.abspath(path):
        return path
    return os.path.join(os.path.dirname(path), os.path.relpath(file, directory))


def apply(text: str, lowerings: list[Lowering]) -> Lowered:
    """The input text with the lowerings' edits and their copies appended."""
    lowered = apply_edits(text, [e for l in lowerings for e in l.edits] + _dispatches(
        text, [b for l in lowerings for b in l.branches]))
    copies = []
    for lowering in lowerings:
        if not lowering.copy:
            continue
        if not lowered.endswith("\n"):
            lowered += "\n"
        first = lowered.count("\n") + 1
        lowered += lowering.copy + "\n"
        copies.append((first, lowering.copy.count("\n") + 1, lowering))
    return Lowered(lowered, tuple(copies))


# a type's test in a condition of `if constexpr` that needs no header (std::is_same)
SAME_TYPE = ("template <class PcA, class PcB> struct pc_same { static constexpr bool value = "
             "false; }; template <class PcA> struct pc_same<PcA, PcA> { static constexpr "
             "bool value = true; }; ")


def _dispatches(text: str, branches: list[Branch]) -> list[tuple[int, int, str]]:
    """The edits that make each launch statement of a host template run, for each
    instantiation that has a copy, that copy, and the kernel as written for the others:
    `{ if constexpr (ROWS == 64) k__pc_64<<<...>>>(...); else k<ROWS><<<...>>>(...); }`
    (the statement as written last, so its lines stay where they were)."""
    edits = []
    joined: dict[tuple[int, int], list[Branch]] = {}
    for b in branches:
        joined.setdefault((b.start, b.end), []).append(b)
    for (start, end), group in sorted(joined.items()):
        chain = " else ".join(f"if constexpr ({b.condition}) {b.launch}" for b in group)
        edits.append((start, end, f"{{ {chain} else {text[start:end]} }}"))
    typed = [b.scope for b in branches if "pc_same<" in b.condition]
    if typed:
        edits.append((min(typed), min(typed), SAME_TYPE))
    return edits


def _dispatchable(tokens: list[Token], launch, std: str) -> bool:
    """A launch in a host template can be dispatched on the template's arguments: the
    language has `if constexpr` (C++17), and the launch is a statement of its own (after
    `;`, `{`, `}`, `else`, or the condition of if/for/while; `;` after it)."""
    if re.fullmatch(r"(c|gnu)\+\+(98|03|0x|11|1y|14)", std) or launch.expression is None:
        return False
    start, end = launch.expression
    k = next((i for i, t in enumerate(tokens) if t.start >= start), None)
    j = next((i for i, t in enumerate(tokens) if t.start >= end), None)
    if k is None or j is None or tokens[j].text != ";":
        return False
    before = tokens[k - 1] if k else None
    if before is None or before.text in (";", "{", "}", "else"):
        return True
    if before.text != ")":
        return False
    opening = next((i for i in range(k - 2, -1, -1) if tokens[i].text == "(" and
                    matching(tokens, i) == k - 1), None)
    return opening is not None and opening > 0 and \
        tokens[opening - 1].text in ("if", "for", "while")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            return f.read()
    except OSError:
        return None


def _written(text: str, launch, name: str) -> bool:
    """The launch's callee is in the text as written (not from a macro): its tokens end
    with the kernel's name or its template arguments, and `<<<` follows."""
    if launch.callee is None:
        return False
    start, end = launch.callee
    words = [t.text for t in tokenize(text[start:end])]
    return name in words and text[end:end + 8].lstrip().startswith("<<")


def _referenced_elsewhere(tokens: list[Token], kernel, launches, in_main: bool) -> bool:
    """The input file names the kernel other than at the launches to redirect, in its
    definition or in a forward declaration: taking its address, setting its attributes
    (cudaFuncSetAttribute) or launching it through a macro would still see the original
    kernel, so no copy of it is made."""
    from polycoal.frontend.host import other_mentions
    spans = [l.callee for l in launches]
    if in_main:
        spans.append((kernel.place.start, kernel.place.end))
    return bool(other_mentions(tokens, {kernel.name: spans}))


def _plain_records(text: str, launch, kernel) -> bool:
    """The launch passes each struct the copy takes field by field as a variable's name
    (`k<<<g, b>>>(bufs, n)` becomes `k__pc<<<g, b>>>(bufs.in, bufs.out, bufs.n, n)`: an
    expression would be evaluated once per field)."""
    for _, position, _, _, _ in kernel.records:
        if position >= len(launch.arguments):
            return False
        start, end = launch.arguments[position]
        if not re.fullmatch(r"\s*[A-Za-z_]\w*\s*", text[start:end]):
            return False
    return True


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate


def _identifier(argument: str) -> str:
    """A template argument as part of an identifier: `unsigned int` -> unsigned_int,
    `-1` -> m1, `Vec<3>` -> Vec_3."""
    text = argument.replace("-", "m").replace("*", "p").replace("&", "r")
    return re.sub(r"_+", "_", re.sub(r"\W", "_", text)).strip("_") or "x"


def _lowered_definition(text: str, offset: int, kernel, helpers: dict,
                        fields: bool = False, opaque: bool = False,
                        instance: tuple[tuple[int, int, str], ...] = ()) -> str:
    """The definition `text` (which starts at `offset` of its file) lowered: its aliases'
    names, qualifiers included, replaced by the types they stand for; its calls of small
    `__device__` helpers inlined (`accumulate(acc, A[i])` -> `(acc) += (A[i]) * 0.5f`);
    its C++ casts written as C casts (`T(0)`, `static_cast<T>(e)` -> `((T)(e))`, and
    reinterpret_cast, const_cast); its C++ words in C (`auto` as the deduced type,
    `constexpr` as const, `nullptr` as 0, `std::sqrt` as sqrt: ClangKernel.words);
    with `fields`, its struct parameters declared field by field (`Buffers b` ->
    `float *b__in, int b__n`) and their uses (`b.in`) named so. Every replacement keeps
    the line ends of what it replaces, so the definition keeps its lines. `instance`:
    the declarations' types of the instantiation the copy is (ClangKernel.
    instance_words), over the words of the template at those places."""
    edits: list[tuple[int, int, object]] = []
    for start, end, spelling in kernel.aliases:
        s, e = start - offset, end - offset
        if 0 <= s <= e <= len(text):
            edits.append((qualifier_start(text, s), e, spelling))
    if fields:
        records = [(s - offset, e - offset) for _, _, s, e, _ in kernel.records]
        edits = [x for x in edits if not any(a <= x[0] < b for a, b in records)]
        for name, _, start, end, members in kernel.records:
            edits.append((start - offset, end - offset, ", ".join(
                _declaration(t, f"{name}__{f}") for f, t in members)))
        for start, end, name, member in kernel.members:
            edits.append((start - offset, end - offset, f"{name}__{member}"))
    words = kernel.words + ((kernel.opaque or ()) if opaque else ())
    if instance:
        words = tuple(w for w in words if not any(a < w[1] and w[0] < b
                                                  for a, b, _ in instance)) + instance
    for start, end, spelling in words:
        if 0 <= start - offset <= end - offset <= len(text):
            edits.append((start - offset, end - offset, spelling))
    for start, type_start, type_end, inner_start, inner_end, end in kernel.casts:
        if 0 <= start - offset and end - offset <= len(text):     # as C casts: ((T)(e))
            edits.append((start - offset, inner_start - offset,
                          ("cast", type_start - offset, type_end - offset)))
            edits.append((inner_end - offset, end - offset, "))"))
    for call in kernel.calls:
        helper = helpers.get(call.helper)
        if not (0 <= call.start - offset and call.end - offset <= len(text)):
            continue
        if helper is not None:
            edits.append((call.start - offset, call.end - offset, (helper, call, offset)))
        elif opaque:
            # a copy that only judges: a call that stays is a call of unknown effects,
            # named so that C reads it (`dUtils::id<T>(x)` as `id(x)`)
            edits += _bare_callee(text, call.start - offset)
    return _render(text, 0, len(text), edits, bare=opaque)


_DECLARATOR = {"*", "&", "&&", "const", "volatile", "__restrict__", "__restrict", "restrict"}


def _stated_types(tokens: list[Token], first: int) -> list[tuple[int, int, str]]:
    """In a copy that only judges a template: the types no instantiation of the unit
    decides, read at the stated type as its type parameters are (GENERIC_TYPE): a
    dependent member type (`typename Conv<T>::Type`), a declaration's `auto` whose
    initializer's type depends on them (those Clang deduced are already lowered); and
    explicit template arguments of calls dropped."""
    out = []
    k = first
    while k < len(tokens):
        t = tokens[k]
        if t.text == "typename" and k + 1 < len(tokens) and tokens[k + 1].kind == "id":
            j = k + 1
            while True:
                if j + 1 < len(tokens) and tokens[j + 1].text == "<":
                    j = _angle_close(tokens, j + 1)
                if j + 2 < len(tokens) and tokens[j + 1].text == "::" and \
                        tokens[j + 2].kind == "id":
                    j += 2
                    continue
                break
            out.append((t.start, tokens[j].end, GENERIC_TYPE))
            k = j + 1
            continue
        if t.text == "auto" and k + 1 < len(tokens) and \
                (tokens[k + 1].kind == "id" or tokens[k + 1].text == "*"):
            out.append((t.start, t.end, GENERIC_TYPE))
        if t.kind == "id" and k + 1 < len(tokens) and tokens[k + 1].text == "<":
            # a call with explicit template arguments (`floatToType2<T2>(0.0f)`): a
            # call of unknown effects, named plainly
            close = _angle_close(tokens, k + 1)
            inside = tokens[k + 2:close]
            if close + 1 < len(tokens) and tokens[close + 1].text == "(" and inside and \
                    all(x.kind in ("id", "num") or x.text in (",", "*", "::", "<", ">")
                        for x in inside):
                out.append((tokens[k + 1].start, tokens[close].end, ""))
                k = close + 1
                continue
        k += 1
    return out


def _class_parameters(tokens: list[Token], opening: int) -> list[tuple[int, int, str]]:
    """Edits of the parameter list opening at `tokens[opening]`: each parameter whose
    type is qualified or a template's (`ns::T<A> *p`) declared `struct __pc_class *p`
    (its pointers kept, its references dropped)."""
    if opening >= len(tokens) or tokens[opening].text != "(":
        return []
    close = matching(tokens, opening)
    out = []
    for run in split_top_level(tokens[opening + 1:close], angles=True):
        words = [x.text for x in run]
        if ("::" in words or "<" in words) and len(run) > 1 and run[-1].kind == "id":
            j = len(run) - 1
            while j > 0 and run[j - 1].text in _DECLARATOR:
                j -= 1
            stars = " ".join(x.text for x in run[j:-1] if x.text not in ("&", "&&"))
            out.append((run[0].start, run[-1].start,
                        f"struct __pc_class {stars} ".replace("  ", " ")))
    return out


def _has_class_parameters(text: str, kernel) -> bool:
    tokens = tokenize(text[kernel.place.start:kernel.place.end])
    named = next((k for k, t in enumerate(tokens) if t.text == kernel.name and
                  k + 1 < len(tokens) and tokens[k + 1].text == "("), None)
    return named is not None and bool(_class_parameters(tokens, named + 1))


def _qualified_calls(text: str, kernel, helpers: dict) -> bool:
    """Whether the kernel calls a function that is not inlined (not a small helper)
    with a qualified name or explicit template arguments."""
    lowered = [(a, b) for a, b, _ in kernel.words]     # `std::fabs`: the words' lowering
    return any(_bare_callee(text, call.start) and (
        call.helper not in helpers or     # or a helper's call on an argument with effects
        not all(_pure(text[a:b]) for a, b, _ in call.arguments)) and
        not any(a <= call.start < b for a, b in lowered) for call in kernel.calls)


def _bare_callee(text: str, start: int) -> list[tuple[int, int, str]]:
    """The edit that names the call at `start` by its function's name alone, without
    qualifiers or template arguments ([] when it is written so already, or otherwise
    than `name(`)."""
    head = _head_end(text[start:start + 512])
    if head is None:
        return []
    callee = text[start:start + head]
    bare = re.sub(r"<.*>\s*$", "", callee.strip(), flags=re.S).split("::")[-1].strip()
    return [(start, start + head, bare)] if bare != callee.strip() and bare else []


def _render(text: str, lo: int, hi: int, edits: list, bare: bool = False) -> str:
    """text[lo:hi] with the edits inside it: a string replaces its range; a helper's call
    is replaced by the helper's body on its arguments, each rendered with the edits
    inside it (a call in an argument is inlined too), or kept when it cannot be (with
    `bare`, named by the function's name alone: _bare_callee)."""
    inside = sorted((e for e in edits if lo <= e[0] and e[1] <= hi),
                    key=lambda e: (e[0], -e[1]))
    out, pos = [], lo
    for start, end, payload in inside:
        if start < pos:
            continue                      # inside an edit already applied
        out.append(text[pos:start])
        nested = [e for e in edits
                  if start <= e[0] and e[1] <= end and (e[0], e[1]) != (start, end)]
        if isinstance(payload, str):
            new = payload
        elif payload[0] == "cast":
            new = f"(({_render(text, payload[1], payload[2], nested, bare)})("
        else:
            helper, call, offset = payload
            arguments = [(_render(text, a - offset, b - offset, nested, bare), t)
                         for a, b, t in call.arguments]
            head = _head_end(text[start:end])
            explicit = None if head is None else \
                _explicit_arguments(_render(text, start, start + head, nested, bare))
            new = None if explicit is None else \
                _inlined(helper, arguments, call.statement, explicit)
            if new is None:
                new = _render(text, start, end, nested + (_bare_callee(text, start)
                                                          if bare else []), bare)
        out.append(_keep_lines(text[start:end], new))
        pos = end
    out.append(text[pos:hi])
    return "".join(out)


def _keep_lines(old: str, new: str) -> str:
    missing = line_ends(old) - line_ends(new)
    return new + "\n" * missing if missing > 0 else new


def _pure(text: str) -> bool:
    tokens = tokenize(text)
    for k, t in enumerate(tokens):
        if t.text in ASSIGNMENTS:
            return False
        if t.text == "(" and k and tokens[k - 1].kind == "id" and \
                tokens[k - 1].text not in PURE_FUNCTIONS and tokens[k - 1].text not in _TYPE_WORDS:
            return False
    return True


_TYPE_WORDS = {"float", "double", "int", "unsigned", "long", "short", "char", "size_t",
               "bool", "sizeof"}


def _head_end(call: str) -> int | None:
    """Where the argument list of the call `call` opens (the offset of its `(`), after
    the callee's name and its template arguments (`ns::clamp<int>(...)`); None when
    the call is not written so."""
    tokens = tokenize(call)
    k = 0
    while k < len(tokens) and (tokens[k].kind == "id" or tokens[k].text == "::"):
        k += 1
    if k < len(tokens) and tokens[k].text == "<":
        k = _angle_close(tokens, k) + 1
    return tokens[k].start if 0 < k < len(tokens) and tokens[k].text == "(" else None


def _explicit_arguments(head: str) -> tuple[str, ...]:
    """The template arguments written in a callee (`clamp<int>` -> ('int',)); ()
    when there are none."""
    tokens = tokenize(head)
    opening = next((k for k, t in enumerate(tokens) if t.text == "<"), None)
    if opening is None:
        return ()
    close = _angle_close(tokens, opening)
    parts, depth, start = [], 0, tokens[opening].end
    for t in tokens[opening + 1:close]:
        if t.text in ("(", "[", "{", "<"):
            depth += 1
        elif t.text in (")", "]", "}", ">"):
            depth -= 1
        elif t.text == "," and depth == 0:
            parts.append(head[start:t.start].strip())
            start = t.end
    parts.append(head[start:tokens[close].start].strip())
    return tuple(p for p in parts if p)


def _inlined(helper, arguments: list[tuple[str, str]], statement: bool,
             explicit: tuple[str, ...] = ()) -> str | None:
    """The text that replaces a call of `helper` on `arguments` (their texts and types)
    with the template arguments `explicit` written at the call, or None when the call
    must stay: an argument with side effects (it would be evaluated once per use), a
    value parameter the helper assigns, a void helper of several statements called
    where a block is not a statement."""
    if len(arguments) != len(helper.parameters):
        return None
    # an argument whose type Clang cannot name here (an expression of a template's
    # parameter type): no type to convert it to, nor to deduce from it
    if any("dependent type" in given for _, given in arguments):
        return None
    if helper.template_parameters or explicit:
        helper = _deduced(helper, arguments, explicit)
        if helper is None:
            return None
    values = {}
    bodies = list(helper.statements) + ([helper.result] if helper.result is not None else [])
    for (name, type_, reference), (text, given) in zip(helper.parameters, arguments):
        if not _pure(text):
            return None
        if reference and _unqualified(type_) == _unqualified(given):
            values[name] = f"({text})"
            continue
        if any(_assigns(body, name) for body in bodies):
            return None
        simple = re.fullmatch(r"\s*[A-Za-z_]\w*\s*", text) is not None
        if _unqualified(type_) == _unqualified(given) or (type_.endswith("*") and simple):
            values[name] = text.strip() if simple else f"({text})"
        else:
            values[name] = f"(({type_})({text}))"

    def substituted(body: str) -> str:
        tokens = tokenize(body)
        edits = [(t.start, t.end, values[t.text]) for k, t in enumerate(tokens)
                 if t.kind == "id" and t.text in values and
                 not (k and tokens[k - 1].text in (".", "->"))]
        return apply_edits(body, edits)

    if helper.result is not None:       # converted to the type the helper returns
        return f"(({helper.returns})({substituted(helper.result)}))"
    statements = [substituted(b) for b in helper.statements]
    if len(statements) == 1:
        return statements[0]
    if not statements:
        return "(void)0"
    if not statement:
        return None
    return "{ " + " ".join(f"{x};" for x in statements) + " }"


def _deduced(helper, arguments: list[tuple[str, str]], explicit: tuple[str, ...] = ()):
    """A function template helper with its type parameters replaced by the types the
    call gives them: first those written at the call (`halve<float>(i)`: the arguments
    convert to them, as C++ converts them), then for the others the types its
    arguments deduce: a parameter declared `T`, `const T` or `T &` takes its argument's
    type (const dropped). None when a type parameter is given neither way, two
    arguments disagree, or more types are written than it has parameters (the call
    then stays as it is)."""
    if len(explicit) > len(helper.template_parameters):
        return None
    deduced: dict[str, str] = dict(zip(helper.template_parameters, explicit))
    for (_, type_, _), (_, given) in zip(helper.parameters, arguments):
        written = _unqualified(type_)
        if written in helper.template_parameters[len(explicit):]:
            if deduced.setdefault(written, _unqualified(given)) != _unqualified(given):
                return None
    if set(deduced) != set(helper.template_parameters):
        return None

    def typed(text: str) -> str:
        return apply_edits(text, [(t.start, t.end, deduced[t.text]) for t in tokenize(text)
                               if t.kind == "id" and t.text in deduced])
    return replace(helper, template_parameters=(),
                   parameters=tuple((n, typed(t), r) for n, t, r in helper.parameters),
                   statements=tuple(typed(x) for x in helper.statements),
                   result=None if helper.result is None else typed(helper.result),
                   returns=typed(helper.returns))


def _assigns(body: str, name: str) -> bool:
    tokens = tokenize(body)
    for k, t in enumerate(tokens):
        if t.text != name:
            continue
        after = tokens[k + 1].text if k + 1 < len(tokens) else ""
        before = tokens[k - 1].text if k else ""
        if after in ASSIGNMENTS or before in ("++", "--", "&"):
            return True
    return False


def _unqualified(type_: str) -> str:
    return " ".join(w for w in type_.split() if w not in ("const", "volatile"))


def _declaration(type_: str, name: str) -> str:
    """`float *` and `b__in` as the declaration `float *b__in`."""
    return f"{type_}{'' if type_.endswith('*') else ' '}{name}"


def _in_place(text: str, kernel, helpers: dict) -> Lowering:
    start, end = kernel.place.start, kernel.place.end
    lowered = with_limits(_lowered_definition(text[start:end], start, kernel, helpers))
    return Lowering(kernel.name, kernel.qualified, kernel.place.file, kernel.place.line,
                    ((start, end, lowered),), inlined=_helpers_of(kernel, helpers))


def _helpers_of(kernel, helpers: dict) -> tuple[str, ...]:
    return tuple(sorted({helpers[c.helper].name for c in kernel.calls if c.helper in helpers}))


def _blank(text: str) -> str:
    """Only the line ends of `text` (what is removed leaves its lines, empty)."""
    return "".join(c for c in text if c in "\r\n")


def _copy(text: str, file_text: str, kernel, helpers: dict, arguments: tuple[str, ...],
          name: str, launches, opaque: bool = False) -> Lowering:
    """A plain copy of `kernel` (an instantiation of it when `arguments`) named `name`,
    and the edits of the input `text` that declare it and redirect `launches` to it;
    `file_text`: the text of the file that defines the kernel."""
    start, end = kernel.place.start, kernel.place.end
    definition = _lowered_definition(file_text[start:end], start, kernel, helpers,
                                     fields=True, opaque=opaque,
                                     instance=dict(kernel.instance_words).get(arguments, ()))
    tokens = tokenize(definition)
    edits = []
    first = 0
    if tokens and tokens[0].text == "template":
        close = _angle_close(tokens, 1)
        edits.append((tokens[0].start, tokens[close].end, _blank(
            definition[tokens[0].start:tokens[close].end])))
        first = close + 1
    values = dict(zip(kernel.template_parameters, arguments))
    named = None
    stated = _stated_types(tokens, first) if opaque else []
    edits += stated
    for k, t in enumerate(tokens[first:], first):
        if t.kind != "id" or any(a <= t.start < b for a, b, _ in stated):
            continue
        if t.text in values:
            value = values[t.text]
            edits.append((t.start, t.end, f"({value})" if value.startswith("-") else value))
        elif t.text == kernel.name and named is None and k + 1 < len(tokens) and \
                tokens[k + 1].text == "(":
            named = k
            edits.append((t.start, t.end, name))
    if opaque and named is not None:
        # a copy that only judges: a parameter of a class C cannot spell (`thrust::
        # complex<float> *out`, `Accessor<float, 2> a`) as a struct of no known fields
        # (the statements that use it are opaque)
        classes = _class_parameters(tokens, named + 1)
        edits = [e for e in edits if not any(a <= e[0] < b for a, b, _ in classes)]
        edits += classes
    # a copy is launched from this unit alone: internal linkage, so that two units that
    # include one header (or instantiate one template) each have theirs and still link
    if named is not None and tokens[first:named] and not any(
            t.text in ("static", "extern") or t.kind == "str" for t in tokens[first:named]):
        edits.append((tokens[first].start, tokens[first].start, "static "))
    body = with_limits(apply_edits(definition, edits))
    namespaces = kernel.qualified.split("::")[:-1]
    opening = "".join(f"namespace {n} {{ " for n in namespaces)
    closing = " }" * len(namespaces)
    signature = _signature(body)         # the template header is gone from `body`
    prototype = f"{opening}{signature};{closing} "
    scope = min(l.scope_start for l in launches if l.scope_start is not None) \
        if any(l.scope_start is not None for l in launches) else None
    qualified = "::" + "::".join(namespaces + [name]) if namespaces else name
    edits, branches = [], []
    for l in launches:
        redirect = [(l.callee[0], l.callee[1], qualified)]
        for _, position, _, _, members in kernel.records:
            a, b = l.arguments[position]
            variable = text[a:b].strip()
            redirect.append((a, b, ", ".join(f"{variable}.{f}" for f, _ in members)))
        if l.instance:
            branches.append(_branch(text, l, redirect, scope))
        else:
            edits += redirect
    if scope is not None:
        edits.append((scope, scope, prototype))
    shown = kernel.qualified + (f"<{', '.join(arguments)}>" if arguments else "")
    stripped = body.lstrip("\r\n")         # the template header's lines
    line = kernel.place.line + line_ends(body[:len(body) - len(stripped)])
    return Lowering(name, shown, kernel.place.file, line, tuple(edits),
                    opening + stripped + closing, prototype, tuple(namespaces),
                    _helpers_of(kernel, helpers), tuple(branches))


def _judged(text: str, kernel, unit, in_main: bool, taken: set[str],
            text_path: str = "") -> Lowering | None:
    """A copy of a kernel no launch of this file can run (its launches are in a header's
    host code, in another unit, in a host template never called here, or nowhere), read
    only to judge it: a template at the arguments of an instantiation Clang saw in the
    unit (a launch in a header), else at stated arguments (type parameters float,
    integer parameters 128; None where a parameter is of another kind). Never launched,
    so never in an output."""
    instances = [l for l in unit.launches
                 if l.kernel == kernel.qualified and not l.dependent and
                 len(l.template_arguments) == len(kernel.template_parameters)]
    opaque = "statements read only as opaque: never transformed" if kernel.opaque else ""
    if instances:
        # a class argument C cannot spell (`kiss::Kiss<unsigned long>`) is read at the
        # stated type: what the copy judges is its global memory, not such a value
        # (the statements using its members are opaque)
        arguments = tuple(GENERIC_TYPE if kind == "type" and re.search(r"::|<", a) else a
                          for a, kind in zip(instances[0].template_arguments,
                                             kernel.template_kinds))
        outside = all(os.path.abspath(l.file) != os.path.abspath(text_path)
                      for l in instances) if text_path else True
        why = opaque or ("as a launch outside this file instantiates it: no launch of "
                         "this file can run a copy" if outside else
                         "its launches here cannot run a copy")
        if arguments != instances[0].template_arguments:
            why += "; class arguments read as " + GENERIC_TYPE
    elif len(unit.class_arguments.get(kernel.qualified, ())) == \
            len(kernel.template_parameters) and kernel.template_parameters:
        arguments = tuple(GENERIC_TYPE if kind == "type" and re.search(r"::|<", a) else a
                          for a, kind in zip(unit.class_arguments[kernel.qualified],
                                             kernel.template_kinds))
        why = opaque or ("at the arguments its launch in a class template's member takes "
                         "at the class's instantiation here (that member is not called)")
    elif any(k not in ("type", "int") for k in kernel.template_kinds) or \
            len(kernel.template_kinds) != len(kernel.template_parameters):
        return None
    else:
        arguments = tuple(GENERIC_TYPE if k == "type" else GENERIC_VALUE
                          for k in kernel.template_kinds)
        why = "; ".join(filter(None, [
            "stated arguments: no launch of this file instantiates it"
            if kernel.is_template else "", opaque])) or \
            "no launch of this file can run a copy"
    definition = text if in_main else _read(kernel.place.file)
    if definition is None:
        return None
    name = _fresh(kernel.name + JUDGED, taken)
    return replace(_copy(text, definition, kernel, unit.helpers, arguments, name, [],
                         opaque=True), generic=True, why=why)


def _branch(text: str, launch, redirect: list[tuple[int, int, str]], scope: int) -> Branch:
    """The launch statement of a host template, as the branch of one instantiation:
    redirected to the copy, the template's integral parameters replaced by their values
    (the host then knows the geometry they decide), on one line."""
    start, end = launch.expression
    end = text.index(";", end) + 1
    edits = [(a - start, b - start, new) for a, b, new in redirect]
    statement = text[start:end]
    values = {p: a for p, a, is_type in launch.instance if not is_type}
    for t in tokenize(statement):
        if t.kind == "id" and t.text in values and not any(a <= t.start < b for a, b, _ in edits):
            edits.append((t.start, t.end, f"({values[t.text]})"))
    conditions = [f"pc_same<{p}, {a}>::value" if is_type else f"{p} == {a}"
                  for p, a, is_type in launch.instance]
    return Branch(start, end, " && ".join(f"({c})" for c in conditions),
                  " ".join(t.text for t in tokenize(apply_edits(statement, edits))), scope)


def _angle_close(tokens: list[Token], k: int) -> int:
    """Index of the `>` closing the `<` at tokens[k] (a template's parameter list)."""
    depth, j = 0, k
    while j < len(tokens):
        text = tokens[j].text
        if text in ("(", "[", "{"):
            j = matching(tokens, j)
        elif text == "<":
            depth += 1
        elif text in (">", ">>"):
            depth -= len(text)
            if depth <= 0:
                return j
        j += 1
    return len(tokens) - 1


def _signature(definition: str) -> str:
    """The declaration part of a function definition, on one line (the tokens up to its
    body's `{`)."""
    tokens = tokenize(definition)
    out = []
    k = 0
    while k < len(tokens) and tokens[k].text != "{":
        if tokens[k].text == "(":
            close = matching(tokens, k)
            out.extend(t.text for t in tokens[k:close + 1])
            k = close + 1
            continue
        out.append(tokens[k].text)
        k += 1
    return " ".join(out)
