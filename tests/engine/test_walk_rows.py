"""First-visit walks step by dense transition rows (``csrc/ag_walk_rows.c``).

A walk makes a 256-cell row for its start state and for each state it steps into a few times,
up to a bound, and steps any other state by binary search. These tests check the masks against the uncached walk where rows are
made for states with many byte edges (every byte met, most with no edge), where a rule's end
depends on the byte that follows it, where steps leave the rule (HYBRID) and where one walk
visits more states than it may make rows for, so both kinds of step mix in one walk. Random
rules over a dense three-letter vocabulary check where a walk resumes after the tokens it
decided without a walk, and what the Earley parser may reuse of the last token it resolved.
"""

from __future__ import annotations

import itertools
import random
from typing import List

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, GrammarError, Matcher, Vocabulary
from tests.mask_oracle import cached_and_direct

LETTERS = "abcdefghij"
# 1500 words of 5 letters: their alternation's automaton has well over a thousand states, and a
# token that is a word or a prefix of one visits them all from the start state. Row bound: 256.
_RNG = random.Random(5)
WORDS = sorted({"".join(_RNG.choice(LETTERS) for _ in range(5)) for _ in range(1600)})[:1500]
SPARSE = "acegikmoqsuwy02468"  # a class of 18 single-byte ranges


def make_vocab() -> Vocabulary:
    rng = random.Random(3)
    tokens: List[bytes] = [bytes([b]) for b in range(256)]
    tokens += [w.encode() for w in WORDS]
    tokens += sorted({w[:k].encode() for w in WORDS[::7] for k in (2, 3, 4)})
    tokens += [(a + " " + b).encode() for a, b in zip(WORDS[::50], WORDS[1::50])]
    tokens += [(w + "=1,").encode() for w in WORDS[::60]]
    tokens += [
        "".join(rng.choice(SPARSE + "bdz!?") for _ in range(rng.randint(2, 8))).encode() for _ in range(300)
    ]
    tokens += [b"ac!", b"a?c", b"?", b"!a", b"\xff\xfe", b"a\x00"]
    tokens = list(dict.fromkeys(tokens))
    tokens.append(b"</s>")
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


VOCAB = make_vocab()
ALT = " | ".join(f'"{w}"' for w in WORDS)
CLASS = "[" + SPARSE + "]"

GRAMMARS = {
    # one rule of bytes alone (BYTES): the whole vocabulary walks the word automaton
    "words": f'root ::= ({ALT}) (" " ({ALT}))*',
    # the words in their own rule, which ends where a space or a period may follow (HYBRID root)
    "word rule": f'root ::= word (" " word)* "."\nword ::= {ALT}',
    # many states with rule edges: tokens cross into val and back into root
    "hybrid": f'root ::= ({ALT}) "=" val ("," root)?\nval ::= [0-9]+',
    # a state with many byte edges, looping; the end of x counts only before ! or ?
    "sparse": f'root ::= x "!" | x "?" x\nx ::= {CLASS}*',
    "sparse inline": f'root ::= {CLASS}* ("!" | "?" {CLASS}+)',
}


def walk(compiled, rng: random.Random, steps: int = 12) -> None:
    for _ in range(2):  # the second matcher meets the cached classes
        matcher = Matcher(compiled)
        for step in range(steps):
            cached, direct = cached_and_direct(matcher, VOCAB.vocab_size)
            assert np.array_equal(cached, direct), f"step {step}"
            allowed = [i for i in matcher.allowed_token_ids() if i not in VOCAB.stop_token_ids]
            if not allowed or matcher.is_terminated():
                break
            assert matcher.accept_token(rng.choice(allowed))


@pytest.mark.parametrize("name", list(GRAMMARS))
def test_masks_equal_the_direct_walk(name: str) -> None:
    compiled = Compiler(VOCAB).compile(Grammar.from_ebnf(GRAMMARS[name]))
    for seed in range(3):
        walk(compiled, random.Random(seed))
    assert compiled.cache_stats.walked > 0


def test_a_sparse_state_allows_exactly_its_bytes() -> None:
    compiled = Compiler(VOCAB).compile(Grammar.from_ebnf(GRAMMARS["sparse"]))
    allowed = {VOCAB.token_bytes[i] for i in Matcher(compiled).allowed_token_ids()}
    assert {bytes([b]) for b in range(256) if bytes([b]) in allowed} == {c.encode() for c in SPARSE + "!?"}
    assert b"ac!" in allowed and b"a?c" in allowed and b"!a" not in allowed and b"\xff\xfe" not in allowed


