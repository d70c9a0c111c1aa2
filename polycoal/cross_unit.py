"""Kernels defined in one translation unit and launched from others (project mode).

A kernel `k` defined (not `static`) in unit A and launched in unit B through a
declaration is transformed where it is defined and its launches rewritten where they
are. The decision is made on the units read as one program, for the analysis only: A's
text, then each launching unit's text (its quoted includes named from A's directory)
preprocessed with their common flags, and `transform_program` run on it for `k` alone
(`--kernel k`: no other kernel, no layout, no reorganisation). So the decision sees
every launch's geometry and arguments (alias evidence included) as single-file mode
sees the launches of its own kernels. Its edits (k's definition, each launch) are
split back into the units: A gets the transformed kernel (and the copies it adds, not
`static` where another unit launches them), each launching unit its rewritten launches
and, beside its own declaration of k, a declaration of each kernel they launch that it
does not declare already (a copy, or k with extra arguments). These edits are made on
the text each unit's own transformation wrote (which kept k and its launches as
written), and each unit's result is compiled (the compile check, where one is
available) before it is taken.

Where that cannot be done soundly the kernel is kept as written, with the reason
(`refusal`): a launch in a header (never written) or in a unit that cannot be read, a
mention that is not a launch (`cudaLaunchKernel(k, ...)`), a launching unit compiled
with other preprocessor flags than the defining one or in several variants, a
declaration that is `static` or has other parameters, several definitions the launches
may run, launches that read differently beside the defining unit's text, edits beyond
the kernel and its launches (a kernel read through its lowering), rewritten launches
that need more of the defining unit than its kernels, and outputs that would not
compile.
"""

from __future__ import annotations

import bisect
import difflib
import os
import re
from dataclasses import dataclass, field, replace

from polycoal.diagnostics import Diagnostic, InputError, Location

# words a rewritten launch may use beyond the launching unit's own names (templates/
# launch.cu.j2: dim3, casts, the condition's arithmetic)
_LAUNCH_WORDS = frozenset({
    "dim3", "unsigned", "long", "int", "const", "auto", "void", "if", "else", "size_t",
    "char", "float", "double", "short", "signed", "bool", "sizeof", "x", "y", "z",
    "static_cast", "reinterpret_cast", "uintptr_t", "true", "false"})
_LAUNCH_NAME = re.compile(r"\b([A-Za-z_]\w*)\s*<<<")
_TYPE_WORDS = frozenset({"int", "float", "double", "char", "short", "long", "unsigned",
                         "signed", "bool", "void", "const", "volatile", "struct", "enum",
                         "class", "union", "typename"})
_RESTRICT = frozenset({"__restrict__", "__restrict", "restrict"})


@dataclass(frozen=True)
class Crossing:
    """A kernel to transform across units: the task defining it, those launching it."""

    kernel: str
    definer: int
    launchers: tuple[int, ...]


@dataclass
class Done:
    """What the cross-unit pass made of the units: per task, its edits (in the original
    text's offsets), the decisions and notes of the kernels it took over, refusals."""

    edits: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    records: dict[int, dict[str, object]] = field(default_factory=dict)    # KernelRecord
    notes: dict[int, list[Diagnostic]] = field(default_factory=dict)
    handled: dict[int, set[str]] = field(default_factory=dict)
    refusals: dict[int, dict[str, str]] = field(default_factory=dict)


# --------------------------------------------------------------------------- planning

