"""Hugging Face ``transformers`` integration: constrain ``generate()`` with a compiled grammar.

Needs the ``[hf]`` extra (``pip install 'agentgrammar[hf]'``). See
:class:`~agentgrammar.hf.GrammarLogitsProcessor`.
"""

from .early_masks import EarlyMasks, early_masks_pay
from .logits_processor import GrammarLogitsProcessor

__all__ = ["EarlyMasks", "GrammarLogitsProcessor", "early_masks_pay"]
