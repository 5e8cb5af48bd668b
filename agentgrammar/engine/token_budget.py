"""Token budgets: at most ``max_tokens`` tokens between a region's begin and its end, then only
the end (xgrammar's ``any_text.max_tokens``; a reasoning budget is one on the think block).

The budget counts tokens, which the grammar does not see: it is kept beside the matcher, on the
bytes of the accepted tokens (``Vocabulary.token_bytes``, token markers in their private
spelling, as the grammar writes them). The region opens where ``begin`` occurs in the output
(``begin=b""``: at its start) and closes at the next occurrence of one of ``ends``; the tokens
accepted inside it are counted, the one that completes ``begin`` not among them. Once
``max_tokens`` are spent, a mask keeps only the tokens that write the rest of an end (or
finish it and go on). Like xgrammar, ``accept_string`` does not spend the budget.

Example:
    >>> from agentgrammar import Vocabulary
    >>> vocab = Vocabulary(["<t>", "a", "</t>", "</", "t>", "</s>"], stop_token_ids=[5])
    >>> tracker = BudgetTracker(vocab, [TokenBudget(b"<t>", (b"</t>",), max_tokens=2)])
    >>> for t in (0, 1, 1):
    ...     tracker.accept(t)
    >>> tracker.allowed_now()  # the budget is spent: only the end
    [2, 3]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..grammar.token_budget import TokenBudget
from .vocabulary import Vocabulary

__all__ = ["BudgetTracker", "TokenBudget"]


@dataclass(frozen=True)
class _State:
    text: bytes  # the output's last bytes (enough to find a begin or an end across tokens)
    inside: Optional[int]  # the budget whose region is open, or None
    used: int  # tokens spent in that region
    done: Tuple[int, ...]  # budgets whose region has closed (each region opens once)


class BudgetTracker:
    """The budgets' state along one output: ``accept`` each token, ``rollback`` as the matcher
    does, and ``restrict`` a mask row while a budget is spent."""

    def __init__(self, vocab: Vocabulary, budgets: Sequence[TokenBudget]) -> None:
        self._tokens = vocab.token_bytes
        self._stops = sorted(vocab.stop_token_ids)
        self._budgets = tuple(budgets)
        longest = max([len(w) for b in self._budgets for w in (b.begin, *b.ends)] or [1])
        self._keep = longest
        start = next((i for i, b in enumerate(self._budgets) if not b.begin), None)
        self._states: List[_State] = [_State(b"", start, 0, ())]
        self._allowed: Dict[Tuple[bytes, ...], List[int]] = {}  # rests of the ends -> token ids

    def accept(self, token: int) -> None:
        """One accepted token: spends the budget of the region it is in."""
        self.accept_bytes(self._tokens[token] if 0 <= token < len(self._tokens) else b"", count=True)

    def accept_bytes(self, data: bytes, *, count: bool = False) -> None:
        """One accepted step of ``data`` (``accept_string``'s text spends no budget)."""
        s = self._states[-1]
        text = s.text + data
        inside, used, done = s.inside, s.used, s.done
        if inside is not None:
            used += int(count)
            if any(text.find(e, max(0, len(s.text) - len(e) + 1)) >= 0 for e in self._budgets[inside].ends):
                inside, used, done = None, 0, (*done, inside)
        else:
            for i, b in enumerate(self._budgets):
                if (
                    i not in done
                    and b.begin
                    and text.find(b.begin, max(0, len(s.text) - len(b.begin) + 1)) >= 0
                ):
                    inside, used = i, 0
                    break
        self._states.append(_State(text[-self._keep :], inside, used, done))

    def rollback(self, n: int) -> None:
        del self._states[max(1, len(self._states) - n) :]

    def reset(self) -> None:
        del self._states[1:]

    def _rests(self) -> Optional[List[bytes]]:
        """The rest of each end still to write when the budget is spent, else None."""
        s = self._states[-1]
        if s.inside is None or s.used < self._budgets[s.inside].max_tokens:
            return None
        rests = []
        for end in self._budgets[s.inside].ends:
            k = next((k for k in range(len(end) - 1, 0, -1) if s.text.endswith(end[:k])), 0)
            rests.append(end[k:])
        return rests

    def allowed_now(self) -> Optional[List[int]]:
        """The token ids a spent budget still allows (None while no budget is spent)."""
        rests = self._rests()
        if rests is None:
            return None
        key = tuple(rests)
        found = self._allowed.get(key)
        if not rests:  # a region without ends: the output ends
            return self._stops
        if found is None:
            tokens = self._tokens
            found = [
                i
                for i, t in enumerate(tokens)
                if t and any(r.startswith(t) or t.startswith(r) for r in rests)
            ]
            self._allowed[key] = found
        return found

    def restrict(self, row: Any) -> bool:
        """Clear from a mask row (int32 words, numpy or torch) every token a spent budget
        forbids; whether it did."""
        allowed = self.allowed_now()
        if allowed is None:
            return False
        bits = np.zeros(len(row) * 32, dtype=np.uint8)
        bits[allowed] = 1
        keep = np.packbits(bits, bitorder="little").view(np.int32)
        if isinstance(row, np.ndarray):
            row &= keep
        else:
            row &= row.new_tensor(keep)
        return True
