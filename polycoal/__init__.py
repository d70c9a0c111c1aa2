"""polycoal: a polyhedral source-to-source CUDA compiler for coalesced global-memory access.

The pipeline, one sub-package per stage:

    frontend   CUDA text -> kernels (pycparser ASTs) and launch sites with their geometry
    model      kernel AST -> polyhedral model (domains with the thread geometry as loops,
               access relations, original schedule)
    analysis   dependences and races, coalescing cost per reference, execution counts
    report     text, JSON and SARIF renderings of an analysis
"""

__version__ = "0.1.0"

# In a source checkout that is not installed, the data packages grammars/ and templates/
# sit beside polycoal/ (the installed package maps them to polycoal.grammars and
# polycoal.templates through setup.cfg's package_dir): let the same names resolve.
import os as _os

_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_checkout, "grammars", "cuda.toml")) and \
        _checkout not in __path__:
    __path__.append(_checkout)
