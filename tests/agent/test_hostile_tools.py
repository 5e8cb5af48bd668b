"""Hostile model output and hostile tools through the agent loop (a scripted tiny Llama, see
conftest.py, generating without the grammar): whatever the model writes or a tool returns,
``Agent.run`` ends with a step error or an error result, never an exception, never a tool run
with NaN, and the conversation stays text that the next turn's tokenizer can take."""

from __future__ import annotations

import asyncio
import json
from typing import Any, List

import pytest
from pydantic import BaseModel, Field, field_validator

from agentgrammar import Agent, Tool, ToolRegistry

THINK = "<think>ok</think>\n"
ANSWER = THINK + "<response>Done.</response>"
TREE = {
    "type": "object",
    "properties": {"v": {"$ref": "#/$defs/L"}},
    "$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}},
}


class Picky(BaseModel):
    """A model whose own validator fails with an exception pydantic does not wrap."""

    key: str

    @field_validator("key")
    @classmethod
    def _lookup(cls, value: str) -> str:
        return {"a": "A"}[value]  # KeyError for anything else


@pytest.fixture()
def ran() -> List[Any]:
    return []


@pytest.fixture()
def hostile(ran: List[Any]) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def transfer(amount: float = Field(ge=0, le=100)) -> str:
        """Send money."""
        ran.append(amount)
        return f"sent {amount}"

    @reg.tool
    def echo(text: str) -> str:
        """Say it back."""
        ran.append(text)
        return text

    @reg.tool
    def mangle(text: str) -> str:
        """Returns a lone surrogate."""
        return text + "\ud800"

    @reg.tool
    async def amangle(text: str) -> str:
        """Returns a lone surrogate (async)."""
        return text + "\udcff"

    @reg.tool
    def cyclic(n: int) -> Any:
        """Returns a list that holds itself."""
        out: List[Any] = [n]
        out.append(out)
        return out

    reg.add(Tool("tree", "Nested lists.", TREE, handler=lambda **kw: "ok"))
    reg.add(Picky, name="picky", handler=lambda p: p.key)
    return reg


def _call(name: str, arguments: str) -> str:
    return THINK + '<tool_call>{"name": "%s", "arguments": %s}</tool_call>' % (name, arguments)


def _run(scripted: Any, tok: Any, registry: ToolRegistry, compiler: Any, turns: List[str], **kw: Any) -> Any:
    model = scripted([[t] for t in turns])
    agent = Agent(model, tok, registry, compiler=compiler)
    run = agent.run("Go.", constrained=False, max_new_tokens=kw.pop("max_new_tokens", 80), **kw)
    # every message of the conversation must be text a tokenizer can encode
    json.dumps(run.messages, ensure_ascii=False).encode("utf-8")
    return run, model


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_never_reaches_a_tool(scripted, tok, hostile, compiler, ran, value: str) -> None:
    run, _ = _run(scripted, tok, hostile, compiler, [_call("transfer", '{"amount": %s}' % value), ANSWER])
    assert ran == []
    assert run.stopped_reason == "error" and value in (run.steps[0].error or "")


def test_a_lone_surrogate_escape_never_reaches_a_tool(scripted, tok, hostile, compiler, ran) -> None:
    # Before: the tool echoed "\ud800" and the next turn's tokenizer raised TypeError.
    run, _ = _run(scripted, tok, hostile, compiler, [_call("echo", '{"text": "a\\ud800"}'), ANSWER])
    assert ran == []
    assert run.stopped_reason == "error" and "lone surrogate" in (run.steps[0].error or "")


def test_a_surrogate_pair_escape_is_a_character(scripted, tok, hostile, compiler, ran) -> None:
    run, model = _run(scripted, tok, hostile, compiler, [_call("echo", '{"text": "\\ud83d\\ude00"}'), ANSWER])
    assert ran == ["😀"] and run.stopped_reason == "response"


def test_a_tool_result_with_a_lone_surrogate_is_made_safe(scripted, tok, hostile, compiler) -> None:
    # Before: the result entered the conversation and the next turn's tokenizer raised TypeError.
    run, model = _run(scripted, tok, hostile, compiler, [_call("mangle", '{"text": "hi"}'), ANSWER])
    assert run.stopped_reason == "response" and run.response == "Done."
    result = run.steps[0].results[0]
    assert result.ok and result.value == "hi\ufffd"
    assert run.messages[2]["content"] == "hi\ufffd" and "hi\ufffd" in model.prompts[1]


def test_an_async_tool_result_with_a_lone_surrogate_is_made_safe(scripted, tok, hostile, compiler) -> None:
    model = scripted([[_call("amangle", '{"text": "hi"}')], [ANSWER]])
    run = asyncio.run(
        Agent(model, tok, hostile, compiler=compiler).arun("Go.", constrained=False, max_new_tokens=80)
    )
    assert run.stopped_reason == "response"
    assert run.steps[0].results[0].value == "hi\ufffd"


def test_a_result_json_cannot_write_is_an_error_result(scripted, tok, hostile, compiler) -> None:
    # Before: json.dumps raised "Circular reference detected" out of Agent.run.
    run, _ = _run(scripted, tok, hostile, compiler, [_call("cyclic", '{"n": 1}'), ANSWER])
    result = run.steps[0].results[0]
    assert not result.ok and "cannot be written as text" in (result.error or "")
    assert run.stopped_reason == "response"


def test_arguments_nested_past_the_limit_end_the_turn(scripted, tok, hostile, compiler) -> None:
    # Before: 300 levels under a recursive $ref made validation raise RecursionError out of run.
    deep = "[" * 300 + "]" * 300
    run, _ = _run(
        scripted, tok, hostile, compiler, [_call("tree", '{"v": %s}' % deep), ANSWER], max_new_tokens=400
    )
    assert run.stopped_reason == "error" and "nested more than" in (run.steps[0].error or "")


def test_a_validator_that_raises_anything_is_an_error_result(scripted, tok, hostile, compiler) -> None:
    # Before: the model's KeyError came out of Agent.run.
    run, _ = _run(scripted, tok, hostile, compiler, [_call("picky", '{"key": "zzz"}'), ANSWER])
    result = run.steps[0].results[0]
    assert result.invalid and "KeyError" in (result.error or "")
    assert run.stopped_reason == "response"
