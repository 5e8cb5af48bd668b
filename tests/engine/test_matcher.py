"""Matcher behaviour on tiny vocabularies, checked against the reference matcher where it helps.

Covers: accept/reject leaves state unchanged, stop tokens only when complete, termination,
token-id errors, padding and special tokens, rollback, reset, jump-forward, accept_string,
bitmask validation, nullable / left- / right-recursive grammars, counted repetition, multi-byte
UTF-8 (tokens that split a character), and apply_token_bitmask_inplace on NumPy and torch.
"""

from __future__ import annotations

import os
import random
import sys
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import pytest

from agentgrammar import (
    Compiler,
    Grammar,
    Matcher,
    Vocabulary,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
)
from agentgrammar.errors import AgentGrammarError, BitmaskError, MatcherError, TokenIdError
from tests.mask_oracle import cached_and_direct

try:
    from tests.reference_matcher import ReferenceMatcher
except ImportError:  # pytest run without the repository root on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.reference_matcher import ReferenceMatcher

Tok = Union[str, bytes]


def build(
    ebnf: str,
    tokens: Sequence[Tok],
    *,
    stops: Sequence[int] = (),
    special: Sequence[int] = (),
    vocab_size: Optional[int] = None,
    **matcher_kw,
) -> Tuple[Matcher, ReferenceMatcher, Vocabulary]:
    vocab = Vocabulary(
        list(tokens), stop_token_ids=list(stops), special_token_ids=list(special), vocab_size=vocab_size
    )
    grammar = Grammar.from_ebnf(ebnf)
    matcher = Matcher(Compiler(vocab).compile(grammar), **matcher_kw)
    ref = ReferenceMatcher(
        grammar, vocab.token_bytes, vocab.stop_token_ids, vocab.special_token_ids, vocab.vocab_size
    )
    return matcher, ref, vocab


def mask_of(matcher: Matcher, vocab_size: int) -> np.ndarray:
    mask = allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher.fill_next_token_bitmask(mask)
    return mask.copy()


def ids(matcher: Matcher) -> List[int]:
    return list(matcher.allowed_token_ids())


def describe(vocab: Vocabulary, id_list) -> List[Tuple[int, bytes]]:
    return [(i, vocab.token_bytes[i] if i < vocab.num_tokens else b"<pad>") for i in id_list]


def assert_same(matcher: Matcher, ref: ReferenceMatcher, vocab: Vocabulary, path=()) -> None:
    got, want = ids(matcher), ref.allowed_token_ids()
    if got != want:
        extra = sorted(set(got) - set(want))
        missing = sorted(set(want) - set(got))
        pytest.fail(
            f"mask mismatch after path {[vocab.token_bytes[t] for t in path]}: "
            f"engine allows extra {describe(vocab, extra)}, misses {describe(vocab, missing)}"
        )
    assert matcher.is_completed() == ref.is_completed(), f"is_completed differs after {path}"


def exhaustive(ebnf: str, tokens: Sequence[Tok], depth: int, *, stops=(), vocab_size=None) -> int:
    """Compare engine and reference masks on every valid path of up to ``depth`` tokens.

    Uses rollback to walk the tree, so it exercises rollback too. Returns the nodes visited.
    """
    matcher, ref, vocab = build(ebnf, tokens, stops=stops, vocab_size=vocab_size)
    visited = 0
    path: List[int] = []

    def go(d: int) -> None:
        nonlocal visited
        visited += 1
        assert_same(matcher, ref, vocab, path)
        if d == 0:
            return
        for t in ref.allowed_token_ids():
            assert matcher.accept_token(t), f"engine rejected allowed token {t} after {path}"
            assert ref.accept_token(t)
            path.append(t)
            if not ref.is_terminated():
                go(d - 1)
            path.pop()
            matcher.rollback(1)
            ref.rollback(1)

    go(depth)
    return visited


# ---- accept / reject ----------------------------------------------------------------------------


def test_accept_and_reject_leave_state_unchanged():
    matcher, ref, vocab = build(
        'root ::= "ab" | "ac" "d"', ["a", "b", "c", "d", "x", "ab", "</s>"], stops=[6]
    )
    start = mask_of(matcher, vocab.vocab_size)
    assert ids(matcher) == [0, 5]
    assert matcher.accept_token(4) is False  # "x"
    assert matcher.accept_token(6) is False  # stop before complete
    assert matcher.accept_token(3) is False  # "d"
    assert matcher.num_accepted_steps == 0
    np.testing.assert_array_equal(mask_of(matcher, vocab.vocab_size), start)
    assert matcher.accept_token(0) is True
    after_a = mask_of(matcher, vocab.vocab_size)
    assert ids(matcher) == [1, 2]
    assert matcher.accept_token(0) is False
    assert matcher.accept_token(5) is False
    assert matcher.num_accepted_steps == 1
    np.testing.assert_array_equal(mask_of(matcher, vocab.vocab_size), after_a)
    assert matcher.accept_token(1) is True
    assert matcher.is_completed()
    assert ids(matcher) == [6]


def test_fill_returns_whether_mask_needs_applying():
    matcher, _, vocab = build("root ::= [a-c]*", ["a", "b", "c"])
    bm = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
    assert matcher.fill_next_token_bitmask(bm) is False  # everything allowed
    matcher2, _, vocab2 = build("root ::= [a-c]*", ["a", "b", "c", "x"])
    bm2 = allocate_token_bitmask(1, vocab2.vocab_size, backend="numpy")
    assert matcher2.fill_next_token_bitmask(bm2) is True


