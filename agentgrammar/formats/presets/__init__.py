"""Preset ``AgentFormat`` s for the model families people serve, and their tool prompts. Each
preset renders an assistant turn as the family's official chat template does, and its grammar
and parser also accept the other forms the family's models and servers write.

========================  =================================================================
``"hermes"``              Qwen-2.5 / Hermes: ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``
``"qwen3"``               ``<think>...</think>\\n\\n`` then the Hermes calls
``"qwen3_coder"``         Qwen3-Coder XML calls: ``<function=NAME><parameter=KEY>VALUE</parameter>``
``"llama3"``              Llama-3.1/3.2: one bare ``{"name": ..., "parameters": ...}`` (``<|python_tag|>``
                          optional before it), or text
``"deepseek_r1"``         ``<think>`` then ``<｜tool▁calls▁begin｜>`` ... calls with fenced JSON
``"deepseek_v3_1"``       DeepSeek-V3.1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}``
                          ``<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>``, ``<think>`` with ``thinking``
``"deepseek_v3_2"``       DeepSeek-V3.2 DSML: ``\\n\\n<｜DSML｜function_calls>\\n<｜DSML｜invoke name="NAME">\\n``
                          ``<｜DSML｜parameter name="K" string="true">V</｜DSML｜parameter>\\n`` ...
``"deepseek_v4"``         DeepSeek-V4 (xgrammar's tag): the same in ``<｜DSML｜tool_calls>``
``"deepseek_v4_1"``       DeepSeek-V4.1 (xgrammar's tag): ``<｜DSML｜ calls>``, ``<｜DSML｜ invoke`` ...
``"glm4"``                GLM-4.6: ``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>``
``"glm4_5"``              GLM-4.5: ``<tool_call>NAME<arg_key>K</arg_key>\\n<arg_value>V</arg_value></tool_call>``
``"glm_4_7"``             GLM-4.7 / 5 (xgrammar's tag): ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>``
``"kimi_k2"``             Kimi-K2-Instruct: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX``
                          ``<|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>``
``"kimi_k2_thinking"``    Kimi-K2-Thinking / K2.5: ``<think>...</think>`` then the Kimi-K2 calls
``"minimax_m2"``          MiniMax-M2: ``<think>`` then ``\\n<minimax:tool_call>\\n<invoke name="NAME">\\n``
                          ``<parameter name="K">V</parameter>\\n</invoke>\\n</minimax:tool_call>``
``"mistral"``             Mistral-Nemo (v3-tekken): ``[TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}]``
``"mistral_v7"``          Mistral-Small-3.1 (v7): the same after ``[TOOL_CALLS] `` (a space)
``"mistral_small_3_2"``   Mistral-Small-3.2: ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` per call
``"mistral_v11"``         Mistral v11+ tokenizers (Magistral, Devstral): ``[TOOL_CALLS]NAME[ARGS]{...}`` per call
``"llama4_pythonic"``     Llama-4 (alias ``"pythonic"``): ``[get_weather(city="Oslo"), now()]``, or text
``"qwen3_5"``             Qwen3.5 (alias ``"qwen_3_5"``): ``<think>`` then the Qwen3-Coder XML calls
``"mimo"``                MiMo: ``<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>``
``"exaone"``              EXAONE-4.0: ``<think>...</think>\n\n``, ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``
``"harmony"``             gpt-oss: analysis, a ``functions.NAME`` commentary call, or final
``"tags"``                plain ``<think>``, ``<tool_call>{...}</tool_call>``, ``<response>``
``"gemma_4"``             Gemma 4 (xgrammar's tag): ``<|tool_call>call:NAME{key:<|"|>V<|"|>,n:1}<tool_call|>``
``"cohere"``              Cohere (xgrammar's tag): ``<cofl:tool_calls><cofl:tool_call id="N" name="NAME">``
                          ``<cofl:value name="K" type="raw">V</cofl:value>...</cofl:tool_call></cofl:tool_calls>``
``"kimi_k3"``             Kimi-K3 (xgrammar's tag): ``<|open|>response<|sep|>...<|close|>response<|sep|>``, then
                          ``<|open|>call tool="NAME" index="N"<|sep|><|open|>argument key="K" type="T"<|sep|>V...``
``"minimax_m3"``          MiniMax-M3 (xgrammar's tag): ``]<]minimax[>[<invoke name="NAME">]<]minimax[>[<K>V]<]minimax[>[</K>``
========================  =================================================================

xgrammar's model keys (``get_model_structural_tag``) name presets too: ``get("qwen_3")`` is
``get("qwen3")``. ``aliases()`` lists those whose names differ (``llama``, ``qwen_3``,
``qwen_3_coder``, ``qwen_3_5``, ``kimi``: ``kimi_k2_thinking``, ``minimax``: ``minimax_m2``, and
``pythonic``); ``harmony``, ``deepseek_r1``, ``deepseek_v3_1``, ``deepseek_v3_2``, ``deepseek_v4``,
``deepseek_v4_1``, ``glm_4_7``, ``mimo``, ``exaone``, ``gemma_4``, ``cohere``, ``kimi_k3`` and
``minimax_m3`` are preset names: every key names a preset. ``names()`` lists the canonical names
only.

Markers that are tokens of the family's own vocabulary (``<tool_call>``, ``<|python_tag|>``, the
Harmony markers, DeepSeek's ``<｜...｜>`` markers, Mistral's ``[TOOL_CALLS]``) are written as
exactly those tokens by the grammar of ``token_markers.with_token_markers(fmt, markers)`` over
``vocab.with_token_markers(markers)`` (``agentgrammar.Agent`` does this). Other special tokens
stay out of every grammar.

Example:
    >>> from agentgrammar.formats import get, names
    >>> "qwen3" in names()
    True
    >>> get("qwen3").think_begin, get("qwen3").trigger
    ('<think>', '<tool_call>')
    >>> get("minimax") is get("minimax_m2")
    True
"""

