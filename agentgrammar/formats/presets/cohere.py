"""Cohere preset: ``cohere`` (Cohere Command models with XML tool calls). The kit has no
template for it: written from xgrammar 0.2.9's builtin ``cohere`` tag
(``get_model_structural_tag("cohere", ...)``)."""

from __future__ import annotations

from typing import Callable, Dict

from ..format import AgentFormat

PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # "<|START_THINKING|>...<|END_THINKING|>" (the generation prompt opens it when reasoning
    # is on), then free text and one "<cofl:tool_calls>" block: per call
    # '<cofl:tool_call id="N" name="NAME">' (N, the call's index, is its id), the arguments in
    # xgrammar's "cohere_xml" style ('<cofl:value name="K" type="raw">V</cofl:value>', typed
    # json / dict / list values nested as elements), "</cofl:tool_call>"; then
    # "</cofl:tool_calls>". The tools block is the generic one.
    "cohere": lambda: AgentFormat(
        name="cohere",
        think_begin="<|START_THINKING|>",
        think_end="<|END_THINKING|>",
        call_layout="styled",
        max_whitespace=4,  # between argument elements (xgrammar: any); no loops in whitespace
        argument_style="cohere_xml",
        calls_begin="<cofl:tool_calls>",
        calls_end="</cofl:tool_calls>",
        call_begin='<cofl:tool_call id="',
        call_index='{index}" name="{name}',
        name_end='">',
        call_end="</cofl:tool_call>",
        call_separator="",
        block_separator="",
        stop=("<|END_OF_TURN_TOKEN|>",),
    ),
}
