"""Irregular references (issue 17): gathers A[P[e]] and segment loops found in every
spelling, planned by the reuse the host code allows, rewritten with their launches and
the marks of the host's writes, validated, and run.

Every transformed fixture is compiled with nvcc for sm_90 and run as a whole program on
the CPU beside its original, on each of its inputs: both print the same numbers, and the
runtime's report (POLYCOAL_IRREGULAR_REPORT) says the copies were built once and read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import compile_sm90, runs_alike
from polycoal.analysis.irregular import irregular_references
from polycoal.codegen.irregular import groups
from polycoal.decisions import TransformOptions
from polycoal.frontend import read_program
from polycoal.model.extract import extract_model
from polycoal.transform import transform_program
from polycoal.validate.irregular import checked_text, irregular_problems

IRREGULAR = Path(__file__).parent / "fixtures" / "irregular"


def _references(path: Path) -> dict[str, list]:
    program = read_program(str(path))
    return {k.name: irregular_references(k, extract_model(k, program))
            for k in program.kernels}


def _transform(path: Path, **options):
    program = read_program(str(path))
    return program, transform_program(program, TransformOptions(**options))


def _runs_alike(original: str, output: str, directory: Path, argv=(), variant=None) -> str:
    """Both programs on the CPU runtime print the same numbers; the output's report.
    `variant`: the runtime serves it at every launch (POLYCOAL_IRREGULAR_VARIANT)."""
    env = {"POLYCOAL_IRREGULAR_REPORT": "1"}
    if variant:
        env["POLYCOAL_IRREGULAR_VARIANT"] = variant
    return runs_alike(original, output, directory, argv=argv, env=env, tolerance=1e-5)


# ---------------------------------------------------------------- finding them

def test_gathers_in_their_spellings(write_cu):
    path = write_cu("""
        __global__ void direct(float *y, const float *x, const int *p, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = x[p[i]];
        }
        __global__ void local(float *y, const float *x, const int *p, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i >= n) return;
          int j = p[i];
          y[i] = 2.0f * x[j];
        }
        __global__ void strided(double *y, const double *t, const int *p, int n) {
          for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
            y[i] = t[p[i + 1]];
        }
        __global__ void masked(float *y, const float *x, const int *p, const int *m, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n && m[i]) y[i] = x[p[i]];
        }
        __global__ void written(float *x, const int *p, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) x[i] = x[p[i]];
        }
    """)
    found = _references(path)
    d = found["direct"][0]
    assert (d.kind, d.array, d.index_array, d.index, d.obstacle) == ("gather", "x", "p", "i",
                                                                      None)
    assert found["local"][0].local == "j" and found["local"][0].obstacle is None
    s = found["strided"][0]
    assert s.index == "i + 1" and s.obstacle is None
    assert found["masked"][0].obstacle == "read under a condition on data"
    assert "written by the kernel" in found["written"][0].obstacle


def test_segment_loops_in_their_spellings(write_cu):
    path = write_cu("""
        __global__ void csr(int n, const int *ptr, const int *col, const float *val,
                            const float *x, float *y) {
          int row = blockDim.x * blockIdx.x + threadIdx.x;
          if (row < n) {
            float dot = 0;
            int start = ptr[row], end = ptr[row + 1];
            for (int k = start; k < end; k++) dot += val[k] * x[col[k]];
            y[row] = dot;
          }
        }
        __global__ void direct(float *y, const float *val, const int *rp, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n)
            for (int j = rp[i]; j < rp[i + 1]; ++j) y[i] += val[j];
        }
        __global__ void lengths(float *y, const float *a, const int *first, const int *len,
                                int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) {
            float s = 0;
            for (int k = first[i]; k < first[i] + len[i]; k += 1) s += a[k];
            y[i] = s;
          }
        }
        __global__ void offsets(float *y, const float *a, const int *first, const int *len,
                                int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) {
            float s = 0;
            int b = first[i];
            for (int k = 0; k < len[i]; k++) s += a[b + k] * a[k + b];
            y[i] = s;
          }
        }
        __global__ void early_exit(float *y, const float *val, const int *rp, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n)
            for (int j = rp[i]; j < rp[i + 1]; j++) { if (val[j] < 0) break; y[i] += val[j]; }
        }
        __global__ void branch(float *y, const float *val, const int *rp, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n)
            for (int j = rp[i]; j < rp[i + 1]; j++) if (j % 2) y[i] += val[j];
        }
        __global__ void data_guard(float *y, const float *val, const int *rp, const int *m,
                                   int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n && m[i])
            for (int j = rp[i]; j < rp[i + 1]; j++) y[i] += val[j];
        }
    """)
    found = _references(path)
    csr = {r.array: r for r in found["csr"]}
    assert set(csr) == {"val", "col", "x"}
    assert csr["val"].obstacle is None and csr["col"].obstacle is None
    assert "second indirection" in csr["x"].obstacle
    assert csr["val"].kind == "segment" and csr["val"].index_array == "ptr" and \
        csr["val"].index == "row" and csr["val"].start == "start" and \
        csr["val"].length_array is None
    assert found["direct"][0].start == "rp[i]" and found["direct"][0].obstacle is None
    assert found["lengths"][0].length_array == "len"
    off = found["offsets"]
    assert {r.subscript for r in off} == {"b + k", "k + b"} and \
        all(r.start == "0" and r.length_array == "len" for r in off)
    assert "may end or skip" in found["early_exit"][0].obstacle
    assert "under a condition" in found["branch"][0].obstacle
    assert "condition on data" in found["data_guard"][0].obstacle


# ---------------------------------------------------------------- whole programs

# (fixture, argv, whether the runtime's selector builds the copies): the banded matrix's
# second indirection (x[col[k]]) reads a few sectors per warp, so its remap is declined
RUNS = [("spmv_csr.cu", ("0", "3000"), True), ("spmv_csr.cu", ("1", "3000"), False),
        ("spmv_csr.cu", ("2", "3000"), True), ("gather_permutation.cu", ("0", "5000"), True),
        ("gather_permutation.cu", ("1", "5000"), True),
        ("gather_permutation.cu", ("2", "5000"), True),
        ("neighbour_list.cu", ("3000",), True), ("edge_list.cu", ("2000", "6"), True)]


@pytest.mark.parametrize("fixture,argv,built", RUNS,
                         ids=[f"{f}-{'-'.join(a)}" for f, a, _ in RUNS])
def test_reorganised_programs_build_and_run_alike(fixture, argv, built, tmp_path, nvcc):
    program, result = _transform(IRREGULAR / fixture)
    changed = [d for d in result.decisions if d.action == "reorganised"]
    assert changed, [str(x) for x in result.diagnostics]
    assert not [x for x in result.diagnostics if x.severity == "error"]
    out = tmp_path / fixture
    out.write_text(result.text)
    compile_sm90(nvcc, out)
    report = _runs_alike(program.text, result.text, tmp_path, argv)
    sites = re.findall(r"irregular site \d+: (\w+), (\d+) launches, (\d+) builds", report)
    assert len(sites) == sum(len(groups(d.reorganisation.applied)) for d in changed)
    # built once, read by every launch after the two trials (the CPU's events time 0)
    if built:
        assert all(use == "copies" and int(n) >= 3 and b == "1" for use, n, b in sites), report
    else:
        assert all(use == "original" and b == "0" for use, n, b in sites), report


def test_launches_read_the_chunks_of_the_remap_complete_so_far(tmp_path):
    """The segment remap's copies filled in chunks of slices, each on a stream of its
    own (asked for: POLYCOAL_IRREGULAR_CHUNKS=4; one by default); while they complete (the CPU runtime's events late: each reports its work
    done only once synchronized), each launch waits for the next chunk only and reads
    the copies of the chunks done, the original for the rest: three launches read 1, 2
    and 3 of the 4 chunks, then every launch reads all of them; the results equal the
    original's."""
    program, result = _transform(IRREGULAR / "spmv_csr.cu")
    env = {"POLYCOAL_IRREGULAR_REPORT": "1", "POLYCOAL_IRREGULAR_CHUNKS": "4",
           "PC_CPU_EVENTS_LATE": "1"}
    report = runs_alike(program.text, result.text, tmp_path, argv=("0", "3000"), env=env,
                        tolerance=1e-5)
    assert re.findall(r"irregular site 0: (\w+), 30 launches, 1 builds.*, (\d+) early",
                      report) == [("copies", "3")], report


