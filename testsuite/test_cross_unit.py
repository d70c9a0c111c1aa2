"""A kernel defined in one translation unit and launched from others
(polycoal/cross_unit.py, `polycoal transform -p`): transformed where it is defined, its
launches rewritten where they are (from one unit or two), the units compiled by nvcc
and linked, and run on the CPU runtime like the original; and the kernels that must
be kept as written, each with its reason.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from polycoal.cli import main

from conftest import printed_numbers, cpu_runner
from test_project import _cpu_build

KERNELS = """#include <cuda_runtime.h>

// row-major rows, one thread per row: uncoalesced
__global__ void scale(float *a, int n, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < m; j++)
      a[i * m + j] = a[i * m + j] * 2.0f + (float)j;
}
"""

MAIN = """#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale(float *, int, int);
void twice(float *d, int n, int m);

int main()
{
  int n = 300, m = 96;
  float *h = (float *)malloc(sizeof(float) * n * m);
  for (int k = 0; k < n * m; k++)
    h[k] = (float)((k * 37) % 101) / 8.0f;
  float *d;
  cudaMalloc((void **)&d, sizeof(float) * n * m);
  cudaMemcpy(d, h, sizeof(float) * n * m, cudaMemcpyHostToDevice);
  scale<<<(n + 127) / 128, 128>>>(d, n, m);
  TWICE
  cudaMemcpy(h, d, sizeof(float) * n * m, cudaMemcpyDeviceToHost);
  double s = 0.0;
  for (int k = 0; k < n * m; k++)
    s += h[k] * (1.0 + (k % 7) * 0.125);
  printf("checksum %.6e\\n", s);
  cudaFree(d);
  free(h);
  return 0;
}
"""

# a second launching unit: another geometry, on the first 200 rows only
OTHER = """#include <cuda_runtime.h>

__global__ void scale(float *__restrict__ a, int n, int m);

void twice(float *d, int n, int m)
{
  dim3 block(64);
  scale<<<(200 + 63) / 64, block>>>(d, 200, m);
}
"""


def _project(tmp_path: Path, sources: dict[str, str], flags: dict[str, list[str]] | None
             = None) -> Path:
    """The sources under src/ and build/compile_commands.json (Bear style)."""
    build = tmp_path / "build"
    build.mkdir()
    entries = []
    for name, text in sources.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not name.endswith(".cu"):
            continue
        entries.append({"directory": str(build), "file": str(path), "output": f"{name}.o",
                        "arguments": ["nvcc", "-arch=sm_90", *(flags or {}).get(name, []),
                                      "-c", str(path), "-o", f"{name}.o"]})
    (build / "compile_commands.json").write_text(json.dumps(entries))
    return build


def _transform(build: Path, out: Path, capsys) -> dict:
    status = main(["transform", "-p", str(build), "-o", str(out), "--report", "json",
                   "-j", "1"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["status"] == 0, report
    return report


def _kernel(report: dict, name: str) -> dict:
    (k,) = [k for k in report["kernels"] if k["name"] == name]
    return k


def _compile_and_link(nvcc: str, report: dict, tmp_path: Path) -> None:
    """Each unit's output (or source) compiled with its entry's command, then linked."""
    objects = []
    for unit in report["units"]:
        source = unit["output"] or unit["file"]
        obj = tmp_path / (Path(unit["file"]).name + ".o")
        proc = subprocess.run([nvcc, "-arch=sm_90", "-c", source, "-o", str(obj)],
                              capture_output=True, text=True, cwd=unit["directory"])
        assert proc.returncode == 0, proc.stderr
        objects.append(str(obj))
    link = subprocess.run([nvcc, "-arch=sm_90", "-rdc=false", *objects, "-o",
                           str(tmp_path / "app")], capture_output=True, text=True)
    assert link.returncode == 0, link.stderr


def _runs_alike(report: dict, tmp_path: Path) -> None:
    """The original and the transformed units built for the CPU runtime, linked, run: the
    same numbers."""
    runner = cpu_runner()
    printed = []
    for side in ("original", "transformed"):
        units = []
        for unit in report["units"]:
            path = unit["output"] if side == "transformed" and unit["output"] else unit["file"]
            units.append((Path(path).read_text(), (str(Path(unit["file"]).parent),), ()))
        directory = tmp_path / side
        directory.mkdir()
        run = runner.run(_cpu_build(runner, units, directory))
        assert run.failure is None, (side, run.stderr)
        printed.append(printed_numbers(run.stdout))
    assert len(printed[0]) == 1 and len(printed[1]) == 1
    assert abs(printed[0][0] - printed[1][0]) <= 1e-5 * max(abs(printed[0][0]), 1.0), printed


def test_a_kernel_launched_from_another_unit_is_transformed_where_it_is_defined(
        tmp_path, capsys, nvcc):
    build = _project(tmp_path, {"kernels.cu": KERNELS,
                                "main.cu": MAIN.replace("  TWICE\n", "")})
    out = tmp_path / "out"
    report = _transform(build, out, capsys)
    k = _kernel(report, "scale")
    assert k["action"] == "restructured" and k["code"] == "restructured"
    main_cu = tmp_path / "src" / "main.cu"
    line = next(n + 1 for n, l in enumerate(main_cu.read_text().splitlines()) if "<<<" in l)
    assert k["launched_in_other_units"] == [f"{main_cu}:{line}"]
    assert f"(main.cu:{line}) rewritten there" in k["reason"]
    assert sorted(p.name for p in out.iterdir()) == ["kernels.cu", "main.cu"]
    kernels, launching = (out / "kernels.cu").read_text(), (out / "main.cu").read_text()
    assert "polycoal: restructured for coalesced" in kernels
    assert "polycoal: restructured geometry" in launching
    assert "scale<<<(n + 127) / 128, 128>>>(d, n, m);" not in launching
    assert "__global__ void scale(float *, int, int);" in launching   # the user's
    assert "static __global__" not in kernels
    _compile_and_link(nvcc, report, tmp_path)
    _runs_alike(report, tmp_path)


def test_a_kernel_launched_from_two_units(tmp_path, capsys, nvcc):
    """Both units' launches (two geometries) rewritten, the kernel made for both."""
    build = _project(tmp_path, {"kernels.cu": KERNELS,
                                "main.cu": MAIN.replace("TWICE", "twice(d, n, m);"),
                                "other.cu": OTHER})
    out = tmp_path / "out"
    report = _transform(build, out, capsys)
    k = _kernel(report, "scale")
    assert k["action"] == "restructured", k
    assert [Path(p.split(":")[0]).name for p in k["launched_in_other_units"]] == \
        ["main.cu", "other.cu"]
    assert sorted(p.name for p in out.iterdir()) == ["kernels.cu", "main.cu", "other.cu"]
    # the kernel takes each launch's geometry as well: declared so where it is launched
    assert "__global__ void scale(float *a, int n, int m, long long pc_nthreads_x)\n" in \
        (out / "kernels.cu").read_text()
    for name in ("main.cu", "other.cu"):
        text = (out / name).read_text()
        assert "polycoal: restructured geometry" in text
        assert "__global__ void scale(float *a, int n, int m, long long pc_nthreads_x);" \
            in text
    _compile_and_link(nvcc, report, tmp_path)
    _runs_alike(report, tmp_path)


