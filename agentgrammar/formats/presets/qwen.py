"""Qwen and Hermes presets: ``hermes`` (Qwen-2.5), ``qwen3``, ``qwen3_coder`` and ``qwen3_5``."""

from __future__ import annotations

import json
from typing import Callable, Dict, Mapping, Sequence

from ...registry import Tool
from ..format import AgentFormat
from ..xml_params import is_raw_string
from ._common import openai_json


def hermes_tools(tools: Sequence[Tool]) -> str:
    """The Qwen-2.5 / Hermes tools block (as the Qwen chat template writes it).

    Example:
        >>> print(hermes_tools([]).splitlines()[0])
        # Tools
    """
    lines = "\n".join(openai_json(t) for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def qwen3_coder_tools(tools: Sequence[Tool]) -> str:
    """The Qwen3-Coder tools section (XML function definitions and the call layout).

    Example:
        >>> qwen3_coder_tools([]).splitlines()[2]
        'You have access to the following functions:'
    """
    parts = ["# Tools\n\nYou have access to the following functions:\n\n<tools>"]
    for t in tools:
        parts.append(f"<function>\n<name>{t.name}</name>\n<description>{t.description}</description>")
        parts.append("<parameters>")
        for key, sub in (t.parameters.get("properties") or {}).items():
            kind = sub.get("type") if isinstance(sub, Mapping) else None
            kind = kind or ("string" if is_raw_string(sub) else "any")
            kind = kind if isinstance(kind, str) else json.dumps(kind)
            parts.append(f"<parameter>\n<name>{key}</name>\n<type>{kind}</type>")
            if isinstance(sub, Mapping) and sub.get("description"):
                parts.append(f"<description>{sub['description']}</description>")
            parts.append("</parameter>")
        required = t.parameters.get("required")
        if required:
            parts.append(f"<required>{json.dumps(required)}</required>")
        parts.append("</parameters>\n</function>")
    parts.append("</tools>\n")
    parts.append(
        "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
        "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    return "\n".join(parts)


_HERMES = dict(
    call_begin="<tool_call>\n",
    call_end="\n</tool_call>",
    trigger="<tool_call>",
    call_separator="\n",
    block_separator="\n",
    stop=("<|im_end|>",),
    tools_prompt=hermes_tools,
)


# Qwen3-Coder's XML calls (also Qwen3.5's).
_QWEN_XML = dict(
    call_layout="xml",
    call_begin="<tool_call>\n<function=",
    name_end=">\n",
    param_begin="<parameter=",
    param_name_end=">\n",
    param_end="\n</parameter>\n",
    call_end="</function>\n</tool_call>",
    trigger="<tool_call>",
    call_separator="\n",
    block_separator="\n",
    stop=("<|im_end|>",),
    tools_prompt=qwen3_coder_tools,
)


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    "hermes": lambda: AgentFormat(name="hermes", **_HERMES),  # type: ignore[arg-type]
    "qwen3": lambda: AgentFormat(
        name="qwen3",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        block_pad="\n",
        **_HERMES,  # type: ignore[arg-type]
    ),
    "qwen3_coder": lambda: AgentFormat(name="qwen3_coder", **_QWEN_XML),  # type: ignore[arg-type]
    # Qwen3.5 / 3.6 (xgrammar's qwen_3_5 tag; the kit has no Qwen3.5 template): Qwen3-Coder's
    # XML calls after Qwen3's think block, <think>\n...\n</think>\n\n.
    "qwen3_5": lambda: AgentFormat(
        name="qwen3_5",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        block_pad="\n",
        **_QWEN_XML,  # type: ignore[arg-type]
    ),
}
