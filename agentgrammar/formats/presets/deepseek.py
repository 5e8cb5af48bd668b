"""DeepSeek presets: ``deepseek_r1`` and ``deepseek_v3_1``."""

from __future__ import annotations

import json
from typing import Callable, Dict, Sequence

from ...registry import Tool
from ...registry.openai import tool_to_openai
from ..format import AgentFormat


def deepseek_tools(tools: Sequence[Tool]) -> str:
    """DeepSeek's tools section (``## Tools`` / ``### Function``, a fenced JSON per tool).

    Example:
        >>> deepseek_tools([]).startswith("## Tools")
        True
    """
    parts = [
        "## Tools\n\n### Function\n\nYou have the following functions available:\n",
    ]
    for t in tools:
        fn = tool_to_openai(t)["function"]
        parts.append(f"- `{t.name}`:\n```json\n{json.dumps(fn, ensure_ascii=False)}\n```")
    parts.append(
        "\nTo call functions, write <｜tool▁calls▁begin｜>, then for each call "
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGUMENTS\\n```<｜tool▁call▁end｜> "
        "(calls separated by a newline), then <｜tool▁calls▁end｜>."
    )
    return "\n".join(parts)


def deepseek_v3_1_tools(tools: Sequence[Tool]) -> str:
    """DeepSeek-V3.1's tool description, as its model card lays it out (the chat template writes
    none: the caller puts this after the system prompt, which is what ``Agent`` does with a
    template that leaves the tools out). Tools are joined by a blank line.

    Example:
        >>> from agentgrammar import Tool
        >>> print(deepseek_v3_1_tools([Tool("now", "The time.", {"type": "object", "properties": {}})]).split("IMPORTANT")[0])
        ## Tools
        You have access to the following tools:
        <BLANKLINE>
        ### now
        Description: The time.
        <BLANKLINE>
        Parameters: {"type": "object", "properties": {}}
        <BLANKLINE>
        <BLANKLINE>
    """
    blocks = "\n\n".join(
        f"### {t.name}\nDescription: {t.description}\n\nParameters: {json.dumps(t.parameters, ensure_ascii=False)}"
        for t in tools
    )
    return (
        f"## Tools\nYou have access to the following tools:\n\n{blocks}\n\n"
        "IMPORTANT: ALWAYS adhere to this exact format for tool use:\n"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments"
        "<｜tool▁call▁end｜>{additional_tool_calls}<｜tool▁calls▁end｜>\n\n"
        "Where:\n"
        "- `tool_call_name` must be an exact match to one of the available tools\n"
        "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n"
        "- For multiple tool calls, chain them directly without separators or spaces"
    )


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    "deepseek_r1": lambda: AgentFormat(
        name="deepseek_r1",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        block_pad="\n",
        call_layout="name_then_json",
        calls_begin="<｜tool▁calls▁begin｜>",
        calls_end="<｜tool▁calls▁end｜>",
        call_begin="<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
        name_end="\n```json\n",
        call_end="\n```<｜tool▁call▁end｜>",
        call_separator="\n",
        block_separator="",
        stop=("<｜end▁of▁sentence｜>",),
        tools_prompt=deepseek_tools,
    ),
    # DeepSeek-V3.1 (its official template): after "<｜Assistant｜></think>" (thinking off) the
    # calls, chained with no separator, then <｜end▁of▁sentence｜>; text before them is the
    # message's content, glued on. With thinking on, the generation prompt opens "<think>": the
    # model writes its reasoning, "</think>", then the same calls (the template keeps no
    # reasoning in history).
    "deepseek_v3_1": lambda: AgentFormat(
        name="deepseek_v3_1",
        think_begin="<think>",
        think_end="</think>",
        call_layout="name_then_json",
        calls_begin="<｜tool▁calls▁begin｜>",
        calls_end="<｜tool▁calls▁end｜>",
        call_begin="<｜tool▁call▁begin｜>",
        name_end="<｜tool▁sep｜>",
        call_end="<｜tool▁call▁end｜>",
        call_separator="",
        block_separator="",
        stop=("<｜end▁of▁sentence｜>",),
        tools_prompt=deepseek_v3_1_tools,
    ),
}
