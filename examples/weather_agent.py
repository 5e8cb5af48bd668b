"""A tool-calling agent from two decorated functions: weather and a calculator.

What it shows: ``@registry.tool`` turns typed, documented functions into tools (their JSON
Schemas come from the signatures and docstrings); ``Agent(model, tokenizer, registry)`` runs the
loop: it generates a turn inside the format's grammar, calls the tools, feeds the results back
and stops at the response. ``on_event`` prints the calls as they happen.

The model: by default the trained tiny demo model of ``agentgrammar.demo`` (trained on first use,
well under a minute, then cached), which knows these two tools, so its answers make sense;
``--model PATH`` takes a local chat model; ``--random`` a tiny random model (nonsense, but valid).

Run::

    python examples/weather_agent.py
    python examples/weather_agent.py --prompt "What is 12 * (3 + 4)?"
    python examples/weather_agent.py --model /path/to/Qwen2.5-0.5B-Instruct --format hermes
"""

from __future__ import annotations

import argparse
import ast
import operator
from typing import Any, Callable, Dict, Literal

from _model import RANDOM_NOTE, add_agent_model_arguments, load_for_agent
from pydantic import Field
from typing_extensions import Annotated

from agentgrammar import Agent, ToolRegistry
from agentgrammar.agent import AgentEvent, ResponseEvent, ToolCallFinished

registry = ToolRegistry()


@registry.tool
def get_weather(
    city: Annotated[str, Field(min_length=1, max_length=24)],
    unit: Literal["celsius", "fahrenheit"] = "celsius",
) -> str:
    """Get the current weather in a city.

    Args:
        city: The city name.
        unit: The temperature unit.
    """
    celsius = sum(map(ord, city.lower())) % 35 - 5  # a stand-in for a weather service
    value = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return f"{city}: {value} {unit}, {['sunny', 'cloudy', 'rainy'][len(city) % 3]}"


_OPS: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand)
    raise ValueError("only numbers, + - * / % and parentheses are allowed")


@registry.tool
def calculate(
    expression: Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[0-9+*/%(). -]+$")],
) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: Numbers with + - * / % and parentheses.
    """
    value = _eval(ast.parse(expression, mode="eval").body)
    return str(int(value) if float(value).is_integer() else round(value, 4))


def show(event: AgentEvent) -> None:
    """Prints tool calls and the response as the agent runs."""
    if isinstance(event, ToolCallFinished):
        outcome = event.result if event.error is None else f"error: {event.error}"
        print(f"  tool call: {event.call.name}({event.call.arguments}) -> {outcome!r}")
    elif isinstance(event, ResponseEvent):
        print(f"  response: {event.text!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description="A weather + calculator agent.")
    add_agent_model_arguments(parser)
    parser.add_argument("--prompt", default="What's the weather in Paris?")
    parser.add_argument(
        "--format", default=None, help="an AgentFormat preset (default: tags; hermes with --random)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()

    # A random model never closes a think block or a response on its own: with it, ask for
    # exactly one call in a format where nothing may follow it (hermes), and one turn.
    fmt = args.format or ("hermes" if args.random and not args.model else "tags")
    loaded = load_for_agent(args.model, fmt, random=args.random)
    print(f"model: {loaded.kind}; format: {fmt}; tools: {registry.names}")
    agent = Agent(loaded.model, loaded.tokenizer, registry, format=fmt)
    options: Dict[str, Any] = {}
    if loaded.random:
        options = dict(tool_choice="required", parallel_tool_calls=False, reasoning="disabled", max_turns=1)
    print(f"user: {args.prompt}")
    run = agent.run(args.prompt, max_new_tokens=args.max_new_tokens, on_event=show, **options)
    if loaded.random:
        print(RANDOM_NOTE)
    print(run.summary())
    print(f"valid: {run.valid}")


if __name__ == "__main__":
    main()
