"""Kimi presets: ``kimi_k2`` (Kimi-K2-Instruct) and ``kimi_k2_thinking`` (Kimi-K2-Thinking,
K2.5), written from the kit's ``kimi-k2-instruct-0711.jinja`` and
``kimi-k2-thinking.llamacpp.jinja``; ``kimi_k3`` (Kimi-K3), for which the kit has no template,
written from xgrammar 0.2.9's builtin ``kimi_k3`` tag (``get_model_structural_tag``)."""

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
    # Kimi-K3: blocks "<|open|>KIND<|sep|>...<|close|>KIND<|sep|>": the think block, then the
    # response block (always, maybe empty), then optionally "<|open|>tools<|sep|>" with per call
    # '<|open|>call tool="NAME" index="N"<|sep|>' (N is the call's id), the arguments in
    # xgrammar's "kimi_k3_xml" style ('<|open|>argument key="K" type="T"<|sep|>V
    # <|close|>argument<|sep|>'), "<|close|>call<|sep|>", then "<|close|>tools<|sep|>"; then
    # "<|close|>message<|sep|>", which the grammar requires. The generation prompt opens the
    # first block (the think block, or the response block with reasoning off): the grammar's
    # turn starts with its marker, which Agent finds in the prompt for the think block.
    # The tools block is Kimi-K2's.
    "kimi_k3": lambda: AgentFormat(
        name="kimi_k3",
        think_begin="<|open|>think<|sep|>",
        think_end="<|close|>think<|sep|>",
        response_begin="<|open|>response<|sep|>",
        response_end="<|close|>response<|sep|>",
        response_first=True,
        response_after_calls=False,
        call_layout="styled",
        max_whitespace=4,  # between argument elements (xgrammar: any); no loops in whitespace
        argument_style="kimi_k3_xml",
        calls_begin="<|open|>tools<|sep|>",
        calls_end="<|close|>tools<|sep|>",
        call_begin='<|open|>call tool="',
        call_index='{name}" index="{index}',
        name_end='"<|sep|>',
        call_end="<|close|>call<|sep|>",
        call_separator="",
        block_separator="",
        turn_end="<|close|>message<|sep|>",
        tools_prompt=kimi_tools,
    ),
}
