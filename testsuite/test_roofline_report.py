"""The roofline bound of a kernel (analysis/work.least_work) and the roofline report's
rows, table and plot (tools/roofline_report.py; its device run is on the lent H200)."""

from __future__ import annotations

import sys

import pytest

from conftest import PUBLISHED, REPO
from polycoal.analysis import analyze_kernel
from polycoal.analysis.work import least_work
from polycoal.decisions import KernelDecision
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions

sys.path.insert(0, str(REPO / "tools"))
import roofline_report  # noqa: E402


def _least(program: str, kernel: str, values: dict):
    path = PUBLISHED / program / f"{program}.cu"
    p = read_program(str(path), PreprocessorOptions((str(path.parent),)))
    return least_work(analyze_kernel(p.kernel(kernel), p), values)


def test_gemm_moves_each_matrix_once_and_does_two_flops_a_term():
    n = 512
    least = _least("gemm", "gemm_kernel", {"ni": n, "nj": n, "nk": n})
    # A and B read, C read and written: 4 n^2 floats; alpha's product applied once
    assert least.bytes == pytest.approx(4 * n * n * 4)
    assert least.flops == pytest.approx(2 * n ** 3 + 2 * n * n, rel=0.01)
    assert least.assumed == ()


def test_a_stencil_reads_each_element_once():
    """2D convolution: nine neighbours of each point, the input read once (its window
    slides), the output written once."""
    n = 1024
    least = _least("2dconv", "convolution2D_kernel", {"ni": n, "nj": n})
    assert least.bytes == pytest.approx(2 * n * n * 4, rel=0.01)
    assert least.flops > 9 * (n - 2) ** 2


def test_the_triangle_of_covariance_counts_its_half():
    m = n = 256
    least = _least("covariance", "covar_kernel", {"m": m, "n": n})
    assert least.flops == pytest.approx(m * (m + 1) / 2 * n * 2, rel=0.02)


def test_rows_are_judged_against_the_goal():
    d = KernelDecision("k", "product", "tiled")
    at = roofline_report._judged({"bound_ms": 0.9, "polycoal_ms": 1.0, "reason": None}, d)
    assert at["fraction"] == pytest.approx(0.9) and at["reason"] is None
    below = roofline_report._judged({"bound_ms": 0.2, "polycoal_ms": 1.0, "reason": None}, d)
    assert below["fraction"] == pytest.approx(0.2) and below["reason"].startswith("open")
    unbounded = roofline_report._judged({"bound_ms": None, "polycoal_ms": 1.0,
                                         "reason": None}, d)
    assert "outside the affine model" in unbounded["reason"]
    kept = roofline_report._judged({"bound_ms": 0.2, "polycoal_ms": 10.0, "reason": None},
                                   KernelDecision("mvt", "unchanged", "", code="redundant-copies"))
    assert kept["reason"].startswith("kept:") and "lockstep" in kept["reason"]
    swept = roofline_report._judged({"bound_ms": 0.2, "polycoal_ms": 1.0, "reason": None,
                                     "chain_ms": 0.5, "chain": "4095 trips of the loop at "
                                     "line 77, each waiting on the last: 122 ns a trip"},
                                    KernelDecision("adi", "swept", ""))
    assert swept["fraction"] == pytest.approx(0.2)
    assert swept["reason"].startswith("chain-bound: 4095 trips of the loop at line 77")
    assert "at least 0.5 ms (2.5x the bound of bytes and flops); polycoal's form at 50% of " \
        "it" in swept["reason"]
    # a chain shorter than the bytes' bound binds nothing
    short = roofline_report._judged({"bound_ms": 0.2, "polycoal_ms": 1.0, "reason": None,
                                     "chain_ms": 0.1, "chain": "..."},
                                    KernelDecision("k", "swept", ""))
    assert short["reason"].startswith("open")


