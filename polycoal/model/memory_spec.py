"""A memory specification (grammars/memory_sm90.toml, or a user's file): the memories
data placement may put an array in, each with its capacity, transaction size, banks,
costs and its serialisation rule, the transactions one warp-wide request needs as a
function of the addresses its lanes read (PORPLE's memory specification language in
spirit).

A rule is a small expression language, parsed once with Python's `ast` and allowed only
integers, names, + - * // % and two rules: `distinct(e)` (distinct values of e over the
lanes: sectors for a cache, addresses for constant memory's broadcast) and
`max_per(k, e)` (the most distinct values of e among the lanes that share one value of
k: shared memory's bank conflicts, k the bank and e the word)."""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from polycoal.diagnostics import InputError

SHIPPED = "memory_sm90.toml"          # in grammars/ (the package polycoal.grammars)
KEYS = ("name", "scope", "capacity", "transaction", "banks", "bank_width", "serialise",
        "request_cost", "transaction_cost", "cached_bytes", "cached_transaction_cost",
        "fill_cost", "ordered", "needs", "spelling")
OPTIONAL = ("indexed_request_cost", "block_cost")
NEEDS = ("read-only", "static-size", "staging")
SPELLINGS = ("global", "ldg", "constant", "shared")
_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
              ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
              ast.Mod: lambda a, b: a % b}


@dataclass(frozen=True)
class Memory:
    name: str
    scope: str                     # "device" | "block"
    capacity: int                  # bytes; 0: no limit
    transaction: int
    banks: int
    bank_width: int
    serialise: str
    request_cost: float
    transaction_cost: float
    cached_bytes: int
    cached_transaction_cost: float
    fill_cost: float
    ordered: bool                  # reads wait for the kernel's stores that may alias
    needs: tuple[str, ...]
    spelling: str
    # the cost of a request whose address each thread computes (an index that depends on
    # the thread, not only on loop counters and constants the compiler folds into the
    # instruction): constant memory's LDC with a register index costs what an L1 hit
    # does; None: as any other request
    indexed_request_cost: float | None = None
    # a staging memory's cost per block beyond its loads: the barrier, and the fill
    # loop's index arithmetic
    block_cost: float = 0.0

    def transactions(self, addresses) -> int:
        """Transactions of one warp request whose active lanes read `addresses` (bytes
        from the array's start)."""
        if not addresses:
            return 0
        return _rule(self.serialise).evaluate(self, list(addresses))

    def request(self, addresses, footprint: int | None, indexed: bool = False) -> float:
        """The cost of one warp request (footprint: the bytes the kernel reads of the
        array; None: unknown, not cached; `indexed`: its address computed per thread)."""
        if indexed and self.indexed_request_cost is not None:
            return self.indexed_request_cost * max(self.transactions(addresses), 1)
        cached = footprint is not None and footprint <= self.cached_bytes
        per = self.cached_transaction_cost if cached else self.transaction_cost
        return self.request_cost + per * self.transactions(addresses)


@dataclass(frozen=True)
class MemorySpec:
    name: str
    warp: int
    multiprocessors: int
    memories: tuple[Memory, ...]
    store_wait: float = 300.0      # cycles a read ordered after a store waits each trip
    latency_hiding: int = 16       # warps of an SM that overlap such waits
    # the performance model's [roofline] and [operations] tables (analysis/roofline.py),
    # as (key, value) pairs: a specification without them takes the shipped ones
    roofline: tuple[tuple[str, float], ...] = ()
    operations: tuple[tuple[str, float], ...] = ()

    def memory(self, name: str) -> Memory:
        found = next((m for m in self.memories if m.name == name), None)
        if found is None:
            raise InputError(f"the memory specification '{self.name}' has no memory "
                             f"'{name}' (it has: {', '.join(m.name for m in self.memories)})")
        return found


