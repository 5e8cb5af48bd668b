"""BatchMatcher: a batch's masks filled on a pool of C threads equal the masks filled one by one."""

from __future__ import annotations

import random
import threading
from typing import List

import numpy as np
import pytest

from agentgrammar import (
    BatchMatcher,
    BitmaskError,
    Compiler,
    Grammar,
    MaskTimeoutError,
    Matcher,
    MatcherError,
    Vocabulary,
    allocate_token_bitmask,
    batch_fill_next_token_bitmask,
)
from tests.engine.test_threads import SHARED, build, make_vocab


def _allowed(mask_row: np.ndarray, n: int) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(mask_row.view(np.uint8), bitorder="little")[:n])


def _one_by_one(matchers: List[Matcher], n: int) -> np.ndarray:
    mask = np.zeros((len(matchers), (n + 31) // 32), dtype=np.int32)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(mask, i)
    return mask


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_batch_masks_equal_serial_masks_along_random_walks(threads: int) -> None:
    vocab = make_vocab()
    n = vocab.vocab_size
    # Separate compilers, so the batch fills fresh mask caches from several threads at once.
    batch_compiler, serial_compiler = Compiler(vocab), Compiler(vocab)
    specs = SHARED * 3
    batched = [Matcher(batch_compiler.compile(build(s))) for s in specs]
    serial = [Matcher(serial_compiler.compile(build(s))) for s in specs]
    pool = BatchMatcher(max_threads=threads)
    assert pool.num_threads == threads
    rng = random.Random(threads)
    bitmask = allocate_token_bitmask(len(specs), n, backend="numpy")
    steps = 0
    for _ in range(60):
        live = [i for i, m in enumerate(batched) if not m.is_terminated()]
        if not live:
            break
        need = pool.fill_next_token_bitmask([batched[i] for i in live], bitmask, live)
        want = _one_by_one([serial[i] for i in live], n)
        for j, i in enumerate(live):
            assert np.array_equal(bitmask[i], want[j]), f"row {i} differs from the serial mask"
            assert need[j] == (len(_allowed(want[j], n)) < n)
            allowed = _allowed(want[j], n)
            if rng.random() < 0.1 and batched[i].num_accepted_steps:
                k = rng.randint(1, batched[i].num_accepted_steps)
                batched[i].rollback(k)
                serial[i].rollback(k)
            elif len(allowed):
                tok = int(allowed[rng.randrange(len(allowed))])
                assert batched[i].accept_token(tok) and serial[i].accept_token(tok)
            steps += 1
    assert steps > 200


def test_rows_not_named_are_left_alone_and_indices_place_rows() -> None:
    vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+ "b"'))
    m0, m1 = Matcher(compiled), Matcher(compiled)
    assert m1.accept_token(0)
    bitmask = np.full((4, 1), 7, dtype=np.int32)
    assert BatchMatcher(max_threads=2).fill_next_token_bitmask([m0, m1], bitmask, [3, 1]) == [True, True]
    assert bitmask[:, 0].tolist() == [7, 0b0111, 7, 0b0101]


def test_a_batch_filled_step_after_step_follows_its_matchers() -> None:
    # a decoding loop fills the same matchers at every step (the pool keeps their C arrays):
    # each fill must follow the matchers' new states, their rows, and another batch's members
    vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+ "b"'))
    m0, m1, m2 = Matcher(compiled), Matcher(compiled), Matcher(compiled)
    pool = BatchMatcher(max_threads=2)
    bitmask = np.zeros((3, 1), dtype=np.int32)
    for batch, rows in (([m0, m1], [0, 1]), ([m0, m1], [1, 0]), ([m1, m0], [0, 1]), ([m2, m1], [2, 1])):
        assert m1.accept_token(0)  # m1 moves on at every step: "a" then "a" ... allows "b"
        assert pool.fill_next_token_bitmask(batch, bitmask, rows) == [True, True]
        want = _one_by_one(batch, vocab.vocab_size)
        assert [bitmask[r, 0] for r in rows] == want[:, 0].tolist()
    assert bitmask[1:, 0].tolist() == [0b0111, 0b0101]  # m1 also allows "b", m2 at the start does not
    assert m1.accept_token(1)  # "b": now only the stop token
    assert pool.fill_next_token_bitmask([m0, m1], bitmask) == [True, True]
    assert bitmask[:2, 0].tolist() == [0b0101, 0b1000]


def test_torch_bitmask_and_default_pool() -> None:
    pytest.importorskip("torch")
    vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a" "b"?'))
    ms = [Matcher(compiled) for _ in range(3)]
    assert ms[2].accept_token(0)
    bitmask = allocate_token_bitmask(3, vocab.vocab_size, backend="torch")
    assert batch_fill_next_token_bitmask(ms, bitmask) == [True, True, True]
    assert bitmask[:, 0].tolist() == [0b001, 0b001, 0b110]


def test_a_bitmask_filled_again_is_checked_when_it_or_the_vocabulary_changed() -> None:
    # The pool keeps the last bitmask's pointer (bitmask.remember_row), for one vocabulary size.
    torch = pytest.importorskip("torch")
    vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a" "b"'))
    ms = [Matcher(compiled) for _ in range(2)]
    pool = BatchMatcher(max_threads=2)
    bitmask = allocate_token_bitmask(2, vocab.vocab_size, backend="torch")
    pool.fill_next_token_bitmask(ms, bitmask)
    old = bitmask.view(-1)  # keeps the first storage alive
    bitmask.set_(torch.zeros((2, 1), dtype=torch.int32))  # the same tensor on other memory
    old.fill_(7)
    assert ms[1].accept_token(0)
    pool.fill_next_token_bitmask(ms, bitmask)
    assert bitmask[:, 0].tolist() == [0b001, 0b010] and old.tolist() == [7, 7]
    wide = [f"t{i}" for i in range(40)] + ["</s>"]  # two words a row: this bitmask is too narrow
    other = Matcher(Compiler(Vocabulary(wide, stop_token_ids=[40])).compile('root ::= "t1"'))
    with pytest.raises(BitmaskError, match="shape"):
        pool.fill_next_token_bitmask([other], bitmask)


def test_bad_batches_raise_typed_errors() -> None:
    vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"'))
    m = Matcher(compiled)
    pool = BatchMatcher(max_threads=2)
    bitmask = allocate_token_bitmask(2, vocab.vocab_size, backend="numpy")
    with pytest.raises(MatcherError, match="one matcher twice"):
        pool.fill_next_token_bitmask([m, m], bitmask)
    with pytest.raises(MatcherError, match="one row twice"):
        pool.fill_next_token_bitmask([m, Matcher(compiled)], bitmask, [1, 1])
    with pytest.raises(BitmaskError, match="out of range"):
        pool.fill_next_token_bitmask([m], bitmask, [2])
    with pytest.raises(BitmaskError, match="1 matchers but 2 indices"):
        pool.fill_next_token_bitmask([m], bitmask, [0, 1])
    with pytest.raises(BitmaskError, match="dtype"):
        pool.fill_next_token_bitmask([m], bitmask.astype(np.int64))
    with pytest.raises(TypeError, match=r"not an agentgrammar\.Matcher"):
        pool.fill_next_token_bitmask([object()], bitmask)  # type: ignore[list-item]
    other = Matcher(Compiler(Vocabulary(["a", "b", "c", "</s>"], stop_token_ids=[3])).compile('root ::= "a"'))
    with pytest.raises(MatcherError, match="different vocabulary sizes"):
        pool.fill_next_token_bitmask([m, other], bitmask)
    assert pool.fill_next_token_bitmask([], bitmask) == []
    for bad in (0, 257, "many", True, 2.0):
        with pytest.raises(ValueError, match="max_threads"):
            BatchMatcher(max_threads=bad)  # type: ignore[arg-type]


def test_one_failing_row_raises_after_the_others_are_filled() -> None:
    # A rule chain whose first mask takes far longer than a microsecond budget.
    n = 400
    rules = "\n".join(f'r{i} ::= r{i + 1} | "x{i}"' for i in range(n))
    ebnf = f'root ::= r0\n{rules}\nr{n} ::= "end"'
    vocab = make_vocab()
    slow = Matcher(Compiler(vocab).compile(Grammar.from_ebnf(ebnf)), mask_time_budget_s=1e-6)
    fast = Matcher(Compiler(vocab).compile(Grammar.from_ebnf('root ::= "abc"')))
    bitmask = allocate_token_bitmask(2, vocab.vocab_size, backend="numpy")
    bitmask[:] = 0
    with pytest.raises(MaskTimeoutError, match=r"matcher 1 \(row 1\)"):
        BatchMatcher(max_threads=2).fill_next_token_bitmask([fast, slow], bitmask)
    abc = vocab.token_bytes.index(b"abc")
    assert _allowed(bitmask[0], vocab.vocab_size).tolist() == [ord("a"), abc]


def test_python_threads_share_one_pool() -> None:
    vocab = make_vocab()
    compiler = Compiler(vocab)
    pool = BatchMatcher(max_threads=3)
    grammars = [compiler.compile(build(s)) for s in SHARED]
    want = _one_by_one([Matcher(g) for g in grammars], vocab.vocab_size)
    errors: List[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(20):
                bitmask = allocate_token_bitmask(len(grammars), vocab.vocab_size, backend="numpy")
                pool.fill_next_token_bitmask([Matcher(g) for g in grammars], bitmask)
                assert np.array_equal(bitmask, want)
        except BaseException as e:  # pragma: no cover - only on failure
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
