"""Data placement across memory kinds (issue 18): the memory specification, the cost
model, the search, the rewrite (read-only path, constant memory filled at launches and
kept while its source is unchanged, a launch choosing by its size), and `polycoal
place`. Outputs are compiled with nvcc for sm_90 and run on the CPU beside the
original."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import compile_sm90, runs_alike, cpu_runner
from polycoal.analysis.placement_cost import ArrayReads, Reference, array_reads
from polycoal.diagnostics import InputError
from polycoal.frontend import read_program
from polycoal.model.extract import extract_model
from polycoal.model.memory_spec import load_spec, parse_spec
from polycoal.optimize.placement import (ArrayChoice, KernelPlacement, Option, _fits,
                                         branch_and_bound, greedy)
from polycoal.placement import place_program

PLACEMENT = Path(__file__).parent / "fixtures" / "placement"
SPEC = load_spec()


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "polycoal", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


# ---------------------------------------------------------------- the specification

def test_the_shipped_rules_count_what_each_memory_serialises():
    constant, global_, shared = (SPEC.memory(m) for m in ("constant", "global", "shared"))
    same = [0] * 32
    consecutive = [4 * k for k in range(32)]
    strided = [128 * k for k in range(32)]          # 32 words apart: one bank
    assert constant.transactions(same) == 1         # broadcast
    assert constant.transactions(consecutive) == 32      # one address a pass
    assert global_.transactions(consecutive) == 4        # four 32-byte sectors
    assert global_.transactions(strided) == 32
    assert shared.transactions(consecutive) == 1
    assert shared.transactions(strided) == 32            # a 32-way bank conflict
    assert shared.transactions(same) == 1


@pytest.mark.parametrize("change,message", [
    ("serialise = \"distinct(address // 32)\"", None),
    ("serialise = \"open('x')\"", "only distinct"),
    ("serialise = \"distinct(address ** 2)\"", "not an integer expression"),
    ("serialise = \"distinct(lane)\"", "unknown name"),
    ("colour = 1", "unknown colour"),
])
def test_a_user_specification_is_checked(change, message):
    text = (Path(__file__).parents[1] / "grammars" / "memory_sm90.toml").read_text()
    if change.startswith("serialise"):
        text = text.replace('serialise = "distinct(address // transaction)"', change, 1)
    else:
        text = text.replace("[[memory]]\nname = \"global\"", f"[[memory]]\n{change}\n"
                            "name = \"global\"", 1)
    if message is None:
        assert parse_spec(text).memory("global").transactions([0, 64]) == 2
        return
    with pytest.raises(InputError, match=message):
        spec = parse_spec(text)
        spec.memory("global").transactions([0, 4])


# ---------------------------------------------------------------- the cost model

def _reads(name: str) -> dict[str, ArrayReads]:
    program = read_program(str(PLACEMENT / name))
    kernel = program.kernels[0]
    return array_reads(extract_model(kernel, program))


def test_a_coefficient_table_broadcasts_and_a_lookup_scatters():
    fir = _reads("fir_filter.cu")
    assert fir["coef"].uniform == 1.0 and fir["coef"].footprint == 32 * 4
    assert fir["in"].uniform == 0.0 and fir["in"].footprint is None   # n: run time
    lookup = _reads("lookup_table.cu")
    assert [r.affine for r in lookup["table"].references] == [False]
    per = {m.name: sum(m.request(w, 1024) for w in lookup["table"].references[0].warps)
           for m in SPEC.memories}
    assert per["constant"] > per["global"]         # serialised over distinct keys
    coef = fir["coef"].references[0].warps
    assert SPEC.memory("constant").request(coef[0], 128) < \
        SPEC.memory("global").request(coef[0], 128)


# ---------------------------------------------------------------- the search

def _choice(name: str, costs: dict[str, float | None], last: int, uniform: bool = False):
    warps = ((0,) * 32,) if uniform else (tuple(range(0, 128, 4)),)
    reads = ArrayReads(name, "float", 4, (Reference(name, 1, 1.0, warps, True),), 0, last,
                       False)
    return ArrayChoice(reads, [Option(m, c, None if c is not None else "no")
                               for m, c in costs.items()])


def test_branch_and_bound_finds_the_optimum_within_capacity():
    """Four arrays compete for 64 KB of constant memory: the search's assignment is the
    cheapest of all assignments that fit, as trying every one finds; the greedy's fits."""
    arrays = [_choice("a", {"global": 100, "readonly": 95, "constant": 10}, 12287, True),
              _choice("b", {"global": 90, "readonly": 80, "constant": 20}, 8191, True),
              _choice("c", {"global": 50, "readonly": 49, "constant": 5}, 4095, True),
              _choice("d", {"global": 70, "readonly": None, "constant": 30}, 2047)]
    best = branch_and_bound(arrays, SPEC)
    every = []
    for combo in itertools.product(*[[o.memory for o in a.options if o.cost is not None]
                                     for a in arrays]):
        assignment = dict(zip("abcd", combo))
        if _fits(assignment, arrays, SPEC):
            every.append((sum(a.cost(assignment[a.reads.array]) for a in arrays), assignment))
    cheapest = min(every, key=lambda x: x[0])
    placement = KernelPlacement("k", arrays)
    assert placement.total(best) == cheapest[0]
    assert _fits(greedy(arrays, SPEC), arrays, SPEC)
    assert placement.total(greedy(arrays, SPEC)) >= cheapest[0]


