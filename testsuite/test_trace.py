"""`polycoal trace`: instrumentation, CPU traces, Algorithm 1, reports.

Traces run on the CPU path (g++) with small sizes; each distinct command runs once per
session (cached). The GPU test is marked `gpu` and compares a device trace with the CPU
trace of the same kernel."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, POLYBENCH
from polycoal.cli import main
from polycoal.dynamic.algorithm1 import algorithm1
from polycoal.dynamic.collect import Record, plan_sampling
from polycoal.dynamic.instrument import Site
from polycoal.diagnostics import Location
from test_device import HAVE_PYCUDA, needs_gpu

IRREGULAR = FIXTURES / "trace_irregular.cu"
SMALL = {
    "atax": ["-D", "NX=64", "-D", "NY=64"],
    "bicg": ["-D", "NX=64", "-D", "NY=64"],
    "mvt": ["-D", "N=64"],
    "gemm": ["-D", "NI=32", "-D", "NJ=32", "-D", "NK=32"],
    "covariance": ["-D", "M=32", "-D", "N=32"],
    "2dconv": ["-D", "NI=64", "-D", "NJ=64"],
}
_cache: dict = {}


def _trace(argv: list[str], capsys) -> tuple[int, str]:
    key = tuple(argv)
    if key not in _cache:
        status = main(["trace", *argv])
        _cache[key] = (status, capsys.readouterr().out)
    return _cache[key]


def _json(path, extra, capsys) -> dict:
    status, out = _trace([str(path), *extra, "--format", "json"], capsys)
    assert status == 0, out
    return json.loads(out)


def _polybench(name, capsys) -> dict:
    return _json(POLYBENCH / name / f"{name}.cu", SMALL[name], capsys)


def _refs(doc, kernel) -> dict[tuple[str, str], dict]:
    k = next(k for k in doc["kernels"] if k["name"] == kernel)
    return {(r["text"], r["type"]): r for r in k["references"]}


def test_atax_row_walk_column_per_thread_broadcast(capsys):
    doc = _polybench("atax", capsys)
    k1 = _refs(doc, "atax_kernel1")
    row = k1[("A[i * 64 + j]", "load")]       # one row per thread: 64 elements apart
    assert row["verdict"] == "uncoalesced" and row["stride_elements"]["max"] == 64
    assert row["sectors_per_request"]["avg"] == 32 and row["sectors_per_request"]["ideal_avg"] == 4
    assert row["advice"] == "a thread-geometry transformation can fix it; also consider shared memory"
    assert k1[("x[j]", "load")]["verdict"] == "broadcast"
    assert k1[("x[j]", "load")]["sectors_per_request"]["avg"] == 1
    assert k1[("tmp[i]", "store")]["verdict"] == "coalesced"
    column = _refs(doc, "atax_kernel2")[("A[i * 64 + j]", "load")]
    assert column["verdict"] == "coalesced" and column["sectors_per_request"]["avg"] == 4
    assert column["requests"] == 2 * 8 * 64       # blocks x warps x iterations


@pytest.mark.parametrize("name", sorted(SMALL))
def test_trace_agrees_with_static_analysis(name, capsys):
    doc = _polybench(name, capsys)
    for k in doc["kernels"]:
        assert k["error"] is None
        for r in k["references"]:
            assert r["static"] is not None, r["text"]
            assert r["agrees"], (k["name"], r["text"], r["verdict"], r["static"]["verdict"])


def test_large_launch_is_sampled_and_says_so(capsys):
    doc = _polybench("2dconv", capsys)
    (k,) = doc["kernels"]
    s = k["sampling"]
    assert s["sampled"] and s["blocks"] < s["blocks_total"] == 16
    assert s["text"] == f"traced {s['blocks']} of 16 blocks; {s['threads']} of 4096 threads"
    assert k["records"] <= 2_000_000
    assert any(d["code"] == "trace-sampled" for d in doc["diagnostics"])


def test_irregular_gather_reports_stride_distribution(capsys):
    doc = _json(IRREGULAR, ["--kernel", "gather"], capsys)
    refs = _refs(doc, "gather")
    x = refs[("x[P[i]]", "load")]
    assert x["irregular"] and x["static"]["verdict"] is None and x["agrees"] is None
    assert x["verdict"] == "uncoalesced" and x["stride_elements"]["max"] > 1
    shares = [h["share"] for h in x["stride_histogram"]]
    assert 1 <= len(shares) <= 5 and max(shares) < 0.5      # spread out: random indices
    assert refs[("P[i]", "load")]["verdict"] == "coalesced"
    assert not refs[("P[i]", "load")]["irregular"]


def test_csr_loop_is_traced_with_dynamic_bound(capsys):
    status, out = _trace([str(IRREGULAR), "--kernel", "csr"], capsys)
    assert status == 0
    assert "val[j] *" in out and "is irregular; strides (elements: share)" in out
    assert "the first 256 executions of each reference per thread" in out


def test_json_schema_keys(capsys):
    doc = _polybench("atax", capsys)
    assert doc["schema"] == "polycoal-trace" and doc["schema_version"] == 1
    assert set(doc) == {"schema", "schema_version", "tool", "file", "kernels", "diagnostics"}
    k = doc["kernels"][0]
    assert {"name", "location", "executor", "error", "grid", "block", "sampling", "records",
            "references"} <= set(k)
    assert set(k["references"][0]) == {
        "sid", "array", "text", "location", "type", "element_bytes", "irregular", "requests",
        "accesses", "stride_bytes", "stride_elements", "stride_histogram",
        "sectors_per_request", "largest_gap_bytes", "coalesced", "broadcast", "verdict",
        "advice", "static", "agrees"}
    assert k["references"][0]["location"]["line"] == 46


def test_sarif_is_valid(capsys):
    status, out = _trace([str(POLYBENCH / "atax" / "atax.cu"), *SMALL["atax"],
                          "--format", "sarif"], capsys)
    assert status == 0
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    rules = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert run["results"] and all(r["ruleId"] in rules for r in run["results"])
    (unco,) = [r for r in run["results"] if r["ruleId"] == "uncoalesced"]
    region = unco["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (48, 17)


def _site(kind="load", size=4):
    return Site(0, "A", kind, "A[k]", Location("f.cu", 1, 1), size, None, False)


def _records(offsets):
    return [Record(0, 0, 0, lane, o) for lane, o in enumerate(offsets)]


def test_algorithm1_sectors_and_gap():
    (consecutive,) = algorithm1([_site()], _records([4 * k for k in range(32)]))
    assert consecutive.coalesced and consecutive.sectors_avg == 4 and consecutive.ideal_avg == 4
    (rows,) = algorithm1([_site()], _records([4 * 64 * k for k in range(32)]))
    assert not rows.coalesced and rows.sectors_avg == 32 and rows.min_stride == 256
    assert rows.advice == "accesses cannot all be coalesced"
    (store,) = algorithm1([_site("store")], _records([8 * k for k in range(32)])
                          + [Record(0, 1, 0, lane, 8 * lane + 4) for lane in range(32)])
    assert not store.coalesced and store.largest_gap == 4
    assert store.advice == "a thread-geometry transformation can fix it"
    (same,) = algorithm1([_site()], _records([12] * 32))
    assert same.broadcast and same.verdict == "broadcast" and same.histogram == ((0, 1.0),)


def test_single_lane_requests_are_a_broadcast():
    # `if (tid == 0) r[k] += a[i]`: one active lane per request, as the static analysis
    # sees it a reference no thread axis varies (gramschmidt_kernel1)
    (one,) = algorithm1([_site()], [Record(0, d, 0, 0, 4 * 64 * d) for d in range(4)])
    assert one.broadcast and one.verdict == "broadcast" and one.sectors_avg == 1


def test_sampling_plan_bounds_records():
    s = plan_sampling((4096, 1, 1), (256, 1, 1), sites=4, max_records=2_000_000)
    assert s.capacity <= 2_000_000 and s.blocks * 256 <= 8192 and s.cap == 256
    small = plan_sampling((2, 1, 1), (256, 1, 1), sites=4, max_records=10_000)
    assert small.blocks == 1 and small.cap == 9 and small.capacity <= 10_000


def test_bad_input_exits_2(capsys, tmp_path):
    assert main(["trace", str(tmp_path / "missing.cu")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["trace", str(IRREGULAR), "--kernel", "nope"]) == 2
    assert "no kernel named 'nope'" in capsys.readouterr().err
    assert main(["trace", str(IRREGULAR), "--arg", "n"]) == 2
    assert "expected NAME=INTEGER" in capsys.readouterr().err


@pytest.mark.skipif(HAVE_PYCUDA, reason="pycuda is installed: the message path is moot")
def test_device_without_pycuda_says_so(capsys):
    assert main(["trace", "--device", str(IRREGULAR)]) == 2
    assert "pycuda" in capsys.readouterr().err


@pytest.mark.gpu
@needs_gpu
def test_device_trace_matches_cpu_trace(capsys):
    path = str(POLYBENCH / "atax" / "atax.cu")
    cpu = _json(path, SMALL["atax"], capsys)
    gpu = _json(path, SMALL["atax"] + ["--device"], capsys)
    for kc, kg in zip(cpu["kernels"], gpu["kernels"]):
        assert kg["executor"] == "device" and kg["records"] == kc["records"]
        for rc, rg in zip(kc["references"], kg["references"]):
            for key in ("text", "type", "verdict", "requests", "stride_bytes",
                        "sectors_per_request", "largest_gap_bytes"):
                assert rc[key] == rg[key], (kc["name"], rc["text"], key)


def test_divergent_lanes_keep_their_per_lane_stride():
    """Lanes 0, 3, 5 reading y[i] (4-byte elements) advance one element per lane: the
    warp would be contiguous; sorted offsets alone would say 3 and 2 elements."""
    from polycoal.dynamic.algorithm1 import request_strides
    assert request_strides([(0, 0), (3, 12), (5, 20)]) == [4, 4]
    assert request_strides([(0, 8), (1, 0), (2, 4)]) == [4, 4]        # permuted: sorted wins
    assert request_strides([(0, 0), (3, 40)]) == [40]                 # 10 bytes a lane: kept
    assert request_strides([(0, 0), (1, 256)]) == [256]


def test_csr_rows_agree_with_the_static_analysis_despite_divergence(capsys):
    status, out = _trace([str(IRREGULAR), "--kernel", "csr", "--format", "json"], capsys)
    refs = {(r["text"], r["type"]): r for r in json.loads(out)["kernels"][0]["references"]}
    assert refs[("y[i]", "load")]["verdict"] == "coalesced" and refs[("y[i]", "load")]["agrees"]
    assert refs[("val[j]", "load")]["verdict"] == "uncoalesced"
