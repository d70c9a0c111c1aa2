"""Data layout of arrays of structs: candidates and their cost (the n-body paper's steps).

An array of structs (`Body *p`, then `p[i].x`) stores the fields of one element next to
each other, so a warp that reads `p[i].x` for 32 consecutive i strides by the struct's
size and touches up to one sector per lane. The candidates:

- `aos`: the original layout;
- `soa`: a struct of arrays, every scalar slot (leaf) its own array: unit stride;
- `grouped`: the leaves the kernels read together (same loop body, same element index)
  packed into aligned groups of 8 or 16 bytes (`float4 {x, y, z, m}`, a group of three
  padded to four), each group an array, the other leaves arrays of their own: one
  128-bit load brings a whole group.

In a new layout the array's storage holds one segment per group, largest alignment
first, each `count` groups long (the element count of the allocation): leaf f of
element i sits at byte `count * segment(f) + i * size(group(f)) + offset in group(f)`.

The cost of each candidate is in layout_cost.py, the choice over the program in
layout_plan.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from polycoal.frontend.structs import Leaf, StructType

_VECTORS = {("float", 2): "float2", ("float", 4): "float4", ("int", 2): "int2",
            ("int", 4): "int4", ("unsigned int", 2): "uint2", ("unsigned int", 4): "uint4",
            ("double", 2): "double2"}


@dataclass(frozen=True)
class Group:
    """Leaves stored together, one group per element, in a segment of their own."""

    leaves: tuple[Leaf, ...]
    type: str                    # C type of one group: the leaf's, a vector type, the struct
    size: int                    # bytes per element (padded)
    align: int
    components: tuple[str, ...] = ()   # the vector's component of each leaf ("" scalar)

    def slot(self, path: str) -> tuple[int, str] | None:
        """(byte offset in the group, vector component or "") of leaf `path`."""
        for k, leaf in enumerate(self.leaves):
            if leaf.path == path:
                if self.components:           # where the component named sits
                    comp = self.components[k]
                    return "xyzw".index(comp) * leaf.size, comp
                return (0 if len(self.leaves) == 1 else leaf.offset), ""
        return None


@dataclass(frozen=True)
class Layout:
    struct: StructType
    kind: str                    # "aos" | "soa" | "grouped"
    groups: tuple[Group, ...]    # in segment order (largest alignment first)

    @property
    def element_bytes(self) -> int:
        return sum(g.size for g in self.groups)

    def group_of(self, path: str) -> tuple[int, Group]:
        for k, g in enumerate(self.groups):
            if any(leaf.path == path for leaf in g.leaves):
                return k, g
        raise KeyError(path)

    def segment_bytes(self, k: int) -> int:
        """Bytes per element before segment k (times the element count: its start)."""
        return sum(g.size for g in self.groups[:k])

    def describe(self) -> str:
        if self.kind == "aos":
            return f"array of structs ({self.struct.size} bytes per element)"
        parts = []
        for g in self.groups:
            names = ", ".join(leaf.path for leaf in g.leaves)
            parts.append(f"{g.type} {{{names}}}" if len(g.leaves) > 1 else
                         f"{g.type} {names}")
        return ("struct of arrays" if self.kind == "soa" else "aligned groups") + \
            ": " + "; ".join(parts)


def aos(struct: StructType) -> Layout:
    return Layout(struct, "aos", (Group(struct.leaves(), struct.name, struct.size,
                                        struct.align),))


def _ordered(groups: list[Group]) -> tuple[Group, ...]:
    """Segments by alignment, largest first (every segment starts aligned), then in the
    order of the struct's first leaf of each."""
    return tuple(sorted(groups, key=lambda g: (-g.align, g.leaves[0].offset)))


def _scalar(leaf: Leaf) -> Group:
    return Group((leaf,), leaf.type, leaf.size, leaf.size)


def soa(struct: StructType) -> Layout:
    return Layout(struct, "soa", _ordered([_scalar(leaf) for leaf in struct.leaves()]))


def _vector(leaves: list[Leaf]) -> Group | None:
    """The aligned vector group of `leaves` (one scalar type, 2 to 4 of them): three
    are padded to four."""
    ty = leaves[0].type
    width = 4 if len(leaves) == 3 else len(leaves)
    name = _VECTORS.get((ty, width))
    if name is None or any(leaf.type != ty for leaf in leaves):
        return None
    size = leaves[0].size * width
    return Group(tuple(leaves), name, size, size, tuple("xyzw"[:len(leaves)]))


def grouped(struct: StructType, together: list[tuple[frozenset[str], float]]) -> Layout:
    """Groups of the leaves read together, heaviest sets first: each set's leaves not yet
    placed, by type, in struct order, cut into vectors of up to 16 bytes."""
    placed: set[str] = set()
    groups: list[Group] = []
    by_path = {leaf.path: leaf for leaf in struct.leaves()}
    for paths, _ in sorted(together, key=lambda t: (-t[1], sorted(t[0]))):
        free = [by_path[p] for p in sorted(paths, key=lambda p: by_path[p].offset)
                if p not in placed and p in by_path]
        for ty in dict.fromkeys(leaf.type for leaf in free):
            same = [leaf for leaf in free if leaf.type == ty]
            per = max(1, 16 // same[0].size)
            for k in range(0, len(same), per):
                chunk = same[k:k + per]
                g = _vector(chunk) if len(chunk) > 1 else None
                if g is None:
                    continue
                groups.append(g)
                placed.update(leaf.path for leaf in chunk)
    groups += [_scalar(leaf) for leaf in struct.leaves() if leaf.path not in placed]
    return Layout(struct, "grouped", _ordered(groups))


def candidates(struct: StructType, together: list[tuple[frozenset[str], float]]
               ) -> list[Layout]:
    """The array of structs, the struct of arrays and, where some fields are read
    together, the aligned groups of them."""
    out = [aos(struct), soa(struct)]
    g = grouped(struct, together)
    if g.groups != out[1].groups:
        out.append(g)
    return out
