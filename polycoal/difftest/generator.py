"""Random complete CUDA programs in shape families (the differential tester's input).

`generate(seed, family)` is deterministic: a `random.Random(seed)` makes every choice.
Each program has a main that cudaMallocs its arrays, fills them on the host from
constants the generator chose, copies them in, launches its kernels, copies every array
back and prints one checksum line per array:

    CHECK <array> <weighted sum> <weighted sum of magnitudes>

(weights 1..61 from a hash of the index, so that moved elements change the sum). The
generated original is free of races and out-of-bounds accesses (the CPU runtime checks
the latter), except in the family `racy`, whose kernels polycoal must leave alone.

Inputs are small dyadic numbers (multiples of 1/4 below 8 in magnitude, or powers of two
for products), so that sums and products of a few thousand terms are exact in float: a
reassociated reduction gives the same bits unless it divides. The tolerance of each
array is still chosen by the shape (see `Check`), for division and for double.

Families (FAMILIES): plain affine loops; row and column reductions in every spelling;
loop bounds (steps, lower bounds, triangular and empty loops); guards that cut the
thread range; several statements, arrays and kernels; run-time sizes with host-computed
grids; launches in host loops; racy or aliasing kernels (must stay byte-identical); and
near misses outside the model (CSR, data-dependent conditions, while, shared memory,
user-written shuffles, atomics); products (GEMM, SYRK, covariance's triangle: the tiled
products' class) and stencils with reuse; row recurrences (`recurrence`) and rows
updated in place, each trip reading what later trips overwrite (`inplace`); and `styles`: the kernels of another family written as
real C++ code writes them (templates, namespaces, structs of buffers passed by value,
pointer arithmetic, launches through function-like macros, `assert`), which polycoal
reads through Clang (frontend/lower.py). The family runtime includes 2-D launches whose
geometry is known only at run time, with the thread axes to swap (a run-time check).

Over any family's program, `generate(..., constructs=...)` applies C++ constructs
(cxx.py: templates, host templates, auto, constexpr, casts, std:: calls, aliases,
#pragma unroll, __device__ helpers, kernels in a header, dim3 spellings, #ifdef) from a
generator of their own, and `project=True` writes the program as a project (project.py).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from polycoal.difftest.judging import Check

FAMILIES = ("affine", "rowred", "colred", "bounds", "guards", "multi", "runtime",
            "hostloop", "racy", "nearmiss", "styles", "transpose", "product", "stencil",
            "structs", "irregular", "recurrence", "inplace", "unsigned")

SLACK = 4          # extra elements at the end of every array (reads at +1, +2)
FLOAT = {"float": ("f", "fminf", "fmaxf", "fabsf"),
         "double": ("", "fmin", "fmax", "fabs")}


@dataclass
class GeneratedProgram:
    seed: int
    family: str
    source: str
    checks: dict[str, Check]
    must_keep: list[str]             # kernels that must stay byte-identical
    shape: str                       # one line: what was generated
    variant: str = ""                # the shape's sub-kind, for the tables
    # kernel -> option sets under which it may change after all (racing copies along an
    # unread axis: --collapse-redundant-threads runs one copy)
    keep_exempt: dict[str, list[str]] = field(default_factory=dict)
    # the C++ constructs applied (polycoal/difftest/cxx.py), for the tables
    constructs: list[str] = field(default_factory=list)
    # other files of the program's directory (name -> text): headers it includes
    files: dict[str, str] = field(default_factory=dict)
    # project mode (polycoal/difftest/project.py): the project's files (path relative to
    # its root -> text), its translation units and their flags; None for one file
    project: dict | None = None

    def kept_under(self, option: str) -> list[str]:
        """The kernels that must stay byte-identical under `option`."""
        return [k for k in self.must_keep if option not in self.keep_exempt.get(k, [])]


@dataclass(eq=False)
class Size:
    value: int
    k: str                           # its text in kernels
    h: str                           # its text in host code
    param: str | None = None         # kernel parameter for a run-time size ("int n")


@dataclass(eq=False)
class Array:
    name: str
    ctype: str
    dims: list[Size]
    fill: str = "dyadic"             # dyadic | pow2 | positive | int | zero | index:<bound> | linear:<k>
    slack: int = SLACK
    count_value: int = 0
    fields: list[tuple[str, str]] = field(default_factory=list)   # an array of structs:
    #                                  its leaves (path, scalar type); ctype is the struct

    @property
    def d(self) -> str:
        return f"d_{self.name}"

    def count_host(self) -> str:
        return " * ".join(d.h for d in self.dims) + f" + {self.slack}"


@dataclass(eq=False)
class Kernel:
    name: str
    params: list[tuple[str, str]] = field(default_factory=list)   # (declaration, host arg)
    lines: list[str] = field(default_factory=list)
    seen: set = field(default_factory=set)
    template: str = ""               # `template <typename T>\n` (family styles)
    namespace: str = ""
    before: str = ""                 # declarations the kernel needs (a struct)
    after: str = ""                  # definitions after it (a launch macro)
    includes: set = field(default_factory=set)     # headers it needs (<cassert>)
    header: str = ""                 # defined in this header of the program (cxx: header)
    tparams: list = field(default_factory=list)    # its template's type parameters
    tvalues: dict = field(default_factory=dict)    # ... and the types its launches give

    def size(self, s: Size) -> str:
        if s.param and s not in self.seen:
            self.seen.add(s)
            self.params.append((s.param, s.h))
        return s.k

    def array(self, a: Array, const: bool = False, restrict: bool = False,
              two_d: bool = False, host: str | None = None) -> str:
        if a not in self.seen:
            self.seen.add(a)
            q = "const " if const else ""
            if two_d:
                self.params.append((f"{q}{a.ctype} {a.name}[][{a.dims[-1].k}]",
                                    f"({a.ctype} (*)[{a.dims[-1].h}]){host or a.d}"))
            else:
                decl = f"{q}{a.ctype} *__restrict__ {a.name}" if restrict else \
                    f"{q}{a.ctype} *{a.name}"
                self.params.append((decl, host or a.d))
        return a.name

    def scalar(self, decl: str, host: str) -> None:
        self.params.append((decl, host))

    def text(self) -> str:
        sig = ", ".join(p for p, _ in self.params)
        body = "\n".join("  " + l if l else "" for l in self.lines)
        text = f"{self.template}__global__ void {self.name}({sig})\n{{\n{body}\n}}\n"
        if self.namespace:
            text = f"namespace {self.namespace} {{\n\n{text}\n}} // namespace\n"
        return self.before + text + (f"\n{self.after}" if self.after else "")

    def args(self) -> str:
        return ", ".join(h for _, h in self.params)


class Builder:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.defines: list[tuple[str, int]] = []
        self.runtime_decls: list[str] = []
        self.arrays: list[Array] = []
        self.kernels: list[Kernel] = []
        self.main: list[str] = []
        # names of the host helpers and of C/CUDA, which kernels and sizes must not take
        self.names: set[str] = {"fill", "fill_pow2", "checksum", "main", "argc", "argv",
                                "min", "max", "t",
                                # the kernels' thread and loop variables
                                "i", "j", "k", "l", "m", "r", "c"}
        self.must_keep: list[str] = []
        self.keep_exempt: dict[str, list[str]] = {}
        self.reduction_terms = 0           # longest float reduction
        self.reduction_type = "float"
        self.divides = False
        self.shape: list[str] = []
        self.variant = ""
        # the C++ constructs' additions (polycoal/difftest/cxx.py); empty, the program is
        # the one of the generator without them
        self.prelude: list[str] = []           # after the macros: aliases, #defines
        self.host_functions: list[str] = []    # after the kernels: host templates
        self.host_includes: set[str] = set()   # <algorithm>
        self.aliases: dict[str, str] = {}      # `using real = float;`: real -> float
        self.malloc_cast = "c"                 # cudaMalloc((void **)&d) or reinterpret_cast

    # ---- names and sizes
    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}{k}"
        self.names.add(name)
        return name

    def macro(self, base: str, value: int) -> Size:
        name = self.fresh(base)
        self.defines.append((name, value))
        return Size(value, name, name)

    def runtime(self, base: str, value: int, ctype: str | None = None) -> Size:
        """A size known only at run time: a host variable passed as a kernel argument."""
        rng = self.rng
        ctype = ctype or rng.choice(("int", "int", "long", "size_t", "const int", "unsigned"))
        host = self.fresh(base.lower())
        how = rng.choice(("atoi", "argc", "plain", "const"))
        if how == "atoi":
            self.runtime_decls.append(f"int {host} = atoi(\"{value}\");")
        elif how == "argc":
            self.runtime_decls.append(f"int {host} = {value} * argc;   /* argc is 1 */")
        elif how == "const":
            self.runtime_decls.append(f"const int {host} = {value};")
        else:
            self.runtime_decls.append(f"int {host} = {value};")
        return Size(value, host, host, f"{ctype} {host}")

    def size(self, base: str, value: int, runtime: bool = False) -> Size:
        return self.runtime(base, value) if runtime else self.macro(base, value)

    def array(self, base: str, ctype: str, dims: list[Size], fill: str = "dyadic",
              slack: int = SLACK) -> Array:
        a = Array(self.fresh(base), ctype, dims, fill, slack)
        n = 1
        for d in dims:
            n *= d.value
        a.count_value = n + slack
        self.arrays.append(a)
        return a

    def kernel(self, base: str = "k") -> Kernel:
        k = Kernel(self.fresh(base))
        self.kernels.append(k)
        return k

    def note_reduction(self, terms: int, ctype: str, divides: bool = False) -> None:
        if ctype in ("float", "double"):
            self.reduction_terms = max(self.reduction_terms, max(terms, 1))
            if ctype == "float":
                self.reduction_type = "float"
            elif self.reduction_type != "float":
                self.reduction_type = "double"
        self.divides |= divides

    # ---- launches
    def launch(self, k: Kernel, geometry: list[tuple[Size, int]], indent: str = "  ",
               grid_override: list[str] | None = None) -> None:
        """k<<<grid, block>>>(args) with one block size per thread axis (x, y, z order)
        and a grid covering each extent, written in one of the usual ways."""
        rng = self.rng
        grids, blocks = [], []
        if len(geometry) == 1 and geometry[0][0].param and not grid_override and \
                rng.random() < 0.5:
            # the most common launch: k<<<(n + 255) / 256, 256>>>(..., n)
            self.main.append(f"{indent}{k.name}<<<({geometry[0][0].h} + 255) / 256, 256>>>"
                             f"({k.args()});")
            return
        for n, (extent, b) in enumerate(geometry):
            if grid_override and grid_override[n]:
                grids.append(grid_override[n])
            else:
                form = rng.choice(("ceil", "ceil", "ceil", "plus1", "exact"))
                if form == "exact" and extent.value % b == 0:
                    grids.append(f"{extent.h} / {b}")
                elif form == "plus1":
                    grids.append(f"{extent.h} / {b} + 1")
                else:
                    grids.append(f"({extent.h} + {b - 1}) / {b}")
            blocks.append(str(b))
        style = rng.choice(("inline", "dim3", "vars", "shm", "stream"))
        if len(geometry) == 1 and style == "inline":
            cfg = f"{grids[0]}, {blocks[0]}"
        elif style == "vars":
            g, bl = self.fresh("grid"), self.fresh("block")
            self.main.append(f"{indent}dim3 {bl}({', '.join(blocks)});")
            self.main.append(f"{indent}dim3 {g}({', '.join(grids)});")
            cfg = f"{g}, {bl}"
        elif style == "shm":
            cfg = f"dim3({', '.join(grids)}), dim3({', '.join(blocks)}), 0"
        elif style == "stream":
            cfg = f"dim3({', '.join(grids)}), dim3({', '.join(blocks)}), 0, 0"
        else:
            cfg = f"dim3({', '.join(grids)}), dim3({', '.join(blocks)})"
        self.main.append(f"{indent}{k.name}<<<{cfg}>>>({k.args()});")

    # ---- the program
    def render(self) -> str:
        rng = self.rng
        out = ["#include <cstdio>", "#include <cstdlib>", "#include <cmath>",
               "#include <cuda_runtime.h>"]
        out += [f"#include <{h}>" for h in sorted({h for k in self.kernels for h in k.includes}
                                                  | self.host_includes)]
        includes = list(out)
        out.append("")
        self.guarded = set()             # macros written under #ifndef (a -D may set them)
        for name, value in self.defines:
            if rng.random() < 0.3:
                out += [f"#ifndef {name}", f"#define {name} {value}", "#endif"]
                self.guarded.add(name)
            else:
                out.append(f"#define {name} {value}")
        defines = out[len(includes) + 1:]
        out.append("")
        if self.prelude:
            out += self.prelude + [""]
        included = set()
        for k in self.kernels:
            if k.header:
                if k.header not in included:
                    included.add(k.header)
                    out += [f'#include "{k.header}"', ""]
                continue
            out.append(k.text())
        out += self.host_functions
        start = len(out)
        out += HELPERS.splitlines()
        out.append("int main(int argc, char **argv)")
        out.append("{")
        out.append("  (void)argv;")
        out += ["  " + d for d in self.runtime_decls]
        for a in self.arrays:
            cnt = a.count_host()
            out.append(f"  {a.ctype} *h_{a.name} = ({a.ctype} *)malloc(sizeof({a.ctype}) * "
                       f"({cnt}));")
            out += [f"  {line}" for line in self._fill_fields(a)] if a.fields else \
                [f"  {self._fill(a)}"]
            out.append(f"  {a.ctype} *{a.d};")
            out.append(f"  cudaMalloc({self.malloc_pointer(a)}, sizeof({a.ctype}) * ({cnt}));")
            out.append(f"  cudaMemcpy({a.d}, h_{a.name}, sizeof({a.ctype}) * ({cnt}), "
                       "cudaMemcpyHostToDevice);")
        out += self.main
        out.append("  cudaDeviceSynchronize();")
        out.append("  if (cudaGetLastError() != cudaSuccess) printf(\"launch error\\n\");")
        for a in self.arrays:
            cnt = a.count_host()
            out.append(f"  cudaMemcpy(h_{a.name}, {a.d}, sizeof({a.ctype}) * ({cnt}), "
                       "cudaMemcpyDeviceToHost);")
            if a.fields:
                out += [f"  {{ double *v = (double *)malloc(sizeof(double) * ({cnt})); "
                        f"for (long t = 0; t < (long)({cnt}); t++) v[t] = (double)h_{a.name}[t]"
                        f".{path}; checksum(\"{a.name}.{path}\", v, (long)({cnt})); free(v); }}"
                        for path, _ in a.fields]
                continue
            out.append(f"  checksum(\"{a.name}\", h_{a.name}, (long)({cnt}));")
        for a in self.arrays:
            out.append(f"  cudaFree({a.d});")
            out.append(f"  free(h_{a.name});")
        out.append("  return 0;")
        out.append("}")
        # the pieces, for the project's files (project.py)
        self.parts = {"includes": includes, "defines": defines, "main": out[start:]}
        return "\n".join(out) + "\n"

    def malloc_pointer(self, a: Array) -> str:
        return f"reinterpret_cast<void **>(&{a.d})" if self.malloc_cast == "reinterpret" \
            else f"(void **)&{a.d}"

    def headers(self) -> dict[str, str]:
        """name -> text of the headers of the program's directory (cxx: header): the
        kernels defined there, in their order."""
        out: dict[str, list[str]] = {}
        for k in self.kernels:
            if k.header:
                out.setdefault(k.header, []).append(k.text())
        texts = {}
        for name, kernels in out.items():
            guard = re.sub(r"\W", "_", name).upper()
            texts[name] = (f"#ifndef {guard}\n#define {guard}\n\n" + "\n".join(kernels) +
                           f"\n#endif // {guard}\n")
        return texts

    @property
    def struct_names(self) -> set[str]:
        names = set()
        for k in self.kernels:
            names |= set(re.findall(r"\bstruct\s+(\w+)\s*\{", k.before))
            names |= set(re.findall(r"\}\s*(\w+)\s*;", k.before))
        return names

    def _fill_fields(self, a: Array) -> list[str]:
        """Every field of an array of structs filled like a scalar array: dyadic values
        (small integers for int fields) from the element's index."""
        rng, cnt = self.rng, f"(long)({a.count_host()})"
        lines = [f"for (long t = 0; t < {cnt}; t++) {{"]
        for path, ctype in a.fields:
            mul, add = rng.choice((3, 5, 7, 11, 13)), rng.randrange(0, 97)
            m = rng.choice((7, 9, 13, 17))
            if ctype == "int":
                value = f"(int)((t * {mul} + {add}) % {m}) - {m // 2}"
            else:
                value = f"({ctype})((double)((t * {mul} + {add}) % {m}) * 0.25 - {m // 8})"
            lines.append(f"  h_{a.name}[t].{path} = {value};")
        return lines + ["}"]

    def _fill(self, a: Array) -> str:
        rng = self.rng
        cnt = f"(long)({a.count_host()})"
        mul, add = rng.choice((3, 5, 7, 11, 13, 17, 29, 31)), rng.randrange(0, 97)
        if a.fill == "zero":
            return f"fill(h_{a.name}, {cnt}, 0, 0, 1, 0.0, 0.0);"
        if a.fill == "pow2":
            return f"fill_pow2(h_{a.name}, {cnt}, {mul}, {add});"
        if a.fill == "positive":      # 1 .. 3, for divisors
            return f"fill(h_{a.name}, {cnt}, {mul}, {add}, 9, 0.25, 1.0);"
        if a.fill == "int":
            m = rng.choice((5, 7, 9, 11))
            return f"fill(h_{a.name}, {cnt}, {mul}, {add}, {m}, 1.0, {-(m // 2)}.0);"
        if a.fill.startswith("index:"):
            bound = a.fill.split(":")[1]
            return f"fill(h_{a.name}, {cnt}, {mul}, {add}, {bound}, 1.0, 0.0);"
        if a.fill.startswith("rowptr:"):        # a CSR row pointer: runs of 0 .. m-1
            bound = a.fill.split(":")[1]
            return f"fill_rowptr(h_{a.name}, {cnt}, {mul}, {add}, {bound});"
        if a.fill.startswith("linear:"):
            step = a.fill.split(":")[1]
            return f"fill(h_{a.name}, {cnt}, 1, 0, {cnt} + 1, {step}.0, 0.0);"
        m = rng.choice((7, 9, 13, 17, 31))
        scale = rng.choice((0.25, 0.5, 0.25))
        return f"fill(h_{a.name}, {cnt}, {mul}, {add}, {m}, {scale}, {-(m // 2) * scale});"