class _Rule:
    """A parsed serialisation rule."""

    def __init__(self, text: str):
        try:
            self.tree = ast.parse(text, mode="eval").body
        except SyntaxError as e:
            raise InputError(f"serialisation rule '{text}': {e.msg}") from None
        self.text = text
        self._check(self.tree, top=True)

    def _check(self, node, top: bool) -> None:
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None)
            arity = {"distinct": 1, "max_per": 2}.get(name)
            if not top or arity is None or len(node.args) != arity or node.keywords:
                raise InputError(f"serialisation rule '{self.text}': only distinct(e) or "
                                 f"max_per(k, e), once, around the whole rule")
            for a in node.args:
                self._check(a, top=False)
        elif isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            self._check(node.left, top=False)
            self._check(node.right, top=False)
        elif isinstance(node, ast.Name) or \
                isinstance(node, ast.Constant) and isinstance(node.value, int):
            return
        else:
            raise InputError(f"serialisation rule '{self.text}': '{ast.unparse(node)}' is "
                             f"not an integer expression of the lane's address")
        if top and not isinstance(node, ast.Call):
            raise InputError(f"serialisation rule '{self.text}': it must be distinct(e) "
                             f"or max_per(k, e)")

    def _value(self, node, names: dict[str, int]) -> int:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise InputError(f"serialisation rule '{self.text}': unknown name "
                                 f"'{node.id}'")
            return names[node.id]
        left, right = self._value(node.left, names), self._value(node.right, names)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise InputError(f"serialisation rule '{self.text}': division by zero")
        return _OPERATORS[type(node.op)](left, right)

    def evaluate(self, memory: Memory, addresses: list[int]) -> int:
        base = {"transaction": memory.transaction, "banks": memory.banks,
                "bank_width": memory.bank_width, "capacity": memory.capacity}
        lanes = [dict(base, address=a, word=a // max(memory.bank_width, 1))
                 for a in addresses]
        args = self.tree.args
        if self.tree.func.id == "distinct":
            return len({self._value(args[0], n) for n in lanes})
        groups: dict[int, set[int]] = {}
        for n in lanes:
            groups.setdefault(self._value(args[0], n), set()).add(self._value(args[1], n))
        return max(len(v) for v in groups.values())


@lru_cache(maxsize=64)
def _rule(text: str) -> _Rule:
    return _Rule(text)


def _memory(entry: dict, where: str) -> Memory:
    missing = [k for k in KEYS if k not in entry]
    unknown = [k for k in entry if k not in KEYS + OPTIONAL]
    if missing or unknown:
        raise InputError(f"{where}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) +
            ([f"unknown {', '.join(unknown)}"] if unknown else [])))
    needs = tuple(entry["needs"])
    if any(n not in NEEDS for n in needs):
        raise InputError(f"{where}: needs must be among {', '.join(NEEDS)}")
    if entry["spelling"] not in SPELLINGS:
        raise InputError(f"{where}: spelling must be one of {', '.join(SPELLINGS)}")
    if entry["scope"] not in ("device", "block"):
        raise InputError(f"{where}: scope must be device or block")
    try:
        memory = Memory(str(entry["name"]), entry["scope"], int(entry["capacity"]),
                        int(entry["transaction"]), int(entry["banks"]),
                        int(entry["bank_width"]), str(entry["serialise"]),
                        float(entry["request_cost"]), float(entry["transaction_cost"]),
                        int(entry["cached_bytes"]), float(entry["cached_transaction_cost"]),
                        float(entry["fill_cost"]), bool(entry["ordered"]), needs,
                        entry["spelling"], None if "indexed_request_cost" not in entry
                        else float(entry["indexed_request_cost"]),
                        float(entry.get("block_cost", 0.0)))
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: {e}") from None
    if memory.transaction <= 0 or memory.capacity < 0:
        raise InputError(f"{where}: transaction must be positive, capacity not negative")
    _rule(memory.serialise)
    return memory


def parse_spec(text: str, where: str = "memory specification") -> MemorySpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{where}: {e}") from None
    entries = data.get("memory")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{where}: no [[memory]] entries")
    memories = tuple(_memory(e, f"{where}, memory {k + 1}") for k, e in enumerate(entries))
    names = [m.name for m in memories]
    if len(set(names)) != len(names) or "global" not in names:
        raise InputError(f"{where}: memory names must be distinct, one of them 'global'")
    try:
        return MemorySpec(str(data.get("name", "custom")), int(data.get("warp", 32)),
                          int(data.get("multiprocessors", 132)), memories,
                          float(data.get("store_wait", 300.0)),
                          max(int(data.get("latency_hiding", 16)), 1),
                          _numbers(data.get("roofline", {}), f"{where}, [roofline]"),
                          _numbers(data.get("operations", {}), f"{where}, [operations]"))
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: {e}") from None


def _numbers(table, where: str) -> tuple[tuple[str, float], ...]:
    """A table of numbers as sorted (key, value) pairs."""
    if not isinstance(table, dict) or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in table.values()):
        raise InputError(f"{where}: expected a table of numbers")
    return tuple(sorted((str(k), float(v)) for k, v in table.items()))


def load_spec(path: str | None = None) -> MemorySpec:
    """The specification in `path`, or the shipped sm_90 one."""
    if path is None:
        return parse_spec((resources.files("polycoal.grammars") / SHIPPED).read_text(),
                          f"grammars/{SHIPPED}")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"cannot read the memory specification {path}: {e.strerror}") \
            from None
    return parse_spec(text, path)
