"""Property tests: the engine's masks equal the reference matcher's on random grammars.

Random small IR grammars (a few rules over a small alphabet, with recursion - left recursion
included -, nullable rules, counted repeats, character classes, negated classes, multi-byte
UTF-8) and random small vocabularies (tokens of 1-3 alphabet units, sometimes cut inside a
multi-byte character). Along random walks the masks, completion and jump-forward agree with
``tests/reference_matcher.py`` at every step; rollback(k) restores the exact earlier masks; and
accept_string of the concatenated tokens reaches the same state.
"""

from __future__ import annotations

import os
import random
import sys
from typing import List, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.grammar.ir import ByteClass, CharClass, Choice, Literal, Repeat, Rule, RuleRef, Seq

try:
    from tests.reference_matcher import ReferenceMatcher
except ImportError:  # pytest run without the repository root on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.reference_matcher import ReferenceMatcher

# Alphabet units: ASCII letters and multi-byte characters of every UTF-8 length.
CHARS = ["a", "b", "c", "é", "ж", "日", "😀"]
CODEPOINTS = sorted({ord(c) for c in CHARS} | {ord("d"), ord("ω"), ord("本")})
NAMES = ["root", "r1", "r2", "r3"]

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")),  # raise it for a longer hunt
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


# ---- strategies ---------------------------------------------------------------------------------


@st.composite
def literals(draw) -> Literal:
    return Literal("".join(draw(st.lists(st.sampled_from(CHARS), min_size=0, max_size=3))).encode())


@st.composite
def char_classes(draw) -> CharClass:
    pts = draw(st.lists(st.sampled_from(CODEPOINTS), min_size=1, max_size=4, unique=True))
    ranges = []
    for p in sorted(pts):
        hi = p + draw(st.sampled_from([0, 0, 1, 2]))
        ranges.append((p, hi))
    negated = draw(st.booleans()) and draw(st.booleans())  # 1 in 4
    return CharClass(tuple(ranges), negated)


@st.composite
def byte_classes(draw) -> ByteClass:
    lo = draw(st.sampled_from([0x61, 0x62, 0x80, 0xA0, 0xC3, 0xE6]))
    hi = lo + draw(st.integers(0, 3))
    return ByteClass(((lo, hi),))


def terminals():
    return st.one_of(literals(), literals(), char_classes(), byte_classes())


def exprs(num_rules: int, allow_refs: bool = True):
    leaves = terminals()
    if allow_refs:
        leaves = st.one_of(leaves, st.sampled_from(NAMES[:num_rules]).map(RuleRef))

    def extend(children):
        return st.one_of(
            st.lists(children, min_size=0, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: Choice(tuple(xs))),
            st.tuples(
                children,
                st.integers(0, 2),
                st.sampled_from([None, 0, 1, 2]),
            ).map(lambda t: Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def grammars(draw) -> Grammar:
    """Rules root, r1.. rk; each body is ``Choice(ref-free alternative, random alternatives)``
    so every rule is productive; references (recursion) live in the other alternatives."""
    n = draw(st.integers(1, 4))
    rules = []
    for i in range(n):
        base = draw(exprs(n, allow_refs=False))
        others = draw(st.lists(exprs(n), min_size=0, max_size=2))
        if draw(st.booleans()):  # sometimes make the recursion left-recursive explicitly
            others.append(Seq((RuleRef(NAMES[i]), draw(terminals()))))
        body = Choice(tuple([base] + others)) if others else base
        rules.append(Rule(NAMES[i], body))
    # Make the helper rules reachable so that they matter.
    root = rules[0]
    if n > 1:
        rules[0] = Rule("root", Choice((root.body, Seq(tuple(RuleRef(NAMES[i]) for i in range(1, n))))))
    return Grammar.from_rules(rules, "root")


UNITS = [c.encode() for c in CHARS] + [b"d", b" "]


@st.composite
def vocabularies(draw) -> Tuple[List[bytes], List[int], List[int], int]:
    toks = set()
    k = draw(st.integers(4, 14))
    for _ in range(k):
        units = draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=3))
        data = b"".join(units)
        if draw(st.integers(0, 3)) == 0 and len(data) > 1:  # cut inside a character, sometimes
            i = draw(st.integers(0, len(data) - 1))
            j = draw(st.integers(i + 1, len(data)))
            data = data[i:j]
        toks.add(data)
    # every single byte that starts an alphabet character, so walks are rarely stuck
    for c in ("a", "b", "c"):
        toks.add(c.encode())
    tokens = sorted(toks)
    draw(st.randoms(use_true_random=False)).shuffle(tokens)
    tokens = list(tokens)
    stops = [len(tokens)]
    tokens.append(b"</s>")
    special: List[int] = []
    if draw(st.booleans()):  # a special token whose text the grammar might match
        special = [len(tokens)]
        tokens.append(b"a")
    vocab_size = len(tokens) + draw(st.sampled_from([0, 0, 1, 7, 40]))
    return tokens, stops, special, vocab_size