HELPERS = r"""
template <typename Elem>
static void fill(Elem *h, long count, long a, long b, long m, double scale, double shift)
{
  for (long t = 0; t < count; t++) h[t] = (Elem)((double)((t * a + b) % m) * scale + shift);
}

template <typename Elem>
static void fill_rowptr(Elem *h, long count, long a, long b, long m)
{
  Elem s = 0;
  for (long t = 0; t < count; t++) { h[t] = s; s += (Elem)((t * a + b) % m); }
}

template <typename Elem>
static void fill_pow2(Elem *h, long count, long a, long b)
{
  for (long t = 0; t < count; t++) {
    long r = (t * a + b) % 5;
    h[t] = (Elem)(r == 0 ? 0.5 : r == 1 ? 2.0 : r == 2 ? -1.0 : 1.0);
  }
}

template <typename Elem>
static void checksum(const char *name, const Elem *h, long count)
{
  double s = 0, a = 0;
  for (long t = 0; t < count; t++) {
    double v = (double)h[t], w = (double)((t * 40503L) % 61 + 1);
    s += v * w;
    a += fabs(v) * w;
  }
  printf("CHECK %s %.17g %.17g\n", name, s, a);
}
"""


# ----------------------------------------------------------------- shared pieces

THREAD_VARS = ("i", "j", "k")
BLOCKS_1D = (1, 31, 32, 33, 64, 100, 128, 256, 256, 128)
BLOCKS_2D = ((16, 16), (32, 8), (8, 32), (33, 3), (31, 2), (1, 32), (32, 1), (100, 1),
             (4, 4), (16, 4))
BLOCKS_3D = ((8, 4, 2), (4, 4, 4), (32, 2, 2), (3, 5, 7), (1, 1, 8), (16, 2, 1), (2, 8, 4))
EXTENTS = (1, 7, 31, 32, 33, 64, 100)
LOOP_EXTENTS = (1, 3, 8, 17, 32, 33, 70)


def thread_index(rng: random.Random, var: str, axis: str, ctype: str = "int") -> str:
    form = rng.randrange(4)
    if form == 0:
        e = f"blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}"
    elif form == 1:
        e = f"threadIdx.{axis} + blockIdx.{axis} * blockDim.{axis}"
    elif form == 2:
        e = f"blockDim.{axis} * blockIdx.{axis} + threadIdx.{axis}"
    else:
        e = f"(int)(blockIdx.{axis} * blockDim.{axis}) + (int)threadIdx.{axis}"
    const = "const " if rng.random() < 0.2 else ""
    return f"{const}{ctype} {var} = {e};"


def flat(rng: random.Random, k: Kernel, terms: list[tuple[str, Size]], offset: int = 0) -> str:
    """Row-major linear index of `terms` (var or expression, extent), optionally + offset
    on the fastest dimension."""
    if not terms:
        return str(offset)
    parts = [v for v, _ in terms]
    exts = [k.size(s) for _, s in terms]
    last = parts[-1] if not offset else f"{parts[-1]} + {offset}"
    if len(parts) == 1:
        return last
    form = rng.randrange(3)
    if form == 0 or len(parts) > 3:
        e = parts[0]
        for p, x in zip(parts[1:-1], exts[1:-1]):
            e = f"({e}) * {x} + {p}"
        return f"({e}) * {exts[-1]} + {last}" if len(parts) > 2 else f"{e} * {exts[-1]} + {last}"
    if form == 1:
        strides = []
        for n in range(len(parts)):
            strides.append(" * ".join(exts[n + 1:]))
        pieces = [f"{p} * {s}" if s else p for p, s in zip(parts[:-1], strides[:-1])]
        return " + ".join(pieces + [last])
    # fastest first
    strides = [" * ".join(exts[n + 1:]) for n in range(len(parts))]
    pieces = [f"{s} * {p}" for p, s in zip(parts[:-1], strides[:-1])]
    return " + ".join([last] + pieces[::-1])


def literal(ctype: str, value: float) -> str:
    if ctype == "float":
        return f"{value}f"
    if ctype == "double":
        return f"{value}"
    return str(int(value))


def choose_type(rng: random.Random, weights=(6, 2, 2)) -> str:
    return rng.choices(("float", "double", "int"), weights)[0]


def geometry_blocks(rng: random.Random, nd: int) -> list[int]:
    if nd == 1:
        return [rng.choice(BLOCKS_1D)]
    if nd == 2:
        return list(rng.choice(BLOCKS_2D))
    return list(rng.choice(BLOCKS_3D))


# ----------------------------------------------------------------- reductions

# update spellings: name -> (operator class, template with {a} the accumulator, {e} the term)
SUM_FORMS = {"+=": "{a} += {e};", "a=a+e": "{a} = {a} + {e};", "a=e+a": "{a} = {e} + {a};",
             "-=": "{a} -= {e};", "a=a-e": "{a} = {a} - {e};"}
PROD_FORMS = {"*=": "{a} *= {e};", "a=a*e": "{a} = {a} * {e};", "a=e*a": "{a} = {e} * {a};",
              "/=": "{a} /= {e};"}
MINMAX_FORMS = {"fmin": "{a} = {fmin}({a}, {e});", "fmax": "{a} = {fmax}({e}, {a});",
                "?<": "{a} = ({e} < {a}) ? {e} : {a};", "?>": "{a} = {a} > {e} ? {a} : {e};",
                "if>": "if ({e} > {a}) {a} = {e};"}


def pick_update(rng: random.Random, ctype: str, allow=("sum", "prod", "minmax"),
                weights=None) -> tuple[str, str, str]:
    """(operator class, spelling name, template)."""
    cls = rng.choices(allow, weights or [{"sum": 6, "prod": 2, "minmax": 2}[c] for c in allow])[0]
    forms = {"sum": SUM_FORMS, "prod": PROD_FORMS, "minmax": MINMAX_FORMS}[cls]
    names = list(forms)
    if ctype == "int" and cls == "prod":
        names.remove("/=")
    name = rng.choice(names)
    return cls, name, forms[name]


def render_update(template: str, acc: str, term: str, ctype: str) -> str:
    fmin, fmax = ("min", "max") if ctype == "int" else FLOAT[ctype][1:3]
    return template.format(a=acc, e=term, fmin=fmin, fmax=fmax)


@dataclass
class LoopSpec:
    """for (int v = lo; v < hi; v += step), with its text and trip-count bound."""
    header: str
    max_trips: int
    lo_min: int              # smallest value the counter takes
    hi_max: int              # one past the largest value it takes (bound for indexing)
    shape: str


