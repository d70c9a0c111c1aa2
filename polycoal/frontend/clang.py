"""Reading a .cu file with Clang (libclang in CUDA mode): the kernels wherever they are
defined, their launches with the instantiation each names, and the file-scope
constants the kernels read, with their values.

This is the reader chosen for issue 13 (docs/frontend.md): Clang reads what nvcc reads
(C++, templates, namespaces, headers, constants), and what it reads is to be lowered to
the C subset the model consumes. The file is parsed as nvcc's host pass sees it:

    -x cuda --cuda-gpu-arch=sm_90 -nocudainc -nocudalib --cuda-host-only -std=...

with CUDA's declarations force-included from grammars/clang_cuda.h (the libclang wheel
carries none of Clang's own headers, so CUDA's are replaced by that file and empty
stubs, and the host compiler's builtin headers give `stddef.h` and the like), the
user's -I/-D/-U and forced includes (`-include`, `-imacros`, after polycoal's), and the
input's directory on the include path. nvcc accepts a launch
written `k << < g, b >> > (a)`, Clang does not: such brackets are closed up in the text
Clang reads (same length, so every line and column stays).

Everything is returned as plain data; nothing here depends on the rest of polycoal but
the preprocessor options.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import itertools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from importlib import resources

from polycoal.frontend import opaque, toolkit
from polycoal.frontend.lexer import qualifier_start, tokenize
from polycoal.frontend.preprocess import PreprocessorOptions

# CUDA headers a program includes, read as empty files (their declarations are in
# grammars/clang_cuda.h; those of the toolkit's libraries are in grammars/clang_toolkit)
CUDA_HEADERS = ("cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "device_launch_parameters.h",
                "device_functions.h", "math_functions.h", "vector_types.h",
                "driver_types.h", "sm_60_atomic_functions.h")
_INTEGER_KINDS = set()          # filled with libclang's integer TypeKinds on first use


@dataclass(frozen=True)
class Place:
    file: str
    line: int
    start: int              # offsets into that file's text (the kernel's whole definition)
    end: int


@dataclass(frozen=True)
class ClangKernel:
    name: str
    qualified: str          # with its namespaces: linalg::rowsum
    place: Place
    template_parameters: tuple[str, ...] = ()     # () for a plain kernel
    constants: tuple[tuple[str, int], ...] = ()   # file-scope constants read, with values
    declared: frozenset[str] = frozenset()        # names its parameters and locals declare
    # the names of its type aliases declared in user code (`using real = float;`), as
    # offsets [start, end) in its file with the type each stands for
    aliases: tuple[tuple[int, int, str], ...] = ()
    # its parameters passed as structs of pointers and numbers and used only through
    # their members: (name, position, [start, end) of the declaration, fields as
    # (name, type)); and each member use (start, end, parameter, field)
    records: tuple[tuple[str, int, int, int, tuple[tuple[str, str], ...]], ...] = ()
    members: tuple[tuple[int, int, str, str], ...] = ()
    calls: tuple[Call, ...] = ()            # calls of the unit's helpers
    # C++ casts (`T(e)`, `static_cast<T>(e)`): (start, [type start, end), [operand start,
    # end), end), offsets in its file
    casts: tuple[tuple[int, int, int, int, int, int], ...] = ()
    # Clang reports no error inside its definition and it names no declaration Clang
    # found invalid: what Clang read of it stands even where the file has errors
    # elsewhere (a host library polycoal declares nothing of, thrust or MPI)
    clean: bool = True
    # C++ words the C subset reads otherwise, as (start, end, replacement) in its file:
    # `auto` in a declaration by the type Clang deduced, `constexpr` as `const`,
    # `nullptr` as 0, `std::` and `::` before a C library function dropped
    words: tuple[tuple[int, int, str], ...] = ()
    # the kind of each template parameter: "type", "int" (an integer or bool value),
    # or "other" (an enum, a template template parameter, a pack)
    template_kinds: tuple[str, ...] = ()
    # statements the C subset cannot read, as (start, end, `__pc_opaque(...)` text) in its
    # file (frontend/opaque.py): () none, None one outside every statement
    opaque: tuple[tuple[int, int, str], ...] | None = ()
    # for each instantiation a launch of the unit names (its template arguments as the
    # launch spells them): the declarations whose type depends on the template's
    # parameters in a way C cannot write before it is instantiated (`auto x = e;`,
    # `typename Conv<T>::Type v;`), as (start, end, the type Clang instantiated)
    instance_words: tuple[tuple[tuple[str, ...], tuple[tuple[int, int, str], ...]], ...] = ()

    @property
    def is_template(self) -> bool:
        return bool(self.template_parameters)


@dataclass(frozen=True)
class Helper:
    """A `__device__` function small enough to be inlined where a kernel calls it: its
    body is expression statements (a void function) or one `return e;`, calling no
    function of the user's."""
    name: str
    parameters: tuple[tuple[str, str, bool], ...]   # (name, canonical type, by reference)
    statements: tuple[str, ...] = ()                # their texts, on one line each
    result: str | None = None                       # the returned expression's text
    returns: str = "void"                           # its canonical return type
    # a function template's type parameters (`template <typename T>`): its parameters'
    # and return types are then as written (`const T &`), T deduced at each call
    template_parameters: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    """A kernel's call of a helper: offsets of the call and of each argument, with the
    argument's canonical type, and whether the call is a statement of a block."""
    start: int
    end: int
    helper: str             # the helper's USR
    arguments: tuple[tuple[int, int, str], ...]
    statement: bool


@dataclass(frozen=True)
class ClangLaunch:
    kernel: str             # the kernel's qualified name ('' when it is not resolved)
    line: int
    file: str
    template_arguments: tuple[str, ...] = ()   # as Clang spells them: ('float',), ('64',)
    dependent: bool = False  # inside a template whose arguments decide the kernel
    # offsets in `file`: the callee as written (`linalg::rowsum<float>`, up to `<<<`), or
    # None when it comes from a macro; where the file-scope declaration holding the
    # launch starts (a function, or the namespace around it)
    callee: tuple[int, int] | None = None
    scope_start: int | None = None
    arguments: tuple[tuple[int, int], ...] = ()     # each argument's offsets in `file`
    # a launch written inside a host function template, as one instantiation of that
    # template runs it (`run<64>()` makes `k<ROWS><<<...>>>` a launch of k<64>): the
    # template's parameters with this instantiation's arguments, as (parameter, argument,
    # whether it is a type); and the launch expression's offsets [start, end)
    instance: tuple[tuple[str, str, bool], ...] = ()
    expression: tuple[int, int] | None = None


@dataclass
class ClangUnit:
    path: str
    kernels: list[ClangKernel] = field(default_factory=list)
    launches: list[ClangLaunch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)     # "file:line: message"
    # the same errors as (file, line, column, message), in Clang's order
    error_sites: list[tuple[str, int, int, str]] = field(default_factory=list)
    # integer constants declared at file or namespace scope (`constexpr int ROWS = 512;`,
    # `static const int PAD = 4;`), by unqualified name, with the values Clang evaluates;
    # a name two of them share with different values is left out
    constants: dict[str, int] = field(default_factory=dict)
    # their declared types as C spells the canonical type (`unsigned int` for a `constexpr
    # u32`); '?' for a name declared with two types
    constant_types: dict[str, str] = field(default_factory=dict)
    helpers: dict[str, Helper] = field(default_factory=dict)     # by USR
    # a template kernel launched in a member function of a class template that the
    # unit never calls (so never instantiated), with the arguments the launch would
    # take at the class's instantiation the unit does use (`insert<K, V>` in `Table<K,
    # V>::insert`, with `Table<uint64_t, uint32_t>`)
    class_arguments: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def kernel(self, name: str) -> ClangKernel | None:
        return next((k for k in self.kernels if name in (k.name, k.qualified)), None)


