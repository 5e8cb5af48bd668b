"""Tests for ``agentgrammar.grammar.validate``: what the checks of converted rules (nodes not
type-checked again) still find, exactly as the full checks do."""

from __future__ import annotations

import pytest

from agentgrammar.errors import GrammarError
from agentgrammar.grammar.ir import Choice, Embed, Literal, Repeat, Rule, RuleRef, Seq
from agentgrammar.grammar.validate import _validate, validate_rules


@pytest.mark.parametrize("check_nodes", [True, False])
def test_an_undefined_reference_in_an_unreachable_rule_is_refused(check_nodes: bool) -> None:
    rules = [Rule("root", Literal(b"a")), Rule("unused", Seq((RuleRef("nope"), RuleRef("root"))))]
    with pytest.raises(GrammarError, match=r"rule 'nope' is not defined \(referenced in rule 'unused'\)"):
        validate_rules(rules, "root", check_nodes=check_nodes)


@pytest.mark.parametrize("check_nodes", [True, False])
def test_the_first_undefined_reference_in_rule_order_is_named(check_nodes: bool) -> None:
    rules = [
        Rule("root", Seq((RuleRef("a"), RuleRef("b")))),
        Rule("a", Choice((RuleRef("late"), Literal(b"x")))),
        Rule("b", Repeat(RuleRef("early"), 0, None)),
    ]
    with pytest.raises(GrammarError, match=r"rule 'late' is not defined \(referenced in rule 'a'\)"):
        validate_rules(rules, "root", check_nodes=check_nodes)


@pytest.mark.parametrize("check_nodes", [True, False])
def test_the_undefined_reference_named_is_the_first_in_rule_order_not_in_walk_order(
    check_nodes: bool,
) -> None:
    # the walk from the root meets 'second' first (in rule 'b'); the message names 'first',
    # in rule 'unused', listed before 'b' and not reachable
    rules = [
        Rule("root", Seq((RuleRef("b"), RuleRef("a")))),
        Rule("a", Literal(b"a")),
        Rule("unused", RuleRef("first")),
        Rule("b", Choice((Literal(b"b"), RuleRef("second")))),
    ]
    with pytest.raises(GrammarError, match=r"rule 'first' is not defined \(referenced in rule 'unused'\)"):
        validate_rules(rules, "root", check_nodes=check_nodes)
    with pytest.raises(GrammarError, match=r"rule 'second' is not defined \(referenced in rule 'b'\)"):
        validate_rules([r for r in rules if r.name != "unused"], "root", check_nodes=check_nodes)


@pytest.mark.parametrize("check_nodes", [True, False])
def test_unreachable_rules_are_dropped_and_the_rest_keep_their_order(check_nodes: bool) -> None:
    rules = [
        Rule("b", Literal(b"b")),
        Rule("dead", RuleRef("dead")),
        Rule("root", Seq((RuleRef("a"), RuleRef("b")))),
        Rule("a", Literal(b"a")),
    ]
    kept = validate_rules(rules, "root", check_nodes=check_nodes)
    assert [r.name for r in kept] == ["b", "root", "a"]
    every = validate_rules(rules[:1] + rules[2:], "root", check_nodes=check_nodes)
    assert [r.name for r in every] == ["b", "root", "a"]


def test_converted_rules_tell_which_of_them_normalization_changes() -> None:
    """``_validate`` of converted rules names the kept rules that are not normal already: an
    unreachable rule that is not normal does not count; unchecked rules are not known."""
    copied = Repeat(Seq((Literal(b"a"), RuleRef("root"))), 2, 3)  # a subtree copied: hoisted
    fine = [Rule("root", Choice((Literal(b"x"), Seq((Literal(b"y"), RuleRef("root"))))))]
    assert _validate(fine, "root", False)[1] == frozenset()
    assert _validate([*fine, Rule("other", copied)], "root", False)[1] == frozenset()
    assert _validate([Rule("root", Choice((Literal(b"x"), copied)))], "root", False)[1] == {"root"}
    both = [Rule("root", Seq((RuleRef("a"), RuleRef("b"), RuleRef("c")))), Rule("b", Literal(b"b"))]
    both += [Rule("a", Repeat(Seq((Literal(b"a"), Literal(b"a"))), 0, 2))]
    both += [Rule("c", Choice((Literal(b"c"), Repeat(Choice((Literal(b"c"), RuleRef("b"))), 2, 2))))]
    assert _validate(both, "root", False)[1] == {"a", "c"}
    assert _validate(both, "root", True)[1] is None


def test_unproductive_recursion_in_converted_rules_is_refused() -> None:
    rules = [Rule("root", Seq((Literal(b"["), RuleRef("root"), Literal(b"]"))))]
    with pytest.raises(GrammarError, match="can never finish"):
        validate_rules(rules, "root", check_nodes=False)


def _value_rules(way_out: bool) -> list:
    """A recursive JSON-like value: 'list' and 'value' reference each other; the scalar
    'atom', referenced only through 'value', is the only way out."""
    value = (RuleRef("atom"), RuleRef("list")) if way_out else (RuleRef("list"),)
    return [
        Rule("root", Seq((RuleRef("value"), RuleRef("tail")))),
        Rule("value", Choice(value)),
        Rule("list", Seq((Literal(b"["), Repeat(RuleRef("value"), 1, None), RuleRef("close")))),
        Rule("close", Literal(b"]")),
        Rule("atom", Choice((Literal(b"1"), Literal(b"2")))),
        Rule("tail", Seq((RuleRef("close"), RuleRef("value")))),
    ]


@pytest.mark.parametrize("way_out", [True, False])
def test_recursive_converted_rules_are_checked_as_fully_checked_rules_are(way_out: bool) -> None:
    # the converted rules' check settles a rule whose references all finish without walking
    # its body; what it keeps, and what it refuses and why, are those of the full check
    rules = _value_rules(way_out)
    if way_out:
        assert validate_rules(rules, "root", check_nodes=False) == validate_rules(rules, "root")
        return
    with pytest.raises(GrammarError) as full:
        validate_rules(rules, "root")
    with pytest.raises(GrammarError) as converted:
        validate_rules(rules, "root", check_nodes=False)
    assert str(converted.value) == str(full.value)
    assert str(full.value) == (
        "rule 'root' can never finish: every alternative needs one of the rules 'value', 'tail', "
        "which derive no finite string (rules that derive no finite string: 'root', 'value', 'list', 'tail')"
    )


def test_an_embed_of_no_grammar_is_refused_in_converted_rules() -> None:
    rules = [Rule("root", Seq((Literal(b"a"), Embed("not a grammar"))))]
    with pytest.raises(GrammarError, match="Embed needs a Grammar, not str"):
        validate_rules(rules, "root", check_nodes=False)
