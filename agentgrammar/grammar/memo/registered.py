"""Caches of other kinds that count with the memos: a cache seen through functions
(``register_cache``), a dict (``register_mapping``) and a ``functools.lru_cache``
(``register_lru``).

Example:
    >>> kept = {"a": 1}
    >>> register_mapping("registered example", lambda: kept, entry_bytes=100)
    >>> unregister_cache("registered example")
"""

from __future__ import annotations

import gc
import sys
from itertools import compress
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .caches import _CACHES, _Account
from .sizes import (
    _LOCK,
    _MEASURE_SAMPLE,
    _SKIP_TYPES,
    CountedOnce,
    _acquire,
    _release,
    approx_bytes,
    grammar_bytes,
)

__all__ = ["register_cache", "register_lru", "register_mapping", "unregister_cache"]


class _Registered(_Account):
    """A cache of another module, seen through functions (``register_cache``)."""

    def __init__(
        self,
        name: str,
        size: Callable[[], int],
        shrink: Callable[[float], None],
        clear: Callable[[], None],
        grammars: Optional[Callable[[], Iterable[Any]]],
        length: Callable[[], int],
        live: bool,
        whole: bool = False,
    ) -> None:
        self.name = name
        self._whole = whole  # shrinking clears it all: once the shares asked of it add up to half
        self._debt = 0.0
        self._size, self._shrink, self._clear = size, shrink, clear
        self._grammars, self._len = grammars, length
        self._live = live  # size() is cheap: read each time
        self._bytes = 0  # else size() as of the last measure, shrink or clear (it may cost a scan)
        self._held: Tuple[Any, ...] = ()  # the grammars counted for it, as of the last scan

    def own_bytes(self) -> int:
        return self._size() if self._live else self._bytes

    def _rescan(self) -> None:
        held = tuple(self._grammars()) if self._grammars is not None else ()
        _acquire(held)  # before the release: a grammar held before and now stays counted
        _release(self._held)
        self._held = held
        self._bytes = self._size()

    def measure(self, sample: int = 1) -> None:
        self._rescan()

    def shrink(self, fraction: float) -> None:
        if self._whole:
            self._debt += fraction
            if self._debt < 0.5:
                return
            self._debt = 0.0
        self._shrink(fraction)
        self._rescan()

    def cache_clear(self) -> None:
        self._clear()
        _release(self._held)
        self._held = ()
        self._bytes = 0

    def __len__(self) -> int:
        return self._len()


def register_cache(
    name: str,
    *,
    size: Callable[[], int],
    shrink: Callable[[float], None],
    clear: Callable[[], None],
    length: Callable[[], int],
    grammars: Optional[Callable[[], Iterable[Any]]] = None,
    live: bool = True,
    whole: bool = False,
) -> None:
    """Count a cache of another kind: ``size()`` its bytes (grammars aside), ``shrink(f)`` drops
    about the oldest fraction ``f`` of its entries, ``clear()`` all of them, ``length()`` counts
    them, ``grammars()`` (optional) the grammars it holds (counted in the ledger). ``live``:
    ``size()`` is cheap and read every time; else it is read when new memo entries are measured
    (new schemas come with them), after a shrink and by ``memo_bytes``. ``whole``: ``shrink``
    can only empty it, so it is emptied once the shares that trims asked of it add up to half.

    Example:
        >>> from agentgrammar.grammar.memo import memo_bytes
        >>> kept = {"a": 1}
        >>> register_cache("doc example", size=lambda: 64 * len(kept), shrink=lambda f: kept.clear(),
        ...                clear=kept.clear, length=lambda: len(kept))
        >>> memo_bytes()["doc example"]
        64
        >>> unregister_cache("doc example")
    """
    with _LOCK:
        _CACHES.append(_Registered(name, size, shrink, clear, grammars, length, live, whole))


def register_mapping(
    name: str,
    mapping: Callable[[], Any],
    *,
    entry_bytes: int = 256,
    entry_size: Optional[Callable[[Any, Any], int]] = None,
) -> None:
    """Count a dict (or ``OrderedDict``) cache that ``mapping()`` returns, oldest entries first:
    ``entry_size(key, value)`` (else ``entry_bytes``) per entry, plus the grammars among its
    values (and inside tuple values), counted in the ledger.

    Example:
        >>> from agentgrammar.grammar.memo import memo_bytes
        >>> kept = {"a": 1}
        >>> register_mapping("doc mapping", lambda: kept, entry_bytes=100)
        >>> memo_bytes()["doc mapping"]
        100
        >>> unregister_cache("doc mapping")
    """

    def grammars() -> List[Any]:
        out = []
        for v in list(mapping().values()):
            for x in v if isinstance(v, tuple) else (v,):
                if isinstance(x, CountedOnce):
                    out.append(x)
        return out

    def shrink(fraction: float) -> None:
        d = mapping()
        for key in list(d)[: max(1, int(len(d) * fraction + 0.999))] if d else []:
            d.pop(key, None)

    def size() -> int:
        if entry_size is None:
            return entry_bytes * len(mapping())
        return sum(entry_size(k, v) for k, v in list(mapping().items()))

    register_cache(
        name,
        size=size,
        shrink=shrink,
        clear=lambda: mapping().clear(),
        length=lambda: len(mapping()),
        grammars=grammars,
        live=entry_size is None,
    )