@pytest.mark.parametrize("gap", [None, 3, 600, 1000, 1100, 1299])
def test_needs_applying_found_anywhere_in_a_large_mask(gap: Optional[int]) -> None:
    """The check runs a block of 16 words at a time, then word by word, then the last partial
    word: one forbidden token in any of them (or none) decides the answer."""
    words = ["".join(chr(97 + (i // 26**k) % 26) for k in range(3)) for i in range(1300)]
    if gap is not None:
        words[gap] = "9"
    matcher, _, vocab = build("root ::= [a-z]*", words)
    bm = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
    assert vocab.vocab_size // 32 == 40  # 2 blocks, 8 single words, a partial word
    assert matcher.fill_next_token_bitmask(bm) is (gap is not None)
    assert len(matcher.allowed_token_ids()) == 1300 - (gap is not None)


def test_stop_token_only_when_complete():
    matcher, ref, vocab = build('root ::= "a"+ "b"', ["a", "b", "ab", "</s>"], stops=[3])
    assert 3 not in ids(matcher)
    assert matcher.accept_token(3) is False
    assert matcher.accept_token(0)
    assert 3 not in ids(matcher)
    assert matcher.accept_token(2)  # "ab"
    assert matcher.is_completed()
    assert ids(matcher) == [3]
    assert not matcher.is_terminated()
    assert matcher.accept_token(3) is True
    assert matcher.is_terminated()
    assert matcher.num_accepted_steps == 3


def test_accept_after_termination_raises():
    matcher, _, _ = build('root ::= "a"', ["a", "</s>"], stops=[1])
    assert matcher.accept_token(0) and matcher.accept_token(1)
    assert matcher.is_terminated()
    with pytest.raises(MatcherError):
        matcher.accept_token(0)
    with pytest.raises(MatcherError):
        matcher.accept_token(1)
    with pytest.raises(MatcherError):
        matcher.accept_string("a")
    # nothing but (at most) stop tokens is allowed after termination
    assert set(ids(matcher)) <= {1}
    matcher.rollback(1)
    assert not matcher.is_terminated() and matcher.is_completed()
    assert ids(matcher) == [1]


def test_terminate_without_stop_token():
    matcher, _, _ = build('root ::= "ab"', ["a", "b", "</s>"], stops=[2], terminate_without_stop_token=True)
    assert matcher.accept_token(0)
    assert not matcher.is_terminated()
    assert matcher.accept_token(1)
    assert matcher.is_completed() and matcher.is_terminated()


def test_matcher_stop_token_override():
    matcher, _, _ = build('root ::= "a"', ["a", "</s>", "<eot>"], stops=[1], stop_token_ids=[2])
    assert matcher.accept_token(0)
    assert ids(matcher) == [2]
    assert matcher.accept_token(1) is False
    assert matcher.accept_token(2) is True and matcher.is_terminated()


def test_out_of_range_ids_raise():
    matcher, _, vocab = build('root ::= "a"*', ["a", "b"], vocab_size=40)
    for bad in (-1, 40, 41, 10**6):
        with pytest.raises(TokenIdError):
            matcher.accept_token(bad)
    assert issubclass(TokenIdError, IndexError)
    assert matcher.num_accepted_steps == 0


def test_padding_ids_never_allowed():
    matcher, ref, vocab = build("root ::= [a-z]*", ["a", "b", "</s>"], stops=[2], vocab_size=70)
    assert vocab.vocab_size == 70
    bm = allocate_token_bitmask(1, 70, backend="numpy")
    matcher.fill_next_token_bitmask(bm)
    bits = np.unpackbits(bm.view(np.uint8), bitorder="little")
    assert bits.shape == (96,)
    assert np.flatnonzero(bits).tolist() == [0, 1, 2]
    for pad in (3, 31, 32, 69):
        assert matcher.accept_token(pad) is False
    assert_same(matcher, ref, vocab)


def test_words_past_the_mask_are_zeroed():
    matcher, _, _ = build('root ::= "a"*', ["a"], vocab_size=1)
    bm = np.full((1, 4), -1, dtype=np.int32)  # wider than needed
    matcher.fill_next_token_bitmask(bm)
    assert bm[0].tolist() == [1, 0, 0, 0]


def test_a_dirty_bitmask_is_overwritten_at_every_step():
    """A serving loop refills one bitmask: whatever the buffer held, each fill writes every
    word (the cached path copies its first class over it), terminated or not."""
    tokens = ["a", "b", "ab", "c", "</s>"] + [f"x{i}" for i in range(40)]
    matcher, ref, vocab = build('root ::= "a" ("b" | "c")', tokens, stops=[4])
    for step in ("a", "b", None):
        dirty = np.full((1, 3), -1, dtype=np.int32)  # one word wider than needed, too
        clean = np.zeros((1, 3), dtype=np.int32)
        matcher.fill_next_token_bitmask(dirty)
        matcher.fill_next_token_bitmask(clean)
        np.testing.assert_array_equal(dirty, clean)
        assert_same(matcher, ref, vocab)
        if step is not None:
            assert matcher.accept_string(step)
            ref.accept_string(step)
    assert matcher.accept_token(4) and matcher.is_terminated()
    dirty = np.full((1, 3), -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(dirty)
    assert dirty.tolist() == [[1 << 4, 0, 0]]  # after the end: the stop token alone


def test_a_dirty_bitmask_is_overwritten_where_a_bitset_is_copied_over_it():
    """A state that accepts more than 256 tokens keeps them as a bitset, which the cached path
    copies over the mask without clearing it first; the words past the vocabulary's are
    cleared all the same, and a second state's tokens are added to the copy."""
    tokens = [f"x{i}" for i in range(600)] + ["y", "</s>"]
    matcher, ref, vocab = build('root ::= ("x" [0-9]+)* "y"?', tokens, stops=[601])
    words = (len(tokens) + 31) // 32
    for step in ("x12", "x3", None):
        dirty = np.full((1, words + 2), -1, dtype=np.int32)
        clean = np.zeros((1, words + 2), dtype=np.int32)
        matcher.fill_next_token_bitmask(dirty)
        matcher.fill_next_token_bitmask(clean)
        np.testing.assert_array_equal(dirty, clean)
        assert not dirty[0, words:].any() and set(ids(matcher)) >= {0, 599, 600, 601}
        assert_same(matcher, ref, vocab)
        if step is not None:
            assert matcher.accept_string(step)
            ref.accept_string(step)


def test_special_tokens_never_allowed():
    # "<x>" is special even though the grammar could match its bytes
    matcher, ref, vocab = build(
        'root ::= ("<x>" | "a")*', ["<x>", "a", "<", "x", ">", "</s>"], stops=[5], special=[0]
    )
    assert ids(matcher) == [1, 2, 5]
    assert matcher.accept_token(0) is False
    assert matcher.accept_string("<x>")  # the text itself is fine
    assert 0 not in ids(matcher)
    assert_same(matcher, ref, vocab)


def test_empty_token_never_allowed():
    matcher, _, vocab = build('root ::= "a"*', ["a", b"", "</s>"], stops=[2])
    assert 1 in vocab.special_token_ids
    assert ids(matcher) == [0, 2]
    assert matcher.accept_token(1) is False


# ---- rollback / reset ---------------------------------------------------------------------------


def test_rollback_restores_exact_masks():
    text = 'root ::= "{" pair ("," pair)* "}"\npair ::= [a-c]+ ":" [0-9]{1,2}'
    tokens = ["{", "}", ",", ":", "a", "b", "ab", "c:", "1", "12", "123", ":1", "}", "</s>"]
    matcher, ref, vocab = build(text, tokens, stops=[13])
    path = [0, 6, 11, 8, 2, 7, 9, 1, 13]
    masks = [mask_of(matcher, vocab.vocab_size)]
    for t in path:
        assert matcher.accept_token(t), t
        assert ref.accept_token(t)
        masks.append(mask_of(matcher, vocab.vocab_size))
        assert_same(matcher, ref, vocab)
    assert matcher.is_terminated()
    for k in (1, 2, 3, 5, len(path)):
        m2, _, _ = build(text, tokens, stops=[13])
        assert m2.accept_tokens(path)
        m2.rollback(k)
        assert m2.num_accepted_steps == len(path) - k
        np.testing.assert_array_equal(mask_of(m2, vocab.vocab_size), masks[len(path) - k])
        assert not m2.is_terminated()
    # step by step on one matcher
    for k in range(len(path), 0, -1):
        matcher.rollback(1)
        np.testing.assert_array_equal(mask_of(matcher, vocab.vocab_size), masks[k - 1])
    assert matcher.num_accepted_steps == 0
    with pytest.raises(AgentGrammarError):
        matcher.rollback(1)
    matcher.rollback(0)


def test_rollback_of_accept_string_is_one_step():
    matcher, _, vocab = build('root ::= "abc" "d"*', ["a", "b", "c", "d"])
    start = mask_of(matcher, vocab.vocab_size)
    assert matcher.accept_string("ab")
    assert matcher.accept_token(2)
    assert matcher.accept_string(b"dd")
    assert matcher.num_accepted_steps == 3
    matcher.rollback(2)
    assert ids(matcher) == [2]
    matcher.rollback(1)
    np.testing.assert_array_equal(mask_of(matcher, vocab.vocab_size), start)


def test_reset():
    matcher, _, vocab = build('root ::= "a" "b"', ["a", "b", "</s>"], stops=[2])
    start = mask_of(matcher, vocab.vocab_size)
    assert matcher.accept_tokens([0, 1, 2])
    assert matcher.is_terminated()
    matcher.reset()
    assert not matcher.is_terminated() and not matcher.is_completed()
    assert matcher.num_accepted_steps == 0
    np.testing.assert_array_equal(mask_of(matcher, vocab.vocab_size), start)
    assert matcher.accept_tokens([0, 1, 2])


# ---- jump-forward -------------------------------------------------------------------------------


def test_jump_forward_string():
    matcher, _, _ = build('root ::= "{\\"name\\": \\"" [a-z]+ "\\"}"', ["{", "a", '"', "}"])
    assert matcher.find_jump_forward_string() == '{"name": "'
    assert matcher.find_jump_forward_bytes() == b'{"name": "'
    assert matcher.accept_string('{"name": "ab')
    assert matcher.find_jump_forward_string() == ""  # more letters or the closing quote
    assert matcher.accept_token(2)
    assert matcher.find_jump_forward_string() == "}"
    assert matcher.accept_token(3)
    assert matcher.is_completed()
    assert matcher.find_jump_forward_string() == ""


def test_jump_forward_stops_where_grammar_can_end_and_at_branches():
    matcher, _, _ = build('root ::= "ab" ("cd" "e")?', ["a"])
    assert matcher.find_jump_forward_bytes() == b"ab"
    assert matcher.accept_string("ab")
    assert matcher.find_jump_forward_bytes() == b""  # can end here
    matcher2, _, _ = build('root ::= "xa" "bc" | "xa" "bd"', ["a"])
    assert matcher2.find_jump_forward_bytes() == b"xab"
    # jump-forward does not change the state
    assert matcher2.num_accepted_steps == 0
    assert matcher2.accept_string("xabd") and matcher2.is_completed()


def test_jump_forward_multibyte():
    matcher, _, _ = build('root ::= "日本" [a-z]', ["a"])
    assert matcher.find_jump_forward_string() == "日本"
    assert matcher.accept_string(b"\xe6")  # first byte of 日
    assert matcher.find_jump_forward_bytes() == "日本".encode()[1:]


# ---- accept_string ------------------------------------------------------------------------------


def test_accept_string():
    matcher, ref, vocab = build('root ::= "héllo" [0-9]+', ["h", "é", "llo", "1", b"\xc3", b"\xa9"])
    assert matcher.accept_string("hé")
    assert matcher.accept_string("x") is False
    assert matcher.accept_string(b"") is True  # the empty string is a viable extension
    assert matcher.accept_string(b"llo1")
    assert matcher.is_completed()
    assert matcher.accept_string("12")
    assert matcher.accept_string("1a") is False
    assert matcher.is_completed()
    # a character split across two calls
    m2, _, _ = build('root ::= "é"', ["é"])
    assert m2.accept_string(b"\xc3")
    assert not m2.is_completed()
    assert m2.accept_string(b"\xa8") is False
    assert m2.accept_string(b"\xa9") and m2.is_completed()


# ---- bitmask validation -------------------------------------------------------------------------


def test_bitmask_shape_dtype_errors():
    matcher, _, vocab = build('root ::= "a"*', ["a"] * 1 + ["b"], vocab_size=70)  # 3 words
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 3), dtype=np.int64))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 3), dtype=np.uint8))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 2), dtype=np.int32))  # too narrow
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((2, 3), dtype=np.int32), index=2)
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((2, 3), dtype=np.int32), index=-1)
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((2, 2, 3), dtype=np.int32))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((3, 6), dtype=np.int32)[:, ::2])  # not contiguous
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros(3, dtype=np.int32), index=1)
    ro = np.zeros((1, 3), dtype=np.int32)
    ro.flags.writeable = False
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(ro)
    # a 1-D mask and a batch row work
    one = np.zeros(3, dtype=np.int32)
    matcher.fill_next_token_bitmask(one)
    assert one.tolist() == [1, 0, 0]
    batch = np.full((3, 3), 7, dtype=np.int32)
    matcher.fill_next_token_bitmask(batch, index=1)
    assert batch.tolist() == [[7, 7, 7], [1, 0, 0], [7, 7, 7]]