def _compatible(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two tasks may be in one program: a common CMake target, or a target not
    known (then any)."""
    if not a or not b or "" in a or "" in b:
        return True
    return bool(a & b)


def _short(path: str, root: str) -> str:
    relative = os.path.relpath(path, root) if root else path
    return path if relative.startswith("..") else relative


def plan(units, targets, results, uses, texts, root: str = ""
         ) -> tuple[list[Crossing], dict[int, dict[str, str]]]:
    """The crossings to transform and, per defining task, the kernels that cannot be
    (with the reason). `units[t]`, `targets[t]` (frozenset of CMake targets),
    `results[t]` (UnitResult), `texts[t]` ((path, text) or None) per task; `uses`:
    project.cross_unit_uses."""
    crossings: list[Crossing] = []
    refusals: dict[int, dict[str, str]] = {}
    for kernel in sorted(uses):
        definers = [t for t, r in enumerate(results) if kernel in r.external]
        for a in definers:
            problems, launchers = [], []
            source_a = units[a].source
            for t, r in enumerate(results):
                if t == a or kernel in r.defined or not _compatible(targets[t], targets[a]):
                    continue
                source = units[t].source
                launched = [l for l in r.launched if l.kernel == kernel]
                seen = {(l.file, l.line) for l in launched}
                named = [l for l in uses[kernel] if not l.launch and l.file == source
                         and (l.file, l.line) not in seen]
                if not launched and not named:
                    continue
                where = _short(source, root)
                if r.status >= 2:
                    problems.append(f"{where} cannot be read ({r.error.split(':')[-1].strip()})"
                                    if r.error else f"{where} cannot be read")
                    continue
                for l in launched:
                    if os.path.normpath(l.file) != source:
                        problems.append(f"launched in the header {_short(l.file, root)}:"
                                        f"{l.line}, which polycoal never writes")
                for l in named:
                    problems.append(f"named at {_short(l.file, root)}:{l.line} other than "
                                    "in a launch, where a new geometry cannot be applied")
                others = [d for d in definers if d != a and units[d].source != source_a
                          and _compatible(targets[d], targets[t])]
                if others:
                    problems.append(f"{where} may run the definition of "
                                    f"{_short(units[others[0]].source, root)} as well")
                if units[t].preprocessor != units[a].preprocessor:
                    problems.append(f"{where} is compiled with other preprocessor flags "
                                    f"than {_short(source_a, root)}")
                problems += declaration_problems(kernel, texts[a], texts[t], root)
                launchers.append(t)
            if not launchers and not problems:
                continue
            sources = [units[t].source for t in launchers]
            twice = sorted({s for s in sources if sources.count(s) > 1})
            if twice:
                problems.append(f"{_short(twice[0], root)} launches it in several variants "
                                "(entries with different flags) beside one definition")
            if problems:
                refusals.setdefault(a, {})[kernel] = "; ".join(dict.fromkeys(problems))
            else:
                crossings.append(Crossing(kernel, a, tuple(launchers)))
    return crossings, refusals


def _parameters(tokens, open_paren: int) -> list[str]:
    """The parameter types of a function's parameter list (names, `__restrict__` and
    top-level `const` left out), normalised."""
    from polycoal.frontend.lexer import matching
    close = matching(tokens, open_paren)
    params, current, depth = [], [], 0
    for t in tokens[open_paren + 1:close]:
        if t.text in ("(", "[", "<", "{"):
            depth += 1
        elif t.text in (")", "]", ">", "}"):
            depth -= 1
        if t.text == "," and depth == 0:
            params.append(current)
            current = []
        else:
            current.append(t)
    params.append(current)
    out = []
    for p in params:
        words = [t for t in p if t.text not in _RESTRICT]
        if any(t.text == "=" for t in words):                  # a default argument
            words = words[:next(k for k, t in enumerate(words) if t.text == "=")]
        if len(words) >= 2 and words[-1].kind == "id" and words[-1].text not in _TYPE_WORDS \
                and words[-2].text != "::":
            words = words[:-1]                                  # the parameter's name
        texts = [t.text for t in words]
        if not any(x in ("*", "&", "&&") for x in texts):
            texts = [x for x in texts if x != "const"]
        out.append(" ".join(texts))
    return [] if out in ([""], ["void"]) else out


def _global_declarations(text: str, name: str):
    """(line, is a definition, is static, parameter types, end offset of the declaration)
    of each `__global__` function `name` declared or defined in `text`."""
    from polycoal.frontend.kernel_heads import global_heads
    from polycoal.frontend.lexer import tokenize
    tokens = tokenize(text)
    return [(tokens[k].line, tokens[after].text == "{",
             any(t.text == "static" for t in tokens[first:k]),
             _parameters(tokens, open_paren), tokens[after].end)
            for first, k, open_paren, after in global_heads(tokens, name)]


def declaration_problems(kernel: str, defining, launching, root: str = "") -> list[str]:
    """Why the launching unit's own declarations of `kernel` are not of the defining
    unit's definition (`defining`, `launching`: (path, text) or None)."""
    if defining is None or launching is None:
        return []
    definition = [d for d in _global_declarations(defining[1], kernel) if d[1]]
    if not definition:
        return []
    expected = definition[0][3]
    problems = []
    for line, is_definition, static, params, _ in _global_declarations(launching[1], kernel):
        where = f"{_short(launching[0], root)}:{line}"
        if static:
            problems.append(f"declared static at {where}: a kernel of that unit, not the "
                            f"one {_short(defining[0], root)} defines")
        elif not is_definition and params != expected:
            problems.append(f"declared at {where} with other parameters "
                            f"({', '.join(params) or 'void'}) than its definition "
                            f"({', '.join(expected) or 'void'})")
    return problems


