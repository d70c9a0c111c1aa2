"""The build plugin: polycoal inside CMake and Make builds.

    command    a compiler command line (nvcc or gcc style) read into plain data, and
               rewritten to compile transformed copies of its CUDA sources
    lines      `#line` directives that map a transformed file back to its original
    prepare    one source: transformed (or not, and why), through a content-hash cache
    cache      the content-addressed store of prepared sources
    launcher   `polycoal launch <compiler> ...` and `polycoal-nvcc`: transform, compile,
               fix the dependency file
The CMake package (`polycoal --cmake-dir`) lives in polycoal/cmake.
"""
