"""Tests for the built-in JSON grammar (agentgrammar/grammar/builtin.py)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar.grammar.builtin import json_rules
from agentgrammar.grammar.ebnf import parse_ebnf
from agentgrammar.grammar.printer import to_ebnf
from tests.grammar._grammar_ir_matcher import IRMatcher

JSON = IRMatcher(json_rules())
JSON_ANY = IRMatcher(json_rules(any_value=True))

ACCEPTED = [
    "{}",
    "[]",
    "{ }",
    "[ \n\t\r]",
    '{"a": 1}',
    '{"a":1,"b":[true,false,null]}',
    '{ "a" : { "b" : [ 1 , 2 ] } }',
    "[0, -0, 1.5, -1.5e10, 2E-3, 3e+4, 10]",
    '["", "\\"\\\\\\/\\b\\f\\n\\r\\t", "\\u00e9\\uABCD", "é😀", "\x7f"]',
    "[[[[[]]]]]",
    '[{"": {}}]',
]

REJECTED = [
    "",
    "1",
    '"a"',
    "true",
    "null",
    " {}",
    "{} ",
    "{}\n",
    "[01]",
    "[1.]",
    "[.5]",
    "[+1]",
    "[1e]",
    "[-]",
    "[1,]",
    "[,1]",
    '{"a"}',
    '{"a":}',
    '{"a":1,}',
    "{a:1}",
    "['a']",
    '["\\x41"]',
    '["\\u12"]',
    '["\n"]',
    '["\x00"]',
    '["\x1f"]',
    "[True]",
    "[nul]",
    "[NaN]",
    "[Infinity]",
    "{}{}",
    "[]]",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepts(text):
    assert JSON.matches(text)
    assert JSON_ANY.matches(text)


@pytest.mark.parametrize("text", REJECTED)
def test_rejects(text):
    assert not JSON.matches(text)


@pytest.mark.parametrize("text", ["1", "-0.5e3", '"a"', "true", "false", "null", '"\\u00e9"'])
def test_any_value_accepts_scalars(text):
    assert not JSON.matches(text)
    assert JSON_ANY.matches(text)


def test_rules_print_and_parse_back():
    rules = json_rules()
    assert parse_ebnf(to_ebnf(rules, "root")) == rules
    assert rules[0].name == "root"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


def dumps(value, style: int) -> str:
    if style == 0:
        return json.dumps(value)
    if style == 1:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value, indent="\t" if style == 2 else 2)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.integers(0, 3))
def test_serialized_json(value, style):
    text = dumps(value, style)
    assert JSON_ANY.matches(text), text
    assert JSON.matches(text) == isinstance(value, (list, dict)), text


NOISE = list('{}[],:"\\ \n0123456789.eE+-truefalsnul') + ["é", "\x01", "\\u00e9", "\\x"]


def _mutate(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 2)):
        op = rng.randrange(3)
        pos = rng.randint(0, len(chars))
        if op == 0 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op == 1:
            chars.insert(pos, rng.choice(NOISE))
        elif chars:
            chars[min(pos, len(chars) - 1)] = rng.choice(NOISE)
    return "".join(chars)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.integers(0, 3), st.randoms(use_true_random=False))
def test_same_language_as_xgrammar_builtin(value, style, rng):
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    theirs = xgr.Grammar.builtin_json_grammar()
    text = dumps(value, style)
    for candidate in [text] + [_mutate(text, rng) for _ in range(6)]:
        # One deliberate difference: xgrammar accepts lone surrogate escapes, we do not.
        expected = _is_grammar_accept_string(theirs, candidate) and _is_unicode_text(candidate)
        assert JSON.matches(candidate) == expected, candidate


def _is_unicode_text(text: str) -> bool:
    """Whether the JSON ``text`` decodes to strings that encode as UTF-8 (no lone surrogate)."""
    try:
        json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_xgrammar_reads_our_printed_json_grammar_the_same_way():
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    ours_in_xgrammar = xgr.Grammar.from_ebnf(to_ebnf(json_rules(), "root"))
    builtin = xgr.Grammar.builtin_json_grammar()
    for text in ACCEPTED + REJECTED:
        expected = JSON.matches(text)
        assert _is_grammar_accept_string(ours_in_xgrammar, text) == expected, text
        assert _is_grammar_accept_string(builtin, text) == expected, text
