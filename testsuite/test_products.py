"""Product-shaped kernels (covariance, GEMM, SYRK) in register tiles over shared-memory
tiles (optimize/products.py, codegen/product.py; issue 15)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import POLYBENCH, first_kernel_analysis
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.optimize.products import ProductPlan, choose_sizes, product_plan
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
    # tall tiles (256 x 128, warps of 64 x 64, the full tiles in a kernel of their own):
    # ragged (no full tile, an unaligned row stride), whole tiles with aligned rows (every
    # tile full, 16-byte reads), whole tiles with a reduction of a ragged length (no tile
    # full: the other kernel runs them all), a triangle (the tiles above the diagonal
    # full), SYRK's operands both along k, SYR2K's four in chunks of 4
    ("gemm", ("NI=300", "NJ=270", "NK=37"), {"ni": 300, "nj": 270, "nk": 37},
     {"gemm_kernel"}, (("", 128, 16, 8, 1, 256),)),
    ("gemm", ("NI=512", "NJ=256", "NK=64"), {"ni": 512, "nj": 256, "nk": 64},
     {"gemm_kernel"}, (("", 128, 16, 8, 1, 256),)),
    ("gemm", ("NI=512", "NJ=256", "NK=69"), {"ni": 512, "nj": 256, "nk": 69},
     {"gemm_kernel"}, (("", 128, 16, 8, 1, 256),)),
    ("covariance", ("M=512", "N=48"), {"m": 512, "n": 48}, {"covar_kernel"},
     (("", 128, 16, 8, 1, 256),)),
    ("syrk", ("NI=512", "NJ=40"), {"ni": 512, "nj": 40}, {"syrk_kernel"},
     (("", 128, 16, 8, 1, 256),)),
    ("syr2k", ("NI=270", "NJ=64"), {"ni": 270, "nj": 64}, {"syr2k_kernel"},
     (("", 128, 16, 4, 1, 256),)),
    # square tiles in the warp layout (128 x 128, warps of 32 x 64, two blocks a
    # multiprocessor, the full tiles in a kernel of their own): ragged; a triangle whose
    # tiles on the diagonal run in the full kernel, each element checked; ragged
    # triangle; SYRK's operands along k
    ("gemm", ("NI=300", "NJ=270", "NK=37"), {"ni": 300, "nj": 270, "nk": 37},
     {"gemm_kernel"}, (("", 128, 16, 8, 2, 128),)),
    ("covariance", ("M=256", "N=48"), {"m": 256, "n": 48}, {"covar_kernel"},
     (("", 128, 16, 8, 2, 128),)),
    ("covariance", ("M=300", "N=40"), {"m": 300, "n": 40}, {"covar_kernel"},
     (("", 128, 16, 8, 2, 128),)),
    ("syrk", ("NI=256", "NJ=40"), {"ni": 256, "nj": 40}, {"syrk_kernel"},
     (("", 128, 16, 8, 2, 128),)),
    # correlation's j2 > j1 from 1: the tiles start at 0 (aligned), the first column's
    # reads clamped below, the full tiles' 16-byte reads aligned
    ("correlation", ("M=300", "N=40"), {"m": 300, "n": 40}, {"corr_kernel"},
     (("", 128, 16, 8, 2, 128),)),
    # SYR2K's four in chunks of 8: 50,176 bytes, past the static 48 KiB (dynamic)
    ("syr2k", ("NI=270", "NJ=64"), {"ni": 270, "nj": 64}, {"syr2k_kernel"},
     (("", 128, 16, 8, 1, 256),)),
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
    assert sizes(2048) == ("tile=128,tall=256,threads=16,chunk=8,blocks=1", (128, 256, 1))
    assert sizes(1920) == ("tile=128,tall=128,threads=16,chunk=8,blocks=2", (128, 128, 1))
    # SYR2K's four operands in tall tiles need 50,176 bytes of shared memory: the
    # launch's dynamic shared memory; a double GEMM's accumulators would not fit the
    # registers of tall tiles: square
    syr2k = _transformed("syr2k", ("NI=2048", "NJ=2048"))[1].decisions[0]
    assert syr2k.generated.tiles.sizes.text == "tile=128,tall=256,threads=16,chunk=8,blocks=1"
    assert [st.shared for st in syr2k.generated.stages] == [50176, 50176]
    assert sizes(2048)[0] and _transformed("gemm", ("NI=2048", "NJ=2048", "NK=2048"))[1] \
        .decisions[0].generated.shared == 0
    # a triangle in square tiles in warps (tall tiles: as many waves, slower); 2000 x
    # 2000 outputs in one wave of tall tiles (the full ones and the others in one launch)
    for n, chosen in ((4096, "tile=128,tall=128,threads=16,chunk=8,blocks=2"),
                      (8192, "tile=128,tall=128,threads=16,chunk=8,blocks=2")):
        covariance = _transformed("covariance", (f"M={n}", f"N={n}"))[1]
        d = next(x for x in covariance.decisions if x.kernel == "covar_kernel")
        assert d.generated.tiles.sizes.text == chosen, n
    assert sizes(2000)[0] == "tile=128,tall=256,threads=16,chunk=8,blocks=1"
    dgemm = _transformed("gemm", ("NI=2048", "NJ=2048", "NK=2048", "DATA_TYPE=double"))
    assert dgemm[1].decisions[0].generated.tiles.sizes.text == \
        "tile=128,threads=16,chunk=8,blocks=2"
    syrk = _transformed("syrk", ("NI=1920", "NJ=1920"))[1].decisions[0]
    assert syrk.generated.tiles.sizes.text == "tile=128,tall=128,threads=16,chunk=8,blocks=2"
    # of the tiles of 128, the fewest waves: 1920 x 1920 in 225 square tiles in warps (one
    # wave), not 240 tall ones (two) nor square ones in the block layout (one, slower)
    assert choose_sizes([1920, 1920], (("i", False), ("j", False)), 4).text == \
        "tile=128,tall=128,threads=16,chunk=8,blocks=2"
    assert choose_sizes([1920, 1920], (("i", False), ("j", False)), 8).text == \
        "tile=128,threads=16,chunk=8,blocks=2"
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
    assert main(["transform", str(source), "-o", str(out), "--dump-sizes",
                 "--sizes", "tile=128,tall=256,chunk=8,blocks=1"]) == 0
    assert "--sizes gemm_kernel:tile=128,tall=256,threads=16,chunk=8,blocks=1\n" in \
        capsys.readouterr().err
    assert FULL_PATH in out.read_text()
    for bad, why in (("tile=48", "outputs per thread"), ("tile=64,chunk=3", "split evenly"),
                     ("tile=128,tall=96", "rows per thread"),
                     ("tile=64,size=2", "expected"), ("tile=64,blocks=99", "0 to 32")):
        assert main(["transform", str(source), "-o", str(tmp_path / "x.cu"),
                     "--sizes", bad]) == 2
        assert why in capsys.readouterr().err
        assert not (tmp_path / "x.cu").exists()


def test_the_tile_layout_is_checked_with_isl():
    """Each thread's accumulators cover its tile once, in every layout the template
    writes (groups of 4, 2 or 1 adjacent outputs; the block's lanes or warps of 64 x 64);
    a wrong group size, stride or lane count does not."""
    from dataclasses import replace
    from polycoal.optimize.products import TileSizes, placements
    from polycoal.validate.tiles import offsets_problems
    for sizes, vector in ((TileSizes(128, 16, 8), 4), (TileSizes(64, 16, 16), 4),
                          (TileSizes(32, 16, 32), 2), (TileSizes(64, 8, 8), 2),
                          (TileSizes(128, 16, 8), 1), (TileSizes(32, 32, 32), 1),
                          (TileSizes(128, 16, 8, 1, 256), 4),
                          (TileSizes(128, 16, 8, 1, 256), 1),
                          (TileSizes(64, 8, 8, 1, 128), 2),
                          (TileSizes(64, 16, 8, 1, 128), 4)):
        assert not sizes.problem(), sizes
        i, j = placements(sizes, vector)
        assert offsets_problems(sizes.threads, i, j, sizes.rows, sizes.tile) == [], sizes
    sizes = TileSizes(128, 16, 8, 1, 256)
    i, j = placements(sizes, 4)
    assert offsets_problems(16, i, replace(j, stride=16), 256, 128)
    assert offsets_problems(16, replace(i, vector=2), j, 256, 128)
    assert offsets_problems(16, i, j, 256, 256)


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
    tile = (plan.sizes.rows, plan.tile)
    assert skip_problems(model, plan.output_statement, plan.i, plan.j, tile, right) == []
    wrong = right.intersect_params(isl.Set("[pc_i0, pc_j0] -> { : pc_i0 < pc_j0 }"))
    assert skip_problems(model, plan.output_statement, plan.i, plan.j, tile,
                         wrong) == ["a tile the blocks skip holds an output"]


def test_the_validator_rejects_a_full_tile_with_points_outside_the_outputs():
    """The full tiles (run without a check per output) of covariance's triangle are
    those above the diagonal; counting the diagonal's tiles full is refused, as is a
    tile past the outputs' last column (511). The plan assumes nothing of the int
    arguments' signs (transform._signs): n, which no output depends on, is in no test."""
    import islpy as isl
    from polycoal.model.isl_c import condition_to_c
    from polycoal.optimize.products import full_set
    from polycoal.validate.tiles import full_problems
    _, result, _ = _transformed("covariance", ("M=512", "N=48"),
                                (("", 128, 16, 8, 1, 256),))
    d = next(x for x in result.decisions if x.kernel == "covar_kernel")
    plan, model = d.generated.tiles, d.analysis.model
    right, tile = full_set(model, plan), (plan.sizes.rows, plan.tile)
    assert full_problems(model, plan.output_statement, plan.i, plan.j, tile, right) == []
    assert "(pc_j0 >= (pc_i0 + 255))" in condition_to_c(right)
    assert condition_to_c(right) in d.generated.text
    assert not model.signed and " n " not in str(right).split("->")[1]
    for wrong in ("[pc_i0, pc_j0] -> { : 0 <= pc_i0 <= pc_j0 <= 384 }",
                  "[pc_i0, pc_j0] -> { : 0 <= pc_i0 and pc_i0 + 255 <= pc_j0 <= 512 }"):
        assert full_problems(model, plan.output_statement, plan.i, plan.j, tile,
                             isl.Set(wrong)) == ["a tile run as full holds a point that "
                                                 "is not an output"]


def _wrong_sum(text: str, start: str, after: str) -> str:
    """The text with a wrong term added at the first update after `after`, itself after
    `start`."""
    at = text.index("pc_acc[pc_a][pc_b] += ", text.index(after, text.index(start)))
    return text[:at] + "pc_acc[pc_a][pc_b] += 1.0f; " + text[at:]


# the path of a full tile in a kernel running both, and the clamped path after it
FULL_PATH, CLAMPED_PATH = "if (pc_full) {", "        continue;\n      }\n"


def test_full_tiles_and_the_others_take_their_own_paths():
    """Tiles in warps: a full tile (in the ranges, whole chunks, aligned) runs without
    clamping, the others clamped, in one kernel. A wrong sum on either path is caught
    where it has work (at 512 x 256 x 64 every tile is full, at a reduction of 69 none
    is) and only there: each tile takes its own path."""
    from dataclasses import replace
    for nk, sizes in ((64, (128, 16, 8, 1, 256)), (69, (128, 16, 8, 1, 256)),
                      (64, (128, 16, 8, 2, 128))):
        program, result, options = _transformed("gemm", ("NI=512", "NJ=256", f"NK={nk}"),
                                                (("",) + sizes,))
        assert "gemm_kernel__pc_full" not in result.text
        values = {"ni": 512, "nj": 256, "nk": nk}
        assert all(v.ok for v in validate_cpu(program, result, options, values, seed=3))
        for path, caught in ((FULL_PATH, nk == 64), (CLAMPED_PATH, nk != 64)):
            bad = replace(result, text=_wrong_sum(result.text, "gemm_kernel(", path))
            verdicts = validate_cpu(program, bad, options, values, seed=3)
            assert all(v.ok for v in verdicts) != caught, (nk, path, sizes)


def test_a_triangles_diagonal_tiles_run_as_full_tiles():
    """Square tiles in warps over covariance's triangle at 256: its three tiles holding
    outputs lie inside the ranges, the two on the diagonal too: all take the full path
    (each element of a diagonal tile checked), none the clamped one."""
    from dataclasses import replace
    program, result, options = _transformed("covariance", ("M=256", "N=48"),
                                            (("", 128, 16, 8, 2, 128),))
    values = {"m": 256, "n": 48}
    d = next(x for x in result.decisions if x.kernel == "covar_kernel")
    assert "const bool pc_all" in d.generated.text
    gemm = _transformed("gemm", ("NI=256", "NJ=256", "NK=64"), (("", 128, 16, 8, 2, 128),))
    assert "const bool pc_all" not in gemm[1].decisions[0].generated.text   # a rectangle
    assert all(v.ok for v in validate_cpu(program, result, options, values, seed=5))
    for path, caught in ((FULL_PATH, True), (CLAMPED_PATH, False)):
        bad = replace(result, text=_wrong_sum(result.text, "covar_kernel(", path))
        verdicts = validate_cpu(program, bad, options, values, seed=5)
        assert all(v.ok for v in verdicts) != caught, (path, [v.message for v in verdicts])


@pytest.mark.parametrize("guard, loop, values", [
    # a bound of coefficient 2 on i, below and above (dim_bounds reads neither: the tiles'
    # range was wider than the outputs' and a full tile wrote rows that are none)
    ("(i < NI) && (j < NJ) && (2 * i >= nj) && (i >= 3)", "", {"nj": 270}),
    ("(i < NI) && (j < NJ) && (2 * i < nj)", "", {"nj": 270}),
    # an empty range of i whose tiles start below its first value (1 rounded down to 0)
    ("(i >= 1) && (i < NI) && (j < NJ) && (i < ni)", "", {"ni": 1}),
    # a bound of coefficient 2 on k (every k of the loop was summed)
    ("(i < NI) && (j < NJ)", " if (2 * k < nk)", {"nk": 64})])
def test_ranges_other_than_their_bounds_are_not_tiled_wrong(guard, loop, values, tmp_path):
    """GEMM with its guard or its reduction loop respelled: every tile form that runs
    computes what the original does (or the product is refused)."""
    source = (POLYBENCH / "gemm" / "gemm.cu").read_text()
    source = source.replace("if ((i < _PB_NI) && (j < _PB_NJ)) {", f"if ({guard}) {{")
    source = source.replace("for (k = 0; k < _PB_NK; k++)\n      c[i * NJ + j] +=",
                            f"for (k = 0; k < _PB_NK; k++){loop}\n      c[i * NJ + j] +=")
    assert guard in source and (not loop or loop in source)
    for folder in ("gemm", "common"):                 # its includes beside it
        shutil.copytree(POLYBENCH / folder, tmp_path / folder)
    (tmp_path / "gemm" / "gemm.cu").write_text(source)
    for sizes in (("", 128, 16, 8, 2, 128), ("", 128, 16, 8, 1, 256), ("", 32, 16, 16, 0)):
        options = TransformOptions(preprocessor=PreprocessorOptions(
            defines=("NI=300", "NJ=256", "NK=64")), sizes=(sizes,))
        program = read_program(str(tmp_path / "gemm" / "gemm.cu"), options.preprocessor)
        result = transform_program(program, options)
        assert not any(d.code == "missing-header" for d in program.diagnostics)
        run = {"ni": 300, "nj": 256, "nk": 64, **values}
        for v in validate_cpu(program, result, options, run, seed=11):
            assert v.ok, (sizes, v.kernel, v.message)


def test_factors_the_same_for_every_term_are_staged():
    """alpha * a[i][k] * b[k][j]: alpha * a[i][k] is staged (one multiply per element and
    chunk, the same product the original rounds); not where the factor is assigned in
    the kernel, of another type (a double literal on floats), or differs between two
    occurrences of the operand."""
    from pycparser import c_ast, c_parser
    from polycoal.codegen.product import staged_factors
    from polycoal.model.accumulation import text

    def factors(expression, scalars={"alpha", "beta"}, element="float"):
        node = c_parser.CParser().parse(f"void f() {{ x = {expression}; }}").ext[0] \
            .body.block_items[0].rvalue
        found = staged_factors([node], {"a[i][k]": element, "b[k][j]": element},
                               {element: scalars})
        return {ref: text(n) for ref, n in found.items()}
    assert factors("alpha * a[i][k] * b[k][j]") == {"a[i][k]": "alpha * a[i][k]"}
    assert factors("a[i][k] * alpha * b[k][j]") == {"a[i][k]": "a[i][k] * alpha"}
    assert factors("alpha * beta * a[i][k] * b[k][j]") == \
        {"a[i][k]": "(alpha * beta) * a[i][k]"}
    assert factors("alpha * a[i][k] * (2.0f * b[k][j])") == \
        {"a[i][k]": "alpha * a[i][k]", "b[k][j]": "2.0f * b[k][j]"}
    assert factors("alpha * (a[i][k] * b[k][j])") == {}
    assert factors("alpha * a[i][k] * b[k][j]", scalars=set()) == {}
    assert factors("2.0 * a[i][k] * b[k][j]") == {}
    assert factors("2.0 * a[i][k] * b[k][j]", element="double") == \
        {"a[i][k]": "2.0 * a[i][k]"}
    assert factors("alpha * a[i][k] * b[k][j] + a[i][k] * b[k][j]") == {}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_tall_tiles_compile(tmp_path):
    """GEMM and SYRK at 2048 (tall tiles chosen: full tiles and the others in one kernel),
    covariance at 8192 (square tiles in warps), SYR2K (four operands: the full tiles in
    a kernel of their own)."""
    for name, defines in (("gemm", ("NI=2048", "NJ=2048", "NK=2048")),
                          ("syrk", ("NI=2048", "NJ=2048")),
                          ("covariance", ("M=8192", "N=8192")),
                          ("syr2k", ("NI=2048", "NJ=2048"))):
        _, result, _ = _transformed(name, defines)
        assert (name == "syr2k") == ("__pc_full<<<" in result.text), name
        assert FULL_PATH in result.text or name == "syr2k", name
        (tmp_path / "out.cu").write_text(result.text)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", "-I", str(POLYBENCH / name),
                            "-I", str(POLYBENCH / "common"), str(tmp_path / "out.cu"),
                            "-o", str(tmp_path / "out.o")], capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr[-2000:])


