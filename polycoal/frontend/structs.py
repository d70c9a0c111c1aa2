"""Struct types of the user's code and their memory layout (`struct_types`).

Kernels that take arrays of structs (`Body *p`, then `p[i].x`) read each field with the
struct's size as stride; to model such accesses, and to change the layout, polycoal needs
each field's type, byte offset and size. They follow the C rules every CUDA compiler
uses: a field sits at the next multiple of its alignment, the struct's alignment is its
largest field's, and its size is rounded up to that alignment. CUDA's vector types
(`float4`: 16 bytes, aligned to 16) are structs of their components.

Only plain data is laid out: fields of scalar, vector, pointer or known struct types,
fixed-size arrays of them. A struct with bit-fields, an explicit alignment, a base class,
a virtual function, a template or a field of unknown type is recorded as not plain (its
accesses stay outside the model); member functions and static members do not change the
layout and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import Token, matching

_QUALIFIERS = {"const", "volatile", "__restrict__", "mutable", "struct", "class", "union",
               "signed"}
_SKIPPED = {"public", "private", "protected"}
# components of CUDA's vector types, with the types' alignments
_VECTOR_ALIGN = {"char2": 2, "uchar2": 2, "char4": 4, "uchar4": 4, "short2": 4, "int2": 8,
                 "uint2": 8, "float2": 8, "int3": 4, "uint3": 4, "float3": 4, "int4": 16,
                 "uint4": 16, "float4": 16, "double2": 16, "long2": 16, "double3": 8,
                 "double4": 16, "half2": 4, "__half2": 4, "char3": 1, "uchar3": 1,
                 "short4": 8, "ushort2": 4, "ushort4": 8, "ulong2": 16, "long4": 16,
                 "ulong4": 16, "longlong2": 16, "ulonglong2": 16, "longlong4": 16,
                 "ulonglong4": 16, "double1": 8, "float1": 4, "int1": 4, "uint1": 4}
_VECTOR_BASE = {"char": "char", "uchar": "unsigned char", "short": "short", "int": "int",
                "uint": "unsigned int", "float": "float", "double": "double", "long": "long",
                "half": "half", "__half": "half", "ushort": "unsigned short",
                "ulong": "unsigned long", "longlong": "long long",
                "ulonglong": "unsigned long long"}


@dataclass(frozen=True)
class Field:
    name: str
    type: str                    # scalar or vector type, or a struct's name
    offset: int                  # bytes from the start of the struct
    size: int                    # bytes of one element
    count: int = 1               # elements of a fixed-size array field (`float v[3]`)
    struct: "StructType | None" = None   # the field's own struct type, when it has one


@dataclass(frozen=True)
class Leaf:
    """One scalar slot of a struct: a path of field names (`pos.x`, `v[2]`)."""

    path: str
    type: str
    offset: int
    size: int


@dataclass(frozen=True)
class StructType:
    name: str
    fields: tuple[Field, ...]
    size: int
    align: int
    plain: bool = True
    why: str = ""                # why the struct is not plain
    line: int = 0                # the definition's line (1-based) in the preprocessed text
    vector: bool = False         # one of CUDA's vector types

    def leaves(self) -> tuple[Leaf, ...]:
        out: list[Leaf] = []
        for f in self.fields:
            for k in range(f.count):
                suffix = f"[{k}]" if f.count > 1 else ""
                base = f.offset + k * f.size
                if f.struct is not None:
                    out.extend(Leaf(f"{f.name}{suffix}.{leaf.path}", leaf.type,
                                    base + leaf.offset, leaf.size)
                               for leaf in f.struct.leaves())
                else:
                    out.append(Leaf(f"{f.name}{suffix}", f.type, base, f.size))
        return tuple(out)

    def leaf(self, path: str) -> Leaf | None:
        return next((x for x in self.leaves() if x.path == path), None)

    def leaves_under(self, prefix: str) -> list[Leaf]:
        """The leaves a path names: itself, or those of the sub-struct or field array
        it names (`pos` -> `pos.x`, `pos.y`, `pos.z`); every leaf for ""."""
        return [x for x in self.leaves() if not prefix or x.path == prefix or
                x.path.startswith(prefix + ".") or x.path.startswith(prefix + "[")]

    @property
    def unit(self) -> int:
        """The largest size dividing every leaf's offset and size and the struct's size:
        offsets into an array of the struct, counted in this unit, are integers."""
        from math import gcd
        u = self.size
        for leaf in self.leaves():
            u = gcd(u, gcd(leaf.offset, leaf.size))
        return max(u, 1)


def vector_types() -> dict[str, StructType]:
    """CUDA's vector types as structs of their components (x, y, z, w)."""
    sizes = cuda_dialect().type_sizes
    out = {}
    for name, align in _VECTOR_ALIGN.items():
        if name not in sizes:
            continue
        stem = name.rstrip("1234")
        width = int(name[len(stem):])
        base = _VECTOR_BASE.get(stem)
        if base is None:
            continue
        size = sizes[name] // width
        fields = tuple(Field(c, base, k * size, size) for k, c in enumerate("xyzw"[:width]))
        out[name] = StructType(name, fields, max(sizes[name], width * size), align,
                               vector=True)
    return out


