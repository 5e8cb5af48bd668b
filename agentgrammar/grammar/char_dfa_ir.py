"""A ``CharDFA`` back to grammar IR (``CharDFA.to_ir``): right-linear rules, one per state that
needs one, a self-loop as a repeat, each character spelled by the caller.

Example:
    >>> from agentgrammar.grammar.char_dfa import CharDFA
    >>> from agentgrammar.grammar.ir import CharClass
    >>> from agentgrammar.grammar.regex import parse_regex
    >>> rules = {}
    >>> expr = dfa_to_ir(CharDFA.from_expr(parse_regex("ab*")), lambda r: CharClass(tuple(r)), rules,
    ...                  lambda base: base, "s")
    >>> expr == RuleRef("s"), list(rules)  # the start state is a rule: others may lead back to it
    (True, ['s'])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Set, Tuple

from .ir import EMPTY, Choice, Expr, Repeat, RuleRef, seq

if TYPE_CHECKING:
    from .char_dfa import CharDFA

__all__ = ["dfa_to_ir"]

_INLINE_DEPTH = 48  # deeper chains of single-entry states become rules (bounded recursion)
_SHARED_SIZE = 64  # the most a state shared by several (_small_states) may write out


def dfa_to_ir(
    dfa: "CharDFA",
    spell: Callable[[Sequence[Tuple[int, int]]], Optional[Expr]],
    rules: Dict[str, Expr],
    fresh: Callable[[str], str],
    base_name: str,
) -> Optional[Expr]:
    """IR for the accepted strings, each character spelled by ``spell(ranges)`` (e.g. every
    JSON spelling of one code point in ranges). A state that several others lead to becomes
    a rule named ``fresh(base_name)`` in ``rules``, unless what it leads to is small and
    acyclic (``_small_states``): then it is one expression, shared by every state that
    leads to it. The rest are inlined. None when empty.

    A self-loop becomes a repeat, so the rule nesting grows with the number of state
    changes, not with the string's length."""
    d = dfa.trimmed()
    if not d.accepting[0] and not d.edges[0]:
        return None
    children = [{t for _, _, t in row if t != s} for s, row in enumerate(d.edges)]
    indegree = [0] * len(d.edges)
    for kids in children:
        for t in kids:
            indegree[t] += 1
    small = _small_states(children, indegree)
    names: Dict[int, str] = {}
    shared: Dict[int, Expr] = {}

    def ref(t: int, depth: int) -> Expr:
        if t in small:
            found = shared.get(t)
            if found is None:
                found = shared[t] = body(t, depth + 1)
            return found
        if t != 0 and indegree[t] == 1 and depth < _INLINE_DEPTH:
            return body(t, depth + 1)
        if t not in names:
            names[t] = fresh(base_name)
            rules[names[t]] = body(t, 0)
        return RuleRef(names[t])

    def body(s: int, depth: int) -> Expr:
        groups: Dict[int, List[Tuple[int, int]]] = {}
        for lo, hi, t in d.edges[s]:
            groups.setdefault(t, []).append((lo, hi))
        alts: List[Expr] = []
        for t, ranges in groups.items():
            if t == s:
                continue
            ch = spell(ranges)
            if ch is not None:
                alts.append(seq((ch, ref(t, depth))))
        if d.accepting[s]:
            alts.append(EMPTY)
        rest: Expr = alts[0] if len(alts) == 1 else Choice(tuple(alts))
        loop = spell(groups[s]) if s in groups else None
        return seq((Repeat(loop, 0, None), rest)) if loop is not None else rest

    return ref(0, 0)


def _small_states(children: List[Set[int]], indegree: List[int]) -> Set[int]:
    """The states (not the start) that several others lead to, from which only a few
    states, and no cycle but self-loops, can be reached: at most ``_SHARED_SIZE``
    alternatives and characters written out. ``children[s]``: the states s leads to, s
    itself left out; ``indegree[t]``: how many others lead to t. Such a state is written as one expression
    shared where it is reached, not as a rule: the C core then builds the whole
    automaton as bytes. A rule reference there (the "any string" after the first
    character of a key that is none of an object's names) made the mask cache resolve
    every token that crossed it with the Earley parser, 120k tokens on a 128k
    vocabulary, at the key's first visit."""
    n = len(children)
    parents: List[List[int]] = [[] for _ in range(n)]
    for s, kids in enumerate(children):
        for t in kids:
            parents[t].append(s)
    # Sizes in reverse topological order; a state that reaches a cycle is never sized.
    waiting = [len(kids) for kids in children]
    ready = [s for s in range(n) if waiting[s] == 0]
    size: Dict[int, int] = {}
    while ready:
        s = ready.pop()
        total = 1
        for t in children[s]:
            inlined = indegree[t] == 1 or size[t] <= _SHARED_SIZE
            total += 1 + (size[t] if inlined else 0)
        size[s] = min(total, _SHARED_SIZE + 1)
        for p in parents[s]:
            waiting[p] -= 1
            if waiting[p] == 0:
                ready.append(p)
    return {s for s, v in size.items() if s != 0 and indegree[s] > 1 and v <= _SHARED_SIZE}
