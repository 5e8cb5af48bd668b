"""Tests for the public Grammar class (agentgrammar/grammar/grammar.py)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar.errors import GrammarError
from agentgrammar.grammar import Grammar
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
)
from agentgrammar.grammar.normalize import normalize_rules
from agentgrammar.grammar.serialize import MAGIC, serialize
from agentgrammar.grammar.validate import validate_rules
from tests.grammar._grammar_ir_matcher import IRMatcher

L = Literal


# --------------------------------------------------------------------------- constructors


def test_from_ebnf():
    g = Grammar.from_ebnf('root ::= "a" b\nb ::= [0-9]+')
    assert g.root == "root"
    assert g.rules == (
        Rule("root", Seq((L(b"a"), RuleRef("b")))),
        Rule("b", Repeat(CharClass(((48, 57),)), 1, None)),
    )
    assert str(g) == 'root ::= "a" b\nb ::= [0-9]+'


def test_from_ebnf_custom_root_and_errors_carry_positions():
    assert Grammar.from_ebnf('start ::= "x"', root="start").root == "start"
    with pytest.raises(GrammarError) as info:
        Grammar.from_ebnf('root ::= "a"\n  | nope')
    assert (info.value.line, info.value.column) == (2, 5)
    assert "rule 'nope' is not defined" in str(info.value)


def test_from_regex():
    g = Grammar.from_regex(r"\d{2,3}")
    assert g.rules == (Rule("root", Repeat(CharClass(((48, 57),)), 2, 3)),)
    assert str(g) == "root ::= [0-9]{2,3}"
    with pytest.raises(GrammarError, match="backreference"):
        Grammar.from_regex(r"(a)\1")


def test_from_regex_that_matches_nothing():
    with pytest.raises(GrammarError, match="can never finish"):
        Grammar.from_regex(r"[^\x00-\U0010FFFF]")


def test_builtin_json_is_cached_and_valid():
    g = Grammar.builtin_json()
    assert g is Grammar.builtin_json()
    assert g.root == "root"
    m = IRMatcher(g.rules)
    assert m.matches('{"a": [1, true]}') and not m.matches("1")
    assert IRMatcher(Grammar.builtin_json(any_value=True).rules).matches("1")
    assert g.to_bytes()[:4] == MAGIC.to_bytes(4, "little")


def test_from_rules_drops_unreachable_rules_and_keeps_order():
    rules = [
        Rule("x", L(b"x")),
        Rule("root", Choice((RuleRef("b"), RuleRef("x")))),
        Rule("dead", RuleRef("dead")),
        Rule("b", L(b"")),
    ]
    g = Grammar.from_rules(rules)
    assert [r.name for r in g.rules] == ["x", "root", "b"]
    assert str(g).splitlines()[0].startswith("root ::=")


def test_root_is_printed_first():
    g = Grammar.from_ebnf('b ::= "x"\nroot ::= b')
    assert str(g) == 'root ::= b\nb ::= "x"'


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "rules, root, message",
    [
        ([], "root", "the grammar is empty"),
        ([Rule("a", L(b"x"))], "root", "the root rule 'root' is not defined (defined rules: 'a')"),
        ([Rule("root", L(b"x")), Rule("root", L(b"y"))], "root", "rule 'root' is defined twice"),
        ([Rule("root", RuleRef("nope"))], "root", "rule 'nope' is not defined (referenced in rule 'root')"),
        ([Rule("root", Repeat(L(b"a"), -1, None))], "root", "Repeat min must not be negative"),
        ([Rule("root", Repeat(L(b"a"), 0, -2))], "root", "Repeat max must not be negative"),
        ([Rule("root", Repeat(L(b"a"), 3, 2))], "root", "Repeat min 3 is larger than max 2"),
        ([Rule("root", Repeat(L(b"a"), 0, 2**40))], "root", "too large"),
        ([Rule("root", Repeat(L(b"a"), True, None))], "root", "Repeat min must be an int"),
        ([Rule("root", CharClass(((5, 3),)))], "root", "invalid CharClass range (5, 3)"),
        ([Rule("root", CharClass(((0, 0x110000),)))], "root", "invalid CharClass range"),
        ([Rule("root", ByteClass(((0, 256),)))], "root", "invalid ByteClass range"),
        ([Rule("root", Literal("text"))], "root", "Literal value must be bytes"),  # type: ignore[arg-type]
        ([Rule("root", Seq([L(b"a")]))], "root", "Seq items must be a tuple"),  # type: ignore[arg-type]
        ([Rule("root", "a")], "root", "not a grammar expression"),  # type: ignore[arg-type]
        ([Rule("", L(b"a"))], "", "non-empty str"),
        (["root ::= x"], "root", "expected a Rule"),
    ],
)
def test_validation_errors(rules, root, message):
    with pytest.raises(GrammarError) as info:
        Grammar.from_rules(rules, root)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'root ::= "x" a\na ::= "y" a',
            "rule 'root' can never finish: every alternative needs rule 'a', which derives no finite string",
        ),
        (
            'root ::= a | b\na ::= "x" a\nb ::= b "y"',
            "every alternative needs one of the rules 'a', 'b', which derive no finite string",
        ),
        ('root ::= "x" root', "rule 'root' can never finish: every alternative recurses into 'root' itself"),
        ("root ::= []", "it matches nothing"),
        ("root ::= [^\\x00-\\U0010FFFF]", "it matches nothing"),
        # no cycle: each rule derives some string once its references do, but for an empty class
        (
            'root ::= "a" x\nx ::= "b" y\ny ::= []',
            "every alternative needs rule 'x', which derives no finite string",
        ),
        ('root ::= "a" x | y\nx ::= [^\\x00-\\U0010FFFF]\ny ::= x "b"', "needs one of the rules 'x', 'y'"),
        (
            'root ::= a\na ::= "(" b\nb ::= a ")"',
            (
                "needs rule 'a', which derives no finite string "
                "(rules that derive no finite string: 'root', 'a', 'b')"
            ),
        ),
    ],
)
def test_rules_that_never_finish(text, message):
    with pytest.raises(GrammarError) as info:
        Grammar.from_ebnf(text)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        'root ::= a | b\na ::= "x" a\nb ::= b "y"',
        'root ::= item ("," item)*\nitem ::= [a-z]+ | "(" root ")"\nunused ::= "u"',
        'root ::= x{2,5}\nx ::= ("a" "b")+ y\ny ::= [^"\\\\]',
        'root ::= "a" x "c"\nx ::= "b" y?\ny ::= [^\\x00-\\U0010FFFF]',  # acyclic, a dead rule optional
        'root ::= "a" x\nx ::= "b" | y\ny ::= []\nunused ::= unused',
    ],
)
def test_converted_rules_skip_node_checks_with_the_same_outcome(text: str) -> None:
    """Rules a converter built are not type-checked node by node again, yet validation keeps
    and refuses the same rules, with the same message."""
    from agentgrammar.grammar.ebnf import parse_ebnf

    rules = parse_ebnf(text, "root")
    try:
        checked = validate_rules(rules, "root")
    except GrammarError as e:
        with pytest.raises(GrammarError, match=str(e).replace("(", r"\(").replace(")", r"\)")):
            validate_rules(rules, "root", check_nodes=False)
        return
    assert validate_rules(rules, "root", check_nodes=False) == checked


def test_unconverted_nodes_are_still_checked() -> None:
    bad = Rule("root", Seq((Literal(b"a"), CharClass(((5, 1),)))))
    with pytest.raises(GrammarError, match="invalid CharClass range"):
        Grammar.from_rules([bad])


@pytest.mark.parametrize(
    "text",
    [
        'root ::= "a" | b\nb ::= "x" b',  # a dead alternative is fine when root can finish
        'root ::= a*\na ::= "x" a',  # zero repetitions of a dead rule
        'root ::= root "a" | "b"',  # left recursion with a way out
        'root ::= "a" [^]',
        'root ::= ""',
        "root ::= ()",
    ],
)
def test_rules_that_can_finish(text):
    Grammar.from_ebnf(text)


# --------------------------------------------------------------------------- normalization


def test_hoists_repeated_subtrees():
    rules = [
        Rule(
            "root",
            Seq((Repeat(Seq((L(b"a"), RuleRef("x"))), 2, 4), Repeat(Choice((L(b"b"), L(b"c"))), 0, None))),
        ),
        Rule("x", L(b"x")),
    ]
    out = normalize_rules(rules)
    assert out == [
        Rule(
            "root", Seq((Repeat(RuleRef("root_repeat_1"), 2, 4), Repeat(Choice((L(b"b"), L(b"c"))), 0, None)))
        ),
        Rule("x", L(b"x")),
        Rule("root_repeat_1", Seq((L(b"a"), RuleRef("x")))),
    ]


HOISTING_CASES = [
    (L(b"ab"), 5, 5, False),
    (CharClass(((0, 0x10FFFF),)), 3, None, False),
    (ByteClass(((0, 5),)), 3, 4, False),
    (RuleRef("x"), 2, 2, False),
    (Seq((L(b"a"), L(b"b"))), 0, None, False),  # a loop copies nothing
    (Seq((L(b"a"), L(b"b"))), 1, None, False),
    (Seq((L(b"a"), L(b"b"))), 0, 1, False),
    (Seq((L(b"a"), L(b"b"))), 0, 2, True),
    (Seq((L(b"a"), L(b"b"))), 2, None, True),
    (Choice((L(b"a"), L(b"b"))), 3, 3, True),
    (Repeat(L(b"a"), 0, None), 2, 2, True),
    (EMPTY, 2, 2, True),
]


@pytest.mark.parametrize("item, lo, hi, hoisted", HOISTING_CASES)
def test_hoisting_rule(item, lo, hi, hoisted):
    out = normalize_rules([Rule("root", Repeat(item, lo, hi)), Rule("x", L(b"x"))])
    assert (len(out) == 3) == hoisted
    if hoisted:
        assert out[0].body == Repeat(RuleRef("root_repeat_1"), lo, hi)
        assert out[2] == Rule("root_repeat_1", item)


@pytest.mark.parametrize("item, lo, hi, hoisted", HOISTING_CASES)
def test_converted_grammars_know_at_build_whether_normalization_changes_anything(item, lo, hi, hoisted):
    # The walk that finds a converted grammar's references also tells whether normalization
    # has work; when it has none the rules are the normalized rules at once.
    shared = Seq((L(b"c"), Repeat(item, lo, hi)))
    rules = [Rule("root", Choice((shared, Seq((shared, L(b"d")))))), Rule("x", L(b"x"))]
    g = Grammar(rules, _converted=True)
    assert (g._normalized is not None) == (not hoisted)
    assert g.normalized_rules == tuple(normalize_rules(g.rules))
    assert Grammar(rules, _converted=True).to_bytes() == Grammar.from_rules(rules).to_bytes()


def test_converted_grammars_normalize_only_the_rules_validation_found_changing():
    # Validation names the rules normalization changes; the others are kept without a scan,
    # and the result is what normalizing every rule gives (an item two rules copy is one rule).
    item = Seq((L(b"a"), RuleRef("b")))
    rules = [
        Rule("root", Seq((RuleRef("a"), RuleRef("b"), RuleRef("c")))),
        Rule("a", Repeat(L(b"a"), 2, 4)),
        Rule("b", Choice((L(b"b"), Repeat(item, 0, 2)))),
        Rule("c", Seq((Repeat(item, 3, 3), Repeat(Seq((L(b"x"), L(b"y"))), 2, None)))),
    ]
    g = Grammar(rules, _converted=True)
    assert g._normalized is None and g._changing == {"b", "c"}
    assert g.normalized_rules == tuple(normalize_rules(rules))
    assert [r.name for r in g.normalized_rules] == ["root", "a", "b", "c", "b_repeat_1", "c_repeat_1"]
    assert g.normalized_rules[1] is rules[1]
    assert g.to_bytes() == Grammar.from_rules(rules).to_bytes()


def test_hoisting_nested_and_name_collisions():
    inner = Repeat(Seq((L(b"a"), L(b"b"))), 2, 2)
    rules = [Rule("root", Repeat(Seq((inner, L(b"c"))), 3, 3)), Rule("root_repeat_1", L(b"taken"))]
    out = normalize_rules(rules)
    names = [r.name for r in out]
    assert names == ["root", "root_repeat_1", "root_repeat_2", "root_repeat_3"]
    assert out[0].body == Repeat(RuleRef("root_repeat_3"), 3, 3)
    assert out[2] == Rule("root_repeat_2", Seq((L(b"a"), L(b"b"))))
    assert out[3] == Rule("root_repeat_3", Seq((Repeat(RuleRef("root_repeat_2"), 2, 2), L(b"c"))))
    Grammar.from_rules(out)  # still a valid grammar


def test_an_item_that_several_repeats_copy_is_hoisted_once():
    # One object under two counted repeats (in two rules), as a long string's length split
    # writes its blocks: one rule, not a copy per repeat. An equal but distinct item still
    # gets its own.
    item = Seq((L(b"a"), L(b"b")))
    rules = [
        Rule("root", Choice((Repeat(item, 0, 2), Seq((Repeat(item, 3, 3), RuleRef("x")))))),
        Rule("x", Seq((Repeat(item, 2, 2), Repeat(Seq((L(b"a"), L(b"b"))), 2, 2)))),
    ]
    out = normalize_rules(rules)
    assert [r.name for r in out] == ["root", "x", "root_repeat_1", "x_repeat_1"]
    assert out[0].body == Choice(
        (Repeat(RuleRef("root_repeat_1"), 0, 2), Seq((Repeat(RuleRef("root_repeat_1"), 3, 3), RuleRef("x"))))
    )
    assert out[1].body == Seq((Repeat(RuleRef("root_repeat_1"), 2, 2), Repeat(RuleRef("x_repeat_1"), 2, 2)))
    g = Grammar.from_rules(out)
    for text, ok in ((b"", True), (b"abab", True), (b"ab" * 7, True), (b"ab" * 3, False), (b"ab" * 5, False)):
        assert IRMatcher(rules).matches(text.decode()) == ok
        assert g.accepts(text) == ok


def test_a_long_string_length_is_one_counted_repeat_not_blocks():
    g = Grammar.from_json_schema({"type": "string", "maxLength": 1000})
    repeats = [e for r in g.normalized_rules for e in _walk(r.body) if isinstance(e, Repeat)]
    assert [(e.min, e.max) for e in repeats if e.max is None or e.max > 4] == [(0, 1000)]
    assert g.accepts(b'"' + b"x" * 1000 + b'"') and not g.accepts(b'"' + b"x" * 1001 + b'"')
    assert g.accepts(b'"' + b"x" * 767 + b'"') and g.accepts(b'"' + b"x" * 768 + b'"')


def _walk(e):
    yield e
    for child in getattr(e, "items", ()) or ():
        yield from _walk(child)
    if isinstance(e, Repeat):
        yield from _walk(e.item)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.sampled_from([L(b"a"), L(b"b"), EMPTY, CharClass(((97, 98),)), RuleRef("x")]),
        lambda c: st.one_of(
            st.lists(c, min_size=2, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(c, min_size=2, max_size=3).map(lambda xs: Choice(tuple(xs))),
            st.tuples(c, st.sampled_from([(0, None), (2, 3), (1, 2), (0, 0), (3, None)])).map(
                lambda t: Repeat(t[0], *t[1])
            ),
        ),
        max_leaves=6,
    ),
    st.lists(st.sampled_from(["a", "b", "ab"]), max_size=5),
)
def test_normalization_keeps_the_language(body, pieces):
    rules = [Rule("root", body), Rule("x", Choice((L(b"a"), L(b"bb"))))]
    text = "".join(pieces)
    assert IRMatcher(rules).matches(text) == IRMatcher(normalize_rules(rules)).matches(text)


# --------------------------------------------------------------------------- serialization, object protocol


def test_to_bytes_is_cached_and_uses_normalized_rules():
    g = Grammar.from_ebnf('root ::= ("a" "b"){2} x\nx ::= "x"')
    data = g.to_bytes()
    assert data is g.to_bytes()
    assert data == serialize(normalize_rules(g.rules), "root")
    assert data != serialize(g.rules, "root")
    # rule index i in the buffer is normalized_rules[i]; the user's rules keep their indices
    assert [r.name for r in g.normalized_rules] == ["root", "x", "root_repeat_1"]
    assert g.normalized_rules[: len(g.rules)] == (
        Rule("root", Seq((Repeat(RuleRef("root_repeat_1"), 2, 2), RuleRef("x")))),
        g.rules[1],
    )


def test_immutable():
    g = Grammar.from_ebnf('root ::= "a"')
    with pytest.raises(AttributeError):
        g.root = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del g.rules
    assert isinstance(g.rules, tuple)


def test_equality_hash_pickle_repr():
    a = Grammar.from_ebnf('root ::= "a" | b\nb ::= "b"')
    b = Grammar.from_rules(list(a.rules))
    assert a == b and hash(a) == hash(b)
    assert a != Grammar.from_ebnf('root ::= "a"')
    assert a != "root"
    c = pickle.loads(pickle.dumps(a))
    assert c == a and c.to_bytes() == a.to_bytes()
    assert repr(a) == "Grammar(root='root', rules=['root', 'b'])"
    many = Grammar.from_ebnf(
        "root ::= " + " ".join(f"r{i}" for i in range(12)) + "".join(f'\nr{i} ::= "x"' for i in range(12))
    )
    assert repr(many).endswith("... (13 rules)])")


def test_str_round_trips():
    g = Grammar.from_ebnf('root ::= (item ","?)* "\\n"\nitem ::= [^,\\n\\]]+ | "\\"" [a-z]{1,3} "\\""')
    assert Grammar.from_ebnf(str(g)) == g


def test_exported_from_package():
    import agentgrammar.grammar as pkg

    assert pkg.Grammar is Grammar
    assert pkg.__all__ == ["Grammar"]


def test_validate_rules_returns_tuple():
    assert validate_rules([Rule("root", L(b"a"))]) == (Rule("root", L(b"a")),)


def test_accepts_checks_whole_sentences_with_the_engine():
    g = Grammar.from_ebnf('root ::= "[" [0-9]+ ("," [0-9]+)* "]"')
    assert g.accepts("[1,22,3]")
    assert g.accepts(b"[7]")
    assert not g.accepts("[1,")  # a prefix, not a sentence
    assert not g.accepts("[1]]")
    # answers agree with the independent reference recognizer
    for text in ["[]", "[0]", "[0,0]", "[,]", "[12,345]", "[1,2,]"]:
        assert g.accepts(text) == IRMatcher(g.rules).matches(text), text


def test_a_reused_body_is_checked_once_and_still_resolved_each_time() -> None:
    from agentgrammar.errors import GrammarError
    from agentgrammar.grammar.ir import Literal, Rule, RuleRef, Seq

    body = Seq((Literal(b"a"), RuleRef("tail")))
    g = Grammar.from_rules([Rule("root", body), Rule("tail", Literal(b"b"))])
    assert g.accepts("ab") and not g.accepts("a")
    with pytest.raises(GrammarError, match="'tail' is not defined"):  # references re-resolved
        Grammar.from_rules([Rule("root", body)])
    again = Grammar.from_rules([Rule("start", body), Rule("tail", Literal(b"c"))], root="start")
    assert again.accepts("ac") and not again.accepts("ab")
