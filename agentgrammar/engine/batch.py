"""Filling a serving batch's token masks at once, on a pool of C threads.

A serving loop holds one :class:`Matcher` per sequence. Filling their masks one by one costs
the sum of the rows' times; :class:`BatchMatcher` hands the rows to a pool of threads in the
C core, with the GIL released, so a batch costs about its slowest row (a state's first walk
over the vocabulary) instead of the sum.

Example:
    >>> from agentgrammar import BatchMatcher, Compiler, Grammar, Matcher, Vocabulary
    >>> from agentgrammar import allocate_token_bitmask
    >>> vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    >>> compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+ "b"'))
    >>> matchers = [Matcher(compiled) for _ in range(3)]
    >>> matchers[1].accept_token(0)
    True
    >>> bitmask = allocate_token_bitmask(3, vocab.vocab_size, backend="numpy")
    >>> BatchMatcher(max_threads=2).fill_next_token_bitmask(matchers, bitmask)
    [True, True, True]
"""

from __future__ import annotations

import os
import threading
from typing import Any, List, Optional, Sequence, Tuple, Union

from ..errors import BitmaskError, MatcherError
from ._native import ffi, lib, new_error, raise_error
from .bitmask import NO_ROW, Row, remember_row, same_row
from .matcher import Matcher

__all__ = ["BatchMatcher", "batch_fill_next_token_bitmask"]

#: The most threads a pool may have (the C core's bound).
MAX_THREADS = 256


