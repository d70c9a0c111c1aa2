"""Never slower (issue 14, item 3): a thread-axis permutation the global-memory ILP
chooses is made only where the whole block's cost (global sectors, shared-memory
wavefronts, warps issued under thread-index guards) falls; a kernel that stages tiles
in shared memory and is already well written stays byte-identical."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import FIXTURES, runs_alike
from polycoal.analysis.warp_cost import block_cost, shared_wavefronts
from polycoal.decisions import TransformOptions

PROGRAM = FIXTURES / "styles" / "shared_tiles.cu"
IDENTITY = {"x": "x", "y": "y", "z": "z"}
SWAP = {"x": "y", "y": "x", "z": "z"}


@pytest.mark.parametrize("stride_words,size,expected", [
    (1, 4, 1),        # consecutive words: one per bank
    (0, 4, 1),        # one word for the warp: a broadcast
    (2, 4, 2),        # two lanes per bank
    (32, 4, 32),      # a column of an unpadded 32-wide tile: every lane in one bank
    (33, 4, 1),       # the padded tile
    (1, 16, 4),       # a float4 per lane: 512 bytes, four wavefronts, no conflict
    (1, 8, 2),        # a double per lane
])
def test_shared_wavefronts_count_bank_conflicts(stride_words, size, expected):
    offsets = [lane * stride_words * 4 for lane in range(32)]
    if size > 4:
        offsets = [lane * size for lane in range(32)]
    assert shared_wavefronts(offsets, size) == expected


def _decisions(options=TransformOptions()):
    from polycoal.frontend import read_program
    from polycoal.transform import transform_program
    program = read_program(str(PROGRAM), options.preprocessor)
    result = transform_program(program, options)
    return program, result, {d.kernel: d for d in result.decisions}


def test_the_block_cost_sees_what_the_permutation_does_to_shared_memory():
    _, _, d = _decisions()
    smooth = d["smooth_tile"].analysis.model
    before, after = block_cost(smooth, IDENTITY, (32, 8, 1)), block_cost(smooth, SWAP, (32, 8, 1))
    assert after.global_sectors < before.global_sectors / 4     # the reads coalesce
    assert after.shared_wavefronts > 4 * before.shared_wavefronts  # the sweep conflicts
    assert after.total > before.total
    scale = d["scale_tile"].analysis.model
    before, after = block_cost(scale, IDENTITY, (32, 8, 1)), block_cost(scale, SWAP, (32, 8, 1))
    assert after.total * 2 < before.total and not after.unpriced
    # a guard on threadIdx.x: the tree's `tx < s` runs in every warp along x
    tree = d["tile_row_max"].analysis.model
    assert block_cost(tree, IDENTITY, (32, 8, 1)).issues > 0


def test_well_written_and_costly_to_permute_tile_kernels_stay_byte_identical(tmp_path):
    program, result, d = _decisions()
    assert d["tile_row_max"].code == "best-axis-order"
    assert d["tile_row_max_shfl"].code == "warp-dependent"
    smooth = d["smooth_tile"]
    assert smooth.action == "unchanged" and smooth.code == "small-gain", smooth.reason
    assert "predicts slower" in smooth.reason and "shared wavefronts" in smooth.reason
    assert d["scale_tile"].action == "permuted", d["scale_tile"].reason
    for k in program.kernels:
        if k.name != "scale_tile":
            assert program.text[k.span.start:k.span.end] in result.text
    assert "smooth_tile__pc" not in result.text
    runs_alike(program.text, result.text, tmp_path, argv=("96", "160"))
    # what the price prevented: the permutation the ILP alone makes, which also runs alike
    _, forced, f = _decisions(TransformOptions(price_on_chip=False))
    assert f["smooth_tile"].action == "permuted"
    runs_alike(program.text, forced.text, tmp_path, argv=("96", "160"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_the_output_compiles(tmp_path):
    _, result, _ = _decisions()
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", str(out), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_run_time_block_with_shared_memory_is_an_uncertain_gain():
    from polycoal.frontend import read_program
    from polycoal.transform import transform_program
    text = PROGRAM.read_text().replace("dim3 block(TX, TY);",
                                       "dim3 block(argc > 3 ? atoi(argv[3]) : TX, TY);")
    options = TransformOptions()
    program = read_program(str(PROGRAM), options.preprocessor, text=text)
    d = {x.kernel: x for x in transform_program(program, options).decisions}
    assert d["scale_tile"].code == "uncertain-gain", d["scale_tile"].reason
    assert "known only at run time" in d["scale_tile"].reason
