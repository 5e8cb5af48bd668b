"""``Agent.stream`` / ``Agent.astream`` on a scripted model (see conftest.py), for every preset: a
tool-call turn and a final answer, streamed. The deltas join to what the turn parses to, each
call's name comes before its arguments, the events fold into the run that ``Agent.run`` returns,
the OpenAI chunks reassemble into the calls; ``astream`` runs under asyncio and both iterators
stop cleanly when closed early. A run on the demo model closes the file."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from typing import Any, Dict, List, Tuple

import pytest

from agentgrammar import Agent, AgentRun, ToolError, ToolRegistry
from agentgrammar.agent import (
    ReasoningDelta,
    RunFinished,
    TextDelta,
    TokenEvent,
    ToolCallArgumentsDelta,
    ToolCallFinished,
    ToolCallNamed,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    to_openai_chunks,
)
from agentgrammar.formats import AgentOutput, get, names
from agentgrammar.formats.pythonic import python_literal
from agentgrammar.registry import ToolCall
from tests.scripted_model import scripted_model

PROMPT = "Weather in Oslo?"


def _registry(calls: List[str]) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def weather(city: str, days: int) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"18 C and sunny in {city} for {days} days"

    @reg.tool
    def now() -> str:
        """The time."""
        calls.append("now")
        return "noon"

    return reg


def _script(name: str) -> Tuple[str, str]:
    """The preset's tool-call turn and final answer, as its model writes them."""
    fmt = get(name)
    think = "Let me check." if fmt.has_think else None
    calls = [ToolCall("weather", {"city": 'Oslo "N"', "days": 2}), ToolCall("now", {})]
    calls = calls if fmt.parallel_calls else calls[:1]
    text = None if fmt.has_response or fmt.calls_or_text else "Checking."
    first = fmt.render(AgentOutput(think=think, text=text, tool_calls=calls))
    if fmt.has_response:
        answer = AgentOutput(think=think, response="Sunny in Oslo.")
    else:
        answer = AgentOutput(think=think, text="Sunny in Oslo.")
    return first, fmt.render(answer)


def _model(tok: Any, *turns: str) -> Any:
    """A model that writes ``turns`` token by token (their own tokenization: DeepSeek's
    full-width markers are several byte tokens each on this vocabulary)."""
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    return scripted_model(tok, [eot]).script([tok(t, add_special_tokens=False)["input_ids"] for t in turns])


def _untimed(run: AgentRun) -> AgentRun:
    steps = [dataclasses.replace(s, grammar_build_s=0.0, generate_s=0.0, mask_times_s=[]) for s in run.steps]
    return dataclasses.replace(run, steps=steps)


def _turns(events: List[Any]) -> List[List[Any]]:
    turns: List[List[Any]] = []
    for e in events:
        if isinstance(e, TurnStarted):
            turns.append([])
        elif turns:
            turns[-1].append(e)
    return turns


def _check_turn(fmt: Any, events: List[Any], step: Any) -> None:
    """The deltas of one turn against its step (what the whole text parses to)."""
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == (step.think or "")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (step.content or "")
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [e.call for e in started] == step.tool_calls and [e.index for e in started] == list(
        range(len(started))
    )
    for e in started:
        i = e.index
        named = [k for k, x in enumerate(events) if isinstance(x, ToolCallNamed) and x.index == i]
        pieces = [
            (k, x) for k, x in enumerate(events) if isinstance(x, ToolCallArgumentsDelta) and x.index == i
        ]
        assert len(named) == 1 and events[named[0]].name == e.call.name
        assert pieces or (fmt.call_layout in ("xml", "pythonic") and not e.call.arguments)
        assert all(k > named[0] for k, _ in pieces), "an argument delta before the name"
        if events[named[0]].id is not None:
            assert events[named[0]].id == e.call.id
        assert json.loads(e.arguments_text) == e.call.arguments
        if fmt.call_layout in ("xml", "pythonic"):
            values: Dict[str, str] = {}
            for _, x in pieces:
                values[x.parameter] = values.get(x.parameter, "") + x.text
            written = python_literal if fmt.call_layout == "pythonic" else _xml_value
            assert values == {k: written(v) for k, v in e.call.arguments.items()}
        else:
            assert "".join(x.text for _, x in pieces) == e.arguments_text
            if fmt.call_layout != "styled":  # styled: the arguments' JSON, not their text
                assert e.arguments_text in step.text


