"""GLM presets: ``glm4`` (GLM-4.6), ``glm4_5`` (GLM-4.5) and ``glm_4_7`` (GLM-4.7, GLM-5)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Sequence

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


# GLM-4.6 and GLM-4.5 write the same turn around the calls: after "<|assistant|>" the model
# writes "\n<think>...</think>" (the prompt holds an empty one with enable_thinking=False), then
# "\n" and text and/or calls, each "\n<tool_call>NAME..." with one key/value pair per argument:
# strings raw, other values JSON (tojson). The turn ends where the next role marker starts.
_GLM: Dict[str, Any] = dict(
    think_begin="\n<think>",
    think_end="</think>",
    think_suffix="\n",
    call_layout="xml",
    call_begin="<tool_call>",
    param_begin="<arg_key>",
    call_end="</tool_call>",
    call_separator="\n",
    block_separator="\n",
    stop=("<|observation|>", "<|user|>"),
    tools_prompt=glm4_tools,
)

PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # GLM-4.6: "<tool_call>NAME\n" then "<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n" per
    # argument, then "</tool_call>".
    "glm4": lambda: AgentFormat(
        name="glm4",
        name_end="\n",
        param_name_end="</arg_key>\n<arg_value>",
        param_end="</arg_value>\n",
        **_GLM,
    ),
    # GLM-4.5 (the kit's copy is llama.cpp's adaptation of its template): no newline after the
    # name nor after each "</arg_value>": "<tool_call>NAME<arg_key>K</arg_key>\n<arg_value>V
    # </arg_value></tool_call>". A layout of its own: glm4's markers end each part differently.
    "glm4_5": lambda: AgentFormat(
        name="glm4_5",
        name_end="",
        param_name_end="</arg_key>\n<arg_value>",
        param_end="</arg_value>",
        **_GLM,
    ),
    # GLM-4.7 / GLM-5: the kit has no template; written from xgrammar 0.2.9's builtin
    # "glm_4_7" tag: "<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>",
    # "<think>...</think>" first. xgrammar's tag also takes whitespace between those parts; this
    # grammar takes the compact form only.
    "glm_4_7": lambda: AgentFormat(
        name="glm_4_7",
        name_end="",
        param_name_end="</arg_key><arg_value>",
        param_end="</arg_value>",
        **{**_GLM, "think_begin": "<think>", "think_suffix": ""},
    ),
}
