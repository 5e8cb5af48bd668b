"""MiniMax presets: ``minimax_m2`` (MiniMax-M2, M2.5), written from the kit's
``minimax-m2.jinja``; ``minimax_m3`` (MiniMax-M3), for which the kit has no template, written
from xgrammar 0.2.9's builtin ``minimax_m3`` tag (``get_model_structural_tag``)."""

from __future__ import annotations

import json
from typing import Callable, Dict, Sequence

from ...registry import Tool
from ...registry.openai import tool_to_openai
from ..format import AgentFormat


def minimax_tools(tools: Sequence[Tool]) -> str:
    """MiniMax-M2's tools section, as its chat template writes it in the system message.

    Example:
        >>> print(minimax_tools([]).splitlines()[0])
        # Tools
    """
    lines = "".join(
        f"<tool>{json.dumps(tool_to_openai(t)['function'], ensure_ascii=False)}</tool>\n" for t in tools
    )
    return (
        "# Tools\nYou may call one or more tools to assist with the user query.\n"
        f"Here are the tools available in JSONSchema format:\n\n<tools>\n{lines}</tools>\n\n"
        "When making tool calls, use XML format to invoke tools and pass parameters:\n\n"
        '<minimax:tool_call>\n<invoke name="tool-name-1">\n'
        '<parameter name="param-key-1">param-value-1</parameter>\n'
        '<parameter name="param-key-2">param-value-2</parameter>\n...\n</invoke>\n</minimax:tool_call>'
    )


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # MiniMax-M2: the generation prompt "]~b]ai\n<think>\n" opens the reasoning; the model
    # writes it, "\n</think>\n\n", the content, then "\n<minimax:tool_call>\n", one
    # '<invoke name="NAME">\n' per call with one '<parameter name="K">V</parameter>\n' per
    # argument (strings raw, other values JSON) and "</invoke>\n", then "</minimax:tool_call>"
    # and the turn's end "[e~[". The grammar also takes the block without the "\n" before it
    # (xgrammar's trigger).
    "minimax_m2": lambda: AgentFormat(
        name="minimax_m2",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        block_pad="\n",
        call_layout="xml",
        calls_begin="\n<minimax:tool_call>\n",
        calls_begin_variants=("<minimax:tool_call>\n",),
        calls_end="</minimax:tool_call>",
        call_begin='<invoke name="',
        name_end='">\n',
        param_begin='<parameter name="',
        param_name_end='">',
        param_end="</parameter>\n",
        call_end="</invoke>\n",
        call_separator="",
        block_separator="",
        stop=("[e~[",),
        tools_prompt=minimax_tools,
    ),
    # MiniMax-M3: "<mm:think>...</mm:think>" (the generation prompt opens it with reasoning
    # on), then free text and one "]<]minimax[>[<tool_call>\n" block: per call
    # ']<]minimax[>[<invoke name="NAME">', the arguments in xgrammar's "minimax_m3_xml" style
    # (']<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>', objects and arrays nested as elements),
    # ']<]minimax[>[</invoke>\n'; then "]<]minimax[>[</tool_call>". The tools block is the
    # generic one (M2's describes M2's layout).
    "minimax_m3": lambda: AgentFormat(
        name="minimax_m3",
        think_begin="<mm:think>",
        think_end="</mm:think>",
        call_layout="styled",
        max_whitespace=4,  # between argument elements (xgrammar: any); no loops in whitespace
        argument_style="minimax_m3_xml",
        trigger="]<]minimax[>[<tool_call>",
        calls_begin="]<]minimax[>[<tool_call>\n",
        calls_end="]<]minimax[>[</tool_call>",
        call_begin=']<]minimax[>[<invoke name="',
        name_end='">',
        call_end="]<]minimax[>[</invoke>\n",
        call_separator="",
        block_separator="",
    ),
}
