"""Embedded grammars linked as prebuilt parts: the same language and masks as the flattened
grammar, parts compiled once per compiler, and their token masks shared between grammars."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, GrammarError, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.grammar.ir import Choice, Embed, Literal, Rule, RuleRef, Seq, TagDispatch, flatten_embeds

TOKENS = ["{", "}", '"', "a", "b", "1", "2", ",", ":", '{"', '"}', "ab", "<c>", "<", ">", "c", "</s>"]


def vocab() -> Vocabulary:
    return Vocabulary(TOKENS, stop_token_ids=[len(TOKENS) - 1])


NUMBER = Grammar.from_ebnf('root ::= [12]+ ("," [12]+)*')
WORD = Grammar.from_ebnf('root ::= "\\"" [ab]* "\\""')
PAIR = Grammar.from_rules(
    [Rule("root", Seq((Literal(b"{"), Embed(WORD), Literal(b":"), Embed(NUMBER), Literal(b"}"))))]
)


def request(*parts: Grammar) -> Grammar:
    """Free text where each "<c>" opens one of the parts."""
    rules = [
        Rule("root", TagDispatch(triggers=((b"<c>", "call"),))),
        Rule("call", Choice(tuple(Embed(p) for p in parts))),
    ]
    return Grammar.from_rules(rules)


def masks_along(compiled, rng: random.Random, steps: int = 30):
    matcher = Matcher(compiled)
    out = []
    for _ in range(steps):
        mask = allocate_token_bitmask(1, compiled.vocabulary.vocab_size, backend="numpy")
        matcher.fill_next_token_bitmask(mask)
        out.append(mask.copy())
        allowed = matcher.allowed_token_ids()
        if matcher.is_terminated() or not allowed:
            break
        token = rng.choice(allowed)
        out.append(token)
        assert matcher.accept_token(token)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_linked_masks_equal_flattened(seed: int) -> None:
    grammar = request(NUMBER, PAIR, WORD)
    flat = Grammar.from_rules(flatten_embeds(grammar.rules))
    assert not flat.parts and len(grammar.parts) == 3
    v = vocab()
    linked = masks_along(Compiler(v).compile(grammar), random.Random(seed))
    plain = masks_along(Compiler(v).compile(flat), random.Random(seed))
    assert len(linked) == len(plain)
    for a, b in zip(linked, plain):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


# A part whose root is nullable, with rules the request never names (x is recursive: a rule of
# its own, not inlined).
OPTIONAL = Grammar.from_ebnf('root ::= (x ",")*\nx ::= y | "a" x\ny ::= "b"')


@pytest.mark.parametrize("seed", range(4))
def test_a_nullable_part_among_unnamed_part_rules(seed: int) -> None:
    """Linking analyses the request with a stand-in for each part rule it names (the named
    rules' nullability and productivity) and one shared stand-in for the rest: the empty
    arguments stay allowed and the masks are those of the flattened grammar."""
    grammar = Grammar.from_rules(
        [Rule("root", Seq((Literal(b"<"), Embed(OPTIONAL), Literal(b">"), Embed(WORD))))]
    )
    assert len(OPTIONAL.normalized_rules) >= 2  # more part rules than the one the request names
    for text, ok in (('<>""', True), ('<b,ab,>"a"', True), ('<b>""', False), ("<>", False)):
        assert grammar.accepts(text) is ok, text
    flat = Grammar.from_rules(flatten_embeds(grammar.rules))
    v = vocab()
    linked = masks_along(Compiler(v).compile(grammar), random.Random(seed))
    plain = masks_along(Compiler(v).compile(flat), random.Random(seed))
    assert len(linked) == len(plain)
    for a, b in zip(linked, plain):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_language_of_embeds() -> None:
    g = request(PAIR)
    assert g.accepts('x<c>{"ab":12,1}y')
    assert not g.accepts('<c>{"ab":}')
    assert g.accepts("no calls at all")


def test_parts_are_compiled_once_and_shared() -> None:
    compiler = Compiler(vocab(), reuse_grammars=False)
    first = compiler.compile(request(NUMBER, WORD))
    second = compiler.compile(request(WORD, PAIR))  # PAIR embeds WORD and NUMBER again
    parts = {id(p) for c in (first, second) for p in c._parts}
    assert len(parts) == 3  # NUMBER, WORD, PAIR: WORD's compiled part serves both requests
    word_1 = next(p for p in first._parts if p.grammar is WORD)
    word_2 = next(p for p in second._parts if p.grammar is WORD)
    assert word_1 is word_2


def test_byte_only_states_share_their_classes_across_grammars() -> None:
    """A state of a rule made of bytes alone is classified once per vocabulary: its classes
    are shared, so they are not counted in the compiled grammar's own memory."""
    compiler = Compiler(vocab(), reuse_grammars=False, background=False)
    mask = allocate_token_bitmask(1, len(TOKENS), backend="numpy")
    for prefix in ("x", "y"):  # two grammars, the same automaton after their first byte
        compiled = compiler.compile(Grammar.from_ebnf(f'root ::= "{prefix}" [ab]+'))
        m = Matcher(compiled)
        m.fill_next_token_bitmask(mask)  # the start state (its own) and the grammar's follow sets
        assert m.accept_string(prefix)
        before = compiled.memory_size_bytes
        m.fill_next_token_bitmask(mask)
        assert compiled.memory_size_bytes == before
        assert sorted(m.allowed_token_ids()) == [3, 4, 11]  # a, b, ab
    # a state whose rule has a rule edge is classified by the grammar itself, and counted
    compiled = compiler.compile(Grammar.from_ebnf('root ::= "x" item+\nitem ::= "a" | "b" item'))
    m = Matcher(compiled)
    assert m.accept_string("x")
    before = compiled.memory_size_bytes
    m.fill_next_token_bitmask(mask)
    assert compiled.memory_size_bytes > before


def test_same_content_in_another_object_is_the_same_part() -> None:
    compiler = Compiler(vocab())
    twin = Grammar.from_ebnf('root ::= [12]+ ("," [12]+)*')
    a = compiler.compile(request(NUMBER))
    b = compiler.compile(request(twin))
    assert a is b  # the content key covers the parts: equal content, one compiled grammar


def test_printing_and_errors() -> None:
    text = str(request(NUMBER))
    assert "TagDispatch" in text and '[12]+ ("," [12]+)*' in text
    assert Grammar.from_ebnf(text).accepts("<c>1,2")
    with pytest.raises(GrammarError, match="Embed needs a Grammar"):
        Grammar.from_rules([Rule("root", Embed("root ::= 'a'"))])
    # an embed is opaque: its rules are not the outer grammar's
    with pytest.raises(GrammarError, match="'x' is not defined"):
        Grammar.from_rules([Rule("root", Seq((Embed(NUMBER), RuleRef("x"))))])


# JSON's punctuation, a few values' pieces, a backslash and a wide character: enough to write
# any value's structure.
JSON_TOKENS = '{" "} { } [ ] " , : SP a b 1 - . e true null ": \\ u 0 é </s>'.split()
JSON_TOKENS[JSON_TOKENS.index("SP")] = " "


@pytest.mark.parametrize("seed", range(4))
def test_a_schemas_embedded_value_grammar_masks_as_its_own_rules(seed: int) -> None:
    """Any JSON value is embedded from one shared grammar (``json_schema.convert._value_embed``): the
    masks along random paths are those of the same rules flattened into the schema's own."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array"}}}
    grammar = Grammar.from_json_schema(schema)
    assert len(grammar.parts) == 1
    flat = Grammar.from_rules(flatten_embeds(grammar.rules))
    v = Vocabulary(JSON_TOKENS, stop_token_ids=[len(JSON_TOKENS) - 1])
    linked = masks_along(Compiler(v).compile(grammar), random.Random(seed), steps=40)
    plain = masks_along(Compiler(v).compile(flat), random.Random(seed), steps=40)
    assert len(linked) == len(plain)
    for a, b in zip(linked, plain):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_the_shared_value_grammar_is_loaded_once_for_every_compiler() -> None:
    """Its automata depend on no vocabulary: two compilers over different vocabularies bind
    the same loaded grammar, and each compiles it once for all the schemas that embed it."""
    first = Grammar.from_json_schema({"type": "array"})
    second = Grammar.from_json_schema({"type": "object", "properties": {"k": {"type": "string"}}})
    value = first.parts[0]
    assert second.parts == (value,)
    c1 = Compiler(Vocabulary(JSON_TOKENS, stop_token_ids=[len(JSON_TOKENS) - 1]))
    c2 = Compiler(vocab())
    parts = [c.compile(g)._parts[0] for c in (c1, c2) for g in (first, second)]
    assert parts[0] is parts[1] and parts[2] is parts[3] and parts[0] is not parts[2]
    assert parts[0]._grammar_handle == parts[2]._grammar_handle  # one load, bound twice
    m = Matcher(c1.compile(second))
    assert m.accept_string('{"k": "x", "z": [1, {"y": null}]}') and m.is_completed()
