"""Prompt text for an agent turn: the tokenizer's own chat template over the structured
conversation (:mod:`~agentgrammar.agent.messages`), always; the plain layout
(``render_messages``) only for a tokenizer without a chat template.

Every turn's prompt is exactly ``tokenizer.apply_chat_template(messages, tools=...,
add_generation_prompt=True, **template_kwargs)``. A template that fails on the conversation is
an ``AgentError`` quoting the template's message. A template that renders but leaves the tools
out gets the format's tools block in the system message, so the model still sees them.

The generation prompt may already open the turn's think block (Qwen3-Thinking-2507 ends it
with ``<think>\\n``; Qwen3 with ``enable_thinking=False`` with an empty, closed block):
``Prompt.opened`` is that part of the turn, which the turn's grammar must start after.

The plain layout (deterministic, so a training corpus can produce exactly the same text): one
section per message, a role header line then the content and a newline::

    <|system|>
    {system content, a blank line, then fmt.render_tools(tools)}
    <|user|>
    {content}
    <|assistant|>
    {the turn as the format writes it}
    <|tool|>
    {content}
    <|assistant|>

and it ends with the ``<|assistant|>`` header of the turn to generate. The tools block joins
the first message when that is a system message (after its content and a blank line), else it
makes a system section of its own; without tools (and without a system message) there is no
system section.

Example:
    >>> from agentgrammar import Tool, ToolCall
    >>> from agentgrammar.formats import AgentFormat
    >>> fmt = AgentFormat(tools_prompt=lambda tools: "TOOLS: " + ", ".join(t.name for t in tools))
    >>> now = Tool("now", "The time.", {"type": "object", "properties": {}})
    >>> call = {"id": "call_1", "type": "function", "function": {"name": "now", "arguments": {}}}
    >>> print(render_messages([{"role": "user", "content": "Time?"},
    ...     {"role": "assistant", "content": "", "tool_calls": [call]},
    ...     {"role": "tool", "tool_call_id": "call_1", "name": "now", "content": "noon"}], fmt, [now]), end="")
    <|system|>
    TOOLS: now
    <|user|>
    Time?
    <|assistant|>
    <tool_call>{"name": "now", "arguments": {}}</tool_call>
    <|tool|>
    noon
    <|assistant|>
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..errors import AgentError
from ..formats import AgentFormat
from ..formats.tools import ToolsArg, tool_list
from ..registry.openai import tool_to_openai
from .messages import message_text, output_of, with_argument_shape

__all__ = [
    "Prompt",
    "PromptBuilder",
    "chat_template_renders_tools",
    "has_chat_template",
    "opened_token_ids",
    "reasoning_switches",
    "render_messages",
]


# --------------------------------------------------------------------------- the plain layout


def _assistant_text(message: Mapping[str, Any], fmt: AgentFormat, tools: List[Any]) -> str:
    if not message.get("tool_calls") and not message.get("reasoning_content") and not message.get("thinking"):
        return message_text(message)  # a turn's text as it was written
    return fmt.render(output_of(message, has_response=fmt.has_response), tools=tools)


def render_messages(
    messages: Sequence[Mapping[str, Any]], fmt: AgentFormat, tools: Optional[ToolsArg]
) -> str:
    """The plain transcript of ``messages`` with ``fmt``'s tools block, ending with the header
    of the assistant turn to generate (see the module docstring for the layout)."""
    offered = tool_list(tools)
    block = fmt.render_tools(offered) if offered else ""
    msgs = list(messages)
    parts: List[str] = []
    if msgs and msgs[0].get("role") == "system":
        system = message_text(msgs[0])
        if block:
            system = f"{system}\n\n{block}" if system else block
        parts.append(f"<|system|>\n{system}\n")
        msgs = msgs[1:]
    elif block:
        parts.append(f"<|system|>\n{block}\n")
    for m in msgs:
        role = str(m.get("role", "user"))
        text = _assistant_text(m, fmt, offered) if role == "assistant" else message_text(m)
        parts.append(f"<|{role}|>\n{text}\n")
    parts.append("<|assistant|>\n")
    return "".join(parts)


# --------------------------------------------------------------------------- chat templates


def opened_token_ids(vocabulary: Any, opened: str, input_ids: Sequence[int]) -> List[int]:
    """The last tokens of ``input_ids`` that spell ``opened`` (the start of the turn that the
    generation prompt wrote), as ``vocabulary`` decodes them; ``AgentError`` when they do not
    end there.

    Example:
        >>> from agentgrammar import Vocabulary
        >>> opened_token_ids(Vocabulary(["a", "<t>", "\\n"], stop_token_ids=[]), "<t>\\n", [0, 1, 2])
        [1, 2]
    """
    want = opened.encode("utf-8")
    got = b""
    k = len(input_ids)
    while k > 0 and len(got) < len(want):
        k -= 1
        got = vocabulary.decode([input_ids[k]]) + got
    if got != want:
        raise AgentError(
            f"the generation prompt opens the turn with {opened!r}, but its tokens do not "
            "end there; cannot start the turn's grammar after it"
        )
    return list(input_ids[k:])


def has_chat_template(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` has a chat template to render prompts with.

    Example:
        >>> class NoTemplate:
        ...     chat_template = None
        >>> has_chat_template(NoTemplate())
        False
    """
    return bool(getattr(tokenizer, "chat_template", None)) and hasattr(tokenizer, "apply_chat_template")


