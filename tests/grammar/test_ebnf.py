"""Tests for the EBNF parser (agentgrammar/grammar/ebnf.py)."""

from __future__ import annotations

import random

import pytest

from agentgrammar.errors import GrammarError
from agentgrammar.grammar.ebnf import parse_ebnf
from agentgrammar.grammar.ir import (
    EMPTY,
    ByteClass,
    CharClass,
    Choice,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    TagDispatch,
)
from agentgrammar.grammar.printer import to_ebnf
from tests.grammar._grammar_ir_matcher import IRMatcher

L = Literal


def body(text: str):
    rules = parse_ebnf(text)
    return rules[0].body


def cc(*ranges, negated=False):
    return CharClass(tuple((r, r) if isinstance(r, int) else r for r in ranges), negated)


# --------------------------------------------------------------------------- parse results


@pytest.mark.parametrize(
    "text, expected",
    [
        ('root ::= "a"', L(b"a")),
        ('root ::= "a" "b"', Seq((L(b"a"), L(b"b")))),
        ('root ::= "a" | "b" | "c"', Choice((L(b"a"), L(b"b"), L(b"c")))),
        ('root ::= "a" | ""', Choice((L(b"a"), L(b"")))),
        ('root ::= ""', L(b"")),
        ("root ::= ()", EMPTY),
        ('root ::= ("a")', L(b"a")),
        ('root ::= "a" ("b" | "c")', Seq((L(b"a"), Choice((L(b"b"), L(b"c")))))),
        ('root ::= "a" ("b" "c")', Seq((L(b"a"), Seq((L(b"b"), L(b"c")))))),
        ('root ::= ("a" | "b") | "c"', Choice((Choice((L(b"a"), L(b"b"))), L(b"c")))),
        ('root ::= "a"*', Repeat(L(b"a"), 0, None)),
        ('root ::= "a"+', Repeat(L(b"a"), 1, None)),
        ('root ::= "a"?', Repeat(L(b"a"), 0, 1)),
        ('root ::= "a"{3}', Repeat(L(b"a"), 3, 3)),
        ('root ::= "a"{2,}', Repeat(L(b"a"), 2, None)),
        ('root ::= "a"{2,5}', Repeat(L(b"a"), 2, 5)),
        ('root ::= "a"{ 2 , 5 }', Repeat(L(b"a"), 2, 5)),
        ('root ::= "a"{0}', Repeat(L(b"a"), 0, 0)),
        ('root ::= "a"{2, -1}', Repeat(L(b"a"), 2, None)),  # xgrammar's printed form
        ('root ::= ("a" "b")*', Repeat(Seq((L(b"a"), L(b"b"))), 0, None)),
        ("root ::= ()*", Repeat(EMPTY, 0, None)),
        ('root ::= "ab"+ "c"', Seq((Repeat(L(b"ab"), 1, None), L(b"c")))),
        ("root ::= [a-z]", cc((97, 122))),
        ("root ::= [^a-z0-9_]", cc((97, 122), (48, 57), 95, negated=True)),
        ("root ::= [a-]", cc(97, 45)),
        ("root ::= [-a]", cc(45, 97)),
        ("root ::= [a-b-c]", cc((97, 98), 45, 99)),
        ("root ::= [!--]", cc((33, 45))),
        ("root ::= [\\-\\]\\^\\[\\\\]", cc(45, 93, 94, 91, 92)),
        ("root ::= [\\x00-\\x1f]", cc((0, 31))),
        ("root ::= [\\u00e9-\\U0001F600]", cc((0xE9, 0x1F600))),
        ("root ::= [^]", CharClass((), True)),
        ("root ::= []", CharClass((), False)),
        ('root ::= [é\\n\\t"]', cc(0xE9, 10, 9, 34)),
        ("root ::= [\\.\\*\\+\\?\\(\\)\\{\\}\\|\\/\\$]", cc(*(ord(c) for c in ".*+?(){}|/$"))),
        ("root ::= .", CharClass((), True)),
        ('root ::= . "a".', Seq((CharClass((), True), L(b"a"), CharClass((), True)))),
        ("root ::= .*", Repeat(CharClass((), True), 0, None)),
        ("root ::= %x41", L(b"A")),
        ("root ::= %xFF.00.0a", L(b"\xff\x00\x0a")),
        ("root ::= %x80-BF", ByteClass(((0x80, 0xBF),))),
    ],
)
def test_parse_expressions(text, expected):
    assert body(text) == expected


