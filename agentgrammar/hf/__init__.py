"""Hugging Face ``transformers`` integration: constrain ``generate()`` with a compiled grammar.

Needs the ``[hf]`` extra (``pip install 'agentgrammar[hf]'``). See
:class:`~agentgrammar.hf.GrammarLogitsProcessor`.
"""

from .logits_processor import EarlyMasks, GrammarLogitsProcessor

__all__ = ["EarlyMasks", "GrammarLogitsProcessor"]