@pytest.mark.parametrize("kind,shared", [("0", False), ("2", True)])
def test_every_launch_reading_the_shared_form_runs_alike(kind, shared, tmp_path):
    """With more threads than elements in the table (its allocation), the gathers of
    one-dimensional kernels can read their block's elements from shared memory: forced,
    every launch does; the grid-stride one reads its copy. A permutation (as many
    threads as elements) has only the copy."""
    program, result = _transform(IRREGULAR / "gather_permutation.cu")
    report = _runs_alike(program.text, result.text, tmp_path, (kind, "3000"), "shared")
    sites = re.findall(r"irregular site \d+: (\w+)", report)
    assert sites == (["shared", "shared", "copies", "shared"] if shared else ["copies"] * 4), \
        report


@pytest.mark.parametrize("kind", ["0", "1", "2"])
def test_every_launch_reading_the_padded_form_runs_alike(kind, tmp_path):
    """Padding: the threads of the one-dimensional gather kernels reordered by their
    index (a counting sort on the GPU), each reading its element packed in that order;
    forced at every launch, every input; the grid-stride kernel (its threads' index not
    one local) reads its copy."""
    program, result = _transform(IRREGULAR / "gather_permutation.cu")
    assert "int i = (pc_x__via_perm_order ? pc_x__via_perm_order[blockIdx.x * blockDim.x + " \
        "threadIdx.x] : (blockIdx.x * blockDim.x + threadIdx.x));" in result.text
    report = _runs_alike(program.text, result.text, tmp_path, (kind, "3000"), "padded")
    sites = re.findall(r"irregular site \d+: (\w+)", report)
    assert sites == ["padded", "padded", "copies", "padded"], report


