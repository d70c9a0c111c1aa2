"""The performance model (analysis/roofline.py, analysis/work.py) and the driver's choice
among the forms the passes propose and the kernel as written (issue 33)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace

import pytest

from conftest import FIXTURES, POLYBENCH, runs_alike
from polycoal.analysis.occupancy import (Resources, compiled_resources, parse_ptxas,
                                         resident_warps)
from polycoal.analysis.roofline import (MARGIN, Choice, Prediction, Work, choose, machine_of,
                                        occupancy_decides, predict, shipped_machine)
from polycoal.cli import main
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.model.memory_spec import load_spec, parse_spec
from polycoal.transform import TransformOptions, transform_program

POWF = FIXTURES / "pairwise_powf.cu"


def _decision(path, kernel, options=TransformOptions(), defines=()):
    preprocessor = PreprocessorOptions((str(path.parent),), defines)
    program = read_program(str(path), preprocessor)
    result = transform_program(program, replace(options, preprocessor=preprocessor))
    return program, result, next(d for d in result.decisions if d.kernel == kernel)


def test_a_compute_bound_kernel_is_bound_by_its_heaviest_operation():
    m = shipped_machine()
    work = Work(issue=1e9, l2_bytes=1e6, dram_bytes=1e6, warps=1e5, heaviest="powf",
                heaviest_share=0.9)
    p = predict(work, m)
    assert p.bound == "powf-bound"
    # little issue, much memory: memory binds
    q = predict(replace(work, issue=1e3, dram_bytes=1e10), m)
    assert q.bound == "memory-bound"


def test_few_warps_without_independent_work_issue_slower():
    m = shipped_machine()
    busy = Work(issue=1e9, warps=1e5, resident=64)
    sparse = replace(busy, resident=8)
    assert predict(sparse, m).time_us > 1.5 * predict(busy, m).time_us
    # independent accumulators make up for the warps
    assert predict(replace(sparse, ilp=4.0), m).time_us == pytest.approx(
        predict(busy, m).time_us)


def test_each_launch_costs_its_overhead():
    m = shipped_machine()
    one = predict(Work(issue=10.0, warps=32), m)
    three = predict(Work(issue=10.0, warps=32, launches=3), m)
    assert three.time_us - one.time_us == pytest.approx(2 * m.launch_us)


def test_choice_takes_a_form_only_past_the_margin():
    original = Prediction(100.0, "memory-bound", ())
    close = ("product", Prediction(100.0 / MARGIN * 1.01, "compute-bound", ()))
    clear = ("restructured", Prediction(50.0, "memory-bound", ()))
    assert choose(original, [close]) is None
    assert choose(original, [clear, close]) == 0
    # a later form replaces an earlier one only past the margin again
    assert choose(original, [clear, ("reduced", Prediction(48.0, "x", ()))]) == 0
    assert choose(original, [clear, ("reduced", Prediction(40.0, "x", ()))]) == 1
    why = Choice(original, (close,), "original").kept_because()
    assert why.startswith("kept: the tiled product is predicted only") and \
        "memory-bound" in why


def test_the_machine_comes_from_the_memory_specification():
    shipped = shipped_machine()
    assert shipped.operation("powf") > 40 * shipped.operation("fmaf")
    spec = load_spec()
    text = open(_shipped_path()).read()
    custom = parse_spec(text.replace("clock_ghz = 1.66", "clock_ghz = 1.0"))
    assert machine_of(custom).clock_ghz == 1.0
    assert machine_of(replace(spec, roofline=(), operations=())) == shipped


def _shipped_path():
    from importlib import resources
    return str(resources.files("polycoal.grammars") / "memory_sm90.toml")


def test_a_powf_bound_product_is_kept_and_the_report_says_why(tmp_path, capsys):
    """Pairwise distances with a powf per term: tiled, the kernel ran 0.76x as fast on
    the H200 (docs/results/model-check-h200-2026-11-28-a.json); the model keeps it."""
    _, result, d = _decision(POWF, "minkowski_rows")
    assert d.action == "unchanged" and d.code == "no-predicted-gain", d.reason
    assert d.reason.startswith("kept: the tiled product is predicted") and \
        "slower" in d.reason and "powf-bound" in d.reason, d.reason
    assert result.text == POWF.read_text()
    out = tmp_path / "out.cu"
    assert main(["transform", str(POWF), "-o", str(out), "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().err)
    predicted = report["kernels"][0]["predicted"]
    assert predicted["unit"] == "us" and predicted["chosen"] == "original"
    forms = [c["form"] for c in predicted["candidates"]]
    assert forms[0] == "original" and "product" in forms
    assert predicted["original"] == predicted["candidates"][0]["time"] > 0
    assert out.read_text() == POWF.read_text()


def test_without_the_model_the_first_form_is_taken_and_runs_alike(tmp_path):
    small = tmp_path / "pairwise_small.cu"          # sizes the CPU runs in a moment
    small.write_text("#define M 96\n#define N 40\n#define K 128\n" + POWF.read_text())
    program, result, d = _decision(small, "minkowski_rows", TransformOptions(model=False))
    assert d.action == "product" and d.predicted.chosen == "product"
    assert choose(d.predicted.original, list(d.predicted.candidates)) is None
    runs_alike(program.text, result.text, tmp_path)


@pytest.mark.parametrize("program,kernel,form", [
    ("gemm/gemm.cu", "gemm_kernel", "product"),
    ("covariance/covariance.cu", "covar_kernel", "product"),
    ("bicg/bicg.cu", "bicg_kernel2", "reduced"),
    ("gesummv/gesummv.cu", "gesummv_kernel", "reduced")])
def test_memory_bound_kernels_keep_their_forms(program, kernel, form):
    """The forms measured 5-3000x faster on the H200 are predicted faster by more than
    the margin, and taken."""
    _, _, d = _decision(POLYBENCH / program, kernel)
    assert d.action == form, d.reason
    assert d.predicted.chosen == form
    taken = dict(d.predicted.candidates)[form]
    assert taken.time_us * MARGIN <= d.predicted.original.time_us


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_kept_kernel_compiles_as_the_input_does(tmp_path):
    out = tmp_path / "out.cu"
    assert main(["transform", str(POWF), "-o", str(out)]) == 0
    subprocess.run(["nvcc", "-arch=sm_90", "-c", str(out), "-o", str(tmp_path / "o.o")],
                   check=True, capture_output=True)


def test_kernels_measured_no_faster_are_kept_as_written():
    """transform --measure keeps what the device found no faster: TransformOptions.keep."""
    program, result, d = _decision(FIXTURES / "transform_cases.cu", "row_fill")
    assert d.action == "restructured"
    why = "measured on the device 0.97x as fast as written: kept as written"
    options = TransformOptions(keep=(("row_fill", why),))
    kept = transform_program(program, options)
    row = next(x for x in kept.decisions if x.kernel == "row_fill")
    assert row.action == "unchanged" and row.code == "measured-slower" and row.reason == why
    others = {x.kernel: x.action for x in kept.decisions if x.kernel != "row_fill"}
    assert others == {x.kernel: x.action for x in result.decisions if x.kernel != "row_fill"}
    assert "row_fill(" in kept.text and "__pc" not in kept.text.split("row_fill(")[0][-200:]


def test_measure_without_a_gpu_says_what_it_needs(tmp_path, capsys):
    try:
        import pycuda.driver  # noqa: F401
        pytest.skip("pycuda is installed here")
    except ImportError:
        pass
    out = tmp_path / "out.cu"
    assert main(["transform", str(FIXTURES / "transform_cases.cu"), "--measure",
                 "-o", str(out)]) == 2
    assert "--measure runs kernels on the GPU" in capsys.readouterr().err
    assert not out.exists()


def test_the_bench_table_reads_the_rows():
    from polycoal.bench import table
    rows = [{"kernel": "k", "chosen": "unchanged", "proposed": "product",
             "predicted_speedup": 0.7, "measured": {"ok": True, "original_ms": 1.0,
                                                    "form_ms": 1.3, "speedup": 0.77},
             "agrees": True},
            {"kernel": "g", "chosen": "product", "proposed": "product",
             "predicted_speedup": None, "measured": None, "agrees": None}]
    text = table("x.cu", rows)
    assert "0.70x" in text and "0.77x" in text and "yes" in text.splitlines()[2]
    assert text.splitlines()[3].rstrip().endswith("-")


def test_the_check_summarises_predicted_against_measured():
    import sys
    sys.path.insert(0, str(FIXTURES.parent.parent / "tools"))
    from check_model import markdown, summary
    row = {"kernel": "k", "chosen": "product", "proposed": "product",
           "predicted": {"candidates": [{"form": "original", "time": 100.0},
                                        {"form": "product", "time": 10.0}]},
           "predicted_speedup": 10.0, "agrees": True,
           "measured": {"ok": True, "original_ms": 0.1, "form_ms": 0.02, "speedup": 5.0}}
    kept = dict(row, kernel="m", chosen="unchanged", predicted_speedup=0.5, agrees=True,
                measured={"ok": True, "original_ms": 1.0, "form_ms": 1.6, "speedup": 0.625})
    report = {"programs": [{"program": "a.cu", "rows": [row, kept]}]}
    s = summary(report["programs"])
    assert s["kernels_measured"] == 2 and s["priced"] == 2 and s["within_2x"] == 2
    assert s["worst"]["kernel"] == "k" and s["worst"]["factor"] == pytest.approx(2.0)
    assert s["taken_and_slower"] == [] and s["disagreements"] == []
    assert "| a.cu | k | product | product | 100 / 10 | 100 / 20 | 10.00x | 5.00x |" in \
        markdown(report)


def test_no_model_on_the_command_line_takes_the_proposed_form(tmp_path, capsys):
    out = tmp_path / "out.cu"
    assert main(["transform", str(POWF), "-o", str(out), "--no-model"]) == 0
    assert "polycoal: a product in register" in out.read_text()
    assert "minkowski_rows' product" in capsys.readouterr().err


# --------------------------------------------------------------- occupancy from ptxas

def test_resident_warps_follow_registers_shared_memory_and_slots():
    m = shipped_machine()
    # 32 registers: 1024 a warp, the register file holds 64 warps: the slots bind
    assert resident_warps(Resources(32, 0), 256, m) == 64
    # 255 registers round to 8192 a warp: 8 warps, one block of 256 threads
    assert resident_warps(Resources(255, 0), 256, m) == 8
    # 72 registers (2304 a warp): 28 warps' worth, three blocks of 8 warps
    assert resident_warps(Resources(72, 0), 256, m) == 24
    # 48 KiB of shared memory a block (plus the kilobyte the runtime keeps): 4 blocks
    assert resident_warps(Resources(16, 48 << 10), 128, m) == 16
    # blocks of one warp: the 32 block slots bind
    assert resident_warps(Resources(16, 0), 32, m) == 32
    # a block that cannot fit at all
    assert resident_warps(Resources(16, 240 << 10), 128, m) == 0


def test_ptxas_report_is_read_per_entry_function():
    report = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN8pc_form03rowEPfi' for 'sm_90'
ptxas info    : Function properties for _ZN8pc_form03rowEPfi
    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'col' for 'sm_90'
ptxas info    : Function properties for col
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
"""
    assert parse_ptxas(report) == {"_ZN8pc_form03rowEPfi": Resources(40, 8192, 8),
                                   "col": Resources(8, 0, 0)}


