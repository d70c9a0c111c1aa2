"""Int arguments whose sign only the launches know (transform._signs): the model takes
them non-negative (KernelModel.signed), so a kernel generated under that context is
legal only where they are. A kernel whose change also holds with nothing assumed of the
signs is planned so; any other runs its change where each launch checks the signs, the
original elsewhere. The class: thread ranges that start past an argument (`j > k`,
`i >= k + 1`, a host loop's value that may be negative), in every generated form."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, runs_alike
from polycoal.frontend import read_program
from polycoal.frontend.launches import known_values
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import TransformOptions, transform_program

FIXTURE = FIXTURES / "negative_offset.cu"


def _transformed(text: str, tmp_path, **options):
    path = tmp_path / "in.cu"
    path.write_text(text)
    program = read_program(str(path), PreprocessorOptions())
    return program, transform_program(program, TransformOptions(**options))


def _decision(result, name):
    return next(d for d in result.decisions if d.kernel == name)


@pytest.fixture(scope="module")
def block_form(tmp_path_factory):
    """The fixture with its column kernel in the block-per-32-columns form (asked for:
    the model keeps it at this small size)."""
    return _transformed(FIXTURE.read_text(), tmp_path_factory.mktemp("signs"),
                        reduction="block")


def test_a_column_kernel_past_an_argument_runs_where_each_launch_checks_it(block_form):
    program, result = block_form
    d = _decision(result, "columns_past")
    assert d.action == "columns", d.reason
    assert d.assumption is not None and d.assumption.constraint == "k >= 0"
    assert d.assumption.purpose == "non-negative int arguments"
    assert "k >= 0 (non-negative int arguments)" in d.reason
    assert d.emitted == "columns_past__pc_checked"
    # the original stays for the launches where k < 0: both launches (k from argv, k
    # from a host loop) test it on the host
    assert result.text.count("columns_past__pc_checked<<<") == 2
    assert result.text.count("if ((((long long)(int)(k)) >= 0))") == 1
    assert result.text.count("if ((((long long)(int)(pc_arg2)) >= 0))") == 1   # t * 31


@pytest.mark.parametrize("argv", [(), ("-1",), ("0",), ("5",), ("40", "-3"), ("-299", "0")])
def test_the_checked_program_runs_as_written_for_every_sign(block_form, tmp_path, argv):
    """k from argv (default -60) and a host loop from t = -3 (k = -93 .. 62): the same
    numbers as the original on the CPU runtime (which faults on a write out of bounds:
    the column form run with k < 0 writes s[k + 1 ..]), m < 0 included."""
    program, result = block_form
    runs_alike(program.text, result.text, tmp_path, argv=argv, tolerance=1e-6)


def test_a_change_that_holds_for_every_sign_is_made_without_a_check(block_form):
    """rows_past (`i >= k + 1`) is restructured by the plan that assumes nothing of k:
    no check on k, its rows from 0 with the guard kept; rows_upto's m is only an upper
    bound (its one check is its own race freedom, m <= 300)."""
    program, result = block_form
    d = _decision(result, "rows_past")
    assert d.action == "restructured" and d.assumption is None, d.reason
    assert not d.analysis.model.signed
    assert "pc_y >= (k + 1)" in d.generated.text
    upto = _decision(result, "rows_upto")
    assert upto.action == "restructured"
    assert upto.assumption is not None and upto.assumption.constraint == "m <= 300"
    assert upto.assumption.purpose == "race freedom"


def test_launches_that_pass_known_non_negative_values_need_no_check(tmp_path):
    """Every launch passes a literal: nothing to check, nothing planned twice."""
    text = FIXTURE.read_text().replace("(da, ds, k, M, N)", "(da, ds, 7, M, N)").replace(
        "(da, ds, t * 31, M, N)", "(da, ds, 12, M, N)")
    program, result = _transformed(text, tmp_path, reduction="block")
    d = _decision(result, "columns_past")
    assert d.action == "columns" and d.assumption is None, d.reason
    assert d.analysis.model.signed
    assert "__pc_checked" not in d.emitted
    runs_alike(program.text, result.text, tmp_path, tolerance=1e-6)


def test_a_launch_that_passes_a_negative_value_runs_the_original(tmp_path):
    """One launch passes -5 (its check decided on the host: the original, no test
    written), the other k from argv (checked)."""
    text = FIXTURE.read_text().replace("(da, ds, t * 31, M, N)", "(da, ds, -5, M, N)")
    program, result = _transformed(text, tmp_path, reduction="block")
    d = _decision(result, "columns_past")
    assert d.action == "columns" and d.assumption is not None, d.reason
    assert result.text.count("columns_past__pc_checked<<<") == 1
    runs_alike(program.text, result.text, tmp_path, tolerance=1e-6)
    runs_alike(program.text, result.text, tmp_path, argv=("3",), tolerance=1e-6)


def test_without_run_time_checks_the_kernel_is_kept(tmp_path):
    program, result = _transformed(FIXTURE.read_text(), tmp_path, reduction="block",
                                   runtime_checks=False)
    d = _decision(result, "columns_past")
    assert d.action == "unchanged" and d.code == "sign", d.reason
    assert "k are not negative" in d.reason
    assert "__pc_checked" not in result.text.split("int main")[0].split("rows_upto")[0]


def test_the_json_report_names_the_check(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "polycoal", "transform", "--reduction",
                           "block", str(FIXTURE), "-o", str(tmp_path / "out.cu"),
                           "--report", "json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    kernels = {k["name"]: k for k in json.loads(proc.stderr)["kernels"]}
    checks = kernels["columns_past"]["runtime_checks"]
    assert checks == [{"condition": "k >= 0", "kernel": "columns_past__pc_checked",
                       "why": "non-negative int arguments"}]


def test_the_output_compiles(block_form, tmp_path, nvcc):
    program, result = block_form
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    proc = subprocess.run([nvcc, "-arch=sm_90", "-c", str(out), "-o", str(out) + ".o"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# The program-level passes read kernels the kernel passes leave as written, so _signs
# never sees them: each models them with nothing assumed of the signs.
ARGUMENTS = FIXTURES / "negative_arguments.cu"


def test_a_host_loop_below_zero_keeps_its_launches(tmp_path):
    """step's trips t = -20 .. -1 read A[-t], which the trip -t writes in another thread:
    the signed model sees no instance at all (t >= 0), the loop was fused and printed
    9305.21 for 201701.49. A loop from 0 (no trip runs a statement) is fused still."""
    program, result = _transformed(ARGUMENTS.read_text(), tmp_path)
    kept = [d for d in result.diagnostics if d.code == "trips-kept"]
    assert len(kept) == 1 and "A[-t]" in kept[0].message, kept
    assert "step__pc_trips" not in result.text
    for argv in ((), ("-3",), ("-63", "0"), ("4",)):
        runs_alike(program.text, result.text, tmp_path, argv=argv, tolerance=1e-6)
    positive = ARGUMENTS.read_text().replace("for (int t = lo; t < 0; t++)",
                                             "for (int t = 0; t < 40; t++)")
    program, result = _transformed(positive, tmp_path)
    assert "step__pc_trips<<<" in result.text
    runs_alike(program.text, result.text, tmp_path, tolerance=1e-6)


@pytest.mark.parametrize("argv", [(), ("0", "-5"), ("0", "3"), ("0", "-4000")])
def test_a_shared_tile_loads_for_a_negative_offset(tmp_path, argv):
    """smooth's guard `i + off >= 0` under the signed model put `off >= 0` into the
    tile's load guard: for off < 0 nothing was loaded (20.34 for 4095.08)."""
    from polycoal.model.memory_spec import load_spec
    from polycoal.placement import place_program
    program = read_program(str(ARGUMENTS), PreprocessorOptions())
    placed = place_program(program, load_spec(), {("smooth", "in"): "shared"})
    assert any(k.kernel == "smooth" and k.applied for k in placed.kernels)
    assert "pc_tile_in[" in placed.text and "(off >= 0)" not in placed.text
    runs_alike(program.text, placed.text, tmp_path, argv=argv, tolerance=1e-6)


