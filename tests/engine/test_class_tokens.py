"""Tokens made of a state's loop class are accepted wholesale (``csrc/ag_class_tokens.c``).

A state whose byte edges keep every string over a class of bytes alive, for as long as a
token or up to a bound (an email's local part, a hostname's label, a pattern's
``[a-z0-9-]+``), accepts every token made only of that class without walking it; the walk
visits the other tokens. These tests check the masks against the uncached walk and against
the tokens computed here, on grammars where the class loops on one state, where it runs along
a chain of counted positions (a bound shorter than some tokens), where escapes branch off the
class (a JSON string's ``\\u``), and where a byte leaves the loop for another state.
"""

from __future__ import annotations

import codecs
import random
import re
from typing import List, Optional, Set

import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from tests.mask_oracle import allowed_checked

_RNG = random.Random(5)
_CLASS = "abcdefghijklmnopqrstuvwxyz0123456789-"
_OTHER = '.@_ "\\A;'


def _word() -> str:
    n = _RNG.choice([1, 2, 3, 4, 5, 6, 8, 12, 30, 45])  # some longer than the bounds below
    if _RNG.random() < 0.7:
        return "".join(_RNG.choice(_CLASS) for _ in range(n))
    return "".join(_RNG.choice(_CLASS + _OTHER) for _ in range(n))


WORDS = sorted({_word() for _ in range(4000)} - {""})
TOKENS: List[bytes] = [bytes([b]) for b in range(256)] + [w.encode() for w in WORDS if len(w) > 1]
TOKENS += ["é".encode(), "-é".encode()]
VOCAB = Vocabulary(TOKENS + [b"</s>"], stop_token_ids=[len(TOKENS)])


def allowed(matcher: Matcher) -> Set[int]:
    return allowed_checked(matcher, VOCAB.vocab_size)


def walk_text(grammar: Grammar, text: str) -> Compiler:
    """Accept `text` byte by byte (by single-byte tokens), each mask checked against the walk."""
    compiler = Compiler(VOCAB, background=False)
    compiled = compiler.compile(grammar)
    matcher = Matcher(compiled)
    for b in text.encode():
        allowed(matcher)
        assert matcher.accept_token(b), (text, b)
    allowed(matcher)
    assert matcher.is_completed()
    return compiler


def test_a_self_loop_accepts_exactly_its_class_tokens_and_the_way_out() -> None:
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf('root ::= [a-z0-9-]+ ";"'))
    matcher = Matcher(compiled)
    assert matcher.accept_string("a")
    want = {i for i, t in enumerate(TOKENS) if re.fullmatch(rb"[a-z0-9-]*;?", t) and t}
    assert allowed(matcher) == want
    assert compiled.cache_stats.classed >= 1


@pytest.mark.parametrize(
    "regex, texts",
    [
        (r"[a-z0-9-]+(\.[a-z0-9-]+)*@[a-z]+", ["ab-c.d9@x", "z@q", "a.b.c@dd"]),
        (r"[a-z0-9]{0,20}x", ["x", "abc" * 6 + "x", "a" * 20 + "x", "0123456789x"]),
        (r"([a-z]{1,7}\.){1,3}[a-z]{2,6}", ["abcdefg.hi", "a.b.cdefgh", "abc.de"]),
        (r"[a-z0-9-]*é?;", ["ab-é;", ";", "é;"]),
    ],
)
def test_masks_equal_the_direct_walk_along_regexes(regex: str, texts: List[str]) -> None:
    grammar = Grammar.from_regex(regex)
    classed = 0
    for text in texts:
        classed += walk_text(grammar, text).compile(grammar).cache_stats.classed
    assert classed > 0  # the shortcut was taken somewhere along the texts


def test_a_bound_shorter_than_a_token_rejects_the_longer_class_tokens() -> None:
    """Five bytes short of a bound of 20 ([a-z0-9]{0,20}), a class token of more than 5 bytes
    (there are some of 6 to 45) cannot be taken whole, and no token with a byte outside."""
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_regex(r"[a-z0-9]{0,20}x"))
    matcher = Matcher(compiled)
    assert matcher.accept_string("a" * 15)
    want = {i for i, t in enumerate(TOKENS) if re.fullmatch(rb"[a-z0-9]{0,5}x?", t) and t}
    assert allowed(matcher) == want


@pytest.mark.parametrize(
    "schema, value",
    [
        ({"type": "string", "pattern": "^[a-z0-9-]+$"}, "ab-c9"),
        ({"type": "string", "format": "email"}, "john.doe-9@example-a.com"),
        ({"type": "string", "format": "hostname"}, "a-b.cd.example"),
        ({"type": "string", "pattern": "^[a-z]{2,40}$"}, "abcdefghijklmnopqrstuvwxyz"),
    ],
)
def test_json_strings_whose_characters_may_be_escaped(schema, value: str) -> None:
    """Inside a JSON string each character may also come as a \\u escape: the loop class
    must leave out the backslash that branches off to it, and still take the rest."""
    grammar = Grammar.from_json_schema(schema)
    compiler = walk_text(grammar, f'"{value}"')
    assert compiler.compile(grammar).cache_stats.classed > 0
    # the escaped form is still accepted where the class tokens were taken at once
    compiled = compiler.compile(grammar)
    matcher = Matcher(compiled)
    assert matcher.accept_string('"' + value[0] + "\\u00" + format(ord(value[1]), "x"))
    allowed(matcher)


