"""Passes: each optimisation that proposes a form of a kernel, in one shape.

A pass `propose`s at most one candidate for a kernel: it recognises the kernel's shape,
plans the form (an immutable plan value: optimize/), emits its code (codegen/), and says
how the form runs (`Geometry`, for the performance model's price: analysis/work.py). The
driver (polycoal/transform.py) runs the passes over each kernel in their order of
preference, prices every candidate and the kernel as written with one model
(analysis/roofline.py, `base.price_forms`), takes the cheapest by the margin, and
validates the change with the validator of its kind (`VALIDATORS`) before it is emitted.

Kernel passes: `staging` (tiles through shared memory for references that coalesce
along two dims), `products` (register and shared-memory tiles for sums of products),
`window` (stencils: several rows a thread, the window's reads in registers), `sweep`
(a thread's loop along its row whose trips depend on each other, on shared-memory tiles;
or, where no trip reads what an earlier one wrote, the trips across a warp's lanes),
`mapping` (the restructuring ILP's mapping, and where it gains nothing the `reduction`
forms or a column kernel's phases), `permutation` (kernels outside the affine model:
their thread axes permuted). Program passes, over every kernel at once: `layout` (arrays
of structs in a new layout) and `reorganisation` (irregular references read from
reorganised copies).
"""

from __future__ import annotations

from polycoal.passes import products, staging, sweep, window

# the passes that propose whole forms of an affine kernel, in order of preference
PASSES = (staging.PASS, products.PASS, window.PASS, sweep.PASS, sweep.LANES)
