"""Minimal automata for ``CharDFA``: minimizing a DFA, and the complement of a minimal one.

Each function takes a DFA's rows (``edges[s]``: sorted ``(lo, hi, target)`` moves) and
acceptance, and returns the rows and acceptance of the result, trimmed (every state reachable
from the start, state 0, and able to reach acceptance) and minimal. ``work`` is the
operation's step budget (``char_dfa._Work``): past it, GrammarError.

Example:
    >>> from agentgrammar.grammar.char_dfa import _Work
    >>> # "a" or "b" then "a": the states after "a" and after "b" merge into one
    >>> edges, accepting = minimal_rows([[(97, 97, 1), (98, 98, 2)], [(97, 97, 3)], [(97, 97, 3)], []],
    ...                                 [False, False, False, True], _Work("example"))
    >>> len(edges), edges[0], accepting.count(True)
    (3, [(97, 98, 2)], 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from .char_ranges import Edge, add_range, join_ranges, merge_edges

if TYPE_CHECKING:
    from .char_dfa import _Work

__all__ = ["minimal_complement_rows", "minimal_rows", "minimal_trie_rows"]

Rows = Tuple[List[List[Edge]], List[bool]]


def minimal_rows(edges: List[List[Edge]], accepting: List[bool], work: "_Work") -> Rows:
    """The equivalent trimmed DFA with the fewest states (Hopcroft's partition refinement,
    all characters at once: a splitter block C splits a block by the exact set of characters
    that lead each of its states into C; O(E log n) with ranged edges); one state accepting
    nothing when nothing is accepted."""
    # trimmed on the way (without building the intermediate automaton)
    n = len(edges)
    reach = [False] * n
    reach[0] = True
    stack = [0]
    while stack:
        for _, _, t in edges[stack.pop()]:
            if not reach[t]:
                reach[t] = True
                stack.append(t)
    incoming: List[List[Tuple[int, Tuple[int, int]]]] = [[] for _ in range(n)]  # (s, its range)
    for s in range(n):
        if reach[s]:
            for lo, hi, t in edges[s]:
                incoming[t].append((s, (lo, hi)))
            work.charge(2 * len(edges[s]) + 1)  # these lists, and the final rows
    live = [reach[s] and accepting[s] for s in range(n)]
    stack = [s for s in range(n) if live[s]]
    while stack:
        for s, _ in incoming[stack.pop()]:  # a state that leads to a live one is live
            if not live[s]:
                live[s] = True
                stack.append(s)
    if not live[0]:
        return [[]], [False]
    acyclic = _acyclic_minimal_rows(edges, accepting, live, work)
    if acyclic is not None:
        return acyclic
    # (the incoming moves of a live state all come from live states)
    final = {s for s in range(n) if live[s] and accepting[s]}
    rest = {s for s in range(n) if live[s] and not accepting[s]}
    blocks: List[set] = [final] + ([rest] if rest else [])
    block_of = [-1] * n
    for b, members in enumerate(blocks):
        for s in members:
            block_of[s] = b
    pending = list(range(len(blocks)))  # splitters still to apply
    while pending:
        into: Dict[int, List[Tuple[int, int]]] = {}
        for t in blocks[pending.pop()]:
            for s, r in incoming[t]:
                into.setdefault(s, []).append(r)
            work.charge(len(incoming[t]) + 1)
        groups: Dict[int, Dict[Tuple[Tuple[int, int], ...], List[int]]] = {}
        for s, ranges in into.items():
            sig = (ranges[0],) if len(ranges) == 1 else join_ranges(ranges)
            by_sig = groups.get(block_of[s])
            if by_sig is None:
                groups[block_of[s]] = {sig: [s]}
            else:
                by_sig.setdefault(sig, []).append(s)
        for b, by_sig in groups.items():
            members = blocks[b]
            if len(by_sig) == 1:
                parts = list(by_sig.values())
                touched = len(parts[0])
                if touched == len(members):
                    continue  # the block is stable with respect to the splitter
                keep = 0
            else:
                parts = list(by_sig.values())
                touched = sum(len(p) for p in parts)
                keep = max(range(len(parts)), key=lambda i: len(parts[i]))
            work.charge(touched)
            untouched = len(members) - touched
            if untouched >= len(parts[keep]):
                moving = parts  # the untouched states stay in block b
            else:
                moving = [p for i, p in enumerate(parts) if i != keep]
                if untouched:  # fewer than the kept part, so listing them is cheap
                    seen = {s for p in parts for s in p}
                    moving.append([s for s in members if s not in seen])
            for part in moving:
                # every moved part is a new splitter; b, if pending, stays pending (now
                # smaller), and if not, its largest part need not be (Hopcroft's half)
                nb = len(blocks)
                blocks.append(set(part))
                members.difference_update(part)
                for s in part:
                    block_of[s] = nb
                pending.append(nb)
    # renumber so that the start's block is 0
    order: Dict[int, int] = {block_of[0]: 0}
    for b in range(len(blocks)):
        if blocks[b]:
            order.setdefault(b, len(order))
    count = len(order)
    out: List[List[Edge]] = [[] for _ in range(count)]
    out_accepting = [False] * count
    for b, members in enumerate(blocks):
        if not members:
            continue
        s = next(iter(members))
        c = order[b]
        out[c] = merge_edges([(lo, hi, order[block_of[t]]) for lo, hi, t in edges[s] if live[t]])
        out_accepting[c] = accepting[s]
    return out, out_accepting


def minimal_trie_rows(edges: List[List[Edge]], accepting: List[bool], work: "_Work") -> Rows:
    """``minimal_rows`` of a trie (each state but the start entered from one before it, each
    leaf accepting): every state is reachable and live and there is no cycle, so Revuz's pass
    runs at once, without the passes that would find that out; the same work is charged."""
    work.charge(sum(2 * len(row) + 1 for row in edges))  # as minimal_rows' first pass
    if not any(accepting):
        return [[]], [False]
    out = _acyclic_minimal_rows(edges, accepting, [True] * len(edges), work)
    assert out is not None  # a trie has no cycle
    return out


def _acyclic_minimal_rows(
    edges: List[List[Edge]], accepting: List[bool], live: List[bool], work: "_Work"
) -> Optional[Rows]:
    """The minimal DFA when the live part has no cycle (a pattern under a finite length
    bound, a set of words), else None: states in reverse topological order, each named by
    its acceptance and its moves to already named states, in one pass (Revuz's algorithm)."""
    state = {0: 0}  # 0: on the DFS path, 1: done
    post: List[int] = []
    stack = [(0, 0)]
    while stack:
        s, i = stack.pop()
        row = edges[s]
        while i < len(row) and not live[row[i][2]]:
            i += 1
        if i == len(row):
            state[s] = 1
            post.append(s)
            continue
        stack.append((s, i + 1))
        t = row[i][2]
        seen = state.get(t)
        if seen == 0:
            return None  # a cycle
        if seen is None:
            state[t] = 0
            stack.append((t, 0))
    work.charge(len(post))
    cls: Dict[int, int] = {}
    ids: Dict[Tuple[bool, Tuple[Edge, ...]], int] = {}
    rows: List[List[Edge]] = []
    named: List[bool] = []
    for s in post:
        row = merge_edges([(lo, hi, cls[t]) for lo, hi, t in edges[s] if live[t]])
        work.charge(len(row) + 1)
        key = (accepting[s], tuple(row))
        c = ids.get(key)
        if c is None:
            c = ids[key] = len(rows)
            rows.append(row)
            named.append(accepting[s])
        cls[s] = c
    # the start is named last; renumber so that it is state 0
    top = cls[0]
    new = [top] + [c for c in range(len(rows)) if c != top]
    at = {c: i for i, c in enumerate(new)}
    out = [[(lo, hi, at[t]) for lo, hi, t in rows[c]] for c in new]
    return out, [named[c] for c in new]


def minimal_complement_rows(
    edges: List[List[Edge]], accepting: List[bool], alphabet: Sequence[Tuple[int, int]], work: "_Work"
) -> Rows:
    """The complement of a minimal trimmed DFA that accepts something, minimal as it is
    built: completed with a dead state (distinct from every state, each of which accepts some
    string) and acceptance flipped, a minimal complete DFA; less the state that accepted
    every string (at most one, looping to itself), now dead, it is trimmed too."""
    n = len(edges)
    whole = tuple(alphabet)
    universal = -1
    for s in range(n):
        row = edges[s]
        if accepting[s] and all(t == s for _, _, t in row) and join_ranges([r[:2] for r in row]) == whole:
            universal = s
            break
    if universal == 0:
        return [[]], [False]
    top = alphabet[-1][1]
    old_to_new = [s - (universal != -1 and s > universal) for s in range(n)]
    dead = n - (universal != -1)
    out: List[List[Edge]] = []
    used_dead = False
    for s in range(n):
        if s == universal:
            continue
        row = edges[s]
        work.charge(2 * len(row) + 1)
        # the row is sorted and merged (minimizing made it): its gaps and kept moves in one
        # pass, in order
        new_row: List[Edge] = []
        nxt = 0  # the first character after the moves seen
        for lo, hi, t in row + [(top + 1, top + 1, -1)]:
            if lo > nxt:
                for a, b in alphabet:
                    x, y = max(nxt, a), min(lo - 1, b)
                    if x <= y:
                        add_range(new_row, x, y, dead)
                        used_dead = True
            if t >= 0 and t != universal:
                add_range(new_row, lo, hi, old_to_new[t])
            nxt = hi + 1
        out.append(new_row)
    flipped = [not accepting[s] for s in range(n) if s != universal]
    if used_dead:
        out.append([(a, b, dead) for a, b in alphabet])
        flipped.append(True)
    return out, flipped