def _first_value_size(table: dict) -> int:  # type: ignore[type-arg]
    """``sys.getsizeof`` of one value of ``table`` (0 when empty)."""
    for value in table.values():
        return sys.getsizeof(value)
    return 0


def _held_by(function: Any) -> Tuple[List[Any], List[Any]]:
    """What an ``lru_cache`` function holds (``gc.get_referents``), but types, functions and
    its own ``__dict__`` and ``__wrapped__``: its tables (the dicts) and its keys and results,
    in pairs. Sorted by type, each type tested once (a cache holds thousands of objects of a
    few types: testing each was most of a measure)."""
    held = gc.get_referents(function)
    types = set(map(type, held))
    dicts = {t for t in types if issubclass(t, dict) and not issubclass(t, _SKIP_TYPES)}
    others = {t for t in types if not issubclass(t, (dict, *_SKIP_TYPES))}
    skip = {id(getattr(function, "__dict__", None)), id(function.__wrapped__)}
    table = [r for r in compress(held, map(dicts.__contains__, map(type, held))) if id(r) not in skip]
    items = list(compress(held, map(others.__contains__, map(type, held))))
    if type(function.__wrapped__) in others:  # a callable object, not a function
        items = [r for r in items if id(r) not in skip]
    return table, items


def _entry_table(function: Any) -> Optional[Dict[Any, Any]]:
    """The dict of a bounded ``lru_cache`` that holds one item per entry (CPython's C
    ``lru_cache`` keeps it for the function's life and clears it in place), or None where it
    is not found as one such dict whose size is the cache's (another implementation)."""
    info = function.cache_info()
    if info.maxsize is None:
        return None
    table, _ = _held_by(function)
    if len(table) != 1 or len(table[0]) != info.currsize:
        return None
    return table[0]


class _LruAccount(_Account):
    """A ``functools.lru_cache`` function: its entries are seen through ``gc.get_referents``
    (the keys and results it holds), a sample of them walked whenever its size doubled or
    halved since the last walk, the bytes per entry found then applied to its current size.
    Shrinking can only empty it: once the shares that trims asked of it add up to half."""

    _SAMPLE = 128  # (key, result) pairs walked per measure

    def __init__(self, name: str, function: Any, entry_bytes: int) -> None:
        self.name = name
        self._fn = function
        self._per_entry = entry_bytes  # until the first walk
        self._measured_at = 0
        self._debt = 0.0
        self._table = _entry_table(function)

    def __len__(self) -> int:
        if self._table is not None:  # every compile asks: a dict's len, not a named tuple made
            return len(self._table)
        return int(self._fn.cache_info().currsize)

    def own_bytes(self) -> int:
        return len(self) * self._per_entry

    def measure(self, sample: int = 1) -> None:
        n = len(self)
        if n < 16 or self._measured_at // 2 < n < 2 * self._measured_at:
            return
        table, items = _held_by(self._fn)
        found: List[Any] = []
        if self._fn.cache_info().maxsize is not None:
            # Bounded: the table's values are links, one per entry, all of a size, counted, not
            # walked (its keys are among the items: walking it walked every key, each then
            # scaled by ``step`` as if sampled).
            # One (key, result) pair in ``step``, taken whole: every n-th item alone would take
            # only keys, or only results, whenever n is even. About ``_SAMPLE`` pairs, a
            # quarter of them while the estimate is far under its limit (a sparse ``sample``).
            wanted = self._SAMPLE if sample <= _MEASURE_SAMPLE else self._SAMPLE // 4
            step = max(1, len(items) // (2 * wanted))
            picked = [x for i in range(0, len(items), 2 * step) for x in items[i : i + 2]]
            table_bytes = sum(sys.getsizeof(t) + len(t) * _first_value_size(t) for t in table)
        else:  # unbounded: the table holds the keys and results, all walked
            step, picked, table_bytes = 1, table, 0
        walked = approx_bytes(picked, grammars=found, limit=1_000_000)
        walked += sum(grammar_bytes(g) for g in {id(g): g for g in found}.values())
        self._per_entry = max(64, (walked * step + table_bytes) // max(1, n))
        self._measured_at = n

    def shrink(self, fraction: float) -> None:
        self._debt += fraction
        if self._debt >= 0.5:
            self.cache_clear()

    def cache_clear(self) -> None:
        self._fn.cache_clear()
        self._debt = 0.0
        self._measured_at = 0


def register_lru(name: str, function: Any, *, entry_bytes: int = 2048) -> None:
    """Count a ``functools.lru_cache`` function: its keys and results, measured from a sample
    (``gc.get_referents``), ``entry_bytes`` per entry until the first measure; shrinking it
    empties it, so trims do that once the shares they asked of it add up to half.

    Example:
        >>> import functools
        >>> from agentgrammar.grammar.memo import memo_bytes
        >>> @functools.lru_cache(maxsize=8)
        ... def square(x: int) -> int:
        ...     return x * x
        >>> register_lru("doc squares", square, entry_bytes=100); square(3)
        9
        >>> memo_bytes()["doc squares"]
        100
        >>> unregister_cache("doc squares")
    """
    with _LOCK:
        _CACHES.append(_LruAccount(name, function, entry_bytes))


def unregister_cache(name: str) -> None:
    """Stop counting the registered caches named ``name`` (``register_cache`` and kin).

    Example:
        >>> unregister_cache("no such cache")
    """
    with _LOCK:
        _CACHES[:] = [c for c in _CACHES if c.name != name]
