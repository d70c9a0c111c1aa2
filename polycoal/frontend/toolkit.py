"""The CUDA toolkit's headers, as the front end's two readers see them (issue 32).

nvcc finds CUDA's headers where the toolkit installed them. polycoal's readers replace
the headers that would turn CUDA's qualifiers into attributes (cuda_runtime.h and its
kin) by stubs and declarations of their own (grammars/include, grammars/clang_cuda.h),
and read two kinds of toolkit header otherwise:

- headers of macros and plain functions that kernels use by name (math_constants.h,
  cuComplex.h): read for real, from the toolkit when it is installed (its include
  directory from $CUDA_HOME, $CUDA_PATH, nvcc's place, or /usr/local/cuda), else from
  the declarations polycoal ships (grammars/toolkit), as system headers;
- the toolkit's other headers and those of its libraries (cooperative_groups/*,
  cuda_bf16.h, curand_kernel.h, mma.h, cub, thrust, cuBLAS...): never a refusal; read
  as empty, what kernels need of them declared in grammars/clang_cuda.h for Clang.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from importlib import resources

# headers read for real (toolkit first, else polycoal's)
READ = ("math_constants.h", "cuComplex.h")

# headers of the toolkit and its libraries: a missing one is a note, never a refusal
LIBRARY = re.compile(
    r"^(cu|nv|thrust/|cub/|cuda|helper_|device_|sm_\d|mma|crt/|cooperative_groups|"
    r"math_constants|vector_|texture_|surface_|host_|driver_|channel_descriptor|"
    r"library_types|builtin_types|common_functions|npp|cufft|curand|cusparse|cusolver|"
    r"cublas|cudnn|nccl|nvtx|omp\.h|mpi\.h)")


def is_library_header(name: str) -> bool:
    return LIBRARY.match(name.strip()) is not None


@functools.lru_cache(maxsize=1)
def toolkit_include() -> str | None:
    """The installed CUDA toolkit's include directory, or None."""
    candidates = [os.path.join(os.environ[v], "include")
                  for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(os.path.join(os.path.dirname(os.path.dirname(
            os.path.realpath(nvcc))), "include"))
    candidates.append("/usr/local/cuda/include")
    return next((c for c in candidates if os.path.isfile(os.path.join(c, "cuda_runtime.h"))),
                None)


def shipped(name: str) -> str:
    return str(resources.files("polycoal.grammars") / "toolkit" / name)


@functools.lru_cache(maxsize=1)
def read_directory() -> str:
    """A directory holding the READ headers (the toolkit's, else polycoal's), to put on
    a reader's system include path after the user's directories."""
    directory = tempfile.mkdtemp(prefix="polycoal-toolkit-")
    installed = toolkit_include()
    for name in READ:
        source = os.path.join(installed, name) if installed else ""
        if not os.path.isfile(source):
            source = shipped(name)
        if os.path.isfile(source):
            shutil.copyfile(source, os.path.join(directory, name))
    return directory