def test_runs_of_rejected_tokens_end_where_their_prefix_does() -> None:
    """A failing prefix skips the run of sorted tokens that share it (csrc/ag_vocab.c,
    lcp_next), in both the cached and the direct walk, so the mask is checked against the
    language itself: strings over a-c without "bb". Tokens of 1-9 letters over a-d nest runs
    inside runs, with common prefixes that rise and fall."""
    rng = random.Random(11)
    tokens = sorted({"".join(rng.choice("abcd") for _ in range(rng.randint(1, 9))) for _ in range(3000)})
    vocab = Vocabulary(tokens + ["</s>"], stop_token_ids=[len(tokens)])
    compiled = Compiler(vocab).compile(Grammar.from_regex("(a|c|b[ac])*b?"))
    for prefix in ["", "a", "b", "ab"]:
        matcher = Matcher(compiled)
        assert prefix == "" or matcher.accept_string(prefix)
        allowed = {vocab.token_bytes[i].decode() for i in matcher.allowed_token_ids()} - {"</s>"}
        expected = {t for t in tokens if "d" not in t and "bb" not in prefix + t}
        assert allowed == expected, prefix
        cached, direct = cached_and_direct(matcher, vocab.vocab_size)
        assert np.array_equal(cached, direct)


# Every string of 1 to 4 letters over a three-letter alphabet: neighbours in sorted order share
# long prefixes, and runs of them are decided at once, so a walk often resumes far from the last
# token it walked.
_ABC = [("".join(p)).encode() for n in (1, 2, 3, 4) for p in itertools.product("abc", repeat=n)]
ABC_VOCAB = Vocabulary([*_ABC, b"</s>"], stop_token_ids=[len(_ABC)])


def random_rules(rng: random.Random) -> str:
    """A root and three rules over "abc": literals, classes, references (later rules only, some
    nullable through a repeat), sequences, choices and repeats."""

    def expr(depth: int, refs: List[str]) -> str:
        k = rng.random()
        if depth > 2 or k < 0.3:
            c = rng.random()
            if c < 0.5:
                return '"' + "".join(rng.choice("abc") for _ in range(rng.randint(1, 3))) + '"'
            if c < 0.8 and refs:
                return rng.choice(refs)
            return "[" + "".join(sorted({rng.choice("abc") for _ in range(2)})) + "]"
        if k < 0.6:
            return " ".join(expr(depth + 1, refs) for _ in range(rng.randint(2, 3)))
        if k < 0.85:
            return "(" + " | ".join(expr(depth + 1, refs) for _ in range(rng.randint(2, 3))) + ")"
        return "(" + expr(depth + 1, refs) + ")" + rng.choice(["*", "?", "+", "{0,3}"])

    names = ["r1", "r2", "r3"]
    source = f"root ::= {expr(0, names)} {expr(0, names)}\n"
    for name in names:
        source += f"{name} ::= {expr(1, [n for n in names if n > name])}\n"
    return source


def test_the_parser_reuses_only_what_two_tokens_share() -> None:
    """A state with its own rule references hands the parser only the tokens that the states it
    predicts leave uncertain; a run of tokens its own walk rejects stops at such a token. The
    parser then reuses the prefix that token shares with the last one it resolved, which may
    be less than the LCP with the token just before it. This grammar and path once gave a mask
    that allowed "bcba" where the direct walk did not."""
    source = (
        'root ::= [bc] ("c" | "c") r2 "ab" (r1 | "b") "bca" [a] "cac" ("ca")* (([b] | (r1)? | ("caa"){0,3}))+\n'
        'r1 ::= r3 ("ca"){0,3}\nr2 ::= ([bc] "b"){0,3}\nr3 ::= ([bc]){0,3}\n'
    )
    matcher = Matcher(Compiler(ABC_VOCAB).compile(Grammar.from_ebnf(source)))
    for text in ("", "cccb", "cbab"):
        assert matcher.accept_string(text)
        cached, direct = cached_and_direct(matcher, ABC_VOCAB.vocab_size)
        assert np.array_equal(cached, direct), f"after {text!r}"


@pytest.mark.parametrize("first", range(0, 300, 100))
def test_masks_of_random_rules_over_a_dense_vocabulary(first: int) -> None:
    for seed in range(first, first + 100):
        rng = random.Random(seed)
        source = random_rules(rng)
        try:
            compiled = Compiler(ABC_VOCAB).compile(Grammar.from_ebnf(source))
        except GrammarError:  # a root that can never finish
            continue
        for _ in range(3):
            matcher = Matcher(compiled)
            for step in range(12):
                cached, direct = cached_and_direct(matcher, ABC_VOCAB.vocab_size)
                assert np.array_equal(cached, direct), f"seed {seed}, step {step}:\n{source}"
                allowed = [i for i in matcher.allowed_token_ids() if i not in ABC_VOCAB.stop_token_ids]
                if not allowed:
                    break
                assert matcher.accept_token(rng.choice(allowed))


