"""An agent's events as OpenAI Chat Completions stream chunks (``chat.completion.chunk`` dicts,
no ``openai`` dependency), for a server that speaks the OpenAI streaming protocol or a client
library that reads it.

Each assistant turn is one completion (its own ``id``): a first chunk with ``delta.role``, then
``delta.reasoning_content`` and ``delta.content`` pieces, and for each tool call a chunk with
``delta.tool_calls[0]`` holding its ``index``, ``id`` (when known then), ``type`` and
``function.name``, followed by ``function.arguments`` pieces; the last chunk has
``finish_reason`` ``"tool_calls"`` or ``"stop"``. Concatenating a call's ``arguments`` pieces
gives its arguments' JSON text (``ToolCallStarted.arguments_text``): in the JSON layouts they
are streamed as written; in the xml and pythonic layouts, whose deltas are raw parameter values, they come
whole once the call is parsed. A call id the model writes after the arguments (Mistral) comes
in a chunk of its own then. Tool results are not part of the protocol and give no chunk.

Example:
    >>> from agentgrammar import ToolCall
    >>> from agentgrammar.agent.events import ToolCallArgumentsDelta, ToolCallNamed, ToolCallStarted, TurnStarted
    >>> events = [TurnStarted(0), ToolCallNamed(0, "f", "call_0"), ToolCallArgumentsDelta(0, '{"a": '),
    ...           ToolCallArgumentsDelta(0, "1}"), ToolCallStarted(ToolCall("f", {"a": 1}, "call_0"), 0, '{"a": 1}')]
    >>> chunks = list(to_openai_chunks(events, created=0))
    >>> [c["choices"][0]["delta"] for c in chunks][1]
    {'tool_calls': [{'index': 0, 'id': 'call_0', 'type': 'function', 'function': {'name': 'f', 'arguments': ''}}]}
    >>> "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"].get("arguments", "") for c in chunks[1:])
    '{"a": 1}'
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set

from .events import (
    AgentEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallNamed,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)

__all__ = ["OpenAIChunker", "to_openai_chunks"]

Chunk = Dict[str, Any]


class OpenAIChunker:
    """Converts an agent's events, one at a time and in order, into chunks (``convert``).

    ``model``: the chunks' ``model``; ``created``: their timestamp (default: now);
    ``id_prefix``: a turn's completion id is ``f"{id_prefix}-{turn}"``.
    """

    def __init__(
        self, *, model: str = "agentgrammar", created: Optional[int] = None, id_prefix: str = ""
    ) -> None:
        self.model = model
        self.created = int(time.time()) if created is None else int(created)
        self.id_prefix = id_prefix or f"chatcmpl-agentgrammar-{self.created}"
        self._turn = -1
        self._open = False
        self._named: Dict[int, bool] = {}  # index -> whether its first chunk had the id
        self._streamed: Set[int] = set()  # calls whose arguments came in pieces

    def convert(self, event: AgentEvent) -> List[Chunk]:
        """The chunks that ``event`` makes (often none or one)."""
        if isinstance(event, TurnStarted):
            self._open = False
            return self._start(event.turn)
        out = self._start(self._turn + 1) if not self._open and _opens(event) else []
        if isinstance(event, ReasoningDelta):
            out.append(self._chunk({"reasoning_content": event.text}))
        elif isinstance(event, TextDelta):
            out.append(self._chunk({"content": event.text}))
        elif isinstance(event, ToolCallNamed):
            out.append(self._call_head(event.index, event.name, event.id))
        elif isinstance(event, ToolCallArgumentsDelta) and event.parameter is None:
            self._streamed.add(event.index)
            out.append(self._call({"index": event.index, "function": {"arguments": event.text}}))
        elif isinstance(event, ToolCallStarted):
            out += self._call_end(event)
        elif isinstance(event, TurnFinished) and self._open:
            self._open = False
            reason = "tool_calls" if event.step.tool_calls else "stop"
            out.append(self._chunk({}, reason))
        return out

    def _start(self, turn: int) -> List[Chunk]:
        self._turn, self._open = turn, True
        self._named, self._streamed = {}, set()
        return [self._chunk({"role": "assistant", "content": ""})]

    def _call_head(self, index: int, name: str, call_id: Optional[str]) -> Chunk:
        self._named[index] = call_id is not None
        head: Dict[str, Any] = {"index": index}
        if call_id is not None:
            head["id"] = call_id
        head.update(type="function", function={"name": name, "arguments": ""})
        return self._call(head)

    def _call_end(self, event: ToolCallStarted) -> List[Chunk]:
        """What the streamed chunks of the finished call lacked: its head, its id, its arguments."""
        out: List[Chunk] = []
        index, call = event.index, event.call
        if index not in self._named:
            out.append(self._call_head(index, call.name, call.id))
        elif not self._named[index] and call.id is not None:
            out.append(self._call({"index": index, "id": call.id}))
        if index not in self._streamed:
            out.append(self._call({"index": index, "function": {"arguments": event.arguments_text}}))
        return out

    def _call(self, delta: Dict[str, Any]) -> Chunk:
        return self._chunk({"tool_calls": [delta]})

    def _chunk(self, delta: Dict[str, Any], finish_reason: Optional[str] = None) -> Chunk:
        return {
            "id": f"{self.id_prefix}-{max(self._turn, 0)}",
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }


def _opens(event: AgentEvent) -> bool:
    """Whether ``event`` belongs in a completion (so one must be open for it)."""
    return isinstance(
        event, (ReasoningDelta, TextDelta, ToolCallNamed, ToolCallArgumentsDelta, ToolCallStarted)
    )


def to_openai_chunks(
    events: Iterable[AgentEvent], *, model: str = "agentgrammar", created: Optional[int] = None
) -> Iterator[Chunk]:
    """The chunks of ``events`` (an agent's, in order; see the module docstring), lazily: pass
    ``Agent.stream(...)`` to serve them as they are generated."""
    chunker = OpenAIChunker(model=model, created=created)
    for event in events:
        yield from chunker.convert(event)
