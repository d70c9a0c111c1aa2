"""Runtime layer: running CUDA code on the host (below the transform driver; nothing here
imports polycoal.transform)."""
