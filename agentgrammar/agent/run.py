"""What an agent run records: ``AgentRun`` (the conversation and one ``AgentStep`` per turn)
and ``ToolResult`` (one executed tool call).

Example:
    >>> from agentgrammar import ToolCall
    >>> call = ToolCall("add", {"a": 1, "b": 2})
    >>> step = AgentStep(text="...", tool_calls=[call], results=[ToolResult(call, 3)],
    ...                  n_new_tokens=12, mask_times_s=[0.001, 0.003])
    >>> final = AgentStep(text="<response>3</response>", response="3", n_new_tokens=5)
    >>> run = AgentRun(messages=[], steps=[step, final], stopped_reason="response")
    >>> run.response, run.n_new_tokens, run.valid, run.tool_calls
    ('3', 17, True, [ToolCall(name='add', arguments={'a': 1, 'b': 2}, id=None)])
    >>> round(run.mask_mean_s, 4), run.mask_p99_s
    (0.002, 0.003)
    >>> print(run.summary())
    2 turns, 1 tool call, 17 new tokens, stopped: response, valid; masks: mean 2.000 ms, p99 3.000 ms
    response: '3'
    >>> step.results[0].content
    '3'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional

from ..registry import ToolCall

if TYPE_CHECKING:  # pragma: no cover
    from .events import AgentEvent

__all__ = ["AgentRun", "AgentStep", "ToolResult"]

STOPPED_REASONS = ("response", "max_turns", "error")


@dataclass
class ToolResult:
    """The outcome of one tool call: ``value`` (what the handler returned) or ``error`` (the
    message fed back to the model). ``invalid`` is true when the call was rejected before
    running (an unknown tool or arguments that fail validation). ``exception`` is what made
    the error, when an exception did (a ``ToolError``, whose ``__cause__`` is the handler's own
    exception; a ``ToolTimeoutError`` for a call that ran past its timeout)."""

    call: ToolCall
    value: Any = None
    error: Optional[str] = None
    invalid: bool = False
    exception: Optional[BaseException] = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the tool ran without error."""
        return self.error is None

    @property
    def content(self) -> str:
        """The tool message's content: a ``str`` value as it is (what every chat template and
        framework puts there), any other value as JSON text (``str()`` for what JSON cannot
        hold), an error as ``{"error": "..."}``.

        Example:
            >>> from agentgrammar import ToolCall
            >>> ToolResult(ToolCall("f", {}), "18 degrees").content, ToolResult(ToolCall("f", {}), [1]).content
            ('18 degrees', '[1]')
            >>> ToolResult(ToolCall("f", {}), error="boom").content
            '{"error": "boom"}'
        """
        if self.error is not None:
            return json.dumps({"error": self.error}, ensure_ascii=False)
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value, ensure_ascii=False, default=str)

    def to_message(self) -> Dict[str, Any]:
        """The ``{"role": "tool", "tool_call_id", "name", "content"}`` message that feeds this
        result back to the model (no ``tool_call_id`` when the call has no id)."""
        message: Dict[str, Any] = {"role": "tool"}
        if self.call.id is not None:
            message["tool_call_id"] = self.call.id
        message["name"] = self.call.name
        message["content"] = self.content
        return message


@dataclass
class AgentStep:
    """One assistant turn: ``text`` (the turn as written: what the generation prompt already
    opened, then the generated text, end tokens stripped but for a marker that ends a call),
    ``think``, the parsed ``tool_calls`` and their ``results``, ``response``, ``content`` (the
    free text or response, what the conversation keeps as the message's content), ``error``
    (the ``FormatParseError`` message when the text does not follow the format, or a turn cut
    by ``max_new_tokens``), token counts (``n_prompt_tokens``: the prompt's tokens;
    ``prefill_tokens``: those of them encoded this turn, fewer than ``n_prompt_tokens`` where
    the key/value cache of the turn before held the rest) and timings
    (``grammar_build_s``: building and compiling the grammar; ``generate_s``: ``generate()``;
    ``mask_times_s``: the logits processor's per-token times, empty when unconstrained)."""

    text: str = ""
    think: Optional[str] = None
    tool_calls: List[ToolCall] = field(default_factory=list)
    results: List[ToolResult] = field(default_factory=list)
    response: Optional[str] = None
    error: Optional[str] = None
    content: Optional[str] = None
    n_prompt_tokens: int = 0
    prefill_tokens: int = 0
    n_new_tokens: int = 0
    grammar_build_s: float = 0.0
    generate_s: float = 0.0
    mask_times_s: List[float] = field(default_factory=list)