def loop_spec(rng: random.Random, k: Kernel, var: str, extent: Size, thread: str | None,
              thread_extent: Size | None, kind: str = "plain", lo_size: Size | None = None
              ) -> LoopSpec:
    """A loop over [.., extent) of one of the kinds: plain, step2, step3, lo1, lo3, lo-param,
    tri-lower (v <= thread), tri-upper (v from thread), empty, empty-guarded
    (v < thread - 3), le (v <= extent - 1), reversed."""
    e = k.size(extent)
    n = extent.value
    if kind == "step2" or kind == "step3":
        s = 2 if kind == "step2" else 3
        form = rng.choice(("+=", "=+"))
        inc = f"{var} += {s}" if form == "+=" else f"{var} = {var} + {s}"
        lo = rng.choice((0, 0, 1))
        return LoopSpec(f"for (int {var} = {lo}; {var} < {e}; {inc})",
                        max(0, (n - lo + s - 1) // s), lo, n, kind)
    if kind in ("lo1", "lo3"):
        lo = 1 if kind == "lo1" else 3
        return LoopSpec(f"for (int {var} = {lo}; {var} < {e}; {var}++)", max(0, n - lo), lo, n,
                        kind)
    if kind == "lo-param" and lo_size is not None:
        k.size(lo_size)
        return LoopSpec(f"for (int {var} = {lo_size.k}; {var} < {e}; {var}++)",
                        max(0, n - lo_size.value), lo_size.value, n, kind)
    if kind == "tri-lower" and thread is not None and thread_extent is not None and \
            thread_extent.value <= n:
        return LoopSpec(f"for (int {var} = 0; {var} <= {thread}; {var}++)",
                        thread_extent.value, 0, thread_extent.value, kind)
    if kind == "tri-upper" and thread is not None and thread_extent is not None and \
            thread_extent.value <= n:
        return LoopSpec(f"for (int {var} = {thread}; {var} < {e}; {var}++)", n, 0, n, kind)
    if kind == "empty":
        return LoopSpec(f"for (int {var} = {e}; {var} < {e}; {var}++)", 0, 0, n, kind)
    if kind == "empty-guarded" and thread is not None and thread_extent is not None and \
            thread_extent.value - 3 <= n:
        return LoopSpec(f"for (int {var} = 0; {var} < {thread} - 3; {var}++)",
                        max(0, min(n, thread_extent.value - 3)), 0,
                        min(n, max(0, thread_extent.value - 3)), kind)
    if kind == "le":
        return LoopSpec(f"for (int {var} = 0; {var} <= {e} - 1; {var}++)", n, 0, n, kind)
    if kind == "reversed":
        return LoopSpec(f"for (int {var} = {e} - 1; {var} >= 0; {var}--)", n, 0, n, kind)
    if kind == "long":
        return LoopSpec(f"for (long {var} = 0; {var} < {e}; {var}++)", n, 0, n, kind)
    return LoopSpec(f"for (int {var} = 0; {var} < {e}; {var}++)", n, 0, n, "plain")


LOOP_KINDS = ("plain", "step2", "step3", "lo1", "lo3", "lo-param", "tri-lower", "tri-upper",
              "empty", "empty-guarded", "le", "reversed", "long")


def guard_for(rng: random.Random, k: Kernel, var: str, extent: Size, kind: str
              ) -> tuple[str, int, int]:
    """(condition, first value, one past the last value) of a guard cutting the range of a
    thread variable: full, lo1 (v >= 1), hi3 (v < E - 3), both, mid, ge-return."""
    e = k.size(extent)
    n = extent.value
    if kind == "lo1":
        return f"{var} >= 1 && {var} < {e}", 1, n
    if kind == "hi3":
        return f"{var} < {e} - 3", 0, max(0, n - 3)
    if kind == "both":
        return f"{var} >= 2 && {var} < {e} - 1", 2, max(2, n - 1)
    if kind == "gt":
        return f"{var} > 0 && {var} <= {e} - 1", 1, n
    if kind == "half":
        return f"{var} < {e} / 2", 0, n // 2
    if kind == "mod":
        return f"{var} < {e} && {var} % 2 == 0", 0, n
    return f"{var} < {e}", 0, n


GUARD_KINDS = ("full", "lo1", "hi3", "both", "gt", "half", "mod")


def reduction_kernel(b: Builder, orientation: str = "row", runtime: bool = False,
                     loop_kind: str = "plain", guard_kind: str = "full",
                     update: tuple[str, str, str] | None = None, private: bool | None = None,
                     ctype: str | None = None, rows: int | None = None,
                     cols: int | None = None, two_acc: bool = False,
                     after: str = "none") -> Kernel:
    """One thread per output element y[t] (t < T) and a loop over the other dimension of a
    row-major matrix: a row reduction (y[i] op= A[i*M + j] * x[j], loads a row apart along
    the threads) or a column reduction (y[j] op= A[i*N + j] * x[i], coalesced but starved).
    Optionally through a private scalar, with statements before and after the loop.

    `after` (sums only) adds work beside the reduction, as column kernels do: "update", a
    second loop B[i][j] = A[i][j] * y[j] (a column scaled by its sum); "inplace", a second
    loop A[i][j] -= x[i] * y[j] (gramschmidt's update); "fused", B[i][j] = A[i][j] + x[i]
    in the reduction's own loop (distributable); "running" (private accumulators), the
    partial sum stored in the loop, B[i][j] = s (a prefix sum: not distributable)."""
    rng = b.rng
    ctype = ctype or choose_type(rng)
    update = update or pick_update(rng, ctype)
    cls, spelling, template = update
    private = rng.random() < 0.4 if private is None else private
    if cls != "sum" or orientation != "col" or two_acc or (after == "running" and not private):
        after = "none"
    if orientation == "row":
        t_value = rows or rng.choice(EXTENTS)
        l_value = cols or rng.choice(LOOP_EXTENTS + (100, 128))
    else:
        t_value = cols or rng.choice(EXTENTS)
        l_value = rows or rng.choice((33, 100, 1024, 1100, 1500, 2048))
    if cls == "prod":
        l_value = min(l_value, 40)      # products of 40 powers of two stay in range
    T = b.size("N", t_value, runtime and rng.random() < 0.7)
    L = b.size("M", l_value, runtime and rng.random() < 0.7)
    tv, lv = ("i", "j") if orientation == "row" else ("j", "i")
    k = b.kernel("row_reduce" if orientation == "row" else "col_reduce")
    restrict = rng.random() < 0.3
    y = b.array("y", ctype, [T], "zero" if rng.random() < 0.5 and cls == "sum" else
                ("pow2" if cls == "prod" else "dyadic" if ctype != "int" else "int"))
    fill = {"prod": "pow2", "sum": "dyadic", "minmax": "dyadic"}[cls]
    if spelling == "/=":
        fill = "positive"
    if ctype == "int" and fill == "dyadic":
        fill = "int"
    A = b.array("A", ctype, [L, T] if orientation == "col" else [T, L], fill)
    x = b.array("x", ctype, [L], "pow2" if cls == "prod" else ("int" if ctype == "int" else "dyadic"))
    yn = k.array(y, restrict=restrict)
    shift_wanted = rng.random() < 0.6
    An = k.array(A, const=after != "inplace" and rng.random() < 0.5, restrict=restrict)
    xn = k.array(x, const=rng.random() < 0.5, restrict=restrict)
    lo_size = None
    if loop_kind == "lo-param":
        lo_size = b.runtime("LO", rng.choice((1, 2, 5)), "int")
    k.lines.append(thread_index(rng, tv, "x"))
    cond, t_lo, t_hi = guard_for(rng, k, tv, T, guard_kind)
    spec = loop_spec(rng, k, lv, L, tv, T, loop_kind, lo_size)
    # PolyBench's shape: the loop runs only for t >= 4 and writes y[t - 4]
    shift = spec.shape == "empty-guarded" and not private and not two_acc and shift_wanted \
        and after == "none"
    target = f"{yn}[{tv} - 4]" if shift else f"{yn}[{tv}]"
    if orientation == "row":
        a_index = flat(rng, k, [(tv, T), (lv, L)])
    else:
        a_index = flat(rng, k, [(lv, L), (tv, T)])
    if cls == "prod":
        term = rng.choice((f"{An}[{a_index}]", f"{xn}[{lv}]"))
        if spelling == "/=":
            term = f"{An}[{a_index}]"
    elif cls == "minmax":
        term = rng.choice((f"{An}[{a_index}]", f"{An}[{a_index}] * {xn}[{lv}]"))
    else:
        term = rng.choice((f"{An}[{a_index}] * {xn}[{lv}]", f"{An}[{a_index}]",
                           f"{literal(ctype, 2.0)} * {An}[{a_index}]",
                           f"{An}[{a_index}] * {xn}[{lv}] + {literal(ctype, 1.0)}"))
    body: list[str] = []
    init_value = {"sum": literal(ctype, 0.0), "prod": literal(ctype, 1.0)}.get(cls)
    z = None
    Bn = None
    if after in ("update", "fused", "running"):
        Bn = k.array(b.array("B", ctype, [L, T], "zero"), restrict=restrict)
    acc = "s" if private and rng.random() < 0.5 else "sum"
    inner = {"fused": f"{Bn}[{a_index}] = {An}[{a_index}] + {xn}[{lv}];",
             "running": f"{Bn}[{a_index}] = {acc};"}.get(after)
    if private:
        init = rng.choice((init_value, f"{yn}[{tv}]")) if init_value else f"{yn}[{tv}]"
        body.append(f"{ctype} {acc} = {init};")
        body.append(spec.header + (" {" if inner else ""))
        body.append("  " + render_update(template, acc, term, ctype))
        if inner:
            body += ["  " + inner, "}"]
        finish = rng.choice(("store", "store", "add", "scale"))
        if finish == "add" and cls == "sum" and not init.startswith(yn):
            body.append(f"{yn}[{tv}] += {acc};")
        elif finish == "scale" and ctype != "int":
            body.append(f"{yn}[{tv}] = {literal(ctype, 0.5)} * {acc};")
        else:
            body.append(f"{yn}[{tv}] = {acc};")
    else:
        pre = rng.random() < 0.4 and not shift
        if pre:
            body.append(f"{yn}[{tv}] = {init_value or xn + '[0]'};")
        body.append(spec.header + (" {" if two_acc or inner else ""))
        body.append("  " + render_update(template, target, term, ctype))
        if inner:
            body += ["  " + inner, "}"]
        if two_acc:
            z = b.array("z", ctype, [T], "zero")
            zn = k.array(z, restrict=restrict)
            body.append(f"  {zn}[{tv}] += {An}[{a_index}];")
            body.append("}")
        if rng.random() < 0.3 and ctype != "int" and not shift:
            body.append(f"{yn}[{tv}] = {yn}[{tv}] * {literal(ctype, 0.5)};")
    if after in ("update", "inplace"):
        total = acc if private else f"{yn}[{tv}]"
        body.append(f"for (int {lv} = 0; {lv} < {k.size(L)}; {lv}++)")
        body.append(f"  {Bn}[{a_index}] = {An}[{a_index}] * {total};" if after == "update"
                    else f"  {An}[{a_index}] -= {xn}[{lv}] * {total};")
    guard_style = rng.choice(("if", "if", "return"))
    if guard_style == "return" and guard_kind == "full":
        k.lines.append(f"if (!({cond})) return;")
        k.lines += body
    else:
        k.lines.append(f"if ({cond}) {{")
        k.lines += ["  " + l for l in body]
        k.lines.append("}")
    b.note_reduction(spec.max_trips, ctype, spelling == "/=")
    if two_acc:
        b.note_reduction(spec.max_trips, ctype)
    b.launch(k, [(T, 256 if T.param and rng.random() < 0.6 else rng.choice(BLOCKS_1D))])
    b.variant = f"{orientation}:{'private' if private else 'global'}:{spelling}:{ctype}" + \
        (f":{after}" if after != "none" else "")
    b.shape.append(f"{k.name}: {orientation} reduction {b.variant}, loop {spec.shape}, "
                   f"guard {guard_kind}, T={T.value} L={L.value}")
    return k


# ----------------------------------------------------------------- plain affine kernels

def affine_kernel(b: Builder, nd: int | None = None, nloops: int | None = None,
                  runtime: bool = False, loop_kinds=("plain",), guard_kinds=("full",),
                  statements: int | None = None, inplace: bool = False,
                  two_d: bool | None = None) -> Kernel:
    """Thread dims (1-3, axes in any order) and loops inside the thread; statements write
    one element per instance (all variables in the index, any order), read arrays indexed
    by subsets of the variables."""
    rng = b.rng
    nd = nd or rng.choice((1, 1, 2, 2, 3))
    nloops = rng.choice((0, 1, 1, 2)) if nloops is None else nloops
    if nd == 3:
        nloops = min(nloops, 1)
    ctype = choose_type(rng, (7, 2, 2))
    k = b.kernel(rng.choice(("kern", "map", "update", "stencil", "scale")))
    tvars = list(THREAD_VARS[:nd])
    axes = ["x", "y", "z"][:nd]
    rng.shuffle(axes)
    # extents: at most about 100000 statement instances (fast on the CPU)
    tvals = [rng.choice(EXTENTS) for _ in range(nd)]
    lvals = [rng.choice(LOOP_EXTENTS) for _ in range(nloops)]
    while True:
        total = 1
        for v in tvals + lvals:
            total *= v
        if total <= 100_000:
            break
        n = max(range(nd + nloops), key=lambda q: (tvals + lvals)[q])
        small = [e for e in (EXTENTS if n < nd else LOOP_EXTENTS) if e < (tvals + lvals)[n]]
        if n < nd:
            tvals[n] = rng.choice(small)
        else:
            lvals[n - nd] = rng.choice(small)
    textents = [b.size(("NI", "NJ", "NK")[n], tvals[n], runtime and rng.random() < 0.6)
                for n in range(nd)]
    lvars = ["l", "m"][:nloops]
    lextents = [b.size(("L", "P")[n], lvals[n], runtime and rng.random() < 0.5)
                for n in range(nloops)]
    blocks = geometry_blocks(rng, nd)
    for v, axis in zip(tvars, axes):
        k.lines.append(thread_index(rng, v, axis))
    conds = []
    ranges = {}
    for v, s in zip(tvars, textents):
        gk = rng.choice(guard_kinds)
        c, lo, hi = guard_for(rng, k, v, s, gk)
        conds.append(c)
        ranges[v] = (lo, hi)
    loops = []
    for n, (v, s) in enumerate(zip(lvars, lextents)):
        kind = rng.choice(loop_kinds)
        if kind == "lo-param":
            spec = loop_spec(rng, k, v, s, None, None, kind, b.runtime("LO", rng.choice((1, 3)),
                                                                        "int"))
        else:
            spec = loop_spec(rng, k, v, s, tvars[0], textents[0], kind)
        loops.append(spec)
    allvars = list(zip(tvars, textents)) + list(zip(lvars, lextents))
    nst = statements or rng.choice((1, 1, 2))
    body_pre: list[str] = []
    body_in: list[str] = []
    use_2d = rng.random() < 0.1 if two_d is None else two_d
    inputs = [b.array(rng.choice(("A", "B", "C")), ctype, [s for _, s in
                      rng.sample(allvars, rng.randint(1, min(2, len(allvars))))])
              for _ in range(rng.randint(1, 2))]
    for n in range(nst):
        # writes: every variable in the index (in a random order); reads: subsets
        # overwrite: inside the loops, the element of the thread written on every
        # iteration (the last one stays; with a read of itself, a recurrence)
        overwrite = nloops > 0 and rng.random() < 0.25
        order = allvars[:] if (n == 0 or not nloops or rng.random() < 0.6) and \
            not overwrite else list(zip(tvars, textents))
        rng.shuffle(order)
        out = b.array(rng.choice(("out", "res", "D", "E")), ctype, [s for _, s in order],
                      "dyadic" if ctype != "int" else "int")
        two = use_2d and len(order) == 2 and not order[1][1].param
        on = k.array(out, two_d=two)
        widx = f"{on}[{order[0][0]}][{order[1][0]}]" if two else \
            f"{on}[{flat(rng, k, order)}]"
        terms = []
        live = {v for v, _ in (allvars if overwrite else order)}
        for a in inputs:
            avars = []
            for s in a.dims:
                cand = [v for v, e in allvars if e is s and v in live]
                if not cand:
                    break
                avars.append((cand[0], s))
            if len(avars) != len(a.dims):
                continue
            an = k.array(a, const=rng.random() < 0.6)
            off = rng.choice((0, 0, 0, 1, 2))
            terms.append(f"{an}[{flat(rng, k, avars, off)}]")
        if inplace or rng.random() < 0.25:
            terms.append(widx)
            if overwrite:
                b.note_reduction(max([sp.max_trips for sp in loops] + [1]), ctype)
        if not terms:
            terms.append(literal(ctype, 1.5) if ctype != "int" else "3")
        if ctype != "int" and rng.random() < 0.3:
            terms.append(f"({ctype}){order[0][0]}")
        ops = []
        for t in terms:
            c = rng.choice((1.0, 2.0, 0.5, -1.0))
            ops.append(t if c == 1.0 else f"{literal(ctype, c)} * {t}")
        rhs = ops[0]
        for o in ops[1:]:
            rhs = f"{rhs} {rng.choice(('+', '-', '+'))} {o}"
        line = f"{widx} = {rhs};"
        (body_in if overwrite or any(v in live for v in lvars) else body_pre).append(line)
    body = list(body_pre)
    indent = ""
    inner = []
    for spec in loops:
        inner.append(indent + spec.header + " {")
        indent += "  "
    inner += [indent + l for l in body_in]
    for _ in loops:
        indent = indent[:-2]
        inner.append(indent + "}")
    body += inner if body_in else []
    cond = " && ".join(conds)
    own_block = [blocks[axis_index(a)] for a in axes]     # the block size of each var's axis
    if rng.random() < 0.15 and all(s.value % bl == 0 for s, bl in zip(textents, own_block)) \
            and all(g == "full" for g in guard_kinds):
        k.lines += body                                   # the grid covers exactly
        grid_override = [f"{s.h} / {bl}" for s, bl in zip(textents, own_block)]
    else:
        k.lines.append(f"if ({cond}) {{")
        k.lines += ["  " + l for l in body]
        k.lines.append("}")
        grid_override = None
    order_xyz = [axes.index(axis) for axis in ("x", "y", "z")[:nd]]
    geometry = [(textents[n], blocks[a]) for a, n in enumerate(order_xyz)]
    go = [grid_override[n] for n in order_xyz] if grid_override else None
    b.launch(k, geometry, grid_override=go)
    b.variant = b.variant or f"{nd}d:{nloops}loops:{ctype}"
    b.shape.append(f"{k.name}: {nd}-D threads ({','.join(axes)}) "
                   f"extents {[s.value for s in textents]}, loops "
                   f"{[l.shape for l in loops]} {[s.value for s in lextents]}, {nst} statements")
    return k


def matmul_kernel(b: Builder, loop_kind: str | None = None) -> Kernel:
    """C[i][j] += A[i][k] * B[k][j] with i and j on thread axes in either order (x on i
    is uncoalesced: polycoal restructures it and promotes C[i][j] to a register), the
    loop over k plain, triangular (k < i, k <= j) or guarded-empty (k < i - 3, writing
    C[i - 4][j]: PolyBench's shape, where promotion must not touch C for i < 4)."""
    rng = b.rng
    ctype = choose_type(rng, (6, 2, 1))
    kind = loop_kind or rng.choice(("plain", "plain", "tri-i", "tri-j", "guarded-empty"))
    NI = b.size("NI", rng.choice((7, 31, 33, 64)))
    NJ = b.size("NJ", rng.choice((8, 31, 33, 64)))
    NK = b.size("NK", rng.choice((3, 17, 32)) if kind == "plain" else max(NI.value, NJ.value))
    A = b.array("A", ctype, [NI, NK])
    B = b.array("B", ctype, [NK, NJ])
    C = b.array("C", ctype, [NI, NJ], "zero" if rng.random() < 0.5 else
                ("int" if ctype == "int" else "dyadic"))
    k = b.kernel("matmul")
    swap = rng.random() < 0.6                     # i on x: uncoalesced C and B
    ax_i, ax_j = ("x", "y") if swap else ("y", "x")
    k.lines.append(thread_index(rng, "i", ax_i))
    k.lines.append(thread_index(rng, "j", ax_j))
    an, bn, cn = k.array(A, const=True), k.array(B, const=True), k.array(C)
    ni, nj, nk = k.size(NI), k.size(NJ), k.size(NK)
    row = "i - 4" if kind == "guarded-empty" else "i"
    header = {"plain": f"for (int q = 0; q < {nk}; q++)",
              "tri-i": "for (int q = 0; q < i; q++)",
              "tri-j": "for (int q = 0; q <= j; q++)",
              "guarded-empty": "for (int q = 0; q < i - 3; q++)"}[kind]
    k.lines.append(f"if (i < {ni} && j < {nj}) {{")
    k.lines.append(f"  {header}")
    k.lines.append(f"    {cn}[({row}) * {nj} + j] += {an}[i * {nk} + q] * {bn}[q * {nj} + j];")
    k.lines.append("}")
    b.note_reduction(NK.value, ctype)
    blocks = geometry_blocks(rng, 2)
    ext = {ax_i: NI, ax_j: NJ}
    b.launch(k, [(ext["x"], blocks[0]), (ext["y"], blocks[1])])
    b.variant = b.variant or f"matmul:{kind}"
    b.shape.append(f"{k.name}: C[{row}][j] += A[i][q] * B[q][j], loop {kind}, i on {ax_i}")
    return k


def product_kernel(b: Builder) -> Kernel:
    """The tiled products' class (optimize/products.py) in the spellings real code uses:
    outputs (i, j) of at least 64 values each, on two thread axes (GEMM, SYRK) or one
    thread axis and a loop, full or triangular (covariance's j2 >= j1 with its mirror
    store); each a sum over q of a term reading one operand along (i, q) and one along
    (j, q), each stored either way round (A[i][q] or A[q][i]), the same array on both
    sides or two, scaled by a kernel scalar or a literal, or a sum of two such products
    (SYR2K); the accumulator the output in
    global memory (cleared, scaled by beta, or accumulated into) or a private scalar;
    sizes by macro or at run time, mostly not multiples of the tiles."""
    rng = b.rng
    ctype = choose_type(rng, (6, 2, 1))
    runtime = rng.random() < 0.3
    # 256 and 24: whole tiles of 128 with aligned rows and whole chunks (the full tiles'
    # unclamped path) beside the ragged ones
    NI = b.size("NI", rng.choice((64, 65, 77, 96, 130, 256)), runtime and rng.random() < 0.5)
    same = rng.random() < 0.35                 # SYRK / covariance: one operand array
    NJ = NI if same or rng.random() < 0.3 else \
        b.size("NJ", rng.choice((64, 70, 100, 129, 256)), runtime and rng.random() < 0.5)
    NK = b.size("NK", rng.choice((1, 5, 16, 17, 24, 40, 67)), runtime and rng.random() < 0.5)
    loop_j = rng.random() < 0.35               # j a loop inside the thread of i
    triangle = loop_j and NI is NJ and rng.random() < 0.6
    at = rng.random() < 0.5                    # A stored [q][i] (covariance's data)
    bt = rng.random() < 0.5                    # B stored [j][q]
    A = b.array("A", ctype, [NK, NI] if at else [NI, NK],
                "int" if ctype == "int" else "dyadic")
    B = A if same and at == (not bt) else b.array(
        "B", ctype, [NJ, NK] if bt else [NK, NJ], "int" if ctype == "int" else "dyadic")
    C = b.array("C", ctype, [NI, NJ], "int" if ctype == "int" else "dyadic")
    k = b.kernel(rng.choice(("gemm", "syrk", "covar", "product", "mm")))
    ni, nj, nk = k.size(NI), k.size(NJ), k.size(NK)
    an = k.array(A, const=rng.random() < 0.5)
    bn = an if B is A else k.array(B, const=rng.random() < 0.5)
    cn = k.array(C)
    scale = ""
    if ctype != "int" and rng.random() < 0.5:
        if rng.random() < 0.5:
            k.scalar(f"{ctype} alpha", literal(ctype, 0.5))
            scale = "alpha * "
        else:
            scale = f"{literal(ctype, 2.0)} * "
    swap = rng.random() < 0.5
    if loop_j:
        k.lines.append(thread_index(rng, "i", "x"))
    else:
        k.lines.append(thread_index(rng, "i", "y" if swap else "x"))
        k.lines.append(thread_index(rng, "j", "x" if swap else "y"))
    a_ref = f"{an}[q * {ni} + i]" if at else f"{an}[i * {nk} + q]"
    b_ref = f"{bn}[j * {nk} + q]" if bt else f"{bn}[q * {nj} + j]"
    term = f"{scale}{a_ref} * {b_ref}"
    if rng.random() < 0.3:
        # SYR2K's shape: a sum of two products, added one at a time by the tiled form
        D = b.array("D", ctype, A.dims, "int" if ctype == "int" else "dyadic")
        E = b.array("E", ctype, B.dims, "int" if ctype == "int" else "dyadic")
        dn, en = k.array(D, const=True), k.array(E, const=True)
        d_ref = f"{dn}[q * {ni} + i]" if at else f"{dn}[i * {nk} + q]"
        e_ref = f"{en}[j * {nk} + q]" if bt else f"{en}[q * {nj} + j]"
        term += f" {rng.choice(('+', '-'))} {scale}{d_ref} * {e_ref}"
    out = f"{cn}[i * {nj} + j]"
    init = rng.choice(("zero", "beta", "keep", "private"))
    body = []
    if init == "private":
        body += [f"{ctype} acc = 0;", f"for (int q = 0; q < {nk}; q++)",
                 f"  acc += {term};", f"{out} = acc;"]
    else:
        if init == "zero":
            body.append(f"{out} = 0;")
        elif init == "beta":
            body.append(f"{out} *= {literal(ctype, 2.0) if ctype != 'int' else '2'};")
        body += [f"for (int q = 0; q < {nk}; q++)", f"  {out} += {term};"]
    if triangle:
        body.append(f"{cn}[j * {nj} + i] = {out};")
    if loop_j:
        k.lines.append(f"if (i < {ni}) {{")
        k.lines.append(f"  for (int j = {'i' if triangle else '0'}; j < {nj}; j++) {{")
        k.lines += ["    " + line for line in body]
        k.lines += ["  }", "}"]
        b.launch(k, [(NI, rng.choice((32, 64, 128, 256)))])
    else:
        k.lines.append(f"if (i < {ni} && j < {nj}) {{")
        k.lines += ["  " + line for line in body]
        k.lines.append("}")
        blocks = geometry_blocks(rng, 2)
        ext = {"y" if swap else "x": NI, "x" if swap else "y": NJ}
        b.launch(k, [(ext["x"], blocks[0]), (ext["y"], blocks[1])])
    b.note_reduction(NK.value, ctype)
    b.variant = b.variant or (f"product:{'loop' if loop_j else '2d'}"
                              f"{':triangle' if triangle else ''}:{init}")
    b.shape.append(f"{k.name}: {out} ({init}) += {term} over q < {NK.value}, "
                   f"{'j a loop' if loop_j else 'i, j threads'}"
                   f"{', triangle with mirror' if triangle else ''}, "
                   f"{NI.value}x{NJ.value}")
    return k


STENCILS = {   # name -> the (di, dj) offsets read, each with a weight
    "5-point": ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)),
    "3x3": tuple((di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1)),
    "row-3": ((0, -1), (0, 0), (0, 1)),
    "col-3": ((-1, 0), (0, 0), (1, 0)),
    "cross-2": ((-2, 0), (-1, 0), (0, 0), (1, 0), (2, 0), (0, -2), (0, -1), (0, 1), (0, 2)),
}