HEADER_LAUNCH = """#include <cuda_runtime.h>
__global__ void scale(float *, int, int);
inline void launch_scale(float *d, int n, int m) { scale<<<(n + 127) / 128, 128>>>(d, n, m); }
"""


@pytest.mark.parametrize("case, reason", [
    ("header", "launched in the header launch.h:3, which polycoal never writes"),
    ("static", "declared static at main.cu:5"),
    ("parameters", "declared at main.cu:5 with other parameters (float *, int) than its "
                   "definition (float *, int, int)"),
    ("flags", "main.cu is compiled with other preprocessor flags than kernels.cu"),
    ("named", "named at main.cu:"),
])
def test_kernels_that_are_kept_with_their_reason(tmp_path, capsys, case, reason):
    main_text = MAIN.replace("  TWICE\n", "")
    sources = {"kernels.cu": KERNELS, "main.cu": main_text}
    flags = None
    if case == "header":
        sources["launch.h"] = HEADER_LAUNCH
        sources["main.cu"] = main_text.replace(
            "__global__ void scale(float *, int, int);", '#include "launch.h"').replace(
            "scale<<<(n + 127) / 128, 128>>>(d, n, m);", "launch_scale(d, n, m);")
    elif case == "static":
        sources["main.cu"] = main_text.replace("__global__ void scale",
                                               "static __global__ void scale")
    elif case == "parameters":
        sources["main.cu"] = main_text.replace("void scale(float *, int, int);",
                                               "void scale(float *, int);")
    elif case == "flags":
        flags = {"main.cu": ["-DEXTRA=1"]}
    elif case == "named":
        sources["main.cu"] = main_text.replace(
            "  cudaMemcpy(h, d,", "  cudaFuncSetAttribute((const void *)scale, "
            "cudaFuncAttributePreferredSharedMemoryCarveout, 50);\n  cudaMemcpy(h, d,")
    build = _project(tmp_path, sources, flags)
    out = tmp_path / "out"
    status = main(["transform", "-p", str(build), "-o", str(out), "--report", "json",
                   "-j", "1"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    k = _kernel(report, "scale")
    assert k["action"] == "unchanged" and k["code"] == "launched-in-other-unit", k
    assert reason in k["reason"], k["reason"]
    assert "left as written: " in k["reason"]
    # nothing written: the kernel and its launches stay as they are
    assert not out.exists() or not any(out.iterdir())
