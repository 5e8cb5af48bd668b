"""The agent loop end to end on a scripted tiny Llama (see conftest.py): multi-turn runs, tool
errors, max_turns, tool_choice, unconstrained parse errors, async tools, events and timings."""

from __future__ import annotations

import asyncio
import json
from typing import Any, List

import pytest

from agentgrammar import Agent, AgentGrammarError, AgentRun, Compiler, ToolError
from agentgrammar.agent import (
    AgentError,
    ResponseEvent,
    RunFinished,
    RunStarted,
    ThinkEvent,
    TokenEvent,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)

# Short scripts: with a 128k vocabulary every generated token costs a full-vocabulary mask.
THINK = "<think>ok</think>\n"
CALL_OSLO = THINK + '<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>'
ANSWER = THINK + "<response>Sunny.</response>"


def _agent(model: Any, tok: Any, registry: Any, compiler: Any, **kw: Any) -> Agent:
    return Agent(model, tok, registry, compiler=compiler, **kw)


def test_multi_turn_feeds_tool_results_back(scripted, tok, registry, compiler) -> None:
    model = scripted([[CALL_OSLO], [ANSWER]])
    events: List[Any] = []
    run = _agent(model, tok, registry, compiler).run(
        "Weather in Oslo?", max_new_tokens=60, on_event=events.append
    )
    assert isinstance(run, AgentRun)
    _check_events(events, run)
    assert run.stopped_reason == "response" and run.valid
    assert run.response == "Sunny."
    assert len(run.steps) == 2
    first, second = run.steps
    assert first.text == CALL_OSLO
    assert first.think == "ok"
    assert [(c.name, c.arguments) for c in run.tool_calls] == [("weather", {"city": "Oslo"})]
    assert first.results[0].value == "18 C and sunny in Oslo" and first.results[0].error is None
    assert second.think == "ok" and second.tool_calls == []
    # The conversation: user, assistant (with its calls), tool, assistant.
    roles = [m["role"] for m in run.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_msg = run.messages[2]
    assert tool_msg["name"] == "weather"
    assert tool_msg["content"] == "18 C and sunny in Oslo"  # a str result is the content as is
    assert tool_msg["tool_call_id"] == run.tool_calls[0].id
    assert run.messages[1]["tool_calls"][0]["function"]["name"] == "weather"
    # The tool result is in the second prompt (plain layout: the tokenizer has no chat template).
    assert len(model.prompts) == 2
    assert "<|tool|>\n" + tool_msg["content"] in model.prompts[1]
    assert tool_msg["content"] not in model.prompts[0]
    assert "weather" in model.prompts[0]  # the tools block
    # Token counts and timings.
    assert first.n_prompt_tokens > 0 and 0 < first.n_new_tokens <= 60
    assert run.n_new_tokens == first.n_new_tokens + second.n_new_tokens
    for step in run.steps:
        assert step.grammar_build_s > 0 and step.generate_s > 0
        assert len(step.mask_times_s) == step.n_new_tokens
    assert run.mask_mean_s is not None and 0 < run.mask_mean_s <= run.mask_p99_s  # type: ignore[operator]
    assert "2 turns, 1 tool call" in run.summary()


def test_tool_that_raises_becomes_an_error_result(scripted, tok, registry, compiler) -> None:
    call = THINK + '<tool_call>{"name": "fail", "arguments": {"x": 7}}</tool_call>'
    model = scripted([[call], [ANSWER]])
    run = _agent(model, tok, registry, compiler).run("Try it.", max_new_tokens=60)
    assert run.stopped_reason == "response" and run.response == "Sunny."
    result = run.steps[0].results[0]
    assert result.value is None and "no luck with 7" in (result.error or "")
    assert not result.invalid and run.valid  # the call was valid; the handler failed
    assert json.loads(run.messages[2]["content"]) == {"error": result.error}
    assert "no luck with 7" in model.prompts[1]


def test_invalid_arguments_unconstrained_become_an_error_result(scripted, tok, registry, compiler) -> None:
    call = THINK + '<tool_call>{"name": "fail", "arguments": {"x": "many"}}</tool_call>'
    model = scripted([[call], [ANSWER]])
    run = _agent(model, tok, registry, compiler).run("Try it.", max_new_tokens=60, constrained=False)
    result = run.steps[0].results[0]
    assert result.invalid and "invalid arguments" in (result.error or "")
    assert run.stopped_reason == "response" and not run.valid
    assert run.steps[0].mask_times_s == [] and run.steps[0].grammar_build_s == 0


def test_max_turns(scripted, tok, registry, compiler) -> None:
    model = scripted([[CALL_OSLO]] * 3)
    run = _agent(model, tok, registry, compiler).run("Again and again.", max_turns=2, max_new_tokens=60)
    assert run.stopped_reason == "max_turns" and run.response is None
    assert len(run.steps) == 2 and len(run.tool_calls) == 2
    assert [m["role"] for m in run.messages] == ["user", "assistant", "tool", "assistant", "tool"]


def test_tool_choice_none_forces_the_model_off_the_call_path(scripted, tok, registry, compiler) -> None:
    # The script prefers calling; the grammar only allows the response.
    model = scripted([[CALL_OSLO, ANSWER]])
    run = _agent(model, tok, registry, compiler).run("Weather?", tool_choice="none", max_new_tokens=60)
    assert run.tool_calls == [] and "<tool_call>" not in run.steps[0].text
    assert run.stopped_reason == "response" and run.response == "Sunny."
    # Unconstrained, the same script does call.
    model = scripted([[CALL_OSLO, ANSWER], [ANSWER]])
    run = _agent(model, tok, registry, compiler).run("Weather?", constrained=False, max_new_tokens=60)
    assert [c.name for c in run.tool_calls] == ["weather"]


def test_tool_choice_required_calls_in_the_first_turn_only(scripted, tok, registry, compiler) -> None:
    # The script prefers answering; the grammar requires a call in turn 1, then "auto" lets it answer.
    model = scripted([[ANSWER, CALL_OSLO], [ANSWER, CALL_OSLO]])
    run = _agent(model, tok, registry, compiler).run("Weather?", tool_choice="required", max_new_tokens=60)
    assert [c.name for c in run.steps[0].tool_calls] == ["weather"]
    assert run.steps[1].tool_calls == [] and run.response == "Sunny."


def test_unconstrained_parse_error_ends_the_run(scripted, tok, registry, compiler) -> None:
    broken = THINK + '<tool_call>{"name": "weather", "argu'
    model = scripted([[broken]])
    run = _agent(model, tok, registry, compiler).run("Weather?", constrained=False, max_new_tokens=60)
    assert run.stopped_reason == "error" and run.response is None and not run.valid
    assert len(run.steps) == 1 and run.steps[0].text == broken
    assert "not valid JSON" in (run.steps[0].error or "")
    assert run.messages[-1] == {"role": "assistant", "content": broken}


def test_async_tool_in_run_and_arun(scripted, tok, registry, compiler) -> None:
    call = THINK + '<tool_call>{"name": "echo", "arguments": {"text": "hi"}}</tool_call>'
    run = _agent(scripted([[call], [ANSWER]]), tok, registry, compiler).run("Echo.", max_new_tokens=60)
    assert run.steps[0].results[0].value == "HI" and run.response == "Sunny."

    agent = _agent(scripted([[call], [ANSWER]]), tok, registry, compiler)
    events: List[Any] = []
    run = asyncio.run(agent.arun("Echo.", max_new_tokens=60, on_event=events.append))
    assert run.steps[0].results[0].value == "HI" and run.stopped_reason == "response"
    assert ToolCallFinished(run.steps[0].tool_calls[0], "HI", None, 0) in events


def _check_events(events: List[Any], run: AgentRun) -> None:
    """The events of the CALL_OSLO / ANSWER run: in order, with correct regions."""
    turns: List[List[Any]] = [[]]
    for e in events:
        turns[-1].append(e)
        if isinstance(e, TurnFinished):
            turns.append([])
    assert turns[-1] == [RunFinished("response")] and len(turns) == 3
    assert turns[0][:2] == [RunStarted(tuple(run.messages[:1])), TurnStarted(0)]
    assert turns[1][0] == TurnStarted(1)
    first, second = turns[0], turns[1]
    # the events of earlier versions, in their order; the deltas are tested in test_streaming
    older = (TokenEvent, ThinkEvent, ToolCallStarted, ToolCallFinished, ResponseEvent, TurnFinished)

    def regions(evs: List[Any]) -> List[Any]:
        merged: List[Any] = []
        for e in evs:
            if isinstance(e, TokenEvent):
                if merged and merged[-1][1] == e.region:
                    merged[-1] = (merged[-1][0] + e.text, e.region)
                else:
                    merged.append((e.text, e.region))
        return merged

    call_text = '<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>'
    assert regions(first) == [("<think>ok</think>", "think"), ("\n", "text"), (call_text, "tool_call")]
    assert regions(second) == [
        ("<think>ok</think>", "think"),
        ("\n", "text"),
        ("<response>Sunny.</response>", "response"),
    ]
    kinds = [type(e).__name__ for e in first if isinstance(e, older) and not isinstance(e, TokenEvent)]
    assert kinds == ["ThinkEvent", "ToolCallStarted", "ToolCallFinished", "TurnFinished"]
    think_at = next(k for k, e in enumerate(first) if isinstance(e, ThinkEvent))
    assert first[think_at] == ThinkEvent("ok")
    # The think event comes as soon as the block closes, before the call's tokens.
    assert any(isinstance(e, TokenEvent) and e.region == "tool_call" for e in first[think_at:])
    started = next(e for e in first if isinstance(e, ToolCallStarted))
    finished = next(e for e in first if isinstance(e, ToolCallFinished))
    assert started.call == finished.call == run.steps[0].tool_calls[0]
    assert finished.result == "18 C and sunny in Oslo" and finished.error is None
    assert first[-1] == TurnFinished(run.steps[0], tuple(run.messages[1:3]))
    kinds = [type(e).__name__ for e in second if isinstance(e, older) and not isinstance(e, TokenEvent)]
    assert kinds == ["ThinkEvent", "ResponseEvent", "TurnFinished"]
    assert ResponseEvent("Sunny.") in second
    # The streamed text is the step's text.
    assert "".join(e.text for e in first if isinstance(e, TokenEvent)) == run.steps[0].text


def test_random_model_stays_in_the_grammar(tiny_llama, tok, registry, compiler) -> None:
    run = _agent(tiny_llama, tok, registry, compiler).run(
        "Hello", tools=["weather"], max_turns=2, max_new_tokens=24, reasoning="disabled"
    )
    assert len(run.steps) >= 1
    for step in run.steps:
        assert len(step.mask_times_s) == step.n_new_tokens
    # Unfinished in 24 tokens or not, whatever was generated follows the grammar.
    text = run.steps[0].text
    assert text.startswith("<") or text == ""


def test_sampling_with_seed_is_reproducible(tiny_llama, tok, registry, compiler) -> None:
    agent = _agent(tiny_llama, tok, registry, compiler)
    kw = dict(max_turns=1, max_new_tokens=12, do_sample=True, temperature=0.8, top_p=0.9, seed=3)
    a, b = agent.run("Hi", **kw), agent.run("Hi", **kw)
    assert a.steps[0].text == b.steps[0].text


def test_chat_template_is_used_when_it_renders_tools(scripted, tok, registry, compiler) -> None:
    # (transformers renders templates with trim_blocks: a newline right after a tag is dropped.)
    template = (
        "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{{ '\\n' }}{% endfor %}"
        "{% if tools %}[tools]{% for t in tools %}{{ t['function']['name'] }};{% endfor %}{{ '\\n' }}{% endif %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    old = tok.chat_template
    tok.chat_template = template
    try:
        model = scripted([[CALL_OSLO], [ANSWER]])
        run = _agent(model, tok, registry, compiler, system_prompt="Be brief.", format="tags").run(
            "Weather?", max_new_tokens=60
        )
    finally:
        tok.chat_template = old
    assert run.response == "Sunny."
    assert model.prompts[0] == "[system]Be brief.\n[user]Weather?\n[tools]weather;fail;echo;\n[assistant]"
    # The call turn is kept as a structured message (this template shows only its content,
    # empty); a str result is the tool message's content as it is.
    assert "[assistant]\n[tool]18 C and sunny in Oslo\n" in model.prompts[1]


def test_an_agent_warms_its_compiler_with_its_format(tiny_llama, tok, registry, compiler) -> None:
    """Made, an agent warms its compiler with its format's warm-up grammar (markers as tokens),
    once per format; a compiler made with background=False is left alone."""
    agent = _agent(tiny_llama, tok, registry, compiler, format="qwen3")
    key = agent._grammar_format.warm_up_grammar().digest
    assert key in compiler._warm_ups
    warmed = dict(compiler._warm_ups)
    _agent(tiny_llama, tok, registry, compiler, format="qwen3")
    assert compiler._warm_ups == warmed
    quiet = Compiler(compiler.vocabulary, background=False)
    _agent(tiny_llama, tok, registry, quiet, format="qwen3")
    assert quiet._warm_ups == {}


def test_errors(tiny_llama, tok, registry, compiler) -> None:
    with pytest.raises(AgentError, match="unknown format 'nope'"):
        Agent(tiny_llama, tok, registry, format="nope", compiler=compiler)
    agent = _agent(tiny_llama, tok, registry, compiler)
    with pytest.raises(ToolError, match="unknown tool 'wether'"):
        agent.run("Hi", tools=["wether"])
    with pytest.raises(AgentError, match="batch"):
        agent.run(["Hi", "Hello"])  # type: ignore[list-item]
    with pytest.raises(AgentError, match="batch"):
        agent.run([[{"role": "user", "content": "Hi"}]])  # type: ignore[list-item]
    with pytest.raises(AgentGrammarError):
        agent.run("Hi", max_turns=0)
    with pytest.raises(AgentError):
        Agent(tiny_llama, tok, registry=[1], compiler=compiler)  # type: ignore[arg-type]
