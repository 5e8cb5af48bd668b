"""Plain tokens are accepted wholesale where a state takes every plain character
(``csrc/ag_plain_tokens.c``).

A plain token is UTF-8 characters with no quote, backslash or control byte, the last one
possibly cut short (byte-level BPE splits characters across tokens). A state
whose own automaton consumes every plain string as long as a token (inside a JSON string, a
``[^"]*`` pattern, a key of an object that allows any key) accepts all of them without a
walk. These tests check the masks against the uncached walk on a vocabulary built to hit
every edge of that definition (partial and invalid UTF-8, surrogates, overlong forms, DEL,
control bytes, quotes, backslashes) and on grammars where the shortcut must apply and where
it must not (a character missing from the class, a length bound shorter than a token, a
multi-byte character the class leaves out).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from tests.mask_oracle import PROPERTY_SETTINGS as SETTINGS
from tests.mask_oracle import cached_and_direct

EDGE_TOKENS = [
    b"a",
    b"b",
    b"x",
    b" ",
    b"ab",
    b"hello",
    b" world",
    b'"',
    b"\\",
    b"\\n",
    b"\\u00e9",
    b'",',
    b'"}',
    b'a"',
    b"\x01",
    b"\t",
    b"\n",
    b"a\nb",
    b"\x7f",
    b"\xc3\xa9",
    "中文".encode(),
    "😀".encode(),
    b"\xe4",
    b"\xb8\xad",
    b"\xf0\x9f",
    b"\x98\x80",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\xe0\x80\x80",
    b"\xf4\x90\x80\x80",
    b"\xff",
    b"\x80",
    b",",
    b"}",
    b"{",
    b":",
    b".",
    b"!",
    b"abcdefghijklmnopqrst",
    b"plain words only here",
    "é中😀é".encode(),
    b'xx"yy',
    b"\xe4\xb8",  # cut short: the start of U+4E00 .. U+4E3F
    b"a\xe4\xb8",
    "中".encode() + b"\xf0\x9f\x98",
    b"\xe0\x80",  # an overlong form's start: never plain
    b"\xed\xa0",  # a surrogate's start: never plain
    b"hello\n\n",  # plain up to a control byte: refused where none may follow plain text
    b"hi\n",
    "é".encode() + b"\t!",
    b"\xe4\n",  # a control byte inside a character: not plain up to it
]


def make_vocab() -> Vocabulary:
    tokens = list(EDGE_TOKENS)
    tokens += [bytes([b]) for b in range(256) if bytes([b]) not in tokens]
    tokens.append(b"</s>")
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


VOCAB = make_vocab()
MAX_LEN = max(len(t) for t in VOCAB.token_bytes)


def is_plain(token: bytes) -> bool:
    """The definition, independently of the C core."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(text) and all(ch not in '"\\' and ord(ch) >= 0x20 for ch in text)


def masks(matcher: Matcher):
    return cached_and_direct(matcher, VOCAB.vocab_size)


def walk(compiled, rng: random.Random, steps: int = 40) -> None:
    for _ in range(2):  # the second matcher meets the cached classes
        matcher = Matcher(compiled)
        for step in range(steps):
            cached, direct = masks(matcher)
            assert np.array_equal(cached, direct), f"step {step}: {compiled.grammar}"
            allowed = [i for i in matcher.allowed_token_ids() if i not in VOCAB.stop_token_ids]
            if not allowed or matcher.is_terminated():
                break
            if matcher.num_accepted_steps and rng.random() < 0.1:
                matcher.rollback(1)
                continue
            assert matcher.accept_token(rng.choice(allowed))


APPLIES = [
    'root ::= "\\"" [^"\\\\\\x00-\\x1f]* "\\""',
    'root ::= [^"]* "!"',  # backslash and control bytes too: a superset of plain
    'root ::= ("ab" | [^"\\\\\\x00-\\x1f])* "\\"" ","',  # plain characters reach several states
    'root ::= "\\"" [^"\\\\\\x00-\\x1f]{0,64} "\\""',  # bound longer than every token
    'root ::= "\\"" [^"\\\\\\x00-\\x1f]{0,12} "\\""',  # the plain tokens that fit the room left
    'root ::= "\\"" [^"\\\\\\x00-\\x1f\\u4e2d]* "\\""',  # a 3-byte character missing: the tokens too short to hold it
    # every character that starts E4 B8 missing: the token of those two bytes leads nowhere
    'root ::= "\\"" [^"\\\\\\x00-\\x1f\\u4e00-\\u4e3f]* "\\""',
    # one ASCII character missing: the plain tokens without it (ag_plain_loop_class)
    'root ::= "\\"" [^"\\\\\\x00-\\x1fx]* "\\""',
    'root ::= "\\"" [^"\\\\\\x00-\\x1f&,]* "\\""',
]
#: Plain text that a control byte may follow: tokens plain up to one must still be walked.
CONTROL_AFTER = [
    'root ::= [^"\\\\\\x00-\\x1f]* ("\\n" "!")?',  # a newline after any plain text
    'root ::= inner "\\n"\ninner ::= [^"\\\\\\x00-\\x1f]*',  # the rule may end, a newline follows
    'root ::= "\\"" ([^"\\\\\\x00-\\x1f] | "\\t")* "\\""',  # one control byte taken
]
DOES_NOT_APPLY = [
    'root ::= [a-z ]* "."',  # no multi-byte characters
    'root ::= "\\"" [^"\\\\\\x00-\\x1fx\\u00e9]* "\\""',  # a wide character missing too
]