def stencil_kernel(b: Builder) -> Kernel:
    """Stencils with reuse (2DCONV, Jacobi, FDTD's updates): out[i][j] = a weighted sum
    of in[i + di][j + dj] over the interior, each input element read by several threads;
    i and j on thread axes in either order, or j a loop inside the thread of i (a row per
    thread, the naive port's shape), the interior by a guard or by loop bounds, weights
    literal or a kernel array, optionally accumulated into out or applied in a host
    loop of time steps (in and out swapped)."""
    rng = b.rng
    ctype = choose_type(rng, (7, 2, 1))
    shape = rng.choice(sorted(STENCILS))
    offsets = STENCILS[shape]
    reach = max(max(abs(di), abs(dj)) for di, dj in offsets)
    runtime = rng.random() < 0.3
    NI = b.size("NI", rng.choice((33, 64, 100, 130)), runtime and rng.random() < 0.5)
    NJ = b.size("NJ", rng.choice((32, 65, 100, 128)), runtime and rng.random() < 0.5)
    fill = "int" if ctype == "int" else "dyadic"
    src = b.array("A", ctype, [NI, NJ], fill)
    dst = b.array("B", ctype, [NI, NJ], fill)
    k = b.kernel(rng.choice(("stencil", "conv2d", "jacobi", "smooth")))
    ni, nj = k.size(NI), k.size(NJ)
    sn, dn = k.array(src, const=rng.random() < 0.5), k.array(dst)
    weights = None
    if rng.random() < 0.3:
        W = b.array("W", ctype, [b.size("NW", len(offsets))], fill)
        weights = k.array(W, const=True)
    terms = []
    for n, (di, dj) in enumerate(offsets):
        ref = f"{sn}[(i {'+' if di >= 0 else '-'} {abs(di)}) * {nj} + j " \
              f"{'+' if dj >= 0 else '-'} {abs(dj)}]".replace(" + 0)", ")") \
            .replace(" + 0]", "]")
        w = f"{weights}[{n}]" if weights else \
            (literal(ctype, rng.choice((0.5, 1.0, 2.0, -1.0, 0.25))) if ctype != "int"
             else str(rng.choice((1, 2, -1, 3))))
        terms.append(f"{w} * {ref}")
    update = rng.choice(("=", "=", "+="))
    body = f"{dn}[i * {nj} + j] {update} {' + '.join(terms)};"
    loop_j = rng.random() < 0.3
    swap = rng.random() < 0.5
    if loop_j:
        k.lines.append(thread_index(rng, "i", "x"))
        k.lines.append(f"if (i >= {reach} && i < {ni} - {reach}) {{")
        k.lines.append(f"  for (int j = {reach}; j < {nj} - {reach}; j++)")
        k.lines.append(f"    {body}")
        k.lines.append("}")
        geometry = [(NI, rng.choice((32, 64, 128, 256)))]
    else:
        k.lines.append(thread_index(rng, "i", "y" if swap else "x"))
        k.lines.append(thread_index(rng, "j", "x" if swap else "y"))
        k.lines.append(f"if (i >= {reach} && i < {ni} - {reach} && j >= {reach} && "
                       f"j < {nj} - {reach})")
        k.lines.append(f"  {body}")
        blocks = geometry_blocks(rng, 2)
        ext = {"y" if swap else "x": NI, "x" if swap else "y": NJ}
        geometry = [(ext["x"], blocks[0]), (ext["y"], blocks[1])]
    if update == "=" and rng.random() < 0.3:
        # time steps on the host, the arrays swapped: the launch runs in a loop
        before = len(b.main)
        b.launch(k, geometry, indent="    ")
        launch = b.main[before:]
        del b.main[before:]
        steps = rng.choice((2, 3))
        b.main.append(f"  for (int t = 0; t < {steps}; t++) {{")
        b.main += launch
        b.main.append(f"    {ctype} *swap = {src.d}; {src.d} = {dst.d}; {dst.d} = swap;")
        b.main.append("  }")
        b.names.add("swap")
    else:
        b.launch(k, geometry)
    if ctype != "int":
        b.note_reduction(len(offsets), ctype)
    b.variant = b.variant or f"stencil:{shape}:{'loop' if loop_j else '2d'}"
    b.shape.append(f"{k.name}: {shape} stencil {update} over {NI.value}x{NJ.value}, "
                   f"{'j a loop' if loop_j else 'i, j threads'}"
                   f"{', weights W' if weights else ''}")
    return k


def axis_index(axis: str) -> int:
    return "xyz".index(axis)


# ----------------------------------------------------------------- families

def fam_affine(b: Builder) -> None:
    if b.rng.random() < 0.2:
        matmul_kernel(b)
    else:
        affine_kernel(b)


def fam_transpose(b: Builder) -> None:
    """Statements over two dims (one thread dim and a loop, or two thread dims) whose
    references take the dims in random orders: transposes, a transposed operand, a
    broadcast, or all along one dim (the staged form's class and its near misses)."""
    rng = b.rng
    nd = rng.choice((1, 2))
    affine_kernel(b, nd=nd, nloops=2 - nd, statements=1, runtime=rng.random() < 0.3,
                  loop_kinds=("plain",), guard_kinds=("full",))
    b.variant = f"transpose:{nd}d"


def fam_product(b: Builder) -> None:
    product_kernel(b)


def fam_stencil(b: Builder) -> None:
    stencil_kernel(b)


def fam_rowred(b: Builder) -> None:
    rng = b.rng
    reduction_kernel(b, "row", private=rng.random() < 0.45,
                     two_acc=rng.random() < 0.1,
                     loop_kind=rng.choice(("plain",) * 6 + ("le", "long", "reversed")))


def fam_colred(b: Builder) -> None:
    rng = b.rng
    ctype = choose_type(rng)
    reduction_kernel(b, "col", private=rng.random() < 0.3, ctype=ctype,
                     update=pick_update(rng, ctype, weights=[8, 1, 1]),
                     loop_kind=rng.choice(("plain",) * 6 + ("le", "lo1", "step2")),
                     after=rng.choice(("none",) * 4 + ("update", "inplace", "fused",
                                                       "running")))


def fam_bounds(b: Builder) -> None:
    rng = b.rng
    kind = rng.choice(LOOP_KINDS[1:])
    b.variant = f"loop:{kind}"
    if rng.random() < 0.25:
        kind = rng.choice(("tri-i", "tri-j", "guarded-empty", "guarded-empty"))
        matmul_kernel(b, kind)
        b.variant = f"loop:{kind}:matmul"
    elif rng.random() < 0.55:
        reduction_kernel(b, rng.choice(("row", "row", "col")), loop_kind=kind,
                         update=("sum", "+=", SUM_FORMS["+="]) if rng.random() < 0.5 else None)
        b.variant = f"loop:{kind}:reduction"
    else:
        affine_kernel(b, nd=rng.choice((1, 2)), nloops=1, loop_kinds=(kind,))
        b.variant = f"loop:{kind}:plain"


def divisor_block(rng: random.Random, n: int) -> int:
    """A block size that divides n (the grid then covers exactly n threads)."""
    return rng.choice([d for d in (1, 2, 4, 8, 16, 20, 25, 31, 32, 33, 50, 64, 100, 128)
                       if n % d == 0] or [1])


def guard_without_bound(b: Builder) -> None:
    """`if (j >= 1)` alone, the grid covering exactly N threads: part of the thread range
    idle, a loop over rows inside (overwrite, accumulate, or a private sum)."""
    rng = b.rng
    ctype = choose_type(rng, (4, 1, 1))
    N = b.size("N", rng.choice((7, 31, 32, 33, 64, 100)))
    M = b.size("M", rng.choice((3, 17, 33, 100)))
    lo = rng.choice((1, 2, 3))
    form = rng.choice(("overwrite", "accumulate", "private"))
    b.variant = f"guard:lo-only:{form}"
    A = b.array("A", ctype, [M, N])
    y = b.array("y", ctype, [N], "zero")
    k = b.kernel("guarded")
    k.lines.append(thread_index(rng, "j", "x"))
    an, yn = k.array(A, const=True), k.array(y)
    n, m = k.size(N), k.size(M)
    k.lines.append(f"if (j >= {lo}) {{")
    if form == "private":
        k.lines += [f"  {ctype} s = {literal(ctype, 0.0)};",
                    f"  for (int i = 0; i < {m}; i++)", f"    s += {an}[i * {n} + j];",
                    f"  {yn}[j] = s;"]
        b.note_reduction(M.value, ctype)
    else:
        op = "=" if form == "overwrite" else "+="
        k.lines += [f"  for (int i = 0; i < {m}; i++)", f"    {yn}[j] {op} {an}[i * {n} + j];"]
        if op == "+=":
            b.note_reduction(M.value, ctype)
    k.lines.append("}")
    bl = divisor_block(rng, N.value)
    b.launch(k, [(N, bl)], grid_override=[f"{N.h} / {bl}"])
    b.shape.append(f"{k.name}: guard j >= {lo} without an upper bound, exact grid, {form}")


