"""The two grammars that bound a grammar's first masks (``grammar/first_bounds.py``): they keep
the rules near the start and only those; each rule left out becomes, in ``under``, a string of
its own language and, in ``over``, any bytes; so every text under accepts the grammar accepts,
and every text the grammar accepts over accepts; no bounds where nothing would be left out or a
rule left out has no string to stand for it."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from agentgrammar import Grammar
from agentgrammar.grammar.first_bounds import first_bounds
from agentgrammar.grammar.ir import Literal, RuleRef

ITEM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "n": {"type": "integer"}, "on": {"type": "boolean"}},
    "required": ["name", "n"],
}
SCHEMA = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["a", "b"]},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1},
        "owner": {"$ref": "#/$defs/item"},
        "score": {"type": "number"},
    },
    "required": ["items"],
    "$defs": {"item": ITEM},
}
TEXTS = [
    '{"items": [{"name": "x", "n": 1}]}',
    '{"kind": "a", "items": [{"name": "", "n": 0}]}',
    '{"kind": "b", "items": [{"name": "q", "n": 2, "on": true}], "owner": {"name": "o", "n": 3}}',
    '{"items": [{"name": "x", "n": 1}], "score": 1.5}',
    '{"items": []}',
    '{"items": [{"name": "x"}]}',
    '{"kind": "c", "items": [{"name": "x", "n": 1}]}',
    '{"items": [{"name": "x", "n": 1}], "owner": 7}',
    "{}",
    '{"items": [{"name": "", "n": 0}], "owner": {"name": "", "n": 0}}',
]


def _rules(g: Grammar) -> Dict[str, Any]:
    return {r.name: r.body for r in g.rules}


def test_under_and_over_bound_the_grammar_on_every_text() -> None:
    g = Grammar.from_json_schema(SCHEMA)
    bounds = first_bounds(g, horizon=4)
    assert bounds is not None
    under, over = bounds
    for text in TEXTS:
        accepted = g.accepts(text)
        assert not under.accepts(text) or accepted, text
        assert not accepted or over.accepts(text), text
    assert not all(under.accepts(t) == g.accepts(t) == over.accepts(t) for t in TEXTS)  # bounds, not copies


def test_the_rules_near_the_start_are_kept_and_the_rest_stand_in() -> None:
    g = Grammar.from_json_schema(SCHEMA)
    under, over = first_bounds(g, horizon=4)  # type: ignore[misc]
    whole, low, high = _rules(g), _rules(under), _rules(over)
    kept = [name for name in low if name in whole and low[name] is whole[name]]
    left_out = [name for name in low if name in whole and low[name] is not whole[name]]
    assert g.root in kept and left_out
    assert len(kept) + len(left_out) < len(whole)  # rules named only by rules left out are gone
    for name in left_out:
        witness = low[name]
        assert isinstance(witness, Literal)
        # the stand-in of under is a string of the rule's own language
        assert Grammar(g.rules, root=name).accepts(witness.value), name
        assert isinstance(high[name], RuleRef) and high[name].name not in whole  # any bytes
    wider = first_bounds(g, horizon=64)
    assert wider is None or len(_rules(wider[0])) >= len(low)


def test_no_bounds_when_nothing_is_left_out() -> None:
    assert first_bounds(Grammar.from_ebnf('root ::= "a" b\nb ::= "b"+')) is None
    assert first_bounds(Grammar.from_regex("[a-z]+")) is None


def test_no_bounds_when_a_rule_left_out_has_no_string_to_stand_for_it() -> None:
    # the rule past the horizon only recurses: it derives no string a walk can find (nor any)
    text = 'root ::= "abcdefgh" (x | "z")\nx ::= "y" x'
    g = Grammar.from_ebnf(text)
    assert first_bounds(g, horizon=2) is None


def test_the_name_for_any_bytes_is_fresh() -> None:
    g = Grammar.from_ebnf('root ::= "abcdefgh" first_bounds_any\nfirst_bounds_any ::= "x"')
    bounds = first_bounds(g, horizon=2)
    assert bounds is not None
    under, over = bounds
    names: List[str] = [r.name for r in over.rules]
    assert len(set(names)) == len(names) and "first_bounds_any_1" in names
    assert under.accepts("abcdefghx") and over.accepts("abcdefgh\x01\x02")
    assert not under.accepts("abcdefghy")


@pytest.mark.parametrize("horizon", [1, 2, 4, 16])
def test_every_horizon_gives_bounds_or_none(horizon: int) -> None:
    g = Grammar.from_json_schema(SCHEMA)
    bounds = first_bounds(g, horizon=horizon)
    if bounds is not None:
        for text in TEXTS:
            assert not bounds[0].accepts(text) or g.accepts(text)
            assert not g.accepts(text) or bounds[1].accepts(text)