def test_grammars_of_one_compiler_share_a_class_set() -> None:
    """The tokens of a class are found once per vocabulary: a second grammar looping on the
    same class finds them (its masks are still those of the direct walk)."""
    compiler = Compiler(VOCAB, background=False)
    first = compiler.compile(Grammar.from_ebnf('root ::= [a-z0-9-]+ ";"'))
    second = compiler.compile(Grammar.from_ebnf('root ::= "=" [a-z0-9-]+ "!"'))
    m1, m2 = Matcher(first), Matcher(second)
    assert m1.accept_string("ab") and m2.accept_string("=ab")
    a1, a2 = allowed(m1), allowed(m2)
    class_tokens = {i for i, t in enumerate(TOKENS) if re.fullmatch(rb"[a-z0-9-]+", t)}
    assert class_tokens <= a1 and class_tokens <= a2
    assert first.cache_stats.classed >= 1 and second.cache_stats.classed >= 1


# Tokens for the plain loop class: ASCII words with and without the excluded characters,
# wide characters whole and cut short, quotes, escapes and a control byte.
_PLAIN_PIECES = ["ab", "c d", "x&y", "&", ",", ":", " ", "é", "日本", "🙂", "a\u2028b", '"', "\\", "\\n"]
PLAIN_TOKENS: List[bytes] = [bytes([b]) for b in range(256)]
PLAIN_TOKENS += sorted(
    {"".join(_RNG.choice(_PLAIN_PIECES) for _ in range(_RNG.randint(1, 4))).encode() for _ in range(3000)}
    - {bytes([b]) for b in range(256)}
)
PLAIN_TOKENS += ["é".encode()[:1], ("ab" + "日").encode()[:-1], "\x07ab".encode()]
PLAIN_VOCAB = Vocabulary(PLAIN_TOKENS + [b"</s>"], stop_token_ids=[len(PLAIN_TOKENS)])


@pytest.mark.parametrize(
    "pattern, value, plain",
    [
        ("^[^&]*$", "ab 日本 c🙂", True),  # every character but one: the plain tokens without it
        # \s holds wide spaces, so [^,:&\s] takes its ASCII class; [^,] the plain tokens
        ("^[^,:&\\s]+:[^,]*$", "ab日:c d", True),
        ("^[^@]+@[^@]+$", "a日@b", True),  # the first character's state: the next one loops
        ("^.*$", "ab 日", False),  # U+2028 is no `.`: the loop class of its ASCII bytes only
    ],
)
def test_a_string_loop_on_all_but_a_few_ascii_characters(pattern: str, value: str, plain: bool) -> None:
    """Inside a JSON string, a pattern's negated class takes every plain token made of the
    characters it loops on (wide ones whole or cut short at the token's end) at once; the
    masks are those of the direct walk, character by character, escapes and all."""
    compiler = Compiler(PLAIN_VOCAB, background=False)
    grammar = Grammar.from_json_schema({"type": "string", "pattern": pattern})
    compiled = compiler.compile(grammar)
    matcher = Matcher(compiled)
    for b in f'"{value}"'.encode():
        allowed_checked(matcher, PLAIN_VOCAB.vocab_size)
        assert matcher.accept_token(b)
    assert matcher.is_completed()
    stats = compiled.cache_stats
    assert (stats.plain > 0) == plain  # the plain tokens less a few characters' (counted as plain)
    assert stats.plain + stats.classed > 0


def test_the_plain_loop_class_tokens_are_the_plain_ones_without_the_left_out_characters() -> None:
    """In [^&] inside a string, the tokens taken are exactly the plain ones (no quote,
    backslash or control byte; whole characters but the last) that hold no '&'; with the
    quote and the escapes the walk adds, the mask is every token the pattern can go on with."""
    compiled = Compiler(PLAIN_VOCAB, background=False).compile(
        Grammar.from_json_schema({"type": "string", "pattern": "^[^&]*$"})
    )
    matcher = Matcher(compiled)
    assert matcher.accept_string('"a')
    got = allowed_checked(matcher, PLAIN_VOCAB.vocab_size)
    texts = [_plain_text(t) for t in PLAIN_TOKENS]
    plain = {i for i, text in enumerate(texts) if text is not None and "&" not in text}
    assert plain <= got
    assert not {i for i, t in enumerate(PLAIN_TOKENS) if b"&" in t} & got
    assert compiled.cache_stats.plain >= 1


def _plain_text(token: bytes) -> Optional[str]:
    """The characters of a plain token (whole UTF-8 characters but the last, which may be
    cut short; no quote, backslash or control character), or None for any other token."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(token, final=False)
    except UnicodeDecodeError:
        return None
    if not token or any(c < " " or c in '"\\' for c in text):
        return None
    return text


def test_a_first_character_whose_next_state_loops_takes_the_plain_tokens_too() -> None:
    """The first character of [^@]+ leads to the state that loops: every plain token without
    an '@' is taken at once there too, not only from the second character on."""
    compiled = Compiler(PLAIN_VOCAB, background=False).compile(
        Grammar.from_json_schema({"type": "string", "pattern": "^[^@]+@[^@]+$"})
    )
    matcher = Matcher(compiled)
    assert matcher.accept_string('"')
    got = allowed_checked(matcher, PLAIN_VOCAB.vocab_size)
    assert compiled.cache_stats.plain == 1
    assert PLAIN_TOKENS.index("日本".encode()) in got