@functools.lru_cache(maxsize=1)
def _cindex():
    """The libclang bindings with the C functions the Python module does not wrap
    (clang_Cursor_Evaluate), or None when libclang is not installed."""
    try:
        import clang.cindex as ci
        lib = ci.conf.lib
    except Exception:             # noqa: BLE001 - not installed, or no shared library
        return None
    lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
    lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
    lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    lib.clang_isInvalidDeclaration.argtypes = [ci.Cursor]
    lib.clang_isInvalidDeclaration.restype = ctypes.c_uint
    k = ci.TypeKind
    _INTEGER_KINDS.update({k.BOOL, k.CHAR_U, k.UCHAR, k.USHORT, k.UINT, k.ULONG, k.ULONGLONG,
                           k.CHAR_S, k.SCHAR, k.SHORT, k.INT, k.LONG, k.LONGLONG, k.ENUM})
    return ci


def available() -> bool:
    return _cindex() is not None


@functools.lru_cache(maxsize=1)
def _builtin_include() -> str | None:
    """The host compiler's own header directory (stddef.h, stdarg.h...)."""
    for cc in ("cc", "gcc", "clang"):
        if shutil.which(cc):
            out = subprocess.run([cc, "-print-file-name=include"], capture_output=True,
                                 text=True).stdout.strip()
            if out and os.path.isdir(out):
                return out
    return None


@functools.lru_cache(maxsize=1)
def _stub_directory() -> str:
    directory = tempfile.mkdtemp(prefix="polycoal-clang-")
    for header in CUDA_HEADERS:
        with open(os.path.join(directory, header), "w") as f:
            f.write("#pragma once\n")
    return directory


def declarations_header(name: str = "clang_cuda.h") -> str:
    """polycoal's declarations of CUDA for Clang: the runtime (clang_cuda.h), the
    toolkit's libraries (clang_cuda_toolkit.h)."""
    return str(resources.files("polycoal.grammars") / name)


def arguments(path: str, options: PreprocessorOptions) -> list[str]:
    args = ["-x", "cuda", "--cuda-gpu-arch=sm_90", "-nocudainc", "-nocudalib",
            "--cuda-host-only", f"-std={options.std}", "-w", "-ferror-limit=0",
            # nvcc accepts `register` in C++17 (Clang's default is an error)
            "-Wno-register", "-include", declarations_header(),
            "-include", declarations_header("clang_cuda_toolkit.h")]
    args += options.forced_arguments()          # the build's, after polycoal's own
    args += [f"-D{d}" for d in options.defines] + [f"-U{u}" for u in options.undefines]
    args += [f"-I{d}" for d in options.include_dirs]
    args += [f"-I{os.path.dirname(os.path.abspath(path))}",
             "-isystem", str(resources.files("polycoal.grammars") / "clang_toolkit"),
             "-isystem", _stub_directory(), "-isystem", toolkit.read_directory()]
    builtin = _builtin_include()
    return args + (["-isystem", builtin] if builtin else [])


def encoded(text: str) -> bytes:
    """The text as the bytes of its file (polycoal.output.decode keeps every byte), for
    Clang to read as the file."""
    return text.encode("utf-8", "surrogateescape")


class _Chars:
    """Clang's offsets are bytes of a file's UTF-8 text; polycoal's, characters of the
    text as read (polycoal.output.decode). One file's map from the first to the second
    (the identity for an ASCII file)."""

    def __init__(self, text: str):
        self.ascii = text.isascii()
        if not self.ascii:
            self.starts = list(itertools.accumulate(
                (len(c.encode("utf-8", "surrogateescape")) for c in text), initial=0))

    def __call__(self, offset: int) -> int:
        return offset if self.ascii else bisect.bisect_left(self.starts, offset)


_CHARS: dict[str, _Chars] = {}       # by file name: the texts Clang read


def _at(location) -> int:
    """A source location's offset in characters of its file's text."""
    name = location.file.name if location.file is not None else None
    if name not in _CHARS:
        try:
            with open(name, encoding="utf-8", errors="surrogateescape", newline="") as f:
                _CHARS[name] = _Chars(f.read())
        except (OSError, TypeError):
            return location.offset
    return _CHARS[name](location.offset)


def closed_up(text: str) -> str:
    """`k << < g, b >> > (a)` as `k <<<  g, b >>>  (a)`: the same length. The launch
    brackets are the front end's lexer's (frontend/lexer.py decides which spaced `>> >`
    closes a launch and which closes templates)."""
    out = list(text)
    for t in tokenize(text):
        if t.text in ("<<<", ">>>") and t.end - t.start > 3:
            out[t.start:t.end] = list(t.text + " " * (t.end - t.start - 3))
    return "".join(out)


def _evaluate(ci, cursor) -> int | None:
    lib = ci.conf.lib
    result = lib.clang_Cursor_Evaluate(cursor)
    if not result:
        return None
    try:
        return lib.clang_EvalResult_getAsLongLong(result) \
            if lib.clang_EvalResult_getKind(result) == 1 else None     # CXEval_Int
    finally:
        lib.clang_EvalResult_dispose(result)


def _integer_spelling(ci, type_) -> str:
    """C's spelling of an integer type's canonical type (`unsigned int` for `const
    u32`, `int` for an enumeration: its constants convert as ints do)."""
    k = ci.TypeKind
    return {k.BOOL: "bool", k.CHAR_U: "unsigned char", k.UCHAR: "unsigned char",
            k.USHORT: "unsigned short", k.UINT: "unsigned int", k.ULONG: "unsigned long",
            k.ULONGLONG: "unsigned long long", k.CHAR_S: "char", k.SCHAR: "signed char",
            k.SHORT: "short", k.INT: "int", k.LONG: "long",
            k.LONGLONG: "long long"}.get(type_.get_canonical().kind, "int")


def _aliased(type_) -> str:
    """What an alias stands for: the canonical type (`float`), or, where that depends on
    a template's parameters, the type as the alias writes it (`T *`); a named struct of
    file scope as C names it (`typedef struct _Sphere Sphere;`: `struct _Sphere`)."""
    canonical = type_.get_canonical()
    if "type-parameter" in canonical.spelling:
        return type_.spelling
    declaration = canonical.get_declaration()
    if canonical.spelling and declaration is not None and \
            declaration.kind.name == "STRUCT_DECL" and declaration.spelling and \
            not declaration.is_anonymous() and declaration.semantic_parent is not None and \
            declaration.semantic_parent.kind.name == "TRANSLATION_UNIT" and \
            canonical.spelling.split()[-1] == declaration.spelling:
        return " ".join(canonical.spelling.split()[:-1] + ["struct", declaration.spelling])
    return canonical.spelling


