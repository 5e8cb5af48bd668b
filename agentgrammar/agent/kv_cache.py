"""Reusing a conversation's key/value cache from one turn to the next.

Each agent turn renders the whole conversation again, and most of it (the system prompt, the
tools, every earlier turn) is what the model encoded the turn before. ``ConversationCache``
keeps the ``transformers`` cache of the last ``generate()`` and the token ids it holds; the next
turn keeps the longest prefix its prompt shares with those ids, crops the rest away
(``Cache.crop``) and hands the cache to ``generate()`` with the full prompt, so only the tokens
after that prefix are encoded.

The ids are compared, not the text: where the chat template writes an earlier turn back
differently from how the model wrote it (Qwen3 drops earlier reasoning; a tokenizer merges the
generated pieces differently; the stop token the model sampled is not in the cache), reuse stops
at the first differing token. At least the prompt's last token is always encoded, since
``generate()`` needs a forward pass to get the next token's logits.

Example:
    >>> common_prefix_length([1, 2, 3, 4], [1, 2, 9])
    2
    >>> reusable_length([1, 2, 3], [1, 2, 3])   # the last token is always encoded again
    2
"""

from __future__ import annotations

import inspect
from typing import Any, List, Optional, Sequence, Tuple

__all__ = [
    "ConversationCache",
    "cache_kwarg",
    "common_prefix_length",
    "reusable_length",
    "supports_cache_reuse",
]


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def reusable_length(cached: Sequence[int], prompt: Sequence[int]) -> int:
    """How many of the cached positions a prompt can keep: the shared prefix, short of the
    prompt's last token (``generate()`` must encode at least one)."""
    return min(common_prefix_length(cached, prompt), max(len(prompt) - 1, 0))


def supports_cache_reuse(model: Any) -> bool:
    """Whether ``model.generate()`` takes a ``DynamicCache`` to continue from: a decoder-only
    ``transformers`` model that uses the default dynamic cache (not a model with a cache of its
    own, such as Mamba's, nor a generation config that names another cache implementation).

    Example:
        >>> supports_cache_reuse(object())
        False
    """
    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    if not callable(getattr(model, "generate", None)) or not hasattr(model, "prepare_inputs_for_generation"):
        return False
    default_cache = getattr(model, "_supports_default_dynamic_cache", None)
    if callable(default_cache) and not default_cache():
        return False
    generation = getattr(model, "generation_config", None)
    if getattr(generation, "use_cache", True) is False:
        return False
    if getattr(generation, "cache_implementation", None) is not None:
        return False
    try:
        from transformers import DynamicCache  # noqa: F401
    except ImportError:  # pragma: no cover - the agent runs on transformers
        return False
    return True


def cache_kwarg(model: Any) -> str:
    """The ``generate()`` keyword of a cache: ``cache`` (transformers 5.x, where
    ``past_key_values`` is deprecated) or ``past_key_values`` (earlier versions)."""
    try:
        names = inspect.signature(type(model).prepare_inputs_for_generation).parameters
    except (TypeError, ValueError, AttributeError):
        return "past_key_values"
    return "cache" if "cache" in names else "past_key_values"


def new_cache(model: Any) -> Any:
    """An empty ``DynamicCache`` laid out for ``model`` (sliding-window layers where it has them)."""
    from transformers import DynamicCache

    config = getattr(model, "config", None)
    try:
        return DynamicCache(config=config)
    except TypeError:  # older transformers: no config argument
        return DynamicCache()


def crop_to(cache: Any, length: int) -> bool:
    """Crop ``cache`` to its first ``length`` positions; False where it cannot be (a layer that
    keeps only a sliding window past its size, a linear-attention state)."""
    held = int(cache.get_seq_length())
    if length >= held:
        return True
    if getattr(cache, "is_croppable", True) is False:
        return False
    try:
        # a negative count removes that many positions, in every transformers version that has crop
        cache.crop(length - held)
    except (RuntimeError, ValueError, NotImplementedError, AttributeError):
        return False
    return int(cache.get_seq_length()) == length


class ConversationCache:
    """The key/value cache of one conversation (batch size 1) between its turns, and the ids
    of the positions it holds.

    Example (with a model)::

        kv = ConversationCache(model)
        cache, reused = kv.prepare(prompt_ids)   # reused: positions not encoded again
        out = model.generate(input_ids=..., **{kv.kwarg: cache})
        kv.update(out[0].tolist())
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.kwarg = cache_kwarg(model)
        self._cache: Optional[Any] = None
        self._ids: List[int] = []

    @property
    def ids(self) -> List[int]:
        """The token ids whose keys and values the cache holds, in order."""
        return list(self._ids)

    def prepare(self, prompt_ids: Sequence[int]) -> Tuple[Any, int]:
        """The cache to pass with ``prompt_ids`` (cropped to what it shares with them, or a new
        one) and how many of the prompt's positions it already holds."""
        keep = reusable_length(self._ids, prompt_ids) if self._cache is not None else 0
        if keep == 0 or not crop_to(self._cache, keep):
            self._cache, keep = new_cache(self.model), 0
        self._ids = [int(i) for i in prompt_ids[:keep]]
        return self._cache, keep

    def update(self, sequence: Sequence[int]) -> None:
        """Record what the cache holds after ``generate()`` returned ``sequence`` (prompt and
        new tokens; the last token sampled is not encoded, so the cache is shorter)."""
        if self._cache is None:
            return
        held = int(self._cache.get_seq_length())
        self._ids = [int(i) for i in sequence[:held]]
        if len(self._ids) != held:  # the cache holds more than the sequence: not ours to read
            self.clear()

    def clear(self) -> None:
        """Forget the cache (after a ``generate()`` that raised, its state is unknown)."""
        self._cache = None
        self._ids = []
