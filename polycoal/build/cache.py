"""The content-addressed cache of prepared sources, safe under parallel builds.

A key is a SHA-256 over polycoal itself (its version and the size and time of every file
of the package, so an edited checkout does not reuse stale results) and whatever the
caller says the result depends on (the source text, the preprocessed text with every
header in it, the options). An entry is one JSON file named by its key and written
atomically (a temporary file renamed over it): parallel compiles of the same source
write the same bytes, and a reader sees a whole entry or none. No lock is needed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib import resources

import polycoal
from polycoal.output import write_atomically


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """polycoal's version and the stat of each of its files (code, grammars, templates)."""
    roots = [os.path.dirname(os.path.abspath(polycoal.__file__)),
             str(resources.files("polycoal.grammars")),
             str(resources.files("polycoal.templates"))]
    h = hashlib.sha256(polycoal.__version__.encode())
    for root in sorted(set(roots)):
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for name in sorted(f for f in files if not f.endswith(".pyc")):
                st = os.stat(os.path.join(directory, name))
                h.update(f"{directory}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def cache_key(parts: list) -> str:
    """SHA-256 of polycoal's fingerprint and `parts` (JSON-serialisable)."""
    payload = json.dumps([fingerprint(), *parts], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogateescape")).hexdigest()


def load(directory: str, key: str) -> dict | None:
    try:
        with open(os.path.join(directory, key + ".json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store(directory: str, key: str, record: dict) -> None:
    os.makedirs(directory, exist_ok=True)
    write_atomically(os.path.join(directory, key + ".json"), json.dumps(record))
