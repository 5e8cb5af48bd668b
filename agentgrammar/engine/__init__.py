"""The engine layer: vocabularies, compilation, matching and token bitmasks over the C core."""

from .batch import BatchMatcher, batch_fill_next_token_bitmask
from .bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from .compiler import CompiledGrammar, Compiler, MaskCacheStats
from .matcher import Matcher
from .vocabulary import Vocabulary

__all__ = [
    "BatchMatcher",
    "CompiledGrammar",
    "Compiler",
    "MaskCacheStats",
    "Matcher",
    "Vocabulary",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "batch_fill_next_token_bitmask",
]