def test_bitmask_torch_errors_and_rows():
    torch = pytest.importorskip("torch")
    matcher, _, vocab = build('root ::= "b"*', ["a", "b"], vocab_size=33)
    bm = allocate_token_bitmask(2, 33)
    assert isinstance(bm, torch.Tensor)
    assert bm.dtype == torch.int32 and tuple(bm.shape) == (2, 2)
    assert bm.eq(-1).all()
    matcher.fill_next_token_bitmask(bm, index=1)
    assert bm[0].tolist() == [-1, -1]
    assert bm[1].tolist() == [2, 0]
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(torch.zeros((1, 2), dtype=torch.int64))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(torch.zeros((1, 1), dtype=torch.int32))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(torch.zeros((4, 4), dtype=torch.int32)[:, ::2])


def test_a_bitmask_filled_again_is_filled_like_a_new_one():
    # The matcher keeps the last row's pointer (bitmask.remember_row): a new row, a new array
    # and a wrong array after a right one are each checked and written as on a first fill.
    matcher, _, vocab = build('root ::= "a" "b"', ["a", "b"], vocab_size=70)  # 3 words
    batch = np.full((2, 3), 7, dtype=np.int32)
    matcher.fill_next_token_bitmask(batch, index=1)
    assert matcher.accept_token(0)
    matcher.fill_next_token_bitmask(batch, index=1)
    assert batch.tolist() == [[7, 7, 7], [2, 0, 0]]
    matcher.fill_next_token_bitmask(batch, index=0)
    assert batch.tolist() == [[2, 0, 0], [2, 0, 0]]
    other = np.zeros((1, 3), dtype=np.int32)
    other.resize((1, 3))  # nothing refers to it yet
    matcher.fill_next_token_bitmask(other)
    assert other.tolist() == [[2, 0, 0]]
    with pytest.raises(ValueError, match="resize"):  # the matcher refers to it: its memory stays
        other.resize((1, 1))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 3), dtype=np.int64))
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(batch, index=2)
    fresh = Matcher(matcher.compiled_grammar)  # no row kept yet: nothing stands for one
    with pytest.raises(BitmaskError, match="NoneType"):
        fresh.fill_next_token_bitmask(None, -1)  # type: ignore[arg-type]


