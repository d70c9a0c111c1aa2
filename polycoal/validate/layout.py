"""Translation validation of a layout change (`layout_problems`).

The kernel read back from the output must run the same statements over the same
domains, and each access must be the original's moved by the layout: a field access of
the array of structs, at element index sigma = (offset - field offset) / size, becomes
the access at sigma of the field's group (with the field's vector component); every
other access stays as it was. The layout itself must place the fields of an element
at distinct bytes inside the allocation (`layout_is_injective`, checked with isl over
any element count).
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import islpy as isl

from polycoal.model import isl_helpers
from polycoal.model.kernel_model import Access, KernelModel
from polycoal.model.poly import Poly
from polycoal.optimize.layout import Layout


def _key(p: Poly | None) -> tuple:
    return tuple(sorted((m, str(c)) for m, c in p.terms.items())) if p is not None else ()


def _expected(a: Access, params: dict[str, Layout], names: dict[str, list[str]]) -> tuple:
    layout = params.get(a.array)
    if layout is None or a.member is None or a.struct is None:
        return (a.kind, a.array, _key(a.flat), a.member,
                None if a.flat is not None else a.text)
    struct = layout.struct
    leaf = struct.leaf(a.member)
    k, group = layout.group_of(a.member)
    component = group.slot(a.member)[1] or None
    if a.flat is None:
        return (a.kind, names[a.array][k], (), component, a.element_index)
    sigma = (a.flat - Poly.const(leaf.offset // struct.unit)) * Fraction(struct.unit,
                                                                          struct.size)
    return (a.kind, names[a.array][k], _key(sigma), component, None)


def _actual(a: Access) -> tuple:
    return (a.kind, a.array, _key(a.flat), a.member,
            None if a.flat is not None else a.element_index)


def layout_problems(old: KernelModel, new: KernelModel, params: dict[str, Layout],
                    names: dict[str, list[str]]) -> list[str]:
    """Problems of the rewritten kernel `new` against `old` under `params` (parameter ->
    layout); `names`: each parameter's group parameters, in group order. Statements are
    compared line by line (a whole element is read or written field by field, on its
    line): the same accesses, moved by the layout, and each statement over a domain of
    the original's statements on that line."""
    problems = []
    if old.dims != new.dims:
        return [f"dimensions {new.dims} read back, {old.dims} expected"]
    shift = new.location.line - old.location.line     # the kernel moved in the file
    lines: dict[int, tuple[list, list]] = {}
    for s in old.statements:
        lines.setdefault(s.location.line, ([], []))[0].append(s)
    for t in new.statements:
        lines.setdefault(t.location.line - shift, ([], []))[1].append(t)
    for line, (before, after) in sorted(lines.items()):
        want = Counter(_expected(a, params, names) for s in before for a in s.accesses
                       if a.space != "private")
        got = Counter(_actual(a) for t in after for a in t.accesses if a.space != "private")
        if want != got:
            missing = list((want - got).elements())[:1]
            extra = list((got - want).elements())[:1]
            problems.append(f"line {line}: accesses differ (expected {missing}, found "
                            f"{extra})")
        domains = [isl_helpers.domain(old, s).reset_tuple_id() for s in before]
        for t in after:
            if t.accesses and not any(isl_helpers.domain(new, t).reset_tuple_id()
                                      .is_equal(d) for d in domains):
                problems.append(f"line {line}: a statement over another domain")
                break
    return problems


def layout_is_injective(layout: Layout) -> list[str]:
    """Every (element i < n, field) at its own bytes, all inside n * element_bytes, for
    every n >= 1 (isl: the address map is injective and its image in range)."""
    pieces = []
    for k, g in enumerate(layout.groups):
        before = layout.segment_bytes(k)
        for leaf in g.leaves:
            inner = g.slot(leaf.path)[0]
            for b in range(leaf.size):
                f = len(pieces)
                pieces.append(f"[n] -> {{ [i, {f}] -> [{before} * n + {g.size} * i + "
                              f"{inner + b}] : 0 <= i < n }}")
    if not pieces:
        return ["the layout has no fields"]
    m = isl.Map(pieces[0])
    for text in pieces[1:]:
        m = m.union(isl.Map(text))
    problems = []
    if not m.is_injective():
        problems.append("two fields share a byte")
    bound = isl.Set(f"[n] -> {{ [a] : 0 <= a < {layout.element_bytes} * n }}")
    if not m.range().is_subset(bound):
        problems.append("a field lies outside the allocation")
    return problems