# ---- helpers ------------------------------------------------------------------------------------


def engine_mask(matcher: Matcher, vocab_size: int) -> np.ndarray:
    bm = allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher.fill_next_token_bitmask(bm)
    return bm.copy()


def ref_mask(ref: ReferenceMatcher, vocab_size: int) -> np.ndarray:
    words = (vocab_size + 31) // 32
    bits = np.zeros(words * 32, dtype=np.uint8)
    bits[ref.allowed_token_ids()] = 1
    return np.packbits(bits, bitorder="little").view(np.int32).reshape(1, words)


def explain(grammar: Grammar, tokens, path, got: np.ndarray, want: np.ndarray) -> str:
    g = np.unpackbits(got.view(np.uint8), bitorder="little")
    w = np.unpackbits(want.view(np.uint8), bitorder="little")
    extra = [(int(i), tokens[i] if i < len(tokens) else "<pad>") for i in np.flatnonzero(g & ~w)]
    missing = [(int(i), tokens[i] if i < len(tokens) else "<pad>") for i in np.flatnonzero(w & ~g)]
    return (
        f"\ngrammar:\n{grammar}\ntokens: {list(enumerate(tokens))}\npath: {[tokens[t] for t in path]}\n"
        f"engine allows extra: {extra}\nengine misses: {missing}"
    )


def setup(grammar: Grammar, voc):
    tokens, stops, special, vocab_size = voc
    vocab = Vocabulary(tokens, stop_token_ids=stops, special_token_ids=special, vocab_size=vocab_size)
    compiled = Compiler(vocab).compile(grammar)
    ref = ReferenceMatcher(
        grammar, vocab.token_bytes, vocab.stop_token_ids, vocab.special_token_ids, vocab_size
    )
    return compiled, ref, vocab


# ---- properties ---------------------------------------------------------------------------------


