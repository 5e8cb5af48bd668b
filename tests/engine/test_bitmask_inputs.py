"""``apply_token_bitmask_inplace`` on inputs it cannot mask: a ``BitmaskError`` naming the
problem, never an untyped error, a silent no-op on the wrong memory or a write past the row (a
float row index used to become a byte offset in C)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentgrammar import BitmaskError, allocate_token_bitmask, apply_token_bitmask_inplace

torch = pytest.importorskip("torch")

V = 40


def _mask(backend: str = "numpy") -> Any:
    mask = allocate_token_bitmask(1, V, backend=backend)
    mask[0, :] = 0
    mask[0, 0] = 0b101  # tokens 0 and 2 allowed
    return mask


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_, np.complex64])
def test_numpy_logits_that_cannot_hold_minus_inf(dtype: Any) -> None:
    with pytest.raises(BitmaskError, match="floating point"):
        apply_token_bitmask_inplace(np.zeros((1, V), dtype=dtype), _mask())


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "complex64"])
def test_torch_logits_that_cannot_hold_minus_inf(dtype: str) -> None:
    with pytest.raises(BitmaskError, match="floating point"):
        apply_token_bitmask_inplace(torch.zeros((1, V), dtype=getattr(torch, dtype)), _mask("torch"))


def test_read_only_numpy_logits() -> None:
    logits = np.zeros((1, V), dtype=np.float32)
    logits.flags.writeable = False
    with pytest.raises(BitmaskError, match="writeable"):
        apply_token_bitmask_inplace(logits, _mask())
    broadcast = np.broadcast_to(np.zeros(V, dtype=np.float32), (2, V))
    with pytest.raises(BitmaskError, match="writeable"):
        apply_token_bitmask_inplace(broadcast, allocate_token_bitmask(2, V, backend="numpy"))


def test_logits_that_require_grad() -> None:
    leaf = torch.zeros((1, V), requires_grad=True)
    with pytest.raises(BitmaskError, match="require grad"):
        apply_token_bitmask_inplace(leaf, _mask("torch"))
    with pytest.raises(BitmaskError, match="in place"):  # a view of that leaf: autograd refuses too
        apply_token_bitmask_inplace(torch.zeros(V, requires_grad=True)[None, :].squeeze(0), _mask("torch")[0])
    with torch.no_grad():  # allowed there
        apply_token_bitmask_inplace(leaf, _mask("torch"))
    assert torch.isinf(leaf[0, 1])
    derived = torch.zeros((1, V), requires_grad=True) * 1.0  # a non-leaf: autograd follows the fill
    apply_token_bitmask_inplace(derived, _mask("torch"))
    assert torch.isinf(derived[0, 1]) and derived.requires_grad


@pytest.mark.parametrize("shape", [(), (1, 1, V)])
def test_logits_of_other_dimensions(shape: Any) -> None:
    with pytest.raises(BitmaskError, match="dimensions"):
        apply_token_bitmask_inplace(np.zeros(shape, dtype=np.float32), _mask())
    with pytest.raises(BitmaskError, match="dimensions"):
        apply_token_bitmask_inplace(torch.zeros(shape), _mask("torch"))


def test_masks_of_other_dimensions_and_types() -> None:
    for logits in (np.zeros((1, V), dtype=np.float32), torch.zeros((1, V))):
        with pytest.raises(BitmaskError, match="dimensions"):
            apply_token_bitmask_inplace(logits, _mask()[None])
        with pytest.raises(BitmaskError, match="int32"):
            apply_token_bitmask_inplace(logits, object())
        with pytest.raises(BitmaskError, match="int32"):
            apply_token_bitmask_inplace(logits, [[1, 2]])


@pytest.mark.parametrize("index", [0.5, True, "0", None, 1.0])
def test_row_indices_must_be_ints(index: Any) -> None:
    # Before: 0.5 passed the range check and wrote the row at byte offset 0.5 * row size, past
    # the end of a one-row buffer (heap corruption).
    buffer = np.zeros(2 * V, dtype=np.float32)
    logits = buffer[:V].reshape(1, V)
    with pytest.raises(BitmaskError, match="indices must be ints"):
        apply_token_bitmask_inplace(logits, _mask(), indices=[index])
    assert not np.isinf(buffer).any()
    with pytest.raises(BitmaskError, match="indices must be ints"):
        apply_token_bitmask_inplace(torch.zeros((1, V)), _mask("torch"), indices=[index])
    apply_token_bitmask_inplace(logits, _mask(), indices=[np.int64(0)])  # a NumPy int is an int
    assert np.isinf(buffer[:V]).sum() == V - 2 and not np.isinf(buffer[V:]).any()


@pytest.mark.parametrize("vocab_size", [3.5, "40", True])
def test_vocab_size_must_be_an_int(vocab_size: Any) -> None:
    with pytest.raises(BitmaskError, match="vocab_size must be an int"):
        apply_token_bitmask_inplace(np.zeros((1, V), dtype=np.float32), _mask(), vocab_size=vocab_size)


def test_a_huge_vocab_size_is_the_logits_width() -> None:
    logits = np.zeros((1, V), dtype=np.float32)
    apply_token_bitmask_inplace(logits, _mask(), vocab_size=2**70)
    assert np.isfinite(logits[0]).tolist() == [i in (0, 2) for i in range(V)]


def test_rows_that_share_memory() -> None:
    logits = torch.zeros((1, V)).expand(2, V)
    with pytest.raises(BitmaskError, match="share their memory"):
        apply_token_bitmask_inplace(logits, allocate_token_bitmask(2, V))


def test_a_dtype_torch_cannot_fill_in_place() -> None:
    dtype = getattr(torch, "float8_e4m3fn", None)
    if dtype is None:
        pytest.skip("no float8 in this torch")
    with pytest.raises(BitmaskError, match="cannot mask"):
        apply_token_bitmask_inplace(torch.zeros((1, V)).to(dtype), _mask("torch"))
