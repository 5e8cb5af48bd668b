"""The agent's parts without a model: region tracking, the streamer, prompt rendering, records."""

from __future__ import annotations

import datetime
from typing import Any, List, Tuple

import pytest

from agentgrammar import ToolCall
from agentgrammar.agent import (
    AgentRun,
    AgentStep,
    ReasoningDelta,
    RegionTracker,
    TextDelta,
    ThinkEvent,
    TokenEvent,
    ToolResult,
    make_streamer,
    render_messages,
)
from agentgrammar.agent.prompt import chat_template_renders_tools
from agentgrammar.formats import AgentFormat, AgentOutput, get, names

CALLS = [ToolCall("f", {"s": "a]}</tool_call>", "n": [1, 2]}), ToolCall("g", {})]


def _regions(fmt: AgentFormat, text: str, chunk: int = 1) -> List[Tuple[str, str]]:
    tracker = RegionTracker(fmt)
    pieces: List[Tuple[str, str]] = []
    for k in range(0, len(text), chunk):
        pieces += tracker.feed(text[k : k + chunk])
    pieces += tracker.flush()
    merged: List[Tuple[str, str]] = []
    for piece, region in pieces:
        if merged and merged[-1][1] == region:
            merged[-1] = (merged[-1][0] + piece, region)
        else:
            merged.append((piece, region))
    return merged


@pytest.mark.parametrize("name", names())
@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_regions_of_every_preset(name: str, chunk: int) -> None:
    fmt = get(name)
    calls = CALLS if fmt.parallel_calls else CALLS[:1]
    if fmt.call_layout == "xml":  # a raw xml value cannot hold the parameter end marker
        calls = [ToolCall("f", {"s": "a]}", "n": [1, 2]}), CALLS[1]]
    response = "done" if fmt.has_response and fmt.response_after_calls else None
    out = AgentOutput(think="hm" if fmt.has_think else None, tool_calls=calls, response=response)
    text = fmt.render(out)
    merged = _regions(fmt, text, chunk)
    assert "".join(p for p, _ in merged) == text
    kinds = [r for _, r in merged]
    if fmt.has_think:
        assert merged[0] == (fmt.think_begin + fmt.block_pad + "hm" + fmt.block_pad + fmt.think_end, "think")
    calls_text = "".join(p for p, r in merged if r == "tool_call")
    for i, call in enumerate(calls):
        # the name in JSON, before the name end, or in the id a Kimi-K2 head holds
        heads = [f'"{call.name}"', f"{call.name}{fmt.name_end}"]
        if fmt.call_id_form is not None:
            heads.append(fmt.new_call_id(i, call.name) + fmt.name_end)
        assert any(h in calls_text for h in heads), calls_text
    assert "a]}" in calls_text and "a]}" not in "".join(p for p, r in merged if r != "tool_call")
    if response is not None:
        assert merged[-1] == (f"{fmt.response_begin}done{fmt.response_end}", "response")
    assert set(kinds) <= {"think", "text", "tool_call", "response"}


def test_regions_exactly() -> None:
    tags = get("tags")
    text = '<think>a</think>\n<tool_call>{"name": "f", "arguments": {"s": "</tool_call>"}}</tool_call>\n<response>b</response>'
    assert _regions(tags, text) == [
        ("<think>a</think>", "think"),
        ("\n", "text"),
        ('<tool_call>{"name": "f", "arguments": {"s": "</tool_call>"}}</tool_call>', "tool_call"),
        ("\n", "text"),
        ("<response>b</response>", "response"),
    ]
    # Llama-3: one bare JSON call, <|python_tag|> optional before it; the call ends with its object.
    llama = get("llama3")
    call = '{"name": "f", "parameters": {"s": "}"}}'
    assert _regions(llama, call) == [(call, "tool_call")]
    assert _regions(llama, "<|python_tag|>" + call) == [("<|python_tag|>" + call, "tool_call")]
    # A format whose trigger is the JSON object's start: the call ends when the object closes.
    bare = AgentFormat(call_begin="", call_end="")
    assert _regions(bare, 'Hi {"name": "f", "arguments": {"a": "}"}} bye') == [
        ("Hi ", "text"),
        ('{"name": "f", "arguments": {"a": "}"}}', "tool_call"),
        (" bye", "text"),
    ]
    # The think block only counts at the start; later it is text.
    qwen3 = get("qwen3")
    assert _regions(qwen3, "x <think>y</think>") == [("x <think>y</think>", "text")]


def test_tracker_think_state() -> None:
    tracker = RegionTracker(get("qwen3"))
    tracker.feed("<think>\nstill ")
    assert tracker.region == "think" and tracker.think == "still" and not tracker.think_closed
    tracker.feed("going</think>\n\nHi")
    assert tracker.region == "text" and tracker.think == "still going" and tracker.think_closed


# --------------------------------------------------------------------------- the streamer