def test_fills_into_bitmasks_and_rows_taken_in_turn_match_fresh_fills():
    # Random walks where each fill picks one of a few bitmasks (NumPy and torch, 1-D and
    # batches) and a row: the row written equals a fill into a new array, the others keep
    # what they held, whatever row the matcher kept from the fill before.
    torch = pytest.importorskip("torch")
    tokens = ["{", "}", "a", "b", ":", ",", "ab", "b:", "</s>"]
    ebnf = 'root ::= "{" (pair ("," pair)*)? "}"\npair ::= [ab]+ ":" [ab]'
    rng = random.Random(7)
    for _ in range(20):
        matcher, _, vocab = build(ebnf, tokens, stops=[8], vocab_size=70)
        pool = [
            np.zeros(3, dtype=np.int32),
            np.zeros((4, 3), dtype=np.int32),
            torch.zeros((2, 3), dtype=torch.int32),
            torch.zeros(3, dtype=torch.int32),
        ]
        for _ in range(12):
            bitmask = rng.choice(pool)
            rows = 1 if bitmask.ndim == 1 else bitmask.shape[0]
            index = rng.randrange(rows)
            view = (bitmask if isinstance(bitmask, np.ndarray) else bitmask.numpy()).reshape(rows, 3)
            before = view.copy()
            matcher.fill_next_token_bitmask(bitmask, index)
            after = view
            want = np.zeros(3, dtype=np.int32)  # the uncached path, which keeps no row
            matcher._fill_next_token_bitmask_direct(want)
            assert after[index].tolist() == want.tolist()
            assert np.delete(after, index, axis=0).tolist() == np.delete(before, index, axis=0).tolist()
            allowed = np.flatnonzero(
                np.unpackbits(want.view(np.uint8), bitorder="little")[: vocab.vocab_size]
            )
            if not allowed.size or matcher.is_terminated():
                break
            assert matcher.accept_token(int(rng.choice(allowed)))


