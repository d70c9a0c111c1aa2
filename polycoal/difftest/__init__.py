"""polycoal's random differential tester (Csmith/YARPGen-style): `generator` writes
complete CUDA programs in shape families, `runner` transforms each with every option
set, compiles the outputs with nvcc, runs original and outputs on the CPU
(polycoal.runtime.cpu_program) and compares their printed checksums, `shrink` reduces a
failing program to a small reproducer. The command line is tools/difftest.py."""
