"""A format's warm-up grammar: its request grammar over one tool whose arguments hold a value of
every JSON type, for ``Compiler.warm_up``.

A state's token classes are worked out the first time a matcher reaches it. Many states are
the same in every request of a format, and a compiler keeps their classes for every grammar it
compiles: the think block,
the free text around calls, a call's markers, the strings and numbers of argument values under
the format's separators. Classified from this grammar before the first request, they are not
paid for on that request's generated tokens.

Example:
    >>> from agentgrammar.formats import get
    >>> g = warm_up_grammar(get("qwen3"))
    >>> g.accepts('<think>\\nok\\n</think>\\n\\n<tool_call>\\n{"name": "warm_up", '
    ...           '"arguments": {"text": "a", "count": 2}}\\n</tool_call>')
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..grammar import Grammar
from ..registry import Tool

if TYPE_CHECKING:
    from .format import AgentFormat

__all__ = ["WARM_UP_TOOL", "warm_up_grammar"]

#: The tool of every warm-up grammar: one argument of each JSON type, none required, so that
#: every value's states are reachable from the arguments' opening.
WARM_UP_TOOL = Tool(
    "warm_up",
    "Arguments of every JSON type.",
    {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "items": {"type": "array", "items": {"type": "string"}},
            "numbers": {"type": "array", "items": {"type": "integer"}},
            "options": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "size": {"type": "number"}},
            },
        },
    },
)


def warm_up_grammar(fmt: "AgentFormat") -> Grammar:
    """``fmt``'s request grammar (calls optional, the think block optional where it has one)
    over :data:`WARM_UP_TOOL`."""
    return fmt.grammar([WARM_UP_TOOL], reasoning="auto")
