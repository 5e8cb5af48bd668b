"""Minimizing a DFA's rows and complementing minimal ones: the same language (or its
complement) over every short string, trimmed, and nothing left to merge."""

from __future__ import annotations

import itertools
import random
from typing import List, Tuple

import pytest

from agentgrammar.grammar.char_dfa import _Work
from agentgrammar.grammar.char_dfa_minimize import minimal_complement_rows, minimal_rows, minimal_trie_rows
from agentgrammar.grammar.char_ranges import Edge

ALPHABET = ((97, 99),)  # "a".."c"
TEXTS = ["".join(t) for n in range(6) for t in itertools.product("abc", repeat=n)]


def _accepts(edges: List[List[Edge]], accepting: List[bool], text: str) -> bool:
    s = 0
    for ch in text:
        nxt = [t for lo, hi, t in edges[s] if lo <= ord(ch) <= hi]
        if not nxt:
            return False
        s = nxt[0]
    return accepting[s]


def _random_dfa(rng: random.Random) -> Tuple[List[List[Edge]], List[bool]]:
    n = rng.randint(1, 7)
    edges = [sorted((c, c, rng.randrange(n)) for c in range(97, 100) if rng.random() < 0.7) for _ in range(n)]
    return edges, [rng.random() < 0.4 for _ in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_minimal_rows_keep_the_language_and_merge_everything_mergeable(seed: int) -> None:
    edges, accepting = _random_dfa(random.Random(seed))
    out, out_accepting = minimal_rows(edges, accepting, _Work("test"))
    for text in TEXTS:
        assert _accepts(out, out_accepting, text) == _accepts(edges, accepting, text), text
    again = minimal_rows(out, out_accepting, _Work("test"))
    assert len(again[0]) == len(out)  # minimal: nothing left to merge
    if out != [[]]:  # no two states accept the same short texts
        assert len({_from(out, out_accepting, s) for s in range(len(out))}) == len(out)


def _from(edges: List[List[Edge]], accepting: List[bool], start: int) -> Tuple[bool, ...]:
    """What state ``start`` accepts of the short texts (its row of the Myhill-Nerode table)."""
    row = []
    for text in TEXTS:  # up to five characters: a witness for any two of seven states
        s = start
        ok = True
        for ch in text:
            nxt = [t for lo, hi, t in edges[s] if lo <= ord(ch) <= hi]
            if not nxt:
                ok = False
                break
            s = nxt[0]
        row.append(ok and accepting[s])
    return tuple(row)


@pytest.mark.parametrize("seed", range(40))
def test_minimal_complement_rows_accept_exactly_what_the_dfa_rejects(seed: int) -> None:
    rng = random.Random(seed)
    edges, accepting = [[]], [False]
    while not any(accepting):  # the rows of a minimal DFA that accepts something
        edges, accepting = minimal_rows(*_random_dfa(rng), _Work("test"))
    out, out_accepting = minimal_complement_rows(edges, accepting, ALPHABET, _Work("test"))
    for text in TEXTS:
        assert _accepts(out, out_accepting, text) != _accepts(edges, accepting, text), text
    assert len(minimal_rows(out, out_accepting, _Work("test"))[0]) == len(out)


def _random_trie(rng: random.Random) -> Tuple[List[List[Edge]], List[bool]]:
    children: List[dict] = [{}]
    accepting = [False]
    for _ in range(rng.randint(0, 6)):
        at = 0
        for _ in range(rng.randint(0, 4)):
            c = rng.randint(97, 99)
            if c not in children[at]:
                children[at][c] = len(children)
                children.append({})
                accepting.append(False)
            at = children[at][c]
        accepting[at] = True
    return [[(c, c, t) for c, t in sorted(row.items())] for row in children], accepting


@pytest.mark.parametrize("seed", range(40))
def test_minimal_trie_rows_are_minimal_rows_with_the_same_work(seed: int) -> None:
    edges, accepting = _random_trie(random.Random(seed))
    general, trie = _Work("test"), _Work("test")
    assert minimal_trie_rows(edges, accepting, trie) == minimal_rows(edges, accepting, general)
    assert trie.left == general.left
