"""Bounded caches of what is derived from immutable objects (tools, tags, IR pieces), kept by
identity.

A request for known tools reuses the same objects (a tool's cached call tag, the IR converted
from it), so what was derived from them once (its conversion, its validation, its serialized
form) is looked up by ``id`` instead of being derived again. Each entry holds its object, so an
``id`` cannot be reused while the entry lives; each memo keeps at most ``limit`` entries
(the oldest go first) and ``clear_memos()`` empties all of them (``Compiler.clear_cache`` calls
it).

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

from typing import Any, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar

__all__ = ["IdentityMemo", "clear_memos", "memo_entries"]

V = TypeVar("V")

_MEMOS: List["IdentityMemo[Any]"] = []


class IdentityMemo(Generic[V]):
    """Values keyed by the identity of an object that the memo keeps alive; at most ``limit``
    entries (past it, the older half is dropped: insertion order)."""

    __slots__ = ("_entries", "limit", "name")

    def __init__(self, name: str, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.name = name
        self.limit = limit
        self._entries: Dict[int, Tuple[Any, V]] = {}
        _MEMOS.append(self)

    def get(self, obj: Any) -> Optional[V]:
        """The value kept for ``obj`` (this very object), or None."""
        found = self._entries.get(id(obj))
        return found[1] if found is not None and found[0] is obj else None

    def get_many(self, objs: Sequence[Any]) -> List[Optional[V]]:
        """``get`` of each object, in one pass (a request's hundreds of tags)."""
        get = self._entries.get
        return [None if (found := get(id(o))) is None or found[0] is not o else found[1] for o in objs]

    def put(self, obj: Any, value: V) -> V:
        """Keep ``value`` for ``obj`` (and ``obj`` itself); returns ``value``."""
        entries = self._entries
        if len(entries) >= self.limit and id(obj) not in entries:
            for key in list(entries)[: max(1, len(entries) // 2)]:
                del entries[key]
        entries[id(obj)] = (obj, value)
        return value

    def discard(self, obj: Any) -> None:
        """Forget the entry of ``obj`` (this very object), if there is one."""
        found = self._entries.get(id(obj))
        if found is not None and found[0] is obj:
            del self._entries[id(obj)]

    def cache_clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<IdentityMemo {self.name!r}: {len(self._entries)} of {self.limit}>"


def clear_memos() -> None:
    """Empty every identity memo (a cold start for what front-ends derived from tools and tags)."""
    for memo in _MEMOS:
        memo.cache_clear()


def memo_entries() -> Dict[str, int]:
    """How many entries each memo holds, by name (for tests and diagnostics).

    Example:
        >>> isinstance(memo_entries(), dict)
        True
    """
    return {m.name: len(m) for m in _MEMOS}
