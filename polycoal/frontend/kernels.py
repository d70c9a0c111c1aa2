"""Locate `__global__` kernels (and `__device__` functions and variables) and parse them.

Kernels are found by tokens, not by parsing the whole file: host code may be any C++.
A kernel's text is rewritten as grammars/cuda.toml says (CUDA qualifiers erased or
renamed, `__shared__` declarations remembered by line) and handed to pycparser after a
prelude of typedefs and a linemarker, so that AST coordinates are original file lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from pycparser import c_ast, c_parser

from polycoal.diagnostics import Diagnostic, Location
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.lexer import Token, matching, split_top_level, tokenize
from polycoal.frontend.inline import forward_pointers, inline_helpers
from polycoal.frontend.normalise import forward_temporaries, subscripts_for_dereferences
from polycoal.frontend.preprocess import DEFAULT_STD, LINEMARKER, PreprocessedSource
from polycoal.frontend.syntax import Verdict, check_function, function_declarations
from polycoal.frontend.program import DeviceFunction, GlobalVariable, Kernel, Parameter, Span

_CPP_ONLY = {"template", "::", "auto", "static_cast", "reinterpret_cast", "const_cast",
             "dynamic_cast", "new", "delete", "this", "class", "namespace", "operator",
             "typename", "constexpr", "decltype", "using", "throw", "try", "catch", "lambda"}
_STORAGE_START = {";", "}", "{"}


@dataclass(frozen=True)
class FunctionSite:
    """Token indices of one CUDA function definition in the preprocessed user text."""

    is_kernel: bool
    name: str
    marker: int          # the __global__ / __device__ token
    name_index: int
    body_open: int
    body_close: int
    is_template: bool


def find_function_sites(tokens: list[Token]) -> tuple[list[FunctionSite], list[int]]:
    """Kernel and device-function definitions, and markers of file-scope variables."""
    dialect = cuda_dialect()
    sites: list[FunctionSite] = []
    variables: list[int] = []
    depth_marks = _brace_depths(tokens)
    k = 0
    while k < len(tokens):
        text = tokens[k].text
        is_kernel = text == "__global__" or _is_attribute(tokens, k, "global")
        if not (is_kernel or text == "__device__" or text == "__constant__") or depth_marks[k]:
            k += 1
            continue
        j = k + 1
        name_index = None
        while j < len(tokens) and tokens[j].text not in (";", "{", "=", "["):
            if tokens[j].text in dialect.erase_with_arguments and j + 1 < len(tokens) \
                    and tokens[j + 1].text == "(":
                j = matching(tokens, j + 1) + 1
                continue
            if tokens[j].text == "(" and tokens[j - 1].kind == "id":
                name_index = j - 1
                break
            j += 1
        if name_index is None or text == "__constant__":
            variables.append(k)
            k = j + 1
            continue
        close = matching(tokens, name_index + 1)
        j = close + 1
        while j < len(tokens) and tokens[j].text not in ("{", ";"):
            j += 1
        if j >= len(tokens) or tokens[j].text == ";":
            k = j + 1          # a prototype
            continue
        body_close = matching(tokens, j)
        sites.append(FunctionSite(is_kernel, tokens[name_index].text, k, name_index, j,
                                  body_close, _preceded_by_template(tokens, k)))
        k = body_close + 1
    return sites, variables


def _is_attribute(tokens: list[Token], k: int, name: str) -> bool:
    """`__attribute__((name))`, the form CUDA's real headers give `__global__`."""
    return (tokens[k].text == "__attribute__" and k + 3 < len(tokens)
            and tokens[k + 1].text == "(" and tokens[k + 2].text == "("
            and tokens[k + 3].text == name)


