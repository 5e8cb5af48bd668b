"""Which character automata the C core can count in their own states (``ir.CountedText``):
a pattern's string under length bounds, whose product with a count of characters would grow
with the bounds.

The core keeps, for each state, the fewest characters still needed to finish, and lets an
item go on while its count plus that fits under the maximum. With no minimum that is exact:
the shortest way to finish always fits. With a minimum the count must also be able to reach
it, which holds where every longer way to finish exists too: from every state, some shortest
way to finish passes a state that loops on one character. The core refuses the other
automata, and needs at most 255 characters after any position.

Example:
    >>> from agentgrammar.grammar.regex import parse_regex
    >>> email = CharDFA.from_expr(parse_regex(".+@.+[.].+"))
    >>> counts_in_own_states(email, 5, 200), counts_in_own_states(email, 0, 2)
    (True, False)
    >>> pairs = CharDFA.from_expr(parse_regex("(ab)+"))
    >>> counts_in_own_states(pairs, 0, 300), counts_in_own_states(pairs, 1, 300)
    (True, False)
"""

from __future__ import annotations

from typing import List, Optional

from .char_dfa import CharDFA

__all__ = ["REST_MAX", "counts_in_own_states"]

#: The most characters that may be needed after a position (the core keeps them in a byte).
REST_MAX = 255


def _sources(dfa: CharDFA) -> List[List[int]]:
    """The states with an edge into each state (once per edge)."""
    back: List[List[int]] = [[] for _ in dfa.edges]
    for s, row in enumerate(dfa.edges):
        for _, _, t in row:
            back[t].append(s)
    return back


def _rest(dfa: CharDFA, back: List[List[int]]) -> List[Optional[int]]:
    """The fewest characters from each state to an accepting one (None: none); ``back``:
    ``_sources(dfa)``."""
    rest: List[Optional[int]] = [0 if a else None for a in dfa.accepting]
    frontier = [s for s, a in enumerate(dfa.accepting) if a]
    while frontier:
        nxt = []
        for t in frontier:
            for s in back[t]:
                if rest[s] is None:
                    rest[s] = rest[t] + 1  # type: ignore[operator]
                    nxt.append(s)
        frontier = nxt
    return rest


def _loops_on_shortest_ways(
    dfa: CharDFA, back: List[List[int]], rest: List[Optional[int]], kept: List[bool]
) -> bool:
    """Whether from every kept state some shortest way to finish passes a state that loops on
    itself: backwards from those states (``back``: ``_sources(dfa)``), along the edges where
    ``rest`` drops by one."""
    todo = [s for s, row in enumerate(dfa.edges) if any(t == s for _, _, t in row)]
    good = [False] * len(dfa.edges)
    for s in todo:
        good[s] = True
    while todo:
        t = todo.pop()
        for s in back[t]:
            if not good[s] and rest[s] is not None and rest[s] == rest[t] + 1:  # type: ignore[operator]
                good[s] = True
                todo.append(s)
    return all(good[s] for s in range(len(good)) if kept[s])


def counts_in_own_states(dfa: CharDFA, lo: int, hi: Optional[int]) -> bool:
    """Whether ``ir.CountedText`` over ``dfa``'s strings of ``lo``..``hi`` characters is
    exact in the C core, and not empty (see the module's docstring)."""
    d = dfa.trimmed()
    if not d.edges:
        return False
    back = _sources(d)
    rest = _rest(d, back)
    start = rest[0]
    if start is None or (hi is not None and start > hi):
        return False  # no string fits: the caller's product says so
    kept = [r is not None and (hi is None or r <= hi) for r in rest]
    if max(r for r, k in zip(rest, kept) if k) > REST_MAX:  # type: ignore[type-var]
        return False
    return lo == 0 or _loops_on_shortest_ways(d, back, rest, kept)
