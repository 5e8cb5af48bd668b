"""Rendering the kit's templates-only chat templates (no tokenizer: transformers' Jinja
renderer with the family's own BOS/EOS strings), and the assistant turn a template writes, for
the preset tests of those families (``test_presets_<family>.py``). Skips without the kit."""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Optional

import pytest

from agentgrammar import ToolCall
from tests.kit import CANONICAL_MESSAGES, CANONICAL_TOOLS, kit_template

__all__ = ["RICH_TOOLS", "assistant", "render_template", "template_turn", "tool_call"]

# get_weather with a typed argument besides the string, so values other than strings are
# written too (as JSON in the xml layouts)
RICH_TOOLS: List[Dict[str, Any]] = copy.deepcopy(CANONICAL_TOOLS)
RICH_TOOLS[0]["function"]["parameters"]["properties"]["days"] = {"type": "integer"}
RICH_TOOLS[0]["function"]["parameters"]["properties"]["units"] = {
    "type": "array",
    "items": {"type": "string"},
}


def tool_call(call: ToolCall) -> Dict[str, Any]:
    """The OpenAI message form of ``call`` (its id only when it has one)."""
    out: Dict[str, Any] = {"type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    if call.id is not None:
        out["id"] = call.id
    return out


def assistant(calls: List[ToolCall], content: str = "", reasoning: Optional[str] = None) -> Dict[str, Any]:
    """An assistant message with ``calls`` (and ``reasoning_content`` when given)."""
    out: Dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "tool_calls": [tool_call(c) for c in calls],
    }
    if reasoning is not None:
        out["reasoning_content"] = reasoning
    return out


def _tojson(value: Any, **kw: Any) -> str:
    return json.dumps(value, ensure_ascii=False, **kw)


def render_template(
    template: str,
    messages: List[Dict[str, Any]],
    *,
    tools: Optional[List[Dict[str, Any]]] = None,
    generation: bool = False,
    sandboxed: bool = True,
    **kwargs: Any,
) -> str:
    """``templates-only/<template>.jinja`` over ``messages``. ``sandboxed=False`` renders with
    a plain Jinja environment, for llama.cpp's Kimi-K2-Thinking copy, which calls
    ``list.append`` (transformers' sandbox refuses it)."""
    pytest.importorskip("transformers")
    text = kit_template("templates-only", template)
    tools = CANONICAL_TOOLS if tools is None else tools
    ends = {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
    if not sandboxed:
        import jinja2

        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = _tojson
        return env.from_string(text).render(
            messages=messages, tools=tools, add_generation_prompt=generation, **ends, **kwargs
        )
    from transformers.utils.chat_template_utils import render_jinja_template

    out, _ = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=text,
        add_generation_prompt=generation,
        **ends,
        **kwargs,
    )
    return str(out[0])


def template_turn(
    template: str,
    message: Dict[str, Any],
    anchor: str,
    eot: Optional[str],
    *,
    tools: Optional[List[Dict[str, Any]]] = None,
    sandboxed: bool = True,
    **kwargs: Any,
) -> str:
    """The assistant ``message`` as the template renders it after [system, user] of the kit's
    conversation: from ``anchor`` (the assistant's role header, after the question) up to
    ``eot`` (the end-of-turn string; None: the render's end)."""
    messages = [*copy.deepcopy(CANONICAL_MESSAGES[:2]), message]
    text = render_template(template, messages, tools=tools, sandboxed=sandboxed, **kwargs)
    start = text.index(anchor, text.index(CANONICAL_MESSAGES[1]["content"])) + len(anchor)
    turn = text[start:]
    return turn[: turn.index(eot)] if eot else turn