# ---------------------------------------------------------------- whole programs

def test_the_fir_filter_takes_constant_memory_where_its_size_pays(tmp_path, nvcc):
    """The FIR's size is read at run time: the coefficients go to constant memory in a
    second kernel that each launch takes where its predicted gain outweighs the fill
    (the samples stay: read in place they hit the L1 as often as a tile would serve
    them); both branches give the original's results."""
    program = read_program(str(PLACEMENT / "fir_filter.cu"))
    result = place_program(program, SPEC)
    k = result.kernels[0]
    assert k.applied and k.sized and {a.reads.array: a.chosen for a in k.arrays} == \
        {"coef": "constant", "in": "global"}
    assert "__global__ void fir_pc_placed(" in result.text
    assert "polycoal_fill_stale(pc_const_fir_coef_filled" in result.text
    out = tmp_path / "fir.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    # small: the gains never pay a fill, the original runs; large: once the gains
    # forgone reach the fill (rent or buy), the launches after run the placed kernel
    assert "polycoal_fill_worth(pc_const_fir_coef_filled" in result.text
    for n, steps in (("3000", "2"), ("300000", "8")):
        runs_alike(program.text, result.text, tmp_path, argv=(n, steps))


def test_a_constant_copy_is_refilled_after_the_host_writes_its_source(write_cu, tmp_path):
    """Between launches the host copies new coefficients: the launch after refills the
    constant array (a stale copy would print other numbers)."""
    text = (PLACEMENT / "fir_filter.cu").read_text().replace(
        "  for (int s = 0; s < steps; s++)\n    fir<<<",
        "  for (int s = 0; s < steps; s++) {\n"
        "    h_coef[s % TAPS] += 1.0f;\n"
        "    cudaMemcpy(d_coef, h_coef, TAPS * sizeof(float), cudaMemcpyHostToDevice);\n"
        "    fir<<<").replace("d_coef, n);\n  cudaEventRecord(stop);",
                             "d_coef, n);\n  }\n  cudaEventRecord(stop);")
    assert text.count("h_coef[s % TAPS]") == 1
    program = read_program(str(write_cu(text, "fir.cu")))
    result = place_program(program, SPEC, {(None, "coef"): "constant"})
    assert "polycoal_irregular_written(cudaMemcpy(d_coef" in result.text
    runs_alike(program.text, result.text, tmp_path, argv=("2000", "4"))


def test_a_lookup_table_stays_where_constant_memory_would_serialise(tmp_path):
    program = read_program(str(PLACEMENT / "lookup_table.cu"))
    result = place_program(program, SPEC)
    k = result.kernels[0]
    assert not k.applied and result.text == program.text
    table = next(a for a in k.arrays if a.reads.array == "table")
    assert table.cost("constant") > table.cost("global")
    forced = place_program(program, SPEC, {(None, "table"): "readonly",
                                           (None, "key"): "readonly"})
    assert "__ldg(&table[__ldg(&key[i]) % ENTRIES])" in forced.text
    runs_alike(program.text, forced.text, tmp_path, argv=("3000", "2"))