@pytest.mark.parametrize("source", APPLIES + CONTROL_AFTER + DOES_NOT_APPLY)
def test_masks_equal_the_direct_walk(source: str) -> None:
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    for seed in range(4):
        walk(compiled, random.Random(seed))
    stats = compiled.cache_stats
    if source in APPLIES + CONTROL_AFTER:
        assert stats.plain > 0, stats
    else:
        assert stats.plain == 0, stats


def test_a_string_state_allows_exactly_the_plain_tokens_and_its_own() -> None:
    compiled = Compiler(VOCAB, background=False).compile(
        Grammar.from_ebnf('root ::= "\\"" [^"\\\\\\x00-\\x1f]* "\\""')
    )
    matcher = Matcher(compiled)
    assert matcher.accept_string('"')
    allowed = set(matcher.allowed_token_ids())
    for i, tok in enumerate(VOCAB.token_bytes):
        if is_plain(tok) and i not in VOCAB.stop_token_ids:
            assert i in allowed, tok
    assert VOCAB.token_bytes.index(b'"') in allowed  # the closing quote
    assert VOCAB.token_bytes.index(b"\xe4") in allowed  # the start of a character
    # (an encoded surrogate is not plain, but this class, unlike JSON's, takes surrogate code
    # points: walked, and allowed)
    assert VOCAB.token_bytes.index(b"\xed\xa0\x80") in allowed
    for bad in (b"\\", b"\x01", b"\xc0\xaf", b"\xff", b"\x80", b'xx"yy'):
        assert VOCAB.token_bytes.index(bad) not in allowed, bad
    for cut in (b"\xe4\xb8", b"a\xe4\xb8", "中".encode() + b"\xf0\x9f\x98"):
        assert VOCAB.token_bytes.index(cut) in allowed, cut
    for control in (b"a\nb", b"hello\n\n", b"hi\n", "é".encode() + b"\t!", b"\xe4\n"):
        assert VOCAB.token_bytes.index(control) not in allowed, control


@pytest.mark.parametrize("source", CONTROL_AFTER)
def test_plain_text_then_a_control_byte_where_one_may_follow(source: str) -> None:
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    matcher = Matcher(compiled)
    assert matcher.accept_string('"' if source.startswith('root ::= "') else "ab")
    allowed = set(matcher.allowed_token_ids())
    cached, direct = masks(matcher)
    assert np.array_equal(cached, direct)
    newline = VOCAB.token_bytes.index(b"hi\n") in allowed
    tab = VOCAB.token_bytes.index("é".encode() + b"\t!") in allowed
    assert (newline, tab) == ((False, True) if "\\t" in source else (True, False)), source


def test_a_character_cut_short_is_allowed_only_where_it_can_be_finished() -> None:
    source = 'root ::= "\\"" [^"\\\\\\x00-\\x1f\\u4e00-\\u4e3f]* "\\""'  # no character starts E4 B8
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    matcher = Matcher(compiled)
    assert matcher.accept_string('"')
    allowed = set(matcher.allowed_token_ids())
    assert VOCAB.token_bytes.index(b"\xe4") in allowed  # U+4E40 and on start E4
    for cut in (b"\xe4\xb8", b"a\xe4\xb8"):
        assert VOCAB.token_bytes.index(cut) not in allowed, cut
    assert VOCAB.token_bytes.index("中".encode() + b"\xf0\x9f\x98") not in allowed  # 中 is U+4E2D


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"type": "object", "properties": {"abc": {"type": "string"}, "abd": {"type": "integer"}}},
        {"type": "object", "additionalProperties": {"type": "string", "maxLength": 5}},
        {"type": "array", "items": {"type": "string", "pattern": "^[^x]*$"}},
    ],
)
def test_json_strings_and_keys(schema) -> None:
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_json_schema(schema))
    for seed in range(4):
        walk(compiled, random.Random(seed), steps=30)


@SETTINGS
@given(
    excluded=st.sets(st.sampled_from(["x", "a", "\\u00e9", "\\u4e2d", "\\U0001f600", "\\x7f"]), max_size=2),
    bound=st.sampled_from(["*", "+", "{0,8}", "{0,40}", "{2,30}"]),
    seed=st.integers(0, 2**16),
)
def test_classes_with_holes_and_bounds(excluded, bound: str, seed: int) -> None:
    cls = '[^"\\\\\\x00-\\x1f' + "".join(excluded) + "]"
    compiled = Compiler(VOCAB, background=False).compile(
        Grammar.from_ebnf(f'root ::= "\\"" {cls}{bound} "\\"" ","?')
    )
    walk(compiled, random.Random(seed), steps=30)
