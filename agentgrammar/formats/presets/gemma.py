"""Gemma preset: ``gemma_4`` (Gemma 4). The kit has no Gemma 4 template: written from xgrammar
0.2.9's builtin ``gemma_4`` tag (``get_model_structural_tag("gemma_4", ...)``), which follows
Google's Gemma 4 prompt-formatting page."""

from __future__ import annotations

from typing import Callable, Dict

from ..format import AgentFormat

PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # Reasoning in the thought channel "<|channel>thought\n...<channel|>" (the generation prompt
    # does not open it), then free text and calls, each "<|tool_call>call:NAME{ARGS}<tool_call|>"
    # with the arguments in xgrammar's "gemma" style (bare keys, strings between <|"|>), calls
    # back to back; the turn ends at "<turn|>" (and "<|tool_response>", the template's halt
    # after a call). Argument strings never hold the control markers, as in xgrammar's tag. The
    # tools block is the generic one (no Gemma 4 declaration layout is in the kit).
    "gemma_4": lambda: AgentFormat(
        name="gemma_4",
        think_begin="<|channel>thought\n",
        think_end="<channel|>",
        call_layout="styled",
        max_whitespace=4,  # between argument elements (xgrammar: any); no loops in whitespace
        argument_style="gemma",
        argument_excludes=("<|tool_call>", "<tool_call|>", "<|channel>", "<channel|>"),
        call_begin="<|tool_call>call:",
        name_end="",
        call_end="<tool_call|>",
        trigger="<|tool_call>",
        call_separator="",
        block_separator="",
        stop=("<turn|>", "<|tool_response>"),
    ),
}