def test_occupancy_is_read_only_where_it_could_change_the_choice():
    m = shipped_machine()
    # memory-bound forms, one 4x faster: no occupancy changes the choice
    slow = Work(issue=1e6, dram_bytes=4e9, warps=1e5, block_warps=8.0, chain=1e3)
    fast = replace(slow, dram_bytes=1e9)
    assert not occupancy_decides(slow, [fast], m)
    # a form whose dependent path binds at one block a multiprocessor and whose issue
    # binds at full occupancy: 1.2x faster, or slower, depending on the warps held
    original = Work(issue=3e9, warps=1e5, block_warps=8.0, chain=1e3)
    form = replace(original, issue=2.5e9, chain=2e5)
    assert occupancy_decides(original, [form], m)


def test_compiled_resources_read_each_kernel(nvcc, tmp_path, monkeypatch):
    monkeypatch.setenv("POLYCOAL_CACHE_DIR", str(tmp_path))
    compiled_resources.cache_clear()
    source = ("namespace pc_form0 {\n__global__ void k(float *a) {\n"
              "  __shared__ float s[2048];\n  s[threadIdx.x] = a[threadIdx.x];\n"
              "  __syncthreads();\n  a[threadIdx.x] = s[(threadIdx.x * 7) % 2048];\n}\n}\n")
    found = dict(compiled_resources(source))
    (symbol, r), = found.items()
    assert symbol.startswith("_ZN8pc_form01kE") and r.shared == 8192 and r.registers > 0
    assert len(list((tmp_path / "occupancy").glob("*.json"))) == 1
    # read back from the disk cache: no compiler needed a second time
    compiled_resources.cache_clear()
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("compiled again"))
    assert dict(compiled_resources(source)) == found


