"""Coalescing classification of global references (core paper, section 2b) and the
sectors a warp request touches."""

from __future__ import annotations

from pathlib import Path

import pytest

from polycoal.analysis import analyze_program
from polycoal.analysis.coalescing import (LARGE_STRIDE, dynamic_offset, lane_stride,
                                          permutation_cost, warp_sectors)
from polycoal.frontend import read_program
from polycoal.model.poly import Poly

FIXTURES = Path(__file__).resolve().parent / "fixtures"
from conftest import POLYBENCH  # noqa: E402  (the scalar-bound variant)


def corpus(name: str) -> Path:
    path = POLYBENCH / name / f"{name}.cu"
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


def refs(ka, text_part: str, kind: str | None = None):
    """Global references whose text contains `text_part` (and of `kind`)."""
    found = [r for r in ka.global_references if text_part in r.access.text.replace(" ", "")
             and (kind is None or r.access.kind == kind)]
    assert found, (text_part, [r.access.text for r in ka.global_references])
    return found


def verdicts(ka, text_part, kind=None):
    return {r.coalesced for r in refs(ka, text_part, kind)}


# --------------------------------------------------------------------------- ATAX

def test_atax_kernel1(kernel_analysis):
    ka = kernel_analysis(corpus("atax"), "atax_kernel1")
    (a,) = refs(ka, "A[")
    assert a.coalesced is False
    assert a.strides["x"] == Poly.const(4096)            # a row of A per thread
    assert a.classes == {"x": "u", "y": "-", "z": "-"}
    assert (a.c, a.u, a.z) == ((0, 0, 0), (1, 0, 0), (1, 0, 0))
    assert (a.sectors, a.ideal_sectors) == (32, 4)       # float: one sector per lane
    (x,) = refs(ka, "x[")
    assert x.coalesced is True                            # broadcast: all lanes read x[j]
    assert x.classes["x"] == "-" and x.strides["x"] == Poly()
    assert (x.sectors, x.ideal_sectors) == (1, 1)
    for t in refs(ka, "tmp["):
        assert t.coalesced is True
        assert t.classes["x"] == "c" and (t.sectors, t.ideal_sectors) == (4, 4)


def test_atax_kernel2_coalesced(kernel_analysis):
    ka = kernel_analysis(corpus("atax"), "atax_kernel2")
    assert all(r.coalesced for r in ka.global_references)
    (a,) = refs(ka, "A[")                # y[j] += A[i*NY + j] * tmp[i], j the thread
    assert a.strides["x"] == Poly.const(1) and a.classes["x"] == "c"
    assert (a.sectors, a.ideal_sectors) == (4, 4)
    (t,) = refs(ka, "tmp[")
    assert (t.classes["x"], t.sectors) == ("-", 1)


def test_atax_double_sectors(analysis):
    pa = analysis(corpus("atax"), ("DATA_TYPE=double",))
    k1 = next(ka for ka in pa.kernels if ka.kernel.name == "atax_kernel1")
    (a,) = refs(k1, "A[")
    assert a.access.element_size == 8
    assert (a.sectors, a.ideal_sectors, a.coalesced) == (32, 8, False)
    t = refs(k1, "tmp[")[0]
    assert (t.sectors, t.ideal_sectors, t.coalesced) == (8, 8, True)
    (x,) = refs(k1, "x[")
    assert (x.sectors, x.ideal_sectors) == (1, 1)


# --------------------------------------------------------------------------- MVT

def test_mvt_kernel1_uncoalesced_on_a(kernel_analysis):
    ka = kernel_analysis(corpus("mvt"), "mvt_kernel1")
    (a,) = refs(ka, "a[")                 # a[i * N + j], i the thread: row per thread
    assert a.access.text.replace(" ", "").startswith("a[(i*")
    assert a.coalesced is False and a.classes["x"] == "u" and a.sectors == 32
    assert verdicts(ka, "x1[") == {True}
    assert verdicts(ka, "y_1[") == {True}


def test_mvt_kernel2_coalesced_on_a(kernel_analysis):
    ka = kernel_analysis(corpus("mvt"), "mvt_kernel2")
    (a,) = refs(ka, "a[")                 # a[j * N + i], i the thread: column per thread
    assert a.access.text.replace(" ", "").startswith("a[(j*")
    assert a.coalesced is True and a.classes["x"] == "c"
    assert a.strides["x"] == Poly.const(1)
    assert all(r.coalesced for r in ka.global_references)