def _xml_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _reassemble(chunks: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The messages an OpenAI client builds from the chunks: per completion id, the content,
    the reasoning and the tool calls (arguments concatenated per index)."""
    by_id: Dict[str, Dict[str, Any]] = {}
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        msg = by_id.setdefault(chunk["id"], {"content": "", "reasoning": "", "calls": {}, "finish": None})
        choice = chunk["choices"][0]
        delta = choice["delta"]
        msg["content"] += delta.get("content") or ""
        msg["reasoning"] += delta.get("reasoning_content") or ""
        for tc in delta.get("tool_calls", []):
            call = msg["calls"].setdefault(tc["index"], {"id": None, "name": None, "arguments": ""})
            if "id" in tc:
                call["id"] = tc["id"]
            fn = tc.get("function", {})
            if "name" in fn:
                assert call["name"] is None, "a call's name comes once"
                call["name"] = fn["name"]
            call["arguments"] += fn.get("arguments", "")
        msg["finish"] = choice["finish_reason"] or msg["finish"]
    return list(by_id.values())


@pytest.mark.parametrize("name", names())
def test_stream_of_every_preset(tok, compiler, name: str) -> None:
    fmt = get(name)
    first, answer = _script(name)
    ran: List[str] = []
    agent = Agent(_model(tok, first, answer), tok, _registry(ran), compiler=compiler, format=name)
    # Kimi-K3's markers are several byte tokens each on this vocabulary: its turn is 190 tokens
    events = list(agent.stream(PROMPT, max_new_tokens=256))
    streamed = AgentRun.from_events(events)
    assert streamed.stopped_reason == "response" and streamed.valid, streamed.summary()
    assert streamed.steps[0].text == first and streamed.steps[1].text == answer
    assert isinstance(events[-1], RunFinished)
    # the same run through run(): the fold of its events, and equal to the streamed one
    seen: List[Any] = []
    agent = Agent(_model(tok, first, answer), tok, _registry(ran), compiler=compiler, format=name)
    run = agent.run(PROMPT, max_new_tokens=256, on_event=seen.append)
    assert AgentRun.from_events(seen) == run
    assert _untimed(run) == _untimed(streamed)
    assert ran == [c.arguments.get("city", "now") for c in run.tool_calls] * 2

    turns = _turns(events)
    assert len(turns) == 2
    for turn, step in zip(turns, streamed.steps):
        _check_turn(fmt, turn, step)
    finished = [e for e in turns[0] if isinstance(e, ToolCallFinished)]
    assert [e.result for e in finished] == [r.value for r in streamed.steps[0].results]

    messages = _reassemble(list(to_openai_chunks(events, created=0)))
    assert [m["finish"] for m in messages] == ["tool_calls", "stop"]
    calls = messages[0]["calls"]
    assert sorted(calls) == list(range(len(run.steps[0].tool_calls)))
    for i, call in enumerate(run.steps[0].tool_calls):
        assert calls[i]["name"] == call.name and calls[i]["id"] == call.id
        assert json.loads(calls[i]["arguments"]) == call.arguments
    assert messages[1]["content"] == run.response and not messages[1]["calls"]
    assert messages[0]["reasoning"] == (run.steps[0].think or "")
    assert messages[0]["content"] == (run.steps[0].content or "")


def test_astream_under_asyncio(scripted, tok, compiler) -> None:
    first, answer = _script("qwen3")
    ran: List[str] = []
    agent = Agent(scripted([[first], [answer]]), tok, _registry(ran), compiler=compiler, format="qwen3")

    async def collect() -> List[Any]:
        async with contextlib.aclosing(agent.astream(PROMPT, max_new_tokens=160)) as stream:
            return [e async for e in stream]

    events = asyncio.run(collect())
    run = AgentRun.from_events(events)
    assert run.stopped_reason == "response" and run.response == "Sunny in Oslo."
    assert ran == ['Oslo "N"', "now"]
    for turn, step in zip(_turns(events), run.steps):
        _check_turn(get("qwen3"), turn, step)


class _Watched:
    """Counts the model's generate() calls and whether one is running."""

    def __init__(self, model: Any) -> None:
        self.calls = 0
        self.running = False
        self.tokens: List[int] = []
        original = model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.running = True
            try:
                out = original(*args, **kwargs)
                self.tokens.append(int(out.shape[1] - kwargs["input_ids"].shape[1]))
                return out
            finally:
                self.running = False

        model.generate = generate


def test_closing_the_stream_stops_generation_and_tools(scripted, tok, compiler) -> None:
    first, answer = _script("hermes")
    ran: List[str] = []
    model = scripted([[first], [answer]])
    watched = _Watched(model)
    agent = Agent(model, tok, _registry(ran), compiler=compiler, format="hermes")
    stream = agent.stream(PROMPT, max_new_tokens=160)
    for event in stream:
        if isinstance(event, ToolCallNamed):
            break
    stream.close()  # sets the cancel flag and waits for the worker
    assert not watched.running and watched.calls == 1 and ran == []
    full = len(tok(first, add_special_tokens=False)["input_ids"])
    assert watched.tokens[0] < full, "generation went on after the stream was closed"


def test_cancelling_astream_stops_cleanly(scripted, tok, compiler) -> None:
    first, answer = _script("hermes")
    ran: List[str] = []
    model = scripted([[first], [answer]])
    watched = _Watched(model)
    agent = Agent(model, tok, _registry(ran), compiler=compiler, format="hermes")

    async def main() -> List[Any]:
        seen: List[Any] = []
        named = asyncio.Event()

        async def consume() -> None:
            async for event in agent.astream(PROMPT, max_new_tokens=160):
                seen.append(event)
                if isinstance(event, ToolCallNamed):
                    named.set()

        task = asyncio.ensure_future(consume())
        await named.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    seen = asyncio.run(main())
    assert any(isinstance(e, ToolCallNamed) for e in seen)
    assert not any(isinstance(e, (TurnFinished, RunFinished)) for e in seen)
    assert not watched.running and watched.calls == 1 and ran == []


def test_errors_reach_the_consumer(scripted, tok, compiler) -> None:
    agent = Agent(scripted([["Hi"]]), tok, _registry([]), compiler=compiler, format="hermes")
    with pytest.raises(ToolError, match="nope"):  # bad arguments: at once, not in the worker
        agent.stream(PROMPT, tools=["nope"])

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the model broke")

    agent.model.generate = broken
    seen: List[Any] = []
    with pytest.raises(RuntimeError, match="the model broke"):
        for event in agent.stream(PROMPT):
            seen.append(event)
    assert [type(e).__name__ for e in seen] == ["RunStarted", "TurnStarted"]

    async def consume() -> None:
        async for _ in agent.astream(PROMPT):
            pass

    with pytest.raises(RuntimeError, match="the model broke"):
        asyncio.run(consume())


def _demo_run(
    model: Any, tokenizer: Any, prompt: str, **options: Any
) -> Tuple[List[Any], AgentRun, AgentRun]:
    from agentgrammar.demo.tools import demo_registry

    agent = Agent(model, tokenizer, demo_registry(), format="tags")
    events = list(agent.stream(prompt, **options))
    return events, AgentRun.from_events(events), agent.run(prompt, **options)


def test_a_tiny_demo_model_run_streams(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo's model trained for a few steps: weak (its turns run out of tokens) but
    # constrained. Streamed and run, the fold is the run and the tokens are the turns' text.
    from agentgrammar.demo.model import TrainConfig, load_demo_model

    monkeypatch.setenv("AGENTGRAMMAR_CACHE", str(tmp_path))
    model, tokenizer, _ = load_demo_model("tags", TrainConfig(episodes=60, steps=4, vocab_size=400))
    options: Dict[str, Any] = dict(max_new_tokens=32, max_turns=2, do_sample=True, seed=3)
    events, streamed, run = _demo_run(model, tokenizer, "What is the weather in Paris?", **options)
    assert _untimed(run) == _untimed(streamed) and streamed.steps
    for turn, step in zip(_turns(events), streamed.steps):
        assert "".join(e.text for e in turn if isinstance(e, TokenEvent)) == step.text
        named = [k for k, e in enumerate(turn) if isinstance(e, ToolCallNamed)]
        pieces = [k for k, e in enumerate(turn) if isinstance(e, ToolCallArgumentsDelta)]
        assert not pieces or (named and named[0] < pieces[0])


@pytest.mark.slow
@pytest.mark.parametrize("prompt", ["What is the weather in Paris?", "What is 6 * 7?"])
def test_the_demo_model_streams_its_run(prompt: str) -> None:
    # The demo's default model (cached after its first training): a tool call, then the answer.
    from agentgrammar.demo.model import load_demo_model

    model, tokenizer, _ = load_demo_model("tags")
    events, streamed, run = _demo_run(model, tokenizer, prompt, max_new_tokens=96, max_turns=3)
    assert _untimed(run) == _untimed(streamed)
    assert streamed.stopped_reason == "response" and streamed.tool_calls, streamed.summary()
    for turn, step in zip(_turns(events), streamed.steps):
        _check_turn(get("tags"), turn, step)
    messages = _reassemble(list(to_openai_chunks(events)))
    assert [json.loads(c["arguments"]) for c in messages[0]["calls"].values()] == [
        c.arguments for c in streamed.steps[0].tool_calls
    ]