def _scalar_layout(ty: str, known: dict[str, StructType]) -> tuple[int, int, "StructType | None"] | None:
    """(size, alignment, struct) of a field type, None when unknown."""
    sizes = cuda_dialect().type_sizes
    if ty in known:
        s = known[ty]
        return (s.size, s.align, s) if s.plain else None
    if ty in sizes:
        return sizes[ty], min(sizes[ty], 8), None
    return None


def _field_groups(tokens: list[Token]) -> list[list[Token]] | str:
    """The body of a struct split into declarations; a string when the body holds
    something that changes the layout beyond its fields."""
    out, k, start = [], 0, 0
    while k < len(tokens):
        t = tokens[k]
        if t.text in _SKIPPED and k + 1 < len(tokens) and tokens[k + 1].text == ":":
            k += 2
            start = k
            continue
        if t.text in ("virtual", "template", "alignas", "__align__", "__attribute__",
                      "union", "operator"):
            return f"'{t.text}' in the struct"
        if t.text == "(":
            # a member function (or constructor): skip to its end
            close = matching(tokens, k)
            j = close + 1
            while j < len(tokens) and tokens[j].text not in (";", "{"):
                j += 1
            if j < len(tokens) and tokens[j].text == "{":
                j = matching(tokens, j)
            k = j + 1
            start = k
            continue
        if t.text == "{":
            return "a nested definition in the struct"
        if t.text == ";":
            decl = tokens[start:k]
            if decl and decl[0].text not in ("static", "using", "typedef", "friend"):
                out.append(decl)
            start = k + 1
        k += 1
    return out


def _layout(name: str, body: list[Token], known: dict[str, StructType], line: int
            ) -> StructType:
    groups = _field_groups(body)
    if isinstance(groups, str):
        return StructType(name, (), 0, 1, False, groups, line)
    fields, offset, align = [], 0, 1
    for decl in groups:
        if any(t.text == ":" for t in decl):
            return StructType(name, (), 0, 1, False, "a bit-field", line)
        # type words, then declarators separated by commas: `float x, y, *p, v[3]`
        pieces, current = [], []
        for t in decl:
            if t.text == ",":
                pieces.append(current)
                current = []
            else:
                current.append(t)
        pieces.append(current)
        first = pieces[0]
        bracket = next((j for j, t in enumerate(first) if t.text == "["), len(first))
        ids = [j for j in range(bracket) if first[j].kind == "id"]
        if len(ids) < 2:
            return StructType(name, (), 0, 1, False, "a field without a type", line)
        words = [first[j].text for j in ids[:-1] if first[j].text not in _QUALIFIERS]
        base = " ".join(words)
        declarators = [first[ids[-1] - (1 if ids[-1] and first[ids[-1] - 1].text in "*&"
                                        else 0):]] + pieces[1:]
        for d in declarators:
            pointer = any(t.text in ("*", "&") for t in d)
            names = [t for t in d if t.kind == "id"]
            if not names or "=" in [t.text for t in d]:
                return StructType(name, (), 0, 1, False, "a field with an initialiser", line)
            field_name = names[0].text
            count = 1
            dims = [d[j + 1].text for j in range(len(d) - 1) if d[j].text == "["]
            for dim in dims:
                if not dim.isdigit():
                    return StructType(name, (), 0, 1, False,
                                      f"field '{field_name}' has a size that is not a number",
                                      line)
                count *= int(dim)
            layout = (8, 8, None) if pointer else _scalar_layout(base, known)
            if layout is None:
                return StructType(name, (), 0, 1, False,
                                  f"field '{field_name}' of unknown type '{base}'", line)
            size, a, inner = layout
            offset = -(-offset // a) * a
            fields.append(Field(field_name, "void *" if pointer else base, offset, size,
                                count, inner))
            offset += size * count
            align = max(align, a)
    if not fields:
        return StructType(name, (), 0, 1, False, "no fields", line)
    return StructType(name, tuple(fields), -(-offset // align) * align, align, True, "", line)


def struct_types(tokens: list[Token]) -> dict[str, StructType]:
    """Every struct of the user's tokens (preprocessed), by each name it can be written
    with: `Body`, `struct Body` and a typedef's alias. CUDA's vector types included."""
    known: dict[str, StructType] = dict(vector_types())
    k = 0
    while k < len(tokens):
        t = tokens[k]
        typedef = t.text == "typedef" and k + 1 < len(tokens) and \
            tokens[k + 1].text in ("struct", "class")
        at = k + 1 if typedef else k
        if tokens[at].text in ("struct", "class") and at + 1 < len(tokens):
            j = at + 1
            tag = tokens[j].text if tokens[j].kind == "id" else None
            if tag is not None:
                j += 1
            if j < len(tokens) and tokens[j].text == ":" and not typedef:
                if tag:
                    known[tag] = StructType(tag, (), 0, 1, False, "a base class", t.line)
                k = j + 1
                continue
            if j < len(tokens) and tokens[j].text == "{":
                close = matching(tokens, j)
                name = tag or ""
                aliases = []
                if typedef:
                    m = close + 1
                    while m < len(tokens) and tokens[m].text != ";":
                        if tokens[m].kind == "id" and tokens[m - 1].text in ("}", ","):
                            aliases.append(tokens[m].text)
                        m += 1
                s = _layout(aliases[0] if aliases and not name else name or "?",
                            list(tokens[j + 1:close]), known, t.line)
                for alias in ([tag] if tag else []) + aliases:
                    known[alias] = s
                    known[f"struct {alias}"] = s
                k = close + 1
                continue
        k += 1
    return known
