"""`polycoal analyze`: formats, exit statuses, output file, standard input."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from polycoal.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RACE = FIXTURES / "race_atax.cu"


def run(capsys, *argv):
    status = main(["analyze", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def race_json():
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(["analyze", str(RACE), "--format", "json"])
    return status, json.loads(buf.getvalue())


# --------------------------------------------------------------------------- formats

def test_json_report(race_json):
    status, doc = race_json
    assert status == 1                           # races are errors
    assert doc["schema"] == "polycoal-analysis" and doc["schema_version"] == 1
    assert doc["tool"]["name"] == "polycoal"
    assert doc["file"] == str(RACE)
    assert [k["name"] for k in doc["kernels"]] == ["atax_kernel1", "race_neighbour", "noraces"]
    assert [l["kernel"] for l in doc["launches"]] == ["atax_kernel1", "race_neighbour",
                                                       "noraces"]
    assert doc["launches"][0]["block_shape"] == [32, 8, 1]
    assert doc["launches"][0]["grid_shape"] == [128, 1, 1]
    kernels = {k["name"]: k for k in doc["kernels"]}
    for k in kernels.values():
        assert k["status"] == "affine"
        assert k["references"]
        assert {"totals", "races", "dependences", "loops", "suggestions"} <= set(k)


def test_json_references_and_races(race_json):
    _, doc = race_json
    atax = next(k for k in doc["kernels"] if k["name"] == "atax_kernel1")
    a = next(r for r in atax["references"] if r["array"] == "A")
    assert a["type"] == "load" and a["space"] == "global"
    assert a["coalesced"] is False
    assert a["sectors_per_request"] == 32 and a["ideal_sectors"] == 4
    assert a["stride_elements"] == {"x": "4096", "y": "0", "z": "0"}
    assert a["stride_bytes"]["x"] == "16384"
    assert a["class"] == {"x": "u", "y": "-", "z": "-"}
    assert a["subscripts"] == ["gx", "c0"] and a["affine"] is True
    assert a["count"] == {"value": 4096 * 4096 * 8, "formula": str(4096 * 4096 * 8),
                          "exact": True}
    assert a["location"]["line"] == 36
    assert atax["races"]
    assert {r["array"] for r in atax["races"]} == {"tmp"}
    assert all(r["thread_dims"] == ["gy"] for r in atax["races"])
    assert {r["kind"] for r in atax["races"]} == {"write/write", "read/write"}
    assert atax["thread_dims"][0] == {"name": "gy", "axis": "y", "kind": "global",
                                      "extent": "8"}
    neighbour = next(k for k in doc["kernels"] if k["name"] == "race_neighbour")
    assert {(r["array"], tuple(r["thread_dims"])) for r in neighbour["races"]} == {
        ("out", ("gx",))}
    noraces = next(k for k in doc["kernels"] if k["name"] == "noraces")
    assert noraces["races"] == []
    assert noraces["totals"] == {"accesses": 8192, "uncoalesced": 0, "exact": True}
    codes = [(d["code"], d["kernel"], d["severity"]) for d in doc["diagnostics"]]
    assert ("race", "atax_kernel1", "error") in codes
    assert ("race", "race_neighbour", "error") in codes
    assert not any(kernel == "noraces" for _, kernel, _ in codes)


def test_sarif_report(capsys):
    status, out, _ = run(capsys, RACE, "--format", "sarif")
    assert status == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    (sarif_run,) = doc["runs"]
    assert sarif_run["tool"]["driver"]["name"] == "polycoal"
    rule_ids = {r["id"] for r in sarif_run["tool"]["driver"]["rules"]}
    results = sarif_run["results"]
    assert {r["ruleId"] for r in results} <= rule_ids
    races = [r for r in results if r["ruleId"] == "race"]
    assert len(races) == 2
    assert all(r["level"] == "error" for r in races)
    lines = sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in races)
    assert lines == [34, 45]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in races}
    assert uris == {str(RACE).replace(os.sep, "/")}
    assert {r["properties"]["kernel"] for r in races} == {"atax_kernel1", "race_neighbour"}
    unco = [r for r in results if r["ruleId"] == "uncoalesced"]
    assert unco and all(r["level"] == "warning" for r in unco)


def test_text_report(capsys):
    status, out, err = run(capsys, RACE)
    assert status == 1
    assert "kernel atax_kernel1" in out and "kernel noraces" in out
    assert "UNCOALESCED" in out
    assert "thread dims: gy < 8, gx < 4096; block 32x8x1" in out
    assert "diagnostics:" in out
    race_lines = [l for l in out.splitlines() if "[race]" in l]
    assert len(race_lines) == 2
    assert race_lines[0].startswith(f"{RACE}:34:")
    assert "error: race between threads in kernel 'atax_kernel1' on 'tmp'" in race_lines[0]
    assert err == ""


# --------------------------------------------------------------------------- exit statuses

def test_exit_zero_for_race_free_kernel(capsys):
    status, out, _ = run(capsys, RACE, "--kernel", "noraces", "--format", "json")
    assert status == 0
    doc = json.loads(out)
    assert [k["name"] for k in doc["kernels"]] == ["noraces"]
    assert [l["kernel"] for l in doc["launches"]] == ["noraces"]
    assert all(d["kernel"] in (None, "noraces") for d in doc["diagnostics"])


def test_exit_one_for_racing_kernel_alone(capsys):
    status, _, _ = run(capsys, RACE, "--kernel", "race_neighbour")
    assert status == 1


def test_exit_two_for_missing_file(capsys, tmp_path):
    status, out, err = run(capsys, tmp_path / "missing.cu")
    assert status == 2
    assert out == ""
    assert "missing.cu" in err and "no such file" in err


def test_exit_two_for_unknown_kernel(capsys):
    status, out, err = run(capsys, RACE, "--kernel", "nope")
    assert status == 2
    assert out == ""
    assert "nope" in err
    for name in ("atax_kernel1", "race_neighbour", "noraces"):
        assert name in err


def test_exit_two_for_preprocessor_error(capsys, tmp_path):
    path = tmp_path / "bad.cu"
    path.write_text('#include "ok.h"\n#error "no"\n')
    (tmp_path / "ok.h").write_text("")
    status, out, err = run(capsys, path)
    assert status == 2 and out == ""
    assert f"{path}:2:" in err


def test_syntax_error_exit_one(capsys):
    path = FIXTURES / "syntax_error.cu"
    status, out, _ = run(capsys, path, "--format", "json")
    assert status == 1
    doc = json.loads(out)
    errors = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    assert [e["code"] for e in errors] == ["syntax-error"]
    assert errors[0]["location"]["file"] == str(path)
    assert errors[0]["location"]["line"] in (24, 25)
    status_by_kernel = {k["name"]: k["status"] for k in doc["kernels"]}
    assert status_by_kernel["broken"] == "unparsed"
    assert status_by_kernel["ok_kernel"] == "affine"


def test_bad_kernel_cpp_exit_zero(capsys):
    status, out, _ = run(capsys, FIXTURES / "bad_kernel_cpp.cu", "--format", "json")
    assert status == 0
    doc = json.loads(out)
    unsupported = {d["kernel"]: d for d in doc["diagnostics"]
                   if d["code"] == "unsupported-construct"}
    assert set(unsupported) == {"scale_t", "cpp_body"}
    assert all(d["severity"] == "warning" for d in unsupported.values())
    assert unsupported["scale_t"]["location"]["line"] in (19, 20)
    assert unsupported["cpp_body"]["location"]["line"] == 28
    status_by_kernel = {k["name"]: k["status"] for k in doc["kernels"]}
    assert status_by_kernel == {"scale_t": "unparsed", "cpp_body": "unparsed",
                                "plain_ok": "affine"}
    assert not [d for d in doc["diagnostics"] if d["kernel"] == "plain_ok"]


def test_outside_model_exit_zero_with_warnings(capsys):
    status, out, _ = run(capsys, FIXTURES / "outside_model.cu", "--format", "json")
    assert status == 0
    doc = json.loads(out)
    flagged = {d["kernel"] for d in doc["diagnostics"] if d["code"] == "outside-model"}
    assert flagged == {"k_indirect", "k_csr", "k_sync", "k_atomic", "k_ptrarith",
                       "k_devcall", "k_while", "k_break"}
    assert {k["status"] for k in doc["kernels"]} == {"outside-model"}


def test_preprocessor_options(capsys):
    status, out, _ = run(capsys, FIXTURES / "macros_header.cu", "-D", "USE_DOUBLE",
                         "-I", FIXTURES, "--format", "json")
    assert status == 0
    doc = json.loads(out)
    types = {p["type"] for k in doc["kernels"] for p in k["parameters"]}
    assert types == {"double"}
    sizes = {r["element_bytes"] for k in doc["kernels"] for r in k["references"]}
    assert sizes == {8}
    status, out, _ = run(capsys, FIXTURES / "macros_header.cu", "-D", "USE_DOUBLE",
                         "-U", "USE_DOUBLE", "--format", "json")
    assert {p["type"] for k in json.loads(out)["kernels"] for p in k["parameters"]} \
        == {"float"}


# --------------------------------------------------------------------------- output, stdin

def test_output_file_written_and_input_unchanged(capsys, tmp_path):
    source = tmp_path / "race_atax.cu"
    shutil.copyfile(RACE, source)
    before = source.read_bytes()
    mtime = source.stat().st_mtime_ns
    report = tmp_path / "report.json"
    status, out, _ = run(capsys, source, "--format", "json", "-o", report)
    assert status == 1
    assert out == ""
    assert source.read_bytes() == before
    assert source.stat().st_mtime_ns == mtime
    doc = json.loads(report.read_text())
    assert doc["file"] == str(source)
    assert len(doc["kernels"]) == 3
    # nothing else is left behind (the write is atomic through a renamed temporary)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race_atax.cu", "report.json"]


def test_output_file_replaced(capsys, tmp_path):
    report = tmp_path / "report.txt"
    report.write_text("old contents that are longer than nothing\n" * 100)
    status, _, _ = run(capsys, RACE, "--kernel", "noraces", "-o", report)
    assert status == 0
    text = report.read_text()
    assert text.startswith("kernel noraces") and "old contents" not in text


def test_output_into_missing_directory(capsys, tmp_path):
    status, out, err = run(capsys, RACE, "-o", tmp_path / "nodir" / "r.txt")
    assert status == 2
    assert "does not exist" in err
    assert not (tmp_path / "nodir").exists()


def test_output_dash_is_stdout(capsys):
    status, out, _ = run(capsys, RACE, "--kernel", "noraces", "-o", "-")
    assert status == 0 and out.startswith("kernel noraces")


def test_stdin_with_name_that_is_not_special():
    """`-` with an ordinary file name works through read_program(text=...)."""
    from polycoal.frontend import read_program
    p = read_program("stdin_copy.cu", text=RACE.read_text())
    assert [k.name for k in p.kernels] == ["atax_kernel1", "race_neighbour", "noraces"]


def test_stdin(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(RACE.read_text()))
    status, out, _ = run(capsys, "-", "--format", "json")
    doc = json.loads(out)
    assert [k["name"] for k in doc["kernels"]] == ["atax_kernel1", "race_neighbour",
                                                    "noraces"]
    assert status == 1


def test_stdin_is_read(monkeypatch, capsys):
    """Whatever it finds, `-` consumes standard input and does not look for a file '-'."""
    stdin = io.StringIO(RACE.read_text())
    monkeypatch.setattr("sys.stdin", stdin)
    status, out, err = run(capsys, "-", "--format", "json")
    assert status in (0, 1)
    assert stdin.read() == ""                   # consumed
    assert json.loads(out)["schema_version"] == 1
    assert "no such file" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("polycoal ")


def test_unknown_format_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["analyze", str(RACE), "--format", "xml"])
    assert info.value.code == 2


def test_analyze_does_not_crash_on_parameter_product(capsys, tmp_path):
    path = tmp_path / "row.cu"
    path.write_text("__global__ void row(float *A, int k, int n)\n{\n"
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    if (i < n) A[k * n + i] = 0.0f;\n}\n")
    status, out, _ = run(capsys, path, "--format", "json")
    assert status in (0, 1)
    assert [k["name"] for k in json.loads(out)["kernels"]] == ["row"]
