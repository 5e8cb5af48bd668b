"""Mistral presets: ``mistral`` (Nemo, v3-tekken), ``mistral_v7`` (Small-3.1),
``mistral_small_3_2`` and ``mistral_v11`` (the v11+ tokenizers' ``[TOOL_CALLS]NAME[ARGS]{...}``)."""

from __future__ import annotations

import json
from typing import Callable, Dict, Sequence

from ...registry import Tool
from ...registry.openai import tool_to_openai
from ..format import AgentFormat


def mistral_tools(tools: Sequence[Tool]) -> str:
    """Mistral's ``[AVAILABLE_TOOLS]`` block.

    Example:
        >>> mistral_tools([])
        '[AVAILABLE_TOOLS][][/AVAILABLE_TOOLS]'
    """
    return (
        "[AVAILABLE_TOOLS]"
        + json.dumps([tool_to_openai(t) for t in tools], ensure_ascii=False)
        + "[/AVAILABLE_TOOLS]"
    )


def mistral_v7_tools(tools: Sequence[Tool]) -> str:
    """Mistral-Small-3.1's (v7) ``[AVAILABLE_TOOLS]`` block: a space before the list.

    Example:
        >>> mistral_v7_tools([])
        '[AVAILABLE_TOOLS] [][/AVAILABLE_TOOLS]'
    """
    return mistral_tools(tools).replace("[AVAILABLE_TOOLS]", "[AVAILABLE_TOOLS] ", 1)


# Mistral's JSON calls (Nemo v3-tekken, Small-3.1 v7): "[TOOL_CALLS]" then a JSON list of
# {"name", "arguments", "id"} objects, the id 9 letters and digits (the templates raise for
# others). Either spacing after [TOOL_CALLS] is accepted; each preset renders its own.
_MISTRAL_COMMON = dict(
    calls_end="]",
    trigger="[TOOL_CALLS]",
    call_begin="",
    call_end="",
    call_separator=", ",
    block_separator="",
    id_key="id",
    call_id_length=9,
    stop=("</s>",),
    tools_prompt=mistral_tools,
)
_MISTRAL = dict(calls_begin_variants=("[TOOL_CALLS] [",), **_MISTRAL_COMMON)
_MISTRAL_V7 = dict(calls_begin_variants=("[TOOL_CALLS][",), **_MISTRAL_COMMON)


# Mistral's v11+ calls (mistral-common tokenizer v11 and later): each call is its own
# [TOOL_CALLS]NAME[ARGS]{...}, the calls back to back, optional free text before them.
_NAME_ARGS = dict(
    call_layout="name_then_json",
    call_begin="[TOOL_CALLS]",
    name_end="[ARGS]",
    call_end="",
    call_separator="",
    block_separator="",
    stop=("</s>",),
    tools_prompt=mistral_tools,
)


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # Mistral-Nemo (v3-tekken): "[TOOL_CALLS][" then the calls, each with its 9-character id.
    "mistral": lambda: AgentFormat(name="mistral", calls_begin="[TOOL_CALLS][", **_MISTRAL),  # type: ignore[arg-type]
    # Mistral-Small-3.1 (v7): a space after [TOOL_CALLS] (and after [AVAILABLE_TOOLS]).
    "mistral_v7": lambda: AgentFormat(
        name="mistral_v7",
        calls_begin="[TOOL_CALLS] [",
        **{**_MISTRAL_V7, "tools_prompt": mistral_v7_tools},  # type: ignore[arg-type]
    ),
    # Mistral-Small-3.2's template writes each call as [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...},
    # back to back; the id (9 letters and digits) is optional to the grammar.
    "mistral_small_3_2": lambda: AgentFormat(
        name="mistral_small_3_2",
        id_begin="[CALL_ID]",
        call_id_length=9,
        **_NAME_ARGS,  # type: ignore[arg-type]
    ),
    # What v11+ models write when they call (Magistral, Devstral, Ministral, Small-3.2):
    # [TOOL_CALLS]NAME[ARGS]{...} per call, back to back, after optional text; no id (vLLM's
    # parser makes one). mistral_small_3_2's grammar takes these and an optional [CALL_ID];
    # this one writes and reads no id, and its ids for the history (new_call_id) are still
    # Mistral's 9 letters and digits, which the templates check.
    "mistral_v11": lambda: AgentFormat(name="mistral_v11", call_id_length=9, **_NAME_ARGS),  # type: ignore[arg-type]
}
