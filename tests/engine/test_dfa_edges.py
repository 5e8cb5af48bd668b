"""The edges of each DFA state, as subset construction finds them (``csrc/ag_fsm.c``).

A state whose NFA states have disjoint byte ranges and at most one rule edge (inside a
literal, a string's characters beside its closing quote) takes its edges directly; any other
goes through the sweep over range ends. Both must give the minimal automaton: these grammars
mix the two kinds (disjoint ranges to different targets, overlapping ranges, a rule edge
beside bytes, two rule edges, an accepting state inside a set), and each is checked for its
exact state count and for the strings it accepts and rejects. A closure keeps only the NFA
states that act (a byte or rule edge, or acceptance): the last cases reach those through
chains of epsilon edges (inlined whitespace loops, nested nullable repeats, a rule edge and
acceptance behind them), where keeping too few would lose edges and keeping the
epsilon-only states too would only add states for minimization to merge. The random grammars of
``test_matcher_properties.py`` check the masks of both kinds against the reference matcher.
"""

from __future__ import annotations

from typing import List

import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from agentgrammar.engine._native import lib

STOP = 127 - 32
VOCAB = Vocabulary([bytes([c]) for c in range(32, 127)] + [b"</s>"], stop_token_ids=[STOP])

# (grammar, states of its minimal automata, accepted, rejected)
CASES = [
    ('root ::= "key" ":" [0-9]', 6, ["key:0", "key:9"], ["key:", "key:a", "ke:0", "key:00"]),
    (
        'root ::= "a" ( [0-4] "x" | [5-9] "y" | "z" )',
        5,
        ["a0x", "a4x", "a5y", "a9y", "az"],
        ["a5x", "a0y", "azx", "a", "ax"],
    ),
    (  # overlapping ranges: 4-6 leads to both tails
        'root ::= "a" ( [0-6] "x" | [4-9] "y" )',
        6,
        ["a0x", "a4x", "a4y", "a6y", "a9y"],
        ["a0y", "a9x", "a4", "a"],
    ),
    ('root ::= "q" [a-z]* "q"', 3, ["qq", "qabcq"], ["q", "qAq", "qaq1"]),
    (  # a rule edge beside a byte edge
        'root ::= "n" r "!" | "n" "m"\nr ::= "r" r | "s"',
        7,
        ["nm", "ns!", "nrrs!"],
        ["n!", "nms", "nrs", "ns"],
    ),
    (  # two rule edges out of one state
        'root ::= "n" r "!" | "n" s "?"\nr ::= "r" r | "s"\ns ::= "t" s | "u"',
        11,
        ["ns!", "nrs!", "nu?", "nttu?"],
        ["ns?", "nu!", "nrt", "n"],
    ),
    ('root ::= "a" "b"?', 3, ["a", "ab"], ["b", "abb", ""]),
    (  # whitespace loops inlined between literals (ws keeps a bare start of its own)
        'root ::= "{" ws "a" ws ":" ws [0-9]+ ws "}"\nws ::= [ \\t]*',
        8,
        ["{a:1}", "{ a :\t12 }", "{\t\ta:0  }"],
        ["{a:}", "{ a : 1 2 }", "{a:1", "{b:1}"],
    ),
    ('root ::= "a" "b"* "c"?', 3, ["a", "abbb", "ac", "abc"], ["", "acb", "acc", "b"]),
    (  # a rule edge and acceptance behind epsilon chains
        'root ::= "x" ws r ws "y"\nr ::= "(" r ")" | "z"\nws ::= " "*',
        9,
        ["xzy", "x (z) y", "x((z))  y"],
        ["xy", "x(z y", "xz", "x (z)) y"],
    ),
    ('root ::= ("a"? "b"?)* "c"', 2, ["c", "abc", "bbac", "aac"], ["", "ab", "cc", "ca"]),
    ('root ::= ("a" | "")* ("b" | "") "!"', 3, ["!", "aa!", "ab!", "b!"], ["ba!", "abb!", "a", "!!"]),
    (  # an array of numbers: nullable members, loops and accepting ends in one rule
        'root ::= "[" ws ( v ( ws "," ws v )* )? ws "]"\nv ::= "-"? [0-9]+ ( "." [0-9]+ )?\nws ::= [ ]*',
        15,
        ["[]", "[ ]", "[1]", "[-1.5, 2 ,3.25]", "[ 0 ]"],
        ["[,]", "[1,]", "[1.]", "[-]", "[1 2]", "[--1]"],
    ),
]


def accepts(compiled, text: str) -> bool:
    m = Matcher(compiled)
    return m.accept_string(text) and m.is_completed()


@pytest.mark.parametrize("ebnf,states,good,bad", CASES, ids=[c[0].split("\n")[0] for c in CASES])
def test_each_state_gets_its_edges(ebnf: str, states: int, good: List[str], bad: List[str]) -> None:
    compiled = Compiler(VOCAB).compile(Grammar.from_ebnf(ebnf))
    assert lib.ag_grammar_num_states(compiled._grammar_handle) == states
    for text in good:
        assert accepts(compiled, text), text
    for text in bad:
        assert not accepts(compiled, text), text
