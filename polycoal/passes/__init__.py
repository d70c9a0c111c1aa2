"""Passes: each optimisation that proposes a form of a kernel, in one shape.

A pass `propose`s at most one candidate for a kernel: it recognises the kernel's shape,
plans the form (an immutable plan value: optimize/), emits its code (codegen/), and says
how the form runs (`Geometry`, for the performance model's price: analysis/work.py). The
driver (polycoal/transform.py) runs the passes over each kernel in their order of
preference, prices every candidate and the kernel as written with one model
(analysis/roofline.py), takes the cheapest by the margin, and validates the change with
the validator of its kind (validate/: `VALIDATORS`) before it is emitted.

The passes: `staging` (tiles through shared memory for references that coalesce along
two dims), `products` (register and shared-memory tiles for sums of products); the
restructuring ILP's mapping and the reduction forms are proposed by the driver's own
planning (`_plan_mapped`), priced the same way.
"""

from __future__ import annotations

from polycoal.passes import products, staging

# the passes that propose whole forms of an affine kernel, in order of preference
PASSES = (staging.PASS, products.PASS)