def test_an_unsigned_host_value_is_checked_as_the_kernel_receives_it(tmp_path):
    """k held unsigned on the host and passed to `int k`: the kernel receives -60, so
    the check converts it to the parameter's type first (as long long alone it read
    4294967236 >= 0 and ran the column form, writing s[-59])."""
    text = FIXTURE.read_text().replace("    int k = argc > 1 ? atoi(argv[1]) : -60;",
                                       "    unsigned k = (unsigned)(argc > 1 ? atoi(argv[1]) : -60);")
    assert "unsigned k" in text
    program, result = _transformed(text, tmp_path, reduction="block")
    assert "((long long)(int)(k)) >= 0" in result.text
    for argv in ((), ("5",), ("-1",)):
        runs_alike(program.text, result.text, tmp_path, argv=argv, tolerance=1e-6)


def test_an_argument_named_like_the_launch_geometry_is_kept(tmp_path):
    """The model's names for the geometry (nthreads_x, blockDim_y, ...) are exact: an
    argument `nthreads_k` is an argument (its sign checked like any other), and one
    named `nthreads_x` leaves its kernel as written."""
    text = FIXTURE.read_text()
    for name, kept in (("nthreads_k", False), ("nthreads_x", True)):
        renamed = text.replace("float *s, int k, int m", f"float *s, int {name}, int m") \
            .replace("j > k", f"j > {name}")
        assert f"int {name}" in renamed and f"j > {name}" in renamed
        program, result = _transformed(renamed, tmp_path, reduction="block")
        d = _decision(result, "columns_past")
        if kept:
            assert d.action == "unchanged" and d.code == "reserved-name", d.reason
        else:
            assert d.action == "columns" and d.assumption is not None, d.reason
            assert d.assumption.constraint == f"{name} >= 0"
        runs_alike(program.text, result.text, tmp_path, tolerance=1e-6)


