"""Prompt text for an agent turn: the tokenizer's chat template when it renders tools, else a
plain transcript (``render_messages``) with the format's own tools block.

The plain layout (deterministic, so a training corpus can produce exactly the same text): one
section per message, a role header line then the content and a newline::

    <|system|>
    {system content, a blank line, then fmt.render_tools(tools)}
    <|user|>
    {content}
    <|assistant|>
    {content}
    <|tool|>
    {content}
    <|assistant|>

and it ends with the ``<|assistant|>`` header of the turn to generate. The tools block joins
the first message when that is a system message (after its content and a blank line), else it
makes a system section of its own; without tools (and without a system message) there is no
system section. An assistant message's ``content`` is the turn's whole text as the model wrote
it (that is what the agent stores); its ``tool_calls`` are rendered with the format only when
the content is empty (OpenAI-style messages from elsewhere).

Example:
    >>> from agentgrammar import Tool
    >>> from agentgrammar.formats import AgentFormat
    >>> fmt = AgentFormat(tools_prompt=lambda tools: "TOOLS: " + ", ".join(t.name for t in tools))
    >>> now = Tool("now", "The time.", {"type": "object", "properties": {}})
    >>> print(render_messages([{"role": "user", "content": "Time?"},
    ...     {"role": "assistant", "content": '<tool_call>{"name": "now", "arguments": {}}</tool_call>'},
    ...     {"role": "tool", "name": "now", "content": '"noon"'}], fmt, [now]), end="")
    <|system|>
    TOOLS: now
    <|user|>
    Time?
    <|assistant|>
    <tool_call>{"name": "now", "arguments": {}}</tool_call>
    <|tool|>
    "noon"
    <|assistant|>
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..formats import AgentFormat, AgentOutput
from ..formats.tools import ToolsArg, tool_list
from ..registry import ToolCall
from ..registry.openai import tool_call_from_openai, tool_to_openai

__all__ = ["build_prompt", "chat_template_renders_tools", "render_messages", "template_messages"]


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return json.dumps(content, ensure_ascii=False, default=str)


def _assistant_text(message: Mapping[str, Any], fmt: AgentFormat, tools: List[Any]) -> str:
    text = _content(message)
    calls = message.get("tool_calls") or []
    if text or not calls:
        return text
    parsed: List[ToolCall] = [c if isinstance(c, ToolCall) else tool_call_from_openai(c) for c in calls]
    return fmt.render(AgentOutput(tool_calls=parsed), tools=tools)


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
        system = _content(msgs[0])
        if block:
            system = f"{system}\n\n{block}" if system else block
        parts.append(f"<|system|>\n{system}\n")
        msgs = msgs[1:]
    elif block:
        parts.append(f"<|system|>\n{block}\n")
    for m in msgs:
        role = str(m.get("role", "user"))
        text = _assistant_text(m, fmt, offered) if role == "assistant" else _content(m)
        parts.append(f"<|{role}|>\n{text}\n")
    parts.append("<|assistant|>\n")
    return "".join(parts)


def template_messages(messages: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """``messages`` for a chat template: an assistant message whose content holds the turn's
    text loses its ``tool_calls`` (the content already has them)."""
    out: List[Dict[str, Any]] = []
    for m in messages:
        d = dict(m)
        if d.get("role") == "assistant" and _content(d) and d.get("tool_calls"):
            d.pop("tool_calls")
        out.append(d)
    return out


def _apply_template(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: List[Any]) -> str:
    kwargs: Dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
    if tools:
        kwargs["tools"] = [tool_to_openai(t) for t in tools]
    text = tokenizer.apply_chat_template(template_messages(messages), **kwargs)
    if not isinstance(text, str):
        raise TypeError(f"apply_chat_template returned {type(text).__name__}, not str")
    return text


def chat_template_renders_tools(tokenizer: Any, tools: Optional[ToolsArg]) -> bool:
    """Whether ``tokenizer`` has a chat template that renders these tools: it renders a probe
    conversation without error and the text names every tool (without tools: it renders).

    Example:
        >>> class NoTemplate:
        ...     chat_template = None
        >>> chat_template_renders_tools(NoTemplate(), [])
        False
    """
    if not getattr(tokenizer, "chat_template", None) or not hasattr(tokenizer, "apply_chat_template"):
        return False
    offered = tool_list(tools)
    try:
        text = _apply_template(tokenizer, [{"role": "user", "content": "ping"}], offered)
    except Exception:  # a template that raises (no tool support, role checks, ...) is not used
        return False
    return all(t.name in text for t in offered)


def build_prompt(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    fmt: AgentFormat,
    tools: Optional[ToolsArg],
    *,
    use_template: bool,
) -> Tuple[str, bool]:
    """The prompt text and whether it came from the chat template (which then already holds
    the tokenizer's special tokens, such as BOS). With ``use_template`` the template is tried
    and, if it fails on these messages, the plain transcript is used instead."""
    offered = tool_list(tools)
    if use_template:
        try:
            return _apply_template(tokenizer, messages, offered), True
        except Exception:
            pass
    return render_messages(messages, fmt, offered), False