# --------------------------------------------------------------------------- running

def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _line_of(starts: list[int], offset: int) -> int:
    """0-based line of an offset."""
    return bisect.bisect_right(starts, offset) - 1


class _Mapper:
    """Offsets of `original` in `changed` (a text made from it by edits elsewhere), for
    spans lying in lines the edits left alone."""

    def __init__(self, original: str, changed: str | None):
        self.same = changed is None or changed == original
        if self.same:
            return
        self.starts, self.new_starts = _line_starts(original), _line_starts(changed)
        a, b = original.splitlines(keepends=True), changed.splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        self.blocks = [(i1, i2, j1) for tag, i1, i2, j1, _ in matcher.get_opcodes()
                       if tag == "equal"]

    def __call__(self, start: int, end: int) -> tuple[int, int] | None:
        if self.same:
            return start, end
        first = _line_of(self.starts, start)
        last = _line_of(self.starts, max(start, end - 1))
        for i1, i2, j1 in self.blocks:
            if i1 <= first and last < i2:
                new = self.new_starts[j1 + first - i1] + start - self.starts[first]
                return new, new + end - start
        return None


def _ids(text: str) -> set[str]:
    from polycoal.frontend.lexer import tokenize
    return {t.text for t in tokenize(text) if t.kind == "id"}


def _definition_head(text: str, name: str) -> tuple[str, list[tuple[int, int]]] | None:
    """(the head `__global__ void name(params)` of the definition of `name` in `text`,
    the spans of its `static` words), None when `text` does not define it."""
    from polycoal.frontend.kernel_heads import global_heads
    from polycoal.frontend.lexer import matching, tokenize
    tokens = tokenize(text)
    for first, k, open_paren, after in global_heads(tokens, name):
        if tokens[after].text != "{":
            continue
        close = matching(tokens, open_paren)
        statics = [(t.start, t.end) for t in tokens[first:k] if t.text == "static"]
        head = text[tokens[first].start:tokens[close].end]
        for s, e in reversed(statics):
            head = head[:s - tokens[first].start] + head[e - tokens[first].start:]
        return re.sub(r"[ \t]{2,}", " ", head.strip()), statics
    return None


def _insertion_point(text: str, kernel: str, first_launch: int, nested: bool
                     ) -> int | None:
    """Where a launching unit gets its declarations of the new kernels: after its own
    declaration of `kernel`, else (a kernel at file scope) before the top-level
    declaration holding its first launch."""
    own = [d for d in _global_declarations(text, kernel) if not d[1]]
    if own:
        return own[0][4]
    if nested:
        return None
    from polycoal.frontend.lexer import tokenize
    depth, start = 0, 0
    for t in tokenize(text):
        if t.start >= first_launch:
            break
        if t.text == "{":
            depth += 1
        elif t.text == "}":
            depth -= 1
        if depth == 0 and t.text in (";", "}"):
            start = t.end
    return start


def _relabel_lines(text: str, parts) -> str:
    """`line N` of the combined program, in a launching unit's part, as that unit's."""
    def line(m: re.Match) -> str:
        n = int(m.group(1))
        for first, last, name in parts:
            if first <= n <= last:
                return f"line {n - first + 1} of {name}"
        return m.group(0)
    return re.sub(r"\bline (\d+)", line, text)


_FACTS = ("grid", "block", "shared_bytes", "stream", "arguments", "block_shape",
          "grid_shape", "block_parts", "grid_parts")


def _facts(launch) -> tuple:
    return tuple(repr(getattr(launch, f)) for f in _FACTS)


