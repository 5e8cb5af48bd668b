"""The byte estimate of what the caches keep: a walk over each entry's objects
(``approx_bytes``) and the ledger that counts each grammar once, however many entries reach it.

Example:
    >>> approx_bytes([("a", "b")]) > approx_bytes([("a",)])
    True
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any, Container, Dict, Iterable, List, Optional, Sequence, Set, Tuple

__all__ = ["GRAMMAR_BYTES_PER_WORD", "CountedOnce", "approx_bytes", "grammar_bytes"]

#: Estimated Python bytes of a grammar per byte of its serialized form (``Grammar.to_bytes``):
#: measured at 5 to 18 (about 10 for JSON Schema argument grammars) for the IR, the normalized
#: rules, the link tables and the serialized words that a compiled grammar keeps.
GRAMMAR_BYTES_PER_WORD = 10

# One lock for every cache's accounting (the memos, the registered caches and the ledger).
_LOCK = threading.RLock()
# id -> how many entries hold the object as their key object or value: a walk does not enter
# another entry's objects (they are counted with it). Entries keep these objects alive.
_HELD: Dict[int, int] = {}
# Fresh entries are measured in batches (a walk per entry, and the registered caches scanned):
# until then each counts as the average entry measured so far.
_MEASURE_BATCH = 64
# Of a batch, one entry in this many is walked and the others count as their cache's average
# walked entry until the estimate passes a limit (a trim walks them then): walking every entry
# was a third of a cold request's compile (a 100-tool request adds some 700 entries).
_MEASURE_SAMPLE = 16
# Far under the limit (the estimate below ``1 / _SPARSE_BELOW`` of it), one in
# ``_SPARSE_SAMPLE``: the estimate only has to tell when the limit nears, and a cold 100-tool
# request spent a tenth of its compile walking its new entries.
_SPARSE_SAMPLE = 64
_SPARSE_BELOW = 8
_AVERAGE = [4096, 1]  # bytes measured, entries measured (a prior of one 4 KiB entry)
# Entries stored since the last full look of ``trim_memos`` (a count: a thread's increment
# may be lost, which only delays a full look). While few are new and that look's estimate was
# far under the limit, up to ``_QUICK_TRIMS`` trims in a row answer with that estimate rather
# than ask each of some thirty caches again on every compile; what the caches seen only
# through their size (the ``lru_cache`` functions) add meanwhile is counted at the next look.
_NEW_ENTRIES = [0]
_QUICK_TRIMS = 8


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


class CountedOnce:
    """Base of the objects that many cache entries share and that the estimate counts once, in
    the ledger (``Grammar``): a walk does not enter one but reports it. A subclass says what it
    weighs (``counted_bytes``) and which objects of its kind it holds (``counted_parts``).

    Example:
        >>> class Blob(CountedOnce):
        ...     def counted_bytes(self) -> int:
        ...         return 1000
        >>> found = []
        >>> approx_bytes([[Blob()]], grammars=found), len(found)
        (64, 1)
    """

    __slots__ = ()

    def counted_bytes(self) -> int:
        """The estimated bytes of Python objects this one keeps alive."""
        raise NotImplementedError

    def counted_parts(self) -> Tuple["CountedOnce", ...]:
        """The objects of this kind it holds, counted with it (a grammar's embedded grammars)."""
        return ()


# Exact types that a walk counts without entering (subclasses take the general path).
_ATOMS = frozenset({str, bytes, int, float, bool, type(None), complex})


def _entered_slots(t: type) -> Optional[Tuple[str, ...]]:
    """The slots (over the whole MRO) of this package's type ``t`` that a walk enters, or None
    when objects of ``t`` are counted but not entered (foreign, opaque); ``_kind`` keeps the
    answer per type."""
    if not (t.__module__.startswith("agentgrammar") and t.__name__ not in _OPAQUE_NAMES):
        return None
    names: List[str] = []
    for klass in t.__mro__:
        slots = getattr(klass, "__slots__", ())
        names.extend((slots,) if isinstance(slots, str) else slots)
    return tuple(names)


# What a walk does with an object of a type (``_kind``): count it only, report it (a
# ``CountedOnce``), skip it, or count it and enter its items, its keys and values, or its
# slots and ``__dict__`` (the slot names: ``_entered_slots``).
_COUNT, _REPORT, _SKIP, _ITEMS, _MAPPING = 0, 1, 2, 3, 4
# type -> its kind: a plain dict, read for every object walked (a weak one costs a weak
# reference per read), emptied past ``_KINDS_LIMIT`` types so that classes made at run time go.
_KINDS: Dict[type, Any] = {}
_KINDS_LIMIT = 1024


def _kind(t: type) -> Any:
    """What a walk does with an object of type ``t``: one of the constants above, or the slot
    names to enter; found once per type (the same answer as testing each object)."""
    found = _KINDS.get(t)
    if found is None:
        if t in _ATOMS:
            found = _COUNT
        elif issubclass(t, CountedOnce):
            found = _REPORT
        elif issubclass(t, _SKIP_TYPES):
            found = _SKIP
        elif issubclass(t, dict):
            found = _MAPPING
        elif issubclass(t, _CONTAINERS):
            found = _ITEMS
        else:
            slots = _entered_slots(t)
            found = _COUNT if slots is None else slots
        if len(_KINDS) >= _KINDS_LIMIT:
            _KINDS.clear()
        _KINDS[t] = found
    return found


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
    stop = stop if stop is not None else ()
    seen: Set[int] = set()
    total = 0
    stack = list(roots)
    is_root = {id(r) for r in roots}
    getsizeof = sys.getsizeof
    kinds = _KINDS
    while stack and len(seen) < limit:
        o = stack.pop()
        i = id(o)
        if i in seen or (i in stop and i not in is_root):
            continue
        seen.add(i)
        t = type(o)
        kind = kinds.get(t)
        if kind is None:
            kind = _kind(t)
        if kind == _COUNT:  # most objects of an entry (strings, numbers): nothing to enter
            total += getsizeof(o)
        elif kind == _ITEMS:
            total += getsizeof(o)
            stack.extend(o)
        elif kind == _REPORT:
            if grammars is not None:
                grammars.append(o)
        elif kind == _MAPPING:
            total += getsizeof(o)
            stack.extend(o.keys())
            stack.extend(o.values())
        elif kind != _SKIP:  # this package's object: its slots and its __dict__
            total += getsizeof(o)
            attrs = getattr(o, "__dict__", None)
            if attrs is not None:
                stack.append(attrs)
            for slot in kind:
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


def grammar_bytes(grammar: CountedOnce) -> int:
    """The estimated bytes of Python objects that ``grammar`` keeps (its IR, normalized rules,
    link tables and serialized words): ``grammar.counted_bytes()``, for a ``Grammar``
    ``GRAMMAR_BYTES_PER_WORD`` per byte of its serialized form, or 2 KiB per rule before it is
    serialized.

    Example:
        >>> from agentgrammar import Grammar
        >>> g = Grammar.from_regex("[a-z]+")
        >>> words = len(g.to_bytes())
        >>> grammar_bytes(g) == GRAMMAR_BYTES_PER_WORD * words
        True
    """
    return grammar.counted_bytes()


def _acquire(found: Iterable[Any]) -> None:
    """Count the grammars ``found`` (and their parts) as reached once more."""
    stack = list(found)
    while stack:
        g = stack.pop()
        entry = _LEDGER.get(id(g))
        if entry is not None and entry[0] is g:
            entry[2] += 1
            continue
        parts = g.counted_parts()
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
