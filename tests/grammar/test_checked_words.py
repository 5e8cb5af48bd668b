"""Tests for ``agentgrammar.grammar.checked_words``: a converter's rules are vouched for from
their words only where validation would keep them all unchanged and raise nothing, and then
the words are the ones the validated grammar writes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import List, Optional, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar import Grammar
from agentgrammar.errors import AgentGrammarError, GrammarError
from agentgrammar.grammar.checked_words import converted_words
from agentgrammar.grammar.grammar import _part_index
from agentgrammar.grammar.ir import CharClass, Choice, Embed, Expr, Literal, Repeat, Rule, RuleRef, Seq
from agentgrammar.grammar.json_schema.schema_rules import schema_rules_and_parts
from agentgrammar.grammar.serialize import serialize
from agentgrammar.grammar.validate import _validate

_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _agrees(rules: Sequence[Rule], root: str, parts: Sequence[Grammar] = ()) -> Optional[bytes]:
    """``converted_words`` of the rules, checked against validation: where it gives words,
    validation keeps every rule unchanged and raises nothing, and the validated grammar
    writes the same words."""
    index, n_external = _part_index(tuple(parts), len(rules))
    data = converted_words(rules, root, index, n_external)
    if data is not None:
        kept, changing = _validate(rules, root, check_nodes=False)
        assert kept == tuple(rules)
        assert not changing
        assert data == serialize(kept, root, index if parts else None, use_pieces=False)
    return data


def test_rules_that_validation_keeps_as_they_are_are_vouched_for() -> None:
    rules = (
        Rule("root", Seq((Literal(b"a"), RuleRef("b")))),
        Rule("b", Repeat(CharClass(((48, 57),)), 1, None)),
    )
    assert _agrees(rules, "root") is not None


@pytest.mark.parametrize(
    "rules",
    [
        # an unused rule: validation drops it
        (Rule("root", Literal(b"a")), Rule("unused", Literal(b"b"))),
        # a counted repeat of a sequence: normalization makes the item a rule
        (Rule("root", Repeat(Seq((Literal(b"a"), Literal(b"b"))), 2, 3)),),
        # a root that never finishes: validation raises
        (Rule("root", Seq((Literal(b"a"), RuleRef("root")))),),
        # an undefined rule, and a name given twice: validation raises
        (Rule("root", RuleRef("nope")),),
        (Rule("root", Literal(b"a")), Rule("root", Literal(b"b"))),
        # an empty choice on the way to the end
        (Rule("root", Seq((Literal(b"a"), Choice(())))),),
    ],
    ids=["unused", "normalized", "never-finishes", "undefined", "twice", "empty-choice"],
)
def test_what_validation_would_change_or_refuse_is_left_to_it(rules: Sequence[Rule]) -> None:
    assert converted_words(rules, "root") is None


def test_a_recursive_root_with_a_way_out_is_vouched_for() -> None:
    rules = (Rule("root", Choice((Literal(b"x"), Seq((Literal(b"("), RuleRef("root"), Literal(b")")))))),)
    assert _agrees(rules, "root") is not None


def test_a_grammar_that_never_finishes_raises_as_before() -> None:
    with pytest.raises(GrammarError, match="rule 'root' can never finish"):
        Grammar.from_ebnf('root ::= "a" root')


def test_an_embedded_part_counts_as_finishing() -> None:
    part = Grammar.from_regex("[0-9]+")
    rules = (Rule("root", Seq((Literal(b"n="), Embed(part)))),)
    assert _agrees(rules, "root", (part,)) is not None


def test_the_converted_grammar_keeps_its_words() -> None:
    g = Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    assert g.to_bytes() == serialize(g.normalized_rules, g.root, g._embed_index(), use_pieces=False)
    # the same language as rules checked the slow way
    again = Grammar.from_rules(g.rules, g.root)
    assert again.accepts('{"a": "x", "b": 1}') and g.accepts('{"a": "x", "b": 1}')
    assert not g.accepts('{"a": 1}')


_NAMES = ["root", "a", "b", "c"]


def _exprs() -> st.SearchStrategy[Expr]:
    leaves = st.one_of(
        st.binary(max_size=2).map(Literal),
        st.sampled_from([CharClass(((97, 98),)), CharClass((), False), CharClass(((0, 0x10FFFF),), True)]),
        st.sampled_from(_NAMES).map(RuleRef),
    )

    def inner(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.lists(children, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(children, max_size=3).map(lambda xs: Choice(tuple(xs))),
            st.tuples(children, st.integers(0, 2), st.sampled_from([None, 1, 2, 3])).map(
                lambda t: Repeat(t[0], t[1], t[2] if t[2] is None else max(t[1], t[2]))
            ),
        )

    return st.recursive(leaves, inner, max_leaves=8)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_exprs(), min_size=1, max_size=4))
def test_random_rules_are_vouched_for_only_where_validation_agrees(bodies: List[Expr]) -> None:
    rules = tuple(Rule(name, body) for name, body in zip(_NAMES, bodies))
    try:
        data = _agrees(rules, "root")
    except GrammarError:  # validation refused rules the survey vouched for
        pytest.fail("vouched for rules that validation refuses")
    if data is None:
        return
    assert len(data) % 4 == 0


def _schemas_of_suite(folder: Path) -> List[object]:
    out: List[object] = []
    for path in sorted(folder.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            out.append(case["schema"])
    return out


def _check_schemas(schemas: Sequence[object]) -> int:
    """How many of ``schemas`` were vouched for, each checked against validation."""
    vouched = 0
    for schema in schemas:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rules, root, parts = schema_rules_and_parts(schema, make_part=Grammar._shared_part)
        except (AgentGrammarError, RecursionError):
            continue
        try:
            vouched += _agrees(rules, root, parts) is not None
        except GrammarError:
            pytest.fail(f"vouched for a schema's rules that validation refuses: {schema!r}")
    return vouched


def test_the_json_schema_suite_agrees_with_validation() -> None:
    folder = _DATA / "json-schema-test-suite" / "tests" / "draft2020-12"
    if not folder.is_dir():
        pytest.skip(f"the JSON Schema test suite is not at {folder}")
    schemas = _schemas_of_suite(folder)
    assert _check_schemas(schemas) > len(schemas) // 2


def test_maskbench_schemas_agree_with_validation() -> None:
    folder = _DATA / "maskbench"
    if not folder.is_dir():
        pytest.skip(f"MaskBench is not at {folder}")
    paths = sorted(folder.glob("*.json"))[::10]
    schemas = [json.loads(p.read_text(encoding="utf-8"))["schema"] for p in paths]
    assert _check_schemas(schemas) > len(schemas) // 2
