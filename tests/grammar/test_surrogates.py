"""A lone surrogate (U+D800..U+DFFF) written in an EBNF string or class, or in a regex, compiled
to the bytes ED A0 80 .. ED BF BF: invalid UTF-8 that the model was then made to write. They are
refused with the line and column; classes that only span them or exclude them still compile
(issue 38)."""

from __future__ import annotations

import json

import pytest

from agentgrammar import Grammar, GrammarError

EBNF_REFUSED = [
    ('root ::= "\\ud800"', 1, 11),
    ('root ::= "ab\\udfff"', 1, 13),
    ('root ::= "\\U0000dc00"', 1, 11),
    ('root ::= "\\xd800"', 1, 11),  # \x is greedy
    ('root ::= "a\ud800"', 1, 12),  # the character itself
    ('root ::= "x"\nitem ::= [a\\ud800]', 2, 12),
    ("root ::= [\\ud800-\\udfff]", 1, 11),
    ("root ::= [\udc00]", 1, 11),
    ('root ::= TagDispatch(("\\ud800", item))\nitem ::= "a"', 1, 24),
]


@pytest.mark.parametrize("text, line, column", EBNF_REFUSED)
def test_ebnf_refuses_lone_surrogates_with_their_place(text: str, line: int, column: int) -> None:
    with pytest.raises(GrammarError, match="lone surrogate") as info:
        Grammar.from_ebnf(text)
    assert (info.value.line, info.value.column) == (line, column)
    str(info.value).encode("utf-8")  # the message prints: no raw surrogate in its excerpt


REGEX_REFUSED = [
    ("\\ud800", 1),
    ("ab\\udfff", 3),
    ("\\u{dc00}x", 1),
    ("\\U0000d800", 1),
    ("a\ud800", 2),
    ("[\\ud800-\\udfff]", 2),
    ("x[a\\udc00]", 4),
]


@pytest.mark.parametrize("pattern, column", REGEX_REFUSED)
def test_regex_refuses_lone_surrogates_with_their_position(pattern: str, column: int) -> None:
    with pytest.raises(GrammarError, match="lone surrogate") as info:
        Grammar.from_regex(pattern)
    assert info.value.column == column


@pytest.mark.parametrize(
    "make, sample",
    [
        (lambda: Grammar.from_ebnf("root ::= [\\x00-\\uffff]"), "a"),
        (lambda: Grammar.from_ebnf("root ::= [^\\ud800-\\udfff]"), "😀"),
        (lambda: Grammar.from_ebnf('root ::= "\\U0001F600" .'), "😀a"),
        (lambda: Grammar.from_regex("[\\u0000-\\uffff]+"), "ab"),
        (lambda: Grammar.from_regex("[^\\ud800-\\udfff]*"), "😀"),
        (lambda: Grammar.from_regex("\\U0001F600|\\D"), "😀"),
    ],
)
def test_classes_across_or_excluding_surrogates_still_compile(make, sample: str) -> None:  # type: ignore[no-untyped-def]
    assert make().accepts(sample)


def test_json_schema_patterns_that_exclude_surrogates_still_convert() -> None:
    g = Grammar.from_json_schema({"type": "string", "pattern": "^[^\\ud800-\\udfff]*$"})
    assert g.accepts(json.dumps("héllo")) and not g.accepts('"\\ud800"')