def run(crossings: list[Crossing], units, results, texts, options, root: str = "",
        compile_check: bool = True) -> Done:
    """Transform each crossing (see the module's doc); what became of each unit."""
    from polycoal.decisions import CHANGED
    from polycoal.frontend import read_program
    from polycoal.output import relocate_includes
    from polycoal.frontend.kernel_heads import KernelRecord
    from polycoal.codegen.edits import replacements as _replacements, splice as _splice
    from polycoal.transform import transform_program
    from polycoal.validate import compiles
    done = Done()
    groups: dict[tuple[int, tuple[int, ...]], list[str]] = {}
    for c in crossings:
        groups.setdefault((c.definer, c.launchers), []).append(c.kernel)
    checker = options.compile_check if compile_check else "none"
    judged = compiles.available(checker)
    baselines: dict[int, object] = {}
    mappers: dict[int, _Mapper] = {}

    def refuse(a: int, kernel: str, why: str) -> None:
        done.refusals.setdefault(a, {})[kernel] = why

    def original(t: int) -> str:
        return texts[t][1]

    def mapper(t: int) -> _Mapper:
        if t not in mappers:
            mappers[t] = _Mapper(original(t), results[t].text)
        return mappers[t]

    def baseline(t: int):
        if t not in baselines:
            baselines[t] = compiles.compile_errors(checker, units[t].source, original(t),
                                                   units[t].preprocessor)
        return baselines[t]

    for (a, launchers), kernels in groups.items():
        unit_a = units[a]
        if texts[a] is None or any(texts[t] is None for t in launchers):
            for k in kernels:
                refuse(a, k, "a unit's source cannot be read again")
            continue
        # the combined text: A, then each launching unit (its includes named from A's
        # directory), each starting on a line of its own
        combined = original(a) if original(a).endswith("\n") else original(a) + "\n"
        offsets, parts = [], []
        for t in launchers:
            text = relocate_includes(original(t), units[t].source, unit_a.source)
            if text.count("\n") != original(t).count("\n"):
                text = None
            if text is None:
                break
            first_line = combined.count("\n") + 1
            offsets.append((t, len(combined), text))
            parts.append((first_line, first_line + text.count("\n"),
                          _short(units[t].source, root)))
            combined += text if text.endswith("\n") else text + "\n"
        if len(offsets) != len(launchers):
            for k in kernels:
                refuse(a, k, "a launching unit's includes cannot be named from the "
                       "defining unit's directory")
            continue
        try:
            program = read_program(unit_a.source, unit_a.preprocessor, text=combined)
            alone = {t: read_program(units[t].source, units[t].preprocessor,
                                     text=original(t)) for t in launchers}
        except InputError as error:
            for k in kernels:
                refuse(a, k, "the defining and launching units do not read as one program: "
                       + str(error).splitlines()[0])
            continue
        for kernel in kernels:
            why = _one(kernel, a, launchers, program, alone, offsets, parts, combined,
                       units, texts, results, options, root, done, mapper, judged, checker,
                       baseline, CHANGED, KernelRecord, transform_program, _replacements,
                       _splice)
            if why:
                refuse(a, kernel, why)
    return done


def _in_part(offsets, start: int, end: int):
    for t, at, text in offsets:
        if at <= start and end <= at + len(text):
            return t, at, text
    return None