@pytest.mark.parametrize("kind,steps", [("0", 64), ("2", 64), ("0", None)])
def test_padding_is_a_candidate_where_every_read_follows_the_index(kind, steps, write_cu,
                                                                  tmp_path):
    """The paper's selector: a kernel with a single access pattern (its only reads are
    P[e] and A[P[e]]: `permute`) has its padded form built for the trial launches
    without being asked, where its launch site reuses it often enough to pay for the
    sort (64 steps of the loop; not 10, the estimate for a loop of unknown trips); the
    kernels that also read y[i] or out[i] (which the reordering would scatter) never."""
    text = (IRREGULAR / "gather_permutation.cu").read_text()
    if steps:
        text = text.replace("s < steps", f"s < {steps}")
    program, result = _transform(write_cu(text, "g.cu"))
    found = {d.kernel: d.reorganisation.applied for d in result.decisions
             if d.action == "reorganised"}
    assert [r.single_pattern for k in ("gather_axpy", "lookup", "lookup_strided", "permute")
            for r in found[k]] == [False, False, False, True]
    report = _runs_alike(program.text, result.text, tmp_path, (kind, "3000"))
    candidates = re.findall(r"irregular site \d+: .*candidates: ([\w ]+)", report)
    shared = " shared" if kind == "2" else ""
    assert candidates == [f"original copies{shared}"] * 2 + ["original copies"] + \
        [f"original copies{shared}" + (" padded" if steps else "")], report


def test_threads_that_share_a_written_element_are_not_reordered(write_cu):
    found = _references(write_cu("""
        __global__ void pairs(float *y, const float *x, const int *p, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i / 2] += x[p[i]];
        }
        __global__ void twice(float *y, const float *x, const int *p, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          int lane = threadIdx.x;
          if (i < n) y[i] = x[p[i]] + lane;
        }
        __global__ void free_order(float *y, const float *x, const int *p, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) y[i] = 2.0f * y[i] + x[p[i]];
        }
    """))
    assert found["pairs"][0].thread_index == ""        # y[i / 2]: two threads, one element
    assert found["twice"][0].thread_index == ""        # threadIdx.x read again
    assert found["free_order"][0].thread_index == "i"


