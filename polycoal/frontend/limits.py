"""`std::numeric_limits<T>::max()` and its kin as C literals (lowering, issue 32).

A template's body names its type parameter's limits (`numeric_limits<K>::max()` as the
identity of a min-reduction); its copy for one instantiation has `T` replaced by a type,
and the call is then a constant. The C subset has no class templates, so the copy spells
the constant: integer limits from the type's width and sign (LP64: long is 64 bits, as
on every CUDA host), floating-point ones as IEEE-754 single and double give them, the
infinities and NaN through their bit patterns (`__int_as_float(0x7f800000)`).
"""

from __future__ import annotations

import re

# integer types: (bits, signed)
_INTEGERS = {
    "bool": (1, False), "char": (8, True), "signed char": (8, True),
    "unsigned char": (8, False), "short": (16, True), "unsigned short": (16, False),
    "int": (32, True), "unsigned int": (32, False), "unsigned": (32, False),
    "long": (64, True), "unsigned long": (64, False), "long long": (64, True),
    "unsigned long long": (64, False),
    "int8_t": (8, True), "uint8_t": (8, False), "int16_t": (16, True),
    "uint16_t": (16, False), "int32_t": (32, True), "uint32_t": (32, False),
    "int64_t": (64, True), "uint64_t": (64, False), "size_t": (64, False),
    "ptrdiff_t": (64, True),
    # glibc's <sys/types.h>, which CUDA's headers bring in
    "uint": (32, False), "ushort": (16, False), "ulong": (64, False),
}

_FLOATS = {
    "float": {"max": "3.40282347e+38f", "min": "1.17549435e-38f",
              "lowest": "(-3.40282347e+38f)", "epsilon": "1.19209290e-07f",
              "infinity": "__int_as_float(0x7f800000)",
              "quiet_NaN": "__int_as_float(0x7fffffff)"},
    "double": {"max": "1.7976931348623157e+308", "min": "2.2250738585072014e-308",
               "lowest": "(-1.7976931348623157e+308)", "epsilon": "2.220446049250313e-16",
               "infinity": "__longlong_as_double(0x7ff0000000000000LL)",
               "quiet_NaN": "__longlong_as_double(0x7fffffffffffffffLL)"},
}

_CALL = re.compile(r"(?:(?:::\s*)?std\s*::\s*)?numeric_limits\s*<\s*((?:std\s*::\s*)?"
                   r"[A-Za-z_][\w ]*?)\s*>\s*::\s*(\w+)\s*\(\s*\)")


def _integer(bits: int, signed: bool, which: str) -> str | None:
    if bits == 1:
        return {"max": "1", "min": "0", "lowest": "0"}.get(which)
    suffix = "" if bits < 64 else "LL"
    if signed:
        top = (1 << (bits - 1)) - 1
        return {"max": f"{top}{suffix}", "min": f"(-{top}{suffix} - 1)",
                "lowest": f"(-{top}{suffix} - 1)"}.get(which)
    return {"max": f"{(1 << bits) - 1}u{suffix}", "min": "0u",
            "lowest": "0u"}.get(which)


def type_name(type_: str) -> str:
    """A built-in arithmetic type's name as _INTEGERS and _FLOATS spell it, its
    qualifiers and `std::` dropped and its words in one order (`long unsigned int`:
    `unsigned long`, `short int`: `short`); any other type's text, spaces normalised."""
    words = [w for w in re.sub(r"\bstd\s*::\s*", "", type_).split()
             if w not in ("const", "volatile")]
    if len(words) > 1 and "int" in words and words not in (["unsigned", "int"],
                                                             ["signed", "int"]):
        words.remove("int")
    if "unsigned" in words:
        words = ["unsigned"] + [w for w in words if w != "unsigned"]
    name = " ".join(words)
    return {"signed": "int", "signed int": "int", "signed short": "short",
            "signed long": "long", "signed long long": "long long"}.get(name, name)


def integer_type(type_: str) -> tuple[int, bool] | None:
    """(bits, signed) of a built-in integer type, None for any other type."""
    return _INTEGERS.get(type_name(type_))


def received_value(value, type_: str) -> int | None:
    """The value a parameter of type `type_` receives for the integer `value` (C's
    conversion: modulo 2^bits, into the signed range for a signed type); None where
    the type is not a built-in integer one or the value not an integer."""
    kind = integer_type(type_)
    if kind is None or isinstance(value, bool) or not float(value).is_integer():
        return None
    bits, signed = kind
    v = int(value) % (1 << bits)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def limit(type_: str, which: str) -> str | None:
    """The C literal of numeric_limits<type_>::which(), or None where it has none here."""
    name = " ".join(re.sub(r"^std\s*::\s*", "", type_.strip()).split())
    if name in _FLOATS:
        return _FLOATS[name].get(which)
    if name in _INTEGERS:
        return _integer(*_INTEGERS[name], which)
    return None


def with_limits(text: str) -> str:
    """`text` with each numeric_limits<T>::f() of a known T and f as its literal (the
    calls of others stay as written)."""
    def literal(m: re.Match) -> str:
        value = limit(m.group(1), m.group(2))
        return m.group(0) if value is None else value + "\n" * m.group(0).count("\n")
    return _CALL.sub(literal, text)
