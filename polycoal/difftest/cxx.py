"""C++ constructs over a generated program (issue 32): the words and shapes of code that
polycoal reads through Clang (frontend/lower.py, clang.py), each a rewrite of a family's
program that keeps its meaning (or changes values only where the value is never an index
or a bound, so that the program stays race-free and in bounds).

`apply(b, rng, names)` rewrites the Builder `b` (its kernels' lines and parameters, its
host code) after the family made it and before it is rendered; it returns the names of
the constructs that changed something. It draws only from `rng`, which the caller makes
apart from the family's, so that a program without constructs is the one of the old
generator, byte for byte, for every seed.

The constructs (CONSTRUCTS):

  template          kernels as templates over their element type and an int (a macro
                    size used in the body): `template <typename T, int S>` launched
                    `k<float, N>`, `template <int S, typename T>` launched `k<N>` (T
                    deduced), `template <typename T>` launched `k<float>` or `k`
  host-template     the launch inside a host function template, `template <typename H>
                    void run_k(dim3 g, dim3 b, H *A, ...) { k<<<g, b>>>(A, ...); }`,
                    called `run_k(grid, block, d_A, ...)` (the element type deduced; the
                    geometry inside the function where it is made of macros)
  auto              `auto` / `const auto` locals (`auto i = static_cast<int>(...)`, `auto
                    s = 0.0f`, `for (auto j = 0; ...)`, `auto e = p[i]`)
  constexpr         `constexpr int nx = NX;` for a macro size used in the body, or
                    `constexpr float w = 2.0f;` for a literal
  static-cast       C casts as `static_cast<T>(e)` (or one added where there is none)
  reinterpret-cast  `reinterpret_cast<void **>(&d_A)` in cudaMalloc, `reinterpret_cast<
                    float (*)[N]>(d_A)` for 2-D parameters, reads through
                    `reinterpret_cast<const float *>(A)[e]`
  std-math          `std::fabs`, `::min` / `::max` in kernels (for fabsf/fminf/fmaxf, or
                    around a value read); `std::max(grid, 1)` and `std::min` on the host
                    (std::min and std::max are constexpr host functions, which device code
                    may call only under nvcc's --expt-relaxed-constexpr: not in kernels)
  alias             `using real = float;` (or `typedef`), the kernel's element type
                    written through it
  unroll            `#pragma unroll`, `#pragma unroll 4`, `#pragma unroll 1` before loops
  device-helper     small `__device__` helpers: by reference (`add_to(y[i], e)` for `y[i]
                    += e`), by value (`twice(A[e])`), through a pointer (`load(A, e)`),
                    reading a thread index in two statements (`lane_shift(A[e])` adds
                    `threadIdx.x % 3`: not inlined, its thread index must keep its meaning)
  header            kernels defined in a header of the program's directory, included
  dim3              launch geometry in variables: `dim3 b(X)`, `dim3 b(X, Y)`, `dim3 b =
                    dim3(...)`, `dim3 b{...}`, `dim3 b = {...}`, `dim3 b; b.x = X;`,
                    `const dim3`, an `int` block
  ifdef             an `#ifdef` branch: a kernel statement with another one in the branch
                    not taken (the macro defined or not), or a check after a launch
  cg-barrier        a thread block's barrier through cooperative groups (`#include
                    <cooperative_groups.h>`, `namespace cg = cooperative_groups;`):
                    `cg::thread_block b = cg::this_thread_block();` (or `auto b = ...`)
                    and `b.sync();` or `cg::sync(b);`, or `cg::this_thread_block().sync();`
                    alone: for a kernel's `__syncthreads();`, else a barrier added at a
                    statement of the kernel's top level that every thread reaches (no
                    return before it)
  lambda            one value read of a kernel computed through a local lambda (`auto f =
                    [](float v) { return v; };`, `[&](auto e) { return A[e]; }`, a value
                    doubled then halved): an opaque statement, the kernel must stay
                    byte-identical (must_keep)
  numeric-limits    in a template kernel (made one with `template` where the program has
                    none): a min or max reduction's private accumulator starting at
                    `std::numeric_limits<T>::max()` / `lowest()` with its first value folded
                    in, or a value read clamped by them (`::max(A[e], std::numeric_limits<
                    T>::lowest())`): the same values. Device code may call them only under
                    nvcc's --expt-relaxed-constexpr, which the nvcc checks pass to such
                    programs (runner.relaxed_constexpr)
  auto-pointer      in a template kernel: a row pointer `const auto *row = A + (i * M);`
                    before the statement that reads `A[i * M + j]`, which reads `row[j]`
"""

from __future__ import annotations

import random
import re

CONSTRUCTS = ("template", "host-template", "auto", "constexpr", "static-cast",
              "reinterpret-cast", "std-math", "alias", "unroll", "device-helper", "header",
              "dim3", "ifdef", "cg-barrier", "lambda", "numeric-limits", "auto-pointer")

# the order in which they are applied (each sees the text the earlier ones left); the
# constructs that insert statements before a line come before unroll and ifdef, which
# put directives before lines
ORDER = ("constexpr", "template", "alias", "numeric-limits", "auto-pointer", "auto",
         "static-cast", "lambda", "std-math", "device-helper", "reinterpret-cast",
         "cg-barrier", "unroll", "ifdef", "dim3", "host-template", "header")

MIX_RATE = 0.25                  # the share of programs with constructs in the mix mode
SCALARS = ("int", "float", "double", "long", "unsigned", "size_t")
_SYNC = re.compile(r"\b(__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any_sync|"
                   r"__all_sync|__activemask|__match\w*|__reduce\w*_sync|"
                   r"this_thread_block)\b")
_LAUNCH = re.compile(r"^(\s*)((?:\w+::)*(\w+)(?:<[^<>;]*>)?)<<<(.*)>>>\((.*)\);\s*$")
_POINTER = re.compile(r"^(const )?(\w+) \*(__restrict__ )?(\w+)$")
_ASSIGN = re.compile(r"^(\s*)([A-Za-z_]\w*(?:\[[^;]*?\])*)\s*(=|\+=|-=|\*=)\s*(?!=)(.*);\s*$")


