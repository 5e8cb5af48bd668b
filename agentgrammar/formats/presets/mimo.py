"""Xiaomi MiMo preset: ``mimo`` (MiMo-V2.6).

Written from the layout xgrammar 0.2.9's builtin ``mimo`` tag constrains to: the model kit has no
MiMo template or tokenizer. MiMo writes Qwen3-Coder's XML calls without their newlines,
``<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>``, strings
raw and other values as JSON, after an optional ``<think>...</think>`` block.
"""

from __future__ import annotations

from typing import Callable, Dict

from ..format import AgentFormat
from .qwen import qwen3_coder_tools

PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # After the think block the calls follow directly, back to back, or after text (xgrammar's
    # tag triggers them anywhere in free text, as this grammar does).
    "mimo": lambda: AgentFormat(
        name="mimo",
        think_begin="<think>",
        think_end="</think>",
        call_layout="xml",
        call_begin="<tool_call><function=",
        name_end=">",
        param_begin="<parameter=",
        param_name_end=">",
        param_end="</parameter>",
        call_end="</function></tool_call>",
        trigger="<tool_call>",
        call_separator="",
        block_separator="",
        stop=("<|im_end|>",),
        tools_prompt=qwen3_coder_tools,
    ),
}
