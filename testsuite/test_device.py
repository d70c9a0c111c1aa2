"""GPU validation through pycuda. Marked `gpu`: these run on the lent H200 (pycuda from
the device extra); without pycuda or a GPU they are skipped with the reason, and the
command's own message is checked instead."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess

import pytest

from conftest import FIXTURES, POLYBENCH
from polycoal.cli import main
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import TransformOptions, transform_program

HAVE_PYCUDA = importlib.util.find_spec("pycuda") is not None


def _gpu_available() -> bool:
    if not HAVE_PYCUDA:
        return False
    try:
        import pycuda.driver as driver
        driver.init()
        return driver.Device.count() > 0
    except Exception:
        return False


GPU = _gpu_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="no pycuda or no CUDA device on this machine "
                               "(the gpu tests run on the lent H200)")


def test_a_static_kernel_is_made_external_in_the_module():
    """`__global__ static` (internal linkage) could not be found by name in the module
    validate --device builds (the lent H200 reported row_mean FAIL); `static_cast`
    in the body is not a storage class."""
    from polycoal.validate.device import device_source
    kernel = ("__attribute__((global)) static void k(const float *a, float *b)\n"
              "{ b[0] = static_cast<float>(a[0]); }")
    source = device_source([], [kernel])
    assert "__attribute__((global)) void k(" in source
    assert "static_cast<float>" in source and " static void" not in source


@pytest.mark.skipif(HAVE_PYCUDA, reason="pycuda is installed: the message path is moot")
def test_device_without_pycuda_says_so(capsys):
    assert main(["validate", "--device", str(POLYBENCH / "covariance" / "covariance.cu")]) == 2
    assert "pycuda" in capsys.readouterr().err


def _validate(path, defines=()):
    from polycoal.validate.device import validate_device
    # every form proposed is taken (the model keeps many at these small sizes): each is
    # judged on the GPU
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=tuple(defines)),
                               model=False)
    program = read_program(str(path), options.preprocessor)
    result = transform_program(program, options)
    return program, result, options, validate_device(program, result, options, {}, repeats=3)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("path,defines", [
    (POLYBENCH / "covariance" / "covariance.cu", ("M=256", "N=192")),
    (POLYBENCH / "correlation" / "correlation.cu", ("M=200", "N=100")),
    (POLYBENCH / "bicg" / "bicg.cu", ("NX=1030", "NY=1070")),     # split with a ragged tile
    (POLYBENCH / "gemver" / "gemver.cu", ("N=1100",)),             # split, statement after
    (FIXTURES / "transform_cases.cu", ()),
    (FIXTURES / "symbolic_linear.cu", ()),
    (FIXTURES / "styles" / "clock_and_assert.cu", ()),     # a static kernel with an assert
    (FIXTURES / "styles" / "launch_macro.cu", ()),         # a launch in a macro, expanded
    (FIXTURES / "styles" / "unroll_hints.cu", ()),
])
def test_transformed_kernels_match_on_the_gpu(path, defines):
    _, result, _, verdicts = _validate(path, defines)
    assert all(v.ok for v in verdicts), [(v.kernel, v.message) for v in verdicts]
    timed = [v for v in verdicts if v.original_ms is not None]
    assert timed and all(v.transformed_ms > 0 for v in timed)


@pytest.mark.gpu
@needs_gpu
def test_the_gpu_check_detects_a_wrong_kernel():
    from polycoal.validate.device import validate_kernel_device
    program, result, options, _ = _validate(POLYBENCH / "covariance" / "covariance.cu",
                                            ("M=256", "N=192"))
    d = next(d for d in result.decisions if d.kernel == "covar_kernel")
    wrong = read_program(program.path, options.preprocessor,
                         text=result.text.replace("(pc_j >= pc_i)", "(pc_j > pc_i)"))
    assert wrong.text != result.text       # the diagonal is left out
    verdict = validate_kernel_device(program, wrong, d, {}, repeats=1)
    assert not verdict.ok and "symmat" in verdict.message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_device_module_declares_a_template_helper_with_its_header(tmp_path):
    """validate --device builds a module of the program's declarations and the two
    kernels; cpp/gramschmidt's helper `template <typename T> __device__ T square(T)`
    was declared without its template header there (the lent H200 reported `identifier
    "T" is undefined`). Each changed kernel's module compiles with nvcc."""
    from polycoal.validate.device import device_source
    from polycoal.validate.experiment import prepare, run_changed
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=("M=80", "N=72")))
    program = read_program(str(POLYBENCH / "cpp" / "gramschmidt.cu"), options.preprocessor)
    result = transform_program(program, options)
    sources = []

    def module(p, new, d):
        e = prepare(p, new, d, {"m": 80, "n": 72, "k": 5})
        sources.append(device_source(e.declarations, [e.original, e.transformed]))
    run_changed(program, result, options, module, lambda d: None)
    assert len(sources) == 2
    for k, source in enumerate(sources):
        assert "template <typename T>" in source
        (tmp_path / f"m{k}.cu").write_text(source)
        r = subprocess.run(["nvcc", "--cubin", "-arch=sm_90", "-w", str(tmp_path / f"m{k}.cu"),
                            "-o", str(tmp_path / f"m{k}.cubin")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]


def test_outputs_agree_with_nan_and_infinities_at_the_same_elements():
    """A recurrence on random data (ADI's) can reach NaN and infinities as written:
    the two runs agree where both have them at the same elements and the finite rest
    agrees; NaN or an infinity at different elements, or a finite value apart, do not."""
    import numpy as np
    from polycoal.validate.device import arrays_agree
    x = np.array([1.0, np.nan, np.inf, -np.inf, 2.0], dtype=np.float32)
    assert arrays_agree(np, x, x.copy(), 1e-6) == (True, 0.0)
    for k, value in ((1, 0.0), (2, np.nan), (3, np.inf), (0, np.inf), (4, 2.5)):
        y = x.copy()
        y[k] = value
        assert not arrays_agree(np, x, y, 1e-6)[0], (k, value)
    assert arrays_agree(np, x, np.where(np.isfinite(x), x * (1 + 1e-7), x), 1e-5)[0]