def choose(rng: random.Random, mode) -> list[str]:
    """The constructs to try on one program: `mode` "none", "mix" (MIX_RATE of the
    programs get 1 to 3), "all" (2 to 5 of them), or a list of names (all of those)."""
    if mode in (None, "none") or mode == ["none"]:
        return []
    if mode == "mix" or mode == ["mix"]:
        if rng.random() >= MIX_RATE:
            return []
        return rng.sample(CONSTRUCTS, rng.choice((1, 1, 2, 3)))
    if mode == "all" or mode == ["all"]:
        return rng.sample(CONSTRUCTS, rng.randint(2, 5))
    names = [mode] if isinstance(mode, str) else list(mode)
    unknown = [n for n in names if n not in CONSTRUCTS]
    if unknown:
        raise ValueError(f"unknown constructs {unknown}; known: {', '.join(CONSTRUCTS)}")
    return names


def apply(b, rng: random.Random, names: list[str], seed: int = 0) -> list[str]:
    """Rewrite the Builder `b` with the constructs `names` (in ORDER); the names of those
    that changed something."""
    done = []
    for name in ORDER:
        if name in names and FUNCTIONS[name](b, rng, seed):
            done.append(name)
    # constructs another one applied for its own (numeric-limits makes templates)
    implied = getattr(b, "cxx_implied", set())
    return done + [n for n in CONSTRUCTS if n in implied and n not in done]


# ----------------------------------------------------------------------- text helpers

def _top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1, "[": 1, "]": -1, "{": 1, "}": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return parts + [current.strip()]


def _closing(text: str, at: int) -> int:
    """Index of the bracket closing text[at] (-1 when unbalanced)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    want = [pairs[text[at]]]
    j = at + 1
    while j < len(text) and want:
        c = text[j]
        if c in pairs:
            want.append(pairs[c])
        elif c in ")]}":
            if c != want[-1]:
                return -1
            want.pop()
        j += 1
    return j - 1 if not want else -1


def _operand_end(text: str, pos: int) -> int:
    """End of the operand of a cast starting at `pos`: a parenthesised expression, or a
    name with member accesses and subscripts (`threadIdx.x`, `a[i]`); -1 otherwise."""
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos >= len(text):
        return -1
    if text[pos] == "(":
        end = _closing(text, pos)
        return -1 if end < 0 else end + 1
    m = re.match(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", text[pos:])
    if not m:
        m = re.match(r"\d+(?:\.\d*)?f?", text[pos:])
        return pos + m.end() if m else -1
    end = pos + m.end()
    while end < len(text) and text[end] == "[":
        close = _closing(text, end)
        if close < 0:
            return -1
        end = close + 1
    if text[end:end + 1] == "(":          # a call: not an operand we take whole
        return -1
    return end


def _depth_at(text: str, pos: int) -> int:
    """How many brackets are open at `pos`."""
    depth = 0
    for c in text[:pos]:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
    return depth


def _assigned_later(lines: list[str], name: str) -> bool:
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%&|^]?=(?!=)|\+\+|--)|"
                         rf"(?:\+\+|--)\s*{re.escape(name)}\b|&\s*{re.escape(name)}\b")
    return any(pattern.search(l) for l in lines)


def _statement_start(lines: list[str], n: int) -> bool:
    """Whether line n starts a statement of a block (the line before it ends one), so
    that a line may be put before it."""
    for prev in reversed(lines[:n]):
        s = prev.strip()
        if not s:
            continue
        if s.startswith("#"):
            return True
        return s.endswith((";", "{", "}"))
    return True


def _pointer_params(k) -> dict[str, tuple[str, bool]]:
    """name -> (element type, const) of the kernel's pointer parameters."""
    out = {}
    for decl, _ in k.params:
        m = _POINTER.match(decl)
        if m:
            out[m.group(4)] = (m.group(2), bool(m.group(1)))
    return out


def _kernel_words(k) -> str:
    return "\n".join(k.lines) + "\n" + k.before


def _synchronises(k) -> bool:
    return bool(_SYNC.search(_kernel_words(k)))


def _launch_lines(b, k) -> list[int] | None:
    """Indices of the lines of main that launch `k`, each a launch statement alone on
    its line; None when the kernel is named otherwise in host code (a macro, a block)."""
    word = re.compile(rf"(?<![\w]){re.escape(k.name)}\b")
    found = []
    for n, line in enumerate(b.main):
        if not word.search(line):
            continue
        m = _LAUNCH.match(line)
        if not m or m.group(3) != k.name:
            return None
        found.append(n)
    for text in getattr(b, "host_functions", []):
        if word.search(text):
            return None
    return found or None


def _macro_names(b) -> set[str]:
    return {name for name, _ in b.defines}


def _only_macros(b, text: str) -> bool:
    """Whether every name in `text` is a macro of the program (or dim3)."""
    names = set(re.findall(r"[A-Za-z_]\w*", text)) - {"dim3"}
    return names <= _macro_names(b)


def param_name(decl: str) -> str:
    """The name a parameter declaration declares (`float A[][N]`: A)."""
    return re.findall(r"(\w+)(?:\[\])?(?:\[[^\]]*\])?$", decl)[0]


def config_of_parameters(b, k, launches) -> str | None:
    """The launches' common configuration written in the kernel's parameters (a size
    passed as an argument, `(n + 255) / 256`) and macros, for a function that receives
    the arguments and launches; None where it needs other host values."""
    found = set()
    for m in launches:
        args = _top_level(m.group(5)) if m.group(5).strip() else []
        names = {a: param_name(d) for a, (d, _) in zip(args, k.params)
                 if re.fullmatch(r"[A-Za-z_]\w*", a)}
        macros = _macro_names(b) | {"dim3"}
        words = set(re.findall(r"[A-Za-z_]\w*", m.group(4))) - macros
        if not words <= set(names):
            return None
        found.add(re.sub(r"[A-Za-z_]\w*", lambda w: names.get(w.group(0), w.group(0)),
                         m.group(4)))
    return found.pop() if len(found) == 1 else None


