"""The demo tools: deterministic handlers, and every schema-valid call executes."""

from __future__ import annotations

import random
import re

import pytest

from agentgrammar import ToolCall, ToolError
from agentgrammar.demo.tools import CURRENCIES, EXPRESSION_PATTERN, calculate, demo_registry


def test_handlers_are_deterministic() -> None:
    registry = demo_registry()
    call = ToolCall("get_weather", {"city": "Lima", "unit": "fahrenheit"})
    assert registry.call(call) == registry.call(call)
    assert registry.call(ToolCall("calculate", {"expression": "(1 + 2) * 3"})) == "9"
    for a in CURRENCIES:
        for b in CURRENCIES:
            registry.call(ToolCall("convert_currency", {"amount": 3.5, "from_currency": a, "to_currency": b}))


def test_invalid_arguments_are_rejected() -> None:
    registry = demo_registry()
    with pytest.raises(ToolError):
        registry.call(ToolCall("calculate", {"expression": "__import__('os')"}))
    with pytest.raises(ToolError):
        registry.call(
            ToolCall("convert_currency", {"amount": 1, "from_currency": "XYZ", "to_currency": "USD"})
        )
    with pytest.raises(ToolError):
        registry.call(ToolCall("get_weather", {"city": "x" * 30}))


def test_every_expression_the_pattern_allows_evaluates() -> None:
    rng = random.Random(0)
    ops = ["+", "-", "*", "/", "%"]

    def number() -> str:
        n = str(rng.choice([0, rng.randint(1, 999999)]))
        return n + (f".{rng.randint(0, 9999)}" if rng.random() < 0.3 else "")

    def term() -> str:
        if rng.random() < 0.3:
            inner = [number() for _ in range(rng.randint(2, 3))]
            return "(" + f" {rng.choice(ops)} ".join(inner) + ")"
        return number()

    for _ in range(500):
        expr = f" {rng.choice(ops)} ".join(term() for _ in range(rng.randint(1, 4)))
        assert re.match(EXPRESSION_PATTERN, expr), expr
        assert isinstance(calculate(expr), str)