def _records(ci, kernel):
    """The kernel's by-value struct parameters whose fields are all pointers or numbers
    and which the body uses only through `p.field`, with those uses."""
    K = ci.CursorKind
    parameters = [p for p in kernel.get_children() if p.kind == K.PARM_DECL]
    records, members = [], []
    for position, p in enumerate(parameters):
        declaration = p.type.get_canonical().get_declaration()
        if p.type.get_canonical().kind != ci.TypeKind.RECORD or declaration is None:
            continue
        fields = [(f.spelling, f.type.get_canonical()) for f in declaration.get_children()
                  if f.kind == K.FIELD_DECL]
        if not fields or any(t.kind != ci.TypeKind.POINTER and t.kind not in _INTEGER_KINDS
                             and t.kind not in (ci.TypeKind.FLOAT, ci.TypeKind.DOUBLE)
                             for _, t in fields):
            continue
        uses, whole = [], False
        for e in kernel.walk_preorder():
            if e.kind == K.MEMBER_REF_EXPR:
                base = next(iter(e.get_children()), None)
                while base is not None and base.kind == K.UNEXPOSED_EXPR:
                    base = next(iter(base.get_children()), None)
                if base is not None and base.kind == K.DECL_REF_EXPR and base.referenced == p:
                    if e.referenced is None or e.referenced.kind != K.FIELD_DECL:
                        # a member function (`x.operator float()`, implicit in a cast):
                        # the record is used whole
                        whole = True
                        continue
                    uses.append((_at(e.extent.start), _at(e.extent.end), p.spelling,
                                 e.spelling))
            elif e.kind == K.DECL_REF_EXPR and e.referenced == p:
                whole = whole or not any(u[0] == _at(e.extent.start) for u in uses)
        if uses and not whole:
            records.append((p.spelling, position, _at(p.extent.start), _at(p.extent.end),
                            tuple((name, t.spelling) for name, t in fields)))
            members.extend(uses)
    return tuple(records), tuple(members)


