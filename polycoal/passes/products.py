"""The products pass: a sum of products over a reduction loop (GEMM, SYRK, covariance)
runs in register tiles over shared-memory tiles of its operands (optimize/products.py
plans the tiles and their sizes, codegen/product.py emits them)."""

from __future__ import annotations

from polycoal.codegen.kernel import describe_dim
from polycoal.codegen.product import generate_product
from polycoal.decisions import KernelDecision, TransformOptions
from polycoal.frontend.program import Kernel, Program
from polycoal.optimize.products import ProductPlan, TileSizes, product_geometry, product_plan
from polycoal.passes.base import Candidate, Pass, mapping_of


def forced_sizes(options: TransformOptions, kernel: str) -> TileSizes | None:
    """The tile shape --sizes gives this kernel (the last value naming it, else the last
    naming no kernel), or None."""
    named = [s for s in options.sizes if s[0] == kernel] or \
        [s for s in options.sizes if not s[0]]
    return TileSizes(*named[-1][1:]) if named else None


def propose(program: Program, kernel: Kernel, d: KernelDecision,
            options: TransformOptions) -> Candidate | None:
    if not options.staging or not any(l.reduction for l in d.analysis.loops):
        return None
    model = d.analysis.model
    plan = product_plan(model, d.analysis, d.mapping, forced_sizes(options, kernel.name),
                        reassociate=options.reduction != "none")
    if not isinstance(plan, ProductPlan):
        return None
    try:
        generated = generate_product(program.text, kernel, model, plan)
    except ValueError:
        return None
    return Candidate(d.change(
        "product", f"a product over {describe_dim(model, plan.i)} x "
        f"{describe_dim(model, plan.j)}, summed along {describe_dim(model, plan.k)}: "
        f"{plan.describe}; " + (
            "each term of the sum added to the accumulator on its own: floating-point "
            "additions are reassociated" if plan.split else
            "the same sums in the same order"), generated=generated,
        mapping=mapping_of(d, (plan.j, plan.i), (plan.k,))), product_geometry(model, plan))


PASS = Pass("products", propose)