@SETTINGS
@given(
    grammar=grammars(), voc=vocabularies(), rnd=st.randoms(use_true_random=False), steps=st.integers(1, 10)
)
def test_masks_equal_reference_along_random_walks(grammar, voc, rnd, steps):
    compiled, ref, vocab = setup(grammar, voc)
    tokens, vs = list(vocab.token_bytes), vocab.vocab_size
    matcher = Matcher(compiled)
    path: List[int] = []
    masks = []
    for _ in range(steps + 1):
        got, want = engine_mask(matcher, vs), ref_mask(ref, vs)
        if not np.array_equal(got, want):
            pytest.fail("mask mismatch" + explain(grammar, tokens, path, got, want))
        assert matcher.is_completed() == ref.is_completed(), explain(grammar, tokens, path, got, want)
        assert matcher.find_jump_forward_bytes() == ref.jump_forward_bytes(), explain(
            grammar, tokens, path, got, want
        )
        masks.append(got)
        allowed = ref.allowed_token_ids()
        if not allowed or ref.is_terminated():
            break
        t = rnd.choice(allowed)
        assert matcher.accept_token(t), f"engine rejected allowed token {tokens[t]!r}" + explain(
            grammar, tokens, path, got, want
        )
        assert ref.accept_token(t)
        path.append(t)
        if ref.is_terminated():
            assert matcher.is_terminated()
            break
        # a random rejected token leaves the state unchanged
        rejected = [i for i in range(vs) if i not in set(ref.allowed_token_ids())]
        if rejected:
            r = rnd.choice(rejected)
            assert matcher.accept_token(r) is False
            assert ref.accept_token(r) is False

    if len(masks) == len(path):  # the walk ended on an accepted token: check the final state too
        got, want = engine_mask(matcher, vs), ref_mask(ref, vs)
        assert np.array_equal(got, want), "mask mismatch" + explain(grammar, tokens, path, got, want)
        assert matcher.is_completed() == ref.is_completed()
        masks.append(got)

    # rollback(k) restores the exact earlier masks (and completion)
    if path:
        k = rnd.randint(1, len(path))
        matcher.rollback(k)
        ref.rollback(k)
        assert matcher.num_accepted_steps == len(path) - k
        assert not matcher.is_terminated()
        got = engine_mask(matcher, vs)
        assert np.array_equal(got, masks[len(path) - k]), explain(
            grammar, tokens, path[: len(path) - k], got, masks[len(path) - k]
        )
        assert matcher.is_completed() == ref.is_completed()
        # and the matcher can go forward again on the same path
        for t in path[len(path) - k :]:
            assert matcher.accept_token(t)
        if not matcher.is_terminated():
            assert np.array_equal(engine_mask(matcher, vs), masks[len(path)])


@SETTINGS
@given(
    grammar=grammars(), voc=vocabularies(), rnd=st.randoms(use_true_random=False), steps=st.integers(1, 10)
)
def test_accept_string_agrees_with_token_path(grammar, voc, rnd, steps):
    compiled, ref, vocab = setup(grammar, voc)
    tokens, vs = list(vocab.token_bytes), vocab.vocab_size
    stops = set(vocab.stop_token_ids)
    path: List[int] = []
    for _ in range(steps):
        allowed = [t for t in ref.allowed_token_ids() if t not in stops]
        if not allowed:
            break
        t = rnd.choice(allowed)
        assert ref.accept_token(t)
        path.append(t)
    text = b"".join(tokens[t] for t in path)
    by_string = Matcher(compiled)
    assert by_string.accept_string(text) is True
    assert by_string.num_accepted_steps == 1
    by_tokens = Matcher(compiled)
    assert by_tokens.accept_tokens(path)
    a, b = engine_mask(by_string, vs), engine_mask(by_tokens, vs)
    assert np.array_equal(a, b)
    assert np.array_equal(a, ref_mask(ref, vs)), explain(grammar, tokens, path, a, ref_mask(ref, vs))
    assert by_string.is_completed() == by_tokens.is_completed() == ref.is_completed()
    # a random byte string: the engine accepts it iff the reference does, state unchanged if not
    junk = bytes(rnd.choice(b"".join(UNITS) + b"\xff\x80") for _ in range(rnd.randint(1, 4)))
    before = engine_mask(by_string, vs)
    ok = by_string.accept_string(junk)
    assert ok == ref.accept_string(junk), f"accept_string({junk!r}) after {text!r}\ngrammar:\n{grammar}"
    if not ok:
        assert np.array_equal(engine_mask(by_string, vs), before)
        assert by_string.num_accepted_steps == 1
    else:
        assert np.array_equal(engine_mask(by_string, vs), ref_mask(ref, vs))


