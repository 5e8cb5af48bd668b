"""EBNF ``&``, ``~``, ``[lazy]`` and ``[max_chars=N]`` (grammar/ebnf_automata.py): each language
checked string by string against a definition written with Python's ``re``, and against xgrammar."""

from __future__ import annotations

import itertools
import re
from typing import Callable, List

import pytest

from agentgrammar import Grammar
from agentgrammar.errors import GrammarError


def _strings(alphabet: str, longest: int) -> List[str]:
    return ["".join(t) for n in range(longest + 1) for t in itertools.product(alphabet, repeat=n)]


def _lazy(inside: Callable[[str], bool]) -> Callable[[str], bool]:
    """Strings of the language none of whose proper prefixes is in it."""
    return lambda s: inside(s) and not any(inside(s[:k]) for k in range(len(s)))


def _budget(inside: Callable[[str], bool], n: int) -> Callable[[str], bool]:
    """xgrammar's relaxed budget: no proper prefix of n or more characters is in the language."""
    return lambda s: inside(s) and not any(inside(s[:k]) for k in range(n, len(s)))


def _re(pattern: str) -> Callable[[str], bool]:
    return lambda s: re.fullmatch(pattern, s) is not None


CASES = [
    # (EBNF, the language of root as a predicate, alphabet)
    ('root ::= ("a" | "b") & "b"', _re("b"), "ab"),
    ('root ::= [b]* "b" "c" & [bc]*', _re("b+c"), "bc"),
    ('root ::= [a]* [b]* & ("ab" | "a" | "b")', _re("ab|a|b"), "ab"),
    ('root ::= [ab]* & [bc]* & ("b" | "bb")', _re("b|bb"), "abc"),
    ("root ::= ~([ab]* & [bc]*)", lambda s: re.fullmatch("b*", s) is None, "abc"),
    ('root ::= ~("," | ";")', lambda s: s not in (",", ";"), ",;a"),
    ('root ::= ~"ab" "!"', lambda s: s.endswith("!") and s[:-1] != "ab", "ab!"),
    ('root ::= [a-c]+ & ~(x "c")\nx ::= [a-c]*', _re("[a-c]*[ab]"), "abc"),
    ('root ::= ([a-c]* & ~([a-c]* "ab" [a-c]*)) "."', _re("(?:(?!ab)[a-c])*\\."), "abc."),
    ('root ::= "<" r ">"\nr[lazy] ::= [a-z]+', _re("<[a-z]>"), "ab<>"),
    ('root ::= a "b"\na[lazy] ::= [a-z]*', _re("b"), "ab"),
    ('root ::= "<" r ">"\nr[lazy] ::= "ab" | "abc"', _re("<ab>"), "abc<>"),
    ('root ::= r "!"\nr[lazy] ::= [ab]* "a"', _re("b*a!"), "ab!"),
    ('root ::= r "!"\nr[max_chars=2] ::= [a-c]*', _re("[a-c]{0,2}!"), "abc!"),
    ('root ::= r "!"\nr[max_chars=2] ::= "a" | "abc" | "abcd"', _re("(?:a|abc)!"), "abcd!"),
    ('root ::= r\nr[max_chars=3] ::= [a-z]+ "x"', _budget(_re("[a-z]+x"), 3), "ax"),
    ("root ::= r\nr[max_chars=0] ::= [a-z]+", _lazy(_re("[a-z]+")), "ab"),
    ('root ::= r\nr[max_chars=2] ::= s "b"*\ns[max_chars=1] ::= "a"*', _re("a?b?|bb"), "ab"),
    ('root ::= r\nr[lazy, max_chars=1] ::= [ab]* "b"', _re("a*b"), "ab"),
    (
        'root ::= s\ns[max_chars=2] ::= Substring("a", "b", "c")',
        lambda s: s in ("", "a", "ab", "b", "bc", "c"),
        "abc",
    ),
]


@pytest.mark.parametrize("ebnf, inside, alphabet", CASES, ids=[c[0] for c in CASES])
def test_language(ebnf: str, inside: Callable[[str], bool], alphabet: str) -> None:
    g = Grammar.from_ebnf(ebnf)
    for s in _strings(alphabet, 5):
        assert g.accepts(s) == inside(s), s


