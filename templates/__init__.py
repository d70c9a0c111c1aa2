"""Data package: jinja2 templates for generated CUDA text (see `render_template`)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(
        lambda name: (resources.files("polycoal.templates") / name).read_text())
    return jinja2.Environment(loader=loader, keep_trailing_newline=False,
                              undefined=jinja2.StrictUndefined, autoescape=False)


def render_template(template: str, **values) -> str:
    return _environment().get_template(template).render(**values)