def test_a_close_choice_reads_each_forms_occupancy_from_ptxas(nvcc, tmp_path, monkeypatch,
                                                              capsys):
    """The tiled product of pairwise powf distances needs 47 registers and 16.5 KiB of
    shared memory a block (ptxas, CUDA 13): the model's choice is priced with the
    warps that leaves, and the report says so; --no-ptxas estimates them."""
    monkeypatch.setenv("POLYCOAL_CACHE_DIR", str(tmp_path))
    out = tmp_path / "out.cu"
    assert main(["transform", str(POWF), "-o", str(out), "--report", "json"]) == 0
    kernel = json.loads(capsys.readouterr().err)["kernels"][0]
    predicted = kernel["predicted"]
    occupancy = {o["form"]: o for o in predicted["occupancy"]}
    assert f"ptxas: {occupancy['product']['registers']} registers a thread" in kernel["reason"]
    assert set(occupancy) == {"original", "product"}
    product = occupancy["product"]
    assert product["shared_bytes"] > 0 and product["registers"] > 0
    assert product["warps"] == resident_warps(
        Resources(product["registers"], product["shared_bytes"]), 256, shipped_machine())
    assert predicted["chosen"] == "original"
    assert main(["transform", str(POWF), "-o", str(out), "--report", "json",
                 "--no-ptxas"]) == 0
    assert "occupancy" not in json.loads(capsys.readouterr().err)["kernels"][0]["predicted"]
