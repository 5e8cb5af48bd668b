"""``Agent.run_batch`` (``agent.batch``): conversations in lockstep through one batched
``generate()`` per turn, each row with its own tools and grammar, finished rows leaving the
batch, every row's tool calls run at once, the runs equal to the single runs."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Dict, List, Literal, Sequence

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgrammar import Agent, ToolRegistry  # noqa: E402
from agentgrammar.agent import AgentError  # noqa: E402
from agentgrammar.agent.batch import tools_per_row  # noqa: E402
from tests.agent.test_kv_cache import _eager_model  # noqa: E402
from tests.kit import kit_case, kit_template, kit_tokenizer, token_ids  # noqa: E402
from tests.scripted_model import SCRIPT_BONUS, ScriptedLM, scripted_model  # noqa: E402

CASE = "qwen3-no-thinking"


def _call(name: str, **arguments: Any) -> str:
    import json

    body = json.dumps({"name": name, "arguments": arguments})
    return f"<tool_call>\n{body}\n</tool_call><|im_end|>"


class RowScriptedLM(ScriptedLM):
    """A ``ScriptedLM`` whose script is per conversation: ``scripts[key][turn]`` is what the
    conversation whose prompt holds ``key`` writes in its ``turn``-th turn (the number of
    assistant headers in its prompt, less one), in a batch or alone. Records each call's rows."""

    scripts: Dict[str, List[List[int]]]
    batch_sizes: List[int]

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        ids = kwargs["input_ids"]
        self.row_targets = [self._row_script(row) for row in ids.tolist()]
        self.batch_sizes.append(int(ids.shape[0]))
        return super().generate(*args, **kwargs)

    def _row_script(self, row: List[int]) -> List[int]:
        text = self.tokenizer.decode(row, skip_special_tokens=False)
        key = next(k for k in self.scripts if k in text)
        turn = text.count("<|im_start|>assistant") - 1
        turns = self.scripts[key]
        return turns[turn] if turn < len(turns) else []

    def forward(self, input_ids: Any = None, **kwargs: Any) -> Any:
        cache = kwargs.get("past_key_values", kwargs.get("cache"))
        past = int(cache.get_seq_length()) if cache is not None else 0
        step = past + int(input_ids.shape[-1]) - self._prompt_len
        out = transformers.LlamaForCausalLM.forward(self, input_ids=input_ids, **kwargs)
        for r, script in enumerate(self.row_targets):
            target = script[step] if 0 <= step < len(script) else self.end_token_id
            out.logits[r, -1, target] += SCRIPT_BONUS
        return out


def _row_model(tok: Any, scripts: Dict[str, Sequence[str]]) -> RowScriptedLM:
    case = kit_case(CASE)
    base = scripted_model(tok, [tok.convert_tokens_to_ids("<|im_end|>")])
    model = RowScriptedLM(base.config).eval()
    model.load_state_dict(base.state_dict())
    model.tokenizer, model.end_token_id = tok, base.end_token_id
    model.generation_config = base.generation_config
    model.scripts = {k: [token_ids(case, t) for t in turns] for k, turns in scripts.items()}
    model.batch_sizes = []
    return model.script([])


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    arrived: List[str] = []

    @registry.tool
    def get_weather(city: Literal["Oslo", "Paris", "Rome"]) -> str:
        """The weather in a city."""
        return f"18 C in {city}"

    @registry.tool
    def get_time(city: Literal["Oslo", "Paris", "Rome"]) -> str:
        """The time in a city."""
        return f"noon in {city}"

    @registry.tool(timeout_s=5)
    async def meet(who: Literal["a", "b"]) -> str:
        """Returns once both a and b have arrived (only when the calls run at once)."""
        arrived.append(who)
        while len(set(arrived)) < 2:
            await asyncio.sleep(0.01)
        return f"{who} met"

    return registry


def _agent(model: Any, tok: Any, **kw: Any) -> Agent:
    case = kit_case(CASE)
    template = {"chat_template": kit_template(case.folder, case.variant), **case.template_kwargs}
    return Agent(model, tok, _registry(), template_kwargs=template, **kw)


def _summary(run: Any) -> List[Any]:
    return [(s.text, s.n_prompt_tokens, s.n_new_tokens, s.error, s.tool_calls) for s in run.steps] + [
        run.stopped_reason,
        run.messages,
    ]


# each conversation's script is found by its tag (#1...), which only its user message holds
PROMPTS = [
    "#1 Weather in Oslo?",
    "#2 Time in Paris, please, and be quick about it?",
    "#3 Meet a?",
    "#4 Meet b?",
]
SCRIPTS = {
    "#1": [_call("get_weather", city="Oslo"), "Sunny.<|im_end|>"],
    "#2": [_call("get_time", city="Paris"), _call("get_time", city="Paris"), "Noon.<|im_end|>"],
    "#3": [_call("meet", who="a"), "Met.<|im_end|>"],
    "#4": [_call("meet", who="b"), "Met too.<|im_end|>"],
}