@pytest.mark.parametrize(
    "escape, value",
    [
        ("\\n", b"\n"),
        ("\\r", b"\r"),
        ("\\t", b"\t"),
        ("\\v", b"\v"),
        ("\\f", b"\f"),
        ("\\a", b"\a"),
        ("\\b", b"\b"),
        ("\\e", b"\x1b"),
        ("\\0", b"\x00"),
        ("\\\\", b"\\"),
        ('\\"', b'"'),
        ("\\'", b"'"),
        ("\\?", b"?"),
        ("\\/", b"/"),
        ("\\[", b"["),
        ("\\]", b"]"),
        ("\\x41", b"A"),
        ("\\x7f", b"\x7f"),
        ("\\xe9", "é".encode()),
        ("\\x41B", "\u041b".encode()),  # \x is greedy, as in xgrammar
        ("\\u00e9", "é".encode()),
        ("\\U0001F600", "😀".encode()),
        ("é😀", "é😀".encode()),
        ("#", b"#"),
    ],
)
def test_string_escapes(escape, value):
    assert body(f'root ::= "{escape}"') == L(value)


def test_rules_names_comments_and_layout():
    text = """
    # a comment line
    root ::= item-list.v2 # trailing comment
        | _x          # alternatives may continue on later lines
    item-list.v2 ::=
        "a"
        "b"
    _x ::= "c" ## another
    """
    assert parse_ebnf(text) == [
        Rule("root", Choice((RuleRef("item-list.v2"), RuleRef("_x")))),
        Rule("item-list.v2", Seq((L(b"a"), L(b"b")))),
        Rule("_x", L(b"c")),
    ]


def test_crlf_and_cr_line_endings():
    assert parse_ebnf('root ::= a\r\na ::= "x"\r\n') == parse_ebnf('root ::= a\ra ::= "x"\r')
    with pytest.raises(GrammarError) as info:
        parse_ebnf('root ::= a\r\na ::= "x"\r\n  b')
    assert (info.value.line, info.value.column) == (3, 3)


def test_lookahead_is_parsed_and_dropped():
    rules = parse_ebnf('root ::= "a" b (= [a-z] b)\nb ::= "b" (= "c")')
    assert rules == [Rule("root", Seq((L(b"a"), RuleRef("b")))), Rule("b", L(b"b"))]


def test_rule_order_and_root_name():
    rules = parse_ebnf('b ::= "x"\nstart ::= b', root="start")
    assert [r.name for r in rules] == ["b", "start"]


def test_recursion_and_forward_references():
    rules = parse_ebnf('root ::= "(" root ")" | a\na ::= ""')
    assert rules[0].body == Choice((Seq((L(b"("), RuleRef("root"), L(b")"))), RuleRef("a")))


def test_non_string_input():
    with pytest.raises(TypeError):
        parse_ebnf(b'root ::= "a"')  # type: ignore[arg-type]


# --------------------------------------------------------------------------- errors


def error_of(text: str, root: str = "root") -> GrammarError:
    with pytest.raises(GrammarError) as info:
        parse_ebnf(text, root)
    return info.value


def test_error_format_has_excerpt_and_caret():
    err = error_of('a ::= "x"\nb ::= "y"\nroot ::= ("a" | "b"\n')
    assert (err.line, err.column) == (3, 20)
    assert str(err) == (
        "expected ')' to close the '(' from column 10 at line 3, column 20:\n"
        '  root ::= ("a" | "b"\n'
        "                     ^"
    )