def test_complement_is_within_unicode_text() -> None:
    g = Grammar.from_ebnf('root ::= ~"bad"')
    assert [g.accepts(s) for s in ("", "ba", "b你好", "bad", "\U0001f600")] == [True, True, True, False, True]
    assert not g.accepts(b"\xff")


def test_attributes_that_keep_the_language_are_dropped() -> None:
    g = Grammar.from_ebnf('root ::= r\nr[capture="x", temperature=0.7, no_forcing] ::= [a-z]+')
    assert [g.accepts(s) for s in ("a", "abc", "")] == [True, True, False]
    assert Grammar.from_ebnf("root[capture] ::= [a-z]+").accepts("ab")


@pytest.mark.parametrize(
    "ebnf, message",
    [
        ('root ::= r\nr[lazy] ::= "a" r | "b"', "rule 'r' is recursive"),
        ('root ::= ~TagDispatch(("a", x))\nx ::= "b"', "holds a TagDispatch"),
        ("root ::= ~%xFF", "raw bytes"),
        ('root ::= r\nr[max_chars=100000] ::= [a-z]* "x"', "more than"),
        ('root ::= r\nr[max_chars=-1] ::= "x"', "non-negative integer"),
        ('root ::= r\nr[max_chars=9999999999] ::= "x"', "too large"),
        ('root ::= r\nr[max_tokens=3] ::= "x"', "'max_tokens' is not supported"),
        ('root ::= r\nr[json_string_min_length=1] ::= "x"', "is not supported"),
        ('root ::= r\nr[foo] ::= "x"', "unknown rule attribute 'foo'"),
        ('root ::= r\nr[lazy, lazy] ::= "x"', "given twice"),
        ('root ::= r\nr[lazy=1] ::= "x"', "takes no value"),
        ('root ::= r\nr[capture=""] ::= "x"', "non-empty name"),
        ('root ::= & "a"', "found '&'"),
        ('root ::= ~~"a"', "found '~'"),
    ],
)
def test_refused(ebnf: str, message: str) -> None:
    with pytest.raises(GrammarError, match=re.escape(message)):
        Grammar.from_ebnf(ebnf)


def test_error_points_at_the_attributes() -> None:
    with pytest.raises(GrammarError) as info:
        Grammar.from_ebnf('root ::= r\nr[lazy] ::= "a" r | "b"')
    assert (info.value.line, info.value.column) == (2, 2)


def test_a_budgeted_loop_is_a_bounded_repeat() -> None:
    # C* under max_chars=N is C{0,N}: one repeat, not N+1 states written out as rules
    g = Grammar.from_ebnf('root ::= r "!"\nr[max_chars=5000] ::= [^]*')
    assert "{0,5000}" in str(g).replace(" ", "")
    assert g.accepts("x" * 5000 + "!") and not g.accepts("x" * 5001 + "!")


# The installed xgrammar (0.2.9) has the attributes; '&' and '~' came after it (CASES above
# holds the languages its later tests expect).
XGRAMMAR_CASES = [
    ('root ::= a "b"\na[lazy] ::= [a-z]*', ["b", "ab", "zb"]),
    ('root ::= "<" r ">"\nr[lazy] ::= [a-z] [a-z]*', ["<a>", "<ab>", "<>"]),
    ('root ::= r "!"\nr[max_chars=2] ::= "a" | "abc" | "abcd"', ["a!", "abc!", "abcd!"]),
    ('root ::= r "!"\nr[max_chars=3] ::= [a-z]+ "x"', ["ax!", "abcx!", "abcdx!", "abxcx!"]),
    ('root ::= r "!"\nr[max_chars=0] ::= [a-z]+', ["!", "a!", "ab!"]),
    ('root ::= r ":" r\nr[max_chars=2] ::= [a-z]*', ["ab:ab", "abc:a", ":"]),
]


@pytest.mark.parametrize("ebnf, strings", XGRAMMAR_CASES, ids=[c[0] for c in XGRAMMAR_CASES])
def test_agrees_with_xgrammar(ebnf: str, strings: List[str]) -> None:
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    theirs = xgr.Grammar.from_ebnf(ebnf)
    ours = Grammar.from_ebnf(ebnf)
    for s in strings:
        assert ours.accepts(s) == bool(_is_grammar_accept_string(theirs, s)), s