def _pick(rng: random.Random, items: list, rate: float = 0.6) -> list:
    """A random non-empty subset of `items` (each kept with probability `rate`)."""
    if not items:
        return []
    chosen = [x for x in items if rng.random() < rate]
    return chosen or [rng.choice(items)]


# ----------------------------------------------------------------------- the constructs

def c_template(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, [k for k in b.kernels if not k.template and _launch_lines(b, k)]):
        pointers = _pointer_params(k)
        types = sorted({t for t, _ in pointers.values() if t in ("float", "double", "int")})
        body = "\n".join(k.lines)
        macros = sorted(n for n in _macro_names(b) if re.search(rf"\b{n}\b", body))
        forms = []
        if types:
            forms += ["type", "type-int", "int-type"] if macros else ["type"]
        if macros:
            forms.append("int")
        if not forms:
            continue
        form = rng.choice(forms)
        tparam, iparam = b.fresh("ValueT"), b.fresh("Ext")
        targs = ""
        if form in ("type", "type-int", "int-type"):
            ctype = rng.choice(types)
            k.params = [(re.sub(rf"\b{ctype}\b", tparam, d, count=1)
                         if (m := _POINTER.match(d)) and m.group(2) == ctype else d, h)
                        for d, h in k.params]
            if rng.random() < 0.5:
                k.lines = [re.sub(rf"\b{ctype}\b", tparam, l) for l in k.lines]
        if form in ("type-int", "int-type", "int"):
            macro = rng.choice(macros)
            k.lines = [re.sub(rf"\b{macro}\b", iparam, l) for l in k.lines]
        if form == "type":
            k.template = f"template <typename {tparam}>\n"
            targs = f"<{ctype}>" if rng.random() < 0.5 else ""
        elif form == "type-int":
            k.template = f"template <typename {tparam}, int {iparam}>\n"
            targs = f"<{ctype}, {macro}>"
        elif form == "int-type":
            k.template = f"template <int {iparam}, typename {tparam}>\n"
            targs = f"<{macro}>" if rng.random() < 0.6 else f"<{macro}, {ctype}>"
        else:
            k.template = f"template <int {iparam}>\n"
            targs = f"<{macro}>"
        k.tparams = [tparam] if "typename" in k.template else []
        k.tvalues = {tparam: ctype} if k.tparams else {}
        for n in _launch_lines(b, k):
            b.main[n] = re.sub(rf"(?<![\w]){k.name}(?=<<<)", f"{k.name}{targs}", b.main[n],
                               count=1)
        changed = True
    return changed


def c_alias(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, list(b.kernels)):
        text = "\n".join(d for d, _ in k.params) + "\n" + "\n".join(k.lines)
        types = [t for t in ("float", "double", "int") if re.search(rf"\b{t}\b", text)]
        if not types:
            continue
        ctype = rng.choice(types)
        base = {"float": "real", "double": "real_t", "int": "index_t"}[ctype]
        name = next((a for a, t in b.aliases.items() if t == ctype), None)
        if name is None:
            name = b.fresh(base)
            b.aliases[name] = ctype
            b.prelude.append(f"typedef {ctype} {name};" if rng.random() < 0.25 else
                             f"using {name} = {ctype};")
        k.params = [(re.sub(rf"\b{ctype}\b", name, d), h) for d, h in k.params]
        k.lines = [re.sub(rf"\b{ctype}\b", name, l) for l in k.lines]
        changed = True
    return changed


_DECL = re.compile(r"^(\s*)(const )?([A-Za-z_]\w*) (\*?)(\w+) = (.+);\s*$")
_FOR_DECL = re.compile(r"^(\s*for \()int (\w+) = ([^;]+);")
_LITERAL_TYPE = (("float", re.compile(r"^-?\d+\.\d*f$")), ("double", re.compile(r"^-?\d+\.\d*$")),
                 ("int", re.compile(r"^-?\d+$")))


def _types_of(b, k) -> set[str]:
    return set(SCALARS) | set(b.aliases) | set(k.tparams)


def c_auto(b, rng: random.Random, seed: int) -> bool:
    changed = False
    structs = set(b.struct_names)
    for k in _pick(rng, list(b.kernels), 0.8):
        scalars = _types_of(b, k)
        for n, line in enumerate(k.lines):
            m = _DECL.match(line)
            if m and len(_top_level(m.group(6))) == 1 and rng.random() < 0.7:
                indent, const, ctype, star, name, init = m.groups()
                rest = k.lines[n + 1:]
                if star and ctype in structs:
                    k.lines[n] = f"{indent}{const or ''}auto *{name} = {init};"
                elif star:
                    continue
                elif ctype in structs:
                    k.lines[n] = f"{indent}{const or ''}auto {name} = {init};"
                elif ctype in scalars:
                    literal = next((t for t, p in _LITERAL_TYPE if p.match(init.strip())), None)
                    value = init if literal == ctype else \
                        (f"static_cast<{ctype}>({init})" if rng.random() < 0.7
                         else f"({ctype})({init})")
                    if not const and not _assigned_later(rest, name) and rng.random() < 0.5:
                        const = "const "
                    k.lines[n] = f"{indent}{const or ''}auto {name} = {value};"
                else:
                    continue
                changed = True
                continue
            m = _FOR_DECL.match(line)
            if m and rng.random() < 0.5:
                init = m.group(3).strip()
                value = init if re.fullmatch(r"-?\d+", init) else f"static_cast<int>({init})"
                k.lines[n] = line[:m.start()] + f"{m.group(1)}auto {m.group(2)} = {value};" + \
                    line[m.end():]
                changed = True
    return changed


