"""Grammar.union and Grammar.concat (grammar/combine.py)."""

from __future__ import annotations

import pytest

from agentgrammar import Grammar
from agentgrammar.errors import GrammarError

G1 = 'root ::= r1 | r2\nr1 ::= "true" | ""\nr2 ::= "false" | ""'
G2 = 'root ::= "abc" | r1\nr1 ::= "true" | r1'


def test_union_keeps_each_grammar_apart() -> None:
    g = Grammar.union(Grammar.from_ebnf(G1), Grammar.from_ebnf(G2), Grammar.from_regex("[0-9]+"))
    for s, ok in [
        ("", True),
        ("true", True),
        ("false", True),
        ("abc", True),
        ("42", True),
        ("truefalse", False),
    ]:
        assert g.accepts(s) == ok, s
    assert [r.name for r in g.rules][:3] == ["root", "root_1", "r1"]


def test_concat_in_order() -> None:
    g = Grammar.concat(Grammar.from_ebnf(G1), Grammar.from_ebnf(G2))
    for s, ok in [("abc", True), ("trueabc", True), ("falsetrue", True), ("abctrue", False), ("", False)]:
        assert g.accepts(s) == ok, s


def test_embedded_grammars_stay_parts() -> None:
    schema = Grammar.from_json_schema({"type": "array"})
    g = Grammar.concat(Grammar.from_regex("x"), schema)
    assert g.accepts("x[1, 2]") and not g.accepts("x{}")


def test_needs_grammars() -> None:
    with pytest.raises(GrammarError, match="at least one grammar"):
        Grammar.union()
    with pytest.raises(GrammarError, match="takes grammars"):
        Grammar.concat(Grammar.from_regex("a"), "root ::= b")  # type: ignore[arg-type]
