"""Check a kernel whose irregular references read reorganised copies, read back from the
output (codegen/irregular.py).

The rewrite is legal when (1) the kernel does everything the original does: read with
each copy's element in place of the original's reference (a gather's choice
`pc ? copy[e] : A[P[e]]` read as its original arm, a segment's `copy[pc_run + 32 * k]`
as `A[k]`), its statements are the original's over the same domains, once each, and the
statements of a split segment loop twice (the loop's two parts); (2) every read of a
copy is at the position the runtime built it for: a gather's copy at e, the very index P
was read at (as a polynomial in the thread indices), in statements over the domains the
copy's range was computed on; a segment's copy at `pc_run + 32 * k` (pc_run defined
from the loop's first value and row), the slices' offsets at the row's slice and the
next; (3) nothing writes a copy. The runtime builds each copy from the arrays as they
are at the launch, which the kernel never writes (analysis/irregular.py) and which do
not alias its written arrays: so a copy's element equals the original's reference.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from pycparser import c_ast, c_generator, c_parser

from polycoal.codegen.irregular import run_names, shared_prefix
from polycoal.model.kernel_model import KernelModel


def _originals(node, copies: dict, undo: bool = True):
    """The expression read as the original: every choice `pc_... ? copy : original` by
    its original, every copy `C[...]` by the reference it holds (`copies`: C -> the
    reference as written)."""
    if undo and isinstance(node, c_ast.TernaryOp) and isinstance(node.cond, c_ast.ID) and \
            node.cond.name.startswith("pc_"):
        return _originals(node.iffalse, copies)
    if isinstance(node, c_ast.ArrayRef) and isinstance(node.name, c_ast.ID) and \
            node.name.name in copies:
        return _expression(copies[node.name.name])
    for attr in getattr(node, "__slots__", ()):
        if attr in ("coord", "__weakref__"):
            continue
        value = getattr(node, attr, None)
        if isinstance(value, c_ast.Node):
            setattr(node, attr, _originals(value, copies, undo))
        elif isinstance(value, list):
            setattr(node, attr, [_originals(v, copies, undo) if isinstance(v, c_ast.Node) else v
                                 for v in value])
    return node


def _expression(text: str):
    body = c_parser.CParser().parse(f"void f(void) {{ {text}; }}").ext[0].body
    return body.block_items[0]


@lru_cache(maxsize=4096)
def _key(text: str, copies: tuple = (), undo: bool = True) -> str:
    """An expression's text as pycparser writes it (parentheses and spaces canonical),
    read as the original (`copies`: the pairs of _originals' map)."""
    try:
        node = _expression(text)
    except Exception:
        return "".join(text.split())
    return c_generator.CGenerator().visit(_originals(node, dict(copies), undo))


def checked_text(text: str, plan_groups, span=None) -> str | None:
    """The output as the validator reads it: without the shared forms' loads (runtime
    machinery in statements of their own, first in the kernel, whose text is `span` of
    the output when given); None when one is not there exactly once."""
    start, end = (span.start, span.end) if span is not None else (0, len(text))
    kernel = text[start:end]
    for g in plan_groups:
        if g.shared:
            prefix = shared_prefix(g)
            if kernel.count(prefix) != 1:
                return None
            kernel = kernel.replace(prefix, "")
        if g.padded:
            # the padded form's thread index, `(order ? order[t] : (t))`: checked as the
            # original's `t` (the order is a permutation of the launch's threads, which
            # may run in any order: analysis/irregular._reorderable)
            found = _reordered_indices(kernel, g.padded_names()[0])
            if len(found) != 1:
                return None
            begin, stop, physical = found[0]
            kernel = kernel[:begin] + physical + kernel[stop:]
    return text[:start] + kernel + text[end:]


def _reordered_indices(kernel: str, order: str) -> list[tuple[int, int, str]]:
    """(start, end, t) of each `(order ? order[t] : (t))` in the kernel's text
    (codegen/irregular.reordered_index), t read to its matching bracket: a thread index
    written with brackets of its own (`static_cast<int>(...)`, `(int)(...)`, `a[b]`)."""
    head = f"({order} ? {order}["
    out, at = [], kernel.find(head)
    while at >= 0:
        start = at + len(head)
        depth, k = 1, start
        while k < len(kernel) and depth:
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(kernel[k], 0)
            k += 1
        physical = kernel[start:k - 1]
        tail = f"] : ({physical}))"
        if depth == 0 and kernel[k - 1] == "]" and kernel.startswith(tail, k - 1):
            out.append((at, k - 1 + len(tail), physical))
        at = kernel.find(head, at + 1)
    return out


def _local(name: str) -> bool:
    """The kernel's new private scalars: a loop's run position, split, use."""
    return name.startswith(("pc_run", "pc_use", "pc_split"))


def irregular_problems(old: KernelModel, new: KernelModel, plan_groups) -> list[str]:
    problems = []
    pointers = {g.pointer for g in plan_groups} | \
        {n for g in plan_groups if g.shared for n in g.shared_names()} | \
        {n for g in plan_groups if g.padded for n in g.padded_names()}
    held = tuple((c, x.text) for g in plan_groups for c, x in zip(g.copies, g.references))
    copies = pointers | {c for c, _ in held}
    # a split loop's first value, assigned before its two parts: `int k = first`
    inits = {(g.first.counter, _key(g.first.start)) for g in plan_groups
             if g.kind == "segment"}
    twice = {name for g in plan_groups if g.kind == "segment" for name in g.first.body}

    def bookkeeping(t) -> bool:
        writes = [a for a in t.accesses if a.kind == "write"]
        if len(writes) == 1 and "=" in t.text:
            left, right = t.text.split("=", 1)
            if (writes[0].array, _key(right.strip())) in inits and \
                    left.split()[-1] == writes[0].array:
                return True
        return bool(writes) and all(_local(a.array) for a in writes)
    new_statements = [t for t in new.statements if not bookkeeping(t)]
    expected = Counter()
    by_key = {}
    for s in old.statements:
        k = _key(s.text)
        expected[k] += 2 if s.name in twice else 1
        by_key[k] = s
    found = Counter(_key(t.text, held) for t in new_statements)
    if found != expected:
        missing = list((expected - found).elements())[:1] or list((found - expected).elements())
        return [f"the statements differ from the original's (at '{missing[0]}')"]
    for t in new_statements:
        s = by_key[_key(t.text, held)]
        if s.constraints != t.constraints or len(s.loops) != len(t.loops):
            problems.append(f"statement '{t.text}' runs over another domain than '{s.text}'")
        # memory accesses (private scalars: the statement's text, compared above)
        mine = Counter((a.array, a.kind, _key(a.text)) for a in s.accesses
                       if a.space != "private")
        theirs = Counter()
        for a in t.accesses:
            if a.array in pointers or a.space == "private":
                continue
            original = dict(held).get(a.array)
            array = original.split("[")[0] if original else a.array
            theirs[(array, a.kind, _key(a.text, held))] += 1
        if mine != theirs:
            problems.append(f"statement '{t.text}' accesses other elements than '{s.text}'")
    for s, a in new.accesses():
        if a.array in copies and a.kind == "write":
            problems.append(f"'{a.text}' writes a copy")
    for g in plan_groups:
        r = g.first
        reads = [(s, a) for s, a in new.accesses() if a.array in (g.pointer,) + g.copies]
        if g.kind == "gather":
            originals = sum(1 for _, a in old.accesses() if _key(a.text) == _key(r.text))
            # the duplicated copy and the shared form's slots, each at e where the
            # original read A[P[e]]; the tile (shared memory) at the slot
            names = (g.pointer,) + (g.shared_names()[1:2] if g.shared else ()) + \
                (g.padded_names()[2:3] if g.padded else ())
            for name in names:
                at = [a for _, a in new.accesses() if a.array == name]
                if len(at) != originals:
                    problems.append(f"{len(at)} reads of {name} for {originals} of {r.text}")
                for a in at:
                    if a.flat is None or r.index_poly is None or a.flat != r.index_poly:
                        problems.append(f"'{a.text}' is not read at {r.index}")
            if g.padded:
                order, packed, rank = g.padded_names()
                for _, a in new.accesses():
                    if a.array == order or a.array == packed and (
                            a.kind == "write" or not _key(a.text).startswith(
                                _key(f"{packed}[{rank}["))):
                        problems.append(f"'{a.text}': the padded form is read outside its "
                                        "order and its ranks")
            if g.shared:
                values, slots, counts, tile = g.shared_names()
                for _, a in new.accesses():
                    if a.array in (values, counts) or a.array == tile and (
                            a.kind == "write" or not _key(a.text).startswith(
                                _key(f"{tile}[{slots}[")) and "[" in a.text):
                        problems.append(f"'{a.text}': the shared form is read outside its "
                                        "load and its slots")
            continue
        run, _ = run_names(g)
        allowed = {_key(f"{c}[{run} + 32LL * ({x.counter})]")
                   for c, x in zip(g.copies, g.references)}
        # the slices' offsets are read (by the run position's definition) at the row's
        # slice and the next: any offsets the runtime wrote are consistent with its copy
        allowed |= {_key(f"{g.pointer}[(long long)({r.index}) >> 5]"),
                    _key(f"{g.pointer}[((long long)({r.index}) >> 5) + 1]")}
        for _, a in reads:
            if _key(a.text) not in allowed:
                problems.append(f"'{a.text}' is not a copy's position along the runs")
        defined = [s for s in new.statements if any(
            a.kind == "write" and a.array == run for a in s.accesses)]
        if len(defined) != 1 or _key(r.start) not in _key(defined[0].text, undo=False):
            problems.append(f"the run position of the loop at line {r.loop_line} is not "
                            "defined from its first value")
    return problems
