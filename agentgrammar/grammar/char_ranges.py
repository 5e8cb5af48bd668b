"""Range arithmetic of the character automata (``char_dfa``): the moves of a state are
``(lo, hi, target)`` edges over inclusive code point (or byte) ranges.

Example:
    >>> partition([(0x61, 0x7A, 1), (0x30, 0x39, 1), (0x61, 0x61, 2)])
    [(48, 57, frozenset({1})), (97, 97, frozenset({1, 2})), (98, 122, frozenset({1}))]
    >>> merge_edges([(0x62, 0x63, 1), (0x61, 0x61, 1)])
    [(97, 99, 1)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..errors import GrammarError
from .utf8 import normalize_ranges

if TYPE_CHECKING:
    from .char_dfa import _Work

__all__ = ["Edge", "add_range", "clip", "join_ranges", "merge_edges", "pair_state", "partition"]

Edge = Tuple[int, int, int]  # (lo, hi, target), inclusive code point range


def clip(ranges: Sequence[Tuple[int, int]], alphabet: Sequence[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """``ranges`` within the alphabet (for code points: without surrogates)."""
    out = []
    for lo, hi in normalize_ranges(ranges):
        for a, b in alphabet:
            if lo <= b and a <= hi:
                out.append((max(lo, a), min(hi, b)))
    return out


def partition(moves: Sequence[Edge], work: Optional["_Work"] = None) -> List[Tuple[int, int, FrozenSet[int]]]:
    """Split overlapping ranged moves into disjoint ranges, each with its set of targets (a sweep
    over the range ends, so a wide class among many narrow ones costs no more than they do)."""
    events: List[Tuple[int, int, int]] = []
    for lo, hi, t in moves:
        events.append((lo, 1, t))
        events.append((hi + 1, -1, t))
    events.sort()
    active: Dict[int, int] = {}
    out: List[Tuple[int, int, FrozenSet[int]]] = []
    i, n = 0, len(events)
    steps = n
    while i < n:
        x = events[i][0]
        while i < n and events[i][0] == x:
            _, d, t = events[i]
            c = active.get(t, 0) + d
            if c:
                active[t] = c
            else:
                del active[t]
            i += 1
        if active and i < n:
            targets = frozenset(active)
            steps += len(targets)
            end = events[i][0] - 1
            if out and out[-1][1] == x - 1 and out[-1][2] == targets:
                out[-1] = (out[-1][0], end, targets)
            else:
                out.append((x, end, targets))
    if work is not None:
        work.charge(steps)
    return out


def join_ranges(ranges: List[Tuple[int, int]]) -> Tuple[Tuple[int, int], ...]:
    """Disjoint ranges sorted, with adjacent ones joined (a canonical form)."""
    ranges.sort()
    out: List[Tuple[int, int]] = []
    for lo, hi in ranges:
        if out and out[-1][1] == lo - 1:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def merge_edges(edges: Sequence[Edge]) -> List[Edge]:
    """Sorted edges with adjacent ranges to the same target joined."""
    out: List[Edge] = []
    for lo, hi, t in sorted(edges):
        if out and out[-1][2] == t and out[-1][1] == lo - 1:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return out


def pair_state(
    ids: Dict[Tuple[int, ...], int], pairs: List[Tuple[int, ...]], key: Tuple[int, ...], limit: int, verb: str
) -> int:
    """The product state of a pair (or tuple) of states, numbered on first sight; past ``limit``
    states GrammarError ("<verb> the constraints needs ...")."""
    target = ids.get(key)
    if target is None:
        if len(pairs) >= limit:
            raise GrammarError(f"{verb} the constraints needs an automaton of more than {limit} states")
        target = ids[key] = len(pairs)
        pairs.append(key)
    return target


def add_range(row: List[Edge], lo: int, hi: int, target: int) -> None:
    """Appends the edge ``lo..hi -> target`` to a row built in order, merged into the last
    edge when it continues it."""
    if row and row[-1][2] == target and row[-1][1] == lo - 1:
        row[-1] = (row[-1][0], hi, target)
    else:
        row.append((lo, hi, target))