def test_a_torch_bitmask_whose_memory_changed_is_checked_again():
    torch = pytest.importorskip("torch")
    matcher, _, vocab = build('root ::= "a" "b"', ["a", "b"], vocab_size=70)
    mask = allocate_token_bitmask(1, 70, backend="torch")
    matcher.fill_next_token_bitmask(mask)
    assert mask.tolist() == [[1, 0, 0]]
    old = mask.view(-1)  # keeps the first storage alive
    mask.set_(torch.full((1, 3), 9, dtype=torch.int32))  # the same tensor on other memory
    old.fill_(5)
    assert matcher.accept_token(0)
    matcher.fill_next_token_bitmask(mask)
    assert mask.tolist() == [[2, 0, 0]] and old.tolist() == [5, 5, 5]
    mask.data = mask.view(torch.float32)  # the same memory and shape, another dtype
    with pytest.raises(BitmaskError, match="int32"):
        matcher.fill_next_token_bitmask(mask)


def test_allocate_token_bitmask():
    bm = allocate_token_bitmask(3, 65, backend="numpy")
    assert isinstance(bm, np.ndarray) and bm.dtype == np.int32 and bm.shape == (3, 3)
    assert (bm == -1).all()
    with pytest.raises(BitmaskError):
        allocate_token_bitmask(0, 10)
    with pytest.raises(BitmaskError):
        allocate_token_bitmask(1, 0)


# ---- grammar shapes vs the reference -----------------------------------------------------------


def test_nullable_heavy():
    text = 'root ::= a b a c\na ::= "" | "x"? | a a\nb ::= (a | "y")* c?\nc ::= ("z"?)* | b "w"\n'
    n = exhaustive(text, ["x", "y", "z", "w", "xy", "zw", "wx", "yyy", "</s>"], 4, stops=[8])
    assert n > 50


def test_nullable_root_allows_stop_at_start():
    matcher, _, _ = build('root ::= ("a" | "")*', ["a", "</s>"], stops=[1])
    assert matcher.is_completed()
    assert ids(matcher) == [0, 1]


def test_left_recursion():
    text = 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= term "*" atom | atom\natom ::= [0-9] | "(" expr ")"'
    exhaustive(text, ["1", "2", "+", "*", "(", ")", "1+", "+(", "2)", "))", "*2", "</s>"], 5, stops=[11])


def test_right_recursion():
    text = 'root ::= item root | item\nitem ::= "ab" | "c" [0-9]'
    exhaustive(text, ["a", "b", "ab", "c", "c1", "1", "bc", "abc", "</s>"], 5, stops=[8])


def test_mutual_and_deep_recursion():
    text = 'root ::= "(" root ")" root | "[" list "]" | ""\nlist ::= root ("," root)*'
    matcher, ref, vocab = build(text, ["(", ")", "[", "]", ",", "()", "[]", "</s>"], stops=[7])
    for _ in range(200):
        assert matcher.accept_token(0) and ref.accept_token(0)
    assert_same(matcher, ref, vocab)
    for _ in range(200):
        assert matcher.accept_token(1) and ref.accept_token(1)
    assert_same(matcher, ref, vocab)
    assert matcher.is_completed()
    exhaustive(text, ["(", ")", "[", "]", ",", "()", "[]", "</s>"], 5, stops=[7])


@pytest.mark.parametrize(
    "quant, lo, hi",
    [("{3}", 3, 3), ("{2,}", 2, None), ("{2,4}", 2, 4), ("{0,2}", 0, 2), ("{0}", 0, 0), ("?", 0, 1)],
)
def test_counted_repetition_exact_counts(quant, lo, hi):
    text = f'root ::= "a"{quant} "b"'
    for n in range(0, 8):
        m, _, _ = build(text, ["a", "b"])
        ok = m.accept_string("a" * n + "b")
        expected = n >= lo and (hi is None or n <= hi)
        assert ok == expected, (quant, n)
        if ok:
            assert m.is_completed()
    exhaustive(text, ["a", "aa", "aaa", "b", "ab", "aab", "</s>"], 5, stops=[6])