def _helper(ci, function, file_text, user_file) -> Helper | None:
    """The inlinable form of a `__device__` function definition, or None."""
    K = ci.CursorKind
    children = list(function.get_children())
    body = next((c for c in children if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return None
    template = function.kind == K.FUNCTION_TEMPLATE
    if template and any(c.kind in (K.TEMPLATE_NON_TYPE_PARAMETER,
                                   K.TEMPLATE_TEMPLATE_PARAMETER) for c in children):
        return None
    type_parameters = tuple(c.spelling for c in children
                            if c.kind == K.TEMPLATE_TYPE_PARAMETER)

    def written(t) -> str:
        return t.spelling if template else t.get_canonical().spelling
    parameters = []
    for p in (c for c in children if c.kind == K.PARM_DECL):
        t = p.type
        reference = t.kind == ci.TypeKind.LVALUEREFERENCE
        if reference:
            t = t.get_pointee()
        parameters.append((p.spelling, written(t), reference))
    for e in body.walk_preorder():
        if e.kind == K.CALL_EXPR and e.referenced is not None and user_file(e.referenced):
            return None                       # calls a function of the user's
    text = file_text(function.location.file.name)

    def spelled(c) -> str | None:
        start, end = _at(c.extent.start), _at(c.extent.end)
        written = _c_casts(text, start, end, _casts(ci, c, text))
        return None if "//" in written or "/*" in written else " ".join(written.split())

    statements = list(body.get_children())
    void = function.result_type.kind == ci.TypeKind.VOID
    if void and all(c.kind.is_expression() for c in statements):
        texts = [spelled(c) for c in statements]
        return None if None in texts else Helper(function.spelling, tuple(parameters),
                                                 tuple(texts),
                                                 template_parameters=type_parameters)
    if not void and len(statements) == 1 and statements[0].kind == K.RETURN_STMT:
        value = list(statements[0].get_children())
        if len(value) == 1 and spelled(value[0]) is not None:
            return Helper(function.spelling, tuple(parameters), result=spelled(value[0]),
                          returns=written(function.result_type),
                          template_parameters=type_parameters)
    return None


def _calls(ci, kernel) -> list[Call]:
    """The kernel's calls of functions defined with a body (helpers or not; the lowering
    inlines those the unit has a Helper for), with their context."""
    K = ci.CursorKind
    out = []

    def walk(c):
        for child in c.get_children():
            if child.kind == K.CALL_EXPR:
                definition = _callee(ci, child)
                if definition is not None:
                    arguments = tuple((_at(a.extent.start), _at(a.extent.end),
                                       _written_type(ci, a)) for a in child.get_arguments())
                    out.append(Call(_at(child.extent.start), _at(child.extent.end),
                                    definition.get_usr(), arguments,
                                    c.kind == K.COMPOUND_STMT))
            walk(child)
    walk(kernel)
    return out


def _c_casts(text: str, start: int, end: int, casts) -> str:
    """text[start:end] with its C++ casts (_casts) written as C casts, `((T)(e))`; a cast
    inside another's operand stays as written."""
    out, at = [], start
    for first, type_start, type_end, inner_start, inner_end, last in sorted(casts):
        if first < at:
            continue
        out += [text[at:first], f"(({text[type_start:type_end]})(",
                text[inner_start:inner_end], "))"]
        at = last
    return "".join(out) + text[at:end]


def _casts(ci, kernel, text: str) -> list[tuple[int, int, int, int, int, int]]:
    """C++ casts of a scalar type in the kernel, with the ranges of the type as written
    and of the operand."""
    K = ci.CursorKind
    out = []
    for c in kernel.walk_preorder():
        children = list(c.get_children())
        # in a template, `T(0)` of a type parameter is a call of the type
        constructs = c.kind == K.CALL_EXPR and children and \
            children[0].kind == K.TYPE_REF and children[0].referenced is not None and \
            children[0].referenced.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TYPEDEF_DECL,
                                            K.TYPE_ALIAS_DECL)
        named = (K.CXX_STATIC_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_CONST_CAST_EXPR)
        if c.kind not in (K.CXX_FUNCTIONAL_CAST_EXPR, *named) and not constructs:
            continue
        if c.kind != K.CXX_STATIC_CAST_EXPR and \
                c.type.get_canonical().kind == ci.TypeKind.RECORD:
            continue        # `BlockReduce(temp)`: an object of a class built, not a cast
        if constructs and children[0].referenced.kind != K.TEMPLATE_TYPE_PARAMETER:
            underlying = children[0].referenced.underlying_typedef_type
            if underlying.get_canonical().kind == ci.TypeKind.RECORD or \
                    "<" in underlying.get_canonical().spelling:
                continue    # an alias of a class (`using BR = cub::BlockReduce<T, 256>`)
        operands = [x for x in children if x.kind.is_expression()]
        if len(operands) != 1:
            continue
        start, end = _at(c.extent.start), _at(c.extent.end)
        inner = operands[0].extent
        head = text[start:_at(inner.start)].rstrip()
        if not head.endswith("(") or text[_at(inner.end):end].strip() != ")":
            continue                                   # `T{e}`, or a macro's
        if c.kind in named:
            open_, close = head.find("<"), head.rfind(">")
            if open_ < 0 or close < open_:
                continue
            type_range = (start + open_ + 1, start + close)
        else:
            type_range = (start, start + len(head) - 1)
        out.append((start, *type_range, _at(inner.start), _at(inner.end), end))
    return out


def _callee(ci, call):
    """The definition a call expression calls: a function's, or for an instantiation of
    a function template (or a call in a template, which names an overload set of one
    template), the template's; None when not one function with a body."""
    K = ci.CursorKind
    function = call.referenced
    if function is None:
        callee = next(call.get_children(), None)
        refs = [] if callee is None else \
            [c for c in callee.walk_preorder() if c.kind == K.OVERLOADED_DECL_REF]
        if not refs or ci.conf.lib.clang_getNumOverloadedDecls(refs[0]) != 1:
            return None
        function = ci.conf.lib.clang_getOverloadedDecl(refs[0], 0)
    elif function.kind == K.FUNCTION_DECL and function.get_num_template_arguments() > 0:
        function = ci.conf.lib.clang_getSpecializedCursorTemplate(function)
    if function is None or function.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
        return None
    return function.get_definition()


def _written_type(ci, expression) -> str:
    """The canonical type of an expression as written, before the implicit conversions
    Clang wraps it in (an argument converted to its parameter's type); in a template,
    as spelled when it depends on the template's parameters (`const T`)."""
    while expression.kind == ci.CursorKind.UNEXPOSED_EXPR:
        inner = list(expression.get_children())
        if len(inner) != 1 or inner[0].extent != expression.extent:
            break
        expression = inner[0]
    canonical = expression.type.get_canonical().spelling
    return expression.type.spelling if "type-parameter-" in canonical else canonical


def _instance(ci, template, function) -> tuple[tuple[str, str, bool], ...] | None:
    """The parameters of a function template with the arguments of one of its
    instantiations, as (parameter, argument, is a type); None for a parameter pack or a
    template template parameter."""
    kinds = {ci.CursorKind.TEMPLATE_TYPE_PARAMETER: True,
             ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER: False}
    parameters = [p for p in template.get_children() if p.kind in kinds or
                  p.kind == ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER]
    n = function.get_num_template_arguments()
    if n != len(parameters) or any(p.kind not in kinds for p in parameters):
        return None
    out = []
    for k, p in enumerate(parameters):
        try:
            kind = function.get_template_argument_kind(k)
        except ValueError:            # a kind the Python bindings do not know (a pack)
            return None
        if kinds[p.kind] and kind == ci.TemplateArgumentKind.TYPE:
            out.append((p.spelling, function.get_template_argument_type(k).spelling, True))
        elif not kinds[p.kind] and kind == ci.TemplateArgumentKind.INTEGRAL:
            out.append((p.spelling, _integral(ci, p, function.get_template_argument_value(k)),
                        False))
        else:
            return None
    return tuple(out)


def _integral(ci, parameter, value: int) -> str:
    """An integral template argument as C++ spells one for its parameter: an enum's by
    its enumerator's qualified name (`MorphOpType::ERODE`; no integer converts to a
    scoped enum), a bool's as true or false, others as the number."""
    canonical = parameter.type.get_canonical() if parameter is not None else None
    if canonical is not None and canonical.kind == ci.TypeKind.BOOL:
        return "true" if value else "false"
    if canonical is None or canonical.kind != ci.TypeKind.ENUM:
        return str(value)
    declaration = canonical.get_declaration()
    # an unnamed enum's enumerators are named in the scope around it, and so are an
    # unscoped enum's (`D3Q19` for `enum lattice_type { D3Q19 }`: C spells it so)
    name = None if declaration.is_anonymous() else _qualified(ci, declaration)
    if name is not None and not declaration.is_scoped_enum():
        name = "::".join(name.split("::")[:-1]) or None
    for c in declaration.get_children():
        if c.kind == ci.CursorKind.ENUM_CONSTANT_DECL and c.enum_value == value:
            return f"{name}::{c.spelling}" if name else c.spelling
    return f"static_cast<{name or canonical.spelling}>({value})"


def _template_parameters(ci, function) -> list:
    """The template parameters of the template a function specialises ([] if none)."""
    template = ci.conf.lib.clang_getSpecializedCursorTemplate(function)
    if template is None:
        return []
    return [p for p in template.get_children() if p.kind in (
        ci.CursorKind.TEMPLATE_TYPE_PARAMETER, ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
        ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER)]


# C library functions (and CUDA's min/max) that C++ code may qualify (std::sqrt, ::max)
# the C library's typedefs that <cstdint> and <cstddef> also name in std
_C_TYPEDEFS = frozenset({"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                         "uint32_t", "uint64_t", "size_t", "ptrdiff_t", "intptr_t",
                         "uintptr_t"})
_LIBRARY_FUNCTIONS = frozenset(
    "min max abs fabs fabsf sqrt sqrtf exp expf exp2 exp2f log logf log2 log2f log10 "
    "log10f pow powf sin sinf cos cosf tan tanf tanh tanhf atan atanf atan2 atan2f asin "
    "asinf acos acosf floor floorf ceil ceilf round roundf trunc truncf fmin fminf fmax "
    "fmaxf fma fmaf hypot hypotf cbrt cbrtf erf erff rsqrt rsqrtf isnan isinf".split())
# a deduced type C can spell: a number, a vector type, a struct of the file's named at
# file scope, pointers to them (not a class template's, a namespace's, a lambda's)
_DEDUCIBLE = re.compile(r"(?:const\s+)?(?:unsigned\s+|signed\s+|struct\s+)?"
                        r"(?:long long|[A-Za-z_]\w*)(?:\s*\*(?:\s*const)?)*")


def _deduced_type(ci, declaration) -> str | None:
    """The type `auto` deduces for a variable: Clang's, or in a template where the
    initializer depends on the template's parameters (Clang deduces at instantiation),
    the initializer's type as written (`const T *`: the copy replaces T)."""
    t = declaration.type
    canonical = t.get_canonical()
    if "auto" not in canonical.spelling:
        return canonical.spelling
    initializer = [c for c in declaration.get_children() if c.kind.is_expression()]
    if len(initializer) != 1:
        return None
    spelling = _written_type_of(ci, initializer[0])
    return None if spelling is None or "auto" in spelling or "<" in spelling or \
        "::" in spelling else spelling


def _written_type_of(ci, e, depth: int = 0) -> str | None:
    """The type of an expression, as written where it depends on a template's
    parameters: of a variable or parameter, and through pointer arithmetic, subscripts
    and dereferences of it (`x1 + 3 * i` of a `const T *x1` is `const T *`); None where
    it would take more (an arithmetic conversion of T)."""
    K = ci.CursorKind
    if depth > 8:
        return None
    if e.kind == K.DECL_REF_EXPR and e.referenced is not None:
        ref = e.referenced
        if ref.kind == K.VAR_DECL and "auto" in ref.type.spelling:
            return _deduced_type(ci, ref)
        canonical = ref.type.get_canonical().spelling
        written = ref.type.spelling if "type-parameter-" in canonical else canonical
        # a restrict qualifier is the variable's, not its value's (auto drops it)
        return " ".join(re.sub(r"\b(?:__restrict__|__restrict|restrict)\b", " ",
                               written).split())
    t = e.type
    if t.spelling != "<dependent type>" and t.kind != ci.TypeKind.DEPENDENT and \
            "auto" not in t.spelling:
        canonical = t.get_canonical().spelling
        return t.spelling if "type-parameter-" in canonical else canonical
    children = list(e.get_children())
    if e.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR) and len(children) == 1:
        return _written_type_of(ci, children[0], depth + 1)
    if e.kind == K.BINARY_OPERATOR and len(children) == 2:
        sides = [_written_type_of(ci, c, depth + 1) for c in children]
        pointers = [x for x in sides if x is not None and x.rstrip().endswith("*")]
        operator = [t.spelling for t in e.get_tokens()][len(list(children[0].get_tokens()))
                                                           :][:1]
        if len(pointers) == 1 and operator in (["+"], ["-"]):
            return pointers[0]
        return None
    if e.kind == K.ARRAY_SUBSCRIPT_EXPR and children:
        base = _written_type_of(ci, children[0], depth + 1)
        return base.rstrip()[:-1].rstrip() if base and base.rstrip().endswith("*") else None
    if e.kind == K.UNARY_OPERATOR and children and \
            next(iter(e.get_tokens())).spelling == "*":
        base = _written_type_of(ci, children[0], depth + 1)
        return base.rstrip()[:-1].rstrip() if base and base.rstrip().endswith("*") else None
    return None