def test_a_batch_runs_like_the_single_runs_and_rows_leave_as_they_finish() -> None:
    tok = kit_tokenizer("qwen3")
    tools = [["get_weather"], ["get_time"], ["meet", "get_weather"], None]
    model = _row_model(tok, SCRIPTS)
    runs = _agent(model, tok).run_batch(PROMPTS, tools=tools, reasoning="disabled", max_new_tokens=60)
    assert model.batch_sizes == [4, 4, 1]  # Oslo and both meetings end after turn 2
    assert [r.response for r in runs] == ["Sunny.", "Noon.", "Met.", "Met too."]
    assert [[c.name for c in r.tool_calls] for r in runs] == [
        ["get_weather"],
        ["get_time", "get_time"],
        ["meet"],
        ["meet"],
    ]
    # the two meetings met: their calls ran at the same time, in different rows
    assert [r.steps[0].results[0].value for r in runs[2:]] == ["a met", "b met"]
    for step in (s for r in runs for s in r.steps):
        assert step.prefill_tokens == step.n_prompt_tokens and len(step.mask_times_s) == step.n_new_tokens
    # one by one, each conversation runs the same, with reuse_cache off and on (the meetings
    # aside: alone, a meeting waits for its peer until its timeout)
    for reuse in (False, True):
        single = _row_model(tok, SCRIPTS)
        agent = _agent(single, tok, reuse_cache=reuse)
        singles = [
            agent.run(p, tools=t, reasoning="disabled", max_new_tokens=60) for p, t in zip(PROMPTS[:2], tools)
        ]
        assert single.batch_sizes == [1] * 5
        assert [_summary(r) for r in singles] == [_summary(r) for r in runs[:2]]


def test_each_row_keeps_to_its_own_tools() -> None:
    # Both rows' scripts call get_time; the row offered only get_weather cannot.
    tok = kit_tokenizer("qwen3")
    model = _row_model(tok, {"#1": [_call("get_time", city="Oslo")], "#2": [_call("get_time", city="Rome")]})
    runs = _agent(model, tok).run_batch(
        ["#1 Oslo?", "#2 Rome?"],
        tools=[["get_weather"], ["get_time"]],
        reasoning="disabled",
        max_new_tokens=40,
        max_turns=1,
    )
    assert [c.name for c in runs[1].tool_calls] == ["get_time"]
    assert all(c.name == "get_weather" for c in runs[0].tool_calls) and runs[0].valid


def test_a_random_model_batch_writes_what_it_writes_alone() -> None:
    # Greedy decoding on a tiny random Llama (leaning to <|im_end|>): the padded batch and the
    # single runs write the same turns.
    case = kit_case(CASE)
    tok = kit_tokenizer(case.folder)
    model = _eager_model(tok, tok.convert_tokens_to_ids("<|im_end|>"))
    agent = _agent(model, tok)
    prompts = [
        [{"role": "user", "content": p}] for p in ("Weather?", "What is the weather in Oslo today, then?")
    ]
    options: Dict[str, Any] = dict(
        tool_choice="required",
        reasoning="disabled",
        parallel_tool_calls=False,
        max_new_tokens=40,
        max_turns=3,
    )
    batch = agent.run_batch(copy.deepcopy(prompts), tools=["get_weather", "get_time"], **options)
    singles = [agent.run(copy.deepcopy(p), tools=["get_weather", "get_time"], **options) for p in prompts]
    assert all(r.steps[0].tool_calls for r in batch)
    assert [_summary(r) for r in batch] == [_summary(r) for r in singles]


def test_arguments() -> None:
    assert tools_per_row(None, 2) == [None, None]
    assert tools_per_row([["a"], ["b"]], 2) == [["a"], ["b"]]
    with pytest.raises(AgentError, match="2 per-prompt selections for 3 prompts"):
        tools_per_row([["a"], ["b"]], 3)
    with pytest.raises(AgentError, match=r"tools\[1\] is a str"):
        tools_per_row([["a"], "b"], 2)
    tok = kit_tokenizer("qwen3")
    agent = _agent(_row_model(tok, {}), tok)
    assert agent.run_batch([]) == []
    with pytest.raises(AgentError, match="list of prompts"):
        agent.run_batch("Hi")
    with pytest.raises(AgentError, match="unknown: on_event"):
        agent.run_batch(["Hi"], on_event=print)
    with pytest.raises(AgentError, match="max_turns must be a positive int"):
        agent.run_batch(["Hi"], max_turns=0)