def test_a_traced_segment_table_broadcasts(tmp_path, nvcc):
    """coef[4 * (i / seg) + k] is not affine: drawn at random its lanes scatter over 32
    constant addresses a request; traced (seg = 1024, a multiple of the warp), each
    request reads one address. Its index is computed per thread, so a constant read is
    an LDC with a register index, priced as an L1 hit (measured on the H100: placed,
    0.83-0.93x): the table stays in global memory. Forced there, the program builds and
    gives the original's results, for a segment length the trace did not see too."""
    from polycoal.placement import trace_reads
    program = read_program(str(PLACEMENT / "spline_segments.cu"))
    drawn = place_program(program, SPEC)
    coef = next(a for a in drawn.kernels[0].arrays if a.reads.array == "coef")
    assert not drawn.kernels[0].applied and coef.reads.uniform == 0.0
    assert not any(r.traced for r in coef.reads.references)
    observed, notes = trace_reads(program, {"n": 8192, "seg": 1024})
    assert set(observed) == {"eval_segments"} and "traced on the CPU" in \
        notes["eval_segments"]
    traced = place_program(program, SPEC, observed=observed, trace_notes=notes)
    k = traced.kernels[0]
    traced_coef = next(a for a in k.arrays if a.reads.array == "coef")
    assert traced_coef.reads.uniform == 1.0
    assert all(r.traced and r.indexed for r in traced_coef.reads.references)
    assert traced_coef.cost("constant") < coef.cost("constant") / 10
    assert not k.applied and traced.text == program.text
    forced = place_program(program, SPEC, {(None, "coef"): "constant"}, observed=observed)
    out = tmp_path / "spline.cu"
    out.write_text(forced.text)
    compile_sm90(nvcc, out)
    for argv in (("5000", "2", "1024"), ("100000", "8", "80")):
        runs_alike(program.text, forced.text, tmp_path, argv=argv)
    # the command line: the report says what was traced
    run = _cli("place", PLACEMENT / "spline_segments.cu", "--trace", "--arg", "seg=1024",
               "--arg", "n=8192", "-o", tmp_path / "cli.cu")
    assert run.returncode == 0, run.stderr
    assert "traced on the CPU" in run.stderr and "100% of traced requests" in run.stderr
    assert (tmp_path / "cli.cu").read_text() == program.text


def test_written_or_aliased_arrays_never_go_to_read_only_memories(write_cu):
    path = write_cu("""
        __global__ void scale(float *y, const float *x, const float *w, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = w[0] * x[i] + y[i];
        }
        int main() {
          float *a, *b; int n = 1 << 20;
          cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, 4);
          scale<<<n / 256, 256>>>(a, a, b, n);
          return 0;
        }
    """)
    program = read_program(str(path))
    k = place_program(program, SPEC).kernels[0]
    options = {a.reads.array: {o.memory: o.why_not for o in a.options} for a in k.arrays}
    assert "writes it" in options["y"]["readonly"]
    assert "alias" in options["x"]["readonly"] and "alias" in options["w"]["constant"]
    with pytest.raises(InputError, match="alias"):
        place_program(program, SPEC, {(None, "w"): "constant"})