def _template_source(tokenizer: Any, kwargs: Mapping[str, Any]) -> str:
    source = kwargs.get("chat_template") or getattr(tokenizer, "chat_template", None) or ""
    if isinstance(source, Mapping):  # named templates
        return "\n".join(str(v) for v in source.values())
    return str(source)


def reasoning_switches(template: str, reasoning: str) -> Dict[str, Any]:
    """The template variables that turn reasoning on or off, for the switches ``template``
    reads: ``enable_thinking`` (Qwen3, GLM), ``thinking`` (DeepSeek-V3.1) and
    ``reasoning_effort`` (gpt-oss, which cannot turn it off: ``"low"``). ``"auto"`` sets none.

    Example:
        >>> reasoning_switches("{% if enable_thinking is false %}...", "disabled")
        {'enable_thinking': False}
        >>> reasoning_switches("{{ reasoning_effort }}", "enabled")
        {}
    """
    if reasoning == "auto":
        return {}
    on = reasoning == "enabled"
    out: Dict[str, Any] = {}
    for name in ("enable_thinking", "thinking"):
        if re.search(rf"\b{name}\b", template):
            out[name] = on
    if not on and re.search(r"\breasoning_effort\b", template):
        out["reasoning_effort"] = "low"
    return out


def _render(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: List[Any], **kwargs: Any) -> str:
    if tools:
        kwargs["tools"] = [tool_to_openai(t) for t in tools]
    text = tokenizer.apply_chat_template(list(messages), tokenize=False, **kwargs)
    if not isinstance(text, str):
        raise TypeError(f"apply_chat_template returned {type(text).__name__}, not str")
    return text


def chat_template_renders_tools(tokenizer: Any, tools: Optional[ToolsArg], **kwargs: Any) -> bool:
    """Whether ``tokenizer``'s chat template renders these tools: a probe conversation renders
    and the text names every tool (without tools: it renders).

    Example:
        >>> class NoTemplate:
        ...     chat_template = None
        >>> chat_template_renders_tools(NoTemplate(), [])
        False
    """
    if not has_chat_template(tokenizer):
        return False
    offered = tool_list(tools)
    try:
        text = _render(
            tokenizer, [{"role": "user", "content": "ping"}], offered, add_generation_prompt=True, **kwargs
        )
    except Exception:
        return False
    return all(t.name in text for t in offered)


@dataclass(frozen=True)
class Prompt:
    """One turn's prompt: ``text``; ``templated`` (from the chat template, which then holds
    the tokenizer's special tokens, such as BOS); ``opened``: the start of the assistant turn
    that the generation prompt already wrote (``""`` or, say, ``"<think>\\n"``)."""

    text: str
    templated: bool
    opened: str = ""


_PROBE_CALL_ID = "abc123XYZ"  # Mistral's templates want 9 alphanumeric characters


