"""Data package: the CUDA dialect description and stub headers (see cuda.toml)."""