def test_error_excerpt_of_a_long_line_is_a_window():
    err = error_of("root ::= " + '"a" ' * 100 + "@ " + '"b" ' * 100)
    excerpt, caret = str(err).splitlines()[1:]
    assert len(excerpt) < 120
    assert excerpt.startswith("  ...") and excerpt.endswith("...")
    assert excerpt[caret.index("^")] == "@"
    assert err.column == 410


def test_error_caret_keeps_tabs():
    err = error_of('root ::=\t"a" |\t)')
    assert str(err).splitlines()[-1] == "  " + " " * 8 + "\t" + " " * 5 + "\t^"


@pytest.mark.parametrize(
    "text, message, line, column",
    [
        ('root ::= "a" |', "empty alternative after '|'", 1, 14),
        ('root ::= "a" | | "b"', "empty alternative before '|'", 1, 16),
        ('root ::= ("a" | )', "empty alternative before ')'", 1, 17),
        ("root ::=\nx ::= ", "empty rule body", 1, 9),
        ('root ::= "a"**', "cannot follow another quantifier", 1, 14),
        ('root ::= "a"?{2}', "cannot follow another quantifier", 1, 14),
        ("root ::= *", "nothing to repeat", 1, 10),
        ('root ::= "a" )', "unmatched ')'", 1, 14),
        ('root ::= ("a"', "expected ')'", 1, 14),
        ('root ::= ("a"\n  "b"\nx ::= "c"', "expected ')' to close the '(' from line 1", 2, 6),
        ('root ::= ("a" ]', "unexpected character ']'", 1, 15),
        ('root ::= "abc', "unterminated string", 1, 10),
        ('root ::= "ab\nc"', "unterminated string", 1, 10),
        ("root ::= [abc", "unterminated character class", 1, 10),
        ("root ::= [ab\n]", "classes cannot span lines", 1, 13),
        ("root ::= [z-a]", "invalid range", 1, 11),
        ("root ::= [\\d]", "class escape '\\d' is not supported", 1, 11),
        ('root ::= "\\q"', "invalid escape sequence '\\q'", 1, 11),
        ('root ::= "\\x"', "expected hex digits", 1, 11),
        ('root ::= "\\u12"', "expected 4 hex digits", 1, 11),
        ('root ::= "\\U0011FFFF"', "beyond U+10FFFF", 1, 11),
        ('root ::= "\\x110000"', "beyond U+10FFFF", 1, 11),
        ("root ::= 'a'", "double quotes", 1, 10),
        ('root ::= "a"{', "expected a number", 1, 14),
        ('root ::= "a"{x}', "expected a number but found 'x'", 1, 14),
        ('root ::= "a"{1 2}', "expected ',' or '}'", 1, 16),
        ('root ::= "a"{1,2', "expected '}'", 1, 17),
        ('root ::= "a"{3,2}', "minimum 3 is larger than the maximum 2", 1, 16),
        ('root ::= "a"{+2}', "expected a number but found '+'", 1, 14),
        ('root ::= "a"{99999999999}', "too large", 1, 14),
        ('root ::= "a" b ::= "c"', "must start on a new line", 1, 14),
        ('::= "a"', "expected a rule name before '::='", 1, 1),
        ('"x" ::= "a"', "expected a rule name before '::='", 1, 5),
        ('"x"\nroot ::= "a"', "expected a rule definition", 1, 1),
        ('root : "a"', "unexpected ':'", 1, 6),
        ('root = "a"', "unexpected '='", 1, 6),
        ('root ::= "a" @', "unexpected character '@'", 1, 14),
        ('root ::= "a" (= "b") (= "c")', "only one lookahead", 1, 22),
        ('root ::= ("a" (= "b"))', "may only follow a whole rule body", 1, 15),
        ('root ::= "a"\n(= "b"', "expected ')' to close the '(='", 2, 7),
        (
            'root ::= TagDispatch(("<a>", a), colour=true)\na ::= "x"',
            "unknown TagDispatch argument 'colour'",
            1,
            34,
        ),
        ('root ::= TagDispatch(("", a))\na ::= "x"', "a TagDispatch trigger must not be empty", 1, 23),
        ('root ::= TagDispatch(("<a>", b))\na ::= "x"', "rule 'b' is not defined", 1, 30),
        ('root ::= TagDispatch(("<a>", a), excludes=("x"), excludes=())\na ::= "x"', "given twice", 1, 50),
        (
            'root ::= TagDispatch(("<a>", a), loop_after_dispatch=yes)\na ::= "x"',
            "must be true or false",
            1,
            54,
        ),
        ('root ::= TagDispatch(("<a>" a))\na ::= "x"', "expected ',' after the trigger", 1, 29),
        ('root ::= Token("a")', "macro Token(...) is not supported yet", 1, 10),
        (
            'root[max_tokens=10] ::= "a"',
            "the rule attribute 'max_tokens' is not supported",
            1,
            5,
        ),
        ('root ::= "a"\nroot ::= "b"', "rule 'root' is defined twice (first at line 1, column 1)", 2, 1),
        ('root ::= a b\na ::= "x"', "rule 'b' is not defined (referenced in rule 'root')", 1, 12),
        ('root ::= a\na ::= "x" (= c)', "rule 'c' is not defined (referenced in rule 'a')", 2, 14),
        ('. ::= "x"\nroot ::= "y"', "'.' cannot be a rule name", 1, 1),
        ("root ::= %x", "expected hex digits", 1, 12),
        ("root ::= %xC0-80", "invalid raw byte range", 1, 10),
        ("root ::= %y41", "unexpected '%'", 1, 10),
    ],
)
def test_errors(text, message, line, column):
    err = error_of(text)
    assert message in str(err)
    assert (err.line, err.column) == (line, column), str(err)


