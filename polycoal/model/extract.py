"""Extract the polyhedral model of a kernel (`extract_model`).

The kernel body is walked once. Index variables (`int i = blockIdx.x * blockDim.x +
threadIdx.x;`, assigned once) are substituted; `for` loops with affine bounds and a
constant step become loop dimensions; affine `if` conditions and early `return`s restrict
the domains of the statements they guard. Every expression statement becomes a
statement with its array references. Thread-private scalars (`float sum`) are modelled
as arrays indexed by the thread dimensions, so they never create dependences between
threads. Whatever the model cannot represent is recorded as `OutsideModel` with its
line; the references are still extracted, so that coalescing analysis covers them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pycparser import c_ast, c_generator

from polycoal.diagnostics import Diagnostic, Location
from polycoal.frontend import callees
from polycoal.frontend.dialect import cuda_dialect
from polycoal.frontend.kernels import type_name
from polycoal.frontend.limits import integer_type
from polycoal.frontend.normalise import single_statement, walk
from polycoal.frontend.opaque import MARK as OPAQUE
from polycoal.frontend.program import Kernel, Program
from polycoal.model.accumulation import accumulation
from polycoal.model.delinearize import assign_array_shapes
from polycoal.model.expressions import AxisIsSplit, NonAffine, Scope, ThreadAxes, builtin
from polycoal.model.kernel_model import (is_launch_parameter, Access, KernelModel, Loop,
                                         OutsideModel, Statement, ThreadDim)
from polycoal.model.poly import Poly

_GEOMETRY_ONLY = "geometry permutation only (the thread dimensions stay parallel)"
_NOTHING = "analysis only; the kernel is left unchanged"
_INT_TYPES = {"int", "unsigned", "unsigned int", "long", "unsigned long", "size_t", "short",
              "long long", "unsigned long long", "int32_t", "uint32_t", "int64_t", "uint64_t",
              "uint", "char", "unsigned char", "bool", "_Bool"}
# those whose values are never negative
_UNSIGNED_TYPES = {"unsigned", "unsigned int", "unsigned long", "size_t", "unsigned long long",
                   "uint32_t", "uint64_t", "uint", "unsigned char", "bool", "_Bool"}


def unsigned_arguments(kernel: Kernel) -> set[str]:
    """The kernel's int arguments whose type makes them non-negative."""
    return {p.name for p in kernel.parameters if p.type in _UNSIGNED_TYPES}


def _loc(node: c_ast.Node | None, fallback: Location) -> Location:
    coord = getattr(node, "coord", None)
    if coord is None or not coord.line:
        return fallback
    return Location(coord.file or fallback.file, coord.line, coord.column or 1)


def _text(node: c_ast.Node) -> str:
    return c_generator.CGenerator().visit(node)


