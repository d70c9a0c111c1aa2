"""A host loop of one launch made one launch whose threads run the loop (issue 34: launch
overhead, kernels fused where the dependences allow it).

    for (i1 = 1; i1 < n; i1++) {
      sweep<<<grid, block>>>(n, A, B, X, i1);    // thread i2: row i1 from row i1 - 1
      cudaDeviceSynchronize();
    }

Each trip is a launch, and the trips run in order, each after the one before has
finished: on the H200 10.6 us a trip with its wait, 3.7-4.4 us without, 0.7-1.2 us when
each thread runs the trips itself (tools/explore_launch_forms.py). The loop moves into
the kernel:

    sweep__pc_trips<<<grid, block>>>(n, A, B, X, i1, n);
        // each thread: for (t = i1; t < n; t++) sweep__pc_trip(n, A, B, X, t)

where sweep__pc_trip is the kernel as written, made a device function. The original
orders every instance of a trip before every instance of the next; the new kernel orders
only the instances of one thread (its trips in order, each trip's statements in the
kernel's order). That is the same program when every pair of instances of different
trips that touch one element, one of them writing, belongs to one thread (the same
thread coordinates: the same thread runs both, in the trips' order), and the instances
of one trip never race (as the kernel already requires). Checked with isl on the kernel's
model: the trip variable, a parameter of the kernel, becomes a dimension of the
instances, and {(t, x) -> (t', x') : one element, t != t', the threads of x and x'
differ} must be empty for every pair of references to an array (atomic updates
included), with the pointer arguments shown distinct arrays (analysis/aliasing.py). The
kernel must be inside the model whole (affine references, no barrier, shared memory or
statement outside the model, no print), and must not assign the trip parameter.

The host loop: `for ([type] v = LO; v < HI; v++)` (or `<=`, `++v`, `v += 1`) whose body is
one launch of a kernel into the default stream (and waits for the device), v passed as
one argument as it is, the launch's configuration and other arguments pure host
expressions without v and without side effects (launch_waits._pure): each trip launches
the same grid with the same arguments but v. The loop becomes

    { v = LO; if (v < HI) { k__pc_trips<<<config>>>(arguments, HI); v = HI; [wait;] } }

(the variable left as the loop leaves it; a loop that waited waits once after).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from polycoal.frontend.lexer import ASSIGNMENTS, Token, matching, split_top_level
from polycoal.model import isl_helpers
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.launch_waits import (_Kept, _keys, _device_ranges, _launch, _pure,
                                            _Walk, _simple, _simple_end)

INT_TYPES = frozenset(("int", "long", "long long", "unsigned", "unsigned int", "size_t",
                       "short", "unsigned long", "unsigned long long", "int64_t", "int32_t"))
# calls in a kernel that make its threads' order observable
_ORDERED = frozenset(("printf", "clock", "clock64", "asm", "__nanosleep", "__syncthreads",
                      "__syncwarp", "__threadfence", "malloc", "free"))


@dataclass(frozen=True)
class TripLoop:
    """A host loop of one launch (the module's doc), as the text writes it."""

    start: int                  # the loop's characters [start, end)
    end: int
    line: int
    key: tuple                  # launch_waits.loop_lines
    var: str                    # the loop variable
    declared: str               # its type where the loop declares it, else ""
    lo: str                     # LO, HI as written
    hi: str
    inclusive: bool             # `<=`
    kernel: str
    position: int               # the argument that is `var`
    config: str                 # the launch's configuration and arguments as written
    arguments: tuple[str, ...]
    wait: str                   # the wait the loop made ("" when none)


def trip_loops(text: str, tokens: list[Token]) -> list[TripLoop]:
    """The host loops of one launch, with the loop variable passed as an argument."""
    device = _device_ranges(tokens)
    out = []
    for k, key in _keys(tokens, device).items():
        if tokens[k].text != "for":
            continue
        try:
            loop = _trip_loop(text, tokens, k, key)
        except (_Kept, ValueError, IndexError, KeyError):
            continue
        if loop is not None:
            out.append(loop)
    return out


def _texts(s: list[Token]) -> list[str]:
    return [t.text for t in s]


def _joined(text: str, s: list[Token]) -> str:
    return text[s[0].start:s[-1].end] if s else ""


# operators that bind at least as tightly as `<` (a bound written `n - 2`, `a * b + 1`;
# not `9 && go`, which the condition reads as `(v < 9) && go`)
_TIGHT = frozenset(("+", "-", "*", "/", "%", ".", "::", "<<", ">>"))


def _tight(s: list[Token]) -> bool:
    """Whether the tokens are one operand of `<` as written: every operator outside
    brackets binds more tightly."""
    depth = 0
    for t in s:
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.kind not in ("id", "num") and t.text not in _TIGHT:
            return False
    return True


def _declaration(text: str, var: str, before: int) -> str:
    """The integer type of the last declaration of `var` before offset `before`
    (`int n = N, i1;`), or "" where none is found."""
    words = "|".join(sorted((re.escape(w) for w in INT_TYPES), key=len, reverse=True))
    found = list(re.finditer(rf"\b({words})\s+[^;{{}}*&]*?\b{re.escape(var)}\b\s*[,;=]",
                             text[:before]))
    return re.sub(r"\s+", " ", found[-1].group(1)) if found else ""


def _trip_loop(text: str, tokens: list[Token], k: int, key: tuple) -> TripLoop | None:
    close = matching(tokens, k + 1)
    init, cond, step = split_top_level(tokens[k + 2:close], ";")
    ti, tc, ts = _texts(init), _texts(cond), _texts(step)
    if "=" not in ti or ti.count("=") != 1:
        return None
    eq = ti.index("=")
    var, declared = ti[eq - 1], " ".join(ti[:eq - 1])
    if tokens[k + 2 + eq - 1].kind != "id" or (declared and declared not in INT_TYPES):
        return None
    lo = init[eq + 1:]
    if len(tc) < 3 or tc[0] != var or tc[1] not in ("<", "<="):
        return None
    hi = cond[2:]
    if ts not in ([var, "++"], ["++", var], [var, "+=", "1"]):
        return None
    for part in (lo, hi):
        _pure(part, "the loop's bounds")
        if var in _texts(part) or ASSIGNMENTS & set(_texts(part)) or not _tight(part):
            return None
    if not declared:
        declared = _declaration(text, var, tokens[k].start)
        if declared not in INT_TYPES:
            return None         # the variable's type not known to be an integer
        declared = ""
    # the body: one launch, and waits
    body_start = close + 1
    end = _simple_end(tokens, body_start) if tokens[body_start].text != "{" \
        else matching(tokens, body_start) + 1
    statements, j = [], body_start + (1 if tokens[body_start].text == "{" else 0)
    stop = end - (1 if tokens[body_start].text == "{" else 0)
    while j < stop:
        e = _simple_end(tokens, j)
        statements.append((j, e))
        j = e
    launches = [tokens[a:e] for a, e in statements if "<<<" in _texts(tokens[a:e])]
    if len(launches) != 1:
        return None
    walk = _Walk([])
    for a, e in statements:             # the launch, and waits: nothing else
        if "<<<" not in _texts(tokens[a:e]):
            waits = len(walk.waits)
            _simple(tokens, a, e, walk, True)
            if len(walk.waits) != waits + 1:
                return None
    (s,) = launches
    ts_ = _texts(s)
    if s[0].kind != "id" or ts_[1] != "<<<":
        return None                     # a template's launch, a qualified name
    _launch(s, ts_)
    open_, shut = ts_.index("<<<"), ts_.index(">>>")
    config, args = s[open_ + 1:shut], s[shut + 2:-2]
    if var in _texts(config) or ASSIGNMENTS & set(_texts(config) + _texts(args)):
        return None
    parts = split_top_level(args)
    where = [n for n, p in enumerate(parts) if _texts(p) == [var]]
    if len(where) != 1 or sum(var in _texts(p) for p in parts) != 1:
        return None
    return TripLoop(tokens[k].start, tokens[end - 1].end, tokens[k].line, key, var,
                    declared, _joined(text, lo), _joined(text, hi), tc[1] == "<=", ts_[0],
                    where[0], _joined(text, config),
                    tuple(_joined(text, p) for p in parts),
                    walk.spelling)


def trips_obstacle(model: KernelModel | None, kernel_text: str, parameter: str,
                   parameter_type: str, lo: int | None = None, hi: int | None = None,
                   inclusive: bool = False) -> str | None:
    """Why the kernel cannot run the trips in its threads (None: it can; the module's
    doc), pointer distinctness aside. `lo`, `hi`: the loop's bounds where they are
    known numbers (the trips' range; None: any value)."""
    if model is None:
        return "the kernel is outside the model"
    if parameter_type not in INT_TYPES:
        return f"its parameter {parameter} is not an integer"
    body = kernel_text[kernel_text.find("{"):]
    if re.search(rf"(?:\b{re.escape(parameter)}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                 rf"(?:\+\+|--)\s*{re.escape(parameter)}\b|\b{re.escape(parameter)}\s*(?:\+\+|--))",
                 body):
        return f"it assigns its parameter {parameter}"
    if model.outside:
        return f"{model.outside[0].construct} is outside the model"
    used = set(re.findall(r"[A-Za-z_]\w*", body))
    if used & _ORDERED:
        return f"it calls {sorted(used & _ORDERED)[0]}"
    for _, a in model.accesses():
        if a.space in ("shared",):
            return "it uses shared memory"
        if a.space in ("global", "constant") and a.subscripts is None:
            return f"{a.text} is not an affine reference"
    return _cross_trip_conflict(model, parameter, lo, hi, inclusive)