def test_missing_root_and_empty_grammar():
    err = error_of('a ::= "x"\nb ::= a')
    assert "the root rule 'root' is not defined" in str(err)
    assert "'a', 'b'" in str(err)
    assert "'start' is not defined" in str(error_of('root ::= "a"', root="start"))
    for text in ("", "   \n\t", "# only a comment\n"):
        assert "the grammar is empty" in str(error_of(text))


def test_nesting_limit():
    deep = "root ::= " + "(" * 150 + '"a"' + ")" * 150
    assert body(deep) == L(b"a")
    err = error_of("root ::= " + "(" * 300 + '"a"' + ")" * 300)
    assert "nested more than" in str(err)


def test_grammar_error_is_value_error():
    with pytest.raises(ValueError):
        parse_ebnf("root ::= (")


# --------------------------------------------------------------------------- against xgrammar

VALID = [
    'root ::= "a"',
    'root ::= "a" | ""',
    "root ::= ()",
    'root ::= ("a" | "b"{2,3})* x?\nx ::= [^a-z\\-\\]]+',
    'root ::= "a"{ 2 , 3 } "b"{4} "c"{1,}',
    "root ::= [a-] [-a] [a-b-c] [!--] [\\^] [^^]",
    'root ::= "\\x41B\\u00e9\\U0001F600\\e\\?\\a\\/"',
    'root ::= a.b-c_1\na.b-c_1 ::= "x" # comment',
    'root ::= "a" (= "b")\n',
    'root ::= "a"\n  (= [a-z])',
    "root ::= [^]",
    "root ::= []",
    'root ::= "a"\r\nb ::= "c"\r\n',
    'root ::= ((("a")))',
    'root ::= "a"{2, -1}',
]

INVALID = [
    'root ::= "a" |',
    'root ::= "a"**',
    'root ::= "a" b ::= "c"',
    'root ::= "\\q"',
    "root ::= [\\d]",
    "root ::= [z-a]",
    'root ::= "a"{3,2}',
    "root ::= x",
    'root ::= "a"\nroot ::= "b"',
    'a ::= "x"',
    'root ::= ("a"',
    'root ::= "a" (= "b") (= "c")',
    'root ::= ("a" (= "b"))',
    "root ::= 'a'",
    'root ::= "ab',
    "root ::= *",
]