def _brace_depths(tokens: list[Token]) -> list[int]:
    """Depth of each token inside function bodies (namespace and extern "C" braces and
    class bodies do not count: kernels may sit inside them)."""
    depths = [0] * len(tokens)
    stack: list[bool] = []            # True for a brace that counts
    for k, t in enumerate(tokens):
        depths[k] = sum(stack)
        if t.text == "{":
            prev = tokens[k - 1].text if k else ""
            prev2 = tokens[k - 2].text if k > 1 else ""
            scope = (prev2 == "namespace" or prev == "namespace" or
                     (prev2 == "extern" and tokens[k - 1].kind == "str"))
            stack.append(not scope)
        elif t.text == "}" and stack:
            stack.pop()
    return depths


def _preceded_by_template(tokens: list[Token], k: int) -> bool:
    return _template_keyword(tokens, k) is not None


def _template_keyword(tokens: list[Token], k: int) -> int | None:
    """The index of the `template` that heads the declaration of token k, if any."""
    j = k - 1
    while j >= 0 and tokens[j].text not in _STORAGE_START:
        if tokens[j].text == "template":
            return j
        j -= 1
    return None


def _math_qualifier(tokens: list[Token], k: int, dialect) -> int:
    """How many tokens from k qualify a call of a device math function (`std` `::`
    before `sqrt(`, or a global `::`), or a C library type (`std::uint32_t`, often
    from a macro's expansion: `#define UNIT_TYPE std::uint32_t`), else 0."""
    n = 2 if tokens[k].text == "std" else 1 if tokens[k].text == "::" else 0
    if not n or (n == 1 and k and tokens[k - 1].kind == "id") or k + n + 1 >= len(tokens):
        return 0
    if n == 2 and tokens[k + 1].text != "::":
        return 0
    name, after = tokens[k + n], tokens[k + n + 1]
    if n == 2 and name.text in dialect.prelude_typedef_names and after.text != "::":
        return n
    return n if name.text in dialect.pure_functions and after.text == "(" else 0


def _template_arguments(tokens: list[Token], k: int, functions: frozenset[str]) -> int:
    """The index of the `>` closing explicit template arguments of a call of one of
    `functions` at tokens[k] (`distance_tiled<float, 2>(...)`), else 0."""
    if tokens[k].text not in functions or k + 1 >= len(tokens) or tokens[k + 1].text != "<":
        return 0
    depth, j = 0, k + 1
    while j < len(tokens):
        t = tokens[j].text
        if t in ("(", ")", "{", "}", ";", "[", "]", "=", "&&", "||"):
            return 0
        depth += {"<": 1, ">": -1, ">>": -2}.get(t, 0)
        if depth <= 0:
            return j if depth == 0 and j + 1 < len(tokens) and \
                tokens[j + 1].text == "(" else 0
        j += 1
    return 0


