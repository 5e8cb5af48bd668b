"""Token-level grammar items the byte automata cannot hold: "exactly one token, any but a set"
(xgrammar's ``exclude_token``; its spelling is in ``grammar/one_token.py``).

The compiler resolves each item's excluded tokens against its vocabulary (an unknown text or id
is a ``GrammarError``, as in xgrammar) into the bitmask of the tokens it allows: every token but
those, the special and the stop tokens. A ``Matcher`` whose grammar holds such items
(``OneTokenItems``) widens each mask by an item's tokens wherever the grammar could go on with
the item's spelling, and accepts a token the bytes reject by advancing over the spelling.

Example:
    >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
    >>> vocab = Vocabulary(["a", "b", "<x>", "</s>"], stop_token_ids=[3])
    >>> g = Grammar.from_structural_tag({"type": "sequence", "elements": [
    ...     {"type": "const_string", "value": "a"}, {"type": "exclude_token", "exclude_tokens": ["<x>"]},
    ...     {"type": "const_string", "value": "a"}]})
    >>> m = Matcher(Compiler(vocab).compile(g))
    >>> m.accept_token(0), m.allowed_token_ids(), m.accept_token(1), m.allowed_token_ids()
    (True, [0, 1], True, [0])
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Tuple

import numpy as np

from ..errors import GrammarError
from ..grammar.one_token import ONE_TOKEN_PREFIX, one_token_items
from ..grammar.token_markers import Marker
from .vocabulary import Vocabulary

__all__ = ["OneTokenItems", "one_token_sets"]


def _ids(vocab: Vocabulary, names: List[Marker]) -> List[int]:
    texts = [n for n in names if isinstance(n, str)]
    found = vocab._ids_of(texts)
    out: List[int] = []
    for n in names:
        if isinstance(n, int):
            if not 0 <= n < vocab.num_tokens:
                raise GrammarError(
                    f"exclude_token names the token id {n}, out of range [0, {vocab.num_tokens})"
                )
            out.append(n)
        elif n in found:
            out += found[n]
        else:
            raise GrammarError(f"exclude_token names {n!r}, which is not one token of the vocabulary")
    return out


def one_token_sets(chunks: Iterable[bytes], vocab: Vocabulary) -> Dict[bytes, np.ndarray]:
    """Each one-token item spelled in ``chunks`` (a grammar's literals) -> the int32 bitmask row
    of the tokens it allows in ``vocab``."""
    items = one_token_items(c for c in chunks if ONE_TOKEN_PREFIX in c)
    if not items:
        return {}
    words = (vocab.vocab_size + 31) // 32
    kinds = np.frombuffer(vocab.token_kinds(), dtype=np.uint8)
    out: Dict[bytes, np.ndarray] = {}
    for spelling, names in items.items():
        bits = np.zeros(words * 32, dtype=np.uint8)
        bits[: len(kinds)] = kinds == 0  # never a special or stop token, nor padding
        bits[_ids(vocab, names)] = 0
        out[spelling] = np.packbits(bits, bitorder="little").view(np.int32)
    return out


def _or_row(row: Any, words: np.ndarray) -> None:
    if isinstance(row, np.ndarray):
        row |= words
    else:  # a torch row
        row |= row.new_tensor(words)


class OneTokenItems:
    """The one-token items of one matcher's grammar, applied through the C matcher's calls
    (the matcher's lock held by the caller)."""

    def __init__(self, sets: Dict[bytes, np.ndarray], lib: Any, handle: Any, flag: Any, err: Any) -> None:
        self._items: List[Tuple[bytes, np.ndarray, np.ndarray]] = [
            (s, w, np.unpackbits(w.view(np.uint8), bitorder="little").astype(bool)) for s, w in sets.items()
        ]
        self._lib, self._handle, self._flag, self._err = lib, handle, flag, err

    def _fits(self, spelling: bytes) -> bool:
        """Whether the grammar could go on with ``spelling`` now (tried, then undone)."""
        lib = self._lib
        if lib.ag_matcher_accept_bytes(self._handle, spelling, len(spelling), self._flag, self._err):
            return False
        if not self._flag[0]:
            return False
        lib.ag_matcher_rollback(self._handle, 1, self._err)
        return True

    def widen(self, row: Any) -> bool:
        """Add to a filled mask row each item's tokens where the item may come next."""
        if self._lib.ag_matcher_is_terminated(self._handle):
            return False
        widened = False
        for spelling, words, _ in self._items:
            if self._fits(spelling):
                _or_row(row, words)
                widened = True
        return widened

    def accept(self, token: int) -> bool:
        """Accept ``token`` as an item that allows it, if the grammar may go on with one."""
        for spelling, _, allowed in self._items:
            if 0 <= token < len(allowed) and allowed[token]:
                status = self._lib.ag_matcher_accept_bytes(
                    self._handle, spelling, len(spelling), self._flag, self._err
                )
                if status == 0 and self._flag[0]:
                    return True
        return False
