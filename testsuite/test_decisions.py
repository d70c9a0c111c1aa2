"""Decisions are immutable values with reason codes; every kind of change has validators;
the layers below the driver do not import it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from polycoal.decisions import CHANGED, FINE_AS_IS, KernelDecision
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import VALIDATORS, TransformOptions, transform_program

from conftest import FIXTURES, REPO


def _decisions(path: Path, options=TransformOptions()) -> dict[str, KernelDecision]:
    program = read_program(str(path), PreprocessorOptions())
    return {d.kernel: d for d in transform_program(program, options).decisions}


def test_decisions_are_immutable():
    d = next(iter(_decisions(FIXTURES / "spellings" / "rows.cu").values()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.action = "unchanged"


def test_reason_codes_name_why_a_kernel_is_kept():
    rows = _decisions(FIXTURES / "spellings" / "rows.cu", TransformOptions(reduction="none"))
    assert rows["private_sum"].code == "no-better-order"
    assert rows["count_increments"].code == "best-axis-order"
    columns = _decisions(FIXTURES / "spellings" / "columns.cu")
    assert columns["step_three"].code == "already-coalesced"
    assert columns["minus_assign"].code == "split"
    assert {"already-coalesced", "best-axis-order", "small-gain",
            "no-predicted-gain"} == FINE_AS_IS
    racy = _decisions(FIXTURES / "race_atax.cu")
    assert {d.code for d in racy.values()} <= {"race", "redundant-copies", "may-alias",
                                                "already-coalesced", "best-axis-order",
                                                "restructured", "reduced", "split",
                                                "no-predicted-gain"}
    # ATAX's copies along y run as one (proven: each reads only its own writes of tmp);
    # the kernel whose neighbours collide stays as written
    assert racy["atax_kernel1"].collapsed == {"y"} and racy["atax_kernel1"].collapse_proof
    assert racy["race_neighbour"].action == "unchanged"


def test_every_kind_of_change_has_a_validator():
    assert set(VALIDATORS) == set(CHANGED)
    assert all(VALIDATORS[kind] for kind in CHANGED)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_layers_below_the_driver_do_not_import_it():
    """transform <-> validate <-> dynamic was an import circle: the executors and the
    decisions sit below the driver now."""
    below = [REPO / "polycoal" / "decisions.py"]
    for package in ("validate", "dynamic", "runtime", "codegen", "optimize", "model",
                    "analysis"):
        below += sorted((REPO / "polycoal" / package).glob("*.py"))
    offenders = [str(p.relative_to(REPO)) for p in below if p.exists()
                 and "polycoal.transform" in _imports(p)]
    assert offenders == []