def test_a_source_written_between_launches_keeps_its_reference():
    _, result = _transform(IRREGULAR / "edge_list.cu")
    push = next(d for d in result.decisions if d.kernel == "push")
    assert push.action == "reorganised"
    assert [r.text for r in push.reorganisation.applied] == ["inv_degree[u]"]
    assert [r.text for r, _ in push.reorganisation.dropped] == ["rank[u]"]
    assert "rank[u] kept" in push.reason


def test_host_writes_are_marked_and_launches_build_first():
    _, result = _transform(IRREGULAR / "spmv_csr.cu")
    text = result.text
    # a write to a source array moves its version; other arrays are left as written
    assert "polycoal_irregular_written(cudaMemcpy(d_val, h_val" in text
    assert "polycoal_irregular_written(cudaMemcpy(d_x," not in text
    launch = text[text.index("const long long *pc_irregular_0 = polycoal_segments("):]
    assert launch.index("polycoal_segment_copy(polycoal_irregular_sites[0], 0, (d_val)") < \
        launch.index("spmv_csr_scalar<<<blocks, threads>>>(rows, d_ptr, d_col, d_val, d_x, "
                     "d_y, pc_irregular_0, pc_irregular_0_0, pc_irregular_0_1);")


SHORT = """
#include <cuda_runtime.h>
__global__ void gather(float *y, const float *x, const int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[p[i]];
}
int main() {
  int n = 1000;
  float *x, *y; int *p;
  cudaMalloc(&x, n * sizeof(float)); cudaMalloc(&y, n * sizeof(float));
  cudaMalloc(&p, n * sizeof(int));
  LOOP
  return 0;
}
"""


@pytest.mark.parametrize("loop,reason", [
    ("gather<<<4, 256>>>(y, x, p, n);", "no launch reuses its copy"),
    ("for (int s = 0; s < 10; s++) { cudaMemset(p, 0, n * sizeof(int)); "
     "gather<<<4, 256>>>(y, x, p, n); }", "no launch reuses its copy"),
    ("for (int s = 0; s < 10; s++) gather<<<4, 256>>>(y, x + 1, p, n);",
     "is not followed in the host code"),
    ("for (int s = 0; s < 10; s++) { float *t = x; x = y; y = t; "
     "gather<<<4, 256>>>(y, x, p, n); }", "may alias")])
def test_no_reuse_no_copy(write_cu, loop, reason):
    _, result = _transform(write_cu(SHORT.replace("LOOP", loop)))
    d = result.decisions[0]
    assert d.action == "unchanged" and result.text == read_program(
        str(write_cu(SHORT.replace("LOOP", loop), "again.cu"))).text
    assert reason in d.reorganisation.reason, d.reorganisation.reason
    assert "its irregular references stay: " in d.reason


def test_reorganise_none_keeps_every_kernel():
    program, result = _transform(IRREGULAR / "gather_permutation.cu", reorganise="none")
    assert result.text == program.text


def test_the_validator_rejects_a_wrong_position(tmp_path):
    program, result = _transform(IRREGULAR / "gather_permutation.cu")
    d = next(d for d in result.decisions if d.kernel == "gather_axpy")
    plan_groups = groups(d.reorganisation.applied)
    old = extract_model(program.kernel("gather_axpy"), program)

    def model_of(text):
        path = tmp_path / "bad.cu"
        path.write_text(checked_text(text, plan_groups))
        p = read_program(str(path))
        return extract_model(p.kernel("gather_axpy"), p)
    assert irregular_problems(old, model_of(result.text), plan_groups) == []
    reordered = result.text.replace(
        "pc_x__via_perm_order[blockIdx.x * blockDim.x + threadIdx.x]",
        "pc_x__via_perm_order[blockIdx.x * blockDim.x + threadIdx.x + 1]")
    assert checked_text(reordered, plan_groups) is None
    rank = result.text.replace("pc_x__via_perm_rank[blockIdx.x * blockDim.x + threadIdx.x]",
                               "pc_x__via_perm_rank[blockIdx.x * blockDim.x + threadIdx.x + 1]")
    assert any("is not read at i" in p for p in
               irregular_problems(old, model_of(rank), plan_groups))
    shifted = result.text.replace("pc_x__via_perm[i]", "pc_x__via_perm[i + 1]")
    assert any("is not read at i" in p for p in
               irregular_problems(old, model_of(shifted), plan_groups))
    slot = result.text.replace("pc_x__via_perm_slot[i]", "pc_x__via_perm_slot[i - 1]")
    assert any("is not read at i" in p for p in
               irregular_problems(old, model_of(slot), plan_groups))
    assert checked_text(result.text.replace("__syncthreads(); }", "}", 1), plan_groups) is None
    dropped = result.text.replace("y[i] += w * (pc_x", "y[i] = w * (pc_x")
    assert dropped != result.text
    assert irregular_problems(old, model_of(dropped), plan_groups)