COUNTED = """
#include <stdio.h>

int step(int &k) { k -= 3; return k; }
int k;
void shift() { k -= 9; }

__global__ void scale(float *a, int n, int k)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > k && j < n)
        a[j] = a[j] * 0.5f;
}

int main(int argc, char **argv)
{
    int n = 1024, lo = argc > 1 ? atoi(argv[1]) : 0;
    float *a;
    cudaMalloc(&a, n * sizeof(float));
    LOOP
    return 0;
}
"""


@pytest.mark.parametrize("loop, counted", [
    ("for (int k = 0; k < n; k++) { scale<<<n / 256, 256>>>(a, n, k); }", True),
    ("for (int k = 0; k < n; k++) scale<<<n / 256, 256>>>(a, n, k);", False),   # braces
    ("for (int k = 2; k <= n; ++k) { scale<<<n / 256, 256>>>(a, n, k); }", True),
    ("int k; for (k = 0; k < n; k += 4) { scale<<<n / 256, 256>>>(a, n, k); }", True),
    ("int j, k = 5; for (k = 0; k < n; k++) { scale<<<n / 256, 256>>>(a, n, k); }", True),
    ("int k; int *p = &k; for (k = 0; k < n; k++) { *p = -1; scale<<<1, 256>>>(a, n, k); }",
     False),
    ("int k; int &r = k; for (k = 0; k < n; k++) { r = -1; scale<<<1, 256>>>(a, n, k); }",
     False),
    ("int k; auto f = [&] { k = -1; }; for (k = 0; k < n; k++) { f(); "
     "scale<<<1, 256>>>(a, n, k); }", False),
    ("int k; step(k); for (k = 0; k < n; k++) { scale<<<1, 256>>>(a, n, k); }", False),
    ("for (k = 0; k < n; k++) { shift(); scale<<<1, 256>>>(a, n, k); }", False),   # global
    ("for (int k = -3; k < n; k++) scale<<<n / 256, 256>>>(a, n, k);", False),
    ("for (int k = lo; k < n; k++) scale<<<n / 256, 256>>>(a, n, k);", False),
    ("for (int k = n; k >= 0; k--) scale<<<n / 256, 256>>>(a, n, k);", False),
    ("for (int k = 0; k < n; k++) { scale<<<n / 256, 256>>>(a, n, k); k -= 9; }", False),
    ("for (int k = 0; k < n; k++) { int *p = &k; scale<<<n / 256, 256>>>(a, n, k); }",
     False),
    ("for (int k = 0; k < n; k += -2) scale<<<n / 256, 256>>>(a, n, k);", False),
    ("for (int k = 0; k < n; k++) { step(k); scale<<<n / 256, 256>>>(a, n, k); }", False),
    ("for (int k = 0; k < n; k++) { printf(\"%d\", k); scale<<<1, 256>>>(a, n, k); }", True),
    # found by review: each may make k negative at the launch
    ("for (int k = 0; k < 4; k++) a[0] += 1; scale<<<n / 256, 256>>>(a, n, lo);", False),
    ("int k = lo; for (int j = 0; j < 4; j++) { k = j; }\n"
     "    for (k = 0; k < n; k++) { scale<<<1, 256>>>(a, n, k); }", True),   # set before
    ("for (int k = 0; k < n; k++) { int &r = k; r -= 9; scale<<<1, 256>>>(a, n, k); }",
     False),
    ("for (int k = 0; k < n; k++) { int *p = &k; scale<<<1, 256>>>(a, n, k); }", False),
    ("for (int k = 0; k < n; k++) { auto f = [&] { k -= 9; }; f(); "
     "scale<<<1, 256>>>(a, n, k); }", False),
    ("for (int k = 0; k < n; k++) { int k(lo); scale<<<1, 256>>>(a, n, k); }", False),
    ("for (int k = 0; k < n; k++) { for (int k : {lo}) scale<<<1, 256>>>(a, n, k); }",
     False),
    ("for (int k = 0; step(k) < n; k++) { scale<<<1, 256>>>(a, n, k); }", False),
    ("for (long k = 0; k < n; k++) { scale<<<1, 256>>>(a, n, k); }", False),
    ("for (unsigned k = 0; k < n; k++) { scale<<<1, 256>>>(a, n, k); }", False),
    ("for (short k = 0; k < n; k++) { scale<<<1, 256>>>(a, n, k + 0); }", False),
    ("for (short k = 0; k < 9 && k < n; k++) { scale<<<1, 256>>>(a, n, k); }", True),
])
def test_a_host_loop_counting_up_from_zero_shows_its_counter_non_negative(
        tmp_path, loop, counted):
    """frontend/launches.counted_up: the counter of a loop around the launch counting up
    from a known value >= 0, assigned nowhere else in the loop, is >= 0 at the launch."""
    from polycoal.frontend.launches import counted_up
    path = tmp_path / "counted.cu"
    path.write_text(COUNTED.replace("LOOP", loop))
    program = read_program(str(path), PreprocessorOptions())
    (launch,) = program.launches
    assert counted_up(launch, program.kernel("scale")) == ({"k"} if counted else set())


