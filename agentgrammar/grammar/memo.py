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
  other entries' objects, types, functions or foreign objects, nor grammars;
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

import gc
import sys
import threading
import types
from collections import OrderedDict
from typing import (
    Any,
    Callable,
    Container,
    Dict,
    Generic,
    Hashable,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
)

__all__ = [
    "GRAMMAR_BYTES_PER_WORD",
    "BoundedCache",
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

V = TypeVar("V")

#: Estimated Python bytes of a grammar per byte of its serialized form (``Grammar.to_bytes``):
#: measured at 5 to 18 (about 10 for JSON Schema argument grammars) for the IR, the normalized
#: rules, the link tables and the serialized words that a compiled grammar keeps.
GRAMMAR_BYTES_PER_WORD = 10

_MEMOS: List["IdentityMemo[Any]"] = []
_CACHES: List["_Account"] = []
_LOCK = threading.RLock()
# id -> how many entries hold the object as their key object or value: a walk does not enter
# another entry's objects (they are counted with it). Entries keep these objects alive.
_HELD: Dict[int, int] = {}
# Fresh entries are measured in batches (a walk per entry, and the registered caches scanned):
# until then each counts as the average entry measured so far.
_MEASURE_BATCH = 64
_AVERAGE = [4096, 1]  # bytes measured, entries measured (a prior of one 4 KiB entry)


def _hold(obj: Any) -> None:
    _HELD[id(obj)] = _HELD.get(id(obj), 0) + 1


def _unhold(obj: Any) -> None:
    n = _HELD.pop(id(obj), 0) - 1
    if n > 0:
        _HELD[id(obj)] = n


# Objects that the walk counts but never enters: their memory is elsewhere (C caches, a
# vocabulary shared by every grammar) or they are the process's own.
_OPAQUE_NAMES = frozenset({"Vocabulary", "CompiledGrammar", "Compiler", "Matcher", "GrammarMatcher"})
_SKIP_TYPES = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
)
_CONTAINERS = (dict, list, tuple, set, frozenset)


def _grammar_type() -> type:
    from .grammar import Grammar  # grammar imports pieces, which imports this module

    return Grammar


def approx_bytes(
    roots: Sequence[Any],
    *,
    stop: Optional[Container[int]] = None,
    grammars: Optional[List[Any]] = None,
    limit: int = 200_000,
) -> int:
    """Bytes of the objects reachable from ``roots`` (``sys.getsizeof`` each, each once):
    builtin containers and this package's objects are entered; types, functions and modules are
    not counted; foreign objects (a ``jsonschema`` validator) count their own size only. A
    ``Grammar`` is not entered but appended to ``grammars`` (it is counted once, in the ledger);
    nor is an object whose id is in ``stop`` (another entry's, counted there) unless a root.
    At most ``limit`` objects are counted (a bound on the time).

    Example:
        >>> approx_bytes([("a", "b")]) > approx_bytes([("a",)])
        True
    """
    grammar_type = _grammar_type()
    stop = stop if stop is not None else ()
    seen: Set[int] = set()
    total = 0
    stack = list(roots)
    is_root = {id(r) for r in roots}
    while stack and len(seen) < limit:
        o = stack.pop()
        i = id(o)
        if i in seen or (i in stop and i not in is_root):
            continue
        seen.add(i)
        t = type(o)
        if t is grammar_type:
            if grammars is not None:
                grammars.append(o)
            continue
        if isinstance(o, _SKIP_TYPES):
            continue
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, _CONTAINERS):
            stack.extend(o)
        elif t.__module__.startswith("agentgrammar") and t.__name__ not in _OPAQUE_NAMES:
            attrs = getattr(o, "__dict__", None)
            if attrs is not None:
                stack.append(attrs)
            for klass in t.__mro__:
                slots = getattr(klass, "__slots__", ())
                for slot in (slots,) if isinstance(slots, str) else slots:
                    value = getattr(o, slot, None)
                    if value is not None:
                        stack.append(value)
    return total


# --------------------------------------------------------------------------- the grammar ledger

# id -> [grammar, estimated bytes, how many entries reach it, its parts as counted]: every
# grammar that a cache entry reaches, counted once. An entry acquires the grammars its walk
# found and releases them when it goes; the ledger's reference adds no lifetime (the entry holds
# the grammar too).
_LEDGER: Dict[int, List[Any]] = {}
_LEDGER_BYTES = [0]


def grammar_bytes(grammar: Any) -> int:
    """The estimated bytes of Python objects that ``grammar`` keeps (its IR, normalized rules,
    link tables and serialized words): ``GRAMMAR_BYTES_PER_WORD`` per byte of its serialized
    form, or 2 KiB per rule before it is serialized.

    Example:
        >>> from agentgrammar import Grammar
        >>> g = Grammar.from_regex("[a-z]+")
        >>> words = len(g.to_bytes())
        >>> grammar_bytes(g) == GRAMMAR_BYTES_PER_WORD * words
        True
    """
    words = grammar._bytes
    if words is None:  # not serialized yet (never compiled): its rules, roughly
        return 2048 * len(grammar.rules)
    return GRAMMAR_BYTES_PER_WORD * len(words)


def _acquire(found: Iterable[Any]) -> None:
    """Count the grammars ``found`` (and their parts) as reached once more."""
    stack = list(found)
    while stack:
        g = stack.pop()
        entry = _LEDGER.get(id(g))
        if entry is not None and entry[0] is g:
            entry[2] += 1
            continue
        parts = tuple(g._parts or ())
        size = grammar_bytes(g)
        _LEDGER[id(g)] = [g, size, 1, parts]
        _LEDGER_BYTES[0] += size
        stack.extend(parts)