SYR2K_PROGRAM = """\
#include <cstdio>
#define NI 270
#define NJ 64
__global__ void syr2k_rows(int ni, int nj, float alpha, float beta, const float *a,
                           const float *b, float *c)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < ni && j < ni) {
    c[i * NI + j] *= beta;
    for (int k = 0; k < nj; k++)
      c[i * NI + j] += alpha * a[i * NJ + k] * b[j * NJ + k] + alpha * b[i * NJ + k] * a[j * NJ + k];
  }
}
int main()
{
  static float a[NI * NJ], b[NI * NJ], c[NI * NI];
  for (int n = 0; n < NI * NJ; n++) { a[n] = (n % 13) / 13.0f; b[n] = (n % 7) / 7.0f - 0.5f; }
  for (int n = 0; n < NI * NI; n++) c[n] = (n % 5) / 5.0f;
  float *da, *db, *dc;
  cudaMalloc(&da, sizeof a); cudaMalloc(&db, sizeof b); cudaMalloc(&dc, sizeof c);
  cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice);
  syr2k_rows<<<dim3((NI + 31) / 32, (NI + 7) / 8), dim3(32, 8)>>>(NI, NJ, 1.5f, 0.5f, da, db, dc);
  cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int n = 0; n < NI * NI; n++) sum += c[n] * (1 + n % 3);
  printf("%.6f %.6f %.6f %.6f\\n", sum, c[0], c[NI * NI - 1], c[129 * NI + 200]);
  return 0;
}
"""


