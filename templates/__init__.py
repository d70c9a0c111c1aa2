"""Data package: jinja2 templates for generated CUDA text."""
