"""``ir.CountedText`` through the grammar layer (references, renaming, validation, printing,
serialization) and ``counted_text.counts_in_own_states``, which tells the converter when the C
core may count a pattern's characters in the pattern's own states."""

from __future__ import annotations

import struct

import pytest

from agentgrammar import Grammar, GrammarError
from agentgrammar.grammar.char_dfa import CharDFA
from agentgrammar.grammar.counted_text import REST_MAX, counts_in_own_states
from agentgrammar.grammar.ir import (
    CharClass,
    CountedText,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    referenced_rules,
    rename,
)
from agentgrammar.grammar.regex import parse_regex
from agentgrammar.grammar.serialize import KIND_COUNTED_TEXT

CHAR = CharClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)))


def dfa(pattern: str) -> CharDFA:
    return CharDFA.from_expr(parse_regex(pattern))


@pytest.mark.parametrize(
    "pattern,lo,hi,expected",
    [
        (".+@.+[.].+", 5, 200, True),  # every shortest way out passes a loop
        (".+@.+[.].+", 0, 4, False),  # no string of five characters fits
        ("(ab)+", 0, 300, True),  # no minimum: the shortest way out always fits
        ("(ab)+", 1, 300, False),  # with one: only even lengths
        ("a.*___", 10, 300, True),  # `_` loops where `___` ends: every longer way out exists
        (".+@.+[.]___", 0, 300, True),
        (".+@.+[.]___", 10, 300, False),  # past `.___` the next `_` starts over: no loop
        ("x{300}.*", 0, 1000, False),  # 300 characters still needed at the start
        (f"x{{{REST_MAX}}}.*", 0, 1000, True),
        ("[a-z]+", 0, None, True),
        ("[a-z]+", 3, None, True),
    ],
)
def test_counts_in_own_states(pattern: str, lo: int, hi, expected: bool) -> None:
    assert counts_in_own_states(dfa(pattern), lo, hi) is expected


def test_an_empty_language_is_not_counted() -> None:
    assert not counts_in_own_states(dfa("a").intersect(dfa("b")), 0, 10)


def test_references_and_renaming_reach_inside() -> None:
    text = CountedText(Seq((Literal(b"a"), RuleRef("body"))), RuleRef("ch"), 2, 9)
    assert sorted(referenced_rules(text)) == ["body", "ch"]
    assert rename(text, {"body": "b2", "ch": "c2"}) == CountedText(
        Seq((Literal(b"a"), RuleRef("b2"))), RuleRef("c2"), 2, 9
    )


def test_validation_checks_bounds_and_references() -> None:
    body = Repeat(Literal(b"a"), 0, None)
    with pytest.raises(GrammarError, match="CountedText min 5 is larger than max 2"):
        Grammar.from_rules([Rule("root", CountedText(body, RuleRef("ch"), 5, 2)), Rule("ch", CHAR)])
    with pytest.raises(GrammarError, match="'ch' is not defined"):
        Grammar.from_rules([Rule("root", CountedText(body, RuleRef("ch"), 0, 2))])
    g = Grammar.from_rules([Rule("root", CountedText(body, RuleRef("ch"), 0, 2)), Rule("ch", CHAR)])
    assert [r.name for r in g.rules] == ["root", "ch"]  # the character is reached through it


def test_prints_as_an_intersection_that_parses_back() -> None:
    g = Grammar.from_rules(
        [Rule("root", CountedText(Repeat(Literal(b"ab"), 1, None), RuleRef("ch"), 0, 5)), Rule("ch", CHAR)]
    )
    text = str(g)
    assert "(" in text and "& ch{0,5})" in text
    back = Grammar.from_ebnf(text)
    for s in ("ab", "abab", "ababab", "a", ""):
        assert back.accepts(s) == g.accepts(s) == (s in ("ab", "abab")), s


def test_serialized_as_one_node() -> None:
    body = Repeat(Literal(b"a"), 0, None)
    g = Grammar.from_rules([Rule("root", CountedText(body, RuleRef("ch"), 3, None)), Rule("ch", CHAR)])
    words = struct.unpack(f"={len(g.to_bytes()) // 4}i", g.to_bytes())
    n_rules, n_nodes = words[2], words[4]
    offsets = words[6 + n_rules : 6 + n_rules + n_nodes]
    data = words[6 + n_rules + n_nodes :]
    node = data[offsets[words[6]] :]  # the root's body (rule 0)
    assert node[0] == KIND_COUNTED_TEXT and node[3:5] == (3, -1)


def test_json_schema_bounds_of_any_size_compile_to_the_same_words() -> None:
    sizes = {
        len(Grammar.from_json_schema({"type": "string", "pattern": "@", "maxLength": hi}).to_bytes())
        for hi in (300, 5000, 100_000)
    }
    assert len(sizes) == 1


def test_a_large_counted_text_prints_but_does_not_parse_back() -> None:
    """Parsed back, the printed intersection is built as a product: past the limits, refused
    at its line (docs/limits.md)."""
    g = Grammar.from_json_schema({"type": "string", "pattern": "@", "maxLength": 300})
    text = str(g)
    assert "& json_any_char{0,300})" in text
    with pytest.raises(GrammarError, match="line 1"):
        Grammar.from_ebnf(text)
