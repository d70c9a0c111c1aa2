"""Product-shaped kernels (covariance, GEMM, SYRK) in register tiles over shared-memory
tiles (optimize/products.py, codegen/product.py; issue 15)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import POLYBENCH, first_kernel_analysis
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.products import ProductPlan, product_plan
from polycoal.optimize.restructure import solve_mapping
from polycoal.transform import TransformOptions, transform_program
from polycoal.validate.cpu import validate_cpu

CASES = [
    ("gemm", ("NI=100", "NJ=90", "NK=70"), {"ni": 100, "nj": 90, "nk": 70},
     {"gemm_kernel"}),
    ("2mm", ("NI=100", "NJ=90", "NK=70", "NL=80"),
     {"ni": 100, "nj": 90, "nk": 70, "nl": 80}, {"mm2_kernel1", "mm2_kernel2"}),
    ("syrk", ("NI=100", "NJ=70"), {"ni": 100, "nj": 70}, {"syrk_kernel"}),
    ("syr2k", ("NI=100", "NJ=70"), {"ni": 100, "nj": 70}, {"syr2k_kernel"}),
    ("covariance", ("M=100", "N=90"), {"m": 100, "n": 90}, {"covar_kernel"}),
    # the diagonal `symmat[j1][j1] = 1` over j1 alone, run by the first column of tiles
    ("correlation", ("M=100", "N=90"), {"m": 100, "n": 90}, {"corr_kernel"}),
    ("correlation", ("M=100", "N=90"), {"m": 100, "n": 0}, {"corr_kernel"}),
    # 8 x 8 accumulators, 128 x 128 tiles (chosen from 2048 x 2048 outputs; forced)
    ("gemm", ("NI=300", "NJ=270", "NK=37"), {"ni": 300, "nj": 270, "nk": 37},
     {"gemm_kernel"}, (("", 128, 16, 8, 0),)),
    ("syrk", ("NI=260", "NJ=45"), {"ni": 260, "nj": 45}, {"syrk_kernel"},
     (("", 128, 16, 8, 0),)),
    # 2 x 2 accumulators; 8 x 8 threads of 8 x 8 accumulators, chunks of 5 (not a
    # divisor of anything)
    ("covariance", ("M=100", "N=90"), {"m": 100, "n": 90}, {"covar_kernel"},
     (("", 32, 16, 16, 0),)),
    ("syr2k", ("NI=100", "NJ=70"), {"ni": 100, "nj": 70}, {"syr2k_kernel"},
     (("syr2k_kernel", 64, 8, 5, 0),)),
    ("covariance", ("M=100", "N=90", "POLYBENCH_USE_SCALAR_LB"), {"m": 100, "n": 90},
     {"covar_kernel"}),
]


def _transformed(name, defines, sizes=(), reduction="auto"):
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=defines),
                               sizes=sizes, reduction=reduction)
    program = read_program(str(POLYBENCH / name / f"{name}.cu"), options.preprocessor)
    return program, transform_program(program, options), options


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{len(c[1])}-{n}"
                                             for n, c in enumerate(CASES)])
def test_products_are_tiled_and_compute_exactly_what_the_original_does(case):
    """Ragged sizes (not multiples of the tiles or the chunks); the sums are the same
    sums in the same order: bit-identical on the CPU (SYR2K's two terms, added to the
    accumulator one at a time, within the reassociation tolerance; with --reduction
    none in the original's order, bit-identical too)."""
    name, defines, values, products = case[:4]
    for reduction in ("auto", "none") if name == "syr2k" else ("auto",):
        program, result, options = _transformed(name, defines, (case + ((),))[4],
                                                reduction)
        actions = {d.kernel: d.action for d in result.decisions}
        assert {k for k, a in actions.items() if a == "product"} == products, actions
        split = {d.kernel for d in result.decisions if d.reassociates} & products
        assert split == (products if name == "syr2k" and reduction == "auto" else set())
        verdicts = validate_cpu(program, result, options, values, seed=11)
        for v in verdicts:
            assert v.ok, (v.kernel, v.message)
            if v.kernel in products - split:
                assert v.arrays and all(a.max_abs == 0.0 for a in v.arrays), v.arrays


def test_the_tile_follows_the_sizes():
    """The largest tile that leaves 1.5 tiles for each of the 132 multiprocessors; the
    sizes from --sizes where given, for one kernel or for all."""
    def sizes(n, forced=()):
        d = _transformed("gemm", (f"NI={n}", f"NJ={n}", "NK=37"), forced)[1].decisions[0]
        return d.generated.tiles.sizes.text, d.generated.per_block
    assert sizes(100) == ("tile=32,threads=16,chunk=32", (32, 32, 1))
    assert sizes(512) == ("tile=32,threads=16,chunk=32", (32, 32, 1))
    assert sizes(1024) == ("tile=64,threads=16,chunk=16,blocks=3", (64, 64, 1))
    assert sizes(2048) == ("tile=128,threads=16,chunk=8,blocks=2", (128, 128, 1))
    syr2k = _transformed("syr2k", ("NI=2048", "NJ=2048"))[1].decisions[0]
    assert syr2k.generated.tiles.sizes.text == "tile=128,threads=16,chunk=8,blocks=2"
    syrk = _transformed("syrk", ("NI=2048", "NJ=2048"))[1].decisions[0]
    assert syrk.generated.tiles.sizes.text == "tile=128,threads=16,chunk=16"  # along k
    assert sizes(2048, (("", 64, 8, 4, 0), ("other", 32, 16, 16, 0)))[0] == \
        "tile=64,threads=8,chunk=4"
    assert sizes(100, (("gemm_kernel", 128, 16, 8, 2), ("", 32, 16, 16, 0)))[0] == \
        "tile=128,threads=16,chunk=8,blocks=2"


def test_covariance_is_tiled_with_its_mirror_store():
    _, result, _ = _transformed("covariance", ("M=100", "N=90"))
    d = next(x for x in result.decisions if x.kernel == "covar_kernel")
    assert d.action == "product"
    assert "the same sums in the same order" in d.reason
    assert "symmat[(100 * pc_j + pc_i)] = symmat[(pc_j + 100 * pc_i)];" in result.text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_tiled_products_compile(tmp_path):
    for name, defines, _, _ in (c[:4] for c in CASES[:3]):
        _, result, _ = _transformed(name, defines)
        (tmp_path / "out.cu").write_text(result.text)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", "-I", str(POLYBENCH / name),
                            "-I", str(POLYBENCH / "common"), str(tmp_path / "out.cu"),
                            "-o", str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr[-2000:])