def test_counted_repetition_of_groups_and_classes():
    exhaustive(
        'root ::= ("ab" | [x-z]){2,3} ("." [0-9]{1,2}){0,2}',
        ["a", "b", "ab", "x", "yz", ".", "1", "12", ".1", "</s>"],
        5,
        stops=[9],
    )


def test_large_counted_repetition():
    matcher, _, _ = build('root ::= [0-9]{1,1000} "."', ["0", "9", "99", ".", "</s>"], stops=[4])
    assert matcher.accept_string("9" * 999)
    assert matcher.accept_token(0)
    assert ids(matcher) == [3]
    assert matcher.accept_token(3) and matcher.is_completed()


def test_multibyte_utf8_split_tokens():
    alpha = "α".encode()  # ce b1
    omega = "ω".encode()  # cf 89
    tokens = [
        b"\xce",
        b"\xcf",
        b"\xb1",
        b"\x89",
        b"\x80",
        alpha,
        omega,
        alpha + b"\xcf",
        b"\xb1" + omega,
        b"a",
        b"\xbf",
        "</s>",
    ]
    exhaustive("root ::= [α-ω]+", tokens, 4, stops=[len(tokens) - 1])
    matcher, _, _ = build("root ::= [α-ω]+", tokens)
    assert ids(matcher) == [0, 1, 5, 6, 7]
    assert matcher.accept_token(0)  # \xce: needs \xb1..\xbf next
    assert ids(matcher) == [2, 8, 10]


def test_multibyte_strings_and_negated_classes():
    tokens = [
        "日",
        "本",
        "語",
        "日本",
        "語!",
        b"\xe6",
        b"\x97",
        b"\xa5",
        "😀",
        b"\xf0\x9f",
        b"\x98\x80",
        '"',
        "a",
        "\\",
        "\n",
        "é",
        "</s>",
    ]
    exhaustive(
        'root ::= "日本語" | "😀"+ "!"? | "\\"" [^"\\\\\\n]* "\\""', tokens, 4, stops=[len(tokens) - 1]
    )


def test_escapes_in_strings_and_classes():
    text = 'root ::= "\\x41" [\\u00e9-\\u00ea] "\\u00e9"? [\\x30-\\x32]'
    matcher, ref, vocab = build(text, ["A", "é", "ê", "0", "3", "Aé", "éé", "1", "</s>"], stops=[8])
    assert matcher.accept_string("Aéé1") and matcher.is_completed()
    exhaustive(text, ["A", "é", "ê", "0", "3", "Aé", "éé", "1", "</s>"], 4, stops=[8])


def test_tokens_spanning_many_rules():
    text = 'root ::= "k" v ("," "k" v)*\nv ::= "=" [0-9]+ | ":" v'
    exhaustive(text, ["k", "=", ":", "1", "k=", "=1", "1,", ",k", "1,k=", "::", ":=", "</s>"], 5, stops=[11])


@pytest.mark.parametrize(
    "ebnf",
    [
        'root ::= "<" tag ">" [a-z>]*\ntag ::= "ab" | "a"',  # the rest runs in the parent's bytes
        'root ::= "<" tag ">" text\ntag ::= "ab" | "a"\ntext ::= [a-z>]*',  # ... or needs a rule edge
        'root ::= "<" tag ">" [a-z]{0,2} "!"\ntag ::= "ab" | "a"',  # a count bounds the rest
        'root ::= ("<" tag ">")+\ntag ::= "ab" | "a"',  # the parent loops back into the rule
    ],
)
def test_tokens_running_past_a_rule_end(ebnf: str) -> None:
    """A token that leaves a rule part-way ('b>x' after '<a') is checked by the parser up to the
    rule's end and taken without it when the rest stays in one item's own bytes
    (csrc/ag_matcher.c, ag_stays_in_rule): both ways must agree with the reference matcher,
    where the rest fits, where it needs a rule edge or a completion, and where it fails."""
    tokens = ["<", "a", "b", "ab", ">", ">x", ">xy", "b>", "b>x", "b>xy", "a>", "a>>", ">>", "x", "y"]
    tokens += ["!", "y!", ">!", "b>x!", "><", "b><a", "b><a>", "</s>"]
    assert exhaustive(ebnf, tokens, 4, stops=[len(tokens) - 1]) > 20


@pytest.mark.parametrize(
    "ebnf",
    [
        'root ::= "a" " " obj "!"\nobj ::= "{" [a-z]* "}"',  # after the space only the rule's "{"
        'root ::= "a" " " obj? "!"\nobj ::= "{" [a-z]* "}"',  # ... or the rule's end: "!" too
        'root ::= "a" tail\ntail ::= " " obj | " " "x"\nobj ::= "{" [a-z]* "}"',  # two ways on
    ],
)
def test_runs_the_parser_rejects_after_a_rule_edge(ebnf: str) -> None:
    """A first visit hands a token that passes a rule reference (' ' then `obj`) to the parser;
    the tokens after it that share the bytes the parser took, and whose next byte no item there
    can scan, fail the same way and are classified together (csrc/ag_mask_cache.c,
    ag_skip_parser_dead). Tokens with every next byte around '{', '!' and 'x' must still get the
    reference matcher's verdicts, and so must the ones cut short by the rule's end."""
    tokens = ["a", "a ", " ", "{", "}", "!", "x", "ab", "a {", "a !", "}!"]
    tokens += [" " + chr(c) for c in range(0x21, 0x7F)]  # a space, then every printable byte
    tokens += [" {a", " {}", " {}!", " !x", " xy", " x!", "</s>"]
    assert exhaustive(ebnf, tokens, 3, stops=[len(tokens) - 1]) > 10