def c_constexpr(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, list(b.kernels)):
        body = "\n".join(k.lines)
        macros = sorted(n for n in _macro_names(b) if re.search(rf"\b{n}\b", body))
        floats = re.findall(r"(?<![\w.])(\d+\.\d+f)\b", body)
        if macros and (not floats or rng.random() < 0.7):
            macro = rng.choice(macros)
            local = b.fresh(f"{macro.lower()}_c")
            k.lines = [re.sub(rf"\b{macro}\b", local, l) for l in k.lines]
            k.lines.insert(0, f"constexpr int {local} = {macro};")
        elif floats:
            value = rng.choice(floats)
            local = b.fresh("weight_c")
            pattern = re.compile(rf"(?<![\w.]){re.escape(value)}\b")
            k.lines = [pattern.sub(local, l) for l in k.lines]
            k.lines.insert(0, f"constexpr float {local} = {value};")
        else:
            continue
        changed = True
    return changed


_CCAST = re.compile(r"\((const )?([A-Za-z_]\w*)\)")


def c_static_cast(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, list(b.kernels), 0.8):
        scalars = _types_of(b, k)
        did = False
        for n, line in enumerate(k.lines):
            pos = 0
            while True:
                m = _CCAST.search(line, pos)
                if m is None:
                    break
                pos = m.end()
                if m.group(2) not in scalars or m.group(1):
                    continue
                end = _operand_end(line, m.end())
                if end < 0:
                    continue
                operand = line[m.end():end].strip()
                if operand.startswith("(") and _closing(operand, 0) == len(operand) - 1:
                    operand = operand[1:-1]
                new = f"static_cast<{m.group(2)}>({operand})"
                line = line[:m.start()] + new + line[end:]
                pos = m.start() + len(new)
                did = True
            k.lines[n] = line
        if not did:
            for n, line in enumerate(k.lines):
                m = re.match(r"^(\s*(?:const )?(int|long|unsigned) \w+ = )(.+);\s*$", line)
                if m and ("Idx" in line or "Dim" in line) and len(_top_level(m.group(3))) == 1:
                    k.lines[n] = f"{m.group(1)}static_cast<{m.group(2)}>({m.group(3)});"
                    did = True
                    break
        changed |= did
    return changed


def _value_reads(k, line: str, types: tuple[str, ...]) -> list[tuple[int, int, str, str]]:
    """(start, end, array, type) of the reads `A[e]` of pointer parameters of `types`
    on the right of an assignment line, outside subscripts and calls (values, never an
    index or a bound), not of a struct's field."""
    m = _ASSIGN.match(line)
    if not m or m.group(2).split("[")[0] in ("if", "for", "while", "return"):
        return []
    start = m.start(4)
    pointers = _pointer_params(k)
    out = []
    for r in re.finditer(r"(?<![\w.>])(\w+)\[", line):
        if r.start() < start or r.group(1) not in pointers:
            continue
        ctype = pointers[r.group(1)][0]
        if ctype not in types or _depth_at(line[start:], r.start() - start) != 0:
            continue
        close = _closing(line, r.end() - 1)
        if close < 0 or line[close + 1:close + 2] in ("[", ".") or \
                line[close + 1:close + 3] == "->":
            continue
        out.append((r.start(), close + 1, r.group(1), ctype))
    return out


def c_std_math(b, rng: random.Random, seed: int) -> bool:
    changed = False
    calls = {"fabsf(": "std::fabs(", "fabs(": "std::fabs(", "fminf(": "::min(",
             "fmaxf(": "::max(", "fmin(": "::min(", "fmax(": "::max(", "min(": "::min(",
             "max(": "::max("}
    for k in _pick(rng, list(b.kernels)):
        did = False
        for n, line in enumerate(k.lines):
            new = re.sub(r"(?<![\w:])(fabsf|fabs|fminf|fmaxf|fmin|fmax|min|max)\(",
                         lambda m: calls[m.group(0)], line)
            if new != line:
                k.lines[n] = new
                did = True
        if not did:
            for n, line in enumerate(k.lines):
                reads = _value_reads(k, line, ("float", "double", "int"))
                if not reads:
                    continue
                s, e, _, ctype = rng.choice(reads)
                read = line[s:e]
                wrapped = f"std::fabs({read})" if ctype != "int" else \
                    rng.choice((f"::max({read}, -2147483647 - 1)", f"::min({read}, 2147483647)"))
                k.lines[n] = line[:s] + wrapped + line[e:]
                did = True
                break
        changed |= did
    # on the host: a grid of macros kept at least 1, a block at most 1024
    for n, line in enumerate(b.main):
        m = _LAUNCH.match(line)
        if not m or rng.random() < 0.5:
            continue
        config = _top_level(m.group(4))
        grid, block = config[0], config[1]
        if _only_macros(b, grid) and not grid.startswith("dim3") and "," not in grid:
            config[0] = f"std::max({grid}, 1)"
        elif re.fullmatch(r"\d+", block):
            config[1] = f"std::min({block}, 1024)"
        else:
            continue
        b.main[n] = f"{m.group(1)}{m.group(2)}<<<{', '.join(config)}>>>({m.group(5)});"
        b.host_includes.add("algorithm")
        changed = True
    return changed


