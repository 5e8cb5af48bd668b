"""Typed events an :class:`~agentgrammar.Agent` reports while it runs (``on_event=``, or
``Agent.stream`` / ``Agent.astream``).

A run is ``RunStarted``, its turns, then ``RunFinished``. A turn is ``TurnStarted``, then, as
tokens arrive, ``TokenEvent`` s (raw text with its region) together with the deltas that
follow the turn's structure (``agent.deltas``): ``ReasoningDelta`` s, ``TextDelta`` s, and for
each tool call a ``ToolCallNamed`` once its name is complete, then its
``ToolCallArgumentsDelta`` s; a ``ThinkEvent`` when the think block closes. After generation,
``ToolCallStarted`` for each parsed call (the finished, validated call; in call order, as they
all start) and ``ToolCallFinished`` for each as it finishes (they run concurrently), a ``ResponseEvent`` when the turn has a response, and
``TurnFinished``. ``AgentRun.from_events`` folds the events back into the run.

Argument deltas: in the JSON layouts each ``ToolCallArgumentsDelta`` is a piece of the
arguments' JSON text as the model writes it, and joining a call's pieces gives exactly
``ToolCallStarted.arguments_text``. In the xml layout (Qwen3-Coder, GLM) and the pythonic one (Llama-4) a value is raw text
or JSON depending on the schema, which is only known once it is complete, so the deltas are
the parameter values as written (``parameter`` names the one each piece belongs to; joining
one parameter's pieces gives its value text exactly) and ``ToolCallStarted.arguments_text``
is the JSON of the parsed arguments.

Example:
    >>> from agentgrammar import ToolCall
    >>> events = [TokenEvent("<think>", "think"), ToolCallStarted(ToolCall("now", {}))]
    >>> [type(e).__name__ for e in events], events[0].region
    (['TokenEvent', 'ToolCallStarted'], 'think')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from ..registry import ToolCall

if TYPE_CHECKING:  # pragma: no cover
    from .run import AgentStep

__all__ = [
    "REGIONS",
    "AgentEvent",
    "ReasoningDelta",
    "ResponseEvent",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ThinkEvent",
    "TokenEvent",
    "ToolCallArgumentsDelta",
    "ToolCallFinished",
    "ToolCallNamed",
    "ToolCallStarted",
    "TurnFinished",
    "TurnStarted",
]

REGIONS = ("think", "text", "tool_call", "response")
"""The regions of an assistant turn a ``TokenEvent`` can belong to."""


@dataclass(frozen=True)
class RunStarted:
    """A run begins with ``messages``, the conversation as the first turn's prompt renders it
    (a copy: the run's own list grows)."""

    messages: Tuple[Dict[str, Any], ...]


@dataclass(frozen=True)
class TurnStarted:
    """Turn ``turn`` (0-based) begins generating."""

    turn: int


@dataclass(frozen=True)
class TextDelta:
    """A piece of the turn's content: the response block's text in a format with one, else the
    free text. Joining a turn's pieces gives ``AgentStep.content`` (or ``""``) exactly: markers
    are left out and whitespace is held back as ``parse`` strips it."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the think block's text; joining a turn's pieces gives ``AgentStep.think``
    (or ``""``) exactly."""

    text: str


@dataclass(frozen=True)
class ToolCallNamed:
    """Tool call ``index`` (0-based, in the turn) has its complete ``name``. ``id``: the call's
    id when it is known this early (the id the agent gives a call the model writes no id for,
    or one the model wrote before the arguments); ``None`` when the model may still write one
    (Mistral writes it after the arguments)."""

    index: int
    name: str
    id: Optional[str] = None


@dataclass(frozen=True)
class ToolCallArgumentsDelta:
    """A piece of tool call ``index``'s arguments as written: JSON text, or in the xml layout
    (``parameter`` set) raw text of that parameter's value (see the module docstring)."""

    index: int
    text: str
    parameter: Optional[str] = None


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
    """A finished tool call, parsed (and validated against its tool's schema when it is
    valid), about to run: ``index`` in the turn and ``arguments_text``, the arguments as JSON
    text (as written in the JSON layouts; see the module docstring)."""

    call: ToolCall
    index: int = 0
    arguments_text: str = ""


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call that ran: ``result`` is the handler's value (``None`` on error) and
    ``error`` the error message fed back to the model (``None`` on success)."""

    call: ToolCall
    result: Any
    error: Optional[str]
    index: int = 0


@dataclass(frozen=True)
class ResponseEvent:
    """The turn's response: the format's response block, or the free text of a turn without
    tool calls in a format that has none."""

    text: str


@dataclass(frozen=True)
class TurnFinished:
    """A turn is over; ``step`` holds everything about it and ``messages`` the messages it
    added to the conversation (the assistant's, then one per tool result)."""

    step: "AgentStep"
    messages: Tuple[Dict[str, Any], ...] = ()


@dataclass(frozen=True)
class RunFinished:
    """The run is over: why (``AgentRun.stopped_reason``) and its typed ``output`` (with
    ``output_type``; ``None`` otherwise)."""

    stopped_reason: str
    output: Any = None


AgentEvent = Union[
    RunStarted,
    TurnStarted,
    TokenEvent,
    TextDelta,
    ReasoningDelta,
    ToolCallNamed,
    ToolCallArgumentsDelta,
    ThinkEvent,
    ToolCallStarted,
    ToolCallFinished,
    ResponseEvent,
    TurnFinished,
    RunFinished,
]
"""Any event an agent reports."""