def test_place_on_the_command_line(tmp_path, nvcc):
    source = PLACEMENT / "fir_filter.cu"
    before = source.read_text()
    out = tmp_path / "placed.cu"
    r = _cli("place", source, "--place", "fir:coef=constant", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "coef (float, 128 bytes, 100% of requests one address): constant (forced)" \
        in r.stderr
    compile_sm90(nvcc, out)
    r = _cli("place", source, "--report", "json")
    assert r.returncode == 0 and r.stdout.startswith("// A FIR filter")   # the program
    assert '"schema": "polycoal-place"' in r.stderr
    for bad, message in ((["--place", "out=constant"], "no kernel reads a global array"),
                         (["--place", "coef=texture"], "has no memory 'texture'"),
                         (["--place", "coef"], "expected [KERNEL:]ARRAY=MEMORY"),
                         (["--memory-spec", tmp_path / "none.toml"], "cannot read")):
        r = _cli("place", source, *bad, "-o", tmp_path / "bad.cu")
        assert r.returncode == 2 and message in r.stderr, (bad, r.stderr)
        assert not (tmp_path / "bad.cu").exists()
    assert source.read_text() == before


def _polybench(name: str):
    from polycoal.frontend.preprocess import PreprocessorOptions
    root = Path(__file__).parents[1] / "polybench_inputs"
    options = PreprocessorOptions((str(root / name), str(root / "common")), (), ())
    return read_program(str(root / name / f"{name}.cu"), options), options


def test_kernels_whose_threads_race_stay_as_written():
    """PolyBench/GPU's ATAX launches 8 idle copies of each thread along y, all updating
    tmp[i]: its result depends on their order, which a placement changes (measured: all
    4096 outputs wrong with x read through __ldg on an H100)."""
    program, options = _polybench("atax")
    result = place_program(program, SPEC, preprocessor=options)
    assert result.text == program.text
    for k in result.kernels:
        assert not k.applied and "race" in k.reason, k.reason
        assert all(o.cost is None for a in k.arrays for o in a.options if o.memory != "global")


def test_a_range_over_a_run_time_size_stays_inside_the_allocation():
    """Jacobi-1D reads A[i - 1 .. i + 1] for 0 < i < n - 1, n an argument: over every n
    the grid allows that reaches A[4096], past the 4096 elements the launch passes; the
    copy into constant memory takes only those (a copy of 4097 failed on the H100)."""
    program, options = _polybench("jacobi1d")
    result = place_program(program, SPEC, {("runJacobiCUDA_kernel1", "A"): "constant"},
                           preprocessor=options)
    a = next(a for a in result.kernels[0].arrays if a.reads.array == "A")
    assert (a.reads.first, a.reads.last) == (0, 4095)
    assert "pc_const_runJacobiCUDA_kernel1_A[4096]" in result.text


def test_a_stencil_is_staged_in_shared_memory(tmp_path, nvcc):
    """Each point of the 1-D stencil reads in[i + k], k in [-8, 8]: a block's reads fit
    a tile of 256 + 16 elements, loaded once, coalesced, inside what the launch reads
    (the size n known only at run time); results equal the original's, also where n is
    smaller than a block's reach. The cost model keeps the stencil as written (its
    neighbours hit in the L1, and the H100 measured the tile 1.33x slower): staged on
    request."""
    program = read_program(str(PLACEMENT / "stencil_1d.cu"))
    chosen = place_program(program, SPEC)
    assert not chosen.kernels[0].applied and chosen.text == program.text
    table = {o.memory: o.cost for o in chosen.kernels[0].arrays[0].options}
    assert table["shared"] > table["global"]
    result = place_program(program, SPEC, {(None, "in"): "shared"})
    k = result.kernels[0]
    assert k.applied and [a.chosen for a in k.arrays] == ["shared"]
    assert "__shared__ float pc_tile_in[272];" in result.text
    assert "sum += pc_tile_in[(i + k) - pc_base_in];" in result.text
    out = tmp_path / "stencil.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    for n in ("3000", "20", "10"):
        runs_alike(program.text, result.text, tmp_path, argv=(n, "3"))


def test_the_staged_reads_are_checked_against_the_tile(write_cu):
    """The read-back check of a staged kernel: the original's reads A[f] must appear as
    tile reads at f - (blockIdx.x B + low); a wrong offset is refused."""
    from polycoal.placement import _same_reads, _staging
    program = read_program(str(PLACEMENT / "stencil_1d.cu"))
    result = place_program(program, SPEC, {(None, "in"): "shared"})
    kernel = program.kernels[0]
    before = extract_model(kernel, program)
    staging = {"in": _staging(array_reads(before)["in"], (256, 1))}

    def model_of(text):
        p = read_program(str(write_cu(text, "s.cu")))
        return extract_model(p.kernel("smooth"), p)
    assert _same_reads(before, model_of(result.text), {}, staging, (256, 1))
    wrong = result.text.replace("pc_tile_in[(i + k) - pc_base_in]",
                                "pc_tile_in[(i + k) - pc_base_in + 1]")
    assert not _same_reads(before, model_of(wrong), {}, staging, (256, 1))


def test_an_internal_error_is_confined_to_its_kernel(monkeypatch):
    """A failure inside the rewrite of one kernel is reported at the kernel's definition
    and the kernel stays as written; the others are placed."""
    import polycoal.placement as placement
    text = (PLACEMENT / "fir_filter.cu").read_text()
    program = read_program(str(PLACEMENT / "fir_filter.cu"))

    def broken(*args, **kwargs):
        raise ZeroDivisionError("on purpose")
    monkeypatch.setattr(placement, "rewrite_kernel", broken)
    result = place_program(program, SPEC, {(None, "coef"): "constant"})
    assert result.text == text
    [d] = result.diagnostics
    assert d.severity == "error" and d.code == "internal-error" and \
        "fir_filter.cu:12" in str(d) and "ZeroDivisionError" in str(d)
    assert not result.kernels[0].applied


BLUR_LOOPS = """    float sum = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++)
        sum += in[(y + dy) * WIDTH + x + dx];"""


@pytest.mark.parametrize("spelling", ["unrolled", "loops"])
def test_a_two_dimensional_stencil_is_staged_in_a_tile(spelling, tmp_path, nvcc, monkeypatch,
                                                       write_cu):
    """A 3x3 blur reads in[(y + dy) WIDTH + x + dx], its nine reads written out (as
    PolyBench's 2dconv) or in loops over the radius: staged, each block loads a
    (8 + 2) x (32 + 2) tile and reads in[...] as pc_tile_in[(ty + dy + 1) 34 + tx + dx
    + 1]; x + dx is a column for every launch (x < WIDTH - 1), so the kernel is
    replaced in place. Its results equal the original's on the CPU; a tile read given
    another read's shift fails the read-back check and leaves the kernel as written."""
    import re
    import polycoal.placement as driver
    text = (PLACEMENT / "blur_2d.cu").read_text()
    if spelling == "loops":
        text = re.sub(r"    float sum = in\[.*?\];\n", BLUR_LOOPS + "\n", text, flags=re.S)
        assert "for (int dx" in text
    program = read_program(str(write_cu(text, "blur.cu")))
    result = place_program(program, SPEC, {(None, "in"): "shared"})
    k = result.kernels[0]
    assert k.applied and k.placed_name == "blur" and k.assumed is None
    assert "__shared__ float pc_tile_in[340];" in result.text
    if spelling == "loops":
        assert "pc_tile_in[((int)threadIdx.y + (dy + 1)) * 34 + (int)threadIdx.x + (dx + 1)]" \
            in result.text
    else:
        assert "pc_tile_in[((int)threadIdx.y + (0)) * 34 + (int)threadIdx.x + (0)]" in \
            result.text
        assert "pc_tile_in[((int)threadIdx.y + (2)) * 34 + (int)threadIdx.x + (2)]" in \
            result.text
    out = tmp_path / "blur.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    runs_alike(program.text, result.text, tmp_path, argv=(str(1024 * 21), "2"))
    staging = driver._staging

    def swapped(reads, block):          # one read's column shifted by one
        st = staging(reads, block)
        shifts = list(st.shifts)
        shifts[0] = (shifts[0][0], shifts[0][1], shifts[0][2] + 1)
        return driver.Staging(st.low, st.rows, st.columns, st.inside, st.width, st.top,
                              tuple(shifts))
    monkeypatch.setattr(driver, "_staging", swapped)
    wrong = place_program(program, SPEC, {(None, "in"): "shared"})
    assert not wrong.kernels[0].applied and wrong.text == program.text
    assert "does not read back" in wrong.kernels[0].reason


@pytest.mark.parametrize("seed", [8010, 8047, 8077, 8103])
def test_random_stencils_staged_run_alike(seed, tmp_path, write_cu):
    """Random stencil programs of our own tester (difftest family `stencil`), every
    array that can be staged forced into shared memory: the rewrite is applied and the
    program prints what the original prints on the CPU."""
    from polycoal.difftest.generator import generate
    text = generate(seed, "stencil").source
    program = read_program(str(write_cu(text, "p.cu")))
    forced = {(k.kernel, a.reads.array): "shared" for k in place_program(program, SPEC).kernels
              for a in k.arrays if a.cost("shared") is not None}
    assert forced
    result = place_program(program, SPEC, forced)
    assert any(k.applied for k in result.kernels) and "pc_tile_" in result.text
    cpu = cpu_runner()
    runs = [cpu.compile_and_run(t)[0] for t in (program.text, result.text)]
    assert all(r is not None and r.failure is None for r in runs)
    # the tester's checks (CHECK name sum count per array): staging changes no arithmetic
    assert runs[0].stdout.count("CHECK") >= 2 and runs[0].stdout == runs[1].stdout


def test_polybench_2dconv_stages_where_its_launch_keeps_reads_in_their_rows(tmp_path, nvcc):
    """2dconv's bound nj is an argument, its row width NJ a macro: for nj > NJ + 1 its
    reads at j + 1 would wrap into the next row, so the staged kernel runs where the
    launch's values keep every read in its row, the kernel as written elsewhere."""
    from polycoal.frontend.preprocess import PreprocessorOptions
    folder = Path(__file__).parent.parent / "polybench_inputs"
    options = PreprocessorOptions((str(folder / "2dconv"), str(folder / "common")), (), ())
    program = read_program(str(folder / "2dconv" / "2dconv.cu"), options)
    result = place_program(program, SPEC, {(None, "A"): "shared"}, options)
    k = result.kernels[0]
    assert k.applied and k.placed_name == "convolution2D_kernel_pc_placed"
    assert "nj" in k.assumed and "4096" in k.assumed
    assert "(((long long)(int)(nj)) <= 4096)" in result.text
    out = tmp_path / "2dconv.cu"
    out.write_text(result.text)
    proc = subprocess.run([nvcc, "-arch=sm_90", "-c", str(out), "-o", str(out) + ".o",
                           f"-I{folder / '2dconv'}", f"-I{folder / 'common'}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- place --device

@pytest.mark.parametrize("fixture, arguments", [
    ("fir_filter.cu", {"n": 4096}), ("stencil_1d.cu", {"n": 4096}),
    ("spline_segments.cu", {"n": 4096, "seg": 1024})])
def test_the_device_measurement_builds_both_kernels(fixture, arguments, tmp_path, nvcc):
    """`place --device` compiles the kernel as written and the placed one in one module,
    the constant arrays declared (filled through their symbols): the module builds for
    sm_90 here (it runs on the GPU in test_place_device_measures)."""
    from polycoal.placement import trace_reads
    from polycoal.validate.placement_device import measurement
    program = read_program(str(PLACEMENT / fixture))
    observed, notes = trace_reads(program, arguments)
    forced = {"fir_filter.cu": {(None, "coef"): "constant"},
              "stencil_1d.cu": {(None, "in"): "shared"},
              "spline_segments.cu": {(None, "coef"): "constant"}}.get(fixture, {})
    result = place_program(program, SPEC, forced, observed=observed, trace_notes=notes)
    k = result.kernels[0]
    assert k.applied and k.written
    m = measurement(program, k, arguments)
    assert m.names[1] in m.source and m.names[0] in m.source
    for array in k.constants:
        assert f"__constant__ float pc_const_{k.kernel}_{array}[" in m.source
    source = tmp_path / "module.cu"
    source.write_text(m.source)
    compile_sm90(nvcc, source)


needs_gpu = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import pycuda.driver as d; d.init(); "
                    "assert d.Device.count()"], capture_output=True).returncode != 0,
    reason="no pycuda or no CUDA device on this machine (the gpu tests run on the lent H200)")


