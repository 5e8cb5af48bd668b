"""Other names of presets: xgrammar 0.2.9's ``get_model_structural_tag`` keys whose layout is
one of ours (where the names differ), and ``pythonic``. ``presets.get`` resolves them; ``names()``
lists only the presets themselves.

The xgrammar keys that name a preset as they are (``harmony``, ``deepseek_r1``,
``deepseek_v3_1``, ``mimo``, ``exaone``) need no entry. ``gemma_4`` and ``cohere`` have no preset:
their arguments are neither JSON nor the xml layout (Gemma 4's unquoted keys and ``<|"|>``
strings, Cohere's typed ``<cofl:value>`` elements).

Example:
    >>> _ALIASES_B["qwen_3"]
    'qwen3'
"""

from __future__ import annotations

from typing import Dict

_ALIASES_B: Dict[str, str] = {
    # xgrammar's llama tag also triggers calls in free text and takes several; llama3 follows
    # the Llama-3.1/3.2 templates: one call or text (docs/models.md)
    "llama": "llama3",
    "qwen_3": "qwen3",
    # xgrammar's qwen_3_coder tag is its qwen_3_5 tag (a think block first); the Qwen3-Coder
    # models write none, which is xgrammar's tag with reasoning="disabled"
    "qwen_3_coder": "qwen3_coder",
    "qwen_3_5": "qwen3_5",
    "pythonic": "llama4_pythonic",
}