def guarded_assignments(node: c_ast.If) -> list[c_ast.Assignment]:
    """The assignments of `if (c) X = e;` or `if (c) X = e; else X = f;` (each branch one
    plain assignment to the same array element, braced or not; no side effect in c, e
    or f besides it), or [] for any other if."""
    def one(stmt):
        stmt = single_statement(stmt)
        return stmt if isinstance(stmt, c_ast.Assignment) and stmt.op == "=" and \
            isinstance(stmt.lvalue, (c_ast.ArrayRef, c_ast.StructRef)) else None

    def pure(expr) -> bool:
        return not any(isinstance(n, c_ast.Assignment) or
                       (isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"))
                       for n in walk(expr))
    branches = [one(node.iftrue)] + ([one(node.iffalse)] if node.iffalse is not None else [])
    if None in branches or not pure(node.cond) or \
            not all(pure(a.rvalue) and pure(a.lvalue) for a in branches) or \
            len({_text(a.lvalue) for a in branches}) != 1:
        return []
    return branches


@dataclass
class _Context:
    loops: tuple[Loop, ...] = ()
    guards: tuple[str, ...] = ()
    beta: tuple[int, ...] = (0,)
    exact: bool = True


@dataclass
class _Variables:
    """What a pre-pass learns about the kernel's local variables."""

    assigned: dict[str, int] = field(default_factory=dict)   # name -> number of writes
    types: dict[str, str] = field(default_factory=dict)
    pointers: set[str] = field(default_factory=set)
    counters: set[str] = field(default_factory=set)       # variables used as loop counters
    arrays: dict[str, list[c_ast.Node]] = field(default_factory=dict)  # local arrays: dims


def _prescan(body: c_ast.Node) -> _Variables:
    info = _Variables()

    class V(c_ast.NodeVisitor):
        def visit_Decl(self, node):
            if node.name:
                ty = node.type
                if isinstance(ty, c_ast.PtrDecl):
                    info.pointers.add(node.name)
                dims = []
                while isinstance(ty, c_ast.ArrayDecl):
                    dims.append(ty.dim)
                    ty = ty.type
                if dims:
                    info.arrays[node.name] = dims
                spelled = type_name(ty)
                if info.types.get(node.name, spelled) != spelled:
                    spelled = "?"     # declared again with another type: known as neither
                info.types[node.name] = spelled
                if node.init is not None:
                    info.assigned[node.name] = info.assigned.get(node.name, 0) + 1
            self.generic_visit(node)

        def visit_For(self, node):
            init = node.init
            if isinstance(init, c_ast.Assignment) and isinstance(init.lvalue, c_ast.ID):
                info.counters.add(init.lvalue.name)
            elif isinstance(init, c_ast.DeclList):
                info.counters.update(d.name for d in init.decls if d.name)
            self.generic_visit(node)

        def visit_Assignment(self, node):
            if isinstance(node.lvalue, c_ast.ID):
                info.assigned[node.lvalue.name] = info.assigned.get(node.lvalue.name, 0) + 2
            self.generic_visit(node)

        def visit_UnaryOp(self, node):
            if node.op in ("++", "--", "p++", "p--") and isinstance(node.expr, c_ast.ID):
                info.assigned[node.expr.name] = info.assigned.get(node.expr.name, 0) + 2
            self.generic_visit(node)

    V().visit(body)
    return info


def _geometry_in_value(node: c_ast.Node | None) -> c_ast.Node | None:
    """A launch-geometry builtin (`threadIdx.x`, `blockDim.x`...) a statement reads
    outside its subscripts (which the model reads), else None."""
    if node is None:
        return None
    if isinstance(node, c_ast.ArrayRef):
        return _geometry_in_value(node.name)
    if builtin(node) is not None or isinstance(node, c_ast.ID) and \
            is_launch_parameter(node.name):        # as lowered code spells it: blockDim_x
        return node
    for _, child in node.children():
        found = _geometry_in_value(child)
        if found is not None:
            return found
    return None


def _constants(kernel: Kernel, program: Program) -> dict[str, Poly]:
    """The program's file-scope integer constants (Program.constants) as values, except
    names the kernel declares itself (a parameter or a local shadows them)."""
    if not program.constants:
        return {}
    declared = {p.name for p in kernel.parameters}

    class Declarations(c_ast.NodeVisitor):
        def visit_Decl(self, node):
            declared.add(node.name)
            self.generic_visit(node)
    Declarations().visit(kernel.ast)
    return {name: Poly.const(value) for name, value in program.constants.items()
            if name not in declared}


# a file-scope constant's declaration: `constexpr unsigned W = 40;`, `const size_t N{8};`
def integer_names(kernel: Kernel, variables: "_Variables | None" = None,
                  program: Program | None = None) -> dict[str, str]:
    """The declared types of the kernel's int arguments and locals (a local's own where
    it shadows an argument), and of the program's constants it reads (unsigned ones
    compare in unsigned arithmetic)."""
    variables = variables or _prescan(kernel.ast.body)
    constants = {}
    if program is not None and program.constants:
        constants = {n: t for n, t in program.constant_types.items() if n in program.constants}
    return {**constants, **{p.name: p.type for p in kernel.parameters if not p.is_pointer},
            **variables.types}


class _Extractor:
    def __init__(self, kernel: Kernel, program: Program, axes: ThreadAxes,
                 nonnegative: frozenset[str] = frozenset()):
        self.kernel = kernel
        self.program = program
        self.dialect = cuda_dialect()
        self.here = kernel.location
        self.vars = _prescan(kernel.ast.body)
        # an int argument the kernel assigns (`n = n - 2;`) is a value of its thread,
        # not the parameter the launch passes: unknown to the model
        params = {p.name for p in kernel.parameters if not p.is_pointer
                  and p.type in _INT_TYPES and not self.vars.assigned.get(p.name)}
        self.scope = Scope(axes, _constants(kernel, program), params,
                           types=integer_names(kernel, self.vars, program),
                           nonnegative=set(nonnegative))
        for p in kernel.parameters:
            if not p.is_pointer and p.name not in params:
                self.scope.opaque[p.name] = f"'{p.name}' is assigned in the kernel" \
                    if self.vars.assigned.get(p.name) else \
                    f"'{p.name}' is a non-integer argument"
        self.pointer_params = {p.name: p for p in kernel.parameters if p.is_pointer}
        self.statements: list[Statement] = []
        self.outside: list[OutsideModel] = []
        self.private: dict[str, int] = {}   # thread-private scalar -> loop depth of its
        #                                       declaration (it is fresh in every iteration)
        self.returned: list[str] = []     # negated guards of earlier returns
        self.cut_loops: set[Loop] = set()  # loops left early by break / continue
        self.cut_everything = False
        self.allow_virtual = True         # read grid-stride loops as thread dimensions
        self.virtual_axes: set[str] = set()
        self.closed = False               # a grid-stride loop took the whole body
        self.pragmas: dict[int, tuple[str, ...]] = {}   # id of a For -> pragmas before it

    # bookkeeping -------------------------------------------------------------
    def outside_model(self, construct: str, node: c_ast.Node | None, detail: str,
                      fallback: str = _GEOMETRY_ONLY) -> None:
        loc = _loc(node, self.here)
        if not any(o.construct == construct and o.location == loc for o in self.outside):
            self.outside.append(OutsideModel(construct, loc, detail, fallback))

    # walking -----------------------------------------------------------------
    def block(self, items: list[c_ast.Node], ctx: _Context) -> _Context:
        pragmas: list[str] = []
        for item in items or []:
            if isinstance(item, c_ast.For) and pragmas:
                # a loop's pragmas (unroll hints) go with the loop into generated code
                self.pragmas[id(item)] = tuple(pragmas)
            pragmas = pragmas + [item.string] if isinstance(item, c_ast.Pragma) else []
            ctx = self.item(item, ctx)
        return ctx

    def _next(self, ctx: _Context) -> _Context:
        beta = ctx.beta[:-1] + (ctx.beta[-1] + 1,)
        return replace(ctx, beta=beta)

    def item(self, node: c_ast.Node, ctx: _Context) -> _Context:
        if isinstance(node, c_ast.Compound):
            return self.block(node.block_items, ctx)
        if isinstance(node, c_ast.Decl):
            return self.declaration(node, ctx)
        if isinstance(node, c_ast.DeclList):
            for d in node.decls:
                ctx = self.declaration(d, ctx)
            return ctx
        if isinstance(node, c_ast.For):
            self.for_loop(node, ctx)
            return self._next(ctx)
        if isinstance(node, c_ast.If):
            return self.if_statement(node, ctx)
        if isinstance(node, c_ast.Return):
            self.early_return(node, ctx)
            return ctx
        if isinstance(node, (c_ast.While, c_ast.DoWhile)):
            self.outside_model("while loop", node, "a loop whose trip count the model cannot "
                               "express", _GEOMETRY_ONLY)
            inner = replace(ctx, exact=False)
            self.item(node.stmt, inner)
            return self._next(ctx)
        if isinstance(node, (c_ast.Break, c_ast.Continue, c_ast.Goto, c_ast.Switch, c_ast.Label)):
            what = type(node).__name__.lower()
            # the loop's statements may run fewer times than its bounds say
            self.cut_loops.update(ctx.loops[-1:] if ctx.loops else [])
            if isinstance(node, c_ast.Goto) or not ctx.loops:
                self.cut_everything = True
            self.outside_model(f"'{what}'", node, f"'{what}' makes control flow "
                               "data-dependent", _GEOMETRY_ONLY)
            if isinstance(node, (c_ast.Switch, c_ast.Label)):
                self.item(node.stmt, replace(ctx, exact=False))
            return ctx
        if isinstance(node, c_ast.EmptyStatement):
            return ctx
        if isinstance(node, c_ast.Pragma):
            return ctx
        self.statement(node, ctx)
        return self._next(ctx)

    def declaration(self, node: c_ast.Decl, ctx: _Context) -> _Context:
        name = node.name
        if name is None:
            return ctx
        if "extern" in (node.storage or []) or node.coord and node.coord.line in \
                self.kernel.shared_lines:
            return ctx
        if name in self.vars.arrays:
            return ctx            # a local or shared array: its accesses are modelled
        if name in self.vars.pointers:
            if node.init is not None:
                self.outside_model("pointer arithmetic", node, f"local pointer '{name}' = "
                                   f"{_text(node.init)}: accesses through it are not affine "
                                   "in the arrays they point into", _GEOMETRY_ONLY)
                self.scope.opaque[name] = f"pointer '{name}'"
            return ctx
        ty = self.vars.types.get(name, "?")
        if node.init is None:
            if self.vars.assigned.get(name, 0) > 0 and name not in self.vars.counters:
                self.private[name] = len(ctx.loops)
            return ctx
        if self.vars.assigned.get(name, 0) == 1 and ty in _INT_TYPES:
            try:
                declared = integer_type(ty)
                if declared is None or declared[0] < 32:
                    raise NonAffine(f"'{name}' is of the narrow type {ty} (it wraps)")
                self.scope.values[name] = self.scope.convert(node.init, declared)
                return ctx
            except NonAffine as e:
                self.scope.opaque[name] = (f"'{name}' = {_text(node.init)} is not affine "
                                           f"({e.reason})")
        # a thread-private scalar written here
        self.private[name] = len(ctx.loops)
        assign = c_ast.Assignment("=", c_ast.ID(name, coord=node.coord), node.init,
                                  coord=node.coord)
        self.statement(assign, ctx, text=_text(node).strip())
        return self._next(ctx)

    def local_struct_field(self, node: c_ast.StructRef) -> bool:
        """A field of a local struct or vector (`float2 tmp; tmp.x += ...`, `auto p =
        a[i]; p.mass`): its fields are not modelled as values of their own, so neither
        their writes nor the dependences through them are; the kernel is outside the
        affine model (True), its thread axes may still be permuted."""
        base = node
        while isinstance(base, (c_ast.StructRef, c_ast.ArrayRef)):
            base = base.name
        if not isinstance(base, c_ast.ID) or builtin(node) or \
                base.name not in self.vars.types or base.name in self.vars.arrays or \
                base.name in self.vars.pointers:
            return False
        self.outside_model("local struct", node, f"'{_text(node)}': a field of the local "
                           f"'{base.name}' (fields of locals are not modelled)",
                           _GEOMETRY_ONLY)
        return True

    def early_return(self, node: c_ast.Return, ctx: _Context) -> None:
        if ctx.loops:
            self.outside_model("'return' in a loop", node, "a return inside a loop exits "
                               "it early", _GEOMETRY_ONLY)
            return
        if not ctx.guards:
            self.returned.append("false")
            return
        self.returned.append("not (" + " and ".join(ctx.guards) + ")")

    def if_statement(self, node: c_ast.If, ctx: _Context) -> _Context:
        try:
            cond = self.scope.condition(node.cond)
            negated = self.scope.condition(node.cond, negate=True)
        except NonAffine as e:
            branches = guarded_assignments(node)
            if branches and self.guarded_statement(node, branches, ctx):
                return self._next(ctx)
            self.outside_model("data-dependent condition", node.cond,
                               f"condition '{_text(node.cond)}': {e.reason}", _GEOMETRY_ONLY)
            self.collect_condition_reads(node.cond, ctx)
            inner = replace(ctx, exact=False)
            self.item(node.iftrue, inner)
            if node.iffalse is not None:
                self.item(node.iffalse, inner)
            return self._next(ctx)
        self.item(node.iftrue, replace(ctx, guards=ctx.guards + (cond,)))
        if node.iffalse is not None:
            self.item(node.iffalse, replace(ctx, guards=ctx.guards + (negated,)))
        return self._next(ctx)

    def guarded_statement(self, node: c_ast.If, branches: list[c_ast.Assignment],
                          ctx: _Context) -> bool:
        """`if (c) X = e;` (`else X = f;`) under a condition the model cannot express (it
        reads memory), as one statement modelled as its if-conversion `X = c ? e : X`:
        it reads what the condition and the values read, and X's old value, and writes
        X every time. Its dataflow is then exact (a later read of X depends on it, and
        it on X's earlier writes); a race or dependence it may not have is only
        conservative; the code keeps the `if` (codegen/statements.py). Only where every
        element it touches is one an earlier statement of the same loops touches
        whenever it runs (same loops, no guard it lacks, no data-dependent one): a pass
        may then read those elements unconditionally (load them ahead, stage them), as
        the thread reads them anyway; an element read only when the condition holds
        (`if (k < *count) y[i] = x[k];`) may not be valid. False (nothing added) where
        that does not hold."""
        refs: list[Access] = []
        self.references(node.cond, "read", refs, ctx)
        for a in branches:
            self.references(a.rvalue, "read", refs, ctx)
        self.references(branches[0].lvalue, "read", refs, ctx)
        guards = set(ctx.guards) | set(self.returned)
        touched = {a.text for st in self.statements
                   if st.exact and st.loops == ctx.loops and set(st.constraints) <= guards
                   and not isinstance(st.node, c_ast.If) for a in st.accesses}
        if not ctx.exact or not all(a.text in touched for a in refs):
            return False
        self.references(branches[0].lvalue, "write", refs, ctx)
        self.add_statement(node, ctx, refs, text=_text(node).strip())
        return True

    def collect_condition_reads(self, cond: c_ast.Node, ctx: _Context) -> None:
        refs = []
        self.references(cond, "read", refs, ctx)
        if refs:
            self.add_statement(cond, ctx, refs, text=f"if ({_text(cond)})")

    def virtual_thread_loop(self, node: c_ast.For, ctx: _Context) -> bool:
        """A grid-stride loop `for (v = lo + G_a; v <= hi; v += blockDim.a * gridDim.a)`
        around the whole kernel body: every v in [lo, hi] is run by exactly one thread,
        once, so v is modelled as the (unbounded) thread dimension of axis a itself."""
        if not self.allow_virtual or ctx.loops or self.statements:
            return False
        try:
            name, lowers = self._loop_init(node.init)
            if len(lowers) != 1 or not (isinstance(node.next, c_ast.Assignment)
                                        and node.next.op == "+="
                                        and isinstance(node.next.lvalue, c_ast.ID)
                                        and node.next.lvalue.name == name):
                return False
            step = self.scope._poly(node.next.rvalue)
        except (NonAffine, AxisIsSplit):
            return False
        axes = self.scope.axes
        for a in cuda_dialect().axes:
            g = f"g{a}"
            lo = lowers[0] - Poly.var(g)
            if lowers[0].coefficient(g) == Poly.const(1) and step == axes.block[a] * \
                    axes.grid[a] and not any(v[0] in "gbtc" and v[1:].isdigit() or v in
                                             ("gx", "gy", "gz") for v in lo.variables) \
                    and a not in self.virtual_axes and axes.combined.get(a, True):
                self.scope.values[name] = lowers[0]
                try:
                    cond = self.scope.condition(node.cond)
                except NonAffine:
                    self.scope.values.pop(name, None)
                    return False
                self.virtual_axes.add(a)
                self.item(node.stmt, replace(ctx, guards=ctx.guards + (cond,)))
                self.closed = True
                return True
        return False

    def for_loop(self, node: c_ast.For, ctx: _Context) -> None:
        if self.virtual_thread_loop(node, ctx):
            return
        loc = _loc(node, self.here)
        counter = f"c{len(ctx.loops)}"
        try:
            name, lowers = self._loop_init(node.init)
            lower = lowers[0]
            step = self._loop_step(node.next, name)
            saved = self.scope.values.get(name)
            self.scope.values[name] = Poly.var(counter)
            upward = step > 0 and self.scope.never_negative(lower)
            if upward:
                self.scope.nonnegative.add(counter)        # counts up from >= 0
            self.scope.wrapped = False
            try:
                cond = self.scope.condition(node.cond) if node.cond is not None else None
            finally:
                self.scope.nonnegative.discard(counter)
                if saved is None:
                    self.scope.values.pop(name, None)
                else:
                    self.scope.values[name] = saved
            if self.scope.wrapped:
                # compared in unsigned arithmetic with a side of either sign: the test
                # need not stay true up to a point and false after it, so the loop is
                # not the range `start <= c and cond`
                raise NonAffine("the loop's condition compares in unsigned arithmetic a "
                                "value that may be negative")
            if _prescan(node.stmt).assigned.get(name, 0) > 0:
                raise NonAffine(f"loop counter '{name}' is modified in the loop body")
        except NonAffine as e:
            self.outside_model("non-affine loop", node, f"loop at line {loc.line}: {e.reason}",
                               _GEOMETRY_ONLY)
            self.item(node.stmt, replace(ctx, exact=False))
            return
        c = Poly.var(counter)
        lo = (c - lower).to_c("*")
        constraints = [f"{(c - b).to_c('*')} {'>=' if step > 0 else '<='} 0" for b in lowers]
        if abs(step) != 1:
            constraints.append(f"exists (e_{counter}: {lo} = {step}*e_{counter})")
        if cond is not None:
            constraints.append(cond)
        loop = Loop(counter, name, loc, step, lower, self.pragmas.get(id(node), ()))
        inner = replace(ctx, loops=ctx.loops + (loop,), guards=ctx.guards + tuple(constraints),
                        beta=ctx.beta + (0,))
        saved = self.scope.values.get(name)
        self.scope.values[name] = c
        if upward:
            self.scope.nonnegative.add(counter)
        self.item(node.stmt, inner)
        self.scope.nonnegative.discard(counter)
        if saved is None:
            self.scope.values.pop(name, None)
        else:
            self.scope.values[name] = saved

    def _loop_init(self, init: c_ast.Node | None) -> tuple[str, list[Poly]]:
        """(counter, lower bounds): `c = e`, or `c = max(e1, e2)` (several bounds)."""
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 and init.decls[0].init:
            name, value = init.decls[0].name, init.decls[0].init
        elif isinstance(init, c_ast.Assignment) and init.op == "=" \
                and isinstance(init.lvalue, c_ast.ID):
            name, value = init.lvalue.name, init.rvalue
        else:
            raise NonAffine("loop initialisation is not 'counter = affine expression'")
        if isinstance(value, c_ast.FuncCall) and isinstance(value.name, c_ast.ID) and \
                value.name.name == "max" and value.args and len(value.args.exprs) == 2:
            return name, [self.scope.to_poly(e) for e in value.args.exprs]
        return name, [self.scope.to_poly(value)]

    def _loop_step(self, nxt: c_ast.Node | None, name: str) -> int:
        if isinstance(nxt, c_ast.UnaryOp) and isinstance(nxt.expr, c_ast.ID) \
                and nxt.expr.name == name and nxt.op in ("++", "p++", "--", "p--"):
            return 1 if "++" in nxt.op else -1
        if isinstance(nxt, c_ast.Assignment) and isinstance(nxt.lvalue, c_ast.ID) \
                and nxt.lvalue.name == name:
            if nxt.op in ("+=", "-="):
                step = self.scope.to_poly(nxt.rvalue)
            elif nxt.op == "=" and isinstance(nxt.rvalue, c_ast.BinaryOp) \
                    and nxt.rvalue.op == "+" and isinstance(nxt.rvalue.left, c_ast.ID) \
                    and nxt.rvalue.left.name == name:
                step = self.scope.to_poly(nxt.rvalue.right)
            else:
                raise NonAffine("loop increment is not 'counter += constant'")
            if not step.is_constant() or step.constant() == 0:
                raise NonAffine(f"loop step '{_text(nxt)}' is not a compile-time constant")
            value = int(step.constant())
            return -value if nxt.op == "-=" else value
        raise NonAffine("loop increment is not 'counter += constant'")

    # statements and references ---------------------------------------------------
    def statement(self, node: c_ast.Node, ctx: _Context, text: str | None = None) -> None:
        refs: list[Access] = []
        found = accumulation(node)
        update = found.op if found else None
        if isinstance(node, c_ast.Assignment):
            self.references(node.rvalue, "read", refs, ctx)
            if node.op != "=":
                self.references(node.lvalue, "read", refs, ctx)
            self.references(node.lvalue, "write", refs, ctx)
        elif isinstance(node, c_ast.UnaryOp) and node.op in ("++", "--", "p++", "p--"):
            self.references(node.expr, "read", refs, ctx)
            self.references(node.expr, "write", refs, ctx)
        else:
            self.references(node, "read", refs, ctx)
        # a check (assert) is a statement even when it reads no memory: it traps when false
        check = isinstance(node, c_ast.FuncCall) and isinstance(node.name, c_ast.ID) and \
            node.name.name in self.dialect.check_functions
        self.add_statement(node, ctx, refs, text, update, keep=check)

    def add_statement(self, node: c_ast.Node, ctx: _Context, refs: list[Access],
                      text: str | None = None, update: str | None = None,
                      keep: bool = False) -> None:
        if not refs and not keep:
            return
        if self.closed:
            raise _NotWholeBody()
        read = _geometry_in_value(node)
        if read is not None:
            # new kernels run another geometry: such a value would be theirs
            self.outside_model("launch geometry in a value", read,
                               f"'{_text(read)}' read outside a subscript or a guard")
        guards = list(ctx.guards) + list(self.returned)
        self.statements.append(Statement(
            f"S{len(self.statements)}", _loc(node, self.here), text or _text(node).strip(),
            ctx.loops, guards, ctx.beta, refs, update, ctx.exact, node,
            dict(self.scope.values)))

    def references(self, node: c_ast.Node | None, kind: str, out: list[Access],
                   ctx: _Context) -> None:
        if node is None:
            return
        if isinstance(node, c_ast.StructRef) and self.local_struct_field(node):
            return
        if isinstance(node, (c_ast.ArrayRef, c_ast.StructRef)) and \
                self.member_reference(node, kind, out, ctx):
            return
        if isinstance(node, c_ast.ArrayRef):
            self.array_reference(node, kind, out, ctx)
            return
        if isinstance(node, c_ast.ID):
            if node.name in self.scope.values:
                return                                  # an index: loop counter or affine
            if node.name in self.private:
                out.append(self._private_access(node, kind))
            elif node.name in self.program.globals and kind == "write":
                self.outside_model("global scalar", node, f"write to __device__ "
                                   f"variable '{node.name}'", _GEOMETRY_ONLY)
            return
        if isinstance(node, c_ast.FuncCall):
            self.call(node, out, ctx)
            return
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            self.outside_model("pointer dereference", node, f"'{_text(node)}': access through "
                               "pointer arithmetic", _GEOMETRY_ONLY)
            self.references(node.expr, "read", out, ctx)
            return
        if isinstance(node, c_ast.StructRef):
            if builtin(node):
                return
            before = len(out)
            self.references(node.name, kind, out, ctx)
            # a component of an array of CUDA vectors (`v[i].x`): the whole vector is
            # the element; the component is recorded
            if node.type == "." and isinstance(node.name, c_ast.ArrayRef) and \
                    len(out) > before and out[-1].member is None and \
                    out[-1].element_type in self.program.structs and \
                    self.program.structs[out[-1].element_type].vector:
                out[-1].member = node.field.name
            return
        if isinstance(node, c_ast.Assignment):
            self.outside_model("assignment in an expression", node, _text(node),
                               _GEOMETRY_ONLY)
        for _, child in node.children():
            self.references(child, "read", out, ctx)

    def struct_array(self, name: str):
        """The struct type of array parameter `name` (`Body *p`), when it is a plain
        user struct (CUDA's vector types keep their whole-element model)."""
        p = self.pointer_params.get(name)
        s = self.program.structs.get(p.type.replace("const ", "").strip()) if p else None
        return s if s is not None and s.plain and not s.vector else None

    def member_reference(self, node: c_ast.Node, kind: str, out: list[Access],
                         ctx: _Context) -> bool:
        """A field (or the whole element) of an array of structs: `p[i].x`, `p->x`,
        `(*p).x`, `p[i].pos.y`, `p[i].v[2]`, `p[i]`; one access per scalar slot it
        covers, at offset i * size + field offset, counted in the struct's unit."""
        path: list[c_ast.Node | str] = []
        index: c_ast.Node | None = None
        at = node
        while True:
            if isinstance(at, c_ast.StructRef) and not builtin(at):
                path.append(at.field.name)
                if at.type == "->":
                    at = c_ast.UnaryOp("*", at.name, coord=at.coord)
                    continue
                at = at.name
            elif isinstance(at, c_ast.ArrayRef) and isinstance(at.name, c_ast.ID):
                index, at = at.subscript, at.name
                break
            elif isinstance(at, c_ast.ArrayRef):
                path.append(at.subscript)
                at = at.name
            elif isinstance(at, c_ast.UnaryOp) and at.op == "*":
                inner = at.expr
                if isinstance(inner, c_ast.UnaryOp) and inner.op == "&":
                    at = inner.expr            # `(&p[i])->f`: a local pointer inlined
                    continue
                if isinstance(inner, c_ast.BinaryOp) and inner.op == "+" and \
                        isinstance(inner.left, c_ast.ID):
                    index, at = inner.right, inner.left
                else:
                    index, at = c_ast.Constant("int", "0"), inner
                break
            else:
                return False
        if not isinstance(at, c_ast.ID) or self.struct_array(at.name) is None:
            return False
        struct = self.struct_array(at.name)
        self.references(index, "read", out, ctx)
        words = []
        for item in reversed(path):
            if isinstance(item, str):
                words.append(("." if words else "") + item)
                continue
            self.references(item, "read", out, ctx)
            try:
                k = self.scope.to_poly(item)
            except NonAffine:
                k = None
            if k is None or not k.is_constant():
                self.outside_model("non-affine subscript", node, f"'{_text(node)}': a field "
                                   "array indexed by a run-time value", _GEOMETRY_ONLY)
                return True
            words.append(f"[{int(k.constant())}]")
        prefix = "".join(words)
        leaves = struct.leaves_under(prefix)
        if not leaves:
            self.outside_model("unknown field", node, f"'{_text(node)}': no field "
                               f"'{prefix}' in struct {struct.name}", _GEOMETRY_ONLY)
            return True
        unit = struct.unit
        reason = None
        try:
            first = self.scope.to_poly(index)
        except NonAffine as e:
            first, reason = None, e.reason
            self.outside_model("non-affine subscript", e.node or node,
                               f"'{_text(node)}': {e.reason}", _GEOMETRY_ONLY)
        loc = _loc(node, self.here)
        for leaf in leaves:
            flat = None if first is None else \
                first * Poly.const(struct.size // unit) + Poly.const(leaf.offset // unit)
            out.append(Access(at.name, kind, "global", leaf.type, leaf.size, loc, _text(node),
                              flat, reason=reason, member=leaf.path, struct=struct.name,
                              unit=unit))
        return True

    def cast_reference(self, node: c_ast.ArrayRef, base: c_ast.Node, subscripts: list,
                       kind: str, out: list[Access]) -> bool:
        """`((float *)b)[k]`: an array of structs read as an array of one of its field
        types; the field is known when k's constant term (modulo the struct's size)
        names one."""
        if not (isinstance(base, c_ast.Cast) and isinstance(base.expr, c_ast.ID)
                and len(subscripts) == 1):
            return False
        struct = self.struct_array(base.expr.name)
        ty = base.to_type.type
        if struct is None or not isinstance(ty, c_ast.PtrDecl):
            return False
        inner = ty.type.type if isinstance(ty.type, c_ast.TypeDecl) else None
        name = " ".join(inner.names) if isinstance(inner, c_ast.IdentifierType) else None
        size = self._size(name) if name else 0
        if not size or size % struct.unit:
            return False
        reason, flat, member = None, None, None
        try:
            flat = self.scope.to_poly(subscripts[0]) * Poly.const(size // struct.unit)
        except NonAffine as e:
            reason = e.reason
            self.outside_model("non-affine subscript", e.node or node,
                               f"'{_text(node)}': {e.reason}", _GEOMETRY_ONLY)
        if flat is not None:
            per = struct.size // struct.unit
            if all(c.denominator == 1 and int(c) % per == 0
                   for m, c in flat.terms.items() if m):
                at = int(flat.constant()) % per * struct.unit
                leaf = next((x for x in struct.leaves() if x.offset == at and x.size == size),
                            None)
                member = leaf.path if leaf else None
        out.append(Access(base.expr.name, kind, "global", name, size, _loc(node, self.here),
                          _text(node), flat, reason=reason, member=member,
                          struct=struct.name, unit=struct.unit))
        return True

    def _private_access(self, node: c_ast.ID, kind: str) -> Access:
        ty = self.vars.types.get(node.name, "float")
        scope = tuple(Poly.var(f"c{k}") for k in range(self.private[node.name]))
        return Access(node.name, kind, "private", ty, self._size(ty), _loc(node, self.here),
                      node.name, Poly(), subscripts=scope)

    def array_reference(self, node: c_ast.ArrayRef, kind: str, out: list[Access],
                        ctx: _Context) -> None:
        subscripts = []
        base = node
        while isinstance(base, c_ast.ArrayRef):
            subscripts.append(base.subscript)
            base = base.name
        subscripts.reverse()
        for s in subscripts:
            self.references(s, "read", out, ctx)     # indirect subscripts read memory
        loc = _loc(node, self.here)
        if self.cast_reference(node, base, subscripts, kind, out):
            return
        if not isinstance(base, c_ast.ID):
            self.outside_model("complex array base", node, f"'{_text(node)}'", _GEOMETRY_ONLY)
            return
        name = base.name
        space, ty, dims = self._array_info(name)
        if space is None:
            self.outside_model("pointer arithmetic", node, f"'{_text(node)}' indexes "
                               f"'{name}', which is not an array polycoal can follow",
                               _GEOMETRY_ONLY)
            return
        reason = None
        flat = None
        try:
            polys = [self.scope.to_poly(s) for s in subscripts]
            if dims is not None and len(dims) == len(polys):
                flat = Poly()
                for p, d in zip(polys, dims):
                    flat = flat * d + p
            elif len(polys) == 1:
                flat = polys[0]
            else:
                raise NonAffine("multi-dimensional subscript of an array of unknown shape")
        except NonAffine as e:
            reason = e.reason
            self.outside_model("non-affine subscript", e.node or node,
                               f"'{_text(node)}': {e.reason}", _GEOMETRY_ONLY)
        except AxisIsSplit:
            raise
        out.append(Access(name, kind, space, ty, self._size(ty), loc, _text(node), flat,
                          reason=reason))

    def _array_info(self, name: str) -> tuple[str | None, str, list[Poly] | None]:
        if name in self.pointer_params:
            return "global", self.pointer_params[name].type, self._parameter_dims(name)
        if name in self.vars.arrays:
            decl_dims = self.vars.arrays[name]
            dims = []
            for d in decl_dims[1:]:
                try:
                    dims.append(self.scope.to_poly(d))
                except NonAffine:
                    dims = None
                    break
            dims = [Poly.const(1)] + dims if dims is not None else None
            shared = any(True for _ in [0]) and self._is_shared(name)
            return ("shared" if shared else "local"), self.vars.types.get(name, "float"), dims
        if name in self.program.globals:
            g = self.program.globals[name]
            return g.space, g.type, None
        return None, "?", None

    def _parameter_dims(self, name: str) -> list[Poly] | None:
        """Row sizes of an array parameter `float A[][N]`, `float A[M][N]` or
        `float (*A)[N]`: A[i][j] is element i*N + j, so [1, N]. None for a plain pointer."""
        decl = self.kernel.ast.decl.type
        params = decl.args.params if isinstance(decl, c_ast.FuncDecl) and decl.args else []
        for p in params:
            if getattr(p, "name", None) != name:
                continue
            ty = p.type.type if isinstance(p.type, (c_ast.PtrDecl, c_ast.ArrayDecl)) else None
            sizes = []
            while isinstance(ty, c_ast.ArrayDecl) and ty.dim is not None:
                sizes.append(ty.dim)
                ty = ty.type
            if not sizes:
                return None
            try:
                return [Poly.const(1)] + [self.scope.to_poly(d) for d in sizes]
            except NonAffine:
                return None
        return None

    def _is_shared(self, name: str) -> bool:
        class Finder(c_ast.NodeVisitor):
            line = None

            def visit_Decl(self, node):
                if node.name == name and node.coord:
                    Finder.line = node.coord.line
        Finder().visit(self.kernel.ast.body)
        return Finder.line in self.kernel.shared_lines

    def _size(self, ty: str) -> int:
        return self.dialect.type_sizes.get(ty.replace("const ", "").strip(), 4)

    def call(self, node: c_ast.FuncCall, out: list[Access], ctx: _Context) -> None:
        name = node.name.name if isinstance(node.name, c_ast.ID) else _text(node.name)
        args = node.args.exprs if node.args else []
        d = self.dialect
        if name in d.atomic_functions:
            self.outside_model("atomic", node, f"{name}: atomic read-modify-write",
                               _GEOMETRY_ONLY)
            target = args[0] if args else None
            if isinstance(target, c_ast.UnaryOp) and target.op == "&":
                before = len(out)
                self.references(target.expr, "read", out, ctx)
                self.references(target.expr, "write", out, ctx)
                for k in range(before, len(out)):
                    out[k].atomic = True
            for a in args[1:]:
                self.references(a, "read", out, ctx)
            return
        if name in d.barrier_functions:
            self.outside_model("__syncthreads" if name.startswith("__sync") else name, node,
                               f"{name}(): threads of a block synchronise, so statement "
                               "instances of different threads are ordered", _GEOMETRY_ONLY)
            return
        if name == OPAQUE:
            self.outside_model("opaque statement", node, "a statement polycoal reads "
                               "only as opaque (C++ outside its subset): its memory effects "
                               "are unknown", _NOTHING)
        elif name in d.warp_functions:
            self.outside_model("warp intrinsic", node, f"{name}: lanes exchange data",
                               _NOTHING)
        elif name in d.pure_functions or name in d.check_functions:
            pass
        elif name in self.program.device_functions:
            fn = self.program.device_functions[name]
            call = f"{name}(){{}}"           # the helper itself and what it calls
            if (warp := callees.first_use(self.program, call, callees.warp_words())):
                self.outside_model("warp intrinsic", node, f"call to __device__ function "
                                   f"'{name}', which uses {warp[1]} (in {warp[0]}): lanes "
                                   "exchange data", _NOTHING)
            elif (geometry := callees.first_use(self.program, call,
                                                callees.geometry_words())):
                self.outside_model("device function call", node, f"call to __device__ "
                                   f"function '{name}', which reads {geometry[1]} (in "
                                   f"{geometry[0]}; not inlined)", _GEOMETRY_ONLY)
            elif any(p.is_pointer for p in fn.parameters) or fn.ast is None:
                self.outside_model("device function call", node, f"call to __device__ "
                                   f"function '{name}' with pointer arguments (not inlined)",
                                   _GEOMETRY_ONLY)
        else:
            self.outside_model("function call", node, f"call to '{name}', which polycoal "
                               "does not know to be free of memory effects", _GEOMETRY_ONLY)
        for a in args:
            self.references(a, "read", out, ctx)


class _NotWholeBody(Exception):
    """A statement follows a grid-stride loop read as a thread dimension."""


def _launch_extents(program: Program, kernel: Kernel) -> tuple[dict, dict, dict[str, int],
                                                              list[str]]:
    """Per axis blockDim and gridDim (constant when every launch agrees, else a parameter),
    parameter values common to all launches, and notes."""
    axes = cuda_dialect().axes
    launches = program.launches_of(kernel.name)
    notes = []
    block, grid = {}, {}
    for k, a in enumerate(axes):
        bs = {l.block_parts[k] for l in launches}
        gs = {l.grid_parts[k] for l in launches}
        block[a] = Poly.const(bs.pop()) if len(bs) == 1 and None not in bs \
            else Poly.var(f"blockDim_{a}")
        grid[a] = Poly.const(gs.pop()) if len(gs) == 1 and None not in gs \
            else Poly.var(f"gridDim_{a}")
    values: dict[str, int] = {}
    if launches:
        common = set(launches[0].constant_arguments.items())
        for l in launches[1:]:
            common &= set(l.constant_arguments.items())
        ints = {p.name for p in kernel.parameters if not p.is_pointer}
        values = {n: int(v) for n, v in common if n in ints and float(v).is_integer()}
    else:
        notes.append("no launch site found: block and grid sizes are parameters")
    return block, grid, values, notes


def assumed_nonnegative(kernel: Kernel, signed: "bool | frozenset[str]") -> frozenset[str]:
    """The int arguments a model's context takes to be non-negative (KernelModel.signed),
    those of an unsigned type among them."""
    unsigned = unsigned_arguments(kernel)
    return frozenset(p.name for p in kernel.parameters if not p.is_pointer and (
        signed is True or p.name in unsigned
        or (not isinstance(signed, bool) and p.name in signed)))


def extract_model(kernel: Kernel, program: Program,
                  collapse: frozenset[str] = frozenset(),
                  signed: "bool | frozenset[str]" = True,
                  assumed: tuple[str, ...] = ()) -> KernelModel:
    """The polyhedral model of `kernel` (which must have been parsed); `signed`: its
    context takes the int arguments to be non-negative, or those of a set
    (KernelModel.signed); `assumed`: constraints on the parameters the context takes as
    true (checked at run time), before the arrays' shapes are proven under it."""
    assert kernel.ast is not None, "extract_model needs a parsed kernel"
    axes_names = cuda_dialect().axes
    block, grid, values, notes = _launch_extents(program, kernel)
    for a in collapse:          # run as if launched one thread wide along these axes
        block[a] = grid[a] = Poly.const(1)
    combined = {a: True for a in axes_names}
    allow_virtual = True
    while True:
        axes = ThreadAxes(dict(combined), block, grid)
        ex = _Extractor(kernel, program, axes, assumed_nonnegative(kernel, signed))
        ex.allow_virtual = allow_virtual
        try:
            ex.block(kernel.ast.body.block_items, _Context())
            break
        except AxisIsSplit as split:
            if not combined[split.axis]:
                raise
            combined[split.axis] = False
        except _NotWholeBody:
            allow_virtual = False
    for st in ex.statements:
        if ex.cut_everything or any(loop in ex.cut_loops for loop in st.loops):
            st.exact = False
    thread_dims: list[ThreadDim] = []
    context: list[str] = []
    parameters: set[str] = set(ex.scope.parameters)
    for a in reversed(axes_names):          # z, y, x: x innermost, as warps are formed
        # an axis the code never reads still multiplies the threads when the launch
        # makes it wider than 1 (known from the block or the grid): keep it then
        wide = any(p.is_constant() and p.constant() > 1 for p in (block[a], grid[a]))
        if a not in axes.used and not wide:
            continue
        if a in ex.virtual_axes:
            thread_dims.append(ThreadDim(f"g{a}", a, "global", Poly.var(f"nthreads_{a}"),
                                         strided=True))
        elif axes.combined[a]:
            extent = block[a] * grid[a]
            if not extent.is_constant():
                extent = Poly.var(f"nthreads_{a}")
            thread_dims.append(ThreadDim(f"g{a}", a, "global", extent))
        else:
            thread_dims.append(ThreadDim(f"b{a}", a, "block", grid[a]))
            thread_dims.append(ThreadDim(f"t{a}", a, "thread", block[a]))
    for d in thread_dims:
        parameters |= d.extent.variables
    for s in ex.statements:
        for acc in s.accesses:
            if acc.flat is not None:
                parameters |= acc.flat.variables - {d.name for d in thread_dims} \
                    - {f"c{k}" for k in range(8)}
    unsigned = unsigned_arguments(kernel)
    for p in sorted(parameters):
        # launch geometry is positive, unsigned arguments are not negative; int
        # arguments (sizes, offsets such as a host loop's k) are taken to be non-negative
        # where `signed`, as kernels index arrays with them (a change made so is checked
        # at the launches: transform._signs)
        if is_launch_parameter(p):
            context.append(f"{p} >= 1")
        elif signed is True or p in unsigned or (not isinstance(signed, bool) and p in signed):
            context.append(f"{p} >= 0")
    depth = max((len(s.loops) for s in ex.statements), default=0)
    model = KernelModel(kernel.name, kernel.location, thread_dims, depth, sorted(parameters),
                        context + list(assumed), ex.statements, outside=ex.outside,
                        parameter_values=values, signed=signed)
    model.unsigned_sides = tuple(f"{p.to_c('*')} >= 0" for p in ex.scope.unsigned_sides
                                 if p.variables <= parameters)
    launches = program.launches_of(kernel.name)
    shapes = {l.block_shape for l in launches}
    model.block_shape = shapes.pop() if len(shapes) == 1 else None
    model.used_axes = frozenset(axes.used)
    model.axes = axes
    model.private = {n: (ex.vars.types.get(n, "float"), d) for n, d in ex.private.items()}
    model.types = dict(ex.scope.types)
    for n in notes:
        model.notes.append(Diagnostic("note", "no-launch", n, kernel.location, kernel.name))
    assign_array_shapes(model)
    return model
