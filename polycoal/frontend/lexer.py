"""A small C/C++/CUDA tokenizer used to locate kernels and launch sites.

It is deliberately shallow: it knows comments, string and character literals,
preprocessor lines, identifiers, numbers and punctuators (including CUDA's `<<<` and
`>>>`). That is enough to find `__global__` definitions and `k<<<...>>>(...)` launches in
host code of any style (C, C++ with templates and lambdas) without parsing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PUNCT = sorted(
    """<<< >>> <<= >>= ... -> ++ -- << >> <= >= == != && || += -= *= /= %= &= |= ^= ::
    { } [ ] ( ) ; , . ? : ~ ! + - * / % < > & | ^ = #""".split(),
    key=len, reverse=True)
_TOKEN_RE = re.compile(
    r"""(?P<ws>[ \t\f\v]+)
      | (?P<nl>\r\n?|\n)
      | (?P<comment>//(?:\\(?:\r\n?|\n)|[^\r\n])*|/\*.*?\*/)
      | (?P<str>(?:u8|[uUL])?R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)"
               |(?:u8|[uUL])?"(?:\\(?:\r\n|.)|[^"\\\r\n])*"
               |(?:u8|[uUL])?'(?:\\(?:\r\n|.)|[^'\\\r\n])*')
      | (?P<num>\.?\d(?:[\w.]|[eEpP][+-])*)
      | (?P<id>[A-Za-z_$]\w*)
      | (?P<spaced><<[ \t]+<|>>[ \t]+>)
      | (?P<punct>""" + "|".join(re.escape(p) for p in _PUNCT) + r""")
      | (?P<other>.)""",
    re.S | re.X)


# the tokens that change the variable they are written beside
ASSIGNMENTS = frozenset(("=", "++", "--", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=",
                         "&=", "^="))

_LINE_END = re.compile(r"\r\n?|\n")


def line_ends(text: str) -> int:
    """How many lines `text` ends, counted as the C preprocessor counts them: a line ends
    at `\r\n`, `\n` or a lone `\r` (so a lone `\r` in a comment starts a line)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """`text` cut into lines where `line_ends` counts them (not where str.splitlines
    does: a form feed does not end a line)."""
    if not keepends:
        return _LINE_END.split(text)
    lines, start = [], 0
    for m in _LINE_END.finditer(text):
        lines.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def line_ending(text: str) -> str:
    """The file's line ending: `\r\n` when most of its lines end so, else `\n`."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def with_line_ending(text: str, ending: str) -> str:
    """`text` (new code, lines ended by `\n`) with `ending` at the end of its lines."""
    return text if ending == "\n" else re.sub(r"(?<!\r)\n", ending, text)


@dataclass(frozen=True)
class Token:
    kind: str      # "id" | "num" | "str" | "punct" | "other"
    text: str
    start: int     # offset of the first character in the text
    end: int       # offset one past the last character
    line: int      # 1-based line of `start` in the text


def tokenize(text: str) -> list[Token]:
    """Tokens of `text`, without comments and preprocessor directives.

    A directive is a line whose first token is `#`; it runs to the end of the line,
    continued by backslash-newline.
    """
    tokens: list[Token] = []
    line = 1
    at_line_start = True
    in_launch = False           # between a launch's `<<<` and its `>>>`
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        kind = m.lastgroup if m.lastgroup != "delim" else "str"
        if m.group("str") is not None:
            kind = "str"
        value = m.group(0)
        if kind == "punct" and value == "#" and at_line_start:
            end = pos
            while True:             # to the end of the line, continued by backslashes
                nl = _LINE_END.search(text, end)
                if nl is None:
                    end = n
                    break
                if text[nl.start() - 1:nl.start()] == "\\":
                    end = nl.end()
                    line += 1
                    continue
                end = nl.start()
                break
            pos = end
            continue
        end = m.end()
        if kind == "spaced":
            # nvcc reads `k << < g, b >> > (a)` as a launch: one `<<<` token over the
            # spaced text (`>> >` only inside a launch's configuration: elsewhere it
            # closes templates, `vector<vector<int>> >`: `>>`, then `>`)
            if value.startswith("<") or in_launch:
                kind, value = "punct", value[0] * 3
            else:
                kind, value, end = "punct", ">>", pos + 2
        if kind == "punct" and value in ("<<<", ">>>"):
            in_launch = value == "<<<"
        if kind == "nl":
            line += 1
            at_line_start = True
        elif kind in ("ws",):
            pass
        elif kind == "comment":
            line += line_ends(value)
        else:
            tokens.append(Token(kind, value, pos, end, line))
            line += line_ends(text[pos:end])
            at_line_start = False
        pos = end
    return tokens


def continued_lines(text: str) -> set[int]:
    """1-based lines that start inside a comment, a string literal or a line continued by
    a backslash: a preprocessing directive cannot be put in front of them."""
    inside: set[int] = set()
    line = 1
    for m in _TOKEN_RE.finditer(text):
        breaks = line_ends(m.group(0))
        if breaks and (m.group("comment") or m.group("str")):
            inside.update(range(line + 1, line + breaks + 1))
        line += breaks
    for k, raw in enumerate(split_lines(text)):
        if raw.endswith("\\"):
            inside.add(k + 2)
    return inside


_PAIRS = {"(": ")", "[": "]", "{": "}", ")": "(", "]": "[", "}": "{", ">": "<"}


def matching(tokens: list[Token], index: int) -> int:
    """Index of the bracket matching the one at `index`: forward from an opening
    bracket, backward from a closing one (or from the `>` of a template list)."""
    here = tokens[index].text
    other = _PAIRS[here]
    step = 1 if here in "([{" else -1
    depth = 0
    k = index
    while 0 <= k < len(tokens):
        t = tokens[k].text
        if t == here:
            depth += 1
        elif t == other:
            depth -= 1
            if depth == 0:
                return k
        k += step
    raise ValueError(f"unbalanced {here!r} at line {tokens[index].line}")


def split_top_level(tokens: list[Token], sep: str = ",",
                    angles: bool = False) -> list[list[Token]]:
    """Split a token run at `sep` outside any brackets (with `angles`, outside template
    argument lists too: a parameter list's `Accessor<float, 2> a`)."""
    opening, closing = ("(", "[", "{", "<") if angles else ("(", "[", "{"), \
        (")", "]", "}", ">") if angles else (")", "]", "}")
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.text in opening:
            depth += 1
        elif t.text in closing:
            depth -= 1
        if t.text == sep and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def apply_edits(text: str, edits) -> str:
    """`text` with the edits ([start, end) -> new), in order; an edit inside one already
    made is dropped."""
    out, pos = [], 0
    for start, end, new in sorted(edits):
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def qualifier_start(text: str, start: int) -> int:
    """Where the qualifier of the name at `start` begins (`linalg::real` -> at `linalg`,
    `::real` -> at `::`); `start` when it has none."""
    lo = max(0, start - 256)
    m = re.search(r"(?:(?:\b[A-Za-z_]\w*)?\s*::\s*)+$", text[lo:start])
    return lo + m.start() if m else start