def dialect_to_c(tokens: list[Token], text: str,
                 functions: frozenset[str] = frozenset()) -> tuple[str, set[int]]:
    """Rewrite the text covered by `tokens` into C99 for pycparser (a call of one of
    the file's `functions` with explicit template arguments as a plain call).

    Returns the new text (same line structure) and the lines (relative, 0-based) that
    held a `__shared__` declaration.
    """
    dialect = cuda_dialect()
    start = tokens[0].start
    out: list[str] = []
    shared_lines: set[int] = set()
    checks = any(t.text in dialect.assert_failures for t in tokens)
    defaults = _default_arguments(tokens)
    pos = start
    k = 0
    while k < len(tokens):
        t = tokens[k]
        replacement = None
        end = t.end
        if k in defaults:               # `bool last = false`: C has no default arguments
            end = tokens[defaults[k]].end
            k = defaults[k]
            replacement = ""
        elif functions and (close := _template_arguments(tokens, k, functions)):
            out.append(text[pos:t.end])
            pos = t.end
            t = tokens[k + 1]
            end = tokens[close].end
            k = close
            replacement = ""
        elif t.text in dialect.memory_spaces and t.text != "__device__":
            if dialect.memory_spaces[t.text] == "shared":
                shared_lines.add(text.count("\n", start, t.start))
            replacement = ""
        elif t.text in dialect.erase:
            replacement = ""
        elif t.text in dialect.rename:
            replacement = dialect.rename[t.text]
        elif (qualified := _math_qualifier(tokens, k, dialect)):
            # std::sqrt(x), ::fabsf(x): the device math function itself (CUDA declares
            # its float and double overloads in both namespaces)
            end = tokens[k + qualified - 1].end
            k += qualified - 1
            replacement = ""
        elif t.text == "(" and checks and (check := _assert_expansion(tokens, k, dialect)):
            end = tokens[check[0]].end
            k = check[0]
            replacement = check[1]
        elif t.text in dialect.erase_with_arguments and k + 1 < len(tokens) \
                and tokens[k + 1].text == "(":
            close = matching(tokens, k + 1)
            if _is_attribute(tokens, k, "shared"):
                shared_lines.add(text.count("\n", start, t.start))
            end = tokens[close].end
            k = close
            replacement = ""
        if replacement is not None:
            out.append(text[pos:t.start])
            original = text[t.start:end]
            blank = "".join(c if c == "\n" else " " for c in original)
            first = blank.find("\n")
            if 0 <= first < len(replacement):       # keep the lines: newlines after it
                out.append(replacement + "\n" * blank.count("\n"))
            else:
                out.append(replacement + blank[len(replacement):]
                           if len(replacement) <= len(blank) else replacement)
            pos = end
        k += 1
    out.append(text[pos:tokens[-1].end])
    return "".join(out), shared_lines


def _default_arguments(tokens: list[Token]) -> dict[int, int]:
    """The default arguments of the function's parameters: index of each `=` in its
    parameter list -> index of the last token of the value (before the `,` or `)`)."""
    dialect = cuda_dialect()
    k = 0
    while k < len(tokens) and tokens[k].text not in ("(", "{", ";"):
        if tokens[k].text in dialect.erase_with_arguments and k + 1 < len(tokens) and \
                tokens[k + 1].text == "(":
            k = matching(tokens, k + 1)          # `__launch_bounds__(...)`
        k += 1
    if k >= len(tokens) or tokens[k].text != "(" or k == 0 or tokens[k - 1].kind != "id":
        return {}
    index = {id(t): i for i, t in enumerate(tokens)}
    out = {}
    # in a parameter declaration a `=` outside brackets starts its default argument
    for part in split_top_level(tokens[k + 1:matching(tokens, k)], angles=True):
        equals = next((t for t in part if t.text == "="), None)
        if equals is not None:
            out[index[id(equals)]] = index[id(part[-1])]
    return out