def _words(ci, kernel, text: str):
    """The kernel's C++ words with their C spellings (ClangKernel.words); `text`: its
    file's."""
    K = ci.CursorKind
    deduced = {}
    for d in kernel.walk_preorder():
        if d.kind != K.VAR_DECL:
            continue
        tokens = list(d.get_tokens())
        names = [t.spelling for t in tokens]
        if "auto" not in names or d.spelling not in names:
            continue
        at, name_at = names.index("auto"), names.index(d.spelling)
        # `[const] auto [*...] name = ...`: the type stands for auto, less the pointers and
        # the const written around it (not `auto &r`)
        stars = names[at + 1:name_at]
        if any(w != "*" for w in stars) or any(w not in ("const", "static")
                                               for w in names[:at]):
            continue
        spelling = _deduced_type(ci, d)
        if spelling is None:
            continue
        for _ in stars:
            if not spelling.rstrip().endswith("*"):
                spelling = None
                break
            spelling = spelling.rstrip()[:-1].rstrip()
        if spelling is None:
            continue
        # a top-level const (`const auto v`): not the const of a pointer's pointee
        if spelling.startswith("const ") and "*" not in spelling and \
                ("const" in names[:at] or not stars):
            spelling = spelling[len("const "):]
        if _DEDUCIBLE.fullmatch(spelling.strip()):
            deduced[_at(tokens[at].extent.start)] = (_at(tokens[at].extent.end), spelling)
    out = [(start, end, spelling) for start, (end, spelling) in deduced.items()]
    # the body's tokens (the definition's extent starts in the expansion of __global__)
    body = next((c for c in kernel.get_children() if c.kind == K.COMPOUND_STMT), None)
    tokens = list(body.get_tokens()) if body is not None else []
    parameters = [t for p in kernel.get_children() if p.kind == K.PARM_DECL
                  for t in p.get_tokens()]
    out += _std_typedefs(parameters) + _std_typedefs(tokens)
    for k, t in enumerate(tokens):
        word = t.spelling
        start, end = _at(t.extent.start), _at(t.extent.end)
        if word == "constexpr":
            out.append((start, end, "const"))
        elif word == "nullptr":
            out.append((start, end, "0"))
        elif word == "::" and k + 1 < len(tokens) and \
                tokens[k + 1].spelling in _LIBRARY_FUNCTIONS and \
                k + 2 < len(tokens) and tokens[k + 2].spelling == "(":
            qualified = k > 0 and tokens[k - 1].spelling == "std"
            first = tokens[k - 1] if qualified else t
            # not a member of a class (`numeric_limits<int>::max()`, `Limits::max()`)
            if qualified or k == 0 or (tokens[k - 1].kind.name != "IDENTIFIER" and
                                       tokens[k - 1].spelling != ">"):
                out.append((_at(first.extent.start), end, ""))
    # one walk: C++ initialisations C spells with `=`, local aliases, qualified
    # enumerators, constant variable templates, braced vector values
    initialisers = {c.hash for d in kernel.walk_preorder() if d.kind == K.VAR_DECL
                    for c in d.get_children() if c.kind == K.INIT_LIST_EXPR}
    for d in kernel.walk_preorder():
        if d.kind == K.INIT_LIST_EXPR and d.hash not in initialisers:
            out += _vector_value(d)
        if d.kind == K.TYPE_ALIAS_DECL:
            out += _local_alias(d)
        elif d.kind == K.VAR_DECL:
            out += _initialisation(ci, d)
        elif d.kind == K.DECL_REF_EXPR and d.referenced is not None:
            out += _enumerator(d, text) + _variable_template_value(ci, d, text)
    return out


_ARRAYS = ("CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY", "DEPENDENTSIZEDARRAY")


def _instance_words(ci, definition) -> tuple[tuple[int, int, str], ...]:
    """In the definition of one instantiation of a kernel template (whose offsets are the
    template's), the declarations written with `auto` or `typename` whose types are
    known there, as C writes them: (start, end, type) over `[const] auto` or `typename
    Conv<T>::Type` up to the name (an array's element type; not a reference, not a
    class C cannot spell, not a declaration of several names)."""
    out = {}
    for d in definition.walk_preorder():
        if d.kind != ci.CursorKind.VAR_DECL:
            continue
        tokens = list(d.get_tokens())
        names = [t.spelling for t in tokens]
        if d.spelling not in names:
            continue
        name_at = names.index(d.spelling)
        head = names[:name_at]
        if not {"auto", "typename"} & set(head) or {",", "=", "(", "&", "&&"} & set(head):
            continue
        first = 0
        while first < name_at and head[first] in ("static", "register", "volatile"):
            first += 1
        t = d.type.get_canonical()
        if t.kind.name in _ARRAYS:
            t = t.get_array_element_type().get_canonical()
        spelling = " ".join(t.spelling.split())
        if first < name_at and _DEDUCIBLE.fullmatch(spelling):
            out[_at(tokens[first].extent.start)] = (_at(tokens[name_at].extent.start),
                                                    spelling + " ")
    return tuple((start, end, spelling) for start, (end, spelling) in sorted(out.items()))


_VECTOR = re.compile(r"(?:u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])")


def _vector_value(e) -> list[tuple[int, int, str]]:
    """A braced value of a CUDA vector type that does not initialise a declaration
    (`d[i] = {ox, oy, oz};`, an argument `{0, 0, 0, 0}`) as C writes one: a call of its
    `make_` function (with every component given)."""
    name = e.type.get_canonical().spelling.split()[-1] if e.type.spelling else ""
    m = _VECTOR.fullmatch(name)
    tokens = list(e.get_tokens())
    if m is None or len(tokens) < 2 or tokens[0].spelling != "{" or \
            tokens[-1].spelling != "}" or \
            len([c for c in e.get_children() if c.kind.is_expression()]) != int(m.group(1)):
        return []
    return [(_at(tokens[0].extent.start), _at(tokens[0].extent.end), f"make_{name}("),
            (_at(tokens[-1].extent.start), _at(tokens[-1].extent.end), ")")]


def _std_typedefs(tokens) -> list[tuple[int, int, str]]:
    """`std::uint32_t` as the C library's typedef of the same name: `std::` dropped."""
    return [(_at(t.extent.start), _at(tokens[k + 1].extent.end), "")
            for k, t in enumerate(tokens)
            if t.spelling == "std" and k + 2 < len(tokens) and
            tokens[k + 1].spelling == "::" and tokens[k + 2].spelling in _C_TYPEDEFS and
            (k == 0 or tokens[k - 1].spelling != "::")]


def _local_alias(d) -> list[tuple[int, int, str]]:
    """A local `using V = float4;` as C's typedef."""
    spelled = list(d.get_tokens())
    words = [t.spelling for t in spelled]
    aliased = _aliased(d.underlying_typedef_type)
    if words[:3] != ["using", d.spelling, "="] or re.search(r"[<:&(\[]", aliased):
        return []
    return [(_at(spelled[0].extent.start), _at(spelled[-1].extent.end),
             f"typedef {aliased} {d.spelling}")]


def _initialisation(ci, d) -> list[tuple[int, int, str]]:
    """A local's C++ initialisation as C spells it, with `=`: `int i(e);` (a number or a
    pointer, one expression), `T v{...};` (C initialises an aggregate, or a number, from
    braces)."""
    K, T = ci.CursorKind, ci.TypeKind
    if d.semantic_parent is None or \
            d.semantic_parent.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
        return []
    spelled = list(d.get_tokens())
    words = [t.spelling for t in spelled]
    if d.spelling not in words:
        return []
    at = len(words) - 1 - words[::-1].index(d.spelling)
    # (a declaration's extent may stop before the `)` of its initialiser)
    if at + 1 >= len(words) or words[at + 1] not in ("(", "{") or \
            words[at + 1] == "{" and words[-1] != "}":
        return []
    insert = [(_at(spelled[at + 1].extent.start), _at(spelled[at + 1].extent.start), "= ")]
    canonical = d.type.get_canonical()
    scalar = canonical.kind in _INTEGER_KINDS or canonical.kind in (
        T.FLOAT, T.DOUBLE, T.LONGDOUBLE, T.POINTER)
    inner = words[at + 2:-1] if words[-1] in (")", "}") and \
        _depth(words[at + 2:]) < 0 else words[at + 2:]
    if not inner:
        return []
    if words[at + 1] == "(":
        return insert if scalar and _top_level_commas(inner) == 0 else []
    declaration = canonical.get_declaration()
    aggregate = canonical.kind == T.RECORD and declaration is not None and not any(
        c.kind == K.CONSTRUCTOR for c in declaration.get_children())
    # a template's parameter: a number or an aggregate where a copy is made (another
    # type fails the copy's compile check, and it is not kept)
    dependent = canonical.kind == T.UNEXPOSED
    return insert if scalar or aggregate or dependent else []