@needs_gpu
@pytest.mark.gpu
def test_place_device_measures(tmp_path):
    """On the GPU: the FIR's coefficients in constant memory measured beside the kernel
    as written (measured 1.15-1.25x on the H100), outputs equal, times reported."""
    run = _cli("place", PLACEMENT / "fir_filter.cu", "--device", "--arg", "n=1048576",
               "--report", "json", "-o", tmp_path / "s.cu")
    assert run.returncode == 0, run.stderr
    import json
    k = json.loads(run.stderr)["kernels"][0]
    assert k["measured"]["ok"] and k["measured"]["original_ms"] > 0
    assert k["measured"]["placed_ms"] > 0


def test_transform_then_placement(tmp_path, nvcc):
    """`polycoal transform --placement`: the transformed program placed as polycoal
    place places it. The FIR is already coalesced (transform leaves it), so the output
    is place's; its report follows transform's on standard error."""
    run = _cli("transform", PLACEMENT / "fir_filter.cu", "--placement",
               "-o", tmp_path / "t.cu")
    assert run.returncode == 0, run.stderr
    assert "kernel 'fir' left unchanged" in run.stderr
    assert "kernel 'fir': placed" in run.stderr
    place = _cli("place", PLACEMENT / "fir_filter.cu", "-o", tmp_path / "p.cu")
    assert (tmp_path / "t.cu").read_text() == (tmp_path / "p.cu").read_text()
    compile_sm90(nvcc, tmp_path / "t.cu")
    plain = _cli("transform", PLACEMENT / "fir_filter.cu", "--report", "json",
                 "--placement", "-o", tmp_path / "j.cu")
    import json
    report = json.loads(plain.stderr)
    assert report["placement"]["kernels"][0]["applied"] and place.returncode == 0


