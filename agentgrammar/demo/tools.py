"""The demo's tools: small, deterministic functions an agent can call offline.

Example:
    >>> from agentgrammar import ToolCall
    >>> from agentgrammar.demo.tools import demo_registry
    >>> registry = demo_registry()
    >>> registry.names
    ['get_weather', 'calculate', 'convert_currency']
    >>> registry.call(ToolCall("calculate", {"expression": "6 * 7"}))
    '42'
    >>> registry.call(ToolCall("convert_currency", {"amount": 10, "from_currency": "EUR", "to_currency": "USD"}))
    '10 EUR = 10.8 USD'
"""

from __future__ import annotations

import ast
import hashlib
import operator
from typing import Annotated, Any, Callable, Dict, Literal

from pydantic import Field

from ..registry import ToolRegistry

__all__ = [
    "CITIES",
    "CURRENCIES",
    "EXPRESSION_PATTERN",
    "RATES",
    "calculate",
    "convert_currency",
    "demo_registry",
    "get_weather",
]

CITIES = (
    "Paris",
    "London",
    "Tokyo",
    "Berlin",
    "Madrid",
    "Rome",
    "Oslo",
    "Lisbon",
    "Cairo",
    "Lima",
    "Seoul",
    "Sydney",
    "Toronto",
    "Dublin",
    "Vienna",
    "Prague",
    "Athens",
    "Nairobi",
    "Mumbai",
    "Boston",
    "Denver",
    "Austin",
    "Quito",
    "Hanoi",
)
"""Cities the training transcripts mention (any city name is accepted by ``get_weather``)."""

CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF")
RATES: Dict[str, float] = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CHF": 1.13}
"""Fixed rates: the value of one unit in US dollars."""

_CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "foggy", "snowy")

Currency = Literal["USD", "EUR", "GBP", "JPY", "CHF"]
Unit = Literal["celsius", "fahrenheit"]


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big")


def get_weather(city: Annotated[str, Field(min_length=1, max_length=24)], unit: Unit = "celsius") -> str:
    """Get the current weather in a city.

    Args:
        city: The city name.
        unit: The temperature unit.

    Example:
        >>> get_weather("Paris"), get_weather("Paris", "fahrenheit")
        ('Paris: 9 celsius, foggy', 'Paris: 48 fahrenheit, foggy')
    """
    h = _digest(city.strip().lower())
    celsius = h % 35 - 5
    value = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return f"{city}: {value} {unit}, {_CONDITIONS[(h >> 8) % len(_CONDITIONS)]}"


_BINARY: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}
_UNARY: Dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    raise ValueError("only numbers, + - * / % and parentheses are allowed")


_NUMBER = r"(0|[1-9][0-9]{0,5})(\.[0-9]{1,4})?"
_OP = r" [-+*/%] "
_TERM = rf"({_NUMBER}|\({_NUMBER}({_OP}{_NUMBER})+\))"
EXPRESSION_PATTERN = rf"^{_TERM}({_OP}{_TERM}){{0,3}}$"
"""Numbers and binary operators between single spaces, parentheses one level deep, at most
four terms: every expression that matches it evaluates."""


def calculate(expression: Annotated[str, Field(pattern=EXPRESSION_PATTERN)]) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: Numbers and + - * / %, parentheses one level deep.

    Example:
        >>> calculate("(2 + 3) * 4"), calculate("7 / 2"), calculate("1 / 0")
        ('20', '3.5', 'undefined (division by zero)')
    """
    try:
        value = _eval(ast.parse(expression, mode="eval"))
    except ZeroDivisionError:
        return "undefined (division by zero)"
    if isinstance(value, float):
        value = round(value, 4)
        if value.is_integer():
            value = int(value)
    return str(value)


def convert_currency(amount: float, from_currency: Currency, to_currency: Currency) -> str:
    """Convert an amount between currencies at fixed rates.

    Args:
        amount: The amount to convert.
        from_currency: The currency of the amount.
        to_currency: The currency to convert to.

    Example:
        >>> convert_currency(100, "USD", "EUR")
        '100 USD = 92.59 EUR'
    """
    converted = round(amount * RATES[from_currency] / RATES[to_currency], 2)
    shown = int(amount) if float(amount).is_integer() else amount
    return f"{shown} {from_currency} = {converted:g} {to_currency}"


def demo_registry() -> ToolRegistry:
    """A fresh registry with the three demo tools.

    Example:
        >>> len(demo_registry())
        3
    """
    registry = ToolRegistry()
    for func in (get_weather, calculate, convert_currency):
        registry.tool(func)
    return registry
