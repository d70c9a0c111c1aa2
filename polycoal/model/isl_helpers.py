"""All islpy plumbing: the model's text constraints as isl sets and maps.

The rest of polycoal talks about statements, accesses and dependences; this module is
the only one that spells isl. Every statement's domain lives in the space
S[thread dims..., c0, ..., c(depth-1)]; loop dimensions a statement does not have are
one-time loops fixed at 0.
"""

from __future__ import annotations

from functools import lru_cache

import islpy as isl

from polycoal.model.kernel_model import Access, KernelModel, Statement
from polycoal.model.poly import Poly


def _params(model: KernelModel) -> str:
    return "[" + ", ".join(model.parameters) + "]"


def thread_names(model: KernelModel) -> list[str]:
    return [d.name for d in model.thread_dims]


def _dims(model: KernelModel) -> str:
    return ", ".join(model.dims)


def domain_constraints(model: KernelModel, s: Statement) -> str:
    parts = []
    for d in model.thread_dims:
        parts.append(f"0 <= {d.name}" if d.strided else
                     f"0 <= {d.name} < {d.extent.to_c('*')}")
    for k in range(len(s.loops), model.depth):
        parts.append(f"c{k} = 0")
    parts += s.constraints
    parts += model.context
    return " and ".join(f"({p})" for p in parts) if parts else "true"


@lru_cache(maxsize=4096)
def _set(text: str) -> isl.Set:
    return isl.Set(text)


@lru_cache(maxsize=4096)
def _map(text: str) -> isl.Map:
    return isl.Map(text)


def domain(model: KernelModel, s: Statement) -> isl.Set:
    return _set(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] : "
                f"{domain_constraints(model, s)} }}")


def context(model: KernelModel) -> isl.Set:
    body = " and ".join(model.context) if model.context else "true"
    return _set(f"{_params(model)} -> {{ : {body} }}")


def _target(model: KernelModel, a: Access) -> list[str] | None:
    """Subscripts of the access in isl text, with the prefix that privatises it."""
    if a.subscripts is None:
        return None
    subs = [p.to_c("*") for p in a.subscripts]
    if a.space in ("private", "local"):
        return thread_names(model) + subs
    if a.space == "shared":
        prefix = []
        for d in model.thread_dims:
            if d.kind == "block":
                prefix.append(d.name)
            elif d.kind == "global":
                if model.block_shape is None:
                    return None
                size = model.block_shape["xyz".index(d.axis)]
                prefix.append(f"floor({d.name}/{size})")
        return prefix + subs
    return subs


def access_map(model: KernelModel, s: Statement, a: Access) -> isl.Map | None:
    target = _target(model, a)
    if target is None:
        return None
    m = _map(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] -> "
             f"{a.array}[{', '.join(target)}] }}")
    return m.intersect_domain(domain(model, s))


def schedule_map(model: KernelModel, s: Statement) -> isl.Map:
    """The original order: thread dims outermost, then the 2d+1 textual schedule."""
    out = thread_names(model)
    beta = list(s.beta) + [0] * (model.depth + 1 - len(s.beta))
    for k in range(model.depth):
        out.append(str(beta[k]))
        step = s.loops[k].step if k < len(s.loops) else 1
        out.append(f"c{k}" if step > 0 else f"-c{k}")
    out.append(str(beta[model.depth]))
    m = _map(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] -> [{', '.join(out)}] }}")
    return m.intersect_domain(domain(model, s))


def union_of(items) -> isl.UnionMap | None:
    result = None
    for m in items:
        if m is None:
            continue
        um = isl.UnionMap.from_map(m) if isinstance(m, isl.Map) else m
        result = um if result is None else result.union(um)
    return result


def implies(model: KernelModel, s: Statement, condition: str) -> bool:
    """Does every instance of `s` satisfy `condition` (isl text over its dims)?"""
    dom = domain(model, s)
    cond = _set(f"{_params(model)} -> {{ {s.name}[{_dims(model)}] : {condition} }}")
    return dom.is_subset(cond)


def poly_text(p: Poly) -> str:
    return p.to_c("*")