@dataclass
class AgentRun:
    """A whole run: the conversation (``messages``, tool messages included), one ``AgentStep``
    per turn and why it stopped (``"response"``: a turn without tool calls; ``"max_turns"``;
    ``"error"``: a turn whose text does not follow the format: unconstrained output, or a turn
    cut off by ``max_new_tokens``). ``output``: with ``output_type``, the final response as
    a validated value of that type (``None`` when the run stopped otherwise).

    A run is the fold of its events (``from_events``): ``Agent.run`` builds it that way.
    """

    messages: List[Dict[str, Any]] = field(default_factory=list)
    steps: List[AgentStep] = field(default_factory=list)
    stopped_reason: str = "response"
    output: Any = None

    @classmethod
    def from_events(cls, events: Iterable["AgentEvent"]) -> "AgentRun":
        """The run that ``events`` (an agent's, in order) describe: ``RunStarted`` gives the
        conversation, each ``TurnFinished`` a step and the messages it added, ``RunFinished``
        how it stopped and the output; the other events are the same story told as it
        happened, and add nothing.

        Example:
            >>> from agentgrammar.agent.events import RunFinished, RunStarted, TurnFinished
            >>> step = AgentStep(text="Hi", content="Hi", response="Hi")
            >>> events = [RunStarted(({"role": "user", "content": "Hey"},)),
            ...           TurnFinished(step, ({"role": "assistant", "content": "Hi"},)),
            ...           RunFinished("response")]
            >>> run = AgentRun.from_events(events)
            >>> run.response, [m["role"] for m in run.messages]
            ('Hi', ['user', 'assistant'])
        """
        from .events import RunFinished, RunStarted, TurnFinished

        run = cls()
        for event in events:
            if isinstance(event, RunStarted):
                run.messages = [dict(m) for m in event.messages]
            elif isinstance(event, TurnFinished):
                run.steps.append(event.step)
                run.messages.extend(dict(m) for m in event.messages)
            elif isinstance(event, RunFinished):
                run.stopped_reason = event.stopped_reason
                run.output = event.output
        return run

    @property
    def response(self) -> Optional[str]:
        """The final response (``None`` unless the run stopped with one)."""
        if self.stopped_reason != "response" or not self.steps:
            return None
        return self.steps[-1].response

    @property
    def n_new_tokens(self) -> int:
        """Tokens generated over all turns."""
        return sum(s.n_new_tokens for s in self.steps)

    @property
    def tool_calls(self) -> List[ToolCall]:
        """Every tool call of the run, in order."""
        return [c for s in self.steps for c in s.tool_calls]

    @property
    def valid(self) -> bool:
        """Whether every turn followed the format and every call named a known tool with valid
        arguments (a handler that raised does not make a run invalid)."""
        return all(s.error is None and not any(r.invalid for r in s.results) for s in self.steps)

    @property
    def _mask_times(self) -> List[float]:
        return [t for s in self.steps for t in s.mask_times_s]

    @property
    def mask_mean_s(self) -> Optional[float]:
        """Mean seconds per masking call over the run (``None`` without any)."""
        times = self._mask_times
        return sum(times) / len(times) if times else None

    @property
    def mask_p99_s(self) -> Optional[float]:
        """The 99th percentile (nearest rank) of the masking times (``None`` without any)."""
        times = sorted(self._mask_times)
        if not times:
            return None
        return times[max(0, math.ceil(0.99 * len(times)) - 1)]

    def summary(self) -> str:
        """A short description: turns, calls, tokens, how it stopped, mask times, response."""
        n_calls = len(self.tool_calls)
        parts = [
            f"{len(self.steps)} turn{'s' if len(self.steps) != 1 else ''}",
            f"{n_calls} tool call{'s' if n_calls != 1 else ''}",
            f"{self.n_new_tokens} new tokens",
            f"stopped: {self.stopped_reason}",
            "valid" if self.valid else "invalid",
        ]
        line = ", ".join(parts)
        if self.mask_mean_s is not None and self.mask_p99_s is not None:
            line += f"; masks: mean {self.mask_mean_s * 1e3:.3f} ms, p99 {self.mask_p99_s * 1e3:.3f} ms"
        errors = [s.error for s in self.steps if s.error]
        if errors:
            line += f"\nerror: {errors[-1]}"
        if self.response is not None:
            shown = self.response if len(self.response) <= 200 else self.response[:197] + "..."
            line += f"\nresponse: {shown!r}"
        return line

    def __rich__(self) -> Any:
        from rich.table import Table

        table = Table(title=self.summary().splitlines()[0], title_justify="left")
        for column in ("turn", "tool calls", "results", "response / error", "tokens", "generate"):
            table.add_column(column)
        for k, s in enumerate(self.steps, 1):
            calls = "\n".join(
                f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in s.tool_calls
            )
            results = "\n".join(
                r.content if len(r.content) < 80 else r.content[:77] + "..." for r in s.results
            )
            last = s.error if s.error is not None else (s.response or "")
            table.add_row(str(k), calls, results, last, str(s.n_new_tokens), f"{s.generate_s:.2f} s")
        return table
