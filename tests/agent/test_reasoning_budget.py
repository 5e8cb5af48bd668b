"""``Agent.run(reasoning_budget=N)``: the think block closes after at most N tokens of reasoning,
the budget only where a think block is, and bad budgets are one-line errors."""

from __future__ import annotations

from typing import Any

import pytest

from agentgrammar import Agent, AgentError

LONG_THOUGHT = "<think>" + "la " * 30 + "done</think>\n<response>Sunny.</response>"


def _reasoning_tokens(tok: Any, think: str) -> int:
    return len(tok(think, add_special_tokens=False)["input_ids"])


def test_the_budget_closes_the_think_block(scripted, tok, registry, compiler) -> None:
    free = Agent(scripted([[LONG_THOUGHT]]), tok, registry, compiler=compiler, format="tags")
    unbounded = free.run("Weather?", max_new_tokens=80, max_turns=1)
    assert _reasoning_tokens(tok, unbounded.steps[0].think or "") > 20  # the script thinks long

    agent = Agent(scripted([[LONG_THOUGHT]]), tok, registry, compiler=compiler, format="tags")
    run = agent.run("Weather?", max_new_tokens=80, max_turns=1, reasoning_budget=4)
    text = run.steps[0].text  # after the block the random model writes on (the turn may be cut)
    assert text.startswith("<think>") and "</think>" in text, text
    think = text[len("<think>") : text.index("</think>")]
    # the budget counts generated tokens; the think text, tokenized again, may differ by one
    assert 0 < _reasoning_tokens(tok, think) <= 5, think


def test_budget_errors(scripted, tok, registry, compiler) -> None:
    agent = Agent(scripted([[LONG_THOUGHT]]), tok, registry, compiler=compiler, format="tags")
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(AgentError, match="reasoning_budget must be an int >= 0"):
            agent.run("Weather?", reasoning_budget=bad)  # type: ignore[arg-type]
    no_think = Agent(scripted([["Hi."]]), tok, registry, compiler=compiler, format="hermes")
    with pytest.raises(AgentError, match="needs a format with a think block; 'hermes' has none"):
        no_think.run("Hi?", reasoning_budget=8)


def test_no_budget_when_reasoning_is_disabled(scripted, tok, registry, compiler) -> None:
    """With reasoning off and no think block opened by the prompt, the budget has nothing to
    count: the turn runs as without one."""
    answer = "<response>Sunny.</response>"
    agent = Agent(scripted([[answer]]), tok, registry, compiler=compiler, format="tags")
    run = agent.run("Weather?", max_new_tokens=30, reasoning="disabled", reasoning_budget=0)
    assert run.response == "Sunny." and run.valid
