"""Reductions through __device__ helpers and local pointers (issue 14, item 2): the
front end reads them as subscripts (frontend/inline.py), so the reduction forms apply;
a helper or pointer whose reading would not be what the code computes stays outside the
model and its kernel byte-identical. Every changed kernel is run on the CPU."""

from __future__ import annotations

import pytest
from pycparser import c_ast, c_generator

from conftest import FIXTURES
from polycoal.decisions import TransformOptions
from polycoal.frontend import read_program
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.transform import transform_program
from polycoal.validate.cpu import validate_cpu

PROGRAM = FIXTURES / "helpers_pointers.cu"
EXPECTED = {"mv_helper": "reduced", "mv_pointer": "reduced", "mv_term": "reduced",
            "col_sum_scale": "columns", "mv_walk": "unchanged",
            "mv_moved_offset": "unchanged", "mv_skip": "unchanged"}


def _transformed(defines=()):
    options = TransformOptions(preprocessor=PreprocessorOptions(defines=defines))
    program = read_program(str(PROGRAM), options.preprocessor)
    return program, transform_program(program, options), options


def _body(program, name: str) -> str:
    return c_generator.CGenerator().visit(program.kernel(name).ast.body)


def test_helpers_and_local_pointers_read_as_subscripts():
    program, result, _ = _transformed()
    assert {d.kernel: d.action for d in result.decisions} == EXPECTED
    assert "y[i] += (float) (A[(i * 1024) + j] * x[j])" in _body(program, "mv_helper")
    pointer = _body(program, "mv_pointer")
    assert "y[i] += A[(i * 1024) + j] * x[j]" in pointer
    assert "row" not in pointer and "out" not in pointer
    assert "A[(i * 1024) + ((int) j)] * x[(int) j]" in _body(program, "mv_term")
    assert "A[j + (r * ((int) 1024))] *= (float) 0.5f" in _body(program, "col_sum_scale")


@pytest.mark.parametrize("kernel,why", [
    ("mv_walk", "pointer arithmetic"),        # p++ moves it
    ("mv_moved_offset", "pointer arithmetic"),  # r = 0 after the pointer was taken
    ("mv_skip", "device function call"),      # the helper moves its parameter
])
def test_what_would_not_mean_the_same_stays_as_written(kernel, why):
    program, result, _ = _transformed()
    d = next(d for d in result.decisions if d.kernel == kernel)
    assert d.action == "unchanged" and why in d.reason
    span = program.kernel(kernel).span
    assert program.text[span.start:span.end] in result.text


def test_inlined_kernels_run_like_the_original_on_the_cpu():
    program, result, options = _transformed(("N=300", "M=130"))
    verdicts = validate_cpu(program, result, options, {}, seed=9)
    changed = [v for v in verdicts if v.message == "outputs match"]
    assert len(changed) == 4
    assert all(v.ok for v in verdicts), [v.message for v in verdicts if not v.ok]


def _functions(text: str) -> dict:
    from pycparser import c_parser
    unit = c_parser.CParser().parse(text)
    return {f.decl.name: f for f in unit.ext if isinstance(f, c_ast.FuncDef)}


def test_a_field_named_like_a_parameter_is_not_the_parameter():
    from polycoal.frontend.inline import inline_helpers
    fns = _functions("""
        struct P { float x; };
        float get(const float *x, struct P q) { return x[1] + q.x; }
        void k(const float *a, struct P p, float *out) { out[0] = get(a, p); }
    """)
    body = _text(inline_helpers(fns["k"], {"get": fns["get"]}).body)
    assert "out[0] = (float) (a[1] + ((struct P) p).x);" in body


def test_a_void_helper_in_a_loop_header_is_not_a_statement():
    from polycoal.frontend.inline import inline_helpers
    fns = _functions("""
        void bump(int *c) { *c += 1; }
        void k(int *c, float *out) { for (int i = 0; i < 4; bump(c)) out[i] = 1.0f; bump(c); }
    """)
    body = _text(inline_helpers(fns["k"], {"bump": fns["bump"]}).body)
    assert "bump(c))" in body           # the header's call stays a call
    assert body.count("bump(c)") == 1   # the statement's call is inlined


def _text(node) -> str:
    return c_generator.CGenerator().visit(node)