def _enumerator(e, text: str) -> list[tuple[int, int, str]]:
    """An unscoped enumerator qualified by its enum's name (`lattice_type::D3Q19`): the
    enumerator alone, as C names it."""
    ref = e.referenced
    if ref.kind.name != "ENUM_CONSTANT_DECL" or ref.semantic_parent is None or \
            ref.semantic_parent.is_scoped_enum():
        return []
    spelled = list(e.get_tokens())
    names = [t.spelling for t in spelled]
    if names != [ref.semantic_parent.spelling, "::", ref.spelling] or not text[
            _at(spelled[0].extent.start):_at(spelled[-1].extent.end)].startswith(names[0]):
        return []
    return [(_at(spelled[0].extent.start), _at(spelled[1].extent.end), "")]


def _template_id(e, text: str) -> tuple[int, int] | None:
    """[start, end) where `name<...>` of the reference `e` is written in `text` (None
    when it is not written so there: a macro's expansion, whose extent is the
    macro's)."""
    spelled = list(e.get_tokens())
    names = [t.spelling for t in spelled]
    if len(names) < 4 or names[1] != "<" or names[-1] != ">":
        return None
    start, end = _at(spelled[0].extent.start), _at(spelled[-1].extent.end)
    return (start, end) if text[start:end].startswith(names[0]) else None


def _variable_template_value(ci, e, text: str) -> list[tuple[int, int, str]]:
    """A constant variable template's instance (`EMPTY<uint64_t, uint32_t>`) as its
    value (an instance is an unexposed declaration to libclang)."""
    if e.referenced.kind not in (ci.CursorKind.VAR_DECL, ci.CursorKind.UNEXPOSED_DECL):
        return []
    where = _template_id(e, text)
    if where is None or not e.spelling or not text[where[0]:where[1]].startswith(e.spelling):
        return []
    value = _evaluate(ci, e)
    literal = _literal(ci, e.type.get_canonical(), value) if value is not None else None
    return [(*where, literal)] if literal is not None else []


def _dependent_variable_templates(ci, kernel, text: str) -> list[tuple[int, int]]:
    """[start, end) of each use of a variable template at arguments that depend on the
    kernel's template parameters (Clang names no declaration for it yet)."""
    out = []
    for e in kernel.walk_preorder():
        ref = e.referenced if e.kind == ci.CursorKind.DECL_REF_EXPR else None
        if ref is None or ref.kind != ci.CursorKind.OVERLOADED_DECL_REF:
            continue
        where = _template_id(e, text)
        if where is not None and not text[where[1]:where[1] + 64].lstrip().startswith("("):
            out.append(where)           # (not a function template's call)
    return out


def _depth(words: list[str]) -> int:
    return sum((w in ("(", "[", "{")) - (w in (")", "]", "}")) for w in words)


def _top_level_commas(words: list[str]) -> int:
    depth, commas = 0, 0
    for w in words:
        depth += w in ("(", "[", "{")
        depth -= w in (")", "]", "}")
        commas += w == "," and depth == 0
    return commas


def _literal(ci, canonical, value: int) -> str | None:
    """An integer constant of an integer type as a C literal of that type's width and
    signedness (None for other types)."""
    T = ci.TypeKind
    if canonical.kind == T.BOOL:
        return "1" if value else "0"
    if canonical.kind not in _INTEGER_KINDS or canonical.kind == T.ENUM:
        return None
    bits = canonical.get_size() * 8
    unsigned = canonical.kind in (T.UCHAR, T.CHAR_U, T.USHORT, T.UINT, T.ULONG, T.ULONGLONG)
    if unsigned:
        value &= (1 << bits) - 1
    suffix = ("u" if unsigned else "") + ("ll" if bits == 64 else "")
    return f"{value}{suffix}" if value >= 0 else f"({value}{suffix})"


def _template_kind(ci, parameter) -> str:
    """ClangKernel.template_kinds' word for one template parameter."""
    if parameter.kind == ci.CursorKind.TEMPLATE_TYPE_PARAMETER:
        return "other" if "..." in " ".join(t.spelling for t in parameter.get_tokens()) \
            else "type"
    if parameter.kind == ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER and \
            parameter.type.get_canonical().kind in _INTEGER_KINDS and \
            parameter.type.get_canonical().kind != ci.TypeKind.ENUM:
        return "int"
    return "other"


def _clean(ci, kernel, errors) -> bool:
    """Whether Clang read the kernel without an error: none inside its definition, no
    use of a declaration Clang found invalid (an error there is reported where it is
    declared, and Clang stays silent at the uses)."""
    extent = kernel.extent
    name = kernel.location.file.name if kernel.location.file else None
    if any(f == name and extent.start.line <= line <= extent.end.line
           for f, line, _, _ in errors):
        return False
    invalid = ci.conf.lib.clang_isInvalidDeclaration
    for e in kernel.walk_preorder():
        if invalid(e):
            return False
        ref = e.referenced if e.kind in (ci.CursorKind.DECL_REF_EXPR,
                                         ci.CursorKind.TYPE_REF,
                                         ci.CursorKind.MEMBER_REF_EXPR,
                                         ci.CursorKind.CALL_EXPR) else None
        if ref is not None and invalid(ref):
            return False
    return True


def _in_macro(ci, cursor) -> bool:
    """Whether the cursor's text comes from a macro's expansion (its tokens are not the
    file's at its extent)."""
    tokens = [t.spelling for t in cursor.get_tokens()]
    return not tokens or cursor.spelling not in tokens[:16]


def _qualified(ci, cursor) -> str:
    parts = [cursor.spelling]
    parent = cursor.semantic_parent
    while parent is not None and parent.kind in (ci.CursorKind.NAMESPACE,
                                                 ci.CursorKind.CLASS_DECL,
                                                 ci.CursorKind.STRUCT_DECL):
        parts.append(parent.spelling)
        parent = parent.semantic_parent
    return "::".join(reversed(parts))


def read(path: str, options: PreprocessorOptions = PreprocessorOptions(),
         text: str | None = None) -> ClangUnit:
    """Parse `path` (or `text` as `path`) with Clang. Raises RuntimeError when libclang
    is not installed. A text is parsed once: its constants and its kernels are read
    from the same unit (the unit is not to be modified)."""
    if _cindex() is None:
        raise RuntimeError("libclang is not installed (pip install libclang)")
    if text is None:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    return _read(os.path.abspath(path), options, text)


_NOT_FOUND = re.compile(r"'(.+)' file not found")