from __future__ import annotations

from typing import Callable, Dict, List

from ..format import AgentFormat
from . import cohere, deepseek, exaone, gemma, glm, harmony, kimi, llama, mimo, minimax, mistral, qwen, tags
from .aliases import ALIASES

__all__ = ["aliases", "get", "names"]

# One module per family; the order here is the order of ``names()``.
_FACTORIES: Dict[str, Callable[[], AgentFormat]] = {
    **qwen.PRESETS,
    **llama.PRESETS,
    **deepseek.PRESETS,
    **glm.PRESETS,
    **kimi.PRESETS,
    **minimax.PRESETS,
    **mistral.PRESETS,
    **harmony.PRESETS,
    **tags.PRESETS,
    **mimo.PRESETS,
    **exaone.PRESETS,
    **gemma.PRESETS,
    **cohere.PRESETS,
}

_PRESETS: Dict[str, AgentFormat] = {}


def names() -> List[str]:
    """The preset names.

    Example:
        >>> names()[:3]
        ['hermes', 'qwen3', 'qwen3_coder']
    """
    return list(_FACTORIES)


def aliases() -> Dict[str, str]:
    """Other names ``get`` takes, each with the preset it names.

    Example:
        >>> aliases()["minimax"]
        'minimax_m2'
    """
    return dict(ALIASES)


def get(name: str) -> AgentFormat:
    """The preset format ``name``, or the one an alias names (an xgrammar model key such as
    ``"qwen_3"``, or ``"pythonic"``; see ``aliases()``): the same object on every call (formats
    are immutable, and ``dataclasses.replace(get(name), ...)`` makes a variant). ``ValueError``
    for an unknown name.

    Example:
        >>> get("llama3").arguments_key
        'parameters'
        >>> get("qwen_3") is get("qwen3"), get("kimi").name
        (True, 'kimi_k2_thinking')
    """
    name = ALIASES.get(name, name) if isinstance(name, str) and name not in _FACTORIES else name
    found = _PRESETS.get(name)
    if found is None:
        factory = _FACTORIES.get(name)
        if factory is None:
            raise ValueError(
                f"unknown format {name!r}; the presets are {', '.join(map(repr, _FACTORIES))} "
                f"(aliases: {', '.join(map(repr, ALIASES))})"
            )
        found = _PRESETS[name] = factory()
    return found
