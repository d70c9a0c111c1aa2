"""polycoal's random differential tester (Csmith/YARPGen-style): `generator` writes
complete CUDA programs in shape families, `runner` transforms each with every option
set, compiles the outputs with nvcc, runs original and outputs on the CPU
(polycoal.runtime.cpu_program) and compares their printed checksums, `shrink` reduces a
failing program to a small reproducer, `cxx` rewrites programs with the C++ constructs
polycoal reads through Clang, `project` writes a program as a project of two translation
units and judges `polycoal transform -p` on it. The command line is tools/difftest.py."""
