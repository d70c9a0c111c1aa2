"""The CUDA dialect, as described once in grammars/cuda.toml."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class Dialect:
    erase: frozenset[str]
    erase_with_arguments: frozenset[str]
    rename: dict[str, str]
    memory_spaces: dict[str, str]
    thread_index: str
    block_index: str
    block_dim: str
    grid_dim: str
    axes: tuple[str, ...]
    warp_size: int
    type_sizes: dict[str, int]
    pure_functions: frozenset[str]
    atomic_functions: frozenset[str]
    barrier_functions: frozenset[str]
    warp_functions: frozenset[str]
    check_functions: frozenset[str]
    assert_failures: frozenset[str]
    prelude: str

    @property
    def prelude_typedef_names(self) -> frozenset[str]:
        return frozenset(line.rstrip(";").split()[-1].lstrip("*")
                         for line in self.prelude.splitlines() if line.startswith("typedef"))


@lru_cache(maxsize=1)
def cuda_dialect() -> Dialect:
    data = tomllib.loads((resources.files("polycoal.grammars") / "cuda.toml").read_text())
    q, b, i = data["qualifiers"], data["builtins"], data["intrinsics"]
    return Dialect(
        erase=frozenset(q["erase"]),
        erase_with_arguments=frozenset(q["erase_with_arguments"]),
        rename=dict(q["rename"]),
        memory_spaces=dict(data["memory_spaces"]),
        thread_index=b["thread_index"], block_index=b["block_index"],
        block_dim=b["block_dim"], grid_dim=b["grid_dim"], axes=tuple(b["axes"]),
        warp_size=int(b["warp_size"]),
        type_sizes={k: int(v) for k, v in data["types"].items()},
        pure_functions=frozenset(i["pure"]), atomic_functions=frozenset(i["atomic"]),
        barrier_functions=frozenset(i["barrier"]), warp_functions=frozenset(i["warp"]),
        check_functions=frozenset(i["check"]), assert_failures=frozenset(i["assert_failures"]),
        prelude=data["prelude"]["typedefs"].strip() + "\n",
    )