def test_first_bytes_no_token_may_start_with_are_skipped_together() -> None:
    """A walk skips every token of a first byte the state has no edge for, and of the dead bytes
    after it, through the vocabulary's index of first bytes (csrc/ag_vocab.c): here the only
    live first bytes are 0x00, 0x7f and 0xc3, with dead runs between them and up to 0xff, the
    last byte of the sorted order. The mask is checked against the language itself."""
    tokens = [bytes([b]) for b in range(256)]
    tokens += [b"\x00a", b"\x00\x00", b"\x00~", b"\x7fz", b"\x7f\x7f", b"\xc3\xbf", b"\xc3\xa9"]
    tokens += [b"\xff\xfe", b"~x", b"ab", b"ba", b"\x01a"]
    vocab = Vocabulary([*tokens, b"</s>"], stop_token_ids=[len(tokens)])
    grammar = Grammar.from_ebnf('root ::= [\\u0000\\u007f] [a-z\\u0000]* | "\\u00ff"')
    compiled = Compiler(vocab).compile(grammar)
    for _ in range(2):  # the second matcher reads the cached classes
        matcher = Matcher(compiled)
        allowed = {vocab.token_bytes[i] for i in matcher.allowed_token_ids()}
        assert allowed == {b"\x00", b"\x7f", b"\xc3", b"\x00a", b"\x00\x00", b"\x7fz", b"\xc3\xbf"}
        cached, direct = cached_and_direct(matcher, vocab.vocab_size)
        assert np.array_equal(cached, direct)


def test_bytes_a_state_has_no_edge_for_are_skipped_past_the_first() -> None:
    """Past the first byte, a rejected token's run extends over the next bytes the state has no
    edge for (csrc/ag_mask_cache.c, ag_skip_dead_bytes), found by binary search among the tokens
    that share the prefix; and states that few tokens enter are stepped by search, not given a
    row (csrc/ag_walk_rows.c). Names over a-f branch sparsely under prefixes that every two- and
    three-letter token shares, and one name is a prefix of others. Inline, the names' states
    step out of the rule into ``val``; in a rule of their own, "ab" ends the rule in the middle
    of the trie (an accepting state, whose bytes are never skipped). The masks are checked
    against the language itself and against the direct walk."""
    names = [
        "ab",
        "abcf",
        "abd",
        "adf",
        "bad",
        "bead",
        "cab",
        "cafe",
        "dab",
        "deaf",
        "ebb",
        "face",
        "fade",
        "fed",
    ]
    tokens = sorted(
        {"".join(p) for n in (1, 2, 3) for p in itertools.product("abcdef", repeat=n)} | set(names)
    )
    tokens += ["ab=1", "abd=", "fed=12", "=1"]
    vocab = Vocabulary([*tokens, "</s>"], stop_token_ids=[len(tokens)])
    alt = " | ".join(f'"{n}"' for n in names)
    val = 'val ::= "=" [0-9]+'
    for source in (f"root ::= ({alt}) val\n{val}", f"root ::= name val\nname ::= {alt}\n{val}"):
        compiled = Compiler(vocab).compile(Grammar.from_ebnf(source))
        for _ in range(2):  # the second matcher of each prefix reads the cached classes
            for prefix in ["", "a", "ab", "abc", "c", "ca", "fe", "d"]:
                matcher = Matcher(compiled)
                assert prefix == "" or matcher.accept_string(prefix)
                allowed = {vocab.token_bytes[i].decode() for i in matcher.allowed_token_ids()} - {"</s>"}
                assert allowed == {t for t in tokens if _begins_a_call(prefix + t, names)}, (source, prefix)
                cached, direct = cached_and_direct(matcher, vocab.vocab_size)
                assert np.array_equal(cached, direct), (source, prefix)


def _begins_a_call(text: str, names: List[str]) -> bool:
    """Whether ``text`` begins some string of NAME "=" [0-9]+."""
    for n in names:
        if n.startswith(text):
            return True
        rest = text[len(n) :] if text.startswith(n) else ""
        if rest == "=" or (rest.startswith("=") and rest[1:].isdigit()):
            return True
    return False