def _parse(ci, path: str, options: PreprocessorOptions, text: str):
    """The translation unit; a header of the CUDA toolkit or its libraries that is not
    installed (cooperative_groups/reduce.h, curand_kernel.h, cub/cub.cuh) is read as
    empty, never a fatal error (what kernels use of them is declared in
    grammars/clang_cuda.h), and the file parsed again."""
    for _ in range(32):
        tu = ci.Index.create().parse(path, args=arguments(path, options),
                                     unsaved_files=[(path, encoded(closed_up(text)))])
        missing = {m.group(1) for d in tu.diagnostics if d.severity >= 4
                   for m in [_NOT_FOUND.search(d.spelling)]
                   if m and toolkit.is_library_header(m.group(1))}
        made = False
        for name in missing:
            stub = os.path.join(_stub_directory(), name)
            if not os.path.exists(stub) and ".." not in name and not os.path.isabs(name):
                os.makedirs(os.path.dirname(stub), exist_ok=True)
                with open(stub, "w") as f:
                    f.write("#pragma once\n" + _declared_library(name))
                made = True
        if not made:
            return tu
    return tu


def _declared_library(name: str) -> str:
    """What a missing library header stands for: Thrust's and CUB's headers all read
    polycoal's declarations of the library (grammars/clang_toolkit), others nothing."""
    for prefix, declarations in (("thrust/", "pc_thrust.h"), ("cub/", "pc_cub.h")):
        if name.startswith(prefix):
            return f"#include <{declarations}>\n"
    return ""


def error_sites(path: str, options: PreprocessorOptions, text: str
                ) -> list[tuple[str, int, int, str, str]]:
    """Clang's errors in the translation unit, as (file, line, column, message,
    category: "Parse Issue", "Semantic Issue", "Lexical or Preprocessor Issue"...),
    from a parse alone (none of the reading that `read` does)."""
    ci = _cindex()
    if ci is None:
        raise RuntimeError("libclang is not installed (pip install libclang)")
    tu = _parse(ci, os.path.abspath(path), options, text)
    return [(d.location.file.name if d.location.file else os.path.abspath(path),
             d.location.line, d.location.column, d.spelling, d.category_name or "")
            for d in tu.diagnostics if d.severity >= 3]