def _one(kernel, a, launchers, program, alone, offsets, parts, combined, units, texts,
         results, options, root, done, mapper, judged, checker, baseline, CHANGED,
         KernelRecord, transform_program, _replacements, _splice) -> str | None:
    """One crossing kernel: its edits recorded in `done`, or why it is kept."""
    from polycoal.validate import compiles
    length_a = len(texts[a][1])
    # the launches read beside A's text are those each unit reads alone
    for t, at, text in offsets:
        here = [l for l in program.launches_of(kernel)
                if l.span is not None and at <= l.span.start < at + len(text)]
        there = [l for l in alone[t].launches if l.kernel == kernel]
        first_line = combined[:at].count("\n")
        if len(here) != len(there) or any(
                _facts(x) != _facts(y) or x.location.line - first_line != y.location.line
                for x, y in zip(here, there)):
            return (f"its launches in {_short(units[t].source, root)} read differently "
                    f"beside {_short(units[a].source, root)}'s text (macros or names of "
                    "one unit change the other's)")
    try:
        result = transform_program(program, replace(options, kernel=kernel,
                                                     preprocessor=units[a].preprocessor))
    except InputError as error:
        return "the units read as one program: " + str(error).splitlines()[0]
    except Exception as error:          # noqa: BLE001 - confined: the kernel is kept
        if os.environ.get("POLYCOAL_TRACEBACK", "") not in ("", "0"):
            import traceback
            traceback.print_exc()
        return f"polycoal: internal error deciding it with its launches: " \
            f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    decision = next((d for d in result.decisions if d.kernel == kernel), None)
    if decision is None:
        return "no decision for it in the units read as one program"
    launches = tuple(str(l) for t in launchers for l in results[t].launched
                     if l.kernel == kernel)
    places = ", ".join(f"{_short(l.file, root)}:{l.line}" for t in launchers
                       for l in results[t].launched if l.kernel == kernel)
    record_at = next((k for k in results[a].kernels if k.name == kernel), None)
    file_, line = (record_at.file, record_at.line) if record_at else (units[a].source, 0)
    notes = [replace(x, message=_relabel_lines(x.message, parts))
             for x in result.diagnostics if x.kernel == kernel]
    if decision.action not in CHANGED:
        done.records.setdefault(a, {})[kernel] = KernelRecord(
            kernel, file_, line, decision.action, decision.code,
            _relabel_lines(decision.reason, parts) + f" (decided with its launches in other "
            f"translation units: {places})", launches)
        done.notes.setdefault(a, []).extend(notes)
        done.handled.setdefault(a, set()).add(kernel)
        return None
    if result.program is None or result.program.text != combined:
        return "its change reads it through its lowering (C++ outside the C subset), " \
            "which is made for one translation unit"
    replacements = _replacements(result.program, [decision])
    if _splice(combined, replacements) != result.text:
        return "its change edits more than the kernel and its launches"
    edits: dict[int, list[tuple[int, int, str]]] = {}
    for span, new in replacements:
        if span.end <= length_a:
            edits.setdefault(a, []).append((span.start, span.end, new))
            continue
        part = _in_part(offsets, span.start, span.end)
        if part is None:
            return "its change edits text between the units"
        t, at, text = part
        # the relocated text has the original's lines: offsets by line and column
        starts, original_starts = _line_starts(text), _line_starts(texts[t][1])
        first, last = _line_of(starts, span.start - at), _line_of(starts, span.end - at)
        if any(text[starts[n]:starts[n + 1] if n + 1 < len(starts) else len(text)] !=
               texts[t][1][original_starts[n]:original_starts[n + 1]
                           if n + 1 < len(original_starts) else len(texts[t][1])]
               for n in range(first, last + 1)):
            return "its launch is on a line naming an include"
        s = original_starts[first] + span.start - at - starts[first]
        e = original_starts[last] + span.end - at - starts[last]
        edits.setdefault(t, []).append((s, e, new))
    # the kernels the rewritten launches run: declared where they are launched, defined
    # (not static) where the kernel is
    span = program.kernel(kernel).span
    definition = [e for e in edits.get(a, []) if (e[0], e[1]) == (span.start, span.end)]
    if not definition:
        return "its change does not rewrite its definition"
    def_start, def_end, def_text = definition[0]
    old_head = _definition_head(texts[a][1][def_start:def_end], kernel)
    nested = _nested(texts[a][1], def_start)
    for t in launchers:
        launched = []
        for s, e, new in edits.get(t, []):
            launched = list(dict.fromkeys(launched + _LAUNCH_NAME.findall(new)))
        if not launched:
            continue
        prototypes = []
        for name in launched:
            head = _definition_head(def_text, name)
            if head is None:
                if name == kernel or name in _ids(texts[t][1]):
                    continue
                return f"its rewritten launches in {_short(units[t].source, root)} run " \
                    f"'{name}', which its definition does not hold"
            text_head, statics = head
            for s, e in reversed(statics):            # exported: launched from B
                def_text = def_text[:s] + def_text[e:]
            if name == kernel and old_head is not None and text_head == old_head[0]:
                continue                                # the user's declaration holds
            prototypes.append(text_head + ";")
        known = _ids(texts[t][1]) | set(launched) | _LAUNCH_WORDS
        for s, e, new in edits.get(t, []):
            unknown = sorted(n for n in _ids(new) - known if not n.startswith("pc_"))
            if unknown:
                return (f"its rewritten launches in {_short(units[t].source, root)} need "
                        f"{', '.join(unknown[:3])} of the defining unit")
        if prototypes:
            first_launch = min(s for s, _, _ in edits[t])
            at = _insertion_point(texts[t][1], kernel, first_launch, nested)
            if at is None:
                return (f"{_short(units[t].source, root)} declares it in a header (in a "
                        "namespace), where the new kernel's declaration cannot be added")
            ending = "\r\n" if "\r\n" in texts[t][1] else "\n"
            block = ending.join(
                [f"/* polycoal: kernels of {_short(units[a].source, root)}'s transformed "
                 f"'{kernel}', launched here */"] + prototypes)
            edits[t].append((at, at, ending + block))
    edits[a] = [(s, e, def_text if (s, e) == (def_start, def_end) else n)
                for s, e, n in edits[a]]
    # on the texts the units' own transformations wrote (they keep the kernel and its
    # launches as written), with the edits taken so far
    candidates = {}
    for t, mine in edits.items():
        taken = done.edits.get(t, [])
        for s, e, new in mine:
            if any(_overlaps(s, e, s2, e2) for s2, e2, _ in taken):
                return "its edits overlap another kernel's"
            if mapper(t)(s, e) is None:
                return (f"{_short(units[t].source, root)}'s own transformation changed the "
                        "lines of its launch or definition")
        candidates[t] = taken + mine
    if judged:
        for t, all_edits in candidates.items():
            text = _apply(texts[t][1], results[t].text, all_edits, mapper(t), _splice)
            before = baseline(t)
            after = compiles.compile_errors(checker, units[t].source, text,
                                            units[t].preprocessor)
            if before is None or after is None:
                continue
            new_errors = compiles.new_errors(before, after)
            if new_errors:
                return (f"{_short(units[t].source, root)} would not compile with it "
                        f"({checker}: line {new_errors[0].line}: {new_errors[0].message})")
    for t, all_edits in candidates.items():
        done.edits[t] = all_edits
    reason = _relabel_lines(decision.reason, parts) + \
        f"; its launches in other translation units ({places}) rewritten there"
    done.records.setdefault(a, {})[kernel] = KernelRecord(
        kernel, file_, line, decision.action, decision.code, reason,
        launches)
    done.notes.setdefault(a, []).extend(notes)
    done.handled.setdefault(a, set()).add(kernel)
    for t in launchers:
        for l in results[t].launched:
            if l.kernel == kernel:
                done.notes.setdefault(t, []).append(Diagnostic(
                    "note", decision.action, f"launch of kernel '{kernel}' rewritten: the "
                    f"kernel is {decision.action} where it is defined "
                    f"({_short(file_, root)}:{line})", Location(l.file, l.line), kernel))
    return None


