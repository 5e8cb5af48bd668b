"""Bounded caches of what is derived from immutable objects (tools, tags, IR pieces), kept by
identity, and the byte accounting of every Python-side cache.

A request for known tools reuses the same objects (a tool's cached call tag, the IR converted
from it), so what was derived from them once (its conversion, its validation, its serialized
form) is looked up by ``id`` instead of being derived again. Each entry holds its object, so an
``id`` cannot be reused while the entry lives; each memo keeps at most ``limit`` entries
(the oldest go first) and ``clear_memos()`` empties all of them (``Compiler.clear_cache`` calls
it).

Bytes: the count limits bound entries, not memory (a tool's entries hold its argument grammar:
tens of kilobytes), so every cache here also reports an estimate of the bytes it keeps alive,
and ``trim_memos(limit)`` drops the oldest entries of every cache until the estimate is within
``limit`` (a ``Compiler`` calls it with its share of ``cache_limit_bytes``). The estimate
(``memo_size_bytes``) is the sum of

* each entry's own objects, measured once by a walk (``approx_bytes``) that does not enter
  other entries' objects, types, functions or foreign objects, nor grammars; of the entries a
  compile adds, one in ``_MEASURE_SAMPLE`` is walked (one in ``_SPARSE_SAMPLE`` while the
  estimate is under an eighth of the limit) and the others count as their cache's average
  walked entry (grammars included) until the estimate passes the limit, when a trim walks
  them all before dropping anything (``memo_size_bytes`` walks them too);
* each ``Grammar`` that an entry reaches, once however many entries reach it (the *ledger*),
  at ``GRAMMAR_BYTES_PER_WORD`` bytes per byte of its serialized form (``grammar_bytes``: its
  IR, normalized rules and serialized words together), until the last entry reaching it goes;
* other registered caches (``register_cache``): an ``OrderedDict`` of another module, or a
  ``functools.lru_cache``, whose entries are sampled (``register_lru``).

Example:
    >>> memo: IdentityMemo[int] = IdentityMemo("example", limit=2)
    >>> key = ["a"]
    >>> memo.get(key) is None, memo.put(key, 1), memo.get(key), memo.get(["a"])
    (True, 1, 1, None)
    >>> memo.get_many([key, ["a"]])
    [1, None]
    >>> memo.discard(key); memo.get(key) is None
    True
    >>> memo.cache_clear(); len(memo)
    0
"""

from __future__ import annotations

from typing import Dict, List, Optional

from .caches import _CACHES, _MEMOS, BoundedCache, IdentityMemo, _Account
from .registered import register_cache, register_lru, register_mapping, unregister_cache
from .sizes import (
    _AVERAGE,
    _LEDGER_BYTES,
    _LOCK,
    _MEASURE_BATCH,
    _MEASURE_SAMPLE,
    _NEW_ENTRIES,
    _QUICK_TRIMS,
    _SPARSE_BELOW,
    _SPARSE_SAMPLE,
    GRAMMAR_BYTES_PER_WORD,
    CountedOnce,
    _ledger_clear,
    approx_bytes,
    grammar_bytes,
)

__all__ = [
    "GRAMMAR_BYTES_PER_WORD",
    "BoundedCache",
    "CountedOnce",
    "IdentityMemo",
    "approx_bytes",
    "clear_memos",
    "grammar_bytes",
    "memo_bytes",
    "memo_entries",
    "memo_size_bytes",
    "register_cache",
    "register_lru",
    "register_mapping",
    "trim_memos",
    "unregister_cache",
]


# --------------------------------------------------------------------------- the whole


def _accounts() -> List[_Account]:
    return [*_MEMOS, *_CACHES]