@functools.lru_cache(maxsize=4)
def _read(path: str, options: PreprocessorOptions, text: str) -> ClangUnit:
    ci = _cindex()
    tu = _parse(ci, path, options, text)
    _CHARS[path] = _Chars(text)
    unit = ClangUnit(path)
    texts = {path: text}

    def file_text(name: str) -> str:
        if name not in texts:
            with open(name, encoding="utf-8", errors="surrogateescape", newline="") as f:
                texts[name] = f.read()
        return texts[name]

    unit.error_sites = [(d.location.file.name if d.location.file else path,
                         d.location.line, d.location.column, d.spelling)
                        for d in tu.diagnostics if d.severity >= 3]
    unit.errors = [f"{f}:{line}: {message}" for f, line, _, message in unit.error_sites]
    ours = os.path.dirname(declarations_header())

    def user_file(c) -> bool:
        location = c.location
        if location.is_in_system_header:    # the C and C++ libraries, CUDA's stubs
            return False
        f = location.file
        return f is not None and not f.name.startswith(ours)

    def kernel_of(c) -> ClangKernel:
        params = tuple(p.spelling for p in c.get_children()
                       if p.kind in (ci.CursorKind.TEMPLATE_TYPE_PARAMETER,
                                     ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
                                     ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER))
        constants = {}
        for e in c.walk_preorder():
            ref = e.referenced if e.kind == ci.CursorKind.DECL_REF_EXPR else None
            if ref is not None and ref.kind == ci.CursorKind.VAR_DECL and \
                    ref.semantic_parent is not None and ref.semantic_parent.kind in (
                        ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE):
                value = _evaluate(ci, ref)
                if value is not None:
                    constants[ref.spelling] = value
        declared = frozenset(d.spelling for d in c.walk_preorder()
                             if d.kind in (ci.CursorKind.VAR_DECL, ci.CursorKind.PARM_DECL))
        aliases = []
        for e in c.walk_preorder():
            ref = e.referenced if e.kind == ci.CursorKind.TYPE_REF else None
            # the user's aliases, and a library's in a namespace (`std::uint32_t`)
            if ref is not None and ref.kind in (ci.CursorKind.TYPEDEF_DECL,
                                                ci.CursorKind.TYPE_ALIAS_DECL) \
                    and (user_file(ref) or ref.semantic_parent is not None and
                         ref.semantic_parent.kind == ci.CursorKind.NAMESPACE) \
                    and e.location.file is not None \
                    and e.location.file.name == c.location.file.name:
                # where its token is written (inside a macro's argument, `assert(x !=
                # V<uint32>)`, the reference's extent is the macro's)
                spelled = list(e.get_tokens())[-1:]
                start, end = (_at(spelled[0].extent.start), _at(spelled[0].extent.end)) \
                    if spelled else (0, 0)
                if file_text(c.location.file.name)[start:end] == ref.spelling:
                    aliases.append((start, end, _aliased(ref.underlying_typedef_type)))
        records, members = _records(ci, c)
        calls = tuple(_calls(ci, c))
        written = file_text(c.location.file.name)
        casts = tuple(_casts(ci, c, written))
        extent = c.extent
        words = tuple(_words(ci, c, written))
        covered = [(qualifier_start(written, a), b) for a, b, _ in aliases] + \
            [(a, b) for a, b, _ in words] + \
            [(x[0], x[-1]) for x in casts] + [(x.start, x.end) for x in calls] + \
            [(a, b) for a, b, _, _ in members] + [(x[2], x[3]) for x in records]
        opaque_statements = opaque.statements(ci, c, written,
                                              covered, _at, [
            (line, column) for f, line, column, _ in unit.error_sites
            if f == c.location.file.name and extent.start.line <= line <= extent.end.line])
        if opaque_statements:       # barriers and group handles are lowered exactly
            words += tuple(x for x in opaque_statements if opaque.MARK not in x[2])
            opaque_statements = tuple(x for x in opaque_statements
                                      if opaque.MARK in x[2])
        if opaque_statements is not None:
            # a variable template at the template's own parameters (`EMPTY<K, V>`): no
            # value to read before an instantiation; a value of unknown origin in the
            # copy that judges the kernel
            held = [(a, b) for a, b, _ in opaque_statements]
            opaque_statements = tuple(sorted(opaque_statements + tuple(
                (a, b, f"{opaque.MARK}()") for a, b in _dependent_variable_templates(
                    ci, c, written) if not any(x <= a and b <= y for x, y in held)))) or ()
        return ClangKernel(c.spelling, _qualified(ci, c),
                           Place(c.location.file.name, extent.start.line,
                                 _at(extent.start), _at(extent.end)),
                           params, tuple(sorted(constants.items())), declared,
                           tuple(sorted(set(aliases))), records, members, calls, casts,
                           _clean(ci, c, unit.error_sites), words,
                           tuple(_template_kind(ci, p) for p in c.get_children()
                                 if p.kind in (ci.CursorKind.TEMPLATE_TYPE_PARAMETER,
                                               ci.CursorKind.TEMPLATE_NON_TYPE_PARAMETER,
                                               ci.CursorKind.TEMPLATE_TEMPLATE_PARAMETER)),
                           opaque_statements)

    def launch_of(c, tokens: list[str], top, instance=()) -> ClangLaunch:
        callee = c.referenced
        scope = _at(top.extent.start) if top is not None else None
        if callee is None:
            # a dependent callee (a launch inside a template): its name and arguments as
            # written before `<<<`
            tokens = tokens or [t.spelling for t in c.get_tokens()][:64]
            head = tokens[:tokens.index("<<<")] if "<<<" in tokens else tokens[:1]
            name = "".join(head[:head.index("<")] if "<" in head else head)
            written = "".join(head[head.index("<") + 1:-1]) if "<" in head else ""
            return ClangLaunch(name, c.location.line, c.location.file.name,
                               tuple(a.strip() for a in written.split(",") if a.strip()),
                               dependent=True, scope_start=scope)
        n = max(callee.get_num_template_arguments(), 0)
        parameters = _template_parameters(ci, callee) if n else []
        args = tuple(
            callee.get_template_argument_type(k).spelling
            if callee.get_template_argument_kind(k) == ci.TemplateArgumentKind.TYPE
            else _integral(ci, parameters[k] if k < len(parameters) else None,
                           callee.get_template_argument_value(k)) for k in range(n))
        children = list(c.get_children())
        head = children[0].extent if children else None
        written = (_at(head.start), _at(head.end)) if head is not None and \
            head.start.file is not None and head.start.file.name == c.location.file.name \
            and not _in_macro(ci, c) else None
        arguments = tuple((_at(a.extent.start), _at(a.extent.end))
                          for a in children[2:]) if written else ()
        key = (_qualified(ci, callee), args)
        if args and key not in instance_words:
            template = ci.conf.lib.clang_getSpecializedCursorTemplate(callee)
            definition = callee.get_definition()
            instance_words[key] = _instance_words(ci, definition) \
                if template is not None and user_file(template) and \
                definition is not None else ()
        return ClangLaunch(_qualified(ci, callee), c.location.line, c.location.file.name, args,
                           callee=written, scope_start=scope, arguments=arguments,
                           instance=instance,
                           expression=(_at(c.extent.start), _at(c.extent.end)))

    def launch_tokens(c) -> list[str] | None:
        """The tokens of a launch (a CUDAKernelCallExpr: the callee, the configuration as
        a call of __cudaPushCallConfiguration, the arguments; where the callee is
        dependent there is no configuration call, only the `<<<` of the text), or None
        when `c` is not one."""
        if c.kind != ci.CursorKind.CALL_EXPR or c.spelling == "__cudaPushCallConfiguration":
            return None
        if any(k.kind == ci.CursorKind.CALL_EXPR and k.spelling == "__cudaPushCallConfiguration"
               for k in c.get_children()):
            return []
        if c.referenced is None:
            tokens = [t.spelling for t in c.get_tokens()]
            if "<<<" in tokens[:64]:
                return tokens
        return None

    values: dict[str, set[int]] = {}
    types: dict[str, set[str]] = {}
    instance_words: dict[tuple[str, tuple[str, ...]], tuple] = {}
    # launches in members of class templates, and the first instantiation of each class
    # template the unit calls a member of (its parameters with their arguments)
    in_classes: list[tuple[ClangLaunch, str]] = []
    class_instances: dict[str, tuple[tuple[str, str, bool], ...]] = {}

    def constant(c) -> None:
        if c.kind == ci.CursorKind.VAR_DECL and c.type.is_const_qualified() and \
                c.type.get_canonical().kind in _INTEGER_KINDS and \
                not ci.conf.lib.clang_isInvalidDeclaration(c):
            value = _evaluate(ci, c)
            if value is not None:
                values.setdefault(c.spelling, set()).add(value)
                types.setdefault(c.spelling, set()).add(_integer_spelling(ci, c.type))

    def visit(c, top=None, holder=None):
        for child in c.get_children():
            if not user_file(child):        # a system header's (std:: included)
                continue
            outer = child if c.kind == ci.CursorKind.TRANSLATION_UNIT else top
            # the class template whose member holds what is visited (defined in the
            # class, or out of line: `void Table<K, V>::insert(...) {...}`)
            inside = holder
            if child.kind == ci.CursorKind.CLASS_TEMPLATE:
                inside = child
            elif child.semantic_parent is not None and \
                    child.semantic_parent.kind == ci.CursorKind.CLASS_TEMPLATE:
                inside = child.semantic_parent
            if c.kind in (ci.CursorKind.TRANSLATION_UNIT, ci.CursorKind.NAMESPACE,
                          ci.CursorKind.CLASS_DECL, ci.CursorKind.STRUCT_DECL):
                constant(child)         # a class's `static constexpr int N = 512;` too
            if child.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE) \
                    and child.is_definition() and any(
                        a.kind == ci.CursorKind.CUDAGLOBAL_ATTR for a in child.get_children()):
                unit.kernels.append(kernel_of(child))
            elif child.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE) \
                    and child.is_definition() and any(
                    a.kind == ci.CursorKind.CUDADEVICE_ATTR for a in child.get_children()):
                helper = _helper(ci, child, file_text, user_file)
                if helper is not None:
                    unit.helpers[child.get_usr()] = helper
            tokens = launch_tokens(child)
            if tokens is not None:
                unit.launches.append(launch_of(child, tokens, outer))
                if unit.launches[-1].dependent and inside is not None:
                    in_classes.append((unit.launches[-1], inside.get_usr()))
            instantiated(child)
            visit(child, outer, inside)

    seen: set[str] = set()

    def instantiated(c) -> None:
        """Where `c` calls an instantiation of a host function template of the user's,
        the launches that instantiation runs (its body as Clang instantiates it, whose
        text is the template's), once per instantiation, through the instantiations it
        calls in turn."""
        if c.kind != ci.CursorKind.CALL_EXPR or c.referenced is None:
            return
        function = c.referenced
        if function.get_usr() in seen:
            return
        specialised = ci.conf.lib.clang_getSpecializedCursorTemplate
        if function.kind == ci.CursorKind.CXX_METHOD and \
                function.get_num_template_arguments() <= 0:
            # a member function of a class template's instantiation (`Table<int,
            # float>::insert`): the class template's parameters with its arguments
            holder = function.semantic_parent
            template = specialised(holder) if holder is not None else None
            if template is None or template.kind != ci.CursorKind.CLASS_TEMPLATE or \
                    not user_file(template):
                return
            seen.add(function.get_usr())
            instance = _instance(ci, template, holder)
            if instance is not None:
                class_instances.setdefault(template.get_usr(), instance)
            pattern = specialised(function)
            top = pattern.get_definition() if pattern is not None else None
            parent = "lexical_parent"
        else:
            if function.kind != ci.CursorKind.FUNCTION_DECL or \
                    function.get_num_template_arguments() <= 0:
                return
            template = specialised(function)
            if template is None or template.kind != ci.CursorKind.FUNCTION_TEMPLATE or \
                    not user_file(template) or any(a.kind == ci.CursorKind.CUDAGLOBAL_ATTR
                                                   for a in template.get_children()):
                return
            seen.add(function.get_usr())
            instance = _instance(ci, template, function)
            top, parent = template, "semantic_parent"
        definition = function.get_definition()
        if instance is None or definition is None or top is None:
            return
        while getattr(top, parent) is not None and \
                getattr(top, parent).kind != ci.CursorKind.TRANSLATION_UNIT:
            top = getattr(top, parent)
        for e in definition.walk_preorder():
            tokens = launch_tokens(e)
            if tokens is not None and e.referenced is not None:
                unit.launches.append(launch_of(e, tokens, top, instance))
            instantiated(e)
    visit(tu.cursor)
    for launch, usr in in_classes:
        values_of = {p: a for p, a, _ in class_instances.get(usr, ())}
        kernel = next((k for k in unit.kernels if launch.kernel in (k.name, k.qualified)),
                      None)
        if kernel is not None and values_of and launch.template_arguments and \
                all(a in values_of for a in launch.template_arguments):
            unit.class_arguments.setdefault(kernel.qualified, tuple(
                values_of[a] for a in launch.template_arguments))
    unit.kernels = [replace(k, instance_words=tuple(
        (args, words) for (name, args), words in instance_words.items()
        if name == k.qualified and words)) if k.is_template else k for k in unit.kernels]
    unit.constants = {name: next(iter(v)) for name, v in values.items() if len(v) == 1}
    unit.constant_types = {name: next(iter(types[name])) if len(types[name]) == 1 else "?"
                           for name in unit.constants}
    return unit