def _plan(write_cu, body: str):
    source = ("#define N 128\n__global__ void k(float *C, const float *A, const float *B,"
              " float *D)\n{\n  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  int i = blockIdx.y * blockDim.y + threadIdx.y;\n"
              f"  if (i < N && j < N) {{\n{body}\n  }}\n}}\n"
              "int main() { float *a, *b, *c, *d; dim3 g(4, 16), t(32, 8);"
              " k<<<g, t>>>(c, a, b, d); }\n")
    a = first_kernel_analysis(write_cu(source))
    return product_plan(a.model, a, solve_mapping(a.model, a.dependences,
                                                  a.global_references))


@pytest.mark.parametrize("body,why", [
    ("for (int k = 0; k < i; k++) C[i * N + j] += A[i * N + k] * B[k * N + j];",
     "depends on the output"),                                  # a triangular sum
    ("for (int k = 0; k < N; k++) C[i * N + j] += A[i * N + k] * B[k * N + i + j];",
     "both outputs"),
    ("for (int k = 0; k < N; k++) C[i * N + j] += C[k * N + j] * B[k * N + j];",
     "reduction"),                                  # reads what it writes: not a sum
    ("for (int k = 0; k < N; k++) C[i * N + j] += A[i * N + k] * D[k];",
     "reduction alone"),
    ("for (int k = 0; k < N; k++) C[i * N + j] -= A[i * N + k] * B[k * N + j];",
     "not a sum"),
])
def test_what_is_not_tiled(write_cu, body, why):
    plan = _plan(write_cu, body)
    assert not isinstance(plan, ProductPlan) and why in plan.text, plan


def test_a_plain_product_is_planned(write_cu):
    plan = _plan(write_cu, "C[i * N + j] = 0.0f;\n"
                 "for (int k = 0; k < N; k++) C[i * N + j] += A[i * N + k] * B[k * N + j];")
    assert isinstance(plan, ProductPlan) and (plan.i, plan.j) == ("gy", "gx")
    assert plan.before == ("S0",) and len(plan.operands) == 2


