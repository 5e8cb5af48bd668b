"""GLM presets: ``glm4`` (GLM-4.5, 4.6)."""

from __future__ import annotations

from typing import Callable, Dict, Sequence

from ...registry import Tool
from ..format import AgentFormat
from ._common import openai_json


def glm4_tools(tools: Sequence[Tool]) -> str:
    """The GLM-4.6 tools section, as its chat template writes it in the system message.

    Example:
        >>> print(glm4_tools([]).splitlines()[-1])
        </tool_call>
    """
    lines = "".join(openai_json(t) + "\n" for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}</tools>\n\n"
        "For each function call, output the function name and arguments within the following XML format:\n"
        "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
        "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>"
    )


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # GLM-4.6 (its template's form): after "<|assistant|>" the model writes
    # "\n<think>...</think>" (the prompt holds an empty one with enable_thinking=False), then
    # "\n" and text and/or calls, each "\n<tool_call>NAME\n" with one "<arg_key>K</arg_key>\n
    # <arg_value>V</arg_value>\n" per argument: strings raw, other values JSON (tojson). The
    # turn ends where the next role marker starts.
    "glm4": lambda: AgentFormat(
        name="glm4",
        think_begin="\n<think>",
        think_end="</think>",
        think_suffix="\n",
        call_layout="xml",
        call_begin="<tool_call>",
        name_end="\n",
        param_begin="<arg_key>",
        param_name_end="</arg_key>\n<arg_value>",
        param_end="</arg_value>\n",
        call_end="</tool_call>",
        call_separator="\n",
        block_separator="\n",
        stop=("<|observation|>", "<|user|>"),
        tools_prompt=glm4_tools,
    ),
}
