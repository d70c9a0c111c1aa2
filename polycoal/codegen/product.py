"""Generate the tiled form of a product (optimize/products.py,
templates/product_tiles.cu.j2): register tiles of accumulators over shared-memory tiles
of the operands."""

from __future__ import annotations

import re

from dataclasses import replace

from pycparser import c_ast

from polycoal.model.isl_c import condition_to_c
from polycoal.codegen.kernel import (GeneratedKernel, Stage, describe_dim, _signature,
                                     geometry_read, passed_geometry, renamed_kernel,
                                     thread_range, with_geometry)
from polycoal.codegen.statements import (references, render_accumulation, rendered_statement,
                                         renderer)
from polycoal.frontend.cexpr import evaluate
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.accumulation import accumulation
from polycoal.model.kernel_model import KernelModel
from polycoal.frontend.normalise import assigned_names
from polycoal.model.accumulation import text
from polycoal.optimize.products import (SHARED_BYTES, ProductPlan, additive_terms,
                                        element_bytes, full_set, output_set, placements,
                                        ranges_all_outputs,
                                        row_set, tile_set)
from polycoal.templates import render_template


# the scalar types CUDA's __ldg takes
_LDG = {"float", "double", "int", "unsigned", "unsigned int", "long long",
        "unsigned long long", "short", "char", "signed char", "unsigned char"}
# vector types of 2 or 4 elements read from shared memory in one instruction
_VECTOR_TYPES = {("float", 4): "float4", ("float", 2): "float2", ("double", 2): "double2"}


def vector_width(model: KernelModel, plan: ProductPlan) -> int:
    """A thread's accumulators along a dim: `vector` adjacent outputs, then the next
    `vector` `vector * threads` further (a warp's stores stay whole segments), so that
    each step reads its operands' values from shared memory `vector` at a time: 4 floats
    or 2 doubles (one 16-byte read), fewer where the micro tile is smaller, 1 for other
    types or operands of several types (validate/tiles.py checks the layout)."""
    update = next(s for s in model.statements if s.name == plan.update)
    types = {next(a for a in update.accesses if a.text == text and a.kind == "read")
             .element_type for text, _, _ in plan.operands}
    if len(types) != 1:
        return 1
    widest = {"float": 4, "double": 2}.get(next(iter(types)), 1)
    return max(w for w in (1, 2, 4) if w <= widest and plan.micro % w == 0)


def _share(unit_k: bool, extent: int, bk: int, block: int) -> dict[str, str]:
    """Where element pc_t + pc_p * block of a chunk goes (its step `kk` of the chunk and
    its row `r` of the tile) for the thread pc_t (unsigned): consecutive threads take
    consecutive elements along the operand's unit dim, k (rows of `bk`) or the tile's
    dim (rows of `extent`). Where the rows divide the block, the part of the thread stays
    the same for every pc_p (computed once, not per element)."""
    inner = bk if unit_k else extent
    if block % inner == 0:
        along, across = f"pc_t % {inner}", f"pc_t / {inner} + pc_p * {block // inner}"
    else:
        e = f"(pc_t + pc_p * {block})"
        along, across = f"{e} % {inner}", f"{e} / {inner}"
    return {"kk": along, "r": across} if unit_k else {"kk": across, "r": along}