def fam_guards(b: Builder) -> None:
    rng = b.rng
    kind = rng.choice(GUARD_KINDS[1:])
    if rng.random() < 0.25:
        guard_without_bound(b)
    elif rng.random() < 0.5:
        reduction_kernel(b, rng.choice(("row", "col")), guard_kind=kind,
                         update=("sum", "+=", SUM_FORMS["+="]) if rng.random() < 0.5 else None)
        b.variant = f"guard:{kind}:reduction"
    else:
        affine_kernel(b, nd=rng.choice((1, 2, 2)), nloops=rng.choice((0, 1)),
                      guard_kinds=(kind, "full"))
        b.variant = f"guard:{kind}:plain"


def fam_multi(b: Builder) -> None:
    """Several statements, arrays and kernels: a pipeline (the second kernel reads what the
    first wrote), in-place updates, a reduction feeding a plain kernel."""
    rng = b.rng
    form = rng.choice(("pipeline", "inplace", "statements", "red-then-map"))
    b.variant = f"multi:{form}"
    if form == "statements":
        affine_kernel(b, statements=rng.choice((2, 3)))
    elif form == "inplace":
        affine_kernel(b, inplace=True, nloops=rng.choice((0, 1)))
        if rng.random() < 0.5:
            affine_kernel(b, inplace=True)
    elif form == "red-then-map":
        reduction_kernel(b, rng.choice(("row", "col")))
        producer = b.arrays[0]                     # y
        k = b.kernel("post")
        n = producer.dims[0]
        k.lines.append(thread_index(rng, "i", "x"))
        yn = k.array(producer)
        w = b.array("w", producer.ctype, [n], "zero")
        wn = k.array(w)
        k.lines.append(f"if (i < {k.size(n)}) {{")
        k.lines.append(f"  {wn}[i] = {yn}[i] + {yn}[i];")
        k.lines.append("}")
        b.launch(k, [(n, rng.choice(BLOCKS_1D))])
        b.shape.append(f"{k.name}: map over the reduction's output")
    else:
        # k1: tmp[i][j] = f(A), k2: out[j][i] = tmp[i][j] + ...
        ctype = choose_type(rng, (3, 1, 1))
        NI = b.size("NI", rng.choice(EXTENTS[1:]))
        NJ = b.size("NJ", rng.choice(EXTENTS[1:]))
        A = b.array("A", ctype, [NI, NJ])
        tmp = b.array("tmp", ctype, [NI, NJ], "zero")
        out = b.array("out", ctype, [NJ, NI], "zero")
        for n, (src, dst, transpose) in enumerate(((A, tmp, False), (tmp, out, True))):
            k = b.kernel(f"stage{n + 1}")
            blocks = geometry_blocks(rng, 2)
            swap = rng.random() < 0.5
            ax_i, ax_j = ("y", "x") if swap else ("x", "y")
            k.lines.append(thread_index(rng, "i", ax_i))
            k.lines.append(thread_index(rng, "j", ax_j))
            sn = k.array(src, const=True)
            dn = k.array(dst)
            sidx = flat(rng, k, [("i", NI), ("j", NJ)])
            didx = flat(rng, k, [("j", NJ), ("i", NI)] if transpose else [("i", NI), ("j", NJ)])
            k.lines.append(f"if (i < {k.size(NI)} && j < {k.size(NJ)})")
            k.lines.append(f"  {dn}[{didx}] = {literal(ctype, 2.0)} * {sn}[{sidx}] + "
                           f"{literal(ctype, 1.0)};")
            geo = {"x": None, "y": None}
            geo[ax_i] = NI
            geo[ax_j] = NJ
            b.launch(k, [(geo["x"], blocks[0]), (geo["y"], blocks[1])])
            b.shape.append(f"{k.name}: 2-D stage, i on {ax_i}")


def fam_runtime(b: Builder) -> None:
    """Sizes known at run time, passed as int/long/size_t arguments, grids computed on the
    host ((n + 255) / 256)."""
    rng = b.rng
    form = rng.choice(("rowred", "colred", "affine", "affine", "permute", "overlap"))
    b.variant = f"runtime:{form}"
    if form == "permute":
        runtime_permute_kernel(b)
    elif form == "overlap":
        runtime_overlap_kernel(b)
    elif form == "rowred":
        reduction_kernel(b, "row", runtime=True)
    elif form == "colred":
        reduction_kernel(b, "col", runtime=True)
    else:
        affine_kernel(b, runtime=True, nd=rng.choice((1, 2)))
    b.variant = f"runtime:{form}"


def runtime_permute_kernel(b: Builder) -> Kernel:
    """A 2-D kernel outside the affine model (an indirect read `w[perm[r]]`) whose rows
    run along x and whose unit stride runs along y, launched with a block and grid from
    run-time variables: the thread axes are to be swapped, and whether the swapped
    geometry fits (grid and block limits, more than one thread along the new x) is known
    only at run time, so the launch checks it and runs the original where it does not
    (blocks like 32 x 1 and 1 x 32 take each branch)."""
    rng = b.rng
    ctype = choose_type(rng, (6, 2, 0))
    rows_v, cols_v = rng.choice(EXTENTS), rng.choice(EXTENTS)
    rows, cols = b.runtime("ROWS", rows_v, "int"), b.runtime("COLS", cols_v, "int")
    bx, by = rng.choice(BLOCKS_2D)
    bxs, bys = b.runtime("BX", bx, "int"), b.runtime("BY", by, "int")
    table = rng.choice((5, 13, 16))
    A = b.array("A", ctype, [rows, cols])
    w = b.array("w", ctype, [Size(table, str(table), str(table))])
    perm = b.array("perm", "int", [rows], f"index:{table}")
    k = b.kernel(rng.choice(("scale_rows", "weigh", "mix2d")))
    an, wn = k.array(A), k.array(w, const=True)
    pn = k.array(perm, const=rng.random() < 0.7)
    rn, cn = k.size(rows), k.size(cols)
    k.lines.append(thread_index(rng, "r", "x"))
    k.lines.append(thread_index(rng, "c", "y"))
    k.lines.append(f"if (r < {rn} && c < {cn})")
    extra = f" + {literal(ctype, 0.5)}" if rng.random() < 0.5 else ""
    k.lines.append(f"  {an}[r * {cn} + c] = {an}[r * {cn} + c] * {wn}[{pn}[r]]{extra};")
    blk, grd = b.fresh("blk"), b.fresh("grd")
    b.main.append(f"  dim3 {blk}({bxs.h}, {bys.h});")
    b.main.append(f"  dim3 {grd}(({rows.h} + {bxs.h} - 1) / {bxs.h}, "
                  f"({cols.h} + {bys.h} - 1) / {bys.h});")
    b.main.append(f"  {k.name}<<<{grd}, {blk}>>>({k.args()});")
    b.shape.append(f"{k.name}: run-time 2-D geometry {bx}x{by} over {rows_v}x{cols_v}, "
                   f"rows along x, an indirect read")
    return k


def runtime_overlap_kernel(b: Builder) -> Kernel:
    """One thread per row of a row-major matrix (uncoalesced: restructured) whose
    destination and source are two pointers into one allocation, `A + shift` and `A`,
    with shift a run-time value: nothing in the program says they are distinct, so the
    launch compares the bytes each touches and runs the restructured copy only where
    they are disjoint (shift of a matrix or more) and the original where they are not
    (in place: shift 0). Shifts that would make the original race are not generated."""
    rng = b.rng
    ctype = choose_type(rng, (6, 2, 0))
    rows_v, cols_v = rng.choice(EXTENTS), rng.choice(EXTENTS)
    n = rows_v * cols_v
    rows, cols = b.runtime("ROWS", rows_v, "int"), b.runtime("COLS", cols_v, "int")
    shift_v = rng.choice((0, 0, n, n + 3, 2 * n))
    shift = b.runtime("SHIFT", shift_v, "int")
    A = b.array("A", ctype, [rows, cols], slack=SLACK + 2 * n + 3)
    k = b.kernel(rng.choice(("shift_rows", "copy_scaled", "axpy_rows")))
    dst, src = b.fresh("dst"), b.fresh("src")
    k.seen.add(A)
    k.params.append((f"{ctype} *{dst}", f"{A.d} + {shift.h}"))
    k.params.append((f"const {ctype} *{src}", A.d))
    rn, cn = k.size(rows), k.size(cols)
    k.lines.append(thread_index(rng, "r", "x"))
    k.lines.append(f"if (r < {rn})")
    k.lines.append(f"  for (int c = 0; c < {cn}; c++)")
    k.lines.append(f"    {dst}[r * {cn} + c] = {src}[r * {cn} + c] * {literal(ctype, 0.5)} + "
                   f"{literal(ctype, 1.0)};")
    b.launch(k, [(rows, rng.choice(BLOCKS_1D))])
    b.shape.append(f"{k.name}: {rows_v}x{cols_v} rows, dst = A + {shift_v}, src = A "
                   f"({'in place' if shift_v == 0 else 'disjoint'})")
    return k


# what a host loop does after each launch: nothing, or wait for the device (which
# polycoal moves after the loop), or wait and use the host's counter (kept)
_LOOP_WAITS = (None, None, "cudaDeviceSynchronize();", "cudaDeviceSynchronize();",
               "cudaStreamSynchronize(0);")


def fam_hostloop(b: Builder) -> None:
    """Kernels launched in a host loop with the loop variable as an argument: a sweep
    over rows (A[(t + 1) * N + i] from A[t * N + i]), a per-step update, a triangular
    inner loop bounded by t, two kernels per step, and uncoalesced 2-D planes or rows
    per step (which polycoal restructures, the launch inside the loop), or columns past
    the loop variable from a negative start (Gram-Schmidt's `j > k`: a form generated
    under non-negative arguments is legal only where each launch checks them); each
    launch followed by a wait for the device or not, as programs write them."""
    rng = b.rng
    wait = rng.choice(_LOOP_WAITS)
    ctype = choose_type(rng, (4, 1, 1))
    form = rng.choice(("sweep", "rows", "tri", "two-kernels", "plane", "plane", "rowloop",
                       "rowloop", "past"))
    b.variant = f"hostloop:{form}"
    T = b.size("T", rng.choice((2, 5, 8)))
    tname = rng.choice(("t", "step", "iter"))
    ttype = rng.choice(("int", "int", "long"))
    one = literal(ctype, 1.0)
    if form == "past":
        _columns_past(b, T, tname, ttype, ctype, wait)
        return
    if form in ("plane", "rowloop"):
        NI = b.size("NI", rng.choice((7, 31, 33, 64)))
        NJ = b.size("NJ", rng.choice((8, 31, 33, 64)))
        A = b.array("A", ctype, [NI, NJ])
        C = b.array("C", ctype, [T, NI, NJ], "zero")
        k = b.kernel(form)
        k.lines.append(thread_index(rng, "i", "x"))
        an, cn = k.array(A, const=True), k.array(C)
        k.scalar(f"{ttype} {tname}", "t")
        ni, nj = k.size(NI), k.size(NJ)
        update = rng.choice(("=", "+="))
        rhs = rng.choice((f"{an}[i * {nj} + j] + ({ctype}){tname}",
                          f"{an}[i * {nj} + j] * ({ctype})({tname} + 1)"))
        if form == "plane":
            k.lines.append(thread_index(rng, "j", "y"))
            k.lines.append(f"if (i < {ni} && j < {nj})")
            k.lines.append(f"  {cn}[({tname} * {ni} + i) * {nj} + j] {update} {rhs};")
            geometry = [(NI, rng.choice((32, 16, 8, 1))), (NJ, rng.choice((1, 4, 8, 32)))]
        else:
            k.lines.append(f"if (i < {ni}) {{")
            k.lines.append(f"  for (int j = 0; j < {nj}; j++)")
            k.lines.append(f"    {cn}[({tname} * {ni} + i) * {nj} + j] {update} {rhs};")
            k.lines.append("}")
            geometry = [(NI, rng.choice(BLOCKS_1D))]
        b.main.append(f"  for (int t = 0; t < {T.h}; t++) {{")
        b.launch(k, geometry, indent="    ")
        b.main += [f"    {wait}"] if wait else []
        b.main.append("  }")
        b.shape.append(f"{k.name}: launched in a host loop over t, form {form}")
        return
    N = b.size("N", rng.choice(EXTENTS[1:]))
    A = b.array("A", ctype, [T, N])
    x = b.array("x", ctype, [N])
    k = b.kernel(form.replace("-", "_"))
    k.lines.append(thread_index(rng, "i", "x"))
    An = k.array(A)
    xn = k.array(x, const=True)
    k.scalar(f"{ttype} {tname}", "t")
    n = k.size(N)
    if form == "sweep":
        k.lines.append(f"if (i < {n})")
        k.lines.append(f"  {An}[({tname} + 1) * {n} + i] = {An}[{tname} * {n} + i]"
                       f" * {literal(ctype, 2.0 if ctype == 'int' else 0.5)} + {xn}[i];")
        lo, hi = "0", f"{T.h} - 1"
    elif form == "rows":
        k.lines.append(f"if (i < {n})")
        k.lines.append(f"  {An}[{tname} * {n} + i] += {xn}[i] * ({ctype}){tname};")
        lo, hi = "0", T.h
    elif form == "tri":
        k.lines.append(f"if (i < {n}) {{")
        k.lines.append(f"  for (int q = 0; q < {tname}; q++)")
        k.lines.append(f"    {An}[{tname} * {n} + i] += {An}[q * {n} + i] * {xn}[i];")
        k.lines.append("}")
        lo, hi = "0", T.h
    else:
        k.lines.append(f"if (i < {n})")
        k.lines.append(f"  {An}[{tname} * {n} + i] = {xn}[i] + ({ctype}){tname} + {one};")
        lo, hi = "0", T.h
    kb = None
    if form == "two-kernels":
        kb = b.kernel("accumulate")
        kb.lines.append(thread_index(rng, "i", "x"))
        Bn = b.array("B", ctype, [N], "zero")
        bn = kb.array(Bn)
        an2 = kb.array(A, const=True)
        kb.scalar(f"int {tname}", "t")
        kb.lines.append(f"if (i < {kb.size(N)})")
        kb.lines.append(f"  {bn}[i] += {an2}[{tname} * {kb.size(N)} + i];")
    b.main.append(f"  for (int t = {lo}; t < {hi}; t++) {{")
    b.launch(k, [(N, rng.choice(BLOCKS_1D))], indent="    ")
    b.main += [f"    {wait}"] if wait else []
    if kb:
        b.launch(kb, [(N, rng.choice(BLOCKS_1D))], indent="    ")
        b.main += [f"    {wait}"] if wait else []
    b.main.append("  }")
    b.shape.append(f"{k.name}: launched in a host loop over t, form {form}")


