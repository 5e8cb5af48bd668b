"""DeepSeek presets: ``deepseek_r1``, ``deepseek_v3_1``, and the DSML layouts ``deepseek_v3_2``,
``deepseek_v4`` and ``deepseek_v4_1``."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Sequence

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


def deepseek_v3_2_tools(tools: Sequence[Tool]) -> str:
    """DeepSeek-V3.2's tools section, as its chat template appends it to the system prompt (the
    DSML call layout, then one JSON function definition per line).

    Example:
        >>> print(deepseek_v3_2_tools([]).splitlines()[-1])
        </functions>
    """
    dsml = "｜DSML｜"
    schemas = "".join(json.dumps(tool_to_openai(t)["function"], ensure_ascii=False) + "\n" for t in tools)
    return (
        "## Tools\n\nYou have access to a set of tools you can use to answer the user's question.\n"
        f'You can invoke functions by writing a "<{dsml}function_calls>" block like the following as '
        f"part of your reply to the user:\n<{dsml}function_calls>\n"
        f'<{dsml}invoke name="$FUNCTION_NAME">\n'
        f'<{dsml}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{dsml}parameter>\n'
        f'...\n</{dsml}invoke>\n<{dsml}invoke name="$FUNCTION_NAME2">\n...\n</{dsml}invoke>\n'
        f"</{dsml}function_calls>\n\n"
        "String and scalar parameters should be specified as is without any escaping or quotes, while "
        'lists and objects should use JSON format. The "string" attribute should be set to "true" for '
        'string type parameters and "false" for other types (numbers, booleans, arrays, objects).\n\n'
        f"Here are the functions available in JSONSchema format:\n<functions>\n{schemas}</functions>"
    )


def _dsml(calls: str, space: str, **kw: Any) -> AgentFormat:
    """A DSML layout: ``\n\n<｜DSML｜CALLS>\n``, per call ``<｜DSML｜INVOKE name="NAME">\n``, per
    argument ``<｜DSML｜PARAMETER name="K" string="true">V</｜DSML｜PARAMETER>\n`` (``"false"``
    and JSON for values other than strings), ``</｜DSML｜INVOKE>\n``, then ``</｜DSML｜CALLS>``
    (``space`` before the element names: DeepSeek-V4.1 writes ``<｜DSML｜ invoke``)."""
    dsml = "｜DSML｜" + space
    return AgentFormat(
        think_begin="<think>",
        think_end="</think>",
        call_layout="xml",
        # the "\n\n" before the block is the template's; xgrammar's trigger is the marker alone
        calls_begin=f"\n\n<{dsml}{calls}>\n",
        calls_begin_variants=(f"<{dsml}{calls}>\n",),
        calls_end=f"</{dsml}{calls}>",
        call_begin=f'<{dsml}invoke name="',
        name_end='">\n',
        param_begin=f'<{dsml}parameter name="',
        param_name_end='" string="true">',
        param_name_end_json='" string="false">',
        param_end=f"</{dsml}parameter>\n",
        call_end=f"</{dsml}invoke>\n",
        call_separator="",
        block_separator="",
        stop=("<｜end▁of▁sentence｜>",),
        tools_prompt=deepseek_v3_2_tools,
        **kw,
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
    # DeepSeek-V3.2 (the kit's template is llama.cpp's reconstruction of DeepSeek's Python
    # encoder): after "<｜Assistant｜>" the generation prompt writes "<think></think>" (thinking
    # off) or "<think>" (thinking on: the model writes its reasoning and "</think>"); then the
    # content, glued on, and the DSML block; then <｜end▁of▁sentence｜>.
    "deepseek_v3_2": lambda: _dsml("function_calls", "", name="deepseek_v3_2"),
    # DeepSeek-V4 and V4.1: the kit has no template; written from xgrammar 0.2.9's builtin tags
    # ("deepseek_v4": <｜DSML｜tool_calls>; "deepseek_v4_1": <｜DSML｜ calls>, "<｜DSML｜ invoke",
    # "<｜DSML｜ parameter"), with V3.2's whitespace. xgrammar's tags also take other whitespace
    # between the elements; these grammars take this form.
    "deepseek_v4": lambda: _dsml("tool_calls", "", name="deepseek_v4"),
    "deepseek_v4_1": lambda: _dsml("calls", " ", name="deepseek_v4_1"),
}