def c_device_helper(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, list(b.kernels)):
        forms = []
        for n, line in enumerate(k.lines):
            m = _ASSIGN.match(line)
            if m and m.group(3) in ("+=", "-=", "*=") and \
                    m.group(2).split("[")[0] not in ("if", "for", "while", "return"):
                forms.append(("reference", n))
            if _value_reads(k, line, ("float", "double")):
                forms.append(("value", n))
            if _value_reads(k, line, ("float", "double", "int")):
                forms.append(("pointer", n))
            if _value_reads(k, line, ("float", "double")):
                forms.append(("thread", n))
        if not forms:
            continue
        form, n = rng.choice(forms)
        line = k.lines[n]
        if form == "reference":
            m = _ASSIGN.match(line)
            op = {"+=": "add", "-=": "sub", "*=": "mul"}[m.group(3)]
            name = b.fresh(f"{op}_to")
            target_type = _type_of_target(b, k, m.group(2))
            if target_type not in set(SCALARS) | set(b.aliases) or rng.random() < 0.5:
                k.before += (f"template <typename Acc, typename Val>\n__device__ inline void "
                             f"{name}(Acc &a, Val v) {{ a {m.group(3)} v; }}\n\n")
                k.lines[n] = f"{m.group(1)}{name}({m.group(2)}, {m.group(4)});"
            else:
                # both sides of one type, the value converted first
                k.before += (f"__device__ __forceinline__ void {name}({target_type} &a, "
                             f"const {target_type} &v)\n{{\n  a {m.group(3)} v;\n}}\n\n")
                k.lines[n] = f"{m.group(1)}{name}({m.group(2)}, static_cast<{target_type}>" \
                             f"({m.group(4)}));"
        elif form == "value":
            s, e, _, ctype = rng.choice(_value_reads(k, line, ("float", "double")))
            name = b.fresh("twice")
            k.before += f"__device__ inline {ctype} {name}({ctype} v)\n{{\n  return v + v;\n}}\n\n"
            k.lines[n] = line[:s] + f"{name}({line[s:e]})" + line[e:]
        elif form == "thread":
            # reads a thread index itself, in two statements (no lowering inlines it): a
            # restructured kernel must give threadIdx the same meaning inside it
            s, e, _, ctype = rng.choice(_value_reads(k, line, ("float", "double")))
            name = b.fresh("lane_shift")
            axis = rng.choice(("x", "y"))
            k.before += (f"__device__ {ctype} {name}({ctype} v)\n{{\n  {ctype} r = v;\n"
                         f"  r += ({ctype})(threadIdx.{axis} % 3);\n  return r;\n}}\n\n")
            k.lines[n] = line[:s] + f"{name}({line[s:e]})" + line[e:]
        else:
            s, e, array, ctype = rng.choice(_value_reads(k, line, ("float", "double", "int")))
            name = b.fresh("load")
            index = line[line.index("[", s) + 1:e - 1]
            k.before += (f"template <typename Elem, typename Index>\n__device__ inline Elem "
                         f"{name}(const Elem *p, Index e) {{ return p[e]; }}\n\n")
            k.lines[n] = line[:s] + f"{name}({array}, {index})" + line[e:]
        changed = True
    return changed


def _type_of_target(b, k, target: str) -> str | None:
    """The type of an assignment's target: a pointer parameter's element or a local
    scalar declared in the kernel."""
    name = target.split("[")[0]
    pointers = _pointer_params(k)
    if "[" in target:
        return pointers[name][0] if name in pointers else None
    for line in k.lines:
        m = re.match(rf"^\s*(?:const )?([A-Za-z_]\w*) {re.escape(name)} = ", line)
        if m and m.group(1) in _types_of(b, k):
            return m.group(1)
    return None


def c_reinterpret_cast(b, rng: random.Random, seed: int) -> bool:
    changed = False
    # rarely: polycoal does not read `cudaMalloc(reinterpret_cast<void **>(&d), ...)`
    # as an allocation yet (frontend/host.py), and leaves the kernels unchanged
    if rng.random() < 0.3:
        b.malloc_cast = "reinterpret"
        changed = True
    for k in b.kernels:
        for n, (decl, host) in enumerate(k.params):
            m = re.fullmatch(r"\((\w+ \(\*\)\[[^\]]+\])\)(\w+)", host)
            if m:
                k.params[n] = (decl, f"reinterpret_cast<{m.group(1)}>({m.group(2)})")
                changed = True
    for k in _pick(rng, list(b.kernels)):
        for n, line in enumerate(k.lines):
            new = re.sub(r"\(\((const \w+ \*)\)(\w+)\)", r"reinterpret_cast<\1>(\2)", line)
            if new != line:
                k.lines[n] = new
                changed = True
        reads = [(n, r) for n, line in enumerate(k.lines)
                 for r in _value_reads(k, line, ("float", "double", "int"))]
        # half the time: polycoal reads `((const float *)A)[e]` as outside the model
        if reads and rng.random() < 0.5:
            n, (s, e, array, ctype) = rng.choice(reads)
            line = k.lines[n]
            k.lines[n] = line[:s] + f"reinterpret_cast<const {ctype} *>({array})" + \
                line[s + len(array):]
            changed = True
    return changed