@pytest.mark.parametrize("text", VALID)
def test_valid_grammars_agree_with_xgrammar(text):
    xgr = pytest.importorskip("xgrammar")
    parse_ebnf(text)
    xgr.Grammar.from_ebnf(text)


@pytest.mark.parametrize("text", INVALID)
def test_invalid_grammars_agree_with_xgrammar(text):
    xgr = pytest.importorskip("xgrammar")
    with pytest.raises(GrammarError):
        parse_ebnf(text)
    with pytest.raises((RuntimeError, ValueError)):
        xgr.Grammar.from_ebnf(text)


def _random_string(rng: random.Random, alphabet: str, max_len: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len)))


LANGUAGE_CASES = [
    ('root ::= ("a" | "b"{2,3})* "c"?', "abc", 8),
    ('root ::= [a-c]+ ("-" [^a-c])?', "abcd-e", 6),
    ('root ::= "x" root "y" | ""', "xy", 8),
    ('root ::= a "," a | a\na ::= [0-9]{1,3}', "0123,", 8),
    ('root ::= "\\x41B" | [\\x41-\\x43]', "ABCЛ", 3),
    ('root ::= ("ab" | "a")* "b"', "ab", 7),
    ('root ::= e\ne ::= e "+" t | t\nt ::= [0-9] | "(" e ")"', "1+()", 7),
]


@pytest.mark.parametrize("text, alphabet, max_len", LANGUAGE_CASES)
def test_same_language_as_xgrammar(text, alphabet, max_len):
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    ours = IRMatcher(parse_ebnf(text))
    theirs = xgr.Grammar.from_ebnf(text)
    rng = random.Random(text)
    for _ in range(300):
        s = _random_string(rng, alphabet, max_len)
        assert ours.matches(s) == _is_grammar_accept_string(theirs, s), s


def test_parses_xgrammar_printed_json_grammar():
    """xgrammar's own printout (with lookaheads and {m, -1}) parses, and means the same."""
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    text = str(xgr.Grammar.builtin_json_grammar())
    rules = parse_ebnf(text)
    ours = IRMatcher(rules)
    theirs = xgr.Grammar.builtin_json_grammar()
    for s in [
        '{"a": [1, -2.5e3, true, null, "x\\n"]}',
        "[]",
        "[ ]",
        '{"a" : {}}',
        "1",
        "[01]",
        '{"a"}',
        "[1,]",
    ]:
        assert ours.matches(s) == _is_grammar_accept_string(theirs, s), s


def test_tag_dispatch_macro_parses_and_prints_back():
    text = (
        'root ::= TagDispatch(("<a>", a), ("<b>", b), stop_eos=false, stop_str=("END"), '
        'loop_after_dispatch=false, excludes=("</x>", "\\n\\n"))\na ::= "1"\nb ::= "2"'
    )
    rules = parse_ebnf(text)
    body = rules[0].body
    assert body == TagDispatch(
        triggers=((b"<a>", "a"), (b"<b>", "b")),
        stop_eos=False,
        stop_str=(b"END",),
        loop_after_dispatch=False,
        excludes=(b"</x>", b"\n\n"),
    )
    printed = to_ebnf(rules, "root")
    assert parse_ebnf(printed) == rules


def test_tag_dispatch_defaults_match_xgrammar():
    (rule, _) = parse_ebnf('root ::= TagDispatch(("<a>", a))\na ::= "1"')
    assert rule.body == TagDispatch(triggers=((b"<a>", "a"),))
    assert to_ebnf([rule, _], "root").splitlines()[0] == (
        'root ::= TagDispatch(("<a>", a), loop_after_dispatch=true, excludes=())'
    )
