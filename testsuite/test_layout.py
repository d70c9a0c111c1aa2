"""Arrays of structs: struct layouts, field accesses in the model, the layout choice,
its application to kernels, launches and host calls, and its validation (issue 16).

Every transformed fixture is compiled with nvcc for sm_90 and run as a whole program on
the CPU beside its original: both print the same numbers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import compile_sm90, runs_alike
from polycoal.analysis import analyze_program
from polycoal.codegen.layout import group_parameters
from polycoal.decisions import TransformOptions
from polycoal.frontend import read_program
from polycoal.frontend.lexer import tokenize
from polycoal.frontend.preprocess import PreprocessorOptions
from polycoal.frontend.structs import struct_types
from polycoal.model.extract import extract_model
from polycoal.model.poly import Poly
from polycoal.optimize.layout import Group, Layout, candidates
from polycoal.optimize.layout_plan import plan_layouts, unroll_factors
from polycoal.transform import transform_program
from polycoal.validate.layout import layout_is_injective, layout_problems

LAYOUT = Path(__file__).parent / "fixtures" / "layout"


def _transform(path: Path, defines=(), **options):
    program = read_program(str(path), PreprocessorOptions(defines=tuple(defines)))
    return program, transform_program(program, TransformOptions(
        preprocessor=PreprocessorOptions(defines=tuple(defines)), **options))


def _plans(path: Path, defines=()):
    program = read_program(str(path), PreprocessorOptions(defines=tuple(defines)))
    pa = analyze_program(program)
    return program, pa, plan_layouts(program, pa.kernels)


# ---------------------------------------------------------------- struct layouts

def test_struct_layouts_follow_the_c_rules():
    structs = struct_types(tokenize("""
        typedef struct { float x, y, z, vx, vy, vz, m; } Body;
        struct P { float3 pos; float4 vel; double rho; int id; float f[3];
                   __device__ void step(float dt) { pos.x += dt; } };
        typedef struct Q { unsigned int a; char c; } QQ, *QP;
        struct B : P { int z; };
        struct F { int flag : 1; };
    """))
    body = structs["Body"]
    assert (body.size, body.align, body.unit) == (28, 4, 4)
    assert [leaf.offset for leaf in body.leaves()] == [0, 4, 8, 12, 16, 20, 24]
    p = structs["struct P"]
    # float3: 12 bytes aligned to 4; float4 aligned to 16; double to 8; size rounded to 16
    assert [(leaf.path, leaf.offset) for leaf in p.leaves()][:4] == [
        ("pos.x", 0), ("pos.y", 4), ("pos.z", 8), ("vel.x", 16)]
    assert p.leaf("rho").offset == 32 and p.leaf("id").offset == 40
    assert p.leaf("f[2]").offset == 52 and (p.size, p.align) == (64, 16)
    assert structs["QQ"] is structs["Q"] and structs["Q"].size == 8 and "QP" not in structs
    assert not structs["B"].plain and "base class" in structs["B"].why
    assert not structs["F"].plain and "bit-field" in structs["F"].why


# ---------------------------------------------------------------- the model

def test_a_field_strides_by_the_struct_size(kernel_analysis):
    ka = kernel_analysis(str(LAYOUT / "nbody_aos.cu"), "integrate_position")
    refs = [r for r in ka.references if r.access.member == "x" and r.access.kind == "read"]
    assert refs and refs[0].access.unit == 4 and refs[0].access.struct == "Body"
    assert refs[0].strides["x"] == Poly.const(7)
    assert (refs[0].sectors, refs[0].ideal_sectors, refs[0].coalesced) == (28, 4, False)


def test_different_fields_of_one_element_do_not_race(kernel_analysis):
    # body_force reads p[j].x of every j and writes p[i].vx: other bytes, no race
    ka = kernel_analysis(str(LAYOUT / "nbody_aos.cu"), "body_force")
    assert ka.races == []


def test_every_spelling_of_a_field(write_cu):
    path = write_cu("""
        struct S { float a, b, c; };
        __global__ void k(struct S *s, float *out, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) out[i] = s[i].b + s->c + (*s).a + ((float *)s)[3 * i + 2];
        }
    """)
    program = read_program(str(path))
    model = extract_model(program.kernels[0], program)
    got = {(a.text, a.member, str(a.flat)) for s in model.statements for a in s.accesses
           if a.array == "s"}
    assert ("s[i].b", "b", str(Poly.var("gx") * 3 + 1)) in {
        (t, m, f) for t, m, f in got if m == "b"}
    members = sorted(m for _, m, _ in got)
    assert members == ["a", "b", "c", "c"]      # s->c and ((float *)s)[3i+2] are c


# ---------------------------------------------------------------- the choice

def test_nbody_groups_the_fields_read_together():
    _, _, plans = _plans(LAYOUT / "nbody_aos.cu")
    (plan,) = plans
    assert plan.changes and plan.layout.kind == "grouped"
    groups = [tuple(leaf.path for leaf in g.leaves) for g in plan.layout.groups]
    assert groups == [("x", "y", "z", "m"), ("vx", "vy", "vz")]
    assert [g.type for g in plan.layout.groups] == ["float4", "float4"]
    aos, chosen = plan.priced[0][1], next(p for c, p in plan.priced if c is plan.layout)
    # the force loop issues one 128-bit load per partner instead of four 32-bit ones:
    # an issue-bound loop (21 arithmetic instructions a partner) saves about 12%
    assert chosen.requests < 0.3 * aos.requests
    assert 0.8 * aos.total < chosen.total < 0.9 * aos.total


@pytest.mark.parametrize("gains,gathers,kind", [(1, 10, None), (20, 1, None), (100, 1, "soa")])
def test_the_launches_decide_the_mixed_layout(gains, gathers, kind, write_cu):
    # gather reads the four fields of unrelated samples (wants them in one sector: the
    # array of structs as it is), gain one field in order (wants it alone): how often
    # each is launched weighs them, against the conversions a new layout adds
    text = (LAYOUT / "mixed_layout.cu").read_text().replace(
        "k < 1; k++", f"k < {gains}; k++").replace("g < 10; g++", f"g < {gathers}; g++")
    _, _, (plan,) = _plans(write_cu(text))
    if kind is None:
        assert not plan.changes and "conversions included" in plan.reason
        soa_price = next(p for c, p in plan.priced if c.kind == "soa")
        assert soa_price.conversions > 0
    else:
        assert plan.layout.kind == kind and plan.changes


def test_every_candidate_places_each_byte_once():
    for fixture in ("nbody_aos.cu", "particles_aos.cu", "mixed_layout.cu", "double_buffer.cu"):
        _, _, plans = _plans(LAYOUT / fixture)
        for plan in plans:
            for layout in candidates(plan.struct, [(u.leaves, u.count) for u in plan.uses]):
                assert layout_is_injective(layout) == [], (fixture, layout.describe())
    body = struct_types(tokenize("struct B { float x, y; };"))["B"]
    x, y = body.leaves()
    clash = Layout(body, "grouped", (Group((x, y), "float2", 8, 8, ("x", "x")),))
    assert layout_is_injective(clash) == ["two fields share a byte"]


def test_unrolling_of_streaming_and_short_loops(program, analysis, write_cu):
    pa = analysis(str(LAYOUT / "nbody_aos.cu"))
    _, _, (plan,) = _plans(LAYOUT / "nbody_aos.cu")
    force = next(ka for ka in pa.kernels if ka.kernel.name == "body_force")
    (line, (factor, why)), = unroll_factors(force.model, plan.layout, {"p"}).items()
    assert factor == 16 and "same element in every thread" in why
    text = """
        struct S { float a, b, c, d; };
        __global__ void k(const S *s, float *out, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) {
            float acc = 0.0f;
            for (int w = 0; w < 8; w++) acc += s[i + w].a * s[i + w].b;
            out[i] = acc;
          }
        }
    """
    program = read_program(str(write_cu(text)))
    model = analyze_program(program).kernels[0].model
    from polycoal.optimize.layout import soa
    # 8 iterations: a constant trip count, unrolled completely
    assert [f for f, _ in unroll_factors(model, soa(program.structs["S"]), {"s"}).values()] \
        == [0]


# ---------------------------------------------------------------- the transform

FIXTURES = [("nbody_aos.cu", ("200", "2"), "auto"), ("particles_aos.cu", ("700",), "auto"),
            ("mixed_layout.cu", ("1000",), "soa"), ("mixed_layout.cu", ("1000",), "grouped"),
            ("double_buffer.cu", ("1000",), "auto"), ("whole_elements.cu", (), "auto"),
            ("element_pointer.cu", (), "auto")]


@pytest.mark.parametrize("fixture,argv,layout", FIXTURES,
                         ids=[f"{f}-{layout}" for f, _, layout in FIXTURES])
def test_layout_programs_build_and_run_alike(fixture, argv, layout, tmp_path, nvcc):
    program, result = _transform(LAYOUT / fixture, layout=layout)
    changed = [d for d in result.decisions if d.action == "layout"]
    assert changed and all(d.action == "layout" for d in result.decisions), \
        [str(x) for x in result.diagnostics]
    assert not [x for x in result.diagnostics if x.severity == "error"]
    out = tmp_path / fixture
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    runs_alike(program.text, result.text, tmp_path, argv=argv)


def test_launches_pass_segments_and_host_calls_convert():
    _, result = _transform(LAYOUT / "nbody_aos.cu")
    text = result.text
    assert "body_force<<<blocks, 256>>>((float4 *)polycoal_layout_segment(d_bodies, 0), " \
           "(float4 *)polycoal_layout_segment(d_bodies, 16), dt, n);" in text
    assert "CHECK(polycoal_Body_malloc((void **)&d_bodies, bytes));" in text
    assert "CHECK(polycoal_Body_to_device(d_bodies, h, bytes, cudaMemcpyHostToDevice, 0));" in text
    assert "CHECK(polycoal_Body_to_host(h, d_bodies, bytes, cudaMemcpyDeviceToHost, 0));" in text
    assert "CHECK(polycoal_Body_free(d_bodies));" in text
    # the read-only group of body_force is restrict; its written group is not
    assert "__global__ void body_force(const float4 *__restrict__ p__x_y_z_m, " \
           "float4 *p__vx_vy_vz, float dt, int n)" in text
    assert '_Pragma("unroll 16") for (int j = 0; j < n; j++)' in text


def test_a_pointer_to_an_element_is_its_fields():
    _, result = _transform(LAYOUT / "element_pointer.cu")
    text = result.text
    assert "  Particle *p = &ps[i];" not in text and "ps__vx[i] -= 9.8f * dt * ps__mass[i];" \
        in text
    # written through the pointer: not read-only; only read: restrict
    assert "float *ps__vx, const float *__restrict__ ps__vy" in text


def test_the_validator_rejects_a_wrong_field(program):
    original = program(str(LAYOUT / "nbody_aos.cu"))
    _, result = _transform(LAYOUT / "nbody_aos.cu")
    d = next(d for d in result.decisions if d.kernel == "integrate_position")
    params = d.layout.kernels[d.kernel]
    names = {p: group_parameters(p, layout) for p, layout in params.items()}
    good = read_program(original.path, text=result.text)
    old = d.analysis.model
    new = extract_model(good.kernel(d.kernel), good)
    assert layout_problems(old, new, params, names) == []
    bad_text = result.text.replace("p__x_y_z_m[i].y += p__vx_vy_vz[i].y",
                                   "p__x_y_z_m[i].y += p__vx_vy_vz[i].z")
    assert bad_text != result.text
    bad = read_program(original.path, text=bad_text)
    problems = layout_problems(old, extract_model(bad.kernel(d.kernel), bad), params, names)
    assert problems and "accesses differ" in problems[0]


ESCAPE = """
struct Body {{ float x, y, z, w, m; }};
__global__ void move(Body *p, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i].x += p[i].w * 0.5f;
}}
void fill(Body *d, int n);
int main() {{
  int n = 1000;
  Body *d;
  cudaMalloc(&d, n * sizeof(Body));
  {use}
  move<<<(n + 127) / 128, 128>>>({arg}, n);
  cudaFree(d);
  return 0;
}}
"""


@pytest.mark.parametrize("use,arg,why", [
    ("fill(d, n);", "d", "used where polycoal cannot follow it"),
    ("", "d + 1", "in an argument of a launch"),
    ("cudaMemcpy2D(d, 20, 0, 20, 20, 1, cudaMemcpyHostToDevice);", "d",
     "used where polycoal cannot follow it"),
])
def test_an_array_polycoal_cannot_follow_keeps_its_layout(use, arg, why, write_cu):
    path = write_cu(ESCAPE.format(use=use, arg=arg))
    program = read_program(str(path))
    result = transform_program(program, TransformOptions())
    assert all(d.action != "layout" for d in result.decisions)
    kept = [x for x in result.diagnostics if x.code == "layout-kept"]
    assert kept and why in kept[0].message, [str(x) for x in result.diagnostics]
    assert "polycoal_layout" not in result.text


def test_a_whole_element_inside_an_expression_keeps_the_layout(write_cu):
    path = write_cu(ESCAPE.format(use="", arg="d").replace(
        "__global__ void move", "__device__ float norm2(Body b) { return b.x * b.x; }\n"
        "__global__ void move").replace("if (i < n) p[i].x += p[i].w * 0.5f;",
                                         "if (i < n) p[i].w = norm2(p[i]);"))
    result = transform_program(read_program(str(path)), TransformOptions())
    kept = [x for x in result.diagnostics if x.code == "layout-kept"]
    assert kept and "used as a whole element" in kept[0].message, \
        [str(x) for x in result.diagnostics]


def test_whole_elements_are_written_field_by_field():
    _, result = _transform(LAYOUT / "whole_elements.cu", layout="soa")
    text = result.text
    assert "Body b; b.x = p__x[i]; b.y = p__y[i];" in text
    assert "float3 v; v.x = p__v_x[i]; v.y = p__v_y[i]; v.z = p__v_z[i];" in text
    assert "{ q__x[i] = b.x; q__y[i] = b.y;" in text
    # under the `if`, every field of the copy (one compound statement)
    assert "if (i == 0) { q__x[0] = p__x[0]; q__y[0] = p__y[0];" in text


def test_layout_options(write_cu):
    path = LAYOUT / "nbody_aos.cu"
    _, kept = _transform(path, layout="none")
    assert all(d.action != "layout" for d in kept.decisions)
    _, soa = _transform(path, layout="soa")
    d = next(d for d in soa.decisions if d.action == "layout")
    assert d.layout.layout.kind == "soa" and "const float *__restrict__ p__m" in soa.text


def test_analyze_reports_each_struct_array(tmp_path):
    from polycoal.cli import main
    out = tmp_path / "report.json"
    assert main(["analyze", str(LAYOUT / "nbody_aos.cu"), "--format", "json", "-o",
                 str(out)]) == 0
    import json
    (body,) = json.loads(out.read_text())["struct_arrays"]
    assert body["struct"] == "Body" and body["chosen"] == "grouped" and body["applied"]
    assert {c["kind"] for c in body["candidates"]} == {"aos", "soa", "grouped"}
    assert {"kernel": "integrate_position", "field": "x", "sectors": 28, "ideal": 4,
            "wasted": 24} in body["fields"]
    together = [u["fields"] for u in body["read_together"] if u["kernel"] == "body_force"]
    assert ["x", "y", "z", "m"] in together
    text = tmp_path / "report.txt"
    assert main(["analyze", str(LAYOUT / "nbody_aos.cu"), "-o", str(text)]) == 0
    assert "struct Body (28 bytes" in text.read_text()
    assert "field x in integrate_position: 28 sectors per request where 4 would do" \
        in text.read_text()


def test_an_internal_error_in_a_layout_is_confined(monkeypatch):
    import polycoal.passes.layout as transform

    def broken(*args, **kwargs):
        raise ZeroDivisionError("on purpose")
    monkeypatch.setattr(transform, "rewrite_kernel", broken)
    program, result = _transform(LAYOUT / "nbody_aos.cu")
    assert result.text == program.text
    (error,) = [x for x in result.diagnostics if x.code == "internal-error"]
    assert "ZeroDivisionError: on purpose" in error.message and error.location.line == 17
    assert all(d.action != "layout" for d in result.decisions)


ASYNC = """
#include <stdio.h>
#include <stdlib.h>
struct Cell { float u, v, w, q, r; };
__global__ void relax(Cell *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { c[i].u = 0.5f * (c[i].u + c[i].v); c[i].w -= c[i].u * 0.25f; }
}
int main() {
  int n = 3000;
  size_t bytes = n * sizeof(Cell);
  Cell *h = (Cell *)malloc(bytes);
  for (int i = 0; i < n; i++) { h[i].u = i; h[i].v = 1; h[i].w = 2; h[i].q = 3; h[i].r = 4; }
  cudaStream_t s;
  cudaStreamCreate(&s);
  Cell *d;
  cudaMalloc(&d, bytes);
  cudaMemsetAsync(d, 0, bytes, s);
  cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
  for (int k = 0; k < 50; k++) relax<<<(n + 127) / 128, 128, 0, s>>>(d, n);
  cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  double t = 0;
  for (int i = 0; i < n; i++) t += h[i].u + h[i].w + h[i].q;
  printf("%.6f\\n", t);
  cudaFree(d);
  cudaStreamDestroy(s);
  free(h);
  return 0;
}
"""


def test_copies_on_a_stream_convert_on_that_stream(write_cu, tmp_path):
    path = write_cu(ASYNC)
    program = read_program(str(path))
    result = transform_program(program, TransformOptions())
    assert [d.action for d in result.decisions] == ["layout"], \
        [str(x) for x in result.diagnostics]
    assert "polycoal_Cell_to_device(d, h, bytes, cudaMemcpyHostToDevice, s)" in result.text
    assert "polycoal_Cell_memset(d, 0, bytes, s)" in result.text
    # the two copies across the boundary are priced as conversions
    (d,) = result.decisions
    assert next(p for c, p in d.layout.priced if c is d.layout.layout).conversions > 0
    runs_alike(program.text, result.text, tmp_path)
