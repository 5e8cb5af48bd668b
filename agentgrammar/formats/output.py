"""``AgentOutput``: one assistant turn as a format renders and parses it.

Example:
    >>> from agentgrammar import ToolCall
    >>> out = AgentOutput(think="The user wants the weather.", tool_calls=[ToolCall("get_weather", {"city": "Oslo"})])
    >>> out.tool_calls[0].name, out.response, out.text
    ('get_weather', None, None)
    >>> out == AgentOutput("The user wants the weather.", [ToolCall("get_weather", {"city": "Oslo"})])
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from ..registry import ToolCall

__all__ = ["AgentOutput"]


@dataclass(frozen=True)
class AgentOutput:
    """One assistant turn: ``think`` (the reasoning block's text, ``None`` without one),
    ``tool_calls`` (in order), ``response`` (the response block's text, for formats that have
    a response marker) and ``text`` (free text outside the blocks, for formats without one).
    Equal when all four are equal; ``tool_calls`` is kept as a list (any sequence is copied).

    Example:
        >>> AgentOutput(response="Hi!") == AgentOutput(None, [], "Hi!")
        True
    """

    think: Optional[str] = None
    tool_calls: List[ToolCall] = field(default_factory=list)
    response: Optional[str] = None
    text: Optional[str] = None

    def __post_init__(self) -> None:
        calls: Sequence[ToolCall] = self.tool_calls
        if isinstance(calls, (str, bytes)) or not isinstance(calls, Sequence):
            raise TypeError(f"tool_calls must be a list of ToolCall, got {type(calls).__name__}")
        for call in calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"tool_calls must hold ToolCall objects, got {type(call).__name__}")
        for name in ("think", "response", "text"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
        object.__setattr__(self, "tool_calls", list(calls))