def _assert_expansion(tokens: list[Token], k: int, dialect) -> tuple[int, str] | None:
    """(index of the closing parenthesis, `assert (e)`) when the parenthesised group at
    `k` is the expansion of `assert(e)`: `([static_cast <bool>] (e) ? <void 0> :
    __assert_fail (...))`, as the C and C++ headers spell it. The check is read back
    as the call it was written as, a statement that reads e (model/extract.py)."""
    close = matching(tokens, k)
    if not any(tokens[j].text in dialect.assert_failures
               for j in range(k + 1, close)):
        return None
    depth, question = 0, None
    for j in range(k + 1, close):
        text = tokens[j].text
        if text in ("(", "[", "{"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and text == "?":
            question = j
            break
    if question is None:
        return None
    first = k + 1
    if [t.text for t in tokens[first:first + 4]] == ["static_cast", "<", "bool", ">"]:
        first += 4
    condition = " ".join(t.text for t in tokens[first:question])
    if not condition or not any(t.text in dialect.assert_failures
                                for t in tokens[question:close]):
        return None
    return close, f"{sorted(dialect.check_functions)[0]} ({condition})"


def _declarations(names: set[str], type_names: dict[str, str],
                  known: frozenset[str]) -> list[str]:
    """The declarations of the type names a function uses, each after those of the
    names its own declaration uses (`typedef real8 Real_t;` needs `real8`'s)."""
    out: list[str] = []
    done: set[str] = set()

    def add(name: str) -> None:
        if name in done or name not in type_names or name in known:
            return
        done.add(name)
        for word in re.findall(r"[A-Za-z_]\w*", type_names[name])[1:-1]:
            add(word)
        out.append(type_names[name])
    for name in sorted(names):
        add(name)
    return out


_RECORD_ATTRIBUTES = frozenset({"__attribute__", "alignas", "_Alignas", "__align__",
                                "__declspec"})


def user_type_names(tokens: list[Token]) -> dict[str, str]:
    """Typedef and struct/class names declared in user code: name -> C declaration text
    that makes pycparser accept the name as a type."""
    names: dict[str, str] = {}
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.text == "typedef":
            j = k + 1
            while j < len(tokens) and tokens[j].text != ";":
                if tokens[j].text == "{":
                    j = matching(tokens, j)
                j += 1
            run = tokens[k + 1:j]
            if run and run[-1].kind == "id":
                name = run[-1].text
                simple = all(x.kind == "id" or x.text == "*" for x in run)
                names[name] = (" ".join(x.text for x in tokens[k:j]) + ";" if simple
                               else f"typedef struct __pc_{name} {name};")
            k = j
        elif t.text in ("struct", "class", "union"):
            # attributes between the keyword and the name (`struct __attribute__((
            # __packed__)) Atom {`, `struct alignas(16) V {`, `__align__(8)`)
            j = k + 1
            while j + 1 < len(tokens) and tokens[j].text in _RECORD_ATTRIBUTES and \
                    tokens[j + 1].text == "(":
                j = matching(tokens, j + 1) + 1
            if j + 1 < len(tokens) and tokens[j].kind == "id" and \
                    tokens[j].text not in _RECORD_ATTRIBUTES and \
                    tokens[j + 1].text in ("{", ":", "final"):
                name = tokens[j].text
                names.setdefault(name, f"typedef struct {name} {name};")
        k += 1
    return names


_HEADER_TYPEDEF = re.compile(r"\btypedef\b[^;{}()]*?\b([A-Za-z_]\w*)\s*;")
_HEADER_ARRAY_TYPEDEF = re.compile(
    r"\btypedef\s+((?:(?:unsigned|signed|const|long|short|int|char|float|double)\s+)*"
    r"(?:int|char|float|double|long|short|unsigned))\s+([A-Za-z_]\w*)"
    r"(?:\s*\[[\d\s+\-*/()]+\])+\s*;")


def header_type_names(text: str) -> dict[str, str]:
    """Types the included headers name by a plain typedef (`clock_t`, `uint32_t`): each
    as an opaque type for pycparser (the prelude's own, and the user's, take precedence;
    a kernel's arithmetic on them stays outside the model unless the prelude knows
    them as integers)."""
    names = {name: f"typedef struct __pc_{name} {name};"
             for name in set(_HEADER_TYPEDEF.findall(text))}
    # an array type of numbers (`typedef double fArray[17][4][2];`, its sizes as the
    # preprocessor left them): C's own declaration, so that its subscripts have strides
    for m in _HEADER_ARRAY_TYPEDEF.finditer(text):
        names.setdefault(m.group(2), " ".join(m.group(0).split()))
    return names


def parse_function(site: FunctionSite, tokens: list[Token], source: PreprocessedSource,
                   user_text: str, type_names: dict[str, str], others: tuple[str, ...] = (),
                   std: str = DEFAULT_STD,
                   ) -> tuple[c_ast.FuncDef | None, frozenset[int], str | None, Diagnostic | None]:
    """Parse one function: (ast, shared lines, unsupported reason, diagnostic). `others`
    are the names of the file's other functions, `std` the language standard: when
    pycparser rejects the function, the C++ compiler decides whether it is a syntax
    error (see frontend/syntax.py)."""
    dialect = cuda_dialect()
    run = tokens[site.marker:site.body_close + 1]
    first_line = run[0].line
    file, origin_line = source.origin_of_line(first_line)
    location = Location(file, origin_line, _column(user_text, run[0].start))
    if site.is_template:
        return None, frozenset(), "template function (polycoal parses the C subset of " \
            "kernels; instantiate it as a plain kernel to analyse it)", None
    c_text, shared_rel = dialect_to_c(run, user_text, frozenset(others))
    c_text = _with_linemarkers(c_text, source, first_line, file)
    used = {t.text for t in run}
    # a name the unit also declares as a type (`struct hash`, `std::hash` of a header)
    # that the function calls (`hash(key)`) is the function's there
    called = {t.text for t, after in zip(run, run[1:]) if t.kind == "id" and
              after.text == "("}
    extra = "".join(d + "\n" for d in _declarations(
        {name for name in type_names if name in used and name not in called and
         name not in dialect.prelude_typedef_names}, type_names,
        dialect.prelude_typedef_names))
    column = _column(user_text, run[0].start)
    source_text = (dialect.prelude + extra + f'# {origin_line} "{file}"\n'
                   + " " * (column - 1) + c_text + "\n")
    try:
        ast = c_parser.CParser().parse(source_text, filename=file)
    except Exception as error:   # pycparser raises ParseError (and rarely others)
        expanded = user_text[run[0].start:run[-1].end]
        declarations = "".join(type_names.values()) + function_declarations(others)
        verdict = check_function(expanded, std, declarations)
        reason, diagnostic = _unparsed(site, run, source, location, str(error), verdict)
        return None, frozenset(), reason, diagnostic
    funcdef = next(n for n in reversed(ast.ext) if isinstance(n, c_ast.FuncDef))
    shared = frozenset(source.origin_of_line(first_line + r)[1] for r in shared_rel)
    return funcdef, shared, None, None


def _with_linemarkers(c_text: str, source: PreprocessedSource, first_line: int,
                      file: str) -> str:
    """The function's text with the preprocessor's linemarkers of its own file put back
    on their (blanked) lines, so that pycparser's coordinates stay original lines after
    an expansion that added lines (`_Pragma("unroll")` becomes a line of its own)."""
    lines = c_text.split("\n")
    output = source.text.split("\n")
    for r in range(1, len(lines)):
        if lines[r].strip() or first_line + r - 1 >= len(output):
            continue
        m = LINEMARKER.match(output[first_line + r - 1])
        if m and m.group(2).encode().decode("unicode_escape") == file:
            lines[r] = f'# {m.group(1)} "{m.group(2)}"'
    return "\n".join(lines)


def _unparsed(site: FunctionSite, run: list[Token], source: PreprocessedSource,
              location: Location, error: str, verdict: Verdict) -> tuple[str, Diagnostic]:
    """Why a function pycparser rejects is left alone, and the diagnostic: an error when
    the C++ compiler finds a syntax error in it, else a warning (C++ outside polycoal's C
    subset, or code that needs declarations from elsewhere to be judged)."""
    what = f"{'kernel' if site.is_kernel else 'function'} '{site.name}'"
    if verdict.kind == "syntax":
        file, line = source.origin_of_line(run[0].line + verdict.line - 1)
        return "syntax error", Diagnostic(
            "error", "syntax-error", f"syntax error in {what}: {verdict.message}",
            Location(file, line), site.name)
    where, message = _parse_error_location(error, location)
    cpp = sorted({t.text for t in run} & _CPP_ONLY) or (["&"] if _has_reference(run) else [])
    if cpp:
        reason = ("C++ construct(s) " + ", ".join(f"'{c}'" for c in cpp)
                  + " outside the C subset polycoal parses")
    elif verdict.kind == "accepted":
        reason = f"C++ outside the C subset polycoal parses ({message})"
    else:
        reason = (f"not parsed ({message}); not a proven syntax error: compiled alone, "
                  f"the C++ compiler stops at what needs the rest of the file "
                  f"({verdict.message})")
    return reason, Diagnostic("warning", "unsupported-construct",
                              f"{what}: {reason}; left unchanged", where, site.name)


def _has_reference(run: list[Token]) -> bool:
    """`T &name` in a declaration: a C++ reference."""
    for a, b, c in zip(run, run[1:], run[2:]):
        if b.text == "&" and a.kind == "id" and c.kind == "id" and a.text in (
                "float", "double", "int", "auto", "unsigned", "long", "char", "short"):
            return True
    return False


def _parse_error_location(message: str, fallback: Location) -> tuple[Location, str]:
    """pycparser's 'file:line:col: text' as a Location and a message."""
    parts = message.split(":", 3)
    if len(parts) == 4 and parts[1].strip().isdigit():
        col = int(parts[2]) if parts[2].strip().isdigit() else 1
        return Location(parts[0], int(parts[1]), col), parts[3].strip()
    return fallback, message


def _column(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1) + 1


def parameters_of(funcdef: c_ast.FuncDef) -> list[Parameter]:
    decl = funcdef.decl.type
    params: list[Parameter] = []
    if not isinstance(decl, c_ast.FuncDecl) or decl.args is None:
        return params
    for p in decl.args.params:
        if not isinstance(p, c_ast.Decl) or p.name is None:
            continue
        ty = p.type
        pointer = False
        restrict = False
        while isinstance(ty, (c_ast.PtrDecl, c_ast.ArrayDecl)):
            pointer = True
            restrict = restrict or "restrict" in (getattr(ty, "quals", None) or [])
            ty = ty.type
        const = "const" in (getattr(ty, "quals", None) or [])
        params.append(Parameter(p.name, type_name(ty), pointer, restrict, const))
    return params


def type_name(ty: c_ast.Node) -> str:
    inner = getattr(ty, "type", None)
    if isinstance(inner, c_ast.IdentifierType):
        return " ".join(inner.names)
    if isinstance(inner, c_ast.Struct):
        return f"struct {inner.name}"
    return "?"


def locate_in_original(original_tokens: list[Token], name: str, marker_text: str,
                       line: int) -> Span | None:
    """Span of the definition of `name` (kernel or function) in the original text.

    The definition starts at the first token after the previous `;`, `}` or `{` (so
    `template<...>`, `extern "C"` and `static` are included) and ends at its closing
    brace. Definitions produced by macros are not found (None), nor those whose
    brackets as written do not match (`#if` branches that each open a block: the text
    cannot be replaced as one definition).
    """
    try:
        return _locate(original_tokens, name, marker_text, line)
    except ValueError:
        return None


def _locate(original_tokens: list[Token], name: str, marker_text: str,
            line: int) -> Span | None:
    for k, t in enumerate(original_tokens):
        if t.text != marker_text or abs(t.line - line) > 0:
            continue
        j = k + 1
        while j < len(original_tokens) and original_tokens[j].text not in (";", "{"):
            if original_tokens[j].text == "(" and original_tokens[j - 1].text == name:
                close = matching(original_tokens, j)
                b = close + 1
                while b < len(original_tokens) and original_tokens[b].text not in ("{", ";"):
                    b += 1
                if b >= len(original_tokens) or original_tokens[b].text != "{":
                    return None
                end = matching(original_tokens, b)
                s = k
                while s > 0 and original_tokens[s - 1].text not in _STORAGE_START:
                    s -= 1
                return Span(original_tokens[s].start, original_tokens[end].end)
            j += 1
    return None


def global_variable(tokens: list[Token], marker: int, source: PreprocessedSource,
                    text: str) -> GlobalVariable | None:
    """A file-scope `__constant__`/`__device__` variable declaration starting at `marker`."""
    spaces = cuda_dialect().memory_spaces
    j = marker
    words: list[str] = []
    while j < len(tokens) and tokens[j].text not in (";", "[", "=", "("):
        words.append(tokens[j].text)
        j += 1
    idents = [w for w in words if w not in spaces and w not in ("static", "extern", "const",
                                                                 "volatile", "*")]
    if len(idents) < 2:
        return None
    space = "constant" if "__constant__" in words else "global"
    file, line = source.origin_of_line(tokens[marker].line)
    end = j
    while end < len(tokens) and tokens[end].text != ";":
        end += 1
    expanded = text[tokens[marker].start:tokens[min(end, len(tokens) - 1)].end]
    return GlobalVariable(idents[-1], space, " ".join(idents[:-1]), Location(file, line),
                          expanded)


def read_functions(source: PreprocessedSource, original_text: str, std: str = DEFAULT_STD,
                   tokens: list[Token] | None = None,
                   original_tokens: list[Token] | None = None,
                   ) -> tuple[list[Kernel], dict[str, DeviceFunction],
                              dict[str, GlobalVariable], list[Diagnostic]]:
    """The functions of the preprocessed program; `tokens` of its user text and
    `original_tokens` of the input's text when already read."""
    user_text = source.user_text()
    tokens = tokenize(user_text) if tokens is None else tokens
    sites, variable_markers = find_function_sites(tokens)
    type_names = {**header_type_names(source.text), **user_type_names(tokens)}
    if original_tokens is None:
        original_tokens = tokenize(original_text)
    kernels: list[Kernel] = []
    device_functions: dict[str, DeviceFunction] = {}
    diagnostics: list[Diagnostic] = []
    for site in sites:
        others = tuple(other.name for other in sites if other.name != site.name)
        ast, shared, unsupported, diag = parse_function(site, tokens, source, user_text,
                                                        type_names, others, std)
        if diag:
            diagnostics.append(diag)
        file, line = source.origin_of_line(tokens[site.marker].line)
        location = Location(file, line, _column(user_text, tokens[site.marker].start))
        params = parameters_of(ast) if ast is not None else []
        expanded = user_text[tokens[site.marker].start:tokens[site.body_close].end]
        if site.is_kernel:
            span = None
            if file == source.path:
                span = locate_in_original(original_tokens, site.name,
                                          tokens[site.marker].text, line)
            kernels.append(Kernel(site.name, location, params, ast, span, shared, unsupported,
                                  site.is_template, expanded))
        else:
            # a function template's text starts at its `template <...>` (the kernels'
            # stand-alone modules declare it: validate/experiment.py)
            head = _template_keyword(tokens, site.marker) if site.is_template else None
            if head is not None:
                expanded = user_text[tokens[head].start:tokens[site.body_close].end]
            device_functions[site.name] = DeviceFunction(site.name, location, params, ast,
                                                         expanded)
    kernels = [_normalised(k, device_functions) for k in kernels]
    variables = {}
    for marker in variable_markers:
        var = global_variable(tokens, marker, source, user_text)
        if var:
            variables[var.name] = var
    return kernels, device_functions, variables, diagnostics


def _normalised(kernel: Kernel, helpers: dict[str, DeviceFunction]) -> Kernel:
    """The kernel with its accesses read as subscripts: helpers taking pointers inlined,
    local pointers into its arrays forwarded (frontend/inline.py), dereferences as
    subscripts and one-statement temporaries forwarded (frontend/normalise.py)."""
    if kernel.ast is None:
        return kernel
    pointers = {p.name for p in kernel.parameters if p.is_pointer}
    ast = inline_helpers(kernel.ast, {name: f.ast for name, f in helpers.items()
                                      if f.ast is not None})
    ast = forward_pointers(ast, pointers)
    ast = subscripts_for_dereferences(ast, pointers)
    return replace(kernel, ast=forward_temporaries(ast))