def c_unroll(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in b.kernels:
        n = 0
        while n < len(k.lines):
            line = k.lines[n]
            if re.match(r"^\s*for \(", line) and _statement_start(k.lines, n) and \
                    rng.random() < 0.7:
                indent = line[:len(line) - len(line.lstrip())]
                k.lines.insert(n, indent + rng.choice(("#pragma unroll", "#pragma unroll",
                                                       "#pragma unroll 4", "#pragma unroll 1")))
                changed = True
                n += 1
            n += 1
    return changed


def c_ifdef(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, list(b.kernels)):
        candidates = []
        pointers = _pointer_params(k)
        for n, line in enumerate(k.lines):
            m = _ASSIGN.match(line)
            if m and "[" in m.group(2) and m.group(3) == "=" and \
                    pointers.get(m.group(2).split("[")[0], ("", False))[0] in \
                    {"float", "double", "int"} | set(b.aliases) | set(k.tparams):
                candidates.append(n)
        if not candidates:
            continue
        n = rng.choice(candidates)
        m = _ASSIGN.match(k.lines[n])
        macro = b.fresh("PC_ALTERNATIVE")
        defined = rng.random() < 0.5
        if defined:
            b.prelude.append(f"#define {macro} 1")
        other = f"{m.group(1)}{m.group(2)} = ({m.group(4)}) + ({m.group(4)});"
        taken, not_taken = k.lines[n], other
        if rng.random() < 0.5:
            first, second = (taken, not_taken) if defined else (not_taken, taken)
            block = [f"#ifdef {macro}", first, "#else", second, "#endif"]
        else:
            first, second = (not_taken, taken) if defined else (taken, not_taken)
            block = [f"#ifndef {macro}", first, "#else", second, "#endif"]
        k.lines[n:n + 1] = block
        changed = True
    if rng.random() < 0.5:
        lines = [n for n, l in enumerate(b.main) if _LAUNCH.match(l)]
        if lines:
            n = rng.choice(lines)
            indent = _LAUNCH.match(b.main[n]).group(1)
            macro = b.fresh("PC_CHECK_LAUNCHES")
            if rng.random() < 0.5:
                b.prelude.append(f"#define {macro}")
            b.main[n + 1:n + 1] = [f"#ifdef {macro}",
                                   f"{indent}if (cudaDeviceSynchronize() != cudaSuccess) "
                                   f"printf(\"launch failed\\n\");", "#endif"]
            changed = True
    return changed


def _constant_components(b, parts: list[str]) -> bool:
    return all(re.fullmatch(r"[\w\s+\-*/()]*", p) and _only_macros(b, p) for p in parts)


def _spell(b, rng: random.Random, what: str, piece: str, indent: str) -> tuple[list[str], str]:
    """Declarations of a variable for one piece of a launch's configuration, and its
    name."""
    m = re.fullmatch(r"dim3\((.*)\)", piece)
    parts = _top_level(m.group(1)) if m else [piece]
    name = b.fresh(what)
    forms = ["ctor", "assign", "fields", "const"]
    if _constant_components(b, parts):
        forms += ["brace", "copy-list"]
    if len(parts) == 1:
        forms.append("int")
    form = rng.choice(forms)
    joined = ", ".join(parts)
    if form == "ctor":
        return [f"{indent}dim3 {name}({joined});"], name
    if form == "const":
        return [f"{indent}const dim3 {name}({joined});"], name
    if form == "assign":
        return [f"{indent}dim3 {name} = dim3({joined});"], name
    if form == "brace":
        return [f"{indent}dim3 {name}{{{joined}}};"], name
    if form == "copy-list":
        return [f"{indent}dim3 {name} = {{{joined}}};"], name
    if form == "int":
        return [f"{indent}{rng.choice(('int', 'unsigned', 'const int'))} {name} = {joined};"], name
    lines = [f"{indent}dim3 {name};"]
    lines += [f"{indent}{name}.{axis} = {p};" for axis, p in zip("xyz", parts)]
    return lines, name


def c_dim3(b, rng: random.Random, seed: int) -> bool:
    changed = False
    n = 0
    while n < len(b.main):
        m = _LAUNCH.match(b.main[n])
        if not m or not _statement_start(b.main, n) or rng.random() < 0.3:
            n += 1
            continue
        indent, callee, _, config, args = m.groups()
        pieces = _top_level(config)
        declarations = []
        which = rng.choice(("both", "grid", "block"))
        for q, what in ((0, "grid"), (1, "block")):
            if which not in ("both", what) or \
                    re.fullmatch(r"[A-Za-z_]\w*", pieces[q]) and pieces[q] not in _macro_names(b):
                continue
            lines, name = _spell(b, rng, what, pieces[q], indent)
            declarations += lines
            pieces[q] = name
        if not declarations:
            n += 1
            continue
        b.main[n:n + 1] = declarations + [f"{indent}{callee}<<<{', '.join(pieces)}>>>({args});"]
        n += len(declarations) + 1
        changed = True
    return changed


def c_host_template(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, list(b.kernels)):
        lines = _launch_lines(b, k)
        if not lines:
            continue
        pointers = _pointer_params(k)
        tparams = k.tparams + (["ElemT"] if "ElemT" in k.template else [])
        elem = [t for t, _ in pointers.values() if t in tparams] or \
            [t for t, _ in pointers.values() if t in ("float", "double", "int") or t in b.aliases]
        if not elem:
            continue
        ctype = rng.choice(sorted(set(elem)))
        host_t = b.fresh("HostT")
        params = []
        for decl, _ in k.params:
            m = _POINTER.match(decl)
            if m and m.group(2) == ctype or m and m.group(2) in tparams:
                params.append(f"{m.group(1) or ''}{host_t} *{m.group(4)}")
            else:
                params.append(re.sub(r"\b(ElemT|" + "|".join(tparams or ["ElemT"]) + r")\b",
                                     host_t, decl))
        launches = [_LAUNCH.match(b.main[n]) for n in lines]
        callees = {l.group(2) for l in launches}
        if len(callees) != 1:
            continue
        callee = callees.pop()
        names = ", ".join(param_name(d) for d in params)
        name = b.fresh(f"run_{k.name}")
        config = config_of_parameters(b, k, launches)
        inline = config is not None and rng.random() < 0.7
        if inline:
            signature = ", ".join(params)
            launch = f"{callee}<<<{config}>>>({names});"
        else:
            signature = ", ".join(["dim3 grid", "dim3 block"] + params)
            extra = "".join(", " + p for p in _top_level(launches[0].group(4))[2:])
            launch = f"{callee}<<<grid, block{extra}>>>({names});"
        extras = {tuple(_top_level(l.group(4))[2:]) for l in launches}
        if not inline and len(extras) > 1:
            continue
        static = "static " if rng.random() < 0.5 else ""
        b.host_functions.append(f"template <typename {host_t}>\n{static}void {name}({signature})"
                                f"\n{{\n  {launch}\n}}\n")
        for n, l in zip(lines, launches):
            pieces = _top_level(l.group(4))
            call_args = ([] if inline else pieces[:2]) + [a for a in _top_level(l.group(5))]
            b.main[n] = f"{l.group(1)}{name}({', '.join(call_args)});"
        changed = True
    return changed


def c_header(b, rng: random.Random, seed: int) -> bool:
    movable = [k for k in b.kernels if not _synchronises(k) and "<<<" not in k.after]
    chosen = _pick(rng, movable, 0.7)
    if not chosen:
        return False
    name = f"kernels_{seed}.cuh"
    for k in chosen:
        k.header = name
    return True


# ------------------------------------------------- cooperative groups, lambdas, templates

def _local_name(b, k, base: str) -> str:
    """A fresh name that no line of the kernel (or its parameters) uses."""
    text = "\n".join(k.lines) + "\n" + "\n".join(d for d, _ in k.params) + k.before
    while True:
        name = b.fresh(base)
        if not re.search(rf"\b{name}\b", text):
            return name


def _top_level_points(lines: list[str]) -> list[int]:
    """Indices n at which a statement may be put before lines[n] (n == len(lines): at the
    end) in the kernel's outermost block, where every thread arrives: no return before
    it, no open bracket, not after a directive or between an `if` and its `else`."""
    points, depth = [], 0
    for n in range(len(lines) + 1):
        if n > 0:
            depth += _depth_at(lines[n - 1], len(lines[n - 1]))
            if re.search(r"\breturn\b", lines[n - 1]):
                break
        if depth != 0 or not _statement_start(lines, n):
            continue
        prev = next((l.strip() for l in reversed(lines[:n]) if l.strip()), "")
        if prev.startswith("#") or n < len(lines) and re.match(r"\s*(else\b|#)", lines[n]):
            continue
        points.append(n)
    return points


def c_cg_barrier(b, rng: random.Random, seed: int) -> bool:
    changed = False
    full = "cooperative_groups" if rng.random() < 0.2 else "cg"
    for k in _pick(rng, list(b.kernels), 0.5):
        barriers = [n for n, l in enumerate(k.lines) if l.strip() == "__syncthreads();"]
        if barriers:
            n = rng.choice(barriers)
            indent = k.lines[n][:len(k.lines[n]) - len(k.lines[n].lstrip())]
            del k.lines[n]
        else:
            if "__syncthreads" in "\n".join(k.lines):
                continue            # one under a condition or in an expression: kept
            points = _top_level_points(k.lines)
            if not points:
                continue
            n, indent = rng.choice(points), ""
        form = rng.choice(("member", "member", "free", "direct"))
        if form == "direct":
            k.lines.insert(n, f"{indent}{full}::this_thread_block().sync();")
        else:
            handle = _local_name(b, k, rng.choice(("block", "cta", "g")))
            sync = f"{handle}.sync();" if form == "member" else f"{full}::sync({handle});"
            k.lines.insert(n, indent + sync)
            spelled = rng.choice((f"{full}::thread_block", f"{full}::thread_block", "auto",
                                  "const auto"))
            k.lines.insert(0, f"{spelled} {handle} = {full}::this_thread_block();")
        k.includes.add("cooperative_groups.h")
        if full == "cg" and "namespace cg = cooperative_groups;" not in b.prelude:
            b.prelude.append("namespace cg = cooperative_groups;")
        changed = True
    return changed


def c_lambda(b, rng: random.Random, seed: int) -> bool:
    """One kernel (only one: the others stay transformable) reads a value through a
    lambda; polycoal reads its statement as opaque and must leave the kernel as it is."""
    kernels = list(b.kernels)
    rng.shuffle(kernels)
    for k in kernels:
        types = ("float", "double", "int") + tuple(_type_params(k))
        reads = [(n, r) for n, line in enumerate(k.lines) for r in _value_reads(k, line, types)]
        if not reads or not _statement_start(k.lines, 0):
            continue
        n, (s, e, array, ctype) = rng.choice(reads)
        line = k.lines[n]
        read = line[s:e]
        index = line[line.index("[", s) + 1:e - 1]
        name = _local_name(b, k, rng.choice(("f", "op", "value_of", "load")))
        forms = ["identity", "generic", "load", "load-value"]
        if ctype in ("float", "double"):
            forms.append("scale")
        form = rng.choice(forms)
        if form == "identity":
            definition = f"auto {name} = [](const {ctype} v) {{ return v; }};"
            call = f"{name}({read})"
        elif form == "generic":
            definition = f"const auto {name} = [](auto v) {{ return v; }};"
            call = f"{name}({read})"
        elif form == "load":
            definition = f"auto {name} = [&](auto e) {{ return {array}[e]; }};"
            call = f"{name}({index})"
        elif form == "load-value":
            definition = f"auto {name} = [=](long e) -> {ctype} {{ return {array}[e]; }};"
            call = f"{name}({index})"
        else:           # doubled then halved: the same value for the programs' values
            two, half = ("2.0f", "0.5f") if ctype == "float" else ("2.0", "0.5")
            definition = f"auto {name} = [&]({ctype} v) {{ return v * {two}; }};"
            call = f"({name}({read}) * {half})"
        k.lines[n] = line[:s] + call + line[e:]
        k.lines.insert(0, definition)
        if k.name not in b.must_keep:
            b.must_keep.append(k.name)
        return True
    return False


def _type_params(k) -> list[str]:
    """The kernel's template type parameters (the construct's, or the styles family's
    ElemT)."""
    return list(k.tparams) + (["ElemT"] if "typename ElemT" in k.template else [])


def _template_kernels(b, rng: random.Random, seed: int) -> list:
    """The template kernels; where there is none, the template construct makes some."""
    found = [k for k in b.kernels if k.template]
    if not found:
        if c_template(b, rng, seed):
            b.cxx_implied = getattr(b, "cxx_implied", set()) | {"template"}
        found = [k for k in b.kernels if k.template]
    return found


_MINMAX = (("max", re.compile(r"^\s*(\w+) = (?:::)?(?:fmaxf|fmax|max)\(")),
           ("min", re.compile(r"^\s*(\w+) = (?:::)?(?:fminf|fmin|min)\(")),
           ("min", re.compile(r"^\s*(\w+) = \(.* < (\w+)\) \? .* : (\w+);")),
           ("max", re.compile(r"^\s*(\w+) = (\w+) > .* \? (\w+) : .*;")),
           ("max", re.compile(r"^\s*if \(.* > (\w+)\) (\w+) = .*;")))


def _reduction_op(lines: list[str], acc: str) -> str | None:
    """"max" or "min" where every update of the accumulator `acc` in `lines` is one."""
    ops = set()
    for line in lines:
        if re.search(rf"(?<![\w.]){acc}\s*(?:[-+*/%&|^]=|\+\+|--)|(?:\+\+|--|&)\s*{acc}\b",
                     line):
            return None
        if not re.search(rf"(?<![\w.]){acc}\s*=(?!=)", line):
            continue
        found = None
        for op, pattern in _MINMAX:
            m = pattern.match(line)
            if m and all(g == acc for g in m.groups()):
                found = op
                break
        if found is None:
            return None
        ops.add(found)
    return ops.pop() if len(ops) == 1 else None


def c_numeric_limits(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, _template_kernels(b, rng, seed)):
        tparams = _type_params(k)
        # a min or max reduction's accumulator: its identity, then its first value
        for n, line in enumerate(k.lines):
            m = _DECL.match(line)
            if not m or m.group(4) or m.group(2):
                continue
            indent, _, ctype, _, acc, init = m.groups()
            op = _reduction_op(k.lines[n + 1:], acc)
            if op is None or ctype not in set(tparams) | {"float", "double", "int"}:
                continue
            limit = "lowest" if op == "max" else "max"
            compare = ">" if op == "max" else "<"
            k.lines[n:n + 1] = [f"{indent}{ctype} {acc} = std::numeric_limits<{ctype}>::"
                                f"{limit}();",
                                f"{indent}{acc} = ({init}) {compare} {acc} ? ({init}) : {acc};"]
            changed = True
            break
        else:
            # a value read clamped by the type's limits (the same value)
            reads = [(n, r) for n, line in enumerate(k.lines)
                     for r in _value_reads(k, line, tuple(tparams) or
                                           ("float", "double", "int"))]
            if not reads:
                continue
            n, (s, e, array, ctype) = rng.choice(reads)
            line = k.lines[n]
            wrapped = rng.choice((f"::max({line[s:e]}, std::numeric_limits<{ctype}>::lowest())",
                                  f"::min({line[s:e]}, std::numeric_limits<{ctype}>::max())"))
            k.lines[n] = line[:s] + wrapped + line[e:]
            changed = True
        k.includes.add("limits")
    return changed


_OFFSET = re.compile(r"[\w\s+\-*/%()]+")


def c_auto_pointer(b, rng: random.Random, seed: int) -> bool:
    changed = False
    for k in _pick(rng, _template_kernels(b, rng, seed)):
        tparams = _type_params(k)
        pointers = _pointer_params(k)
        candidates = []
        for n, line in enumerate(k.lines):
            for s, e, array, ctype in _value_reads(k, line, tuple(tparams) or
                                                   ("float", "double", "int")):
                index = line[line.index("[", s) + 1:e - 1]
                if not _OFFSET.fullmatch(index):
                    continue
                at = n
                while at > 0 and not _statement_start(k.lines, at):
                    at -= 1
                if re.match(r"\s*(else\b|#)", k.lines[at]) or at > 0 and \
                        k.lines[at - 1].strip().startswith("#"):
                    continue
                invariant = _invariant_names(b, k, at)
                terms = _top_level(index, "+")
                held = [set(re.findall(r"[A-Za-z_]\w*", re.sub(r"\.\w+", "", t))) <= invariant
                        for t in terms]
                fixed = [t for t, h in zip(terms, held) if h]
                if not fixed or len(fixed) == len(terms) and rng.random() < 0.7:
                    continue
                rest = [t for t, h in zip(terms, held) if not h] or ["0"]
                candidates.append((n, s, e, array, at, fixed, rest))
        if not candidates:
            continue
        n, s, e, array, at, fixed, rest = rng.choice(candidates)
        row = _local_name(b, k, rng.choice(("row", "base", "p")))
        const = "const " if pointers[array][1] or rng.random() < 0.6 else ""
        indent = k.lines[at][:len(k.lines[at]) - len(k.lines[at].lstrip())]
        line = k.lines[n]
        k.lines[n] = line[:s] + f"{row}[{' + '.join(rest)}]" + line[e:]
        k.lines.insert(at, f"{indent}{const}auto *{row} = {array} + ({' + '.join(fixed)});")
        changed = True
    return changed


def _invariant_names(b, k, at: int) -> set[str]:
    """Names whose value is the same at every line from `at` on: the kernel's scalar
    parameters, the macros, and locals declared at the outermost level before `at` and
    never assigned after their declaration (thread indices)."""
    names = {param_name(d) for d, _ in k.params if "*" not in d and "[" not in d}
    names |= _macro_names(b) | set(re.findall(r"\b[A-Za-z_]\w*\b", " ".join(k.tparams)))
    names |= {"threadIdx", "blockIdx", "blockDim", "gridDim", "long", "int", "unsigned",
              "size_t", "static_cast"}
    depth = 0
    for n, line in enumerate(k.lines[:at]):
        if depth == 0:
            m = re.match(r"^\s*(?:const )?(?:int|long|unsigned|size_t|auto) (\w+) = ([^;]*);\s*$",
                         line)
            if m and not _assigned_later(k.lines[n + 1:], m.group(1)):
                names.add(m.group(1))
        depth += _depth_at(line, len(line))
    return names


FUNCTIONS = {"template": c_template, "host-template": c_host_template, "auto": c_auto,
             "constexpr": c_constexpr, "static-cast": c_static_cast,
             "reinterpret-cast": c_reinterpret_cast, "std-math": c_std_math,
             "alias": c_alias, "unroll": c_unroll, "device-helper": c_device_helper,
             "header": c_header, "dim3": c_dim3, "ifdef": c_ifdef,
             "cg-barrier": c_cg_barrier, "lambda": c_lambda,
             "numeric-limits": c_numeric_limits, "auto-pointer": c_auto_pointer}
