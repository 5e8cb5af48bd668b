"""What one run asks for: ``RunRequest`` (the run's settings and its conversation, which grows
turn by turn, and the events it folds), with the helpers that read an ``Agent``'s arguments:
``resolve_format`` (a preset name or a format) and ``messages_of`` (a prompt or messages).

Example:
    >>> messages_of("Hi", "Be brief.")
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ..errors import AgentError
from ..formats import AgentFormat
from ..formats import get as get_format
from ..formats.detect import FormatDetectError, detect
from ..registry import Tool, ToolRegistry
from .events import AgentEvent, RunFinished, RunStarted, TurnFinished
from .kv_cache import ConversationCache
from .output_type import OutputSpec
from .prompt import has_chat_template

__all__ = [
    "EventHandler",
    "PromptArg",
    "RunRequest",
    "ToolsSelection",
    "check_run_options",
    "detected_format",
    "messages_of",
    "resolve_format",
    "seed_torch",
    "select_tools",
]

PromptArg = Union[str, Sequence[Mapping[str, Any]]]
EventHandler = Callable[[AgentEvent], None]
# the events AgentRun.from_events reads: what a run keeps to fold itself
_FOLDED = (RunStarted, TurnFinished, RunFinished)


def resolve_format(format: Union[str, AgentFormat]) -> AgentFormat:
    """An ``AgentFormat`` from a preset name (``agentgrammar.formats.names()``) or a format.

    Example:
        >>> resolve_format("tags").name
        'tags'
        >>> resolve_format("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentgrammar.errors.AgentError: unknown format 'nope'; the presets are 'hermes', ...
    """
    if isinstance(format, AgentFormat):
        return format
    if isinstance(format, str):
        try:
            return get_format(format)
        except ValueError as e:
            raise AgentError(str(e)) from None
    raise AgentError(f"format must be a preset name or an AgentFormat, got {type(format).__name__}")


def detected_format(tokenizer: Any, template_kwargs: Optional[Mapping[str, Any]]) -> AgentFormat:
    """The preset the tokenizer's chat template writes (``formats.detect``); ``"tags"`` for a
    tokenizer without one (the plain layout, as the demo model is trained)."""
    if not has_chat_template(tokenizer):
        return get_format("tags")
    try:
        return detect(tokenizer, template_kwargs=template_kwargs)
    except FormatDetectError as e:
        raise AgentError(f"cannot tell the model's format: {e}") from e


ToolsSelection = Union[None, str, ToolRegistry, Iterable[Union[str, Tool]]]


def select_tools(registry: ToolRegistry, tools: ToolsSelection) -> ToolRegistry:
    """The tools a run offers: all of ``registry`` (``None``), a registry, or tool names (of
    ``registry``) or ``Tool`` objects."""
    if tools is None:
        return registry
    if isinstance(tools, ToolRegistry):
        return tools
    if isinstance(tools, (str, Tool)):
        tools = [tools]
    items = list(tools)
    if all(isinstance(t, str) for t in items):
        return registry.select(items)  # ToolError for unknown names
    if all(isinstance(t, Tool) for t in items):
        return ToolRegistry(items)
    raise AgentError("tools must be tool names, Tool objects, a ToolRegistry or None")


def check_run_options(options: Mapping[str, Any]) -> None:
    """``AgentError`` for a run option out of range: ``max_turns`` / ``max_new_tokens`` must be
    positive ints, ``on_event`` callable."""
    for name in ("max_turns", "max_new_tokens"):
        value = options[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AgentError(f"{name} must be a positive int, got {value!r}")
    on_event = options["on_event"]
    if on_event is not None and not callable(on_event):
        raise AgentError(f"on_event must be callable, got {type(on_event).__name__}")


def seed_torch(seed: Optional[int]) -> None:
    """Seed torch's generator for a run's sampling (``None``: leave it as it is)."""
    if seed is not None:
        import torch

        torch.manual_seed(seed)


def messages_of(prompt: PromptArg, system_prompt: Optional[str]) -> List[Dict[str, Any]]:
    if isinstance(prompt, str):
        messages: List[Dict[str, Any]] = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        messages = []
        for k, m in enumerate(prompt):
            if isinstance(m, (str, bytes)) or (isinstance(m, Sequence) and not isinstance(m, Mapping)):
                raise AgentError(
                    "a batch of prompts is not supported here: run() runs one conversation (give a "
                    f"str or a list of message dicts; item {k} is a {type(m).__name__}); "
                    "run_batch() runs many"
                )
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
                raise AgentError(f"message {k} must be a dict with a 'role' string, got {m!r}")
            messages.append(dict(m))
        if not messages:
            raise AgentError("the conversation is empty: give a prompt or at least one message")
    else:
        raise AgentError(f"expected a prompt str or a list of message dicts, got {type(prompt).__name__}")
    if system_prompt is not None and messages[0].get("role") != "system":
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


@dataclass
class RunRequest:
    """One run's settings, its conversation (``messages``, which grows turn by turn), the events it
    folds into its ``AgentRun`` and why it stopped; ``emit`` reports an event."""

    messages: List[Dict[str, Any]]
    registry: ToolRegistry
    tool_choice: Any
    reasoning: str
    parallel_tool_calls: bool
    max_turns: int
    max_new_tokens: int
    constrained: bool
    do_sample: bool
    temperature: float
    top_p: float
    on_event: Optional[EventHandler]
    output: Optional[OutputSpec] = None
    reasoning_budget: Optional[int] = None  # tokens of reasoning per turn (formats/reasoning.py)
    n_calls: int = 0  # calls made so far in the conversation (call ids count them)
    cancel: Optional[threading.Event] = None  # set: stop at the next token (streaming)
    folded: List[AgentEvent] = field(default_factory=list)  # the events the run folds
    stopped_reason: str = "max_turns"
    kv_cache: Optional[ConversationCache] = None  # the conversation's key/value cache (reuse_cache)

    @property
    def tools(self) -> List[Tool]:
        return list(self.registry)

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, _FOLDED):
            self.folded.append(event)
        if self.on_event is not None:
            self.on_event(event)