def _columns_past(b: Builder, T: Size, tname: str, ttype: str, ctype: str,
                  wait: str | None) -> None:
    """A kernel over the columns j past a host loop's value t, which starts below zero:
    a sum down each column or an update of it, the range spelled as programs do."""
    rng = b.rng
    NI = b.size("NI", rng.choice((3, 17, 33, 64)))
    NJ = b.size("NJ", rng.choice((31, 33, 64, 100)))
    A = b.array("A", ctype, [NI, NJ])
    k = b.kernel("past")
    k.lines.append(thread_index(rng, "j", "x"))
    an = k.array(A, const=True)
    k.scalar(f"{ttype} {tname}", "t")
    ni, nj = k.size(NI), k.size(NJ)
    past = rng.choice((f"j > {tname}", f"{tname} < j", f"j >= {tname} + 1", f"j - 1 >= {tname}"))
    k.lines.append(f"if ({past} && j < {nj}) {{")
    if rng.random() < 0.5:
        C = b.array("C", ctype, [NJ], "zero")
        cn = k.array(C)
        k.lines.append(f"  {ctype} acc = {literal(ctype, 0.0)};")
        k.lines.append(f"  for (int q = 0; q < {ni}; q++)")
        k.lines.append(f"    acc += {an}[q * {nj} + j];")
        k.lines.append(f"  {cn}[j] = acc + ({ctype}){tname};")
        b.note_reduction(NI.value, ctype)
    else:
        C = b.array("C", ctype, [NI, NJ], "zero")
        cn = k.array(C)
        k.lines.append(f"  for (int q = 0; q < {ni}; q++)")
        k.lines.append(f"    {cn}[q * {nj} + j] += {an}[q * {nj} + j] * ({ctype})({tname} + 4);")
    k.lines.append("}")
    start = -rng.choice((1, 3, 40, 200))
    b.main.append(f"  for (int t = {start}; t < {T.h}; t++) {{")
    b.launch(k, [(NJ, rng.choice(BLOCKS_1D))], indent="    ")
    b.main += [f"    {wait}"] if wait else []
    b.main.append("  }")
    b.shape.append(f"{k.name}: columns past a host loop's t from {start}")


def _row_loop(k, rng: random.Random, rows: str, head: str, body: list[str]) -> None:
    """Thread i's loop `head` over `body`, under `if (i < rows)` or after an early
    return, as ported row loops are written."""
    if rng.random() < 0.5:
        k.lines.append(f"if (i < {rows}) {{")
        k.lines.append(f"  {head} {{")
        k.lines += [f"    {line}" for line in body]
        k.lines += ["  }", "}"]
    else:
        k.lines.append(f"if (i >= {rows}) return;")
        k.lines.append(f"{head} {{")
        k.lines += [f"  {line}" for line in body]
        k.lines.append("}")


def fam_recurrence(b: Builder) -> None:
    """One thread per row and a loop along the row whose trips depend on each other, as
    ported recurrences are written: a prefix sum, a first-order filter forward or
    backward, an elimination that divides (with a private temporary or not). polycoal
    stages such a sweep through shared memory (optimize/sweep.py) where it predicts a
    gain (a trip that divides), and leaves the others as they are."""
    rng = b.rng
    ctype = rng.choice(("float", "float", "double"))
    form = rng.choice(("prefix", "filter", "back", "divide", "divide", "private"))
    b.variant = f"recurrence:{form}"
    R = b.size("R", rng.choice((1, 7, 31, 32, 33, 64, 100)), runtime=rng.random() < 0.5)
    C = b.size("C", rng.choice((3, 17, 32, 33, 70)))
    A = b.array("A", ctype, [R, C])
    X = b.array("X", ctype, [R, C])
    k = b.kernel(f"{form}_rows")      # (`private` alone is a C++ keyword)
    k.lines.append(thread_index(rng, "i", "x"))
    an, xn = k.array(A), k.array(X, const=True)
    r, c = k.size(R), k.size(C)
    j = rng.choice(("j", "col", "k2"))
    half, two = literal(ctype, 0.5), literal(ctype, 2.0)
    at = lambda shift: f"{an}[i * {c} + {j}{shift}]"      # noqa: E731
    if form == "back":
        head = f"for (int {j} = {c} - 2; {j} >= 0; {j}--)"
        body = [f"{at('')} = {at('')} - {half} * {at(' + 1')};"]
    else:
        first = 2 if form == "private" else 1
        head = f"for (int {j} = {first}; {j} < {c}; {rng.choice(('++' + j, j + '++'))})"
        body = {"prefix": [f"{at('')} += {at(' - 1')} * {half};"],
                "filter": [f"{at('')} = {xn}[i * {c} + {j}] + {half} * {at(' - 1')};"],
                "divide": [f"{at('')} = ({at('')} + {xn}[i * {c} + {j}]) / "
                           f"({two} + {at(' - 1')} * {at(' - 1')});"],
                "private": [f"{ctype} t = {at(' - 1')} / ({two} + {at(' - 2')});",
                            f"{at('')} = t * {half} + {xn}[i * {c} + {j}];"]}[form]
    _row_loop(k, rng, r, head, body)
    b.launch(k, [(R, rng.choice(BLOCKS_1D))])
    b.shape.append(f"{k.name}: {form} along each of {R.value} rows of {C.value}")


def fam_inplace(b: Builder) -> None:
    """One thread per row and a loop along the row that updates it in place, each trip
    reading elements later trips overwrite (never what an earlier trip wrote): a shift,
    ADI's backward substitution (the counter up, the columns down), a smoothing of two
    statements (the second reads what the first wrote), a shift with the counter going
    down. polycoal runs such trips across a warp's lanes, each chunk's reads before its
    stores (optimize/sweep.vector_obstacle), where the model predicts a gain; rows past
    a chunk of 128 trips and partial chunks among the sizes."""
    rng = b.rng
    ctype = rng.choice(("float", "float", "double"))
    form = rng.choice(("shift", "backsub", "smooth", "down"))
    b.variant = f"inplace:{form}"
    R = b.size("R", rng.choice((1, 7, 32, 33, 100, 300)), runtime=rng.random() < 0.5)
    C = b.size("C", rng.choice((3, 33, 128, 129, 200, 300)))
    A = b.array("A", ctype, [R, C])
    X = b.array("X", ctype, [R, C])
    k = b.kernel(f"{form}_inplace")
    k.lines.append(thread_index(rng, "i", "x"))
    an, xn = k.array(A), k.array(X, const=True)
    r, c = k.size(R), k.size(C)
    j = rng.choice(("j", "col", "t"))
    half, two = literal(ctype, 0.5), literal(ctype, 2.0)
    at = lambda col: f"{an}[i * {c} + {col}]"      # noqa: E731
    up = rng.choice(("++" + j, j + "++"))
    if form == "shift":
        head = f"for (int {j} = 0; {j} < {c} - 1; {up})"
        body = [f"{at(j)} = {at(j + ' + 1')} * {half} + {xn}[i * {c} + {j}];"]
    elif form == "backsub":
        # column c - 2 - j written, c - 3 - j read: the next trip's column, as it was
        head = f"for (int {j} = 0; {j} < {c} - 2; {up})"
        body = [f"{at(f'({c} - 2 - {j})')} = ({at(f'({c} - 2 - {j})')} - "
                f"{at(f'({c} - 3 - {j})')} * {xn}[i * {c} + ({c} - 3 - {j})]) / "
                f"({two} + {xn}[i * {c} + ({c} - 3 - {j})] * {xn}[i * {c} + ({c} - 3 - {j})]);"]
    elif form == "smooth":
        head = f"for (int {j} = 0; {j} < {c} - 2; {up})"
        body = [f"{ctype} nb = {at(j + ' + 2')};",
                f"{at(j)} = {half} * ({at(j)} + nb) - {at(j + ' + 1')};",
                f"{at(j)} = {at(j)} * {half} + {xn}[i * {c} + {j}];"]
    else:
        head = f"for (int {j} = {c} - 1; {j} > 0; {rng.choice(('--' + j, j + '--'))})"
        body = [f"{at(j)} = {at(j + ' - 1')} * {two} - {xn}[i * {c} + {j}];"]
    _row_loop(k, rng, r, head, body)
    b.launch(k, [(R, rng.choice(BLOCKS_1D))])
    b.shape.append(f"{k.name}: {form} in place along each of {R.value} rows of {C.value}")


def fam_unsigned(b: Builder) -> None:
    """Guards, counters and values computed in unsigned arithmetic, as real code mixes
    them: an interior guard `(unsigned)(i - lo) < (unsigned)(n - lo - hi)`, an unsigned
    thread index compared with a size (`i - 1 < n` is false in thread 0), an unsigned
    counter widened to size_t, a value `(T)((unsigned)j - 3u)` that wraps below 3. The
    rows run along x (uncoalesced), so polycoal restructures them: each must keep C's
    meaning of the unsigned operations (model/integer_types.py). The form `tail`
    (Rodinia gaussian's `if (i >= n - 1 - t) return;`, rows i + t): an unsigned index
    compared with a difference of int arguments that wraps where negative, restructured
    under a check at each launch that it is not (transform._unsigned_sides)."""
    rng = b.rng
    ctype = rng.choice(("float", "float", "double"))
    form = rng.choice(("interior", "minus", "counter", "value", "tail"))
    b.variant = f"unsigned:{form}"
    R = b.size("R", rng.choice((1, 2, 7, 32, 33, 100)), runtime=rng.random() < 0.5)
    C = b.size("C", rng.choice((3, 17, 32, 33, 70)), runtime=rng.random() < 0.3)
    A = b.array("A", ctype, [R, C])
    Y = b.array("Y", ctype, [R, C])
    k = b.kernel(f"{form}_unsigned")
    index = rng.choice(("int", "unsigned int", "unsigned"))
    k.lines.append(thread_index(rng, "i", "x", index if form not in ("minus", "tail")
                                else "unsigned int"))
    an, yn = k.array(A, const=True), k.array(Y)
    r, c = k.size(R), k.size(C)
    half, tiny = literal(ctype, 0.5), literal(ctype, 1e-6)
    if form == "counter":
        counter = rng.choice(("unsigned", "unsigned int", "size_t"))
        k.lines += [f"if (i < {r}) {{", f"  {ctype} s = {literal(ctype, 0.0)};",
                    f"  for ({counter} k = 0; k < {c}; k++)",
                    f"    s += {an}[(size_t)i * {c} + k] * ({ctype})(k + 1u);",
                    f"  {yn}[i * {c}] = s;", "}"]
        b.note_reduction(C.value, ctype)
        b.launch(k, [(R, rng.choice(BLOCKS_1D))])
    else:
        k.lines.append(thread_index(rng, "j", "y", index if form not in ("minus", "tail")
                                    else "unsigned int"))
        # the interior rows lo .. R - 1 - hi (none past R: the guard is huge below zero)
        lo = rng.choice([v for v in (0, 1, 2) if v <= R.value])
        hi = rng.choice([v for v in (0, 1, 2) if lo + v <= R.value])
        guard, read, write = {
            "tail": ("", "", ""),
            "interior": (f"(unsigned)(i - {lo}) < (unsigned)({r} - {lo + hi}) && j < {c}",
                         f"{an}[i * {c} + j]", f"{yn}[i * {c} + j]"),
            "minus": (f"i - 1 < {r} - 1 && j < {c}", f"{an}[i * {c} + j]",
                      f"{yn}[(i - 1) * {c} + j]"),
            "value": (f"i < {r} && j < {c}", f"{an}[i * {c} + j]", f"{yn}[i * {c} + j]"),
        }[form]
        wraps = f" + ({ctype})((unsigned)j - {rng.choice((1, 3))}u) * {tiny}" \
            if form == "value" or rng.random() < 0.3 else ""
        if form == "tail":      # rows off .. R - 1, the guard's side R - off >= 0
            off = k.size(b.runtime("OFF", rng.choice([v for v in (0, 1, 3, R.value)
                                                      if v <= R.value]), "int"))
            guard = f"i >= {r} - {off} || j >= {c}"
            read, write = f"{an}[(i + {off}) * {c} + j]", f"{yn}[(i + {off}) * {c} + j]"
            k.lines += [f"if ({guard}) return;", f"{write} = {read} * {half}{wraps};"]
        else:
            k.lines += [f"if ({guard})", f"  {write} = {read} * {half}{wraps};"]
        b.launch(k, [(R, rng.choice((1, 8, 16, 32))), (C, rng.choice((1, 4, 8, 16)))])
    b.shape.append(f"{k.name}: {form}, {R.value} rows of {C.value}, index {index}")


def fam_racy(b: Builder) -> None:
    """Kernels that must stay byte-identical: real races between threads, or pointer
    arguments that alias at the launch (the same allocation passed twice, no restrict)."""
    rng = b.rng
    ctype = rng.choice(("float", "float", "int"))
    form = rng.choice(("alias-shift", "alias-transpose", "same-element", "neighbour",
                       "accumulate-one", "copies"))
    b.variant = f"racy:{form}"
    N = b.size("N", rng.choice((31, 33, 64, 100)))
    k = b.kernel(form.replace("-", "_"))
    k.lines.append(thread_index(rng, "i", "x"))
    geometry = [(N, rng.choice(BLOCKS_1D))]
    if form == "alias-shift":
        A = b.array("A", ctype, [N])
        k.scalar(f"{ctype} *dst", A.d)
        k.scalar(f"const {ctype} *src", A.d)
        k.lines.append(f"if (i < {k.size(N)})")
        k.lines.append("  dst[i] = src[i + 1] + src[i];")
    elif form == "alias-transpose":
        M = b.size("M", rng.choice((8, 16, 33)))
        A = b.array("A", ctype, [M, M])
        k.scalar(f"{ctype} *out", A.d)
        k.scalar(f"const {ctype} *in", A.d)
        k.lines.append(thread_index(rng, "j", "y"))
        k.lines.append(f"if (i < {k.size(M)} && j < {k.size(M)})")
        k.lines.append(f"  out[j * {k.size(M)} + i] = in[i * {k.size(M)} + j];")
        geometry = [(M, rng.choice((8, 16, 32))), (M, rng.choice((1, 2, 8)))]
    elif form == "same-element":
        A = b.array("A", ctype, [N])
        y = b.array("y", ctype, [N], "zero")
        an, yn = k.array(A, const=True), k.array(y)
        k.lines.append(f"if (i < {k.size(N)})")
        k.lines.append(f"  {yn}[i / 2] = {an}[i];")
    elif form == "neighbour":
        A = b.array("A", ctype, [N])
        an = k.array(A)
        k.lines.append(f"if (i < {k.size(N)} - 1)")
        k.lines.append(f"  {an}[i + 1] = {an}[i] + {literal(ctype, 1.0)};")
    elif form == "accumulate-one":
        A = b.array("A", ctype, [N])
        y = b.array("y", ctype, [N], "zero")
        an, yn = k.array(A, const=True), k.array(y)
        k.lines.append(f"if (i < {k.size(N)})")
        k.lines.append(f"  {yn}[0] += {an}[i];")
    else:
        # ATAX-style copies: a 1-D kernel launched with 8 rows of threads along y that all
        # store the same value computed from inputs alone (deterministic): one copy leaves
        # what they leave, and polycoal collapses them by default (transform.copies_proof),
        # so the kernel may change under every option set: judged by its checksums
        M = b.size("M", rng.choice((8, 17, 33)))
        A = b.array("A", ctype, [N, M])
        y = b.array("y", ctype, [N], "zero")
        an, yn = k.array(A, const=True), k.array(y)
        k.lines.append(f"if (i < {k.size(N)}) {{")
        k.lines.append(f"  {ctype} s = 0;")
        k.lines.append(f"  for (int j = 0; j < {k.size(M)}; j++)")
        k.lines.append(f"    s += {an}[i * {k.size(M)} + j];")
        k.lines.append(f"  {yn}[i] = s;")
        k.lines.append("}")
        bx = rng.choice((32, 64))
        b.launch(k, [(N, bx), (Size(8, "8", "8"), 8)], grid_override=[None, "1"])
        b.shape.append(f"{k.name}: copies ({form})")
        return
    b.launch(k, geometry)
    b.must_keep.append(k.name)
    b.shape.append(f"{k.name}: racy ({form})")


