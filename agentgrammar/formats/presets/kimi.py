"""Kimi presets: ``kimi_k2`` (Kimi-K2-Instruct) and ``kimi_k2_thinking`` (Kimi-K2-Thinking,
K2.5), written from the kit's ``kimi-k2-instruct-0711.jinja`` and
``kimi-k2-thinking.llamacpp.jinja``."""

from __future__ import annotations

import json
from typing import Callable, Dict, Sequence

from ...registry import Tool
from ...registry.openai import tool_to_openai
from ..format import AgentFormat


def kimi_tools(tools: Sequence[Tool]) -> str:
    """The tools as Kimi's templates declare them: the OpenAI tool list as JSON (the content of
    the ``<|im_system|>tool_declare<|im_middle|>`` message).

    Example:
        >>> from agentgrammar import Tool
        >>> kimi_tools([Tool("now", "The time.", {"type": "object", "properties": {}})])[:42]
        '[{"type": "function", "function": {"name":'
    """
    return json.dumps([tool_to_openai(t) for t in tools], ensure_ascii=False)


# Both templates write, after "<|im_assistant|>assistant<|im_middle|>", the content glued to
# "<|tool_calls_section_begin|>", then per call "<|tool_call_begin|>functions.NAME:IDX
# <|tool_call_argument_begin|>" + tojson(arguments) + "<|tool_call_end|>", back to back, then
# "<|tool_calls_section_end|><|im_end|>". The call's id is "functions.NAME:IDX" (the tool
# result names it: "## Return of functions.NAME:IDX"); K2-Instruct numbers the calls of each
# message from 0, K2-Thinking writes the message's own ids (else a count over the conversation
# from 1). The grammar takes any index.
_KIMI_K2 = dict(
    call_layout="name_then_json",
    calls_begin="<|tool_calls_section_begin|>",
    calls_end="<|tool_calls_section_end|>",
    call_begin="<|tool_call_begin|>",
    call_id_form="functions.{name}:{index}",
    name_end="<|tool_call_argument_begin|>",
    call_end="<|tool_call_end|>",
    call_separator="",
    block_separator="",
    stop=("<|im_end|>",),
    tools_prompt=kimi_tools,
)

PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    "kimi_k2": lambda: AgentFormat(name="kimi_k2", **_KIMI_K2),  # type: ignore[arg-type]
    # K2-Thinking writes "<think>REASONING</think>" first (the generation prompt does not open
    # it; the template writes an empty block into every earlier assistant turn).
    "kimi_k2_thinking": lambda: AgentFormat(
        name="kimi_k2_thinking",
        think_begin="<think>",
        think_end="</think>",
        **_KIMI_K2,  # type: ignore[arg-type]
    ),
}
