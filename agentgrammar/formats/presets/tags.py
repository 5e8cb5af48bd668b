"""The plain ``tags`` preset: ``<think>``, ``<tool_call>{...}</tool_call>``, ``<response>``."""

from __future__ import annotations

from typing import Callable, Dict, Sequence

from ...registry import Tool
from ..format import AgentFormat
from ._common import openai_json


def tags_tools(tools: Sequence[Tool]) -> str:
    """Tools and layout instructions for the plain ``tags`` format.

    Example:
        >>> "<response>" in tags_tools([])
        True
    """
    lines = "\n".join(openai_json(t) for t in tools)
    return (
        "# Tools\n\nYou may call these tools; their definitions, one JSON object per line:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "Answer in this layout: first think inside <think>...</think>; then either call tools, "
        'one per line as <tool_call>{"name": <tool-name>, "arguments": <arguments-json-object>}'
        "</tool_call>, or give your answer inside <response>...</response>."
    )


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    "tags": lambda: AgentFormat(
        name="tags",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n",
        call_begin="<tool_call>",
        call_end="</tool_call>",
        call_separator="\n",
        response_begin="<response>",
        response_end="</response>",
        block_separator="\n",
        tools_prompt=tags_tools,
    ),
}