def fam_nearmiss(b: Builder) -> None:
    """Shapes just outside the model, which polycoal must leave alone or permute
    correctly: CSR rows, data-dependent conditions, while loops, break, nested reduction
    loops, two reduction loops, shared-memory tiles with __syncthreads, user-written warp
    shuffles, atomicAdd, indirect rows; and just inside it: assignments under conditions
    on data after a row sum."""
    rng = b.rng
    form = rng.choice(("csr", "datacond", "while", "break", "nested", "two-loops", "tiled",
                       "shuffle", "atomic", "indirect", "guarded"))
    b.variant = f"nearmiss:{form}"
    ctype = "float" if form in ("tiled", "shuffle", "atomic") else choose_type(rng, (4, 1, 1))
    N = b.size("N", rng.choice((31, 33, 64, 100)))
    M = b.size("M", rng.choice((8, 17, 32, 33)))
    k = b.kernel("nm_" + form.replace("-", "_"))
    if form == "tiled":
        # out = in^T + 1 through a 16x16 tile in shared memory; sizes multiples of 16
        S = b.size("S", rng.choice((16, 32, 48)))
        A = b.array("in_", ctype, [S, S])
        O = b.array("out", ctype, [S, S], "zero")
        an, on = k.array(A, const=True), k.array(O)
        k.lines += ["__shared__ float tile[16][17];",
                    "int bx = blockIdx.x * 16, by = blockIdx.y * 16;",
                    f"tile[threadIdx.y][threadIdx.x] = {an}[(by + threadIdx.y) * {k.size(S)} + bx + threadIdx.x];",
                    "__syncthreads();",
                    f"{on}[(bx + threadIdx.y) * {k.size(S)} + by + threadIdx.x] = tile[threadIdx.x][threadIdx.y] + 1.0f;"]
        b.launch(k, [(S, 16), (S, 16)], grid_override=[f"{S.h} / 16", f"{S.h} / 16"])
        b.shape.append(f"{k.name}: shared-memory transpose with __syncthreads")
        return
    if form == "shuffle":
        # one warp per row, written by the user
        A = b.array("A", ctype, [N, M])
        y = b.array("y", ctype, [N], "zero")
        an, yn = k.array(A, const=True), k.array(y)
        k.lines += ["int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;",
                    "int lane = threadIdx.x % 32;",
                    f"if (row < {k.size(N)}) {{",
                    "  float s = 0;",
                    f"  for (int j = lane; j < {k.size(M)}; j += 32) s += {an}[row * {k.size(M)} + j];",
                    "  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffff, s, o);",
                    f"  if (lane == 0) {yn}[row] = s;",
                    "}"]
        b.note_reduction(M.value, ctype)
        b.main.append(f"  {k.name}<<<({N.h} * 32 + 127) / 128, 128>>>({k.args()});")
        b.shape.append(f"{k.name}: user-written warp-per-row reduction")
        return
    k.lines.append(thread_index(rng, "i", "x"))
    A = b.array("A", ctype, [N, M], "dyadic" if ctype != "int" else "int")
    y = b.array("y", ctype, [N], "zero")
    an, yn = k.array(A, const=True), k.array(y)
    zero = literal(ctype, 0.0)
    n, m = k.size(N), k.size(M)
    body = []
    if form == "csr":
        rowptr = b.array("rowptr", "int", [N], f"linear:{M.value}", slack=SLACK)
        col = b.array("col", "int", [N, M], f"index:{M.value}")
        x = b.array("x", ctype, [M])
        rn, cn, xn = k.array(rowptr, const=True), k.array(col, const=True), k.array(x, const=True)
        body = [f"{ctype} s = {zero};",
                f"for (int j = {rn}[i]; j < {rn}[i + 1]; j++)",
                f"  s += {an}[j] * {xn}[{cn}[j]];",
                f"{yn}[i] = s;"]
    elif form == "datacond":
        body = [f"for (int j = 0; j < {m}; j++)",
                f"  if ({an}[i * {m} + j] > {zero}) {yn}[i] += {an}[i * {m} + j];"]
    elif form == "while":
        body = ["int j = 0;", f"{ctype} s = {zero};",
                f"while (j < {m}) {{ s += {an}[i * {m} + j]; j++; }}", f"{yn}[i] = s;"]
    elif form == "break":
        body = [f"{ctype} s = {zero};", f"for (int j = 0; j < {m}; j++) {{",
                f"  if ({an}[i * {m} + j] < {literal(ctype, -1.0)}) break;",
                f"  s += {an}[i * {m} + j];", "}", f"{yn}[i] = s;"]
    elif form == "nested":
        K = b.size("K", rng.choice((2, 3, 5)))
        B = b.array("B", ctype, [N, M, K])
        bn = k.array(B, const=True)
        body = [f"for (int j = 0; j < {m}; j++)",
                f"  for (int q = 0; q < {k.size(K)}; q++)",
                f"    {yn}[i] += {bn}[(i * {m} + j) * {k.size(K)} + q];"]
        b.note_reduction(M.value * K.value, ctype)
    elif form == "two-loops":
        z = b.array("z", ctype, [N], "zero")
        zn = k.array(z)
        body = [f"for (int j = 0; j < {m}; j++)", f"  {yn}[i] += {an}[i * {m} + j];",
                f"for (int j = 0; j < {m}; j++)",
                f"  {zn}[i] += {an}[i * {m} + j] * {yn}[i];"]
    elif form == "guarded":
        # a row sum, then assignments under conditions on the sum (one statement each:
        # model/extract.guarded_statement: y[i] is written before the loop), with or
        # without an else
        body = [f"{yn}[i] = {zero};", f"for (int j = 0; j < {m}; j++)",
                f"  {yn}[i] += {an}[i * {m} + j];",
                f"if ({yn}[i] < {zero}) {yn}[i] = -{yn}[i];" if rng.random() < 0.5 else
                f"if ({yn}[i] < {zero}) {{ {yn}[i] = -{yn}[i]; }} else "
                f"{{ {yn}[i] = {yn}[i] * {literal(ctype, 2.0)}; }}",
                f"if ({yn}[i] > {literal(ctype, 4.0)}) {yn}[i] = {literal(ctype, 4.0)};"]
    elif form == "atomic":
        body = [f"for (int j = 0; j < {m}; j++)",
                f"  atomicAdd(&{yn}[j], {an}[i * {m} + j]);"]
        b.note_reduction(N.value, ctype)
    elif form == "indirect":
        P = b.array("P", "int", [N], f"index:{N.value}")
        x = b.array("x", ctype, [M])
        pn, xn = k.array(P, const=True), k.array(x, const=True)
        body = [f"for (int j = 0; j < {m}; j++)",
                f"  {yn}[i] += {an}[{pn}[i] * {m} + j] * {xn}[j];"]
    k.lines.append(f"if (i < {n}) {{")
    k.lines += ["  " + l for l in body]
    k.lines.append("}")
    b.note_reduction(M.value, ctype)
    b.launch(k, [(N, rng.choice(BLOCKS_1D))])
    b.shape.append(f"{k.name}: near miss ({form})")


# ----------------------------------------------------------------- arrays of structs

STRUCT_FIELDS = ("x", "y", "z", "vx", "vy", "vz", "m", "q", "w", "rho", "h", "e")


def _struct_type(b: Builder) -> tuple[str, str, list[tuple[str, str]]]:
    """(name, definition, leaves) of a random plain struct: 2 to 7 scalar fields (mostly
    float, some int or double), sometimes a float3 member or a field array."""
    rng = b.rng
    name = b.fresh(rng.choice(("Body", "Particle", "Cell", "Agent", "Sample")))
    fields, leaves = [], []
    for f in rng.sample(STRUCT_FIELDS, rng.randint(2, 7)):
        ctype = rng.choice(("float",) * 6 + ("int", "double"))
        fields.append(f"  {ctype} {f};")
        leaves.append((f, ctype))
    if rng.random() < 0.2:
        fields.insert(rng.randrange(len(fields) + 1), "  float3 pos;")
        leaves += [(f"pos.{c}", "float") for c in "xyz"]
    if rng.random() < 0.15:
        fields.append("  float g[2];")
        leaves += [("g[0]", "float"), ("g[1]", "float")]
    style = rng.choice(("typedef", "struct", "tagged"))
    body = "\n".join(fields)
    if style == "typedef":
        text = f"typedef struct {{\n{body}\n}} {name};\n\n"
    elif style == "tagged":
        text = f"typedef struct {name}_s {{\n{body}\n}} {name};\n\n"
    else:
        text = f"struct {name} {{\n{body}\n}};\n\n"
    return name, text, leaves


def _field_expr(rng: random.Random, ref: str, leaves: list[tuple[str, str]],
                reads: list[str]) -> str:
    """A small expression of the fields `reads` of element `ref` (`p[i]`)."""
    terms = []
    for path in reads:
        scale = rng.choice(("", " * 0.5f", " * 2.0f", " + 1.0f", " - 0.25f"))
        terms.append(f"{ref}.{path}{scale}")
    op = rng.choice((" + ", " - ", " + "))
    return op.join(terms) if len(terms) < 3 else f"{terms[0]} * 0.5f + {terms[1]} - {terms[2]}"


def fam_structs(b: Builder) -> None:
    """Kernels over arrays of structs (`p[i].x`): element-wise updates of some fields,
    all-pairs loops reading every element's fields (the n-body shape), windows over
    neighbours, two arrays of one struct swapped between steps; fields read as `p->f`
    and through a cast (`((float *)p)[K * i + f]`). The layout transformation changes
    where each field lives; every field of every array is checked."""
    rng = b.rng
    sname, definition, leaves = _struct_type(b)
    floats = [p for p, t in leaves if t == "float"]
    N = b.size("N", rng.choice((33, 64, 100, 130, 257)), runtime=rng.random() < 0.5)
    arr = b.array("p", sname, [N])
    arr.fields = leaves
    shapes = rng.sample(("map", "allpairs", "window", "pair", "map"), rng.randint(1, 3))
    first = True
    for shape in shapes:
        k = b.kernel(rng.choice(("update", "forces", "advance", "smooth", "kick")))
        if first:
            k.before = definition
            first = False
        p = k.array(arr)
        n = k.size(N)
        i = "i"
        k.lines.append(thread_index(rng, i, "x"))
        reads = rng.sample(floats or [leaves[0][0]], min(len(floats or [1]), rng.randint(1, 3)))
        free = [f for f in floats if f not in reads]
        if shape == "map":
            targets = rng.sample(floats or [leaves[0][0]], min(len(floats or [1]),
                                                              rng.randint(1, 2)))
            k.lines.append(f"if ({i} < {n}) {{")
            # the element as written (p[i]), through a pointer to it, or read whole
            spelling = rng.choice(("index", "index", "pointer", "whole"))
            ref = f"{p}[{i}]"
            if spelling == "pointer":
                k.lines.append(f"  {sname} *e = &{p}[{i}];")
            elif spelling == "whole":
                k.lines.append(f"  {sname} e = {p}[{i}];")
            for t in targets:
                op = rng.choice(("=", "+=", "-=", "*="))
                source = {"pointer": "(*e)", "whole": "e"}.get(spelling, ref)
                expr = _field_expr(rng, source, leaves, reads)
                if spelling == "pointer":
                    expr = expr.replace("(*e).", "e->")
                    k.lines.append(f"  e->{t} {op} {expr};")
                else:
                    k.lines.append(f"  {ref}.{t} {op} {expr};")
            if rng.random() < 0.3 and leaves[0][0] not in targets and leaves[0][1] == "float" \
                    and targets[0] != leaves[0][0]:
                k.lines.append(f"  {p}[{i}].{targets[0]} += {p}->{leaves[0][0]} * 0.5f;")
            k.lines.append("}")
            b.launch(k, [(N, rng.choice(BLOCKS_1D))])
        elif shape in ("allpairs", "window") and free:
            target = rng.choice(free)
            window = shape == "window"
            W = rng.choice((3, 4, 8))
            bound = f"{n} - {W}" if window else n
            k.lines.append(f"if ({i} < {bound}) {{")
            k.lines.append("  float acc = 0.0f;")
            loop = f"for (int w = 0; w < {W}; w++)" if window else \
                f"for (int j = 0; j < {n}; j++)"
            elem = f"{p}[{i} + w]" if window else f"{p}[j]"
            k.lines.append(f"  {loop} {{")
            k.lines.append(f"    acc += {_field_expr(rng, elem, leaves, reads)};")
            k.lines.append("  }")
            k.lines.append(f"  {p}[{i}].{target} = acc;")
            k.lines.append("}")
            b.launch(k, [(N, rng.choice(BLOCKS_1D))])
            b.note_reduction(N.value, "float")
        elif shape == "pair":
            other = b.array("q", sname, [N])
            other.fields = leaves
            out = k.array(other)
            src = k.params[0][0]
            k.params[0] = ("const " + src, k.params[0][1])
            k.lines.append(f"if ({i} < {n}) {{")
            for t in rng.sample(floats or [leaves[0][0]], min(len(floats or [1]), 2)):
                k.lines.append(f"  {out}[{i}].{t} = {_field_expr(rng, f'{p}[{i}]', leaves, reads)};")
            k.lines.append("}")
            steps = rng.choice((1, 2, 3))
            b.main.append(f"  for (int step = 0; step < {steps}; step++) {{")
            b.launch(k, [(N, rng.choice(BLOCKS_1D))], indent="    ")
            b.main.append(f"    {sname} *t = {arr.d}; {arr.d} = {other.d}; {other.d} = t;")
            b.main.append("  }")
        else:
            # a field read through a cast: every leaf a float, one element = K floats
            k.lines.append(f"if ({i} < {n}) {{")
            target = rng.choice(floats or [leaves[0][0]])
            if all(t == "float" for _, t in leaves):
                width = len(leaves)
                at = rng.randrange(width)
                k.lines.append(f"  {p}[{i}].{target} += ((const float *){p})[{width} * {i} + {at}];")
            else:
                k.lines.append(f"  {p}[{i}].{target} *= 0.5f;")
            k.lines.append("}")
            b.launch(k, [(N, rng.choice(BLOCKS_1D))])
        b.shape.append(f"{k.name}: {shape} over {sname} ({len(leaves)} fields)")
    b.variant = "structs:" + "+".join(shapes)


# ----------------------------------------------------------------- irregular references

def _source_writer(b: Builder, arr: Array, n: Size, indent: str) -> None:
    """A kernel that rewrites an array between launches (its copies then go stale)."""
    k = b.kernel("refresh")
    a = k.array(arr)
    m = k.size(n)
    k.lines.append(thread_index(b.rng, "i", "x"))
    value = "(a[i] + 1) % 7" if arr.ctype == "int" else f"a[i] * {literal(arr.ctype, 0.5)}"
    k.lines.append(f"if (i < {m}) {a}[i] = {value.replace('a[i]', f'{a}[i]')};")
    b.launch(k, [(n, b.rng.choice(BLOCKS_1D))], indent=indent)


