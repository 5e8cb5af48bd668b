"""The demo corpus: every preset renders it, parses it back and its grammar accepts it; the
prompts are exactly what the agent shows the model."""

from __future__ import annotations

import json
import random
import re

import pytest

from agentgrammar.agent.messages import assistant_message
from agentgrammar.agent.prompt import render_messages
from agentgrammar.agent.run import ToolResult
from agentgrammar.demo.corpus import demo_prompts, episode_examples, make_corpus, make_episode
from agentgrammar.demo.tools import EXPRESSION_PATTERN, demo_registry
from agentgrammar.formats import get, names


@pytest.mark.parametrize("name", names())
def test_corpus_round_trips_through_the_format(name: str) -> None:
    fmt = get(name)
    registry = demo_registry()
    grammar = fmt.grammar(registry)
    rng = random.Random(7)
    for _ in range(15):
        ep = make_episode(fmt, rng, registry)
        for output in ep.outputs:
            text = fmt.render(output, tools=registry)
            assert fmt.parse(text, tools=registry) == output
            assert grammar.accepts(text), text


def test_prompts_are_the_agents_prompts() -> None:
    fmt = get("tags")
    registry = demo_registry()
    ep = make_episode(fmt, random.Random(3), registry)
    first, second = episode_examples(fmt, registry, ep)
    messages = [{"role": "user", "content": ep.user}]
    assert first.prompt == render_messages(messages, fmt, registry)
    call = ep.outputs[0].tool_calls[0]
    # As the agent keeps the turn: a structured message (the plain layout renders it back).
    messages.append(assistant_message(fmt.parse(first.completion, tools=registry)))
    messages.append(ToolResult(call, registry.call(call)).to_message())
    assert second.prompt == render_messages(messages, fmt, registry)
    assert messages[-1]["content"] == ep.results[0]


def test_corpus_is_deterministic_and_varied() -> None:
    a, b = make_corpus(get("qwen3"), 30, seed=1), make_corpus(get("qwen3"), 30, seed=1)
    assert a == b
    assert len({e.prompt for e in a}) > 20
    assert {
        json.loads(e.completion.split("<tool_call>\n")[1].split("\n</tool_call>")[0])["name"] for e in a[::2]
    } == set(demo_registry().names)


def test_demo_prompts_are_fixed_and_use_the_tools() -> None:
    prompts = demo_prompts(20)
    assert prompts == demo_prompts(20) and len(set(prompts)) > 15
    assert demo_prompts(5) == prompts[:5]


def test_every_corpus_expression_matches_the_pattern() -> None:
    corpus = make_corpus(get("tags"), 200)
    exprs = re.findall(r'"expression": "([^"]*)"', "".join(e.completion for e in corpus))
    assert exprs and all(re.match(EXPRESSION_PATTERN, x) for x in exprs)