@pytest.mark.parametrize(
    "ebnf",
    [
        # one item inside the string: `ab",` is decided by `",`
        'root ::= "{" s ":" s "}"\ns ::= "\\"" [a-z]* "\\"" | "!" s',
        # two items, each looping on letters the other refuses: `ab"}` is not `"}`, nor `xy",`
        'root ::= a "," | b "}"\na ::= "\\"" [a-m]* "\\"" | "!" a\nb ::= "\\"" [h-z]* "\\"" | "!" b',
        # the loop ends its rule on a byte of its own: no lone loop
        'root ::= s "," | s "}"\ns ::= "\\"" [a-z]* "\\"" | "\\"" [a-z]+',
    ],
)
def test_tokens_closing_a_string_are_decided_by_their_rest(ebnf: str) -> None:
    """Inside a string whose set holds one looping item, a closing token's letters leave the
    parser where it was, so only the rest from the quote is scanned (csrc/ag_matcher.c,
    ag_lone_loop_state). Where two items share the first bytes, or the loop may end the rule,
    every byte is scanned: each way must agree with the reference matcher."""
    tokens = ['"', "{", "}", ":", ",", "!", "a", "x", "ab", "xy", "m", '"}', '",', '":']
    tokens += ['ab"', 'xy"', 'ab"}', 'xy"}', 'ab",', 'xy",', 'ab":', 'xy":', 'm"}', 'ab":"', '"!', "</s>"]
    assert exhaustive(ebnf, tokens, 4, stops=[len(tokens) - 1]) > 20


# ---- apply_token_bitmask_inplace --------------------------------------------------------------


def _expected(allowed: Sequence[int], width: int) -> np.ndarray:
    out = np.full(width, -np.inf, dtype=np.float32)
    for i in allowed:
        if i < width:
            out[i] = 0.0
    return out


@pytest.mark.parametrize("width", [40, 64, 70, 35])
def test_apply_bitmask_numpy(width):
    matcher, _, vocab = build("root ::= [ab]*", ["a", "b", "c", "</s>"], stops=[3], vocab_size=40)
    bm = allocate_token_bitmask(2, 40, backend="numpy")
    matcher.fill_next_token_bitmask(bm, index=0)
    bm[1] = 0
    bm[1, 0] = 0b100  # only "c"
    logits = np.zeros((2, width), dtype=np.float32)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits[0], _expected([0, 1, 3], width))
    np.testing.assert_array_equal(logits[1], _expected([2], width))
    # 1-D logits and mask
    flat = np.zeros(width, dtype=np.float32)
    apply_token_bitmask_inplace(flat, bm[0])
    np.testing.assert_array_equal(flat, _expected([0, 1, 3], width))


def test_apply_bitmask_numpy_padding_and_indices():
    bm = allocate_token_bitmask(1, 40, backend="numpy")  # all allowed, 64 bits wide
    logits = np.zeros((3, 100), dtype=np.float32)
    apply_token_bitmask_inplace(logits, bm, indices=[1])
    assert np.isfinite(logits[0]).all() and np.isfinite(logits[2]).all()
    assert np.isfinite(logits[1, :64]).all() and np.isneginf(logits[1, 64:]).all()
    logits = np.zeros((1, 100), dtype=np.float32)
    apply_token_bitmask_inplace(logits, bm, vocab_size=40)
    assert np.isfinite(logits[0, :40]).all() and np.isneginf(logits[0, 40:]).all()
    with pytest.raises(BitmaskError):
        apply_token_bitmask_inplace(logits, bm.astype(np.int64))
    with pytest.raises(BitmaskError):
        apply_token_bitmask_inplace(logits, bm, indices=[5])


@pytest.mark.parametrize("width", [40, 64, 70, 35])
def test_apply_bitmask_torch(width):
    torch = pytest.importorskip("torch")
    matcher, _, vocab = build("root ::= [ab]*", ["a", "b", "c", "</s>"], stops=[3], vocab_size=40)
    bm = allocate_token_bitmask(2, 40, backend="torch")
    matcher.fill_next_token_bitmask(bm, index=1)
    bm[0] = 0
    bm[0, 0] = 0b100
    logits = torch.zeros((2, width), dtype=torch.float32)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits[0].numpy(), _expected([2], width))
    np.testing.assert_array_equal(logits[1].numpy(), _expected([0, 1, 3], width))
    # bf16 logits, a NumPy mask, indices
    logits16 = torch.zeros((3, width), dtype=torch.bfloat16)
    apply_token_bitmask_inplace(logits16, bm.numpy()[1:], indices=[2])
    assert torch.isfinite(logits16[:2]).all()
    np.testing.assert_array_equal(logits16[2].float().numpy(), _expected([0, 1, 3], width))
    with pytest.raises(BitmaskError):
        apply_token_bitmask_inplace(logits, bm.to(torch.int64))