def _with_trip(m: isl.Map, parameter: str) -> isl.Map:
    """The instances of `m` with the parameter as their first dimension."""
    k = m.find_dim_by_name(isl.dim_type.param, parameter)
    if k < 0:
        m = m.insert_dims(isl.dim_type.in_, 0, 1)
    else:
        m = m.move_dims(isl.dim_type.in_, 0, isl.dim_type.param, k, 1)
    return m.reset_tuple_id(isl.dim_type.in_)


def _cross_trip_conflict(model: KernelModel, parameter: str, lo: int | None = None,
                         hi: int | None = None, inclusive: bool = False) -> str | None:
    """The first pair of references of different trips (in [lo, hi) where known) and
    different threads that touch one element, one writing (None: there is none)."""
    # positional names of polycoal's own (pc_): none is a parameter's
    count = 1 + len(model.dims)
    first, second = [f"pc_a{n}" for n in range(count)], [f"pc_b{n}" for n in range(count)]
    threads = range(1, 1 + len(isl_helpers.thread_names(model)))
    differ = " or ".join(f"pc_a{n} != pc_b{n}" for n in threads) or "false"
    params = [p for p in model.parameters if p != parameter]
    trips = "".join(f" and {lo} <= {t}" for t in ("pc_a0", "pc_b0") if lo is not None) + \
        "".join(f" and {t} {'<=' if inclusive else '<'} {hi}" for t in ("pc_a0", "pc_b0")
                if hi is not None)
    apart = isl.Map(f"[{', '.join(params)}] -> {{ [{', '.join(first)}] -> "
                    f"[{', '.join(second)}] : pc_a0 != pc_b0 and ({differ}){trips} }}")
    accesses = [(s, a) for s, a in model.accesses() if a.space in ("global", "constant")]
    for s1, w in accesses:
        if w.kind != "write":
            continue
        wmap = isl_helpers.access_map(model, s1, w)
        for s2, a in accesses:
            if a.array != w.array:
                continue
            amap = isl_helpers.access_map(model, s2, a)
            if wmap is None or amap is None:
                return f"{w.text} or {a.text} has no access relation"
            same = _with_trip(wmap, parameter).apply_range(
                _with_trip(amap, parameter).reverse().reset_tuple_id(isl.dim_type.out))
            same = same.reset_tuple_id(isl.dim_type.out)
            if not same.intersect(apart).is_empty():
                return (f"{w.text} (line {w.location.line}) and {a.text} (line "
                        f"{a.location.line}) touch one element in different trips from "
                        "different threads")
    return None

