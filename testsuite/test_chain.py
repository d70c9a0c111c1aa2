"""The chain of a recurrence (analysis/chain.py): the trips of one thread that wait on
each other, and the operations from one trip's value to the next's, a lower bound of
any form's time that bytes and flops do not give (the roofline report's chain_ms)."""

from __future__ import annotations

import pytest

from conftest import PUBLISHED
from polycoal.analysis import analyze_kernel
from polycoal.analysis.chain import Edge, per_trip, recurrence_chain
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions

LATENCY = {"ffma": 2.0, "fdiv_num": 20.0, "fdiv_den": 30.0, "dfma": 4.0,
           "ddiv_num": 40.0, "ddiv_den": 50.0}


def _chain(tmp_path, body: str, values: dict, params: str = "int n"):
    path = tmp_path / "k.cu"
    path.write_text(f"#define N 512\n__global__ void k({params}, float *A, float *B, "
                    f"float *X, double *D)\n{{\n  int i = blockIdx.x * blockDim.x + "
                    f"threadIdx.x;\n{body}\n}}\n"
                    "int main(int argc, char **argv) {\n  float *A, *B, *X; double *D;\n"
                    "  k<<<4, 128>>>(argc * 100, A, B, X, D);\n  return 0;\n}\n")
    program = read_program(str(path), PreprocessorOptions())
    return recurrence_chain(analyze_kernel(program.kernel("k"), program), values)


def test_adi_forward_sweep_waits_on_a_division_a_trip():
    """X's value runs through a product, a division (its numerator) and a subtraction;
    B's through a division (its denominator) and a subtraction: with these latencies
    B's cycle binds, 32 a trip, over the row's 4095 trips."""
    path = PUBLISHED / "adi" / "adi.cu"
    program = read_program(str(path), PreprocessorOptions((str(path.parent),)))
    chain = recurrence_chain(analyze_kernel(program.kernel("adi_kernel1"), program),
                             {"n": 4096})
    assert chain is not None and chain.loop == "c0" and chain.line == 77
    assert chain.trips == 4095
    assert sorted((e.source, e.sink, e.distance, e.ops) for e in chain.edges) == [
        ("S0", "S0", 1, ("ffma", "fdiv_num", "ffma")),
        ("S1", "S0", 1, ("fdiv_den", "ffma")),
        ("S1", "S1", 1, ("fdiv_den", "ffma"))]
    assert chain.per_trip(LATENCY) == (32.0, ("fdiv_den", "ffma"))
    assert chain.ms(LATENCY) == pytest.approx(4095 * 32e-6)
    # a slower numerator: X's own cycle binds
    assert chain.per_trip({**LATENCY, "fdiv_num": 40.0})[1] == ("ffma", "fdiv_num", "ffma")


def test_adi_backward_sweep_reads_values_before_it_writes_them():
    """adi_kernel3 reads X[n - 3 - i2], which a later trip writes: an anti-dependence,
    no value passes from trip to trip (no chain)."""
    path = PUBLISHED / "adi" / "adi.cu"
    program = read_program(str(path), PreprocessorOptions((str(path.parent),)))
    assert recurrence_chain(analyze_kernel(program.kernel("adi_kernel3"), program),
                            {"n": 4096}) is None


def test_a_sum_is_reassociable_and_has_no_chain(tmp_path):
    body = ("  if (i < n) { float s = 0.0f;\n    for (int j = 0; j < n; j++) s += A[i * N + j];"
            "\n    X[i] = s; }")
    assert _chain(tmp_path, body, {"n": 512}) is None
    body = "  if (i < n)\n    for (int j = 0; j < n; j++) X[i] = X[i] - A[i * N + j];"
    assert _chain(tmp_path, body, {"n": 512}) is None