def test_gram_schmidt_columns_need_no_check_for_a_counter_from_zero():
    """Gram-Schmidt's third kernel runs past k, the counter of `for (k = 0; k < n; k++)`:
    the second plan takes k >= 0 (what the loop shows) and nothing of m or n, and the
    column form holds for every m and n: no check, no copy of the kernel."""
    path = FIXTURES.parent.parent / "polybench_inputs" / "gramschmidt" / "gramschmidt.cu"
    program = read_program(str(path), PreprocessorOptions(include_dirs=(str(path.parent),)))
    result = transform_program(program, TransformOptions())
    d = _decision(result, "gramschmidt_kernel3")
    assert d.action == "columns" and d.assumption is None, d.reason
    assert d.analysis.model.signed == frozenset({"k"})
    assert "__pc_checked" not in result.text


def test_a_known_value_is_taken_as_the_parameter_receives_it(tmp_path):
    """`const unsigned k = 4294967236u` passed to `int k`: the kernel receives -60, so
    the launch is known negative (the original runs there), not known >= 0."""
    text = FIXTURE.read_text().replace("    int k = argc > 1 ? atoi(argv[1]) : -60;",
                                       "    const unsigned k = 4294967236u;")
    program, result = _transformed(text, tmp_path, reduction="block")
    launch = next(l for l in program.launches if l.kernel == "columns_past" and
                  l.arguments[2].strip() == "k")
    assert known_values(launch)["k"] == -60
    runs_alike(program.text, result.text, tmp_path, tolerance=1e-6)


def test_placement_keeps_a_kernel_with_an_argument_named_like_the_geometry(tmp_path):
    from polycoal.model.memory_spec import load_spec
    from polycoal.placement import place_program
    path = tmp_path / "reserved.cu"
    path.write_text(ARGUMENTS.read_text().replace("int n, int off)", "int n, int nthreads_x)")
                    .replace("i + off >= 0", "i + nthreads_x >= 0"))
    program = read_program(str(path), PreprocessorOptions())
    placed = place_program(program, load_spec())
    k = next(k for k in placed.kernels if k.kernel == "smooth")
    assert not k.applied and "nthreads_x" in k.reason
    assert placed.text == program.text
