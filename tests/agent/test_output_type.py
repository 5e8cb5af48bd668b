"""``output_type``: the final answer constrained to a Pydantic model's JSON Schema, in every
preset's answer region (the response block, or the text itself), and validated into
``run.output``; a value the schema cannot rule out is an ``OutputValidationError``."""

from __future__ import annotations

import json
from typing import Any, List

import pytest
from pydantic import BaseModel, field_validator

from agentgrammar import Agent, AgentError, ToolCall, ToolRegistry
from agentgrammar.agent import OutputValidationError, RunFinished
from agentgrammar.agent.output_type import OutputSpec
from agentgrammar.formats import AgentOutput, get, names
from tests.scripted_model import scripted_model


class Forecast(BaseModel):
    city: str
    celsius: int
    sunny: bool


class StrictForecast(Forecast):
    @field_validator("celsius")
    @classmethod
    def plausible(cls, v: int) -> int:
        if v > 60:
            raise ValueError("too hot to be true")
        return v


ANSWER = Forecast(city="Oslo", celsius=18, sunny=True)


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"18 C and sunny in {city}"

    return reg


def _answer(name: str, text: str, think: bool = True) -> str:
    fmt = get(name)
    reasoning = "Done." if fmt.has_think and think else None
    out = (
        AgentOutput(think=reasoning, response=text)
        if fmt.has_response
        else AgentOutput(think=reasoning, text=text)
    )
    return fmt.render(out)


def _call(name: str) -> str:
    fmt = get(name)
    think = "Let me check." if fmt.has_think else None
    return fmt.render(AgentOutput(think=think, tool_calls=[ToolCall("weather", {"city": "Oslo"})]))


@pytest.mark.parametrize("name", names())
def test_the_grammar_holds_the_answer_to_the_schema(name: str) -> None:
    fmt, spec = get(name), OutputSpec(Forecast)
    tools = list(_registry())
    good = ANSWER.model_dump_json()
    compact = json.dumps(ANSWER.model_dump(), separators=fmt.separators)
    g = spec.grammar(fmt, tools)
    assert g.accepts(_answer(name, compact))
    assert not g.accepts(_answer(name, "It is sunny."))
    assert not g.accepts(_answer(name, compact.replace("18", '"18"')))
    assert g.accepts(_call(name))  # tools stay allowed
    if good != compact:
        assert not g.accepts(_answer(name, good))  # the compact layout, as for arguments
    # no tools: only the answer; a turn that must call keeps its grammar
    assert spec.grammar(fmt, [], reasoning="disabled").accepts(_answer(name, compact, think=False))
    required = spec.grammar(fmt, tools, tool_choice="required")
    assert required.accepts(_call(name))
    if not fmt.has_response:
        assert not required.accepts(_answer(name, compact))


def _agent(name: str, tok: Any, compiler: Any, *turns: str) -> Agent:
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    model = scripted_model(tok, [eot]).script([tok(t, add_special_tokens=False)["input_ids"] for t in turns])
    return Agent(model, tok, _registry(), compiler=compiler, format=name)


@pytest.mark.parametrize("name", ["tags", "hermes", "qwen3_coder", "harmony", "llama3"])
def test_run_returns_the_validated_output(tok, compiler, name: str) -> None:
    fmt = get(name)
    answer = json.dumps(ANSWER.model_dump(), separators=fmt.separators)
    agent = _agent(name, tok, compiler, _call(name), _answer(name, answer))
    events: List[Any] = []
    run = agent.run("Weather in Oslo?", output_type=Forecast, max_new_tokens=120, on_event=events.append)
    assert run.stopped_reason == "response" and run.valid, run.summary()
    assert run.output == ANSWER and isinstance(run.output, Forecast)
    assert run.response == answer and len(run.tool_calls) == 1
    assert events[-1] == RunFinished("response", ANSWER)


def test_a_value_the_schema_cannot_rule_out_is_a_typed_error(tok, compiler) -> None:
    hot = json.dumps({"city": "Oslo", "celsius": 99, "sunny": True})
    agent = _agent("tags", tok, compiler, _answer("tags", hot))
    with pytest.raises(OutputValidationError, match="too hot") as caught:
        agent.run("Weather?", output_type=StrictForecast, max_new_tokens=80)
    err = caught.value
    assert isinstance(err, AgentError) and err.text == hot and err.errors
    assert err.run.stopped_reason == "response" and err.run.output is None and err.run.response == hot


def test_unconstrained_prose_is_a_typed_error(tok, compiler) -> None:
    agent = _agent("hermes", tok, compiler, "It is sunny.")
    with pytest.raises(OutputValidationError, match="not a valid Forecast"):
        agent.run("Weather?", output_type=Forecast, constrained=False, max_new_tokens=40)


def test_no_output_when_the_run_ends_otherwise(tok, compiler) -> None:
    agent = _agent("tags", tok, compiler, _call("tags"))
    run = agent.run("Weather?", output_type=Forecast, max_turns=1, max_new_tokens=80)
    assert run.stopped_reason == "max_turns" and run.output is None


def test_output_types_beyond_models() -> None:
    assert OutputSpec(List[int]).validate("[1, 2]") == [1, 2]
    with pytest.raises(AgentError, match="no JSON Schema"):
        OutputSpec(object())
