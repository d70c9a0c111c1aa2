"""The regression corpus as a whole: it compiles, and `polycoal analyze` runs on every
program with the exit status its races call for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from polycoal.cli import main

TESTSUITE = Path(__file__).resolve().parent
FIXTURES = TESTSUITE / "fixtures"
from conftest import POLYBENCH  # noqa: E402  (the scalar-bound variant)

# Programs with a kernel that races (1-D kernels launched with a 32x8 block).
RACING = {"atax", "mvt"}


def _corpus_files(group: str) -> list[Path]:
    if group == "polybench":
        return sorted(p for p in POLYBENCH.glob("*/*.cu") if p.stem == p.parent.name)
    return sorted(p for p in FIXTURES.glob("*.cu") if p.name != "syntax_error.cu")


def _compile(nvcc: str, source: Path, out_dir: Path) -> tuple[Path, int, str]:
    obj = out_dir / (source.parent.name + "_" + source.stem + ".o")
    proc = subprocess.run([nvcc, "-arch=sm_90", "-c", str(source), "-o", str(obj)],
                          capture_output=True, text=True, cwd=out_dir)
    return source, proc.returncode, proc.stderr[-2000:]


@pytest.mark.parametrize("group", ["polybench", "fixtures"])
def test_corpus_compiles_with_nvcc(nvcc, tmp_path, group):
    """`nvcc -arch=sm_90 -c prog.cu` succeeds for every program (from another cwd)."""
    files = _corpus_files(group)
    if not files:
        pytest.skip(f"no {group} sources present")
    workers = max(2, min(8, os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda f: _compile(nvcc, f, tmp_path), files))
    failures = [(str(f), err) for f, rc, err in results if rc != 0]
    assert failures == []
    assert all((tmp_path / (f.parent.name + "_" + f.stem + ".o")).stat().st_size > 0
               for f in files)


def test_syntax_error_fixture_does_not_compile(nvcc, tmp_path):
    source, rc, err = _compile(nvcc, FIXTURES / "syntax_error.cu", tmp_path)
    assert rc != 0
    assert "syntax_error.cu(25)" in err


def test_analyze_corpus_program(polybench_program, capsys):
    status = main(["analyze", str(polybench_program), "--format", "json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    assert doc["kernels"]
    for k in doc["kernels"]:
        assert k["status"] in ("affine", "outside-model")
        assert k["block"] is not None
        for r in k["references"]:
            assert r["coalesced"] in (True, False)
            # a kernel argument that a host loop varies (lu's k) leaves a formula in it
            count = r["count"]
            assert (count["value"] or 0) > 0 or \
                (count["value"] is None and count["formula"] not in ("", "0"))
    launched = {l["kernel"] for l in doc["launches"]}
    assert launched == {k["name"] for k in doc["kernels"]}
    assert all(l["block_shape"] is not None for l in doc["launches"])
    racing = polybench_program.parent.name in RACING
    assert status == (1 if racing else 0)
    assert any(k["races"] for k in doc["kernels"]) == racing
    errors = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert {d["code"] for d in errors} == ({"race"} if racing else set())


@pytest.mark.parametrize("name", ["atax", "bicg", "correlation", "covariance", "gemver",
                                  "gesummv", "gramschmidt", "mvt", "adi", "syrk"])
def test_published_defaults_transform_what_the_scalar_bound_variant_does(name):
    """polybench_inputs/ at the published default (loop bounds are the int arguments):
    every kernel changed on the scalar-bound variant is changed here too (but for the
    register window, which needs known sizes), the kernels race-free only for m <= M
    under a run-time check."""
    from conftest import PUBLISHED
    from polycoal.frontend import read_program
    from polycoal.transform import TransformOptions, transform_program
    changed = {}
    for root in (POLYBENCH, PUBLISHED):
        program = read_program(str(root / name / f"{name}.cu"))
        result = transform_program(program, TransformOptions(collapse_redundant=True))
        changed[root] = {d.kernel: d for d in result.decisions if d.action != "unchanged"}
    # the register window is proposed only at sizes the launch fixes (passes/window.py):
    # the published default's sizes are int arguments
    sized = {k for k, d in changed[POLYBENCH].items() if d.action == "windowed"}
    assert set(changed[POLYBENCH]) - sized <= set(changed[PUBLISHED]), (name, changed)
    checked = {k for k, d in changed[PUBLISHED].items() if d.assumption is not None}
    if name in ("covariance", "correlation"):
        assert checked == {"covar_kernel" if name == "covariance" else "corr_kernel"}
        d = changed[PUBLISHED][next(iter(checked))]
        assert d.assumption.constraint == "m <= 2048", d.assumption


def test_cpp_style_covariance_transforms_and_runs_like_the_original(tmp_path):
    """polybench_inputs/cpp/covariance.cu: covariance as C++ CUDA code is written
    (templates in a namespace, private accumulators, early returns, std::vector host
    buffers). The column means run in phases; the covariance kernel, race-free only for
    m <= M, is taken under that run-time condition and tiled, its private accumulator
    being the register tile itself; the whole program runs alike on the CPU."""
    from conftest import runs_alike
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.transform import TransformOptions, transform_program
    path = POLYBENCH / "cpp" / "covariance.cu"
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=("M=96", "N=300")))
    program = read_program(str(path), options.preprocessor)
    result = transform_program(program, options)
    d = {x.kernel: x for x in result.decisions}
    assert d["mean_kernel__pc_float"].action == "columns"
    covar = d["covar_kernel__pc_float"]
    assert covar.action == "product" and covar.generated.tiles.private == "acc"
    assert covar.assumption.constraint == "m <= 96"
    assert "mean_kernel__pc_float<<<" in result.text and "covar_kernel__pc_float" in result.text
    output = tmp_path / "covariance.cu"
    output.write_text(result.text)
    source = tmp_path / "original.cu"
    source.write_text(program.text)
    defines = "#define M 96\n#define N 300\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path,
               include_dirs=(POLYBENCH / "cpp",))


def test_cpp_style_gramschmidt_transforms_and_runs_like_the_original(tmp_path):
    """polybench_inputs/cpp/gramschmidt.cu: kernel templates, a template
    `__device__ __forceinline__` helper (`square(a[...])`, inlined with T deduced from
    its argument), std::sqrt, early returns, a private accumulator handed from the
    reduction to the update, a class launching from a member function with a grid
    from a namespace constexpr (`gs::kThreads`). As on the published spelling: the
    one-thread norm runs on a warp, the projection in column phases; the whole
    program runs alike on the CPU and compiles with nvcc."""
    from conftest import runs_alike
    from polycoal.frontend import read_program
    from polycoal.frontend.preprocess import PreprocessorOptions
    from polycoal.transform import TransformOptions, transform_program
    path = POLYBENCH / "cpp" / "gramschmidt.cu"
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=("M=80", "N=72")))
    program = read_program(str(path), options.preprocessor)
    result = transform_program(program, options)
    d = {x.kernel: x for x in result.decisions}
    assert d["column_norm__pc_float"].action == "reduced", d["column_norm__pc_float"].reason
    project = d["project__pc_float"]
    assert project.action == "columns", project.reason
    # at 72 columns and 256 threads, columns beyond N would alias the next row: checked
    assert "n <= 73 + k" in project.assumption.constraint
    assert d["gs::normalize<float>"].action == "unchanged"
    assert "column_norm__pc_float<<<" in result.text and "project__pc_float<<<" in result.text
    defines = "#define M 80\n#define N 72\n"
    runs_alike(defines + program.text, defines + result.text, tmp_path,
               include_dirs=(POLYBENCH / "cpp",))
    if shutil.which("nvcc"):
        (tmp_path / "out.cu").write_text(result.text)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-w", "-c", "-I", str(POLYBENCH / "cpp"),
                            str(tmp_path / "out.cu"), "-o", str(tmp_path / "out.o")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