def test_the_validator_rejects_a_wrong_run_position(tmp_path):
    program, result = _transform(IRREGULAR / "spmv_csr.cu")
    d = result.decisions[0]
    plan_groups = groups(d.reorganisation.applied)
    old = extract_model(program.kernel("spmv_csr_scalar"), program)

    def problems(text):
        path = tmp_path / "bad.cu"
        path.write_text(text)
        p = read_program(str(path))
        return irregular_problems(old, extract_model(p.kernel("spmv_csr_scalar"), p),
                                  plan_groups)
    assert problems(result.text) == []
    assert problems(result.text.replace("pc_run16_ptr + 32LL * (jj)]",
                                        "pc_run16_ptr + 32LL * (jj) + 1]", 1))
    assert problems(result.text.replace("- 32LL * (long long)(row_start)",
                                        "- 32LL * (long long)(row_end)"))


# ---------------------------------------------------------------- review findings

HOST = """
#include <cuda_runtime.h>
DEFINES
KERNELS
int main(int argc, char **argv) {
  int n = argc * 1000;
  float *d_x, *d_y; int *d_p;
  cudaMalloc(&d_x, n * sizeof(float));
  cudaMalloc(&d_y, n * sizeof(float));
  cudaMalloc(&d_p, n * sizeof(int));
  for (int it = 0; it < 10; it++) {
    LOOP
  }
  return 0;
}
"""
GATHER = """__global__ void g(float *y, const float *x, const int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[p[i]];
}
"""


def _host(write_cu, kernels, loop, defines=""):
    text = HOST.replace("DEFINES", defines).replace("KERNELS", kernels).replace("LOOP", loop)
    return _transform(write_cu(text))


def test_a_source_written_through_pointer_arithmetic_is_written(write_cu):
    """`atomicAdd(x + p[i], ...)` writes x though the model records no write of it: the
    kernel's own gather of x keeps reading x; another kernel's launch that does it is a
    marked write of the array."""
    _, result = _host(write_cu, """__global__ void g(float *y, float *x, const int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = x[p[i]]; atomicAdd(x + p[i], 1.0f); }
}
""", "g<<<(n + 255) / 256, 256>>>(d_y, d_x, d_p, n);")
    assert result.decisions[0].action == "unchanged"
    assert "'x' is written by the kernel" in result.decisions[0].reason
    _, result = _host(write_cu, GATHER + """__global__ void bump(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(x + i, 1.0f);
}
""", "g<<<(n + 255) / 256, 256>>>(d_y, d_x, d_p, n);\n  }\n  for (int t = 0; t < 2; t++) {"
         "\n    bump<<<(n + 255) / 256, 256>>>(d_x, n);")
    assert result.decisions[0].action == "reorganised"
    assert "{ polycoal_irregular_wrote(d_x); bump<<<" in result.text


def test_a_source_a_macro_writes_is_not_followed(write_cu):
    _, result = _host(write_cu, GATHER, "g<<<(n + 255) / 256, 256>>>(d_y, d_x, d_p, n);\n"
                      "    if (it == 4) REFRESH;",
                      "#define REFRESH cudaMemset(d_x, 0, 4)")
    assert result.decisions[0].action == "unchanged"
    assert "'d_x' is not followed" in result.decisions[0].reason


def test_a_local_read_through_a_macro_keeps_its_value(write_cu, tmp_path):
    _, result = _host(write_cu, """__global__ void g(float *y, int *s, const float *x, const int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { int j = p[i]; y[i] += x[j]; RECORD(i); }
}
""", "g<<<(n + 255) / 256, 256>>>(d_y, (int *)d_y, d_x, d_p, n);", "#define RECORD(k) s[k] = j")
    d = result.decisions[0]
    assert d.action == "reorganised", d.reason
    assert "int j = p[i];" in result.text              # the local keeps its value


