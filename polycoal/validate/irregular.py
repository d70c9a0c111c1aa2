"""Check a kernel whose irregular references read reorganised copies, read back from the
output (codegen/irregular.py).

The rewrite is legal when (1) the kernel does everything the original does: the same
statements over the same domains (the copies' run positions aside), the same accesses
to the original arrays (each reorganised reference stays, as the choice's other arm);
(2) every read of a copy is at the position the runtime built it for: a gather's copy
at e, the very index P was read at (as a polynomial in the thread indices), over domains
the copy's range was computed on; a segment's copy at `pc_run + 32 * k` inside its loop,
pc_run defined from the loop's first value and row; (3) nothing writes a copy. The
runtime builds each copy from the arrays as they are at the launch, which the kernel
never writes (analysis/irregular.py) and which do not alias its written arrays
(analysis/aliasing.py): so a copy's element equals the original's reference.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from pycparser import c_ast, c_generator, c_parser

from polycoal.codegen.irregular import run_names
from polycoal.model.kernel_model import KernelModel


def _original_arm(node):
    """The expression with every choice `pc_... ? copy : original` replaced by its
    original."""
    if isinstance(node, c_ast.TernaryOp) and isinstance(node.cond, c_ast.ID) and \
            node.cond.name.startswith("pc_"):
        return _original_arm(node.iffalse)
    for attr in getattr(node, "__slots__", ()):
        if attr in ("coord", "__weakref__"):
            continue
        value = getattr(node, attr, None)
        if isinstance(value, c_ast.Node):
            setattr(node, attr, _original_arm(value))
        elif isinstance(value, list):
            setattr(node, attr, [_original_arm(v) if isinstance(v, c_ast.Node) else v
                                 for v in value])
    return node


@lru_cache(maxsize=4096)
def _key(text: str, original: bool = False) -> str:
    """An expression's text as pycparser writes it (parentheses and spaces canonical);
    `original`: with the choices undone."""
    try:
        body = c_parser.CParser().parse(f"void f(void) {{ {text}; }}").ext[0].body
        node = body.block_items[0]
    except Exception:
        return "".join(text.split())
    return c_generator.CGenerator().visit(_original_arm(node) if original else node)


def _statements(model: KernelModel, copies: set[str]):
    """The statements other than the run positions' definitions."""
    return [s for s in model.statements
            if not any(a.kind == "write" and _local(a.array) for a in s.accesses)]


def _local(name: str) -> bool:
    """The kernel's new private scalars: a loop's run position and whether it is used."""
    return name.startswith(("pc_run", "pc_use"))


def irregular_problems(old: KernelModel, new: KernelModel, plan_groups) -> list[str]:
    problems = []
    copies = {g.pointer for g in plan_groups} | {c for g in plan_groups for c in g.copies}
    old_statements, new_statements = old.statements, _statements(new, copies)
    if len(old_statements) != len(new_statements):
        return [f"{len(new_statements)} statements where the original has "
                f"{len(old_statements)}"]
    for s, t in zip(old_statements, new_statements):
        if s.constraints != t.constraints or len(s.loops) != len(t.loops):
            problems.append(f"statement '{t.text}' runs over another domain than '{s.text}'")
        mine = Counter((a.array, a.kind, _key(a.text)) for a in s.accesses)
        theirs = Counter((a.array, a.kind, _key(a.text, True)) for a in t.accesses
                         if a.array not in copies and not _local(a.array))
        if mine != theirs:
            problems.append(f"statement '{t.text}' accesses other elements than '{s.text}'")
    for s, a in new.accesses():
        if a.array in copies and a.kind == "write" or _local(a.array) and \
                a.kind == "write" and a.space != "private":
            problems.append(f"'{a.text}' writes a copy")
    for g in plan_groups:
        r = g.first
        reads = [(s, a) for s, a in new.accesses() if a.array in (g.pointer,) + g.copies]
        if g.kind == "gather":
            originals = sum(1 for _, a in old.accesses() if _key(a.text) == _key(r.text))
            if len(reads) != originals:
                problems.append(f"{len(reads)} reads of {g.pointer} for {originals} of {r.text}")
            for _, a in reads:
                if a.flat is None or r.index_poly is None or a.flat != r.index_poly:
                    problems.append(f"'{a.text}' is not read at {r.index}")
            continue
        run, _ = run_names(g)
        expected = {_key(f"{c}[{run} + 32LL * ({x.counter})]")
                    for c, x in zip(g.copies, g.references)}
        # the slices' offsets are read (by the run position's definition) at the row's
        # slice and the next: any offsets the runtime wrote are consistent with its copy
        expected |= {_key(f"{g.pointer}[(long long)({r.index}) >> 5]"),
                     _key(f"{g.pointer}[((long long)({r.index}) >> 5) + 1]")}
        for _, a in reads:
            if _key(a.text) not in expected:
                problems.append(f"'{a.text}' is not a copy's position along the runs")
        defined = [s for s in new.statements if any(
            a.kind == "write" and a.array == run for a in s.accesses)]
        if len(defined) != 1 or _key(f"{r.start}") not in _key(defined[0].text):
            problems.append(f"the run position of the loop at line {r.loop_line} is not "
                            "defined from its first value")
    return problems
