"""Llama presets: ``llama3`` (Llama-3.1 and 3.2, JSON calls) and ``llama4_pythonic`` (Llama-4,
and Llama-3.2 1B/3B prompted for Python-style calls)."""

from __future__ import annotations

import json
from typing import Callable, Dict, Sequence

from ...registry import Tool
from ...registry.openai import tool_to_openai
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


def pythonic_tools(tools: Sequence[Tool]) -> str:
    """The tools and the pythonic call layout, for the system prompt (the layout Llama-4's and
    Llama-3.2's model cards describe: a Python list of calls with keyword arguments).

    Example:
        >>> print(pythonic_tools([]).splitlines()[-1])
        [func_name1(param1=value1, param2=value2), func_name2(...)]
    """
    defs = json.dumps([tool_to_openai(t) for t in tools], ensure_ascii=False, indent=4)
    return (
        "You can call the functions below. To call them, answer with nothing but the calls, as a "
        "Python list of calls with keyword arguments whose values are Python literals; otherwise "
        "answer in text, without calls.\n\n"
        f"Functions (JSON):\n{defs}\n\n"
        "Call format:\n[func_name1(param1=value1, param2=value2), func_name2(...)]"
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
    # Llama-4 (and Llama-3.2 1B/3B with the pythonic prompt): a turn is either text or one Python
    # list of calls, [get_weather(city="Oslo"), now()], then <|eot|> (<|eot_id|> on Llama-3).
    # The kit has no Llama-4 template (nor Llama-3.2's pythonic one, which lives in vLLM's
    # examples): this follows Meta's documented layout and vLLM's llama4_pythonic parser, with
    # values as Python literals (vLLM's example template quotes every value as a string).
    # <|python_start|> ... <|python_end|> around the list, which vLLM strips, is not accepted.
    "llama4_pythonic": lambda: AgentFormat(
        name="llama4_pythonic",
        call_layout="pythonic",
        calls_begin="[",
        calls_end="]",
        call_begin="",
        name_end="(",
        call_end=")",
        call_separator=", ",
        calls_or_text=True,
        block_separator="",
        stop=("<|eot|>", "<|eom|>", "<|eot_id|>", "<|eom_id|>"),
        tools_prompt=pythonic_tools,
    ),
}