def test_a_private_recurrence_contracts_its_multiply_add(tmp_path):
    """x = x * a + b: one FMA from x to x a trip."""
    body = ("  if (i < n) { float x = 1.0f;\n    for (int j = 0; j < n; j++) {\n"
            "      x = x * A[i * N + j] + B[i * N + j];\n      X[i * N + j] = x;\n    }\n  }")
    chain = _chain(tmp_path, body, {"n": 300})
    assert chain is not None and chain.trips == 300
    assert chain.per_trip(LATENCY) == (2.0, ("ffma",))


def test_a_distance_of_two_trips_halves_the_wait(tmp_path):
    body = "  if (i < n)\n    for (int j = 2; j < n; j++) X[i * N + j] = X[i * N + j - 2] / B[j];"
    chain = _chain(tmp_path, body, {"n": 100})
    assert chain is not None and chain.trips == 98
    assert chain.per_trip(LATENCY) == (10.0, ("fdiv_num",))


def test_doubles_wait_on_double_operations(tmp_path):
    body = ("  if (i < n)\n    for (int j = 1; j < n; j++)\n"
            "      D[i * N + j] = A[j] / D[i * N + j - 1] + 1.0;")
    chain = _chain(tmp_path, body, {"n": 64})
    assert chain is not None and chain.per_trip(LATENCY) == (54.0, ("ddiv_den", "dfma"))


def test_two_statements_in_a_cycle_add_their_paths():
    """S0 -> S1 within a trip, S1 -> S0 across one: the cycle's weight over one trip;
    a cycle of no trips is no chain."""
    edges = (Edge("S0", "S1", None, 0, ("ffma",)), Edge("S1", "S0", "c0", 1, ("fdiv_num",)))
    assert per_trip(edges, LATENCY) == (22.0, ("ffma", "fdiv_num"))
    assert per_trip((Edge("S0", "S1", None, 0, ("ffma",)),
                     Edge("S1", "S0", None, 0, ("ffma",))), LATENCY) == (0.0, ())


def test_a_prefix_sum_is_a_scan_and_has_no_chain(tmp_path):
    """a[j] += a[j - 1] (row_sweeps.cu's prefix_rows): the value only enters the
    statement's own sum, which a scan may reassociate; y[j] = x[j] + 0.5 y[j + 1]
    scales it first: a chain of one FMA a trip."""
    body = "  if (i < n)\n    for (int j = 1; j < n; j++) X[i * N + j] += X[i * N + j - 1];"
    assert _chain(tmp_path, body, {"n": 100}) is None
    body = ("  if (i < n)\n    for (int j = n - 2; j >= 0; j--)\n"
            "      X[i * N + j] = A[i * N + j] + 0.5f * X[i * N + j + 1];")
    chain = _chain(tmp_path, body, {"n": 100})
    assert chain is not None and chain.trips == 99
    assert chain.per_trip(LATENCY) == (2.0, ("ffma",))


def test_the_trips_are_those_the_cycle_runs(tmp_path):
    """A recurrence guarded to its first 8 columns waits 7 divisions, not the loop's
    4095 (the trips counted in the statement's domain at the values)."""
    body = ("  if (i < n)\n    for (int j = 1; j < 4096; j++)\n"
            "      if (j < 8) X[i * N + j] = X[i * N + j - 1] / B[j];")
    chain = _chain(tmp_path, body, {"n": 64})
    assert chain is not None and chain.trips == 7


def test_a_compound_division_enters_by_its_numerator_and_a_constant_divides_as_a_product(
        tmp_path):
    body = "  if (i < n)\n    for (int j = 1; j < n; j++) { X[i * N + j] = X[i * N + j - 1];" \
        " X[i * N + j] /= B[j]; }"
    chain = _chain(tmp_path, body, {"n": 64})
    assert chain is not None and chain.per_trip(LATENCY)[1] == ("fdiv_num",)
    body = "  if (i < n)\n    for (int j = 1; j < n; j++) X[i * N + j] = X[i * N + j - 1] / 2.0f;"
    chain = _chain(tmp_path, body, {"n": 64})
    assert chain is not None and chain.per_trip(LATENCY) == (2.0, ("ffma",))