class _Ids(list):
    """A stand-in for a tensor of ids (``reshape(-1).tolist()``), so no torch is needed."""

    @property
    def shape(self) -> Tuple[int, ...]:
        return (1, len(self))

    def reshape(self, *_: Any) -> "_Ids":
        return self

    def tolist(self) -> List[int]:
        return list(self)


def test_streamer_decodes_whole_characters_and_skips_the_prompt() -> None:
    from tests.hf_tokenizers import llama32_tokenizer

    tok = llama32_tokenizer()
    text = "<think>雨が降る 🌧️ ok</think>\n<response>Ça va 🙂</response>"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > len(text) // 4
    events: List[Any] = []
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    streamer = make_streamer(tok, get("tags"), events.append, stop_token_ids=[eot])
    streamer.put(_Ids(tok("the prompt")["input_ids"]))
    for i in [*ids, eot, 1234]:  # tokens after the stop token are ignored
        streamer.put(_Ids([i]))
    streamer.end()
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert "".join(e.text for e in tokens) == text
    assert not any("\ufffd" in e.text for e in tokens)
    assert [e for e in events if isinstance(e, ThinkEvent)] == [ThinkEvent("雨が降る 🌧️ ok")]
    think_at = events.index(ThinkEvent("雨が降る 🌧️ ok"))
    before = [e for e in events[:think_at] if isinstance(e, TokenEvent)]
    # Reported with the token that closes the block (which may carry the "\n" after it too).
    assert {e.region for e in before} == {"think", "text"}
    assert all(e.region == "think" for e in before[:-1])
    # The structured deltas come with the tokens: the block's text and the response's.
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "雨が降る 🌧️ ok"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Ça va 🙂"
    assert {e.region for e in tokens} == {"think", "text", "response"}


def test_streamer_reports_an_open_think_block_at_the_end() -> None:
    from tests.hf_tokenizers import llama32_tokenizer

    tok = llama32_tokenizer()
    events: List[Any] = []
    streamer = make_streamer(tok, get("tags"), events.append)
    streamer.put(_Ids([1]))
    streamer.put(_Ids(tok("<think>cut off", add_special_tokens=False)["input_ids"]))
    streamer.end()
    assert events[-1] == ThinkEvent("cut off")


# --------------------------------------------------------------------------- prompts


def test_render_messages_layout() -> None:
    fmt = get("tags")
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}],
        },
        {"role": "tool", "name": "now", "tool_call_id": "c1", "content": '"noon"'},
    ]
    assert render_messages(messages, fmt, None) == (
        "<|system|>\nBe brief.\n"
        "<|user|>\nHi\n"
        '<|assistant|>\n<tool_call>{"name": "now", "arguments": {}}</tool_call>\n'
        '<|tool|>\n"noon"\n'
        "<|assistant|>\n"
    )
    assert render_messages([{"role": "user", "content": "Hi"}], fmt, []) == "<|user|>\nHi\n<|assistant|>\n"
    from agentgrammar import Tool

    now = Tool("now", "The time.", {"type": "object", "properties": {}})
    text = render_messages(messages, fmt, [now])
    assert text.startswith("<|system|>\nBe brief.\n\n" + fmt.render_tools([now]) + "\n<|user|>\nHi\n")


def test_chat_template_detection() -> None:
    class Broken:
        chat_template = "x"

        def apply_chat_template(self, *a: Any, **k: Any) -> str:
            raise ValueError("no tools here")

    class Ignores:
        chat_template = "x"

        def apply_chat_template(self, *a: Any, **k: Any) -> str:
            return "<user>ping"

    from agentgrammar import Tool

    now = Tool("now", "", {"type": "object", "properties": {}})
    assert not chat_template_renders_tools(Broken(), [now])
    assert not chat_template_renders_tools(Ignores(), [now])
    assert chat_template_renders_tools(Ignores(), [])


# --------------------------------------------------------------------------- records


def test_tool_result_messages() -> None:
    call = ToolCall("when", {}, id="call_1")
    when = datetime.date(2024, 5, 1)
    assert ToolResult(call, when).to_message() == {
        "role": "tool",
        "name": "when",
        "content": '"2024-05-01"',
        "tool_call_id": "call_1",
    }
    assert ToolResult(call, {"ü": 1}).content == '{"ü": 1}'
    assert ToolResult(call, error="bad").ok is False


def test_run_records() -> None:
    empty = AgentRun()
    assert empty.mask_mean_s is None and empty.mask_p99_s is None and empty.response is None
    call = ToolCall("f", {})
    run = AgentRun(
        steps=[
            AgentStep(
                tool_calls=[call],
                results=[ToolResult(call, error="unknown", invalid=True)],
                mask_times_s=[float(k) for k in range(1, 201)],
            ),
            AgentStep(response="r"),
        ],
        stopped_reason="response",
    )
    assert not run.valid and run.response == "r" and run.mask_p99_s == 198.0
    assert "invalid" in run.summary()
    from rich.console import Console

    console = Console(record=True, width=120)
    console.print(run)
    assert "unknown" in console.export_text()
