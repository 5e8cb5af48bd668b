"""A rule that is a choice of literals, each alone or followed by one rule reference, is built
as a trie (``csrc/ag_trie.c``) instead of by subset construction: a request's tool names.

Each random rule is compared with the same rule plus an alternative that matches nothing (an
empty byte class), which keeps the general construction: the minimized automata must have the
same number of states, accept the same strings and give the same masks along random walks.
The rules mix shared prefixes, a literal that is a prefix of another, duplicates, several
references after one literal, a literal alone ending where others go on, the same reference
after different literals (their ends share a state) and references to inlined rules (which
rule the trie out).
"""

from __future__ import annotations

import itertools
import random
from typing import List, Tuple

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.engine._native import lib
from agentgrammar.grammar.ir import ByteClass, Choice, Expr, Literal, Rule, RuleRef, Seq
from tests.mask_oracle import allowed_checked

ALPHABET = "ab_"
# Rules after a literal: r0 and r1 recurse (rule edges), "small" is bytes-only (inlined).
TAILS = ["r0", "r1", "r1", None, None, "small"]


def make_vocab() -> Vocabulary:
    words = ["".join(w) for n in (1, 2, 3) for w in itertools.product(ALPHABET + "xyz!", repeat=n)]
    tokens = [w.encode() for w in words] + [b"</s>"]
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


VOCAB = make_vocab()


def alternatives(rng: random.Random, inlined: bool) -> List[Expr]:
    names = [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(2, 12))
    ]
    names += [n[: rng.randint(1, len(n))] for n in rng.sample(names, 2)]  # prefixes of others
    names.append(rng.choice(names))  # a duplicate
    out: List[Expr] = []
    for name in names:
        tail = rng.choice(TAILS if inlined else TAILS[:-1])
        lit = Literal(name.encode())
        out.append(lit if tail is None else Seq((lit, RuleRef(tail))))
    return out


def grammar(alts: List[Expr], general: bool) -> Grammar:
    items = tuple(alts) + ((ByteClass(()),) if general else ())
    rules = [
        Rule("root", Choice(items)),
        Rule("r0", Choice((Literal(b"x"), Seq((Literal(b"y"), RuleRef("r0")))))),
        Rule("r1", Choice((Literal(b"z!"), Seq((Literal(b"z"), RuleRef("r1")))))),
        Rule("small", Literal(b"xy")),
    ]
    return Grammar(rules, "root")


def masks(compiled, seed: int, steps: int = 10) -> List[bytes]:
    rng = random.Random(seed)
    matcher = Matcher(compiled)
    mask = allocate_token_bitmask(1, VOCAB.vocab_size, backend="numpy")
    out = []
    for _ in range(steps):
        matcher.fill_next_token_bitmask(mask)
        out.append(mask.tobytes())
        allowed = [i for i in matcher.allowed_token_ids() if i not in VOCAB.stop_token_ids]
        if not allowed or matcher.is_terminated():
            break
        assert matcher.accept_token(rng.choice(allowed))
    return out


def strings(rng: random.Random, alts: List[Expr]) -> List[str]:
    """Sentences of the rule and near misses: each literal, with and without a tail."""
    out = []
    for alt in alts:
        lit = (alt if isinstance(alt, Literal) else alt.items[0]).value.decode()
        out += [lit, lit + "x", lit + "yx", lit + "z!", lit + "zz!", lit + "xy", lit[:-1], lit + "a"]
    out += ["".join(rng.choice(ALPHABET + "xyz!") for _ in range(rng.randint(0, 8))) for _ in range(20)]
    return out


def num_states(compiled) -> int:
    return int(lib.ag_grammar_num_states(compiled._grammar_handle))


def compare(seed: int, inlined: bool) -> Tuple[int, int]:
    rng = random.Random(seed)
    alts = alternatives(rng, inlined)
    compiler = Compiler(VOCAB)
    trie, general = (compiler.compile(grammar(alts, g)) for g in (False, True))
    states = (num_states(trie), num_states(general))
    assert states[0] == states[1], f"seed {seed}: {states}"
    g_trie, g_general = grammar(alts, False), grammar(alts, True)
    for text in strings(rng, alts):
        assert g_trie.accepts(text) == g_general.accepts(text), f"seed {seed}: {text!r}"
    for walk in range(3):
        assert masks(trie, walk) == masks(general, walk), f"seed {seed}, walk {walk}"
    return states


@pytest.mark.parametrize("batch", range(4))
def test_trie_rules_equal_the_general_construction(batch: int) -> None:
    for seed in range(batch * 50, batch * 50 + 50):
        compare(seed, inlined=False)


def test_a_reference_to_an_inlined_rule_keeps_the_general_construction() -> None:
    for seed in range(40):
        compare(seed, inlined=True)


def test_ends_with_the_same_rule_share_a_state() -> None:
    """Three names ending in the same reference, one ending alone: after minimization the
    trie has the start, one state per distinct prefix, one end per (rules, acceptance)."""
    alts: List[Expr] = [Seq((Literal(n), RuleRef("r0"))) for n in (b"ab", b"bb", b"_b")]
    compiler = Compiler(VOCAB)
    states = num_states(compiler.compile(grammar(alts, False)))
    assert states == num_states(compiler.compile(grammar(alts, True)))
    alone = num_states(compiler.compile(grammar(alts + [Literal(b"a")], False)))
    assert alone == states + 1  # "a" is now accepting with an edge on "b": a state of its own


