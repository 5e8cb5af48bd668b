"""Background classification: a compiled grammar's likely states, classified on a C thread.

Token classes are computed the first time a matcher reaches a state, so a request's new tools
pay for theirs on generated tokens. After :meth:`Compiler.compile <agentgrammar.Compiler.compile>`,
one worker thread of a process-wide C pool classifies the states a matcher is likely to reach
(the tools' arguments first, then breadth-first from the start, at most :data:`BACKGROUND_STATES`
in :data:`BACKGROUND_SECONDS` of classifying) while the model writes its first tokens. Masks
never wait for it: a state it has not reached is classified by the mask that needs it, as
without it, so masks are the same either way. Freeing the compiled grammar stops its work.

Example:
    >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
    >>> compiled = Compiler(Vocabulary(["a", "b", "ab", "</s>"])).compile(Grammar.from_regex("ab"))
    >>> Matcher(compiled).allowed_token_ids()  # the same with Compiler(..., background=False)
    [0, 2]
"""

from __future__ import annotations

from typing import Any

from ..errors import GrammarError
from ._native import PerProcess, ffi, lib, new_error, raise_error

__all__ = [
    "BACKGROUND_SECONDS",
    "BACKGROUND_STATES",
    "WARM_UP_SECONDS",
    "WARM_UP_STATES",
    "background_pool",
    "classify_in_background",
]

#: The most states one compile's background work classifies: a 100-tool request has some 14k,
#: of which the worker classifies about 4k in 10-40 ms on a 128k vocabulary (docs/benchmarks.md).
BACKGROUND_STATES = 4096
#: The most worker time one compile's background work spends classifying: a state costs from
#: microseconds (a literal's next byte) to milliseconds (a large schema's first visits).
BACKGROUND_SECONDS = 0.2
#: The most states and worker seconds of one ``Compiler.warm_up``: a format's warm-up grammar has
#: a few hundred states, classified whole; a larger grammar is classified this far.
WARM_UP_STATES = 16384
WARM_UP_SECONDS = 2.0


def _new_pool() -> Any:
    out = ffi.new("ag_pool **")
    err = new_error()
    status = lib.ag_pool_new(2, out, err)  # the caller counts as one: one worker thread
    if status != lib.AG_OK:
        raise_error(status, err, GrammarError)
    lib.ag_pool_set_idle_priority(out[0])  # spare CPU only: never the masks' or the model's
    return ffi.gc(out[0], lib.ag_pool_free)


# A forked child's pool is its own: the parent's worker thread is not in it, and
# ag_pool_free would join that thread.
_POOL = PerProcess(_new_pool)


def background_pool() -> Any:
    """The process-wide pool whose worker thread classifies in the background (made on first
    use; a forked child makes its own)."""
    return _POOL.get()


def classify_in_background(
    handle: Any,
    max_states: int = BACKGROUND_STATES,
    max_seconds: float = BACKGROUND_SECONDS,
    pool: Any = None,
) -> None:
    """Queue the background classification of a compiled grammar's C ``handle`` on ``pool``
    (default: :func:`background_pool`); returns at once."""
    err = new_error()
    status = lib.ag_compiled_classify_background(
        handle, background_pool() if pool is None else pool, max_states, max_seconds, err
    )
    if status != lib.AG_OK:
        raise_error(status, err, GrammarError)
