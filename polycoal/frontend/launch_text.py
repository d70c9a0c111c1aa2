"""What a launch statement's text says, read from the source as written: its kernel
name, configuration and arguments, whether an expression in it may have side effects,
and the C text of the values a kernel model's parameters name at this launch. Read by
the planners and by code generation alike."""

from __future__ import annotations

from polycoal.frontend.lexer import matching, split_top_level, tokenize
from polycoal.frontend.limits import integer_type, type_name
from polycoal.frontend.program import Launch

_WRITES = {"=", "++", "--", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=", "&=", "^=",
           "new", "delete", "throw", "co_await", "co_yield"}
# names followed by `(` that are not calls of user code
_NOT_CALLS = {"sizeof", "alignof", "decltype", "typeid", "noexcept", "dim3", "int",
              "unsigned", "signed", "long", "short", "char", "float", "double", "bool",
              "size_t"}
def launch_parts(original: str, launch: Launch) -> tuple[str, list[str], list[str]]:
    """(kernel name text with its qualifier, configuration, arguments) of a launch, as
    written."""
    text = original[launch.span.start:launch.span.end]
    tokens = tokenize(text)
    open_ = next(k for k, t in enumerate(tokens) if t.text == "<<<")
    close = next(k for k, t in enumerate(tokens) if t.text == ">>>")
    paren = close + 1
    end = matching(tokens, paren)

    def src(run):
        return text[run[0].start:run[-1].end] if run else ""
    config = [src(p) for p in split_top_level(tokens[open_ + 1:close])]
    args = [src(p) for p in split_top_level(tokens[paren + 1:end]) if p]
    return text[:tokens[open_].start].rstrip(), config, args


def qualified_names(name_text: str, kernel: str) -> tuple[str, str]:
    """(qualifier, template arguments) around the kernel's name in a launch's name text:
    `ns::k` -> ("ns::", ""), `::k<float>` -> ("::", "<float>"), `k` -> ("", "")."""
    tokens = tokenize(name_text)
    k = next(j for j in range(len(tokens) - 1, -1, -1) if tokens[j].text == kernel)
    qualifier = "".join(t.text for t in tokens[:k])
    return qualifier, name_text[tokens[k].end:].strip()


def has_side_effects(expression: str) -> bool:
    """Whether evaluating a C++ expression may change state: an assignment, increment
    or decrement, `new`/`delete`/`throw`, or a call of anything but a type or sizeof
    (conservative: a call may do anything)."""
    tokens = tokenize(expression)
    for k, t in enumerate(tokens):
        if t.text in _WRITES:
            return True
        if t.text == "(" and k:
            before = tokens[k - 1]
            if before.kind == "id" and before.text not in _NOT_CALLS:
                return True
            if before.text in (")", "]", ">"):
                return True
    return False


def plain_text(text: str) -> str:
    """`text` without its comments (for a note inside a comment)."""
    tokens = tokenize(text)
    out = []
    for a, b in zip(tokens, tokens[1:] + [None]):
        out.append(a.text)
        if b is not None and b.start > a.end:
            out.append(" ")
    return "".join(out)


def received(parameter, argument: str, cast: str) -> str:
    """C text of the value a scalar parameter receives from the launch's `argument`, cast
    to `cast`: the argument converted to the parameter's type first (an unsigned -60
    passed to an int is -60 in the kernel, not 4294967236), where that type is a
    built-in one the launch can name."""
    spelled = " ".join(w for w in parameter.type.split() if w not in ("const", "volatile"))
    known = integer_type(spelled) is not None or type_name(spelled) in ("float", "double")
    value = f"({spelled})({argument.strip()})" if known else f"({argument.strip()})"
    return f"(({cast}){value})"


def launch_values(original: str, launch: Launch, kernel, cast: str) -> dict[str, str]:
    """C text, at this launch, of each value a kernel model's parameters may name, cast
    to `cast`: the kernel's scalar parameters (their arguments; none whose argument has
    a side effect) and the launch geometry (nthreads_a, gridDim_a, blockDim_a)."""
    _, config, args = launch_parts(original, launch)
    values = {}
    for k, p in enumerate(kernel.parameters):
        if not p.is_pointer and k < len(args) and not has_side_effects(args[k]):
            values[p.name] = received(p, args[k], cast)
    grid, block = config[0], config[1]
    for a in "xyz":
        values[f"nthreads_{a}"] = f"(({cast})dim3({grid}).{a} * dim3({block}).{a})"
        values[f"gridDim_{a}"] = f"(({cast})dim3({grid}).{a})"
        values[f"blockDim_{a}"] = f"(({cast})dim3({block}).{a})"
    return values