def _measure(force: bool = False, limit: Optional[int] = None) -> int:
    """Measure the new entries (under the lock) once there are ``_MEASURE_BATCH`` of them,
    walking one in ``_MEASURE_SAMPLE`` (one in ``_SPARSE_SAMPLE`` while the estimate is far
    under ``limit``) and counting the others as their cache's average walked entry, or with
    ``force`` walking every entry not walked yet; and scan the registered caches for their
    grammars (new schemas come with new memo entries). Returns the entries left unmeasured
    (the request's few new pieces: a request for known tools adds little)."""
    accounts = _accounts()
    fresh = sum(a.fresh() for a in accounts)
    if force:
        for a in accounts:
            a.measure()
        return 0
    if fresh >= _MEASURE_BATCH:
        sample = _MEASURE_SAMPLE
        if limit is not None and _total(fresh) < limit // _SPARSE_BELOW:
            sample = _SPARSE_SAMPLE
        for a in accounts:
            a.measure(sample)
        return 0
    return fresh


def _total(unmeasured: int = 0) -> int:
    """The estimate: every cache's bytes, the ledger's, and the average entry for each entry
    not measured yet."""
    average = _AVERAGE[0] // _AVERAGE[1]
    return sum(a.own_bytes() for a in _accounts()) + _LEDGER_BYTES[0] + unmeasured * average


def memo_size_bytes() -> int:
    """The estimated bytes that every Python-side cache keeps alive (see the module docstring).

    Example:
        >>> memo_size_bytes() >= 0
        True
    """
    with _LOCK:
        _measure(force=True)
        return _total()


def memo_bytes() -> Dict[str, int]:
    """The estimated bytes of each cache (grammars aside, by name), and of the grammars they
    reach, counted once (``"grammars"``): for tests and diagnostics.

    Example:
        >>> "grammars" in memo_bytes()
        True
    """
    with _LOCK:
        _measure(force=True)
        out = {a.name: a.own_bytes() for a in _accounts()}
        out["grammars"] = _LEDGER_BYTES[0]
        return out


# The estimate of the last full look, and the trims answered with it since (``trim_memos``).
_LAST_LOOK = [0, 0]


def trim_memos(limit_bytes: int) -> int:
    """Drop the oldest entries of every cache, the same share of each, until the estimate is
    within ``limit_bytes`` (down to three quarters of it, so that trims are rare); returns the
    estimate. A grammar that something else still holds (a compiled grammar, the caller) stays
    counted: it is still in memory. While the last estimate was far under the limit (under
    ``1 / _SPARSE_BELOW`` of it) and fewer than ``_MEASURE_BATCH`` entries are new, up to
    ``_QUICK_TRIMS`` calls in a row answer with it without a look at the caches.

    Example:
        >>> trim_memos(10**12) >= 0
        True
    """
    with _LOCK:
        last, quick = _LAST_LOOK
        if quick < _QUICK_TRIMS and last < limit_bytes // _SPARSE_BELOW and _NEW_ENTRIES[0] < _MEASURE_BATCH:
            _LAST_LOOK[1] = quick + 1
            return last
        total = _trim(limit_bytes)
        _LAST_LOOK[:] = [total, 0]
        _NEW_ENTRIES[0] = 0
        return total


def _trim(limit_bytes: int) -> int:
    """``trim_memos`` after a full look at every cache (under the lock)."""
    total = _total(_measure(limit=limit_bytes))
    if total > limit_bytes:  # over: walk every entry before dropping anything
        total = _total(_measure(force=True))
    for _ in range(4):
        if total <= limit_bytes:
            break
        target = limit_bytes * 3 // 4
        fraction = min(1.0, (total - target) / max(total, 1))
        for a in _accounts():
            if len(a):
                a.shrink(fraction)
        total = _total()
    return total


def clear_memos() -> None:
    """Empty every memo and registered cache (a cold start for what front-ends derived from
    tools and tags)."""
    with _LOCK:
        for a in _accounts():
            a.cache_clear()
        _ledger_clear()
        _NEW_ENTRIES[0] = 0
        _LAST_LOOK[:] = [0, 0]


def memo_entries() -> Dict[str, int]:
    """How many entries each memo holds, by name (for tests and diagnostics).

    Example:
        >>> isinstance(memo_entries(), dict)
        True
    """
    return {m.name: len(m) for m in _MEMOS}
