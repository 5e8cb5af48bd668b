"""LG EXAONE preset: ``exaone`` (EXAONE-4.0).

Written from the layout xgrammar 0.2.9's builtin ``exaone`` tag constrains to: the model kit has
no EXAONE template or tokenizer. EXAONE-4.0 writes Hermes-style JSON calls without the newlines
inside the tags, ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, after an optional
``<think>...</think>\\n\\n`` block.
"""

from __future__ import annotations

from typing import Callable, Dict

from ..format import AgentFormat
from .qwen import hermes_tools

PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # The calls follow one another directly or after text (xgrammar triggers them anywhere in
    # free text); the turn ends with [|endofturn|].
    "exaone": lambda: AgentFormat(
        name="exaone",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        call_begin="<tool_call>",
        call_end="</tool_call>",
        call_separator="",
        block_separator="",
        stop=("[|endofturn|]",),
        tools_prompt=hermes_tools,
    ),
}
