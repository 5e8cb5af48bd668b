"""An agent in a reasoning format: a ``<think>`` block before each tool call or answer.

What it shows: ``Agent(..., format="qwen3")`` (or ``deepseek_r1``): the grammar requires the think
block first (``reasoning="enabled"``; ``"auto"`` makes it optional, ``"disabled"`` drops it), then
tool calls or the answer; ``on_event`` streams the reasoning, the calls and the response as they
happen, and the ``AgentRun`` keeps every turn (``run.steps[k].think``).

The tools are the demo registry (weather, calculator, currency conversion). The model: by
default the trained tiny demo model for the format (trained on first use, then cached), whose
reasoning and calls make sense; ``--model PATH`` takes a local chat model; ``--random`` a tiny
random model, which never closes its think block: its turn is cut off at ``--max-new-tokens``,
valid as far as it got.

Run::

    python examples/reasoning_agent.py
    python examples/reasoning_agent.py --prompt "Convert 250 EUR to JPY" --format deepseek_r1
"""

from __future__ import annotations

import argparse

from _model import RANDOM_NOTE, add_agent_model_arguments, load_for_agent

from agentgrammar import Agent
from agentgrammar.agent import AgentEvent, ResponseEvent, ThinkEvent, ToolCallFinished, TurnFinished
from agentgrammar.demo import demo_registry


def show(event: AgentEvent) -> None:
    """Prints the reasoning, the tool calls and the response of each turn."""
    if isinstance(event, ThinkEvent):
        print(f"  think: {event.text!r}")
    elif isinstance(event, ToolCallFinished):
        outcome = event.result if event.error is None else f"error: {event.error}"
        print(f"  tool call: {event.call.name}({event.call.arguments}) -> {outcome!r}")
    elif isinstance(event, ResponseEvent):
        print(f"  response: {event.text!r}")
    elif isinstance(event, TurnFinished):
        step = event.step
        print(f"  -- turn done: {step.n_new_tokens} tokens, {1e3 * step.generate_s:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description="A reasoning (think-block) agent.")
    add_agent_model_arguments(parser)
    parser.add_argument("--prompt", default="What is 17 * 23 + 4?")
    parser.add_argument("--format", default="qwen3", choices=["qwen3", "deepseek_r1", "tags"])
    parser.add_argument("--reasoning", default="enabled", choices=["enabled", "auto", "disabled"])
    parser.add_argument("--max-new-tokens", type=int, default=128)
    args = parser.parse_args()

    loaded = load_for_agent(args.model, args.format, random=args.random)
    registry = demo_registry()
    print(f"model: {loaded.kind}; format: {args.format}; tools: {registry.names}")
    agent = Agent(loaded.model, loaded.tokenizer, registry, format=args.format)
    print(f"user: {args.prompt}")
    run = agent.run(
        args.prompt,
        reasoning=args.reasoning,
        max_turns=3,
        max_new_tokens=args.max_new_tokens,
        on_event=show,
    )
    if loaded.random:
        print(RANDOM_NOTE)
        print("(a random model never closes its think block: the turn ends at --max-new-tokens)")
    for k, step in enumerate(run.steps):
        shown = step.think if step.think is None or len(step.think) < 80 else step.think[:77] + "..."
        print(f"turn {k + 1}: think={shown!r} calls={[c.name for c in step.tool_calls]}")
    print(run.summary())
    print(f"valid: {run.valid}")


if __name__ == "__main__":
    main()