def test_buffers_past_48_kib_are_dynamic_shared_memory(tmp_path):
    """SYR2K's four operands in tall tiles take 50,176 bytes: the kernels declare them in
    the launch's dynamic shared memory, the launches raise each kernel's limit first and
    pass the bytes; the whole program runs on the CPU runtime (which refuses a launch past
    48 KiB whose limit was not raised) and prints what the original prints; nvcc compiles
    it."""
    from conftest import compile_sm90, cpu_runner, runs_alike
    source = tmp_path / "syr2k_rows.cu"
    source.write_text(SYR2K_PROGRAM)
    options = TransformOptions(sizes=(("", 128, 16, 8, 1, 256),))
    result = transform_program(read_program(str(source), options.preprocessor), options)
    assert [d.action for d in result.decisions] == ["product"]
    text = result.text
    assert text.count("extern __shared__ __align__(16) unsigned char pc_dynamic[];") == 2
    for kernel in ("syr2k_rows__pc_full", "syr2k_rows__pc_checked"):   # the copy launched
        raised = text.index(f"(void)cudaFuncSetAttribute({kernel}, "
                            "cudaFuncAttributeMaxDynamicSharedMemorySize, 50176);")
        assert raised < text.index(f"{kernel}<<<", raised)
    assert text.count(", 50176>>>(") == 2
    runs_alike(SYR2K_PROGRAM, text, tmp_path, tolerance=1e-5)
    unraised = text.replace("(void)cudaFuncSetAttribute(", "(void)sizeof(")
    run, _ = cpu_runner().compile_and_run(unraised)
    assert run is not None and run.failure == "invalid-launch", run and run.stderr
    if shutil.which("nvcc"):
        out = tmp_path / "out.cu"
        out.write_text(text)
        compile_sm90(shutil.which("nvcc"), out)