def _wide_share(unit_k: bool, extent: int, bk: int, block: int, width: int) -> dict[str, str]:
    """The same for reads of `width` adjacent elements along the unit dim: read pc_p of
    the thread pc_t starts at step `wide_kk`, row `wide_r` (a multiple of `width` along
    the unit dim)."""
    share = _share(unit_k, (extent if unit_k else extent // width),
                   bk // width if unit_k else bk, block)
    along = "kk" if unit_k else "r"
    share[along] = f"({share[along]}) * {width}"
    return {"wide_kk": share["kk"], "wide_r": share["r"]}


# 16-byte reads of global memory: the vector type and its elements
_WIDE = {"float": ("float4", 4), "double": ("double2", 2)}


def _invariant(node, scalars: set[str], element: str) -> bool:
    """Whether a factor is the same for every term and of the operand's type: kernel
    parameters of that type the kernel never assigns, integer literals, literals of
    the type (`2.0f` for float), their products and negations."""
    if isinstance(node, c_ast.ID):
        return node.name in scalars
    if isinstance(node, c_ast.Constant):
        if node.type == "int":
            return True
        return node.type in ("float", "double") and (
            element == "double" or node.value.lower().endswith("f"))
    if isinstance(node, c_ast.UnaryOp) and node.op == "-":
        return _invariant(node.expr, scalars, element)
    if isinstance(node, c_ast.BinaryOp) and node.op == "*":
        return _invariant(node.left, scalars, element) and \
            _invariant(node.right, scalars, element)
    return False


def staged_factors(terms: list, operands: dict[str, str],
                   scalars: dict[str, set[str]]) -> dict[str, object]:
    """For each operand (text -> element type), the largest product of it with factors
    the same for every term (`alpha * a[i][k]` in `alpha * a[i][k] * b[k][j]`: C
    multiplies alpha by a[i][k] first), where every occurrence of the operand in the
    terms is inside that same product: the value staged in shared memory instead of the
    element, computed once per element and chunk instead of once per term; the sums
    take the same values (one rounding of the same product)."""
    tops: dict[str, set[str]] = {}
    nodes: dict[str, object] = {}

    def walk(node, path):
        if isinstance(node, c_ast.ArrayRef) and text(node) in operands:
            ref, top = text(node), node
            for parent in reversed(path):
                if not (isinstance(parent, c_ast.BinaryOp) and parent.op == "*"):
                    break
                other = parent.right if parent.left is top else parent.left
                if not _invariant(other, scalars[operands[ref]], operands[ref]):
                    break
                top = parent
            tops.setdefault(ref, set()).add(text(top))
            nodes[ref] = top
            return
        for _, child in node.children():
            walk(child, path + [node])
    for term in terms:
        walk(term, [])
    return {ref: nodes[ref] for ref, found in tops.items()
            if len(found) == 1 and nodes[ref] is not None and
            not isinstance(nodes[ref], c_ast.ArrayRef)}


def _check(used: set[str], others: set[str], what: str) -> None:
    if used & others:
        raise ValueError(f"{what}: reads {', '.join(sorted(used & others))}")


def _before_in_register(model, kernel, update, by_name, plan, names, others, register,
                        row_statements) -> list[str] | None:
    """The statements before the loop with the output element read and written as the
    accumulator, or None where that is not their meaning: an output array read or
    written by them other than as the element itself (another element, another
    spelling), or read by the statements run once per row."""
    if plan.private or not plan.before:
        return None
    written = next(a for a in update.accesses if a.kind == "write")
    pattern = re.compile(rf"\b{re.escape(written.array)}\b")
    if any(pattern.search(r["text"]) for r in row_statements):
        return None
    rendered = [rendered_statement(model, kernel, by_name[n], names, others,
                          {**register, written.text: "pc_acc[pc_a][pc_b]"})
                for n in plan.before]
    if any(pattern.search(t) for t in rendered):
        return None
    return rendered


def tile_start(lo: str, size: int) -> str:
    """The first tile's origin along a dim whose range starts at `lo`: a constant
    rounded down to a multiple of the tile's size, else `lo` itself."""
    value = evaluate(lo)
    return str(value // size * size) if isinstance(value, int) else lo


def generate_product(original: str, kernel: Kernel, model: KernelModel,
                     plan: ProductPlan) -> GeneratedKernel:
    """The kernel in tiles (the template's comment says how); raises ValueError when a
    statement reads a dim other than the plan's."""
    by_name = {s.name: s for s in model.statements}
    update = by_name[plan.update]
    names = {plan.i: "pc_i", plan.j: "pc_j", plan.k: "pc_k"}
    # the model's other dims (a padding loop, a single-valued thread index) have no
    # variable in the tiles
    others = set(isl_helpers.all_dims(model)) - {plan.i, plan.j, plan.k}
    bk, threads = plan.sizes.chunk, plan.sizes.threads
    block_threads = threads * threads
    only_update = replace(model, statements=[update])
    ri, rj = thread_range(only_update, plan.i, "y"), thread_range(only_update, plan.j, "x")
    rk = thread_range(only_update, plan.k, "x")
    reads = references(update.node, {text for text, _, _ in plan.operands})
    element = next(a for a in update.accesses if a.kind == "write").element_type
    vector = vector_width(model, plan)
    along_i, along_j = placements(plan.sizes, vector)
    value_node = accumulation(update.node).value
    terms = additive_terms(value_node) if plan.split else [("+", value_node)]
    accesses = {text: next(a for a in update.accesses if a.text == text and a.kind == "read")
                for text, _, _ in plan.operands}
    assigned = assigned_names(kernel.ast.body) if kernel.ast is not None else set()
    scalars = {t: {p.name for p in kernel.parameters
                   if not p.is_pointer and p.type == t and p.name not in assigned}
               for t in {a.element_type for a in accesses.values()}}
    factors = staged_factors([t for _, t in terms],
                             {t: a.element_type for t, a in accesses.items()}, scalars)
    operands, replace_with = [], {}
    for n, (reference, side, unit) in enumerate(plan.operands):
        access = accesses[reference]
        r = renderer(model, kernel, update, names)
        read = r.visit(reads[reference])
        _check(r.used, others, reference)
        unit_k = unit == plan.k
        extent = plan.sizes.rows if side == "i" else plan.tile
        per_thread = extent * bk // block_threads
        stage = "pc_x"
        if reference in factors:
            r = renderer(model, kernel, update, names)
            r.replace = {reference: "pc_x"}
            stage = r.visit(factors[reference])
            _check(r.used, others, reference)
        wide, width = _WIDE.get(access.element_type, ("", 1))
        # whole chunks of whole tiles read `width` adjacent elements at once where the
        # operand's unit dim has unit stride and the shares split into whole vectors
        if not (wide and access.space == "global" and access.flat is not None and
                access.flat.terms.get((unit,)) == 1 and per_thread % width == 0 and
                (bk if unit_k else extent) % width == 0):
            wide, width = "", 1
        operands.append({
            "type": access.element_type, "side": side, "read": read, "extent": extent,
            "per_thread": per_thread, "unit_k": unit_k, "stage": stage,
            # copied along k, a padded row keeps the lanes of one row apart in banks
            # (a whole vector longer: the rows stay aligned for vector reads)
            "pad": vector if unit_k else 0,
            "hi": (ri if side == "i" else rj).hi, "lo": "",
            **_share(unit_k, extent, bk, block_threads),
            **(_wide_share(unit_k, extent, bk, block_threads, width) if wide else {}),
            "wide": wide, "width": width,
            "vector_type": _VECTOR_TYPES.get((access.element_type, vector), ""),
            # the operands are arrays the kernel does not write (optimize/products.py)
            # and no written pointer aliases (the transform's pointer analysis): the
            # read-only path, where CUDA overloads __ldg for the type
            "load": f"__ldg(&({read}))" if access.element_type in _LDG else read})
        staged = text(factors[reference]) if reference in factors else reference
        replace_with[staged] = f"pc_f{n}[{'pc_a' if side == 'i' else 'pc_b'}]"
    # a private accumulator is the register itself: no load, no store
    register = {plan.private: "pc_acc[pc_a][pc_b]"} if plan.private else {}
    replace_with.update(register)
    target = "" if plan.private else render_accumulation(model, kernel, update, names).target
    # the accumulator's updates of one step: the value, or each of its terms in turn
    updates = []
    for sign, term in terms:
        r = renderer(model, kernel, update, names)
        r.replace = replace_with
        updates.append({"op": f"{sign}=", "value": r.visit(term)})
        _check(r.used, others, update.text)
    row_statements = [{"inside": condition_to_c(row_set(model, n, plan.i)),
                       "text": rendered_statement(model, kernel, by_name[n], names, others, {})}
                      for n in plan.rows]
    before = [rendered_statement(model, kernel, by_name[n], names, others, register)
              for n in plan.before]
    # the statements before the loop on the accumulator itself where they touch the
    # output only as its element (`c[i][j] *= beta`): the element is loaded once into
    # the register and stored once, by the epilogue, instead of a store and a read back
    # (GEMM at 4096: 3.039 -> 2.989 ms)
    in_register = _before_in_register(model, kernel, update, by_name, plan, names, others,
                                      register, row_statements)
    if in_register is not None:
        before = in_register
    after = [rendered_statement(model, kernel, by_name[n], names, others, register)
             for n in plan.after]
    inside = condition_to_c(output_set(model, plan))
    tiles = tile_set(model, plan)
    tile_inside = "" if tiles.complement().is_empty() else condition_to_c(tiles)
    full = condition_to_c(full_set(model, plan))
    texts = [ri.lo, ri.hi, rj.lo, rj.hi, rk.lo, rk.hi, inside, target] + \
        [u["value"] for u in updates] + [o["stage"] for o in operands] + \
        before + after + [o["read"] for o in operands] + \
        [r["inside"] + r["text"] for r in row_statements] + [tile_inside, full]
    hidden = geometry_read(texts, model)
    for rr in (ri, rj, rk):
        rr.lo, rr.hi = passed_geometry(rr.lo, hidden), passed_geometry(rr.hi, hidden)
    for o in operands:
        for key in ("load", "hi", "read", "stage"):
            o[key] = passed_geometry(o[key], hidden)
    block = (threads, threads, 1)
    signature = with_geometry(_signature(original, kernel, block, plan.sizes.blocks), hidden)
    # the warp layout: the full tiles (inside the ranges: no clamping, wide reads) and the
    # others in one kernel (GEMM at 2048 0.381 ms, 2.907 at 4096, SYRK 0.384 at 2048)
    # rather than the full tiles in a kernel of their own launched first (0.393, 2.99,
    # 0.388); four operands (SYR2K), the full tiles' kernel of their own (0.791 against
    # 0.899 at 2048), except for a template kernel (not renamed). The block layout: every
    # tile clamped.
    form = "single" if plan.sizes.layout != "warps" else \
        "split" if len(operands) > 2 and not kernel.is_template else "both"
    full_kernel = kernel.name + "__pc_full"
    # in the warp layout the tiles start at a multiple of their size below a constant
    # first value (correlation's j2 from 1): every full tile's rows start 16-byte aligned
    # where the arrays' rows do; the clamped reads clamp below too
    starts = [tile_start(r.lo, size) if form != "single" else r.lo
              for r, size in ((ri, plan.sizes.rows), (rj, plan.tile))]
    for side, r, start in zip("ij", (ri, rj), starts):
        if start != r.lo:
            r.host_lo = start
            for o in operands:
                if o["side"] == side:
                    o["lo"] = r.lo
    # the operands' buffers past the static 48 KiB: in dynamic shared memory, one
    # allocation carved in order (each buffer a multiple of 16 bytes)
    offset = 0
    for o in operands:
        o["offset"] = offset
        offset += 2 * bk * (o["extent"] + o["pad"]) * element_bytes(o["type"])
    dynamic = offset if offset > SHARED_BYTES else 0
    values = dict(
        i_dim=describe_dim(model, plan.i), j_dim=describe_dim(model, plan.j),
        k_dim=describe_dim(model, plan.k), rows=plan.sizes.rows, tile=plan.tile, block=threads,
        micro=plan.micro, micro_i=plan.micro_i, bk=bk, vector=vector,
        layout=plan.sizes.layout, i_base=along_i.base_c("pc_t"),
        j_base=along_j.base_c("pc_t"), i_stride=along_i.stride, j_stride=along_j.stride,
        operands=operands, acc_type=element, any_wide=any(o["wide"] for o in operands),
        wide_width=max(o["width"] for o in operands), full_kernel=full_kernel,
        tile_inside=passed_geometry(tile_inside, hidden), full=passed_geometry(full, hidden),
        inside=passed_geometry(inside, hidden), target=passed_geometry(target, hidden),
        updates=[{**u, "value": passed_geometry(u["value"], hidden)} for u in updates],
        before=[passed_geometry(t, hidden) for t in before],
        row_statements=[{k: passed_geometry(v, hidden) for k, v in r.items()}
                        for r in row_statements],
        after=[passed_geometry(t, hidden) for t in after], load_first=in_register is not None,
        i_lo=ri.lo, i_hi=ri.hi, j_lo=rj.lo, j_hi=rj.hi, k_lo=rk.lo, k_hi=rk.hi,
        i_start=starts[0], j_start=starts[1],
        dynamic=dynamic,
        # a full tile's elements checked unless all of the ranges' box is outputs
        full_check=False if ranges_all_outputs(model, plan) else "pc_all")
    body = render_template("product_tiles.cu.j2", signature=signature,
                           mode="edges" if form == "split" else form, **values)
    first = []
    if form == "split":
        body = render_template("product_tiles.cu.j2", mode="full",
                               signature=renamed_kernel(signature, kernel.name, full_kernel),
                               **values) + "\n\n" + body
        first = [Stage(full_kernel, [rj, ri], block, (plan.tile, plan.sizes.rows, 1),
                       shared=dynamic)]
    return GeneratedKernel(kernel.name, body, [rj, ri], block, hidden,
                           {"x": "pc_j", "y": "pc_i"}, "pc_i",
                           axis_dims={"x": plan.j, "y": plan.i},
                           per_block=(plan.tile, plan.sizes.rows, 1), tiles=plan,
                           first_stages=first, shared=dynamic)