# --------------------------------------------------------------------------- covariance

COV_DEFINES = ("M=64", "N=32")


def test_covariance_covar_kernel(analysis):
    pa = analysis(corpus("covariance"), COV_DEFINES)
    ka = next(ka for ka in pa.kernels if ka.kernel.name == "covar_kernel")
    symmat = refs(ka, "symmat[")
    assert {r.access.text.replace(" ", "") for r in symmat} == {
        "symmat[(j1*64)+j2]", "symmat[(j2*64)+j1]"}
    for r in symmat:
        # j2 starts at j1: at one dynamic instance lane k holds j1 = j + k and
        # j2 = j1 + n, so both symmat[j1*M + j2] and symmat[j2*M + j1] move by M + 1
        assert r.strides["x"] == Poly.const(64 + 1)
        assert r.coalesced is False and r.sectors == 32 and r.classes["x"] == "u"
    (d1,) = refs(ka, "data[(i*64)+j1]")
    assert d1.coalesced is True and d1.strides["x"] == Poly.const(1)
    # data[i * M + j2] does not mention the thread index j1, yet polycoal reports it
    # coalesced, and rightly so at one dynamic instance: the lanes run the j2 loop in
    # lockstep by iteration number, and j2 starts at j1, so at the n-th iteration lane k
    # holds j2 = j1 + n (j1 = base + k). The lanes read consecutive elements: unit stride.
    (d2,) = refs(ka, "data[(i*64)+j2]")
    assert d2.coalesced is True
    assert d2.strides["x"] == Poly.const(1) and d2.classes["x"] == "c"
    assert (d2.sectors, d2.ideal_sectors) == (4, 4)
    # its flat subscript, statically, has no thread index at all
    assert "gx" not in d2.access.flat.variables


def test_dynamic_offset_shifts_loops_starting_at_the_thread(analysis):
    pa = analysis(corpus("covariance"), COV_DEFINES)
    ka = next(ka for ka in pa.kernels if ka.kernel.name == "covar_kernel")
    (d2,) = refs(ka, "data[(i*64)+j2]")
    s = d2.statement
    offset = dynamic_offset(s, d2.access.flat)
    # c0 (j2) = gx + n0, c1 (i) = 0 + n1
    assert offset == Poly.var("n1") * 64 + Poly.var("gx") + Poly.var("n0")
    assert lane_stride(ka.model, offset, "x") == Poly.const(1)
    assert lane_stride(ka.model, d2.access.flat, "x") == Poly()


# --------------------------------------------------------------------------- 2-D, symbolic

def test_two_dimensional_classes(kernel_analysis):
    ka = kernel_analysis(corpus("covariance"), "reduce_kernel")
    for r in refs(ka, "data["):        # data[i * M + j], j along x, i along y
        assert r.classes == {"x": "c", "y": "u", "z": "-"}
        assert (r.c, r.u, r.z) == ((1, 0, 0), (0, 1, 0), (1, 1, 0))
        assert r.strides["y"] == Poly.const(2048)
        assert r.coalesced is True
    (mean,) = refs(ka, "mean[")
    assert mean.classes == {"x": "c", "y": "-", "z": "-"}


def test_symbolic_stride_taken_as_large(kernel_analysis):
    ka = kernel_analysis(FIXTURES / "symbolic_linear.cu", "lin2d")
    for r in ka.global_references:
        assert r.strides["x"] == Poly.var("n")
        assert r.coalesced is False and r.sectors == 32
        assert r.note is None           # n = 1024 is known from the launch


def test_transpose_symbolic_stride_with_square_block(kernel_analysis):
    ka = kernel_analysis(FIXTURES / "cpp_host.cu", "transpose_2d")
    (load,) = refs(ka, "in[")        # in[x * height + y] with a 16x16 block
    assert load.strides["x"] == Poly.var("height") and load.strides["y"] == Poly.const(1)
    assert (load.sectors, load.ideal_sectors, load.coalesced) == (16, 4, False)
    (store,) = refs(ka, "out[")      # out[y * width + x]: two rows of 16 floats
    assert (store.sectors, store.ideal_sectors, store.coalesced) == (4, 4, True)