# ------------------------------------------------------------ the placement pass


def test_the_placement_pass_places_what_both_models_price_faster(tmp_path, nvcc):
    """`transform` places arrays by default where the memory specification's costs and
    the performance model both predict a gain: column_scan's `in` and `w`, read through
    pointers the compiler must assume alias the stores of a recurrence, are read
    read-only (measured 0.79 -> 0.27 ms on the H200). The output compiles and prints what
    the original prints (CPU runtime, a small size)."""
    from polycoal.transform import TransformOptions, transform_program
    path = PLACEMENT / "column_scan.cu"
    program = read_program(str(path))
    result = transform_program(program, TransformOptions())
    (placed,) = [k for k in result.placement.kernels if k.applied]
    assert placed.kernel == "column_scan"
    assert {a.reads.array: a.chosen for a in placed.arrays} == \
        {"in": "readonly", "w": "readonly", "out": "global"}
    before, after = placed.predicted
    assert after * 1.1 <= before
    assert "const float *__restrict__ in" in result.text and "__ldg(&in[" in result.text
    assert any(x.code == "placed" and "in in readonly memory" in x.message
               for x in result.diagnostics)
    out = tmp_path / "out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    runs_alike(program.text, result.text, tmp_path, argv=("8",))
    # --no-placement, and the kernels' own options, leave every array where it is
    kept = transform_program(program, TransformOptions(placement="none"))
    assert kept.placement is None and kept.text == program.text


def test_a_placement_the_performance_model_prices_no_faster_is_not_taken(write_cu):
    """The planner's read-only choice for a loop that streams a matrix from memory (the
    stores it removes waits for are hidden behind memory's bandwidth) is vetoed by the
    performance model: the kernel stays as written, and the placement says why."""
    from polycoal.transform import TransformOptions, transform_program
    text = (PLACEMENT / "column_scan.cu").read_text().replace(
        "out[j * N + i] = out[(j - 1) * N + i] + w[j] * in[j * N + i];",
        "out[j * N + i] = w[j] * in[j * N + i];").replace("(1 << 13)", "(1 << 20)")
    program = read_program(str(write_cu(text, "stream.cu")))
    assert place_program(program, SPEC).kernels[0].applied       # the planner alone
    result = transform_program(program, TransformOptions())
    (kernel,) = [k for k in result.placement.kernels if k.kernel == "column_scan"]
    assert not kernel.applied and "performance model predicts it" in kernel.reason
    assert result.text == program.text