def _release(found: Iterable[Any]) -> None:
    """Undo ``_acquire(found)``: a grammar that no entry reaches any more stops counting."""
    stack = list(found)
    while stack:
        g = stack.pop()
        entry = _LEDGER.get(id(g))
        if entry is None or entry[0] is not g:
            continue
        entry[2] -= 1
        if entry[2] <= 0:
            del _LEDGER[id(g)]
            _LEDGER_BYTES[0] -= entry[1]
            stack.extend(entry[3])


def _ledger_clear() -> None:
    _LEDGER.clear()
    _LEDGER_BYTES[0] = 0


# --------------------------------------------------------------------------- accounted caches


class _Account:
    """A cache whose bytes count: its name, its own bytes (grammars aside), a way to measure
    what is new, to drop its oldest entries and to forget all of them."""

    name: str

    def own_bytes(self) -> int:
        raise NotImplementedError

    def measure(self) -> None:
        """Measure what was added since the last call (grammars go to the ledger)."""

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

    def _forget(self, key: Any) -> None:
        """Stop counting the entry of ``key`` (its bytes and grammars)."""
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

    def measure(self) -> None:
        fresh, self._fresh = self._fresh, []
        for key in dict.fromkeys(fresh):
            entry = self._entries.get(key)
            if entry is None or key in self._sizes:
                continue
            found: List[Any] = []
            size = approx_bytes(entry, stop=_HELD, grammars=found) + 64  # the dict slot, the tuple
            self._sizes[key] = (size, tuple(found))
            self._bytes += size
            _AVERAGE[0] += size
            _AVERAGE[1] += 1
            _acquire(found)

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

    def measure(self) -> None:
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
        >>> kept: Dict[str, int] = {"a": 1}
        >>> register_mapping("doc mapping", lambda: kept, entry_bytes=100)
        >>> memo_bytes()["doc mapping"]
        100
        >>> unregister_cache("doc mapping")
    """

    def grammars() -> List[Any]:
        grammar_type = _grammar_type()
        out = []
        for v in list(mapping().values()):
            for x in v if isinstance(v, tuple) else (v,):
                if type(x) is grammar_type:
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


class _LruAccount(_Account):
    """A ``functools.lru_cache`` function: its entries are seen through ``gc.get_referents``
    (the keys and results it holds), a sample of them walked whenever its size doubled or
    halved since the last walk, the bytes per entry found then applied to its current size.
    Shrinking can only empty it: once the shares that trims asked of it add up to half."""

    _SAMPLE = 128  # results walked per measure

    def __init__(self, name: str, function: Any, entry_bytes: int) -> None:
        self.name = name
        self._fn = function
        self._per_entry = entry_bytes  # until the first walk
        self._measured_at = 0
        self._debt = 0.0

    def __len__(self) -> int:
        return int(self._fn.cache_info().currsize)

    def own_bytes(self) -> int:
        return len(self) * self._per_entry

    def measure(self) -> None:
        n = len(self)
        if n < 16 or self._measured_at // 2 < n < 2 * self._measured_at:
            return
        skip = {id(getattr(self._fn, "__dict__", None)), id(self._fn.__wrapped__)}
        held = [r for r in gc.get_referents(self._fn) if not isinstance(r, _SKIP_TYPES) and id(r) not in skip]
        table = [r for r in held if isinstance(r, dict)]  # the cache's own table
        items = [r for r in held if not isinstance(r, dict)]  # its keys and results, in pairs
        step = max(1, len(items) // (2 * self._SAMPLE))
        sample = items[::step] if step > 1 else items
        found: List[Any] = []
        walked = approx_bytes([*table, *sample], grammars=found, limit=1_000_000)
        walked += sum(grammar_bytes(g) for g in {id(g): g for g in found}.values())
        self._per_entry = max(64, walked * step // max(1, n))
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


# --------------------------------------------------------------------------- the whole


def _accounts() -> List[_Account]:
    return [*_MEMOS, *_CACHES]


def _measure(force: bool = False) -> int:
    """Measure the new entries (under the lock) once there are ``_MEASURE_BATCH`` of them, or
    with ``force``, and scan the registered caches for their grammars (new schemas come with new
    memo entries); returns the entries left unmeasured (the request's few new pieces: a request
    for known tools adds little)."""
    accounts = _accounts()
    fresh = sum(a.fresh() for a in accounts)
    if fresh and (force or fresh >= _MEASURE_BATCH):
        for a in accounts:
            a.measure()
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


def trim_memos(limit_bytes: int) -> int:
    """Drop the oldest entries of every cache, the same share of each, until the estimate is
    within ``limit_bytes`` (down to three quarters of it, so that trims are rare); returns the
    estimate. A grammar that something else still holds (a compiled grammar, the caller) stays
    counted: it is still in memory.

    Example:
        >>> trim_memos(10**12) >= 0
        True
    """
    with _LOCK:
        total = _total(_measure())
        if total > limit_bytes:  # over: measure for real before dropping anything
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


def memo_entries() -> Dict[str, int]:
    """How many entries each memo holds, by name (for tests and diagnostics).

    Example:
        >>> isinstance(memo_entries(), dict)
        True
    """
    return {m.name: len(m) for m in _MEMOS}
