"""The caches whose entries count: ``IdentityMemo`` (values keyed by an object's identity) and
``BoundedCache`` (by a hashable key), each bounded in entries and measured in bytes.

Example:
    >>> memo: IdentityMemo[int] = IdentityMemo("caches example", limit=2)
    >>> key = ["a"]
    >>> memo.put(key, 1), memo.get(key), memo.get(["a"])
    (1, 1, None)
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Dict, Generic, Hashable, List, Optional, Sequence, Set, Tuple, TypeVar

from .sizes import (
    _AVERAGE,
    _HELD,
    _LEDGER_BYTES,
    _LOCK,
    _NEW_ENTRIES,
    _acquire,
    _hold,
    _release,
    _unhold,
    approx_bytes,
)

__all__ = ["BoundedCache", "IdentityMemo"]

V = TypeVar("V")

# Every cache, for the estimate, the trims and the clears: the identity memos, then the others.
_MEMOS: List["IdentityMemo[Any]"] = []
_CACHES: List["_Account"] = []


class _Account:
    """A cache whose bytes count: its name, its own bytes (grammars aside), a way to measure
    what is new, to drop its oldest entries and to forget all of them."""

    name: str

    def own_bytes(self) -> int:
        raise NotImplementedError

    def measure(self, sample: int = 1) -> None:
        """Measure what was added since the last call (grammars go to the ledger); with
        ``sample`` > 1, one new entry in ``sample`` is walked and the others are counted as
        the average of this cache's walked entries, until a ``sample`` of 1 walks them."""

    def fresh(self) -> int:
        """How many entries were added since the last ``measure``."""
        return 0

    def shrink(self, fraction: float) -> None:
        raise NotImplementedError

    def cache_clear(self) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class _EntryCache(_Account, Generic[V]):
    """Entries in insertion order, each measured once (lazily, by ``measure``)."""

    def __init__(self, name: str, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.name = name
        self.limit = limit
        self._entries: Dict[Any, Tuple[Any, V]] = {}
        self._sizes: Dict[Any, Tuple[int, Tuple[Any, ...]]] = {}  # key -> (own bytes, grammars reached)
        self._fresh: List[Any] = []
        self._hits: Set[Any] = set()  # keys looked up since the last shrink: dropped last
        self._bytes = 0
        self._estimated: Set[Any] = set()  # keys counted at the average, not walked yet
        # bytes and count of the entries walked here, the grammars each brought to the ledger
        # included: the estimate of an entry not walked
        self._walked = [0, 0]

    def _store(self, key: Any, obj: Any, value: V) -> None:
        entries = self._entries
        if len(entries) >= self.limit and key not in entries:
            for old in list(entries)[: max(1, len(entries) // 2)]:
                self._drop(old)
        if key in entries:
            self._forget(key)
            old = entries.pop(key)
            _unhold(old[0])
            _unhold(old[1])
        entries[key] = (obj, value)
        _hold(obj)
        _hold(value)
        self._fresh.append(key)
        _NEW_ENTRIES[0] += 1

    def _forget(self, key: Any) -> None:
        """Stop counting the entry of ``key`` (its bytes and grammars)."""
        self._estimated.discard(key)
        found = self._sizes.pop(key, None)
        if found is not None:
            self._bytes -= found[0]
            with _LOCK:
                _release(found[1])

    def _drop(self, key: Any) -> None:
        entry = self._entries.pop(key, None)  # another thread may have dropped it
        if entry is not None:
            _unhold(entry[0])
            _unhold(entry[1])
        self._forget(key)

    def own_bytes(self) -> int:
        return self._bytes

    def fresh(self) -> int:
        return len(self._fresh)

    def measure(self, sample: int = 1) -> None:
        fresh, self._fresh = self._fresh, []
        if sample <= 1 and self._estimated:  # walk what was counted at the average
            for key in list(self._estimated):
                self._forget(key)
                fresh.append(key)
        keys = list(dict.fromkeys(fresh))
        step = sample if sample > 1 else 1
        for n in range(0, len(keys), step):
            self._walk(keys[n])
            if step > 1:  # the others of the stretch: the average entry, counted at once
                self._estimate(keys[n + 1 : n + step])

    def _walk(self, key: Any) -> None:
        """Measure the entry of ``key`` by a walk (its grammars go to the ledger)."""
        entry = self._entries.get(key)
        if entry is None or key in self._sizes:
            return
        found: List[Any] = []
        size = approx_bytes(entry, stop=_HELD, grammars=found) + 64  # the dict slot, the tuple
        self._sizes[key] = (size, tuple(found))
        self._bytes += size
        _AVERAGE[0] += size
        _AVERAGE[1] += 1
        ledger = _LEDGER_BYTES[0]
        _acquire(found)
        self._walked[0] += size + _LEDGER_BYTES[0] - ledger
        self._walked[1] += 1

    def _estimate(self, keys: List[Any]) -> None:
        """Count the entries of ``keys`` (those not measured yet) as this cache's average
        walked entry, to be walked when a trim needs the bytes exactly."""
        entries, sizes = self._entries, self._sizes
        keys = [k for k in keys if k in entries and k not in sizes]
        if not keys:
            return
        walked, count = self._walked
        size = walked // count if count else _AVERAGE[0] // _AVERAGE[1]
        sizes.update(dict.fromkeys(keys, (size, ())))
        self._estimated.update(keys)
        self._bytes += size * len(keys)

    def shrink(self, fraction: float) -> None:
        """Drop about ``fraction`` of the entries: the oldest not looked up since the last
        shrink, then (if that is not enough) the oldest of the others."""
        keys = list(self._entries)
        n = min(len(keys), max(1, int(len(keys) * fraction + 0.999))) if keys else 0
        hits, self._hits = self._hits, set()
        cold = [k for k in keys if k not in hits][:n]
        victims = cold + [k for k in keys if k in hits][: n - len(cold)]
        for key in victims:
            self._drop(key)

    def cache_clear(self) -> None:
        """Forget every entry."""
        self._hits = set()
        for obj, value in list(self._entries.values()):
            _unhold(obj)
            _unhold(value)
        self._entries.clear()
        with _LOCK:
            for _, found in self._sizes.values():
                _release(found)
        self._sizes.clear()
        self._fresh.clear()
        self._estimated.clear()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


class IdentityMemo(_EntryCache[V]):
    """Values keyed by the identity of an object that the memo keeps alive; at most ``limit``
    entries (past it, the older half is dropped: insertion order), and within its share of a
    byte budget (``trim_memos``)."""

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(name, limit)
        with _LOCK:
            _MEMOS.append(self)

    def get(self, obj: Any) -> Optional[V]:
        """The value kept for ``obj`` (this very object), or None."""
        found = self._entries.get(id(obj))
        if found is None or found[0] is not obj:
            return None
        self._hits.add(id(obj))
        return found[1]

    def get_many(self, objs: Sequence[Any]) -> List[Optional[V]]:
        """``get`` of each object, in one pass (a request's hundreds of tags)."""
        get = self._entries.get
        out = [None if (found := get(id(o))) is None or found[0] is not o else found[1] for o in objs]
        self._hits.update(id(o) for o, v in zip(objs, out) if v is not None)
        return out

    def put(self, obj: Any, value: V) -> V:
        """Keep ``value`` for ``obj`` (and ``obj`` itself); returns ``value``."""
        self._store(id(obj), obj, value)
        return value

    def discard(self, obj: Any) -> None:
        """Forget the entry of ``obj`` (this very object), if there is one."""
        found = self._entries.get(id(obj))
        if found is not None and found[0] is obj:
            self._drop(id(obj))

    def __repr__(self) -> str:
        return f"<IdentityMemo {self.name!r}: {len(self._entries)} of {self.limit}>"


class BoundedCache(_EntryCache[V]):
    """Values keyed by a hashable key, least recently used first out: at most ``limit``
    entries, and within its share of a byte budget (``trim_memos``); registered like the
    identity memos, so ``clear_memos`` empties it.

    Example:
        >>> cache: BoundedCache[str] = BoundedCache("example lru", limit=2)
        >>> cache.get_or_make("a", lambda: "A"), cache.get_or_make("a", lambda: "B"), len(cache)
        ('A', 'A', 1)
    """

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(name, limit)
        self._entries = OrderedDict()
        with _LOCK:
            _CACHES.append(self)

    def get(self, key: Hashable) -> Optional[V]:
        """The value kept for ``key`` (now the most recently used), or None."""
        found = self._entries.get(key)
        if found is None:
            return None
        try:
            self._entries.move_to_end(key)  # type: ignore[attr-defined]
        except KeyError:  # dropped by another thread meanwhile
            pass
        return found[1]

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key``; returns ``value``."""
        self._store(key, key, value)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``make()``, kept."""
        found = self._entries.get(key)
        if found is not None:
            return self.get(key)  # type: ignore[return-value]
        return self.put(key, make())

    def shrink(self, fraction: float) -> None:
        n = len(self._entries)
        for _ in range(min(n, max(1, int(n * fraction + 0.999))) if n else 0):
            key = next(iter(self._entries))
            self._drop(key)

    def __repr__(self) -> str:
        return f"<BoundedCache {self.name!r}: {len(self._entries)} of {self.limit}>"