def test_apply_bitmask_torch_matches_xgrammar_kernel():
    torch = pytest.importorskip("torch")
    xgr = pytest.importorskip("xgrammar")
    rng = np.random.default_rng(0)
    for width, vocab_size in ((128, 128), (200, 150), (70, 70)):
        bm = torch.from_numpy(
            rng.integers(-(2**31), 2**31 - 1, size=(2, (vocab_size + 31) // 32), dtype=np.int64).astype(
                np.int32
            )
        )
        a = torch.randn((2, width))
        b = a.clone()
        apply_token_bitmask_inplace(a, bm, vocab_size=vocab_size)
        xgr.apply_token_bitmask_inplace(b, bm, vocab_size=vocab_size)
        # same inside the vocabulary; past it xgrammar leaves logits alone, we mask them off
        torch.testing.assert_close(a[:, :vocab_size], b[:, :vocab_size])
        assert torch.isneginf(a[:, vocab_size:]).all()


def test_exhaustive_helper_sanity():
    # start, "a", "ab" (paths ending in the stop token are checked but not expanded)
    assert exhaustive('root ::= "a" | "ab"', ["a", "b", "</s>"], 3, stops=[2]) == 3


def test_unproductive_rule_is_never_entered():
    # `dead` derives no finite string, so "a" is not a viable prefix even though a rule starts with it
    text = 'root ::= "a" dead | "b"\ndead ::= "x" dead'
    matcher, ref, vocab = build(text, ["a", "b", "x", "ax", "</s>"], stops=[4])
    assert ref.allowed_token_ids() == [1]
    assert_same(matcher, ref, vocab)
    assert matcher.accept_token(0) is False
    assert matcher.accept_string("ax") is False


def test_compiler_hands_back_a_recent_grammar_by_content() -> None:
    vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    compiler = Compiler(vocab)
    first = compiler.compile(Grammar.from_ebnf('root ::= "a" "b"*'))
    assert compiler.compile(Grammar.from_ebnf('root ::= "a" "b"*')) is first  # warm mask cache
    assert compiler.compile(Grammar.from_ebnf('root ::= "b"')) is not first
    no_reuse = Compiler(vocab, cache_limit_bytes=0)
    assert no_reuse.compile('root ::= "a"') is not no_reuse.compile('root ::= "a"')


def test_mask_time_budget_raises_and_keeps_the_matcher():
    from agentgrammar import MaskTimeoutError

    # a chain of rules whose first mask classifies 1,500 states, the clock checked at each
    chain = "\n".join([f'r{i} ::= r{i + 1} | "x"' for i in range(1500)] + ['r1500 ::= "y"'])
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf(chain.replace("r0 ::=", "root ::=", 1)))
    m = Matcher(compiled, mask_time_budget_s=1e-6)
    with pytest.raises(MaskTimeoutError, match="time budget"):
        m.allowed_token_ids()
    dirty = np.full((1, 9), -1, dtype=np.int32)  # a serving buffer holding the last step's mask
    with pytest.raises(MaskTimeoutError, match="time budget"):
        m.fill_next_token_bitmask(dirty)
    assert not dirty.any()  # a failed row allows no token, whatever the buffer held
    assert m.num_accepted_steps == 0 and m.accept_token(ord("x"))  # unchanged, still usable
    with pytest.raises(ValueError, match="positive"):
        Matcher(compiled, mask_time_budget_s=0)


def _verdict_case() -> Tuple[Vocabulary, Matcher]:
    """A string rule shared by two contexts that differ only in what follows it. The rule is
    recursive, so it stays a rule of its own: inside it the tokens that close the string are
    uncertain, and the parser decides them from what waits after the string. They are few
    against the vocabulary, so the state keeps them as a list (the kept verdicts' case)."""
    tokens = [b'",', b'"}', b"xx", b'x",', b'x"}'] + [bytes([c]) for c in range(256)]
    tokens += [bytes([c, d]) for c in b"klmnopq" for d in b"klmnopqrstuvwxyz"]  # filler: a list
    vocab = Vocabulary([*tokens, b"</s>"], stop_token_ids=[len(tokens)])
    source = 'root ::= "a" str "," | "b" str "}"\nstr ::= "\\"" [a-z]* "\\"" | "[" str "]"'
    return vocab, Matcher(Compiler(vocab).compile(Grammar.from_ebnf(source)))


def test_kept_verdicts_serve_the_same_item_and_are_forgotten_on_rollback_and_reset() -> None:
    """Masks inside one string resolve the closing tokens once and keep the verdicts for the
    same item (csrc/ag_matcher.c): along the string they stay right. Rollback and reset pop the
    sets those verdicts depend on; the same item, at the same position, in the other context
    must then be decided again, or the mask would still allow '",' where only '"}' may close."""
    vocab, matcher = _verdict_case()

    def masks_along(text: str, closing: bytes, other: bytes) -> None:
        for ch in text:  # a mask at every position, the string's ones from the kept verdicts
            assert matcher.accept_string(ch)
            cached, direct = cached_and_direct(matcher, vocab.vocab_size)
            assert np.array_equal(cached, direct), repr(ch)
        allowed = {vocab.token_bytes[i] for i in matcher.allowed_token_ids()}
        assert closing in allowed and b"x" + closing in allowed and other not in allowed

    masks_along('a"xxx', b'",', b'"}')
    matcher.rollback(5)
    masks_along('b"xxx', b'"}', b'",')
    matcher.reset()
    masks_along('a"xxx', b'",', b'"}')