def _probe(shape: str) -> List[Dict[str, Any]]:
    args: Any = {"city": "Oslo"} if shape == "dict" else '{"city": "Oslo"}'
    call = {"id": _PROBE_CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": args}}
    return [
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": _PROBE_CALL_ID, "name": "get_weather", "content": "cloudy"},
    ]


class PromptBuilder:
    """Renders an agent's turns: the chat template with the agent's template variables and
    reasoning switch, or the plain layout without a template. Learns once per builder how the
    template wants tool-call arguments (a dict, or JSON text for templates that concatenate
    them) and, per tool set, whether it renders the tools.

    Example:
        >>> class NoTemplate:
        ...     chat_template = None
        >>> from agentgrammar.formats import get
        >>> p = PromptBuilder(NoTemplate(), get("tags")).build([{"role": "user", "content": "Hi"}], [], "enabled")
        >>> p.text, p.templated
        ('<|user|>\\nHi\\n<|assistant|>\\n', False)
    """

    def __init__(
        self, tokenizer: Any, fmt: AgentFormat, template_kwargs: Optional[Mapping[str, Any]] = None
    ) -> None:
        self.tokenizer = tokenizer
        self.format = fmt
        self.template_kwargs: Dict[str, Any] = dict(template_kwargs or {})
        self.templated = has_chat_template(tokenizer)
        self._shape: Optional[str] = None
        self._renders_tools: Dict[tuple, bool] = {}

    def kwargs(self, reasoning: str) -> Dict[str, Any]:
        """The template variables of a turn: the reasoning switch, then the agent's own."""
        switches = reasoning_switches(_template_source(self.tokenizer, self.template_kwargs), reasoning)
        return {**switches, **self.template_kwargs}

    @property
    def argument_shape(self) -> str:
        """``"dict"`` or ``"json"``: how the template takes tool-call arguments."""
        if self._shape is None:
            self._shape = "dict"
            if self.templated:
                for shape in ("dict", "json"):
                    try:
                        text = _render(
                            self.tokenizer,
                            _probe(shape),
                            [],
                            add_generation_prompt=True,
                            **self.template_kwargs,
                        )
                    except Exception:
                        continue
                    if "Oslo" in text:
                        self._shape = shape
                        break
        return self._shape

    def _messages(self, messages: Sequence[Mapping[str, Any]], tools: List[Any]) -> List[Dict[str, Any]]:
        msgs = with_argument_shape([dict(m) for m in messages], self.argument_shape)
        key = tuple(t.name for t in tools)
        renders = self._renders_tools.get(key)
        if renders is None:
            renders = self._renders_tools[key] = chat_template_renders_tools(
                self.tokenizer, tools, **self.template_kwargs
            )
        if tools and not renders:  # the model must see its tools somewhere
            block = self.format.render_tools(tools)
            if msgs and msgs[0].get("role") == "system":
                msgs[0] = {**msgs[0], "content": f"{message_text(msgs[0])}\n\n{block}".lstrip()}
            else:
                msgs.insert(0, {"role": "system", "content": block})
        return msgs

    def build(
        self, messages: Sequence[Mapping[str, Any]], tools: Optional[ToolsArg], reasoning: str
    ) -> Prompt:
        """The prompt of the turn that follows ``messages`` (``AgentError`` when the chat
        template fails on them)."""
        offered = tool_list(tools)
        if not self.templated:
            return Prompt(render_messages(messages, self.format, offered), False)
        msgs = self._messages(messages, offered)
        kwargs = self.kwargs(reasoning)
        tools_arg = offered if self._renders_tools[tuple(t.name for t in offered)] else []
        try:
            text = _render(self.tokenizer, msgs, tools_arg, add_generation_prompt=True, **kwargs)
        except Exception as e:
            raise AgentError(
                f"the chat template cannot render this conversation: {type(e).__name__}: {e}"
            ) from e
        return Prompt(text, True, self._opened(msgs, tools_arg, kwargs, text))

    def _opened(self, msgs: List[Dict[str, Any]], tools: List[Any], kwargs: Dict[str, Any], text: str) -> str:
        """The part of the assistant turn the generation prompt writes: from the format's think
        marker on, when the generation prompt holds it."""
        begin = self.format.think_begin
        if not begin or begin not in text:
            return ""
        try:
            base = _render(self.tokenizer, msgs, tools, add_generation_prompt=False, **kwargs)
        except Exception:
            return ""
        if not text.startswith(base):
            return ""
        suffix = text[len(base) :]
        at = suffix.find(begin)
        return suffix[at:] if at >= 0 else ""