def test_copies_are_bounded_where_the_reference_runs(write_cu):
    _, result = _host(write_cu, """__global__ void g(float *y, const float *x, const int *p, int n, int mode) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && mode == 1) y[i] += x[p[i]];
}
""", "g<<<(n + 255) / 256, 256>>>(d_y, d_x, d_p, n, argc);")
    assert result.decisions[0].action == "reorganised"
    call = re.search(r"polycoal_gather\(polycoal_irregular_sites\[0\][^;]*;", result.text).group(0)
    assert "((long long)(int)(argc)) == 1" in call       # no copy where the gather does not run


def test_a_loop_guarded_by_data_through_a_local_is_not_remapped(write_cu):
    found = _references(write_cu("""
        __global__ void spmv(int n, const int *ptr, const int *on, const float *val, float *y) {
          int row = blockDim.x * blockIdx.x + threadIdx.x;
          if (row < n) {
            int active = on[row];
            float dot = 0;
            if (active) for (int k = ptr[row]; k < ptr[row + 1]; k++) dot += val[k];
            y[row] = dot;
          }
        }
        __global__ void skip(int n, const int *ptr, const float *val, float *y) {
          int row = blockDim.x * blockIdx.x + threadIdx.x;
          if (row < n)
            for (int k = ptr[row]; k < ptr[row + 1]; k++) { if (k % 2) continue; y[row] += val[k]; }
        }
    """))
    assert "condition on data" in found["spmv"][0].obstacle
    assert "skip an iteration" in found["skip"][0].obstacle


def test_the_runtime_goes_after_the_includes_outside_conditionals(write_cu, tmp_path, nvcc):
    text = (IRREGULAR / "gather_permutation.cu").read_text().replace(
        "#include <cuda_runtime.h>\n",
        "#include <cuda_runtime.h>\n#define SCALE 2\n#ifdef _WIN32\n#include <windows.h>\n#endif\n")
    program, result = _transform(write_cu(text, "g.cu"))
    assert any(d.action == "reorganised" for d in result.decisions)
    assert "polycoal_irregular_reporter_instance;\n#define SCALE 2\n#ifdef _WIN32" in result.text
    out = tmp_path / "g_out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)


def test_one_loop_gives_copies_to_seven_arrays_at_most(write_cu, tmp_path, nvcc):
    arrays = [f"a{k}" for k in range(9)]
    kernel = ("__global__ void many(int n, const int *ptr, " +
              ", ".join(f"const float *{a}" for a in arrays) + ", float *y) {\n"
              "  int row = blockDim.x * blockIdx.x + threadIdx.x;\n  if (row < n) {\n"
              "    float dot = 0;\n    for (int k = ptr[row]; k < ptr[row + 1]; k++)\n"
              "      dot += " + " + ".join(f"{a}[k]" for a in arrays) + ";\n"
              "    y[row] = dot;\n  }\n}\n")
    host = "".join(f"  float *d_{a}; cudaMalloc(&d_{a}, 64 * n * sizeof(float));\n"
                   for a in arrays)
    text = ("#include <cuda_runtime.h>\n" + kernel + "int main(int argc, char **argv) {\n"
            "  int n = 1000 * argc; int *d_ptr; float *d_y;\n"
            "  cudaMalloc(&d_ptr, (n + 1) * sizeof(int)); cudaMalloc(&d_y, n * sizeof(float));\n"
            + host + "  for (int it = 0; it < 100; it++)\n"
            "    many<<<(n + 255) / 256, 256>>>(n, d_ptr, " +
            ", ".join(f"d_{a}" for a in arrays) + ", d_y);\n  return 0;\n}\n")
    program, result = _transform(write_cu(text, "many.cu"))
    d = result.decisions[0]
    assert d.action == "reorganised" and len(d.reorganisation.applied) == 7
    assert [r.text for r, _ in d.reorganisation.dropped] == ["a7[k]", "a8[k]"]
    out = tmp_path / "many_out.cu"
    out.write_text(result.text)
    compile_sm90(nvcc, out)