def test_the_table_and_the_plot_show_every_measured_row():
    rows = [{"program": "polybench_inputs/gemm/gemm.cu", "kernel": "gemm_kernel",
             "size": "large: ni=4096", "bound_ms": 2.4, "original_ms": 87.0,
             "polycoal_ms": 3.9, "fraction": 2.4 / 3.9, "reason": "open: compute-bound"},
            {"program": "polybench_inputs/lu/lu.cu", "kernel": "lu_kernel1",
             "size": "standard: n=2048", "bound_ms": None, "original_ms": None,
             "polycoal_ms": None, "fraction": None, "reason": "not measured"}]
    table = roofline_report.markdown(rows)
    assert "| gemm.cu | gemm_kernel | large: ni=4096 | 2.4 | 87 | 3.9 | 62% |" in table
    assert "| lu.cu | lu_kernel1 | standard: n=2048 | - | - | - | - | not measured |" in table
    svg = roofline_report.plot(rows)
    assert svg.startswith("<svg") and svg.count("<rect") == 2 and "lu_kernel1" not in svg


def test_each_standard_program_has_its_sizes_and_host_loop_values():
    for spec in roofline_report.POLYBENCH + roofline_report.LARGE:
        path, macros, values = roofline_report._spec(spec)
        assert values, spec
    _, _, fdtd = roofline_report._spec("fdtd2d/fdtd2d.cu::nx=2048,ny=2048")
    assert fdtd["t"] == 1 and fdtd["nx"] == 2048


def test_a_kernel_whose_bound_is_below_a_launch_is_launch_dominated():
    d = KernelDecision("k", "unchanged", "kept")
    row = roofline_report._judged({"bound_ms": 4e-6, "polycoal_ms": 0.013, "reason": None}, d)
    assert row["reason"].startswith("launch-dominated: its work bounds it at 0.004 us")
    # a kernel of 28 us whose bound is 4 us: its own time, not the launch's, is open
    row = roofline_report._judged({"bound_ms": 4e-3, "polycoal_ms": 0.028, "reason": None}, d)
    assert row["reason"].startswith("open")
    assert row["reason"].endswith("caps one launch at 29% of the bound")


def test_reasons_name_the_devices_own_reference_at_the_size():
    """Below the goal, a memory-bound kernel within 1.1x of a copy of its bytes (one
    launch) is size-bound, a product within 1.1x of cuBLAS SGEMM for its flops is
    product-bound; farther, the reference is said after `open`."""
    d = KernelDecision("k", "split", "")
    row = {"bound_ms": 0.0164, "polycoal_ms": 0.0229, "reason": None, "bytes": 67 * 2 ** 20,
           "copy_ms": 0.0215}
    near = roofline_report._judged(dict(row), d, 0.00266, {})
    assert near["reason"].startswith("size-bound: a copy of the same 67 MiB (read and "
                                     "written, one launch) takes 21.5 us here, 76% of the "
                                     "bound; polycoal's form at 94% of that copy")
    far = roofline_report._judged({**row, "polycoal_ms": 0.04}, d, 0.00266, {})
    assert far["reason"].startswith("open") and "polycoal's form at 54% of that copy" in \
        far["reason"]
    figures = {"cublas": [{"n": 2048, "ms": 0.371}, {"n": 4096, "ms": 2.718}]}
    gemm = {"bound_ms": 0.2999, "polycoal_ms": 0.3917, "reason": None, "flops": 2.0 * 2048 ** 3}
    product = roofline_report._judged(dict(gemm), KernelDecision("g", "product", ""),
                                      0.00266, figures)
    assert product["reason"].startswith("product-bound: cuBLAS SGEMM for the same flops (at "
                                        "n = 2048, this run) takes 0.371 ms, 81% of the FP32 "
                                        "bound; polycoal's form 1.06x its time")
    syr2k = roofline_report._judged({**gemm, "flops": 4.0 * 4096 ** 3, "bound_ms": 4.797,
                                     "polycoal_ms": 6.168}, KernelDecision("s", "product", ""),
                                    0.00266, figures)
    assert syr2k["reason"].startswith("open") and "1.13x its time" in syr2k["reason"]
    assert roofline_report.sgemm_reference(2.0 * 1024 ** 3, figures) is None
