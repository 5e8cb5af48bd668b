"""Other names of presets: xgrammar 0.2.9's ``get_model_structural_tag`` keys whose layout is
one of ours under another name, and ``pythonic``. ``presets.get`` resolves them; ``names()``
lists only the presets themselves.

The xgrammar keys that name a preset as they are (``harmony``, ``deepseek_r1``,
``deepseek_v3_1``, ``deepseek_v3_2``, ``deepseek_v4``, ``deepseek_v4_1``, ``glm_4_7``, ``mimo``,
``exaone``, ``gemma_4``, ``cohere``, ``kimi_k3``, ``minimax_m3``) need no entry.

Example:
    >>> ALIASES["qwen_3"]
    'qwen3'
"""

from __future__ import annotations

from typing import Dict

ALIASES: Dict[str, str] = {
    # xgrammar's llama tag also triggers calls in free text and takes several; llama3 follows
    # the Llama-3.1/3.2 templates: one call or text (docs/models.md)
    "llama": "llama3",
    "qwen_3": "qwen3",
    # xgrammar's qwen_3_coder tag is its qwen_3_5 tag (a think block first); the Qwen3-Coder
    # models write none, which is xgrammar's tag with reasoning="disabled"
    "qwen_3_coder": "qwen3_coder",
    "qwen_3_5": "qwen3_5",
    "pythonic": "llama4_pythonic",
    # xgrammar's kimi tag has K2's calls after an optional "<think>" block (K2-Thinking, K2.5);
    # with reasoning="disabled" it is K2-Instruct's layout
    "kimi": "kimi_k2_thinking",
    "minimax": "minimax_m2",
}
