"""polycoal: a polyhedral source-to-source CUDA compiler for coalesced global-memory access.

The pipeline, one sub-package per stage:

    frontend   CUDA text -> kernels (pycparser ASTs) and launch sites with their geometry
    model      kernel AST -> polyhedral model (domains with the thread geometry as loops,
               access relations, original schedule)
    analysis   dependences and races, coalescing cost per reference, execution counts
    report     text, JSON and SARIF renderings of an analysis
"""

__version__ = "0.1.0"