def test_a_large_choice_of_names_compiles_and_matches() -> None:
    names = sorted({"".join(random.Random(i).choice(ALPHABET) for _ in range(8)) for i in range(600)})
    alts: List[Expr] = [
        Seq((Literal(n.encode()), RuleRef("r0" if i % 2 else "r1"))) for i, n in enumerate(names)
    ]
    g = grammar(alts, False)
    assert all(g.accepts(n + ("x" if i % 2 else "z!")) for i, n in enumerate(names))
    assert not g.accepts(names[0] + "x")  # names[0] is followed by r1
    compiled = Compiler(VOCAB).compile(g)
    assert np.frombuffer(masks(compiled, 0, 1)[0], dtype=np.uint8).any()


# -- the walk of a trie state by sorted ranges (ag_classify_trie) against the direct walk


def names_vocab(rng: random.Random, names: List[str]) -> Vocabulary:
    """Tokens as a tokenizer would cut tool names: every prefix, a name with the quote or more
    after it, pieces from inside names, single bytes and strays that share only a first byte."""
    words = {chr(c) for c in range(32, 127)}
    for name in names:
        words.update(name[:k] for k in range(1, len(name) + 1))
        words.update({name + '"', name + '",', name + '", "', name + "!", name + "x"})
        start = rng.randrange(len(name))
        words.add(name[start : start + rng.randint(1, 5)])
        words.add(name[0] + "".join(rng.choice("qwz_") for _ in range(rng.randint(1, 4))))
    tokens = sorted(w.encode() for w in words) + [b"</s>"]
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


def names_grammar(rng: random.Random, names: List[str]) -> Grammar:
    """`{"n": "` then one of the names, most followed by their own arguments rule (rule edges
    the walk leaves the trie by), some alone (the trie's rule may end there), then `!`."""
    alts: List[Expr] = []
    rules: List[Rule] = []
    for k, name in enumerate(names):
        if rng.random() < 0.25:
            alts.append(Literal(name.encode()))
            continue
        rules.append(Rule(f"args{k}", Seq((Literal(b'", "a": '), RuleRef("digits"), Literal(b"}")))))
        alts.append(Seq((Literal(name.encode()), RuleRef(f"args{k}"))))
    pick = Rule("pick", Choice(tuple(alts)))
    root = Rule("root", Seq((Literal(b'{"n": "'), RuleRef("pick"), Literal(b"!"))))
    # recursive, so that no arguments rule is inlined into the choice (which keeps it a trie)
    digits = Rule("digits", Choice((Literal(b"1"), Seq((Literal(b"2"), RuleRef("digits"))))))
    return Grammar([root, pick, digits] + rules, "root")


def random_names(rng: random.Random) -> List[str]:
    stems = ["get", "get_", "search", "calc", "a", "ab"]
    out = {
        rng.choice(stems) + "".join(rng.choice("abcdeg_") for _ in range(rng.randint(0, 6)))
        for _ in range(rng.randint(2, 30))
    }
    return sorted(out)


@pytest.mark.parametrize("batch", range(4))
def test_a_trie_state_walked_by_ranges_gives_the_direct_masks(batch: int) -> None:
    """Tool names cut into tokens the ways a tokenizer does: past the opening quote, and along
    random walks into the names, the cached masks (a trie's states walked by ranges of the
    sorted vocabulary) equal the direct walk's, token by token."""
    for seed in range(batch * 25, batch * 25 + 25):
        rng = random.Random(seed)
        names = random_names(rng)
        vocab = names_vocab(rng, names)
        compiled = Compiler(vocab).compile(names_grammar(rng, names))
        for walk in range(4):
            matcher = Matcher(compiled)
            assert matcher.accept_string('{"n": "')
            for _ in range(8):
                allowed = allowed_checked(matcher, vocab.vocab_size)
                assert allowed, f"seed {seed}: nothing allowed at {walk}"
                choices = sorted(i for i in allowed if i not in vocab.stop_token_ids)
                if not choices or matcher.is_terminated():
                    break
                assert matcher.accept_token(rng.choice(choices))


def test_the_root_of_the_names_allows_exactly_their_prefixes() -> None:
    """At the first byte of a name the mask allows the tokens that begin a name and the ones
    that run past a whole name into what follows it, no other: each token checked by
    accepting it alone after the opening quote."""
    rng = random.Random(7)
    names = ["calc", "get_time", "get_weather", "search", "searchAll"]
    vocab = names_vocab(rng, names)
    compiled = Compiler(vocab).compile(names_grammar(rng, names))
    matcher = Matcher(compiled)
    assert matcher.accept_string('{"n": "')
    allowed = allowed_checked(matcher, vocab.vocab_size)
    expected = set()
    for i in range(vocab.vocab_size):
        if i in vocab.stop_token_ids:
            continue
        fresh = Matcher(compiled)
        assert fresh.accept_string('{"n": "')
        if fresh.accept_token(i):
            expected.add(i)
    assert allowed == expected
    texts = {vocab.token_bytes[i] for i in allowed}
    assert {b"get", b"get_w", b"search", b"searchA", b"c"} <= texts
    assert not texts & {b"x", b"getx", b"g_", b"searchAlls"}
