"""Llama presets: ``llama3`` (Llama-3.1 and 3.2)."""

from __future__ import annotations

from typing import Callable, Dict, Sequence

from ...registry import Tool
from ..format import AgentFormat
from ._common import openai_json


def llama3_tools(tools: Sequence[Tool]) -> str:
    """The Llama-3.1/3.2 JSON tool-calling instructions, as their chat templates put them in the
    first user message (the templates' own wording and spacing).

    Example:
        >>> llama3_tools([]).startswith("Given the following functions")
        True
    """
    defs = "".join(openai_json(t, indent=4) + "\n\n" for t in tools)
    return (
        "Given the following functions, please respond with a JSON for a function call with its "
        "proper arguments that best answers the given prompt.\n\n"
        'Respond in the format {"name": function name, "parameters": dictionary of argument name '
        "and its value}.Do not use variables.\n\n"
        f"{defs}"
    )


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # Llama-3.1/3.2 (both templates render the same): one call per message (the templates raise
    # for more), as bare JSON; models also write <|python_tag|> first (its ipython mode).
    "llama3": lambda: AgentFormat(
        name="llama3",
        call_begin="",
        call_end="",
        call_begin_variants=("<|python_tag|>",),
        arguments_key="parameters",
        parallel_calls=False,
        calls_or_text=True,
        block_separator="",
        stop=("<|eom_id|>", "<|eot_id|>"),
        tools_prompt=llama3_tools,
    ),
}
