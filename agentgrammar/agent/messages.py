"""The conversation as OpenAI-style messages, as the agent keeps it and chat templates read it.

An assistant turn is one message: ``content`` (the response or free text only, ``""`` when
there is none: several templates read it unguarded), the reasoning under both
``reasoning_content`` (Qwen3's templates) and ``thinking`` (gpt-oss's), and ``tool_calls`` with
their ids and arguments as a dict, or as a JSON string for templates that concatenate them
(DeepSeek's). A tool result is ``{"role": "tool", "tool_call_id", "name", "content"}``.

Example:
    >>> from agentgrammar import ToolCall
    >>> from agentgrammar.formats import AgentOutput
    >>> out = AgentOutput(think="Easy.", tool_calls=[ToolCall("now", {}, id="call_1")])
    >>> m = assistant_message(out)
    >>> m["content"], m["reasoning_content"], m["tool_calls"][0]["function"]
    ('', 'Easy.', {'name': 'now', 'arguments': {}})
    >>> output_of(m) == out
    True
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from ..formats import AgentOutput
from ..registry import ToolCall
from ..registry.openai import tool_call_from_openai

__all__ = ["ARGUMENT_SHAPES", "assistant_message", "message_text", "output_of", "with_argument_shape"]

#: How a template wants tool-call arguments: a dict (``tojson`` in the template) or JSON text.
ARGUMENT_SHAPES = ("dict", "json")


def message_text(message: Mapping[str, Any]) -> str:
    """A message's ``content`` as text (OpenAI content parts: their text joined).

    Example:
        >>> message_text({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
        'ab'
    """
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return json.dumps(content, ensure_ascii=False, default=str)


def _call_dict(call: ToolCall, shape: str) -> Dict[str, Any]:
    arguments: Any = call.arguments
    if shape == "json":
        arguments = json.dumps(call.arguments, ensure_ascii=False)
    out: Dict[str, Any] = {} if call.id is None else {"id": call.id}
    out["type"] = "function"
    out["function"] = {"name": call.name, "arguments": arguments}
    return out


def assistant_message(output: AgentOutput, *, arguments: str = "dict") -> Dict[str, Any]:
    """The assistant message of one turn (see the module docstring); ``arguments``: ``"dict"``
    or ``"json"`` (``ARGUMENT_SHAPES``).

    Example:
        >>> assistant_message(AgentOutput(response="Hi!"))
        {'role': 'assistant', 'content': 'Hi!'}
    """
    if arguments not in ARGUMENT_SHAPES:
        raise ValueError(f"arguments must be one of {ARGUMENT_SHAPES}, got {arguments!r}")
    parts = [p for p in (output.text, output.response) if p]
    message: Dict[str, Any] = {"role": "assistant", "content": "\n".join(parts)}
    if output.think:
        message["reasoning_content"] = output.think
        message["thinking"] = output.think
    if output.tool_calls:
        message["tool_calls"] = [_call_dict(c, arguments) for c in output.tool_calls]
    return message


def with_argument_shape(messages: List[Dict[str, Any]], shape: str) -> List[Dict[str, Any]]:
    """``messages`` with every assistant tool call's arguments in ``shape`` (copies where they
    change; JSON text that is not an object is left as it is).

    Example:
        >>> m = assistant_message(AgentOutput(tool_calls=[ToolCall("f", {"a": 1})]))
        >>> with_argument_shape([m], "json")[0]["tool_calls"][0]["function"]["arguments"]
        '{"a": 1}'
    """
    out = []
    for m in messages:
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if not calls:
            out.append(m)
            continue
        new_calls = []
        for c in calls:
            fn = dict(c.get("function") or {})
            args = fn.get("arguments")
            if shape == "json" and not isinstance(args, str):
                fn["arguments"] = json.dumps(args if args is not None else {}, ensure_ascii=False)
            elif shape == "dict" and isinstance(args, str):
                try:
                    parsed = json.loads(args)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    fn["arguments"] = parsed
            new_calls.append({**c, "function": fn})
        out.append({**m, "tool_calls": new_calls})
    return out


def output_of(message: Mapping[str, Any], *, has_response: bool = False) -> AgentOutput:
    """The ``AgentOutput`` an assistant message holds: its reasoning, calls and content (as
    the response when the format has a response block, else as free text).

    Example:
        >>> output_of({"role": "assistant", "content": "Hi"}, has_response=True).response
        'Hi'
    """
    think: Optional[str] = message.get("reasoning_content") or message.get("thinking") or None
    calls = [
        c if isinstance(c, ToolCall) else tool_call_from_openai(c) for c in message.get("tool_calls") or []
    ]
    text = message_text(message) or None
    if has_response:
        return AgentOutput(think=think, tool_calls=calls, response=text)
    return AgentOutput(think=think, tool_calls=calls, text=text)
