"""Irregular references of a kernel: what the affine model cannot price, in the two
shapes two of the seed papers reorganise (../shared/SEEDS.md).

- A gather `A[P[e]]` (PPoPP 2013): the element of A a thread reads is chosen by an index
  array P at an affine position e of the thread (`x[perm[i]]`, or `j = perm[i]; x[j]`).
  Read into a copy `A2[t] = A[P[t]]` before the launch, the reference is `A2[e]`: a warp
  reads contiguous memory.
- A segment `A[k]` for `k` from `B[e]` to `B[e + 1]` (or `B[e] + L[e]`) (FITEE 2020): a
  thread walks its own run of A (CSR SpMV's `val[k]`, `col[k]`; neighbour lists), so at
  each step the warp's 32 reads are 32 runs apart. Copied run by run into a padded
  column-major copy, the j-th element of every run of a warp's 32 rows sits side by side.

Both copies hold the original's values only while A, P and B are not written, and they
are built for the threads' whole range of e, reading what the original reads. So a
reference qualifies where: A, P (B, L) are pointer parameters the kernel never writes;
e is affine in the thread indices (and, for a gather written in place, the loop
counters), its values over the statements' domains an interval without gaps; every
statement reading the reference has an exact domain (no dropped data-dependent
condition), and for a segment, the loop is reached under conditions the model states
exactly, runs with unit step, and reads A[k] in every iteration (no branch, no exit
before it). What fails says why (`Irregular.obstacle`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import islpy as isl
from pycparser import c_ast, c_generator

from polycoal.frontend.normalise import walk
from polycoal.model.expressions import AxisIsSplit, NonAffine, Scope, builtin
from polycoal.model.isl_helpers import domain, value_range, without_gaps
from polycoal.model.kernel_model import Access, KernelModel, Statement
from polycoal.model.poly import Poly


@dataclass(frozen=True)
class Irregular:
    """One irregular reference of a kernel (every occurrence of its text)."""

    kind: str                    # "gather" | "segment"
    array: str                   # A
    text: str                    # the reference as written: `x[P[i]]`, `data[jj]`
    line: int
    element_type: str
    index_array: str             # P (gather) or B (segment: the runs' first elements)
    index: str                   # e, as written (the thread's position in P, its row)
    index_poly: Poly | None = None
    length_array: str | None = None   # segment: L in `B[e] + L[e]`; None: `B[e + 1]`
    counter: str = ""            # segment: the loop's counter k
    loop_line: int = 0           # segment: the loop's line
    start: str = ""              # segment: the loop's first value as written (`row_start`)
    #                              ("0" where the references add the run's start: A[B[e] + k])
    subscript: str = ""          # segment: A's subscript as written (`k`, `start + k`)
    body: tuple[str, ...] = ()   # segment: the statements in the loop's body
    # segment: an array the loop reads through this one (x in `x[col[k]]`, `j = nbr[b + k];
    # px[j]`), and its element type: the second indirection the runtime's selector measures
    feeds: str = ""
    feeds_type: str = ""
    local: str | None = None     # gather: the private scalar holding P[e] (`j`)
    local_reads: int = 0         # gather: the model's reads of that scalar (macros expanded)
    # gather: the kernel's threads may run in any order (independent, the global index
    # read only through one local, `thread_index = thread_init`): padding reorders them
    thread_index: str = ""
    thread_init: str = ""
    # gather, reorderable: the kernel's only global reads are P[e] and this reference (the
    # paper's "single access pattern": the reordering scatters no other read)
    single_pattern: bool = False
    # gather: e is the thread's global index along x of a one-dimensional kernel without
    # shared memory of its own, so its block's elements can be staged in shared memory
    shareable: bool = False
    occurrences: tuple[str, ...] = ()   # statements reading it
    range: tuple[isl.PwAff, isl.PwAff] | None = field(default=None, compare=False)
    obstacle: str | None = None  # why it cannot be reorganised

    @property
    def describe(self) -> str:
        if self.kind == "gather":
            return f"gather through {self.index_array}[{self.index}]" if self.index_array \
                else f"gather through {self.index}"
        if self.start == "0":
            return (f"segment loop {self.counter} from 0 to {self.length_array}[{self.index}] "
                    f"reading from {self.index_array}[{self.index}] (line {self.loop_line})")
        end = f"{self.index_array}[{self.index}] + {self.length_array}[{self.index}]" \
            if self.length_array else f"{self.index_array}[{self.index} + 1]"
        return (f"segment loop {self.counter} from {self.index_array}[{self.index}] to "
                f"{end} (line {self.loop_line})")


_C = c_generator.CGenerator()


def _text(node: c_ast.Node) -> str:
    return _C.visit(node)


def _parents(root: c_ast.Node) -> dict[int, c_ast.Node]:
    out: dict[int, c_ast.Node] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for _, child in node.children():
            out[id(child)] = node
            stack.append(child)
    return out


def _reads_memory(node: c_ast.Node) -> bool:
    return any(isinstance(n, (c_ast.ArrayRef, c_ast.FuncCall, c_ast.StructRef)) or
               isinstance(n, c_ast.UnaryOp) and n.op == "*" for n in walk(node))


def _assigned(body: c_ast.Node) -> dict[str, int]:
    """How many times each plain variable is written (declaration initialisers,
    assignments, increments)."""
    out: dict[str, int] = {}
    for n in walk(body):
        name = None
        if isinstance(n, c_ast.Decl) and n.init is not None:
            name = n.name
        elif isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID):
            name = n.lvalue.name
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--") and \
                isinstance(n.expr, c_ast.ID):
            name = n.expr.name
        elif isinstance(n, c_ast.UnaryOp) and n.op == "&" and isinstance(n.expr, c_ast.ID):
            name = n.expr.name                  # its address taken: anything may write it
            out[name] = out.get(name, 0) + 99
            continue
        if name:
            out[name] = out.get(name, 0) + 1
    return out


def same_text(a: str, b: str) -> bool:
    """Whether two pieces of C text are the same but for white space."""
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


@dataclass
class _Kernel:
    model: KernelModel
    body: c_ast.Node
    parents: dict
    writes: dict[str, int]
    pointers: dict[str, str]           # read-only pointer parameter -> element type
    written_arrays: set[str]
    definitions: dict[str, tuple[Statement, Access]]   # private scalar -> its P[e] read
    one_dimensional: bool = False      # one global thread dim gx, no shared memory
    order: tuple[str, str] | None = None   # (variable, its initialiser): see _reorderable

    def thread_only(self, p: Poly | None) -> bool:
        return p is not None and p.is_affine() and \
            not any(v.startswith("c") and v[1:].isdigit() for v in p.variables)


def read_only_parameters(kernel) -> set[str] | None:
    """The kernel's pointer parameters it provably only reads: every mention of one is
    an element read `p[e]` (not assigned, incremented, or its address taken: `&p[i]`
    passed to atomicAdd or __stcs writes it) and the name is never used otherwise
    (`p + i`, passed to a function, assigned). None when the kernel was not parsed."""
    if kernel.ast is None:
        return None
    body = kernel.ast.body
    parents = _parents(body)
    names = {p.name for p in kernel.parameters if p.is_pointer}
    out = set(names)
    for n in walk(body):
        if not (isinstance(n, c_ast.ID) and n.name in names):
            continue
        parent = parents.get(id(n))
        if isinstance(parent, c_ast.StructRef) and parent.field is n:
            continue                              # `blockIdx.x`: a field, not the array
        ok = isinstance(parent, c_ast.ArrayRef) and parent.name is n
        if ok:
            up = parents.get(id(parent))
            ok = not (isinstance(up, c_ast.Assignment) and up.lvalue is parent) and \
                not (isinstance(up, c_ast.UnaryOp) and up.op in ("&", "++", "--", "p++", "p--"))
        if not ok:
            out.discard(n.name)
    return out


def _kernel(kernel, model: KernelModel) -> _Kernel | None:
    if kernel.ast is None:
        return None
    body = kernel.ast.body
    written = {a.array for _, a in model.accesses() if a.kind == "write"}
    read_only = read_only_parameters(kernel) or set()
    written |= {p.name for p in kernel.parameters if p.is_pointer and p.name not in read_only}
    pointers = {p.name: p.type for p in kernel.parameters
                if p.is_pointer and p.name not in written}
    writes = _assigned(body)
    definitions = {}
    for s in model.statements:
        scalars = [a for a in s.accesses if a.kind == "write" and a.space == "private"]
        reads = [a for a in s.accesses if a.kind == "read" and a.space != "private"]
        if len(scalars) == 1 and len(reads) == 1 and writes.get(scalars[0].array) == 1 \
                and reads[0].flat is not None and not s.loops and \
                same_text(s.text.split("=", 1)[-1].strip(), reads[0].text):
            definitions[scalars[0].array] = (s, reads[0])
    flat = [d.name for d in model.thread_dims] == ["gx"] and \
        not model.thread_dims[0].strided and not kernel.shared_lines and \
        not any(isinstance(n, c_ast.Decl) and "__shared__" in (n.quals or []) + (n.storage or [])
                for n in walk(body))
    k = _Kernel(model, body, _parents(body), writes, pointers, written, definitions, flat)
    k.order = _reorderable(k)
    return k


def _reorderable(k: _Kernel) -> tuple[str, str] | None:
    """(variable, initialiser) when the kernel's threads may run in any order: one
    dimension; no barrier, atomic or warp intrinsic; every written array accessed at one
    position a gx + b (a != 0) by every access, so that a thread touches only its own
    elements of what is written; the thread indices read only in one local's
    initialiser, `int i = blockIdx.x * blockDim.x + threadIdx.x;`, the local bound to gx
    and never written again."""
    if not k.one_dimensional or any(o.construct in ("atomic", "__syncthreads", "warp intrinsic")
                                    for o in k.model.outside):
        return None
    gx = Poly.var("gx")
    for array in k.written_arrays:
        flats = {a.flat for _, a in k.model.accesses() if a.array == array}
        if any(a.space == "private" for _, a in k.model.accesses() if a.array == array):
            continue
        if len(flats) != 1:
            return None
        flat = next(iter(flats))
        if flat is None or not flat.is_affine() or flat.variables - {"gx"} or \
                flat.coefficient("gx") == Poly.const(0):
            return None
    builtins = [n for n in walk(k.body) if builtin(n) is not None]
    decls = [n for n in walk(k.body) if isinstance(n, c_ast.Decl) and n.init is not None
             and any(builtin(x) is not None for x in walk(n.init))]
    if len(decls) != 1 or k.writes.get(decls[0].name) != 1:
        return None
    inside = {id(x) for x in walk(decls[0].init)}
    if any(id(n) not in inside for n in builtins):
        return None
    if not any(s.bindings.get(decls[0].name) == gx for s in k.model.statements):
        return None
    return decls[0].name, _text(decls[0].init)


def _index_read(k: _Kernel, s: Statement, text: str) -> tuple[str, str, Access, Statement] | None:
    """(P, e, the access P[e], its statement) for an element index `P[e]` read in `s`,
    or a private scalar holding one."""
    if text in k.definitions:
        ds, da = k.definitions[text]
        return da.array, da.element_index, da, ds
    for a in s.accesses:
        if a.kind == "read" and a.flat is not None and a.space == "global" and \
                same_text(a.text, text):
            return a.array, a.element_index, a, s
    return None


def _bounds(model: KernelModel, statements: list[Statement], index: Poly
            ) -> tuple[tuple | None, str | None]:
    """((lowest, one past the highest) value of the index as piecewise affine values of
    the parameters, None) or (None, why not)."""
    values = value_range(model, statements, index)
    if values is None or values.is_empty():
        return None, "the reference is never executed"
    values = values.coalesce()
    if not without_gaps(values):
        return None, f"the values of {index} have gaps"
    if not values.is_bounded():
        return None, f"the values of {index} are unbounded"
    lo = values.dim_min(0).coalesce()
    hi = values.dim_max(0).add(isl.PwAff.val_on_domain(
        values.dim_max(0).domain(), isl.Val.int_from_si(values.get_ctx(), 1))).coalesce()
    return (lo, hi), None


def _gathers(k: _Kernel) -> list[Irregular]:
    found: dict[str, list] = {}
    out, deeper = [], {}
    for s, a in k.model.accesses():
        if a.kind != "read" or a.flat is not None or a.space != "global" or a.member:
            continue
        hit = _index_read(k, s, a.element_index)
        if hit is None:
            if "indirect" in (a.reason or "") and a.text not in deeper:
                index = a.element_index
                deeper[a.text] = Irregular(
                    "gather", a.array, a.text, a.location.line, a.element_type, "", index,
                    occurrences=(s.name,),
                    obstacle="its index is read from memory at a position that is not "
                             "affine in the thread indices (a second indirection)")
            continue
        found.setdefault(a.text, []).append((s, a, hit))
    for text, uses in found.items():
        s, a, (p, e, pa, ps) = uses[0]
        local = a.element_index if a.element_index in k.definitions else None
        item = Irregular("gather", a.array, text, a.location.line, a.element_type, p, e,
                         pa.flat, local=local, occurrences=tuple(u[0].name for u in uses),
                         shareable=k.one_dimensional and pa.flat == Poly.var("gx"),
                         thread_index=k.order[0] if k.order and pa.flat == Poly.var("gx")
                         else "",
                         thread_init=k.order[1] if k.order and pa.flat == Poly.var("gx")
                         else "",
                         single_pattern=bool(k.order) and pa.flat == Poly.var("gx") and all(
                             same_text(x.text, text) or x.array == p and x.flat == pa.flat
                             for _, x in k.model.accesses()
                             if x.kind == "read" and x.space == "global"),
                         local_reads=sum(1 for _, x in k.model.accesses()
                                         if local and x.array == local and x.kind == "read"))
        obstacle = None
        if a.array in k.written_arrays:
            obstacle = f"'{a.array}' is written by the kernel (a copy is only read)"
        elif a.array not in k.pointers:
            obstacle = f"'{a.array}' is not a pointer parameter"
        elif p not in k.pointers:
            obstacle = f"'{p}' is written by the kernel or is not a pointer parameter"
        elif not all(u[0].exact for u in uses) or not ps.exact:
            obstacle = "read under a condition on data"
        elif not pa.flat.is_affine() or local and not k.thread_only(pa.flat):
            obstacle = f"the position {e} in '{p}' is not affine in the thread indices"
        elif any(u[2][2] is not pa for u in uses[1:]):
            obstacle = "the index is read in more than one place"
        bounds = None
        if obstacle is None:
            statements = [u[0] for u in uses]
            if local and not _covered(k.model, statements, ps):
                obstacle = f"'{local}' is read where its definition does not run"
            else:
                bounds, obstacle = _bounds(k.model, statements, pa.flat)
        out.append(Irregular(**{**item.__dict__, "range": bounds, "obstacle": obstacle}))
    return out + [r for text, r in deeper.items() if text not in found]


def _covered(model: KernelModel, uses: list[Statement], definition: Statement) -> bool:
    """Whether every thread reading the scalar has run its definition."""
    n = len(model.thread_dims)
    threads = lambda s: domain(model, s).project_out(isl.dim_type.set, n,  # noqa: E731
                                                     model.depth).reset_tuple_id()
    defined = threads(definition)
    return all(threads(s).is_subset(defined) for s in uses)


def _loop_parts(loop: c_ast.For) -> tuple[str, c_ast.Node, c_ast.Node] | None:
    """(counter, first value, end) of `for (k = S; k < E; k++)` (also `k != E`,
    `++k`, `k += 1`, a declaration `int k = S`)."""
    init = loop.init
    if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 and init.decls[0].init:
        counter, first = init.decls[0].name, init.decls[0].init
    elif isinstance(init, c_ast.Assignment) and init.op == "=" and \
            isinstance(init.lvalue, c_ast.ID):
        counter, first = init.lvalue.name, init.rvalue
    else:
        return None
    cond, step = loop.cond, loop.next
    if not (isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "!=") and
            isinstance(cond.left, c_ast.ID) and cond.left.name == counter):
        return None
    unit = (isinstance(step, c_ast.UnaryOp) and step.op in ("++", "p++") and
            isinstance(step.expr, c_ast.ID) and step.expr.name == counter) or \
        (isinstance(step, c_ast.Assignment) and step.op == "+=" and
         isinstance(step.lvalue, c_ast.ID) and step.lvalue.name == counter and
         isinstance(step.rvalue, c_ast.Constant) and step.rvalue.value == "1")
    return (counter, first, cond.right) if unit else None


def _read_of(k: _Kernel, node: c_ast.Node, statement: Statement) -> tuple[str, Poly] | None:
    """(array, position) of a read `B[e]` (or a private scalar holding one) with e
    affine in the thread indices."""
    if isinstance(node, c_ast.ID) and node.name in k.definitions:
        _, a = k.definitions[node.name]
        return (a.array, a.flat) if k.thread_only(a.flat) else None
    if isinstance(node, c_ast.ArrayRef) and isinstance(node.name, c_ast.ID) and \
            node.name.name in k.pointers:
        scope = Scope(k.model.axes, dict(statement.bindings), set(k.model.parameters))
        try:
            position = scope.to_poly(node.subscript)
        except (NonAffine, AxisIsSplit):
            return None
        return (node.name.name, position) if k.thread_only(position) else None
    return None


def _unconditional(k: _Kernel, node: c_ast.Node, stop: c_ast.Node) -> bool:
    """Whether `node` is evaluated whenever `stop` (an ancestor) is: no branch, no
    short circuit between them."""
    child, parent = node, k.parents.get(id(node))
    while parent is not None and parent is not stop:
        if isinstance(parent, (c_ast.If, c_ast.TernaryOp, c_ast.For, c_ast.While,
                               c_ast.DoWhile, c_ast.Switch)):
            if not (isinstance(parent, c_ast.If) and child is parent.cond):
                return False
        if isinstance(parent, c_ast.BinaryOp) and parent.op in ("&&", "||") and \
                child is parent.right:
            return False
        child, parent = parent, k.parents.get(id(parent))
    return parent is stop


_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")


def _data_free(k: _Kernel, condition: c_ast.Node, s: Statement) -> bool:
    """Whether a condition depends on no data: no memory read, and every name a kernel
    parameter, a thread index, or a local the model holds as affine (a local loaded from
    memory, `int on = active[i]; if (on)`, is data)."""
    if _reads_memory(condition):
        return False
    known = set(k.model.parameters) | set(s.bindings) | set(_BUILTINS)
    return all(n.name in known for n in walk(condition) if isinstance(n, c_ast.ID))


def _reached_exactly(k: _Kernel, loop: c_ast.Node, s: Statement) -> bool:
    """Whether the loop runs under conditions on no data (so the model states them
    exactly and the remap reads only the runs the original reads): its enclosing
    branches, and every early exit in the kernel."""
    parent = k.parents.get(id(loop))
    while parent is not None:
        if isinstance(parent, (c_ast.If, c_ast.While, c_ast.DoWhile, c_ast.Switch,
                               c_ast.TernaryOp)) and not _data_free(k, parent.cond, s):
            return False
        if isinstance(parent, c_ast.For):
            return False                    # inside another loop: not a thread's row
        parent = k.parents.get(id(parent))
    for n in walk(k.body):
        if isinstance(n, c_ast.If) and not _data_free(k, n.cond, s) and \
                any(isinstance(x, (c_ast.Return, c_ast.Goto)) for x in walk(n)):
            return False
    return True


def _row_text(k: _Kernel, node: c_ast.Node) -> str:
    """The row e of a read B[e] (or of the private scalar holding it), as written."""
    if isinstance(node, c_ast.ID):
        return k.definitions[node.name][1].element_index
    return _text(node.subscript)


def _runs(k: _Kernel, counter: str, first: c_ast.Node, end: c_ast.Node, s: Statement):
    """The runs a segment loop walks: (B, row e, L or None, the read of B[e], the run's
    first value as written) for `for (k = B[e]; k < B[e + 1] | B[e] + L[e]; k++)`,
    whose references are A[k]; or for `for (k = 0; k < L[e]; k++)`, whose references
    are A[B[e] + k] (first value "0"); None for any other loop."""
    start = _read_of(k, first, s)
    if start is not None:
        begin, row = start
        end_read = _read_of(k, end, s)
        if end_read and end_read[0] == begin and end_read[1] == row + 1:
            return begin, row, None, first, _text(first)
        if isinstance(end, c_ast.BinaryOp) and end.op == "+" and \
                _read_of(k, end.left, s) == start:
            other = _read_of(k, end.right, s)
            if other is not None and other[1] == row:
                return begin, row, other[0], first, _text(first)
        return None
    if isinstance(first, c_ast.Constant) and first.value == "0":
        length = _read_of(k, end, s)
        if length is not None:
            return None, length[1], length[0], None, "0"
    return None


def _offset_read(k: _Kernel, node: c_ast.ArrayRef, counter: str, s: Statement, row: Poly):
    """(B, the read of B[e]) of a reference A[S + k] (or A[k + S]) with S a read B[e]
    at the loop's row."""
    sub = node.subscript
    if not (isinstance(sub, c_ast.BinaryOp) and sub.op == "+"):
        return None
    for this, other in ((sub.left, sub.right), (sub.right, sub.left)):
        if isinstance(other, c_ast.ID) and other.name == counter:
            hit = _read_of(k, this, s)
            if hit is not None and hit[1] == row:
                return hit[0], this
    return None


