"""The CMake package (polycoal/cmake/polycoalConfig.cmake) passes a target's forced
includes (`-include`, `--pre-include`, `SHELL:-include a.h` in its COMPILE_OPTIONS) to
`polycoal prepare`, which reads them before the source as the compiler does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from polycoal.cli import forced_includes_of


def test_forced_includes_of_compile_options():
    assert forced_includes_of(["SHELL:-include '/p/a b.h'", "-Wall", "--pre-include=/p/c.h",
                               "-include", "d.h", "-imacros", "m.h"]) == \
        (("/p/a b.h", "/p/c.h", "d.h"), ("m.h",))
    assert forced_includes_of(["SHELL:-include '/p/a b.h'", "-O2"]) == (("/p/a b.h",), ())
    assert forced_includes_of(["-DX=1"]) == ((), ())


SOURCE = """#include <cstdio>
#ifndef FACTOR
#error "cfg.h is a forced include of the build"
#endif
__global__ void scale(float *a, int n, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int j = 0; j < m; j++)
      a[i * m + j] *= FACTOR + OFFSET;
}
int main()
{
  float *a;
  cudaMalloc((void **)&a, 300 * 96 * sizeof(float));
  scale<<<3, 128>>>(a, 300, 96);
  printf("ok\\n");
  return 0;
}
"""

CMAKE = """cmake_minimum_required(VERSION 3.20)
project(forced LANGUAGES CXX CUDA)
find_package(polycoal CONFIG REQUIRED)
add_executable(app src/k.cu)
target_compile_options(app PRIVATE "SHELL:-include ${CMAKE_CURRENT_SOURCE_DIR}/src/cfg.h"
                       --pre-include=${CMAKE_CURRENT_SOURCE_DIR}/src/more.h
                       $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
polycoal_transform_sources(app)
"""


def test_cmake_package_passes_forced_includes_to_prepare(tmp_path):
    for tool in ("cmake", "nvcc", "ninja"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(SOURCE)
    (tmp_path / "src" / "cfg.h").write_text("#define FACTOR 2.0f\n")
    (tmp_path / "src" / "more.h").write_text("#define OFFSET 1.0f\n")
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    cmake_dir = subprocess.run([sys.executable, "-m", "polycoal", "--cmake-dir"],
                               capture_output=True, text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYCOAL_")}
    build = tmp_path / "build"
    for command in (["cmake", "-S", str(tmp_path), "-B", str(build), "-G", "Ninja",
                     "-DCMAKE_CUDA_ARCHITECTURES=90", f"-Dpolycoal_DIR={cmake_dir}",
                     f"-DPOLYCOAL_COMMAND={sys.executable};-m;polycoal"],
                    ["cmake", "--build", str(build), "-v"]):
        proc = subprocess.run(command, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"--compile-option=SHELL:-include {tmp_path}/src/cfg.h" in proc.stdout
    (generated,) = (build / "polycoal.dir" / "app").glob("*/k.cu")
    # without the forced includes the source does not preprocess (#error): polycoal
    # would have written the original
    assert "polycoal: restructured" in generated.read_text()
    assert (build / "app").is_file()