@SETTINGS
@given(grammar=grammars(), data=st.data())
def test_sentences_of_reference_are_accepted(grammar, data):
    """Strings the reference accepts as complete sentences complete the engine too (and
    strings that are not viable prefixes are rejected)."""
    from tests.reference_matcher import BNF, EarleyRecognizer

    rec = EarleyRecognizer(BNF(grammar.rules, grammar.root))
    vocab = Vocabulary([b"a"], stop_token_ids=[])
    compiled = Compiler(vocab).compile(grammar)
    rnd = data.draw(st.randoms(use_true_random=False))
    # generate a sentence by walking bytes that keep the input viable, preferring to stop
    chart = rec.initial()
    out = bytearray()
    for _ in range(rnd.randint(0, 12)):
        if rec.is_complete(chart) and rnd.random() < 0.3:
            break
        viable = [b for b in range(256) if rec.scan(chart, b) is not None]
        if not viable:
            break
        b = rnd.choice(viable)
        chart.append(rec.scan(chart, b))
        out.append(b)
    m = Matcher(compiled)
    assert m.accept_string(bytes(out)), f"{bytes(out)!r}\n{grammar}"
    assert m.is_completed() == rec.is_complete(chart), f"{bytes(out)!r}\n{grammar}"
    # one more byte that the reference rejects
    dead = [b for b in range(256) if rec.scan(chart, b) is None]
    if dead:
        b = rnd.choice(dead)
        assert m.accept_string(bytes([b])) is False, f"{bytes(out)!r} + {bytes([b])!r}\n{grammar}"


@SETTINGS
@given(
    grammar=grammars(), voc=vocabularies(), rnd=st.randoms(use_true_random=False), steps=st.integers(1, 12)
)
def test_cached_masks_equal_direct_walk(grammar, voc, rnd, steps):
    """The per-state token-class cache gives bit-identical masks to the uncached walk,
    also for a second matcher that finds the cache already filled."""
    compiled, _, vocab = setup(grammar, voc)
    vs = vocab.vocab_size
    for _ in range(2):  # the second walk reuses cache entries the first one computed
        matcher = Matcher(compiled)
        for _ in range(steps):
            cached = engine_mask(matcher, vs)
            direct = allocate_token_bitmask(1, vs, backend="numpy")
            matcher._fill_next_token_bitmask_direct(direct)
            assert np.array_equal(cached, direct), explain(
                grammar, list(vocab.token_bytes), [], cached, direct
            )
            allowed = [i for i in matcher.allowed_token_ids() if i not in vocab.stop_token_ids]
            if not allowed or matcher.is_terminated():
                break
            assert matcher.accept_token(rnd.choice(allowed))


def _wide_nested_grammar(n: int) -> Grammar:
    """Earley sets of more than n items: n rules predicted at every opening, each nesting the
    whole choice again, so completions go into large earlier sets (the indexed path)."""
    alts = " | ".join(f"a{i}" for i in range(n))
    rules = ["root ::= item+", f"item ::= {alts}"]
    rules += [f'a{i} ::= "(" item* ")" | "{chr(97 + i % 26)}"' for i in range(n)]
    return Grammar.from_ebnf("\n".join(rules))


@pytest.mark.parametrize("seed", range(3))
def test_large_sets_with_rollback_equal_reference(seed: int) -> None:
    grammar = _wide_nested_grammar(90)
    voc = (["(", ")", "a", "b", "c", "((", "))", "(a", "b)", "</s>"], [9], [], 10)
    compiled, ref, vocab = setup(grammar, voc)
    rnd = random.Random(seed)
    matcher = Matcher(compiled)
    path: List[int] = []
    for _ in range(40):
        got, want = engine_mask(matcher, vocab.vocab_size), ref_mask(ref, vocab.vocab_size)
        assert np.array_equal(got, want), explain(grammar, list(vocab.token_bytes), path, got, want)
        allowed = [t for t in ref.allowed_token_ids() if t not in vocab.stop_token_ids]
        if path and rnd.random() < 0.25:  # roll back a few steps, on both sides
            k = rnd.randint(1, len(path))
            matcher.rollback(k)
            del path[-k:]
            ref = ReferenceMatcher(grammar, vocab.token_bytes, vocab.stop_token_ids, [], vocab.vocab_size)
            assert all(ref.accept_token(t) for t in path)
            continue
        t = rnd.choice(allowed)
        assert matcher.accept_token(t) and ref.accept_token(t)
        path.append(t)
