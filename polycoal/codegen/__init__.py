"""Code generation: new kernels from the isl AST, rewritten launches, spliced output."""