def _second_indirections(inside: list[Statement], refs) -> dict[str, tuple[str, str]]:
    """Segment array C -> (X, X's element type) for a read `X[C[sub]]` in the loop, or
    `j = C[sub]; ... X[j]`."""
    texts = {}
    for (array, _, _), nodes in refs.items():
        texts[_text(nodes[0]).replace(" ", "")] = array
    locals_ = {}
    for s in inside:
        scalars = [a for a in s.accesses if a.kind == "write" and a.space == "private"]
        if len(scalars) == 1 and "=" in s.text:
            held = texts.get(s.text.split("=", 1)[1].strip().replace(" ", ""))
            if held:
                locals_[scalars[0].array] = held
    out: dict[str, tuple[str, str]] = {}
    for s in inside:
        for a in s.accesses:
            if a.kind != "read" or a.flat is not None or a.space != "global":
                continue
            index = a.element_index.replace(" ", "")
            array = texts.get(index) or locals_.get(index)
            if array and array not in out:
                out[array] = (a.array, a.element_type)
    return out


def _segments(k: _Kernel) -> list[Irregular]:
    out = []
    for loop in (n for n in walk(k.body) if isinstance(n, c_ast.For)):
        parts = _loop_parts(loop)
        if parts is None:
            continue
        counter, first, end = parts
        inside = [s for s in k.model.statements if loop.stmt is not None and
                  _within(k, s, loop)]
        if not inside:
            continue
        runs = _runs(k, counter, first, end, inside[0])
        if runs is None:
            continue
        begin_array, row, length, begin_read, start_text = runs
        body_writes = _assigned(loop.stmt)
        refs: dict[tuple, list] = {}
        for n in walk(loop.stmt):
            if not (isinstance(n, c_ast.ArrayRef) and isinstance(n.name, c_ast.ID)):
                continue
            if begin_read is not None:
                if isinstance(n.subscript, c_ast.ID) and n.subscript.name == counter:
                    refs.setdefault((n.name.name, begin_array, begin_read), []).append(n)
            else:
                hit = _offset_read(k, n, counter, inside[0], row)
                if hit is not None:
                    refs.setdefault((n.name.name, hit[0], hit[1]), []).append(n)
        feeds = _second_indirections(inside, refs)
        for (array, begin, read), nodes in refs.items():
            subscript = _text(nodes[0].subscript)
            statements = [s for s in inside if any(
                a.array == array and a.kind == "read" and a.flat is None and
                same_text(a.element_index, subscript) for a in s.accesses)]
            if not statements or any(not same_text(_text(n.subscript), subscript) for n in nodes):
                continue
            item = Irregular("segment", array, f"{array}[{subscript}]", nodes[0].coord.line,
                             k.pointers.get(array, ""), begin, _row_text(k, read), row,
                             length_array=length, counter=counter,
                             loop_line=loop.coord.line if loop.coord else 0,
                             start=start_text, subscript=subscript,
                             body=tuple(s.name for s in inside),
                             feeds=feeds.get(array, ("", ""))[0],
                             feeds_type=feeds.get(array, ("", ""))[1],
                             occurrences=tuple(s.name for s in statements))
            obstacle = None
            if array not in k.pointers:
                obstacle = f"'{array}' is written by the kernel or is not a pointer parameter"
            elif begin not in k.pointers or length and length not in k.pointers:
                obstacle = f"'{begin}' is written by the kernel"
            elif counter in body_writes:
                obstacle = f"the loop's body writes its counter '{counter}'"
            elif any(isinstance(x, (c_ast.Break, c_ast.Return, c_ast.Goto, c_ast.Continue))
                     for x in walk(loop.stmt)):
                obstacle = "the loop may end or skip an iteration before its reads"
            elif not all(_unconditional(k, n, loop) for n in nodes):
                obstacle = f"'{item.text}' is read under a condition"
            elif not _reached_exactly(k, loop, inside[0]):
                obstacle = "the loop runs under a condition on data"
            bounds = None
            if obstacle is None:
                bounds, obstacle = _bounds(k.model, statements, row)
                if bounds and not bounds[0].ge_set(isl.PwAff.zero_on_domain(
                        bounds[0].get_domain_space())).is_equal(bounds[0].domain()):
                    obstacle = f"the rows {item.index} may be negative"
            out.append(Irregular(**{**item.__dict__, "range": bounds,
                                    "obstacle": obstacle}))
    return out


def _within(k: _Kernel, s: Statement, loop: c_ast.For) -> bool:
    """Whether the statement is in the loop's body (by its node, or, for statements the
    model made of declarations, by its position)."""
    node = s.node
    while node is not None:
        if node is loop.stmt:
            return True
        node = k.parents.get(id(node))
    lines = [n.coord.line for n in walk(loop.stmt) if n.coord is not None]
    line, col = s.location.line, s.location.col
    first = loop.stmt.coord
    return bool(lines) and first is not None and \
        (first.line, first.column or 0) <= (line, col) and line <= max(lines)


def irregular_references(kernel, model: KernelModel) -> list[Irregular]:
    """Every gather and segment reference of the kernel, each with its range or the
    obstacle to reorganising it."""
    k = _kernel(kernel, model)
    if k is None:
        return []
    segments = _segments(k)
    return [r for r in _gathers(k) if all(r.text != x.text for x in segments)] + segments
