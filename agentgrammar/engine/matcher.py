"""The matcher: follows one sequence token by token and says which tokens may come next.

Example:
    >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
    >>> vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    >>> matcher = Matcher(Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+ "b"')))
    >>> matcher.accept_token(0), matcher.accept_token(1)
    (True, True)
    >>> matcher.is_completed(), matcher.accept_token(3), matcher.is_terminated()
    (True, True, True)
"""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Sequence, Union

from ..errors import MatcherError, TokenIdError
from ._native import ffi, lib, new_error, raise_error
from .bitmask import bitmask_row_pointer
from .compiler import CompiledGrammar

__all__ = ["Matcher"]

_JUMP_FORWARD_CAP = 1 << 16


def _utf8_prefix(data: bytes) -> str:
    """The longest prefix of ``data`` that is complete UTF-8, decoded."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", "ignore")


def _int32(value: Any, what: str, limit: int) -> int:
    """``value`` as an int that fits the C core's int32 arguments, else ``TokenIdError``."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TokenIdError(f"{what} must be an integer, got {value!r}") from None
    if not -(2**31) <= n < 2**31:
        raise TokenIdError(f"{what} {n} is out of range [0, {limit})")
    return n


class Matcher:
    """Tracks one sequence through a compiled grammar.

    ``stop_token_ids`` overrides the vocabulary's stop tokens; stop tokens are allowed
    exactly when the grammar can end, and accepting one terminates the matcher. With
    ``terminate_without_stop_token=True`` the matcher terminates as soon as the grammar
    is complete. Every accepted step can be undone with :meth:`rollback`.
    ``mask_time_budget_s`` bounds each mask fill: past it the fill raises
    :class:`~agentgrammar.errors.MaskTimeoutError` and the matcher is unchanged, so one
    pathological grammar cannot stall a serving batch (default: no bound).
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        *,
        stop_token_ids: Optional[Sequence[int]] = None,
        terminate_without_stop_token: bool = False,
        mask_time_budget_s: Optional[float] = None,
    ) -> None:
        if not isinstance(compiled, CompiledGrammar):
            raise TypeError(f"Matcher needs a CompiledGrammar, got {type(compiled).__name__}")
        self._compiled = compiled
        self._vocab_size = compiled.vocabulary.vocab_size
        n_tokens = compiled.vocabulary.num_tokens
        stops = None
        if stop_token_ids is not None:
            # the C core refuses ids past the tokens (model padding is never allowed)
            stops = [_int32(t, "stop token id", n_tokens) for t in stop_token_ids]
        out = ffi.new("ag_matcher **")
        err = new_error()
        ids = ffi.new("int32_t[]", stops or [0]) if stops is not None else ffi.NULL
        status = lib.ag_matcher_new(
            compiled._handle,
            ids,
            -1 if stops is None else len(stops),
            int(terminate_without_stop_token),
            out,
            err,
        )
        if status != lib.AG_OK:
            raise_error(status, err, MatcherError)
        self._handle = ffi.gc(out[0], lib.ag_matcher_free)
        if mask_time_budget_s is not None:
            if not mask_time_budget_s > 0:
                raise ValueError(f"mask_time_budget_s must be positive, got {mask_time_budget_s!r}")
            lib.ag_matcher_set_time_budget(self._handle, float(mask_time_budget_s))
        self._err = new_error()
        self._flag = ffi.new("int *")

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        """The compiled grammar this matcher follows."""
        return self._compiled

    def _check(self, status: int) -> None:
        if status != lib.AG_OK:
            raise_error(status, self._err, MatcherError)

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token. Returns False (state unchanged) if the grammar rejects it.

        Raises TokenIdError for an id outside the vocabulary and MatcherError after termination.
        """
        token = _int32(token_id, "token id", self._vocab_size)
        self._check(lib.ag_matcher_accept_token(self._handle, token, self._flag, self._err))
        return bool(self._flag[0])

    def accept_tokens(self, token_ids: Sequence[int]) -> bool:
        """Accept tokens in order; stops at (and returns False on) the first rejected one."""
        return all(self.accept_token(t) for t in token_ids)

    def accept_string(self, text: Union[str, bytes]) -> bool:
        """Advance by raw text (one rollback step). Returns False (state unchanged) if rejected."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        self._check(lib.ag_matcher_accept_bytes(self._handle, data, len(data), self._flag, self._err))
        return bool(self._flag[0])

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> bool:
        """Write the allowed next tokens into row ``index`` of ``bitmask``.

        Returns True when the mask needs applying (some token is disallowed).
        """
        mask, words = bitmask_row_pointer(bitmask, index, self._vocab_size)
        self._check(lib.ag_matcher_fill_mask(self._handle, mask, words, self._flag, self._err))
        return not self._flag[0]

    def _fill_next_token_bitmask_direct(self, bitmask: Any, index: int = 0) -> bool:
        """The same mask computed without caches, every token run through the parser.

        Slow; the oracle that tests compare the cached path against.
        """
        mask, words = bitmask_row_pointer(bitmask, index, self._vocab_size)
        self._check(lib.ag_matcher_fill_mask_direct(self._handle, mask, words, self._flag, self._err))
        return not self._flag[0]

    def allowed_token_ids(self) -> List[int]:
        """The ids of every token allowed next (handy in tests and debugging)."""
        import numpy as np

        from .bitmask import bitmask_words

        mask = np.zeros((1, bitmask_words(self._vocab_size)), dtype=np.int32)
        self.fill_next_token_bitmask(mask)
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[: self._vocab_size]
        return np.flatnonzero(bits).tolist()

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted steps (tokens, strings or a stop token)."""
        steps = _int32(num_tokens, "rollback count", self.num_accepted_steps + 1)
        self._check(lib.ag_matcher_rollback(self._handle, steps, self._err))

    @property
    def num_accepted_steps(self) -> int:
        """How many steps can be rolled back."""
        return int(lib.ag_matcher_num_steps(self._handle))

    def is_completed(self) -> bool:
        """True when the text so far is a complete sentence of the grammar."""
        return bool(lib.ag_matcher_can_end(self._handle))

    def is_terminated(self) -> bool:
        """True once a stop token was accepted (or the grammar completed, with
        ``terminate_without_stop_token``)."""
        return bool(lib.ag_matcher_is_terminated(self._handle))

    def find_jump_forward_bytes(self) -> bytes:
        """The bytes every continuation must start with (empty when there is a choice)."""
        buf = ffi.new("uint8_t[]", _JUMP_FORWARD_CAP)
        n = ffi.new("size_t *")
        self._check(lib.ag_matcher_jump_forward(self._handle, buf, _JUMP_FORWARD_CAP, n, self._err))
        return bytes(ffi.buffer(buf, n[0]))

    def find_jump_forward_string(self) -> str:
        """The forced continuation as text, cut to whole UTF-8 characters."""
        return _utf8_prefix(self.find_jump_forward_bytes())

    def reset(self) -> None:
        """Return to the start of the grammar."""
        lib.ag_matcher_reset(self._handle)

    def __repr__(self) -> str:
        state = "terminated" if self.is_terminated() else "completed" if self.is_completed() else "running"
        return f"<Matcher {state} steps={self.num_accepted_steps}>"