def usable_cpus() -> int:
    """How many CPUs this process may run on (its affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return os.cpu_count() or 1


def _auto_threads() -> int:
    """Half the CPUs this process may use (the other half serves the model), 1 to 8."""
    return max(1, min(8, usable_cpus() // 2))


class BatchMatcher:
    """Fills many matchers' masks in parallel on a pool of C threads.

    ``max_threads`` is the pool's size, the calling thread included (``"auto"``: half the
    CPUs, at most 8; ``1`` fills the rows one after the other in C, without threads). The pool
    lives as long as this object; one pool serves one batch at a time, and calls from several
    Python threads take turns. A batch holds the lock of every matcher it fills (taken in one
    global order, so two batches sharing matchers cannot deadlock): a matcher in use by
    another thread is filled once that thread's call returns.

    Example:
        >>> batch = BatchMatcher(max_threads=4)
        >>> batch.num_threads
        4
    """

    def __init__(self, max_threads: Union[int, str] = "auto") -> None:
        if max_threads == "auto":
            n = _auto_threads()
        elif isinstance(max_threads, int) and not isinstance(max_threads, bool):
            n = max_threads
        else:
            raise ValueError(f"max_threads must be a positive int or 'auto', got {max_threads!r}")
        if not 1 <= n <= MAX_THREADS:
            raise ValueError(f"max_threads must be between 1 and {MAX_THREADS}, got {n}")
        out = ffi.new("ag_pool **")
        err = new_error()
        status = lib.ag_pool_new(n, out, err)
        if status != lib.AG_OK:
            raise_error(status, err, MatcherError)
        self._pool = ffi.gc(out[0], lib.ag_pool_free)
        self._last: Optional[_BatchArrays] = None
        # the bitmask filled last (bitmask.remember_row), with the vocabulary size it was checked for
        self._kept: Tuple[int, Row] = (0, NO_ROW)

    @property
    def num_threads(self) -> int:
        """Threads that fill a batch, the calling thread included."""
        return int(lib.ag_pool_num_threads(self._pool))

    def fill_next_token_bitmask(
        self,
        matchers: Sequence[Matcher],
        bitmask: Any,
        indices: Optional[Sequence[int]] = None,
    ) -> List[bool]:
        """Write matcher ``i``'s allowed tokens into row ``indices[i]`` of ``bitmask``.

        ``indices`` defaults to ``0 .. len(matchers) - 1``; rows not named are left as they
        are. Returns, per matcher, whether its mask needs applying (some token is
        disallowed), as :meth:`Matcher.fill_next_token_bitmask` does. Every matcher must
        follow a grammar compiled for the same vocabulary, and appear once.

        If a matcher's fill fails (a :class:`~agentgrammar.errors.MaskTimeoutError` past its
        time budget, say), the other rows are still filled, and the first failure is raised
        with the matcher's index in its message.

        The pool keeps a reference to the last ``bitmask`` it filled, and checks it again only
        when another one comes.
        """
        n = len(matchers)
        rows = list(range(n)) if indices is None else [int(i) for i in indices]
        if len(rows) != n:
            raise BitmaskError(f"{n} matchers but {len(rows)} indices")
        if n == 0:
            return []
        batch = self._batch_arrays(matchers, rows)
        vocab_size, kept = self._kept
        if vocab_size != batch.vocab_size or not same_row(kept, bitmask, 0):
            kept = remember_row(bitmask, 0, batch.vocab_size)
            self._kept = (batch.vocab_size, kept)
        base, row_words, n_rows = kept[2], kept[3], kept[4]
        for i, row in enumerate(rows):
            if not 0 <= row < n_rows:
                raise BitmaskError(f"index {row} (matcher {i}) is out of range for {n_rows} bitmask rows")
        handles, c_rows, results, locks = batch.handles, batch.rows, batch.results, batch.locks
        err = new_error()
        taken = 0
        try:
            for lock in locks:
                lock.acquire()
                taken += 1
            status = lib.ag_batch_fill_masks(
                self._pool, handles, c_rows, n, base, n_rows, row_words, results, err
            )
            if status == lib.AG_OK:  # token budgets and one-token items, beside the C fill
                for i, m in enumerate(matchers):
                    if m._has_token_layer:
                        results[i] = 0 if m._after_fill(bitmask, rows[i], results[i] == 0) else 1
            # read under the locks: a call for the same matchers reuses these arrays
            needs = [r == 0 for r in results]
        finally:
            for lock in locks[:taken]:
                lock.release()
        if status != lib.AG_OK:
            raise_error(status, err, MatcherError)
        return needs

    def _batch_arrays(self, matchers: Sequence[Matcher], rows: List[int]) -> "_BatchArrays":
        """The C arrays of a batch: those of the previous call when it had the same matchers
        and rows (a decoding loop fills the same batch at every step, and building them costs
        more than the fill of cached masks)."""
        last = self._last
        if (
            last is not None
            and last.row_list == rows
            and len(last.matchers) == len(matchers)
            and all(a is b for a, b in zip(last.matchers, matchers))
        ):
            return last
        arrays = _BatchArrays(matchers, rows)
        self._last = arrays
        return arrays

    def __repr__(self) -> str:
        return f"<BatchMatcher threads={self.num_threads}>"


class _BatchArrays:
    """One batch's matchers checked, their handles, rows and locks as the C call takes them."""

    def __init__(self, matchers: Sequence[Matcher], rows: List[int]) -> None:
        self.vocab_size = _common_vocab_size(matchers)
        self.matchers = tuple(matchers)
        self.row_list = list(rows)
        self.handles = ffi.new("ag_matcher *[]", [m._handle for m in matchers])
        self.rows = ffi.new("int32_t[]", rows)
        self.results = ffi.new("int32_t[]", len(matchers))
        # Every matcher's lock, in the order of their ids: any two batches take shared
        # locks in the same order, and a single call holds one lock only.
        self.locks = [m._lock for m in sorted(matchers, key=id)]


def _common_vocab_size(matchers: Sequence[Matcher]) -> int:
    sizes = set()
    for i, m in enumerate(matchers):
        if not isinstance(m, Matcher):
            raise TypeError(f"matcher {i} is a {type(m).__name__}, not an agentgrammar.Matcher")
        sizes.add(m.compiled_grammar.vocabulary.vocab_size)
    # checked here too (the C core checks it again): taking one matcher's lock twice would hang
    if len({id(m) for m in matchers}) != len(matchers):
        raise MatcherError("the batch holds one matcher twice")
    if len(sizes) != 1:
        raise MatcherError(
            f"the matchers' grammars were compiled for different vocabulary sizes {sorted(sizes)}"
        )
    return sizes.pop()


_default: Optional[BatchMatcher] = None
_default_lock = threading.Lock()


def batch_fill_next_token_bitmask(
    matchers: Sequence[Matcher], bitmask: Any, indices: Optional[Sequence[int]] = None
) -> List[bool]:
    """:meth:`BatchMatcher.fill_next_token_bitmask` on a process-wide pool (``"auto"`` threads).

    Example:
        >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
        >>> vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
        >>> m = Matcher(Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"')))
        >>> batch_fill_next_token_bitmask([m], allocate_token_bitmask(1, 3, backend="numpy"))
        [True]
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = BatchMatcher()
        pool = _default
    return pool.fill_next_token_bitmask(matchers, bitmask, indices)
