"""apply_token_bitmask_inplace's C path (ag_apply_mask) against a reference written with NumPy."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pytest

from agentgrammar import apply_token_bitmask_inplace
from agentgrammar.engine._native import ffi, lib, new_error
from agentgrammar.errors import BitmaskError


def _reference(
    logits: np.ndarray, mask: np.ndarray, vocab_size: Optional[int], rows: Sequence[int]
) -> np.ndarray:
    """What the rows must become: -inf where the token is not allowed, else unchanged."""
    out = logits.astype(np.float64).copy()
    width = out.shape[1]
    for k, r in enumerate(rows):
        for i in range(width):
            word = i // 32
            allowed = (
                word < mask.shape[1]
                and (vocab_size is None or i < vocab_size)
                and (int(mask[k, word]) >> (i % 32)) & 1
            )
            if not allowed:
                out[r, i] = -np.inf
    return out


def _random_mask(rng: np.random.Generator, rows: int, words: int) -> np.ndarray:
    mask = rng.integers(-(2**31), 2**31, size=(rows, words), dtype=np.int64).astype(np.int32)
    mask[:, ::3] = -1  # whole words allowed
    mask[:, 1::4] = 0  # and whole words masked off
    return mask


CASES = [  # (width, mask words, vocab_size)
    (1, 1, None),
    (31, 1, None),
    (32, 1, None),
    (33, 2, None),
    (100, 2, None),  # the mask covers 64 of 100
    (100, 4, 70),
    (1000, 32, 999),
    (1000, 32, 5000),
]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("width,words,vocab_size", CASES)
def test_numpy_rows_match_the_reference(
    dtype: str, width: int, words: int, vocab_size: Optional[int]
) -> None:
    rng = np.random.default_rng(width * 7 + words)
    mask = _random_mask(rng, 2, words)
    logits = rng.standard_normal((3, width)).astype(dtype)
    expected = _reference(logits, mask, vocab_size, [2, 0])
    apply_token_bitmask_inplace(logits, mask, vocab_size=vocab_size, indices=[2, 0])
    np.testing.assert_array_equal(logits.astype(np.float64), expected)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("width,words,vocab_size", CASES)
def test_torch_rows_match_the_reference(
    dtype: str, width: int, words: int, vocab_size: Optional[int]
) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(width * 11 + words)
    mask = _random_mask(rng, 3, words)
    logits = torch.randn((3, width), generator=torch.Generator().manual_seed(width)).to(getattr(torch, dtype))
    expected = _reference(logits.double().numpy(), mask, vocab_size, [0, 1, 2])
    apply_token_bitmask_inplace(logits, torch.from_numpy(mask), vocab_size=vocab_size)
    np.testing.assert_array_equal(logits.double().numpy(), expected)


def test_torch_views_and_the_fallback_agree() -> None:
    """A row-sliced view takes the C path, a column-strided one the tensor path: the same result."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    mask = torch.from_numpy(_random_mask(rng, 1, 4))
    base = torch.randn((4, 256))
    strided = base.clone()[:, ::2]  # 128 columns, stride 2: not contiguous
    contiguous = strided.contiguous()
    apply_token_bitmask_inplace(strided, mask, indices=[1])
    apply_token_bitmask_inplace(contiguous, mask, indices=[1])
    torch.testing.assert_close(strided, contiguous)
    rows = base.clone()
    apply_token_bitmask_inplace(rows[2:], mask, indices=[1])  # a view starting at row 2
    expected = _reference(base.numpy(), mask.numpy(), None, [3])
    np.testing.assert_array_equal(rows.numpy(), expected.astype(np.float32))


def test_one_dimensional_row_and_numpy_mask() -> None:
    torch = pytest.importorskip("torch")
    mask = np.array([0b1010, 0], dtype=np.int32)
    logits = torch.zeros(40)
    apply_token_bitmask_inplace(logits, mask)
    assert torch.isfinite(logits).nonzero().flatten().tolist() == [1, 3]


def test_negative_vocab_size_is_refused() -> None:
    with pytest.raises(BitmaskError, match="vocab_size"):
        apply_token_bitmask_inplace(np.zeros((1, 8), np.float32), np.zeros((1, 1), np.int32), vocab_size=-1)


def test_c_function_refuses_bad_arguments() -> None:
    err = new_error()
    row = ffi.new("float[]", 4)
    mask = ffi.new("uint32_t[]", [1])
    assert lib.ag_apply_mask(row, 99, 4, mask, 1, 4, err) == lib.AG_ERR_INVALID
    assert b"kind 99" in ffi.string(err.message)
    assert lib.ag_apply_mask(ffi.NULL, lib.AG_LOGITS_F32, 4, mask, 1, 4, err) == lib.AG_ERR_INVALID
    assert lib.ag_apply_mask(row, lib.AG_LOGITS_F32, 4, ffi.NULL, 1, 4, err) == lib.AG_ERR_INVALID
    # nothing to do: empty row, or no mask words (every token masked off)
    assert lib.ag_apply_mask(ffi.NULL, lib.AG_LOGITS_F32, 0, ffi.NULL, 0, 0, err) == lib.AG_OK
    assert lib.ag_apply_mask(row, lib.AG_LOGITS_F32, 4, ffi.NULL, 0, 4, err) == lib.AG_OK
    assert list(row) == [float("-inf")] * 4


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("vocab_size", [None, 4000, 3999])
def test_long_masked_off_runs(dtype: str, vocab_size: Optional[int]) -> None:
    """A constrained step: a few allowed tokens among thousands masked off in long runs."""
    mask = np.zeros((1, 129), dtype=np.int32)  # 4,128 bits for 4,097 logits
    mask[0, 0] = 0b1001
    mask[0, 64] = -1  # tokens 2048-2079
    mask[0, 124] = -(2**31)  # bit 31 alone: token 3999
    mask[0, 128] = 1  # token 4096
    logits = np.random.default_rng(5).standard_normal((1, 4097)).astype(dtype)
    expected = _reference(logits, mask, vocab_size, [0])
    apply_token_bitmask_inplace(logits, mask, vocab_size=vocab_size)
    np.testing.assert_array_equal(logits.astype(np.float64), expected)
    allowed = np.flatnonzero(np.isfinite(logits[0])).tolist()
    assert allowed[:2] == [0, 3] and allowed[2:34] == list(range(2048, 2080))
    assert (3999 in allowed) == (vocab_size != 3999) and (4096 in allowed) == (vocab_size is None)
