"""Validation: translation validation with isl, and execution of both kernels."""
