"""No code that cannot run (issue 32, item 5): the dim3 values host code builds are
evaluated component by component (frontend/launches.py: `dim3 threads(BLOCK)` has
y = z = 1 whatever BLOCK is), and a transformed copy is emitted only where some launch
can take it: a permuted copy that needs block.y > 1 where every block has y = 1, or a
checked copy whose condition every launch's known arguments fail, is not made (reason
code `no-launch-takes-copy`); checks the known values always pass are not written, and a
launch that never takes the copy keeps its text (testsuite/fixtures/launch_shapes)."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES, compile_sm90, runs_alike
from polycoal.frontend import read_program
from polycoal.optimize.permutation import launch_takes, open_checks
from polycoal.transform import TransformOptions, transform_program

SHAPES = FIXTURES / "launch_shapes"
ONE_DIM = SHAPES / "one_dim_blocks.cu"
TWO_DIM = SHAPES / "two_dim_blocks.cu"
BAND = SHAPES / "band_launches.cu"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

HOST = """__global__ void k(float *a, int n) { a[threadIdx.x] = n; }
static unsigned file_threads;
void with_params(float *a, int n, dim3 grid, dim3 block, int threads) {
  k<<<grid, block>>>(a, n);
  k<<<n / threads, threads>>>(a, n);
}
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  int bs = atoi(argv[2]);
  float *a;
  dim3 parens(bs);
  k<<<n, parens>>>(a, n);
  dim3 braces{bs};
  k<<<n, braces>>>(a, n);
  dim3 call = dim3(bs, 2);
  k<<<n, call>>>(a, n);
  dim3 listed = {bs, 4};
  k<<<n, listed>>>(a, n);
  dim3 fields;
  fields.x = bs;
  k<<<n / 256, fields>>>(a, n);
  dim3 grid, block(8, 8);
  grid.x = 32;
  k<<<grid, block>>>(a, n);
  unsigned t = bs * 2;
  k<<<n, t>>>(a, n);
  dim3 some(bs);
  if (n > 4) some.y = 4;
  k<<<n, some>>>(a, n);
  dim3 looped(bs);
  for (int i = 0; i < 3; i++) { k<<<n, looped>>>(a, n); looped.y *= 2; }
  dim3 handed(bs);
  setup(handed);
  k<<<n, handed>>>(a, n);
  dim3 copied = block;
  k<<<n, dim3(copied.y)>>>(a, n);
  { const dim3 g2 = dim3(n), b2 = dim3(dim3(16, 16)); k<<<g2, b2>>>(a, n); }
  k<<<n, file_threads>>>(a, n);
  return 0;
}
"""

# (block, grid) of each launch of HOST, in order; None: known only at run time
HOST_SHAPES = [
    ((None, None, None), (None, None, None)),   # dim3 parameters: unknown
    ((None, 1, 1), (None, 1, 1)),               # int parameter, `n / threads`
    ((None, 1, 1), (None, 1, 1)),               # dim3 parens(bs)
    ((None, 1, 1), (None, 1, 1)),               # dim3 braces{bs}
    ((None, 2, 1), (None, 1, 1)),               # = dim3(bs, 2)
    ((None, 4, 1), (None, 1, 1)),               # = {bs, 4}
    ((None, 1, 1), (None, 1, 1)),               # dim3 fields; fields.x = bs;
    ((8, 8, 1), (32, 1, 1)),                    # dim3 grid, block(8, 8); grid.x = 32
    ((None, 1, 1), (None, 1, 1)),               # unsigned t
    ((None, None, 1), (None, 1, 1)),            # y set on some paths only
    ((None, None, None), (None, 1, 1)),         # changed later in the loop around it
    ((None, None, None), (None, 1, 1)),         # handed to a function (by reference?)
    ((8, 1, 1), (None, 1, 1)),                  # dim3(copied.y)
    ((16, 16, 1), (None, 1, 1)),                # const dim3 g2 = dim3(n), b2 = ...
    ((None, 1, 1), (None, 1, 1)),               # an unsigned of file scope
]


def _transform(path, text=None, **options):
    program = read_program(str(path), TransformOptions().preprocessor, text=text)
    return program, transform_program(program, TransformOptions(**options))


def _decisions(result):
    return {d.kernel: d for d in result.decisions}


def test_each_component_the_host_code_fixes_is_known(tmp_path):
    path = tmp_path / "host.cu"
    path.write_text(HOST)
    program = read_program(str(path), TransformOptions().preprocessor)
    assert [(l.block_parts, l.grid_parts) for l in program.launches] == HOST_SHAPES


def test_a_check_is_decided_by_the_known_components():
    swap = {"x": "y", "y": "x", "z": "z"}
    assert launch_takes(swap, (None, 1, 1), (None, None, 1)) is False
    assert launch_takes(swap, (None, 16, 1), (4, None, 1)) is True
    assert launch_takes(swap, (None, None, 1), (4, None, 1)) is None
    assert open_checks(swap, (None, 16, 1), (None, None, 1), "b", "g") == ["g.x <= 65535"]
    assert open_checks(swap, (None, None, 1), (70000, None, 1), "b", "g") == ["b.y > 1"]


@pytest.mark.parametrize("kernel", ["by_parens", "by_braces", "by_dim3_call", "by_list",
                                    "by_fields", "by_int"])
def test_a_kernel_launched_with_one_dimensional_blocks_stays_byte_identical(kernel):
    """Its references prefer y as x (the unit stride), but every block has y = 1: no
    launch could take a permuted copy. z, which no reference moves along, is no reason
    and is not named."""
    program, result = _transform(ONE_DIM, kernel=kernel)
    d = _decisions(result)[kernel]
    assert d.action == "unchanged" and d.code == "no-launch-takes-copy", d.reason
    assert "every launch's block has y = 1, so a copy with y as the new x" in d.reason
    assert "could never run" in d.reason and "z = 1" not in d.reason
    assert result.text == program.text


def test_an_axis_no_reference_moves_along_is_no_reason_for_a_copy():
    """one_axis reads along x only: y and z cost nothing as x only because a warp laid
    along them would repeat one address; with its block one-dimensional, x is the best
    order (a copy permuted to y was made before the block's y = 1 was known)."""
    program, result = _transform(ONE_DIM, kernel="one_axis")
    d = _decisions(result)["one_axis"]
    assert d.action == "unchanged" and d.code == "best-axis-order", d.reason
    assert result.text == program.text


def test_a_dim3_received_as_a_parameter_keeps_its_checked_copy():
    """by_param's launch sees `dim3 block` as a parameter: its shape is not guessed from
    the callers, so the copy stays, checked at run time."""
    program, result = _transform(ONE_DIM, kernel="by_param")
    d = _decisions(result)["by_param"]
    assert d.action == "permuted" and d.permutation.guarded, d.reason
    assert "by_param__pc_permuted<<<" in result.text and "if (pc_block0." in result.text


def test_the_whole_program_compiles_and_runs_like_the_original(tmp_path):
    program, result = _transform(ONE_DIM)
    codes = {d.kernel: d.code for d in result.decisions}
    assert sum(c == "no-launch-takes-copy" for c in codes.values()) == 6, codes
    assert codes["one_axis"] == "best-axis-order"
    assert result.text.count("__pc_permuted(") == 1
    _builds_and_runs(program.text, result.text, tmp_path, [(), ("33", "20", "16")])


def test_a_two_dimensional_launch_still_gets_its_copy(tmp_path):
    """mixed: the launch with a 1-D block keeps its text (it can never take the copy),
    the launch with a run-time 2-D block checks it; known_y: every check decided, the
    kernel permuted in place; partly_known: only the grid's check is left."""
    program, result = _transform(TWO_DIM)
    d = _decisions(result)
    assert all(x.action == "permuted" for x in d.values()), [x.reason for x in d.values()]
    text = result.text
    flat = "mixed<<<dim3((rows + bx - 1) / bx, cols), flat>>>(dA, dw, rows, cols);"
    assert flat in program.text and flat in text
    assert "line 56 never fits the permuted axes" in d["mixed"].reason
    assert "if (pc_block0.y > 1 && pc_grid0.x <= 65535) {" in text
    assert "mixed__pc_permuted<<<dim3(pc_grid0.y, pc_grid0.x, pc_grid0.z)" in text
    assert not d["known_y"].permutation.guarded and "known_y__pc_permuted" not in text
    assert "known_y<<<dim3(pc_grid0.y, pc_grid0.x, pc_grid0.z)" in text
    assert "if (pc_grid0.x <= 65535) {\n        partly_known__pc_permuted<<<" in text
    # by = 1 takes the fallback of the checked launch; a wide grid fits all the same
    _builds_and_runs(program.text, text, tmp_path, [(), ("24", "32", "1"), ("70", "8", "4")])


def test_a_checked_copy_every_launch_fails_is_not_made(tmp_path):
    """never_fits: m = 80 and m = 100 both fail `m <= 64`; some_fit: m = 48 runs the
    copy without a check, m from argv is checked at run time."""
    program, result = _transform(BAND)
    d = _decisions(result)
    assert d["never_fits"].action == "unchanged", d["never_fits"].reason
    assert d["never_fits"].code == "no-launch-takes-copy"
    assert "m <= 64" in d["never_fits"].reason
    assert "never_fits__pc_checked" not in result.text
    assert d["some_fit"].action == "restructured" and d["some_fit"].assumption is not None
    assert "line 53 always passes it" in d["some_fit"].reason
    text = result.text
    _, fixed, checked = text.split("was some_fit<<<")
    assert "some_fit__pc_checked<<<" in fixed and "if (" not in fixed
    assert "if ((((long long)(int)(m)) <= 64)) {" in checked
    _builds_and_runs(program.text, text, tmp_path, [(), ("64",), ("90",)])


def _builds_and_runs(original: str, output: str, directory, argvs) -> None:
    if shutil.which("nvcc"):
        out = directory / "out.cu"
        out.write_text(output)
        compile_sm90("nvcc", out)
    for argv in argvs:
        runs_alike(original, output, directory, argv=argv)
