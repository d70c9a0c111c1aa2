"""Generate the tiled form of a product (optimize/products.py,
templates/product_tiles.cu.j2): register tiles of accumulators over shared-memory tiles
of the operands."""

from __future__ import annotations

from dataclasses import replace

from polycoal.model.isl_c import condition_to_c
from polycoal.codegen.kernel import (GeneratedKernel, describe_dim, _signature,
                                     geometry_read, passed_geometry, thread_range,
                                     with_geometry)
from polycoal.codegen.statements import references, render_accumulation, renderer
from polycoal.frontend.program import Kernel
from polycoal.model import isl_helpers
from polycoal.model.accumulation import accumulation
from polycoal.model.kernel_model import KernelModel
from polycoal.optimize.products import (ProductPlan, additive_terms, output_set, row_set,
                                        tile_set)
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


def _share(unit_k: bool, tile: int, bk: int, block: int) -> dict[str, str]:
    """Where element pc_t + pc_p * block of a chunk goes (its step `kk` of the chunk and
    its row `r` of the tile) for the thread pc_t (unsigned): consecutive threads take
    consecutive elements along the operand's unit dim, k (rows of `bk`) or the tile's
    dim (rows of `tile`). Where the rows divide the block, the part of the thread stays
    the same for every pc_p (computed once, not per element)."""
    inner = bk if unit_k else tile
    if block % inner == 0:
        along, across = f"pc_t % {inner}", f"pc_t / {inner} + pc_p * {block // inner}"
    else:
        e = f"(pc_t + pc_p * {block})"
        along, across = f"{e} % {inner}", f"{e} / {inner}"
    return {"kk": along, "r": across} if unit_k else {"kk": across, "r": along}


def _check(used: set[str], others: set[str], what: str) -> None:
    if used & others:
        raise ValueError(f"{what}: reads {', '.join(sorted(used & others))}")


def _rendered(model, kernel, s, names, others, replace_with) -> str:
    r = renderer(model, kernel, s, names)
    r.replace = replace_with
    text = r.visit(s.node)
    _check(r.used, others, s.text)
    text = text.rstrip()
    return text if text.endswith((";", "}")) else text + ";"


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
    tile, bk, threads = plan.tile, plan.sizes.chunk, plan.sizes.threads
    only_update = replace(model, statements=[update])
    ri, rj = thread_range(only_update, plan.i, "y"), thread_range(only_update, plan.j, "x")
    rk = thread_range(only_update, plan.k, "x")
    reads = references(update.node, {text for text, _, _ in plan.operands})
    element = next(a for a in update.accesses if a.kind == "write").element_type
    vector = vector_width(model, plan)
    value_node = accumulation(update.node).value
    operands, replace_with = [], {}
    for n, (reference, side, unit) in enumerate(plan.operands):
        access = next(a for a in update.accesses if a.text == reference and a.kind == "read")
        r = renderer(model, kernel, update, names)
        read = r.visit(reads[reference])
        _check(r.used, others, reference)
        unit_k = unit == plan.k
        operands.append({
            "type": access.element_type, "side": side, "read": read,
            # copied along k, a padded row keeps the lanes of one row apart in banks
            # (a whole vector longer: the rows stay aligned for vector reads)
            "pad": vector if unit_k else 0,
            "hi": (ri if side == "i" else rj).hi,
            **_share(unit_k, tile, bk, threads * threads),
            "lane": "threadIdx.y" if side == "i" else "threadIdx.x",
            "vector_type": _VECTOR_TYPES.get((access.element_type, vector), ""),
            # the operands are arrays the kernel does not write (optimize/products.py)
            # and no written pointer aliases (the transform's pointer analysis): the
            # read-only path, where CUDA overloads __ldg for the type
            "load": f"__ldg(&({read}))" if access.element_type in _LDG else read})
        replace_with[reference] = f"pc_f{n}[{'pc_a' if side == 'i' else 'pc_b'}]"
    # a private accumulator is the register itself: no load, no store
    register = {plan.private: "pc_acc[pc_a][pc_b]"} if plan.private else {}
    replace_with.update(register)
    target = "" if plan.private else render_accumulation(model, kernel, update, names).target
    # the accumulator's updates of one step: the value, or each of its terms in turn
    updates = []
    for sign, term in additive_terms(value_node) if plan.split else [("+", value_node)]:
        r = renderer(model, kernel, update, names)
        r.replace = replace_with
        updates.append({"op": f"{sign}=", "value": r.visit(term)})
        _check(r.used, others, update.text)
    rows = [{"inside": condition_to_c(row_set(model, n, plan.i)),
             "text": _rendered(model, kernel, by_name[n], names, others, {})}
            for n in plan.rows]
    before = [_rendered(model, kernel, by_name[n], names, others, register)
              for n in plan.before]
    after = [_rendered(model, kernel, by_name[n], names, others, register)
             for n in plan.after]
    inside = condition_to_c(output_set(model, plan))
    tiles = tile_set(model, plan)
    tile_inside = "" if tiles.complement().is_empty() else condition_to_c(tiles)
    texts = [ri.lo, ri.hi, rj.lo, rj.hi, rk.lo, rk.hi, inside, target] + \
        [u["value"] for u in updates] + \
        before + after + [o["read"] for o in operands] + \
        [r["inside"] + r["text"] for r in rows] + [tile_inside]
    hidden = geometry_read(texts, model)
    for rr in (ri, rj, rk):
        rr.lo, rr.hi = passed_geometry(rr.lo, hidden), passed_geometry(rr.hi, hidden)
    for o in operands:
        o["load"], o["hi"] = passed_geometry(o["load"], hidden), passed_geometry(o["hi"], hidden)
    block = (threads, threads, 1)
    body = render_template(
        "product_tiles.cu.j2",
        signature=with_geometry(_signature(original, kernel, block, plan.sizes.blocks),
                                hidden),
        i_dim=describe_dim(model, plan.i), j_dim=describe_dim(model, plan.j),
        k_dim=describe_dim(model, plan.k), tile=tile, block=threads, micro=plan.micro,
        bk=bk, vector=vector, per_thread=tile * bk // (threads * threads),
        operands=operands, acc_type=element,
        tile_inside=passed_geometry(tile_inside, hidden),
        inside=passed_geometry(inside, hidden), target=passed_geometry(target, hidden),
        updates=[{**u, "value": passed_geometry(u["value"], hidden)} for u in updates],
        before=[passed_geometry(t, hidden) for t in before],
        rows=[{k: passed_geometry(v, hidden) for k, v in r.items()} for r in rows],
        after=[passed_geometry(t, hidden) for t in after],
        i_lo=ri.lo, i_hi=ri.hi, j_lo=rj.lo, j_hi=rj.hi, k_lo=rk.lo, k_hi=rk.hi)
    return GeneratedKernel(kernel.name, body, [rj, ri], block, hidden,
                           {"x": "pc_j", "y": "pc_i"}, "pc_i",
                           axis_dims={"x": plan.j, "y": plan.i}, per_block=(tile, tile, 1),
                           tiles=plan)