def test_unknown_block_shape_noted(kernel_analysis):
    ka = kernel_analysis(FIXTURES / "syntax_error.cu", "ok_kernel")    # no launch
    assert ka.model.block_shape is None
    assert ka.global_references
    for r in ka.global_references:
        assert r.note is not None and "32 threads along x" in r.note
        assert (r.sectors, r.ideal_sectors, r.coalesced) == (4, 4, True)


def test_launches_disagreeing_on_block(kernel_analysis):
    ka = kernel_analysis(FIXTURES / "launch_forms.cu", "inc2d")
    assert ka.model.block_shape is None
    for r in ka.global_references:        # a[y * w + x]: unit stride along x
        assert r.strides["x"] == Poly.const(1) and r.strides["y"] == Poly.var("w")
        assert r.note is not None
        assert r.coalesced is True


def test_non_affine_reference_unknown(kernel_analysis):
    ka = kernel_analysis(FIXTURES / "outside_model.cu", "k_indirect")
    (x,) = refs(ka, "x[P[")
    assert x.coalesced is None and x.sectors is None
    assert x.classes == {"x": "?", "y": "?", "z": "?"}
    assert x.z == (1, 1, 1)
    (p,) = [r for r in ka.global_references if r.access.array == "P"]
    assert p.coalesced is True and p.classes["x"] == "c"


def test_best_x_suggests_unit_stride_axis(write_cu):
    path = write_cu("#define N 256\n"
                    "__global__ void colmajor(float *A)\n{\n"
                    "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                    "    if (x < N && y < N) A[x * N + y] = 0.0f;\n}\n"
                    "int main() { float *A; dim3 b(32, 8), g(8, 32); colmajor<<<g, b>>>(A); }\n")
    (ka,) = analyze_program(read_program(str(path))).kernels
    (r,) = ka.global_references
    assert r.classes == {"x": "u", "y": "c", "z": "-"}
    assert r.coalesced is False
    assert ka.best_x == "y"
    assert ka.axis_costs["y"] < ka.axis_costs["x"]
    assert any("axis y the new x" in s for s in ka.suggestions)
    penalty = len(ka.global_references) + 1
    assert permutation_cost(r, "x", penalty) == 0 + 1 + penalty      # c + z + N*u
    assert permutation_cost(r, "y", penalty) == 1 + 1 + 0


# --------------------------------------------------------------------------- warp_sectors

@pytest.mark.parametrize("strides,block,size,expected", [
    ({"x": 1, "y": 0, "z": 0}, (32, 8, 1), 4, (4, 4)),
    ({"x": 1, "y": 0, "z": 0}, (32, 8, 1), 8, (8, 8)),
    ({"x": 0, "y": 0, "z": 0}, (32, 8, 1), 4, (1, 1)),
    ({"x": 2, "y": 0, "z": 0}, (32, 1, 1), 4, (8, 4)),
    ({"x": 8, "y": 0, "z": 0}, (32, 1, 1), 4, (32, 4)),
    ({"x": 4096, "y": 0, "z": 0}, (32, 8, 1), 4, (32, 4)),
    ({"x": -1, "y": 0, "z": 0}, (32, 1, 1), 4, (5, 4)),      # 0, -1, ..., -31: straddles
    ({"x": 1, "y": 1024, "z": 0}, (16, 16, 1), 4, (4, 4)),   # two half rows
    ({"x": 1, "y": 1001, "z": 0}, (16, 16, 1), 4, (5, 4)),   # second half row misaligned
    ({"x": 1, "y": 0, "z": 0}, (8, 1, 1), 4, (1, 1)),        # an 8-thread block
    ({"x": LARGE_STRIDE, "y": 0, "z": 0}, (32, 1, 1), 2, (32, 2)),
])
def test_warp_sectors(strides, block, size, expected):
    assert warp_sectors(strides, block, size) == expected


def test_warp_sectors_brute_force():
    for sx in range(0, 10):
        for sy in (0, 1, 7, 64):
            for block in ((32, 1, 1), (16, 2, 1), (8, 4, 1), (4, 4, 2)):
                lanes = [(l % block[0], (l // block[0]) % block[1], l // (block[0] * block[1]))
                         for l in range(32)]
                offsets = {sx * tx + sy * ty for tx, ty, tz in lanes}
                sectors = len({o * 4 // 32 for o in offsets})
                ideal = max(1, -(-len(offsets) * 4 // 32))
                assert warp_sectors({"x": sx, "y": sy, "z": 0}, block, 4) == (sectors, ideal)