def fam_irregular(b: Builder) -> None:
    """Irregular references (issue 17): gathers through an index array (`A[P[e]]`, the
    index in a local, a grid-stride loop) and loops over CSR-style runs (row pointers,
    lengths, `A[B[i] + k]`), launched in host loops of a few to many steps (enough to
    reuse reorganised copies), the sources sometimes rewritten between launches, so that
    a stale copy would show. The loops keep their order: every check is exact."""
    rng = b.rng
    N = b.size("N", rng.choice((40, 64, 100, 257, 300)), runtime=rng.random() < 0.5)
    shape = rng.choice(("gather", "gather", "csr", "lengths", "offsets"))
    steps = rng.choice((3, 12, 30) if shape == "gather" else (12, 30, 40))
    ctype = choose_type(rng)
    k = b.kernel(rng.choice(("gather", "spmv", "lookup", "pull")))
    n = k.size(N)
    writer = None
    if shape == "gather":
        M = b.size("M", rng.choice((N.value, 3 * N.value // 2, 17)))
        src = b.array("table", ctype, [M])
        idx = b.array("perm", "int", [N], fill=f"index:{M.h}")
        out = b.array("out", ctype, [N])
        a = k.array(src, const=rng.random() < 0.5)
        p = k.array(idx, const=rng.random() < 0.5)
        o = k.array(out)
        shift = rng.choice((0, 0, 1))
        e = "i" if not shift else "i + 1"
        bound = n if not shift else f"{n} - 1"
        if rng.random() < 0.4:
            k.lines.append(f"for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < {bound}; "
                           "i += blockDim.x * gridDim.x) {")
        else:
            k.lines.append(thread_index(rng, "i", "x"))
            k.lines.append(f"if (i < {bound}) {{")
        if rng.random() < 0.5:
            k.lines.append(f"  int j = {p}[{e}];")
            ref = f"{a}[j]"
        else:
            ref = f"{a}[{p}[{e}]]"
        op = rng.choice(("=", "+="))
        k.lines.append(f"  {o}[i] {op} {ref} * {literal(ctype, 2.0)};")
        k.lines.append("}")
        writer = rng.choice((None, None, src, idx))
        b.shape.append(f"{k.name}: gather {ref} over {N.value} threads, {steps} launches"
                       + (f" per round, {writer.name} rewritten between rounds" if writer
                          else ""))
    else:
        width = rng.choice((3, 5, 9, 17))
        NNZ = b.size("NNZ", N.value * width)
        val = b.array("val", ctype, [NNZ])
        x = b.array("x", ctype, [N])
        y = b.array("y", ctype, [N])
        starts = b.array("rows", "int", [N], fill=f"rowptr:{width}" if shape == "csr"
                         else f"linear:{width}")
        v = k.array(val, const=rng.random() < 0.5)
        r = k.array(starts, const=rng.random() < 0.5)
        gathered = shape == "csr" and rng.random() < 0.6
        if gathered:
            col = b.array("col", "int", [NNZ], fill=f"index:{N.h}")
            c = k.array(col, const=True)
            xs = k.array(x, const=True)
        ys = k.array(y)
        if shape != "csr":
            lens = b.array("len", "int", [N], fill=f"index:{width + 1}")
            ln = k.array(lens, const=True)
        k.lines.append(thread_index(rng, "row", "x"))
        k.lines.append(f"if (row < {n}) {{")
        k.lines.append(f"  {ctype} acc = {literal(ctype, 0.0)};")
        term = (f"{v}[k] * {xs}[{c}[k]]" if gathered else f"{v}[k]")
        if shape == "csr" and rng.random() < 0.5:
            k.lines.append(f"  int start = {r}[row], end = {r}[row + 1];")
            k.lines.append("  for (int k = start; k < end; k++)")
        elif shape == "csr":
            k.lines.append(f"  for (int k = {r}[row]; k < {r}[row + 1]; ++k)")
        elif shape == "lengths":
            k.lines.append(f"  for (int k = {r}[row]; k < {r}[row] + {ln}[row]; k++)")
        else:
            k.lines.append(f"  int first = {r}[row];")
            k.lines.append(f"  for (int k = 0; k < {ln}[row]; k++)")
            term = f"{v}[first + k]"
        k.lines.append(f"    acc += {term};")
        k.lines.append(f"  {ys}[row] {rng.choice(('=', '+='))} acc;")
        k.lines.append("}")
        writer = rng.choice((None, None, val))
        b.shape.append(f"{k.name}: {shape} runs of up to {width} over {N.value} rows, "
                       f"{steps} launches" + (" per round, values rewritten between rounds"
                                              if writer else ""))
    # a rewrite of a source between rounds of launches: the copies are rebuilt each round
    indent = "    " if writer is not None else "  "
    if writer is not None:
        b.main.append(f"  for (int sweep = 0; sweep < {rng.choice((2, 3))}; sweep++) {{")
        _source_writer(b, writer, writer.dims[0], indent)
    b.main.append(f"{indent}for (int step = 0; step < {steps}; step++) {{")
    b.launch(k, [(N, rng.choice(BLOCKS_1D))], indent=indent + "  ")
    b.main.append(f"{indent}}}")
    if writer is not None:
        b.main.append("  }")
    b.variant = f"irregular:{shape}"


STYLE_BASES = ("affine", "rowred", "colred", "bounds", "guards", "multi", "runtime",
               "hostloop", "racy", "nearmiss", "product", "stencil")
STYLES = ("template", "namespace", "struct", "pointer", "macro", "assert")


def fam_styles(b: Builder) -> None:
    """Another family's program, each kernel then written in one or more styles of real
    C++ code: a template over its element type (launched `k<float><<<...>>>`), inside a
    namespace (`ns::k<<<...>>>`), its arrays passed in a struct by value (`b.A[i]`), its
    subscripts as pointer arithmetic (`*(A + i)`). The program means the same; kernels
    that must stay byte-identical still must."""
    rng = b.rng
    base = rng.choice(STYLE_BASES)
    FAMILY_FUNCTIONS[base](b)
    applied = []
    for k in b.kernels:
        # the macro last: it wraps the launch as the other styles leave it
        styles = sorted(rng.sample(STYLES, rng.choice((1, 1, 2))), key=lambda x: (x == "macro", x))
        launch = _launch_text(k, b.main)
        if launch is None:
            continue
        for style in styles:
            launch = STYLE_FUNCTIONS[style](rng, k, launch)
        b.main = [launch[1] if n == launch[0] else line for n, line in enumerate(b.main)]
        applied.append(f"{k.name}: {'+'.join(styles)}")
    b.variant = f"styles:{base}"
    b.shape.append(f"styles over {base}: " + ", ".join(applied))


def _launch_text(k: Kernel, main: list[str]) -> tuple[int, str] | None:
    """(line, text) of the kernel's one launch in main (styles are given to kernels
    launched once, where the launch is one line)."""
    found = [(n, line) for n, line in enumerate(main) if f"{k.name}<<<" in line]
    return found[0] if len(found) == 1 else None


_ARRAY_DECL = re.compile(r"^(const )?(float|double|int) \*(__restrict__ )?(\w+)$")


def _style_template(rng: random.Random, k: Kernel, launch: tuple[int, str]):
    """template <typename T>: the pointer parameters of one element type take T."""
    types = [m.group(2) for m in (_ARRAY_DECL.match(p) for p, _ in k.params) if m]
    if not types:
        k.template = "template <int Unused>\n"
        return launch[0], launch[1].replace(f"{k.name}<<<", f"{k.name}<{rng.randrange(1, 9)}><<<")
    ctype = rng.choice(types)
    k.params = [(re.sub(rf"\b{ctype}\b", "ElemT", p, count=1) if (m := _ARRAY_DECL.match(p))
                 and m.group(2) == ctype else p, h) for p, h in k.params]
    k.template = "template <typename ElemT>\n"
    written = f"{k.name}<{ctype}>" if rng.random() < 0.7 else k.name    # or deduced
    return launch[0], launch[1].replace(f"{k.name}<<<", f"{written}<<<")


def _style_namespace(rng: random.Random, k: Kernel, launch: tuple[int, str]):
    k.namespace = f"ns_{k.name}"
    return launch[0], re.sub(rf"(?<![\w:]){k.name}(?=[<])", f"{k.namespace}::{k.name}",
                             launch[1], count=1)


def _style_struct(rng: random.Random, k: Kernel, launch: tuple[int, str]):
    """The pointer parameters as fields of a struct passed by value; the launch fills
    one in a block of its own."""
    fields = [(p, h, m.group(4)) for p, h in k.params if (m := _ARRAY_DECL.match(p))]
    if not fields or any(m.group(3) for p, _ in k.params if (m := _ARRAY_DECL.match(p))):
        return launch      # restrict pointers keep their evidence as parameters
    struct, var = f"Args_{k.name}", "args"
    k.before += f"struct {struct} {{\n" + "".join(f"  {p};\n" for p, _, _ in fields) + "};\n\n"
    names = {n for _, _, n in fields}
    k.lines = [re.sub(r"(?<![\w.])(" + "|".join(sorted(names)) + r")\b(?!\s*\()",
                      lambda m: f"bufs.{m.group(1)}", line) for line in k.lines]
    old_args = k.args()
    first = next(n for n, (p, _) in enumerate(k.params) if _ARRAY_DECL.match(p))
    k.params = [(f"{struct} bufs", var) if n == first else (p, h)
                for n, (p, h) in enumerate(k.params)
                if n == first or not _ARRAY_DECL.match(p)]
    setup = f"{struct} {var}; " + " ".join(f"{var}.{n} = {h};" for _, h, n in fields)
    n, text = launch
    indent = text[:len(text) - len(text.lstrip())]
    call = text.strip().replace(f"({old_args});", f"({k.args()});")
    return n, f"{indent}{{ {setup} {call} }}"


def _style_pointer(rng: random.Random, k: Kernel, launch: tuple[int, str]):
    """Subscripts of pointer parameters written `*(A + e)` (the parameters' names as
    the kernel spells them; not after the struct style, whose fields are `bufs.A`)."""
    names = [m.group(4) for m in (_ARRAY_DECL.match(p) for p, _ in k.params) if m]
    k.lines = [_dereferences(line, names) for line in k.lines]
    return launch


def _dereferences(line: str, names: list[str]) -> str:
    if not names:
        return line
    pattern = re.compile(r"(?<![\w.])(" + "|".join(sorted(names)) + r")\[")
    while True:
        m = pattern.search(line)
        if m is None:
            return line
        depth, j = 0, m.end() - 1
        while j < len(line):
            depth += {"[": 1, "]": -1}.get(line[j], 0)
            if depth == 0:
                break
            j += 1
        if j >= len(line):
            return line
        index = line[m.end():j]
        offset = index if re.fullmatch(r"[\w\s*+]+", index) else f"({index})"
        line = f"{line[:m.start()]}*({m.group(1)} + {offset}){line[j + 1:]}"


_LAUNCH = re.compile(r"((?:\w+::)*\w+(?:<[^<>;]*>)?)<<<(.*?)>>>\((.*)\);")


def _style_macro(rng: random.Random, k: Kernel, launch: tuple[int, str]):
    """The launch written through a function-like macro, as error-checking wrappers
    are: variadic (`__VA_ARGS__`), GNU named variadic (`args...`), a do-while block with
    a check after the launch, or the kernel's name in the macro body."""
    n, text = launch
    m = _LAUNCH.search(text)
    if m is None:
        return launch
    callee, config, arguments = m.groups()
    parts = _top_level(config)
    macro = f"LAUNCH_{k.name.upper()}"
    geometry = ", ".join(f"g{q}" for q in range(len(parts)))
    form = rng.choice(("variadic", "named", "checked", "fixed"))
    if form == "variadic":
        k.after += f"#define {macro}(kern, {geometry}, ...) kern<<<{geometry}>>>(__VA_ARGS__)\n"
        call = f"{macro}({callee}, {', '.join(parts)}, {arguments})"
    elif form == "named":
        k.after += f"#define {macro}(kern, {geometry}, args...) kern<<<{geometry}>>>(args)\n"
        call = f"{macro}({callee}, {', '.join(parts)}, {arguments})"
    elif form == "checked":
        k.after += (f"#define {macro}(kern, {geometry}, ...) do {{ \\\n"
                    f"    kern<<<{geometry}>>>(__VA_ARGS__); \\\n"
                    f"    if (cudaGetLastError() != cudaSuccess) printf(\"launch failed\\n\"); \\\n"
                    f"  }} while (0)\n")
        call = f"{macro}({callee}, {', '.join(parts)}, {arguments})"
    else:
        k.after += f"#define {macro}({geometry}, ...) {callee}<<<{geometry}>>>(__VA_ARGS__)\n"
        call = f"{macro}({', '.join(parts)}, {arguments})"
    return n, text[:m.start()] + call + ";" + text[m.end():]


def _top_level(text: str) -> list[str]:
    """`text` split at its commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return parts + [current.strip()]


def _style_assert(rng: random.Random, k: Kernel, launch: tuple[int, str]):
    """`assert`s that always hold: on a thread index after its declaration, and on a
    size argument (`<cassert>` is included); the model keeps them as statements."""
    for n, line in enumerate(k.lines):
        m = re.match(r"(?:const )?(?:int|long|unsigned) (\w+) = .*(?:threadIdx|blockIdx)", line)
        if m:
            k.lines.insert(n + 1, f"assert({m.group(1)} >= 0);")
            break
    sizes = [m.group(1) for p, _ in k.params if (m := re.fullmatch(r"(?:const )?int (\w+)", p))]
    if sizes:
        k.lines.insert(0, f"assert({rng.choice(sizes)} >= 0);")
    k.includes.add("cassert")
    return launch


STYLE_FUNCTIONS = {"template": _style_template, "namespace": _style_namespace,
                   "struct": _style_struct, "pointer": _style_pointer,
                   "macro": _style_macro, "assert": _style_assert}


FAMILY_FUNCTIONS = {"affine": fam_affine, "rowred": fam_rowred, "colred": fam_colred,
                    "bounds": fam_bounds, "guards": fam_guards, "multi": fam_multi,
                    "runtime": fam_runtime, "hostloop": fam_hostloop, "racy": fam_racy,
                    "nearmiss": fam_nearmiss, "styles": fam_styles,
                    "transpose": fam_transpose, "product": fam_product,
                    "stencil": fam_stencil, "structs": fam_structs,
                    "irregular": fam_irregular, "recurrence": fam_recurrence,
                    "inplace": fam_inplace, "unsigned": fam_unsigned}


def generate(seed: int, family: str | None = None, constructs=None,
             project: bool = False) -> GeneratedProgram:
    """The program of `seed` (in `family`, or one chosen by the seed). `constructs`: the
    C++ constructs over it (cxx.choose: None or "none", the program of the generator
    without them; "mix", a quarter of the programs get some; "all"; or a list of names),
    drawn from a generator of their own, so that a seed without constructs gives the
    same program in every mode. `project`: the program as a project of two translation
    units and a header with its compile database (project.py)."""
    from polycoal.difftest import cxx
    rng = random.Random(seed)
    family = family or rng.choice(FAMILIES)
    rng = random.Random(f"{family}:{seed}")
    b = Builder(rng)
    FAMILY_FUNCTIONS[family](b)
    crng = random.Random(f"cxx:{family}:{seed}")
    applied = cxx.apply(b, crng, cxx.choose(crng, constructs), seed)
    if applied:
        b.shape.append("C++ constructs: " + ", ".join(applied))
    layout = None
    if project:
        from polycoal.difftest import project as projects
        layout = projects.layout(b, random.Random(f"project:{family}:{seed}"), seed)
    source = b.render()
    checks = {}
    for a in b.arrays:
        for name, ctype in ([(f"{a.name}.{p}", t) for p, t in a.fields] if a.fields
                            else [(a.name, a.ctype)]):
            if b.reduction_terms and ctype in ("float", "double"):
                checks[name] = Check("reduction", b.reduction_terms, ctype)
            else:
                checks[name] = Check()
    header = (f"/* polycoal difftest: family {family}, seed {seed}\n" +
              "".join(f" * {s}\n" for s in b.shape) + " */\n")
    program = GeneratedProgram(seed, family, header + source, checks, list(b.must_keep),
                               "; ".join(b.shape), b.variant, dict(b.keep_exempt),
                               applied, b.headers())
    if layout is not None:
        program.project = projects.render(b, layout, header)
        program.source = program.project["files"][projects.UNITS[0]]
        program.files = {}
    return program