def _overlaps(s: int, e: int, s2: int, e2: int) -> bool:
    """Whether two edits [s, e) and [s2, e2) touch the same text (two insertions at one
    place do not)."""
    if s == e and s2 == e2:
        return False
    if s == e:
        return s2 < s < e2
    if s2 == e2:
        return s < s2 < e
    return s < e2 and s2 < e


def _nested(text: str, offset: int) -> bool:
    """Whether `offset` lies inside braces (a namespace)."""
    from polycoal.frontend.lexer import tokenize
    depth = 0
    for t in tokenize(text):
        if t.start >= offset:
            break
        depth += (t.text == "{") - (t.text == "}")
    return depth > 0


def _apply(original: str, changed: str | None, edits, mapper: _Mapper, _splice) -> str:
    """`changed` (or `original`) with the edits, made in `original`'s offsets."""
    from polycoal.frontend.program import Span
    base = original if changed is None else changed
    mapped = []
    for s, e, new in edits:
        where = mapper(s, e)
        mapped.append((Span(*where), new))
    return _splice(base, mapped)


def apply(done: Done, units, results, texts):
    """The results with the cross-unit pass's edits, decisions and notes."""
    from polycoal.codegen.edits import splice as _splice
    out = list(results)
    for t, r in enumerate(results):
        edits = done.edits.get(t)
        records = done.records.get(t, {})
        notes = done.notes.get(t, [])
        if not edits and not records and not notes:
            continue
        text = r.text
        if edits:
            text = _apply(texts[t][1], r.text, edits, _Mapper(texts[t][1], r.text), _splice)
            text = None if text == texts[t][1] else text
        kernels = tuple(records.get(k.name, k) for k in r.kernels)
        kernels += tuple(k for name, k in records.items()
                         if not any(x.name == name for x in r.kernels))
        handled = done.handled.get(t, set())
        diagnostics = tuple(x for x in r.diagnostics
                            if not (x.kernel in handled and x.severity == "note")) + \
            tuple(notes)
        out[t] = replace(r, text=text, kernels=kernels, diagnostics=diagnostics)
    return out