def test_the_validator_rejects_tiles_that_are_not_the_plan():
    from dataclasses import replace

    from polycoal.transform import _product
    program, result, _ = _transformed("gemm", ("NI=100", "NJ=90", "NK=70"))
    d = next(x for x in result.decisions if x.kernel == "gemm_kernel")
    assert _product(program, None, d) == []
    wrong = replace(d, generated=replace(d.generated, tiles=replace(
        d.generated.tiles, i=d.generated.tiles.j, j=d.generated.tiles.i)))
    assert _product(program, None, wrong) == ["the generated tiles differ from the plan"]


def test_a_triangle_counts_the_tiles_that_hold_outputs():
    """Covariance's j2 >= j1 at 2048: 136 tiles of 128 hold outputs (too few for 132
    multiprocessors at 1.5 each), 528 of 64; the blocks of tiles below the diagonal skip
    them whole. A rectangle (GEMM) has no such test."""
    _, result, _ = _transformed("covariance", ("M=2048", "N=2048"))
    d = next(x for x in result.decisions if x.kernel == "covar_kernel")
    assert d.generated.tiles.sizes.text == "tile=64,threads=16,chunk=8"
    assert "if (!(((pc_j0 + 63) >= pc_i0)))" in d.generated.text
    gemm = _transformed("gemm", ("NI=2048", "NJ=2048", "NK=2048"))[1].decisions[0]
    assert "no output in this tile" not in gemm.generated.text


def test_sizes_on_the_command_line(tmp_path, capsys):
    from polycoal.cli import main
    out = tmp_path / "gemm.cu"
    source = POLYBENCH / "gemm" / "gemm.cu"
    assert main(["transform", str(source), "-o", str(out), "--dump-sizes",
                 "--sizes", "gemm_kernel:tile=128,chunk=4,blocks=2"]) == 0
    err = capsys.readouterr().err
    assert "kernel gemm_kernel: --sizes gemm_kernel:tile=128,threads=16,chunk=4,blocks=2" \
        in err
    assert "__launch_bounds__(256, 2) gemm_kernel(" in out.read_text()
    # fields not given are the plain defaults (no cap on the registers), not the choice
    assert main(["transform", str(source), "-o", str(out), "--dump-sizes",
                 "--sizes", "tile=128,chunk=8"]) == 0
    assert "--sizes gemm_kernel:tile=128,threads=16,chunk=8\n" in capsys.readouterr().err
    assert main(["transform", str(source), "-o", str(out), "--dump-sizes",
                 "--tile", "64"]) == 0
    assert "--sizes gemm_kernel:tile=64,threads=16,chunk=16\n" in capsys.readouterr().err
    for bad, why in (("tile=48", "outputs per thread"), ("tile=64,chunk=3", "split evenly"),
                     ("tile=64,size=2", "expected"), ("tile=64,blocks=99", "0 to 32")):
        assert main(["transform", str(source), "-o", str(tmp_path / "x.cu"),
                     "--sizes", bad]) == 2
        assert why in capsys.readouterr().err
        assert not (tmp_path / "x.cu").exists()


def test_the_tile_layout_is_checked_with_isl():
    """Each thread's accumulators cover its tile once, in every layout the template
    writes (groups of 4, 2 or 1 adjacent outputs); a wrong group size does not."""
    from polycoal.validate.tiles import offsets_problems
    for threads, micro, vector in ((16, 8, 4), (16, 4, 4), (16, 2, 2), (8, 8, 2),
                                   (16, 8, 1), (32, 1, 1)):
        assert offsets_problems(threads, micro, vector) == []
    assert offsets_problems(16, 4, 3)             # o = 48 floor(a/3) + 3t + a mod 3


def test_the_validator_rejects_a_skip_of_tiles_with_outputs():
    """covariance's skip test is checked against its outputs; a test that skips the
    diagonal's tiles too (pc_i0 < pc_j0, strictly) is refused."""
    import islpy as isl
    from polycoal.optimize.products import tile_set
    from polycoal.validate.tiles import skip_problems
    _, result, _ = _transformed("covariance", ("M=100", "N=90"))
    d = next(x for x in result.decisions if x.kernel == "covar_kernel")
    plan, model = d.generated.tiles, d.analysis.model
    right = tile_set(model, plan)
    assert skip_problems(model, plan.output_statement, plan.i, plan.j, plan.tile, right) == []
    wrong = right.intersect_params(isl.Set("[pc_i0, pc_j0] -> { : pc_i0 < pc_j0 }"))
    assert skip_problems(model, plan.output_statement, plan.i, plan.j, plan.tile,
                         wrong) == ["a tile the blocks skip holds an output"]
