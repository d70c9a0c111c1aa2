"""Assignments under a condition that reads memory (`if (s[j] < 0) s[j] = -s[j];`): one
statement of the affine model, read as its if-conversion X = c ? e : X
(model/extract.guarded_statement), so the kernels around them are restructured; the
generated code keeps the `if`."""

from __future__ import annotations

import re
import shutil

import islpy as isl

from conftest import compile_sm90, runs_alike
from polycoal.model import isl_helpers
from polycoal.frontend import read_program
from polycoal.transform import TransformOptions, transform_program
from polycoal.validate.cpu import validate_cpu

PROGRAM = """\
#include <cstdio>
#define N 300
#define M 200
__global__ void column_norms(int n, int m, const float *a, float *s)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < m) {
    s[j] = 0.0f;
    for (int i = 0; i < n; i++)
      s[j] += a[i * M + j];
    if (s[j] < 0.0f)
      s[j] = -s[j];
    else
      s[j] = s[j] * 2.0f;
    if (s[j] > 300.0f) { s[j] = 300.0f; }
  }
}
int main(int argc, char **argv)
{
  static float a[N * M], s[M];
  const int n = N - (argc > 99), m = M - (argc > 99);   /* known at run time only */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      a[i * M + j] = (float)((i * 7 + j * 13) % 17) - 8.0f + (j % 3 == 0 ? 0.5f : -0.5f);
  float *da, *ds;
  cudaMalloc(&da, sizeof a); cudaMalloc(&ds, sizeof s);
  cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
  column_norms<<<(m + 255) / 256, 256>>>(n, m, da, ds);
  cudaMemcpy(s, ds, sizeof s, cudaMemcpyDeviceToHost);
  double sum = 0;
  int negative = 0, capped = 0;
  for (int j = 0; j < M; j++) { sum += s[j] * (1 + j % 5); capped += s[j] == 300.0f; }
  for (int j = 0; j < M; j++) {
    double t = 0;
    for (int i = 0; i < N; i++) t += a[i * M + j];
    negative += t < 0;
  }
  printf("%.3f %d %d %.3f %.3f\\n", sum, negative, capped, s[0], s[M - 1]);
  return 0;
}
"""
LARGE = TransformOptions(price_at=(("n", 8192), ("m", 8192)))


def _transformed(tmp_path, text=PROGRAM):
    path = tmp_path / "guarded.cu"
    path.write_text(text)
    program = read_program(str(path), LARGE.preprocessor)
    return program, transform_program(program, LARGE)


def test_a_reduction_followed_by_guarded_assignments_is_restructured(tmp_path):
    """The column sum runs split over more threads (in phases of a block, or blocks and a
    kernel after them); the two guarded assignments after it run once a column, their
    `if`s as written; the
    program prints what the original prints (both branches taken: the sums have both
    signs, some are capped), kernel and program alike on the CPU; nvcc compiles it."""
    program, result = _transformed(tmp_path)
    d = result.decisions[0]
    assert d.analysis.model.is_affine and d.action in ("split", "columns"), d.reason
    guarded = [s for s in d.analysis.model.statements if s.text.startswith("if")]
    assert len(guarded) == 2
    first = guarded[0]
    # the condition's read, the values' reads, X's old value; X written once
    assert sorted((a.kind, a.text) for a in first.accesses) == \
        [("read", "s[j]")] * 4 + [("write", "s[j]")]
    assert re.search(r"if \((s\[[^]]+\]) < 0.0f\) \{ \1 = -\1; \} else \{ \1 = \1 \* 2.0f; \}",
                     result.text), result.text
    for seed in (1, 2):
        verdicts = validate_cpu(program, result, LARGE, {"n": 300, "m": 200}, seed=seed)
        assert verdicts and all(v.ok for v in verdicts), [v.message for v in verdicts]
    runs_alike(PROGRAM, result.text, tmp_path, tolerance=1e-5)
    if shutil.which("nvcc"):
        out = tmp_path / "out.cu"
        out.write_text(result.text)
        compile_sm90(shutil.which("nvcc"), out)


def test_a_guarded_assignment_is_ordered_after_what_it_reads(tmp_path):
    """Its dataflow is the if-conversion's: it depends on the sum's last update (flow)
    and the clamp after it on it; a later read of X sees it as its source."""
    _, result = _transformed(tmp_path)
    d = result.decisions[0]
    by_text = {s.name: s.text for s in d.analysis.model.statements}
    flows = {(by_text[x.source].split()[0], by_text[x.sink].split("(")[0])
             for x in d.analysis.dependences if x.kind == "flow"}
    assert ("s[j]", "if ") in flows or ("s[j]", "if") in flows, flows


def test_what_stays_outside_the_model(tmp_path):
    """A guarded write that would race if taken (every thread's s[0]) races in the model
    too; two assignments under one such condition, or one with a side effect in
    its value, stay outside the affine model as before."""
    racing = PROGRAM.replace("    if (s[j] > 300.0f) { s[j] = 300.0f; }\n",
                             "    if (s[j] > 300.0f) { s[0] = 300.0f; }\n")
    d = _transformed(tmp_path, racing)[1].decisions[0]
    # race freedom is the program's: the model keeps only the sizes where the write
    # races with no one (one column), as for an unguarded write
    context = isl_helpers.context(d.analysis.model)
    assert context.is_subset(isl.Set("[m] -> { : m <= 1 }").align_params(context.get_space()))
    for body in ("{ s[j] = 300.0f; s[j] = s[j] + 1.0f; }", "{ s[j] = s[j]++; }",
                 "{ s[j] = 300.0f; } else if (s[j] < 1.0f) { s[j] = 1.0f; }"):
        text = PROGRAM.replace("{ s[j] = 300.0f; }", body)
        d = _transformed(tmp_path, text)[1].decisions[0]
        assert not d.analysis.model.is_affine, body
