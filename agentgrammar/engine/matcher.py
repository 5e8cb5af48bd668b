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
import threading
from typing import Any, List, Optional, Sequence, Union

from ..errors import MatcherError, TokenIdError
from ..grammar.one_token import ONE_TOKEN_PREFIX
from ._native import ffi, lib, new_error, raise_error
from .bitmask import NO_ROW, bitmask_row_pointer, remember_row, same_row
from .compiler import CompiledGrammar
from .token_budget import BudgetTracker, TokenBudget
from .token_items import OneTokenItems

__all__ = ["Matcher"]

_JUMP_FORWARD_CAP = 1 << 16

# The two calls of every decoding step, bound once: a lookup on ``lib`` per call costs about
# as much as the matcher's lock.
_accept_token = lib.ag_matcher_accept_token
_fill_mask = lib.ag_matcher_fill_mask


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


def _budget(value: Optional[float], name: str) -> float:
    """A time budget in seconds for the C core: 0 for none, else a positive number."""
    if value is None:
        return 0.0
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return float(value)


class Matcher:
    """Tracks one sequence through a compiled grammar.

    ``stop_token_ids`` overrides the vocabulary's stop tokens; stop tokens are allowed
    exactly when the grammar can end, and accepting one terminates the matcher. With
    ``terminate_without_stop_token=True`` the matcher terminates as soon as the grammar
    is complete. Every accepted step can be undone with :meth:`rollback`.

    Time budgets (default: none), so that one pathological grammar cannot stall a serving
    batch: ``mask_time_budget_s`` bounds each mask fill (and a jump-forward search, which then
    returns the forced prefix found so far); ``accept_time_budget_s`` bounds each
    :meth:`accept_token` / :meth:`accept_string` (a highly ambiguous grammar such as
    ``x ::= "a" | "a" "a" | x x`` makes accepting cubic in the length of the text). Past
    either, the call raises :class:`~agentgrammar.errors.MaskTimeoutError` and the matcher
    is as it was before the call.

    Threads: a matcher may be shared by threads. Every call holds the matcher's lock, so
    calls on one matcher run one at a time (a fill waits for an accept in progress on
    another thread, and :class:`~agentgrammar.BatchMatcher` takes the lock of each matcher
    it fills); which call goes first is up to the threads. Matchers of the same compiled
    grammar share nothing mutable and run in parallel.

    Example:
        >>> from agentgrammar import Compiler, Grammar, Vocabulary
        >>> vocab = Vocabulary(["a", "aa", "</s>"], stop_token_ids=[2])
        >>> compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a" | "a" "a" | root root'))
        >>> matcher = Matcher(compiled, accept_time_budget_s=0.5, mask_time_budget_s=0.5)
        >>> matcher.accept_string("a" * 50), matcher.num_accepted_steps
        (True, 1)
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        *,
        stop_token_ids: Optional[Sequence[int]] = None,
        terminate_without_stop_token: bool = False,
        mask_time_budget_s: Optional[float] = None,
        accept_time_budget_s: Optional[float] = None,
        token_budgets: Sequence[TokenBudget] = (),
    ) -> None:
        if not isinstance(compiled, CompiledGrammar):
            raise TypeError(f"Matcher needs a CompiledGrammar, got {type(compiled).__name__}")
        mask_budget = _budget(mask_time_budget_s, "mask_time_budget_s")
        accept_budget = _budget(accept_time_budget_s, "accept_time_budget_s")
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
        lib.ag_matcher_set_time_budget(self._handle, mask_budget)
        lib.ag_matcher_set_accept_time_budget(self._handle, accept_budget)
        # The C matcher, and the error and flag slots its calls write, are one per matcher
        # and cffi releases the GIL in C: each call holds this lock (acquire/release in
        # try/finally, half the cost of a `with` block on a call of a microsecond or two).
        self._lock = threading.Lock()
        self._err = new_error()
        # Token budgets (``token_budget``): kept beside the C matcher, None when there are none.
        self._budget = BudgetTracker(compiled.vocabulary, token_budgets) if token_budgets else None
        self._flag = ffi.new("int *")
        self._row = NO_ROW  # the row filled last (bitmask.remember_row)
        # "one token but a set" items (token_items.py): None when the grammar has none.
        sets = compiled._one_token_sets
        self._one_token = OneTokenItems(sets, lib, self._handle, self._flag, self._err) if sets else None

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        """The compiled grammar this matcher follows."""
        return self._compiled

    def _check(self, status: int) -> None:
        if status != lib.AG_OK:
            raise_error(status, self._err, MatcherError)

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token. Returns False (state unchanged) if the grammar rejects it.

        Raises TokenIdError for an id outside the vocabulary, MatcherError after termination
        and MaskTimeoutError past ``accept_time_budget_s`` (state unchanged).
        """
        # A plain int goes to C as it is (C checks the range; cffi refuses past int32);
        # anything else is converted first, for a TokenIdError rather than cffi's TypeError.
        token = token_id if type(token_id) is int else _int32(token_id, "token id", self._vocab_size)
        lock = self._lock
        lock.acquire()
        try:
            try:
                status = _accept_token(self._handle, token, self._flag, self._err)
            except OverflowError:
                raise TokenIdError(f"token id {token} is out of range [0, {self._vocab_size})") from None
            if status:
                raise_error(status, self._err, MatcherError)
            if not self._flag[0] and self._one_token is not None and self._one_token.accept(token):
                self._flag[0] = 1
            if self._budget is not None and self._flag[0]:
                self._budget.accept(token)
            return self._flag[0] != 0
        finally:
            lock.release()

    def accept_tokens(self, token_ids: Sequence[int]) -> bool:
        """Accept tokens in order; stops at (and returns False on) the first rejected one."""
        return all(self.accept_token(t) for t in token_ids)

    def accept_string(self, text: Union[str, bytes]) -> bool:
        """Advance by raw text (one rollback step). Returns False (state unchanged) if rejected.

        Raises MaskTimeoutError past ``accept_time_budget_s`` (state unchanged)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        lock = self._lock
        lock.acquire()
        try:
            self._check(lib.ag_matcher_accept_bytes(self._handle, data, len(data), self._flag, self._err))
            if self._budget is not None and self._flag[0]:
                self._budget.accept_bytes(data)
            return self._flag[0] != 0
        finally:
            lock.release()

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> bool:
        """Write the allowed next tokens into row ``index`` of ``bitmask``.

        Returns True when the mask needs applying (some token is disallowed). A decoding loop
        passes the same bitmask at every step: the matcher keeps a reference to the last
        bitmask and row it filled, and checks them again only when another one comes.
        """
        row = self._row
        if not same_row(row, bitmask, index):
            row = self._row = remember_row(bitmask, index, self._vocab_size)
        lock = self._lock
        lock.acquire()
        try:
            status = _fill_mask(self._handle, row[2], row[3], self._flag, self._err)
            if status:
                raise_error(status, self._err, MatcherError)
            needs_apply = self._flag[0] == 0
            if self._one_token is None and self._budget is None:
                return needs_apply
            return self._after_fill(bitmask, index, needs_apply)
        finally:
            lock.release()

    def _after_fill(self, bitmask: Any, index: int, needs_apply: bool) -> bool:
        """The token-level layer over a row the C core filled (the lock held): the one-token
        items' tokens added, then a spent token budget's restriction. Whether the row needs
        applying. ``BatchMatcher`` calls it too, after a batch fill."""
        if self._one_token is not None and self._one_token.widen(bitmask[index]):
            needs_apply = True  # the items never allow special or stop tokens
        if self._budget is not None and self._budget.restrict(bitmask[index]):
            return True
        return needs_apply

    @property
    def _has_token_layer(self) -> bool:
        return self._one_token is not None or self._budget is not None

    def _fill_next_token_bitmask_direct(self, bitmask: Any, index: int = 0) -> bool:
        """The same mask computed without caches, every token run through the parser.

        Slow; the oracle that tests compare the cached path against.
        """
        mask, words = bitmask_row_pointer(bitmask, index, self._vocab_size)
        with self._lock:
            self._check(lib.ag_matcher_fill_mask_direct(self._handle, mask, words, self._flag, self._err))
            return self._flag[0] == 0

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
        with self._lock:
            limit = int(lib.ag_matcher_num_steps(self._handle)) + 1
            steps = _int32(num_tokens, "rollback count", limit)
            self._check(lib.ag_matcher_rollback(self._handle, steps, self._err))
            if self._budget is not None:
                self._budget.rollback(steps)

    @property
    def num_accepted_steps(self) -> int:
        """How many steps can be rolled back."""
        with self._lock:
            return int(lib.ag_matcher_num_steps(self._handle))

    def is_completed(self) -> bool:
        """True when the text so far is a complete sentence of the grammar."""
        lock = self._lock
        lock.acquire()
        try:
            return lib.ag_matcher_can_end(self._handle) != 0
        finally:
            lock.release()

    def is_terminated(self) -> bool:
        """True once a stop token was accepted (or the grammar completed, with
        ``terminate_without_stop_token``)."""
        lock = self._lock
        lock.acquire()
        try:
            return lib.ag_matcher_is_terminated(self._handle) != 0
        finally:
            lock.release()

    def find_jump_forward_bytes(self) -> bytes:
        """The bytes every continuation must start with (empty when there is a choice).

        With ``mask_time_budget_s``, a search past the budget returns the forced bytes found
        so far (shorter, still forced)."""
        buf = ffi.new("uint8_t[]", _JUMP_FORWARD_CAP)
        n = ffi.new("size_t *")
        with self._lock:
            self._check(lib.ag_matcher_jump_forward(self._handle, buf, _JUMP_FORWARD_CAP, n, self._err))
            out = bytes(ffi.buffer(buf, n[0]))
        cut = out.find(ONE_TOKEN_PREFIX) if self._one_token is not None else -1
        return out if cut < 0 else out[:cut]  # a one-token item is no bytes to jump over

    def find_jump_forward_string(self) -> str:
        """The forced continuation as text, cut to whole UTF-8 characters."""
        return _utf8_prefix(self.find_jump_forward_bytes())

    def reset(self) -> None:
        """Return to the start of the grammar."""
        with self._lock:
            lib.ag_matcher_reset(self._handle)

    def __repr__(self) -> str:
        state = "terminated" if self.is_terminated() else "completed" if self.is_completed() else "running"
        return f"<Matcher {state} steps={self.num_accepted_steps}>"
