"""Typed events an :class:`~agentgrammar.Agent` reports while it runs (``on_event=``).

Per turn, in order: ``TokenEvent`` s as text is generated (with the region of the output each
piece belongs to), a ``ThinkEvent`` when the think block closes (or at the end of the turn if
it never did), then ``ToolCallStarted`` for each tool call (in call order, as they all start)
and ``ToolCallFinished`` for each as it finishes (they run concurrently), a ``ResponseEvent``
when the turn has a response, and ``TurnFinished``.

Example:
    >>> from agentgrammar import ToolCall
    >>> events = [TokenEvent("<think>", "think"), ToolCallStarted(ToolCall("now", {}))]
    >>> [type(e).__name__ for e in events], events[0].region
    (['TokenEvent', 'ToolCallStarted'], 'think')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from ..registry import ToolCall

if TYPE_CHECKING:  # pragma: no cover
    from .run import AgentStep

__all__ = [
    "REGIONS",
    "AgentEvent",
    "ResponseEvent",
    "ThinkEvent",
    "TokenEvent",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnFinished",
]

REGIONS = ("think", "text", "tool_call", "response")
"""The regions of an assistant turn a ``TokenEvent`` can belong to."""


@dataclass(frozen=True)
class TokenEvent:
    """Newly generated text and its region: ``"think"``, ``"text"`` (free text, and whatever
    lies between blocks), ``"tool_call"`` or ``"response"``. Markers belong to the block they
    open or close."""

    text: str
    region: str


@dataclass(frozen=True)
class ThinkEvent:
    """The think block's text (without markers, stripped), once it is closed (or at the end of
    a turn that left it open)."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """A parsed tool call about to run."""

    call: ToolCall


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call that ran: ``result`` is the handler's value (``None`` on error) and
    ``error`` the error message fed back to the model (``None`` on success)."""

    call: ToolCall
    result: Any
    error: Optional[str]


@dataclass(frozen=True)
class ResponseEvent:
    """The turn's response: the format's response block, or the free text of a turn without
    tool calls in a format that has none."""

    text: str


@dataclass(frozen=True)
class TurnFinished:
    """A turn is over; ``step`` holds everything about it."""

    step: "AgentStep"


AgentEvent = Union[TokenEvent, ThinkEvent, ToolCallStarted, ToolCallFinished, ResponseEvent, TurnFinished]
"""Any event an agent reports."""
