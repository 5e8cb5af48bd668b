"""A reasoning budget: at most N tokens inside a format's think block, then only its end.

The grammar does not count tokens (as in xgrammar, whose ``any_text.max_tokens`` this is); the
budget is a ``TokenBudget`` that each row's ``Matcher`` keeps beside the grammar, so pass it to
the logits processor: ``GrammarLogitsProcessor(compiled, token_budgets=[reasoning_budget(fmt,
n)], prefix_token_ids=...)``. Where the generation prompt already opened the block (Qwen3-Thinking
ends it with ``<think>\\n``), the prefix tokens the processor accepts first hold the block's
begin, so the budget counts from there, what the prompt wrote of the block included. A
format's ``structural_tag(..., reasoning_budget=n)`` writes the same bound into the tag
(``any_text.max_tokens``), for xgrammar or for ``structural_tag.token_budgets``.

Example:
    >>> from agentgrammar.formats import get
    >>> reasoning_budget(get("qwen3"), 256)
    TokenBudget(begin=b'<think>', ends=(b'</think>',), max_tokens=256)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ..grammar.token_budget import TokenBudget
from ..grammar.token_markers import encode_text

if TYPE_CHECKING:  # pragma: no cover
    from .format import AgentFormat

__all__ = ["reasoning_budget"]


def check_reasoning_budget(max_tokens: Optional[int]) -> Optional[int]:
    """``max_tokens`` as a budget: None, or an int >= 0 (``ValueError`` else)."""
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise ValueError(f"reasoning_budget must be an int >= 0, got {max_tokens!r}")
    return max_tokens


def reasoning_budget(fmt: "AgentFormat", max_tokens: int) -> TokenBudget:
    """The ``TokenBudget`` of ``fmt``'s think block (``think_begin`` .. ``think_end``, in the
    grammar's bytes: a format with token markers spells them so): at most ``max_tokens`` tokens
    inside it. ``ValueError`` for a format without a think block.

    Example:
        >>> from agentgrammar.formats import get
        >>> reasoning_budget(get("hermes"), 8)
        Traceback (most recent call last):
        ...
        ValueError: the format has no think block to budget
    """
    check_reasoning_budget(max_tokens)
    if fmt.think_begin is None or fmt.think_end is None:
        raise ValueError("the format has no think block to budget")
    return TokenBudget(encode_text(fmt.think_begin), (encode_text(fmt.think_end),), max_tokens)