def test_a_kernel_with_dynamic_shared_memory_runs_on_the_cpu_runtime():
    """`extern __shared__` arrays (every one of a kernel at the same address, as on the
    device) in a program's own kernel: a block sum whose partial sums live in dynamic
    shared memory, aliased as ints and floats."""
    from conftest import cpu_runner
    text = """\
#include <cstdio>
__global__ void block_sums(const float *in, float *out, int n)
{
  extern __shared__ float partial[];
  extern __shared__ __align__(16) int counted[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0] + (counted == (int *)partial ? 1000.0f : 0.0f);
}
int main()
{
  float h[300], r[3], *d, *o;
  for (int i = 0; i < 300; i++) h[i] = i;
  cudaMalloc(&d, sizeof h); cudaMalloc(&o, sizeof r);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  block_sums<<<3, 128, 128 * sizeof(float)>>>(d, o, 300);
  cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost);
  printf("%.1f %.1f %.1f\\n", r[0], r[1], r[2]);
  return 0;
}
"""
    run, error = cpu_runner().compile_and_run(text)
    assert run is not None and run.failure is None, error
    assert run.stdout.split() == [f"{1000 + sum(range(a, min(a + 128, 300))):.1f}"
                                  for a in (0, 128, 256)]


def test_statements_before_the_loop_work_on_the_accumulator():
    """GEMM's `c[i][j] *= beta` before its sum: the element is loaded into the
    accumulator and scaled there, stored once after the sum (no store and read back);
    correlation's statements run once per row write its output array too (the
    diagonal), so its prologue keeps the store. Both bit-identical on the CPU."""
    for name, defines, values in (("gemm", ("NI=100", "NJ=90", "NK=70"),
                                   {"ni": 100, "nj": 90, "nk": 70}),
                                  ("correlation", ("M=100", "N=90"), {"m": 100, "n": 90})):
        program, result, options = _transformed(name, defines)
        d = next(d for d in result.decisions if d.action == "product")
        body = " ".join(d.generated.text.split())
        if name == "gemm":
            assert "pc_acc[pc_a][pc_b] *= (beta);" in body
            assert "*= (beta)" not in body.replace("pc_acc[pc_a][pc_b] *= (beta)", "")
        else:
            assert "symmat[(pc_j + 100 * pc_i)] = 0.0f; pc_acc[pc_a][pc_b] = symmat[" in body
        verdicts = validate_cpu(program, result, options, values, seed=3)
        assert verdicts and all(v.ok and all(a.max_abs == 0.0 for a in v.arrays)
                                for v in verdicts), [(v.kernel, v.message) for v in verdicts]
