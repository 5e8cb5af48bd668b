"""``TokenBudget``: at most so many tokens in a region of the output (xgrammar's
``any_text.max_tokens``; a reasoning budget is one on the think block). The grammar layer
describes the region; the engine's ``BudgetTracker`` (``engine/token_budget.py``) enforces it.

Example:
    >>> TokenBudget(b"<think>", (b"</think>",), max_tokens=128).max_tokens
    128
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

__all__ = ["TokenBudget"]


@dataclass(frozen=True)
class TokenBudget:
    """At most ``max_tokens`` tokens after ``begin`` before one of ``ends`` (grammar bytes); with
    no ends (a tag whose end is ``""``), before the end of the output: once spent, only a stop
    token."""

    begin: bytes
    ends: Tuple[bytes, ...]
    max_tokens: int

    def __post_init__(self) -> None:
        if not all(self.ends):  # no ends at all: the region runs to the end of the output
            raise ValueError("a token budget's end strings must be non-empty")
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")
