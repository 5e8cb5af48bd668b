"""Token bitmasks in xgrammar's layout, and applying them to logits.

A bitmask is int32 with shape ``(batch, ceil(vocab_size / 32))``; token ``j`` is
bit ``j % 32`` of word ``j // 32``, and 1 means allowed. Existing kernels written
for xgrammar's masks work on these unchanged.

Example:
    >>> import numpy as np
    >>> from agentgrammar import allocate_token_bitmask, apply_token_bitmask_inplace
    >>> mask = allocate_token_bitmask(1, 40, backend="numpy")
    >>> mask[0, :] = 0; mask[0, 0] = 0b101          # allow tokens 0 and 2
    >>> logits = np.zeros((1, 40), dtype=np.float32)
    >>> apply_token_bitmask_inplace(logits, mask)
    >>> np.isfinite(logits[0, :4]).tolist()
    [True, False, True, False]
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import BitmaskError
from ._native import ffi, lib, new_error, raise_error

__all__ = [
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_row_pointer",
    "bitmask_words",
]

#: What a matcher keeps of the row it filled last (``remember_row``): the bitmask, the row's
#: index, its pointer and width in words, the bitmask's rows, and for a torch tensor
#: ``tensor_key`` (None for a NumPy array).
Row = Tuple[Any, int, Any, int, int, Optional[Tuple[Any, ...]]]
NO_ROW: Row = (object(), -1, ffi.NULL, 0, 0, None)  # no bitmask a caller passes is this object


def bitmask_words(vocab_size: int) -> int:
    """The number of int32 words a mask of ``vocab_size`` tokens needs."""
    return (vocab_size + 31) // 32


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, backend: str = "auto") -> Any:
    """A bitmask of shape ``(batch_size, ceil(vocab_size / 32))`` with every token allowed.

    ``backend`` is ``"torch"``, ``"numpy"`` or ``"auto"`` (a CPU torch tensor when torch is
    installed, as xgrammar returns; otherwise a NumPy array).
    """
    if batch_size < 1 or vocab_size < 1:
        raise BitmaskError(f"batch_size and vocab_size must be positive, got {batch_size}, {vocab_size}")
    shape = (batch_size, bitmask_words(vocab_size))
    torch = _torch() if backend in ("auto", "torch") else None
    if backend == "torch" and torch is None:
        raise BitmaskError("backend='torch' needs torch installed (pip install 'agentgrammar[hf]')")
    if backend not in ("auto", "torch", "numpy"):
        raise BitmaskError(f"unknown backend {backend!r}; use 'auto', 'torch' or 'numpy'")
    if torch is not None:
        return torch.full(shape, -1, dtype=torch.int32)
    return np.full(shape, -1, dtype=np.int32)


_INT32 = np.dtype(np.int32)


def _dtype_name(bitmask: Any) -> str:
    return str(getattr(bitmask, "dtype", type(bitmask).__name__))


def _row_words(shape: Tuple[int, ...], index: int, vocab_size: int) -> int:
    """The row width in words of a bitmask of ``shape``; BitmaskError when it cannot hold row
    ``index`` for ``vocab_size`` tokens."""
    need = (vocab_size + 31) // 32
    if len(shape) == 1:
        if index != 0:
            raise BitmaskError(f"index {index} given for a 1-D bitmask")
        shape = (1, *shape)
    if len(shape) != 2 or shape[1] < need:
        raise BitmaskError(
            f"bitmask shape must be (batch, {need}) for vocab_size {vocab_size}, got {tuple(shape)}"
        )
    if not 0 <= index < shape[0]:
        raise BitmaskError(f"bitmask row {index} is out of range for batch size {shape[0]}")
    return int(shape[1])


def bitmask_row_pointer(bitmask: Any, index: int, vocab_size: int) -> Tuple[Any, int]:
    """A ``uint32_t *`` to row ``index`` of a CPU bitmask, and the row's number of words.

    Raises BitmaskError for a wrong dtype, shape, device or layout. This runs whenever a
    matcher meets a bitmask or row it did not fill last (``remember_row``), so the checks are
    the cheap ones (no ``str(dtype)``, no ``ndarray.ctypes``, which cost microseconds): a fill
    of a cached mask takes about two.
    """
    if isinstance(bitmask, np.ndarray):
        if bitmask.dtype != _INT32:
            raise BitmaskError(f"bitmask dtype must be int32, got {bitmask.dtype}")
        words = _row_words(bitmask.shape, index, vocab_size)
        flags = bitmask.flags
        if not flags.c_contiguous or not flags.writeable:
            raise BitmaskError("bitmask must be a writeable C-contiguous array")
        return ffi.from_buffer("uint32_t[]", bitmask) + index * words, words
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(bitmask, torch.Tensor):
        raise BitmaskError(
            f"bitmask must be an int32 NumPy array or torch tensor, got {type(bitmask).__name__}"
        )
    if bitmask.dtype is not torch.int32:
        raise BitmaskError(f"bitmask dtype must be int32, got {_dtype_name(bitmask)}")
    words = _row_words(bitmask.shape, index, vocab_size)
    if not bitmask.is_cpu:
        raise BitmaskError(
            f"bitmask must live on the CPU (got device {bitmask.device}); fill it on the CPU, then copy it "
            "to the accelerator with .to(device, non_blocking=True)"
        )
    if not bitmask.is_contiguous():
        raise BitmaskError("bitmask must be contiguous")
    return ffi.cast("uint32_t *", bitmask.data_ptr() + index * words * 4), words


def tensor_key(bitmask: Any) -> Tuple[Any, ...]:
    """What changes with a torch tensor's memory (``resize_``, ``set_``, ``.data =``): its data
    pointer, shape and dtype."""
    return (bitmask.data_ptr(), bitmask.shape, bitmask.dtype)


def remember_row(bitmask: Any, index: int, vocab_size: int) -> Row:
    """``bitmask_row_pointer`` of row ``index``, kept with the bitmask so that the next fill of
    the same row of the same bitmask reuses it (``Matcher.fill_next_token_bitmask``).

    Reuse is safe because the row keeps the bitmask alive: a NumPy array's memory cannot
    move while it is referenced (``resize`` refuses, ``.data`` cannot be set), and a torch
    tensor's is checked against ``tensor_key`` before each reuse. The other checks (dtype,
    contiguity) run here, once per bitmask and row: after a model's forward pass they are
    cold and took about half of a cached fill.

    Example:
        >>> mask = allocate_token_bitmask(2, 40, backend="numpy")
        >>> row = remember_row(mask, 1, 40)
        >>> row[0] is mask, row[1:2] + row[3:]
        (True, (1, 2, 2, None))
    """
    mask, words = bitmask_row_pointer(bitmask, index, vocab_size)
    rows = int(bitmask.shape[0]) if len(bitmask.shape) == 2 else 1
    key = None if isinstance(bitmask, np.ndarray) else tensor_key(bitmask)
    return (bitmask, index, mask, words, rows, key)


def same_row(row: Row, bitmask: Any, index: int) -> bool:
    """Whether ``row`` (``remember_row``) is row ``index`` of ``bitmask`` as it is now."""
    return row[0] is bitmask and row[1] == index and (row[5] is None or row[5] == tensor_key(bitmask))


def _unpack(bitmask: np.ndarray, width: int) -> np.ndarray:
    """Boolean allowed-matrix (batch, width) from packed little-endian int32 words.

    ``np.unpackbits`` is about 500x faster than shifting each word by 0..31 (0.1 ms against
    70 ms a row for a 128k vocabulary)."""
    words = np.ascontiguousarray(bitmask, dtype="<i4")
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
    return bits[:, :width].astype(bool)


def apply_token_bitmask_inplace(
    logits: Any,
    bitmask: Any,
    *,
    vocab_size: Optional[int] = None,
    indices: Optional[Sequence[int]] = None,
) -> None:
    """Set the logits of disallowed tokens to ``-inf``, in place.

    ``logits`` is ``(batch, V)`` or ``(V,)`` (torch on any device, or NumPy);
    ``bitmask`` is ``(batch, words)`` or ``(words,)``. Tokens past ``vocab_size``
    (default: the logits width) and past the mask's width are masked off.
    ``indices`` applies mask row ``i`` to logits row ``indices[i]``.

    ``BitmaskError`` for what cannot be masked in place: logits that are not floating point
    (integers, bools), read-only NumPy arrays, leaf tensors that require grad (outside
    ``torch.no_grad()``), rows that share memory, more than two dimensions; a bitmask that is
    not int32 or cannot be read; indices or ``vocab_size`` that are not ints.

    Example:
        >>> import numpy as np
        >>> apply_token_bitmask_inplace(np.zeros((1, 40), dtype=np.int64), allocate_token_bitmask(1, 40, backend="numpy"))
        Traceback (most recent call last):
        ...
        agentgrammar.errors.BitmaskError: logits must be floating point to hold -inf, got dtype int64
    """
    vocab_size = _check_vocab_size(vocab_size)
    torch = _torch()
    if torch is not None and isinstance(logits, torch.Tensor):
        _apply_torch(torch, logits, bitmask, vocab_size, indices)
        return
    if not isinstance(logits, np.ndarray):
        raise BitmaskError(f"logits must be a torch tensor or a NumPy array, got {type(logits).__name__}")
    _check_ndim("logits", logits.ndim)
    if logits.dtype.kind != "f":  # only a real float holds -inf
        raise BitmaskError(f"logits must be floating point to hold -inf, got dtype {logits.dtype}")
    if not logits.flags.writeable:
        raise BitmaskError("logits must be writeable (masked in place), got a read-only array")
    mask = _numpy_mask(bitmask)
    rows2d = logits if logits.ndim == 2 else logits[None, :]
    mask2d = mask if mask.ndim == 2 else mask[None, :]
    rows = _rows(indices, mask2d.shape[0])
    _check_rows(rows, mask2d.shape[0], rows2d.shape[0])
    width = rows2d.shape[1]
    kind = _NUMPY_KINDS.get(rows2d.dtype.name)
    if kind is not None and rows2d.strides[1] == rows2d.itemsize and rows2d.flags.writeable:
        words = np.ascontiguousarray(mask2d)
        row0, mask0 = rows2d.__array_interface__["data"][0], words.__array_interface__["data"][0]
        _apply_native(row0, rows2d.strides[0], width, kind, mask0, words.shape[1], rows, vocab_size)
        return
    allowed = np.zeros((len(rows), width), dtype=bool)
    n = min(width, mask2d.shape[1] * 32, vocab_size if vocab_size is not None else width)
    allowed[:, :n] = _unpack(np.ascontiguousarray(mask2d[: len(rows)]), n)
    for k, r in enumerate(rows):
        rows2d[r][~allowed[k]] = -np.inf


# ag_apply_mask's element kinds (NumPy has no bfloat16 of its own).
_NUMPY_KINDS = {"float32": lib.AG_LOGITS_F32, "float16": lib.AG_LOGITS_F16, "float64": lib.AG_LOGITS_F64}


def _torch_kind(torch: Any, dtype: Any) -> Optional[int]:
    """ag_apply_mask's element kind for a torch dtype, or None where it has none."""
    if dtype is torch.float32:
        return lib.AG_LOGITS_F32  # type: ignore[no-any-return]
    if dtype is torch.bfloat16:
        return lib.AG_LOGITS_BF16  # type: ignore[no-any-return]
    if dtype is torch.float16:
        return lib.AG_LOGITS_F16  # type: ignore[no-any-return]
    if dtype is torch.float64:
        return lib.AG_LOGITS_F64  # type: ignore[no-any-return]
    return None


def _apply_native(
    row0: int,
    step: int,
    width: int,
    kind: int,
    mask0: int,
    n_words: int,
    rows: Sequence[int],
    vocab_size: Optional[int],
) -> None:
    """Mask logits rows in place in C (``ag_apply_mask``): row ``rows[k]``, ``width``
    contiguous elements of ``kind`` at address ``row0 + rows[k] * step``, by mask row ``k`` of
    the C-contiguous int32 words at address ``mask0`` (``n_words`` a row). One pass over the
    row, with no boolean row made: for a 128k vocabulary, a few times faster than unpacking
    the bits and a masked fill."""
    mask = ffi.cast("uint32_t *", mask0)
    limit = width if vocab_size is None else min(vocab_size, width)  # a size_t in C
    err = new_error()
    for k, r in enumerate(rows):
        row = ffi.cast("void *", row0 + r * step)
        status = lib.ag_apply_mask(row, kind, width, mask + k * n_words, n_words, limit, err)
        if status != lib.AG_OK:
            raise_error(status, err, BitmaskError)


def _check_vocab_size(vocab_size: Any) -> Optional[int]:
    """``vocab_size`` as an int (None stays None); BitmaskError unless a non-negative integer."""
    if vocab_size is None:
        return None
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
        raise BitmaskError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < 0:
        raise BitmaskError(f"vocab_size must be >= 0, got {vocab_size}")
    return int(vocab_size)


def _check_ndim(what: str, ndim: int) -> None:
    if ndim not in (1, 2):
        raise BitmaskError(f"{what} must be 1-D (one row) or 2-D (batch, ...), got {ndim} dimensions")


def _numpy_mask(bitmask: Any) -> np.ndarray:
    """``bitmask`` as an int32 NumPy array of 1 or 2 dimensions (any array-like: a CPU tensor
    too), else BitmaskError."""
    try:
        mask = np.asarray(bitmask)
    except Exception as e:  # a tensor on an accelerator, an object NumPy cannot read
        raise BitmaskError(f"the bitmask cannot be read as an array: {type(e).__name__}: {e}") from None
    if mask.dtype != np.int32:
        raise BitmaskError(f"bitmask dtype must be int32, got {mask.dtype}")
    _check_ndim("bitmask", mask.ndim)
    return mask


def _rows(indices: Optional[Sequence[int]], mask_rows: int) -> List[int]:
    """The logits rows to mask, as Python ints: a row number becomes an address in C, so a
    float or a bool must never pass for one."""
    if indices is None:
        return list(range(mask_rows))
    try:
        items = list(indices)
    except TypeError:
        raise BitmaskError(f"indices must be a sequence of ints, got {type(indices).__name__}") from None
    rows = []
    for r in items:
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
            raise BitmaskError(f"indices must be ints, got {r!r} ({type(r).__name__})")
        rows.append(int(r))
    return rows


def _check_rows(rows: Sequence[int], mask_rows: int, logit_rows: int) -> None:
    if len(rows) > mask_rows:
        raise BitmaskError(f"{len(rows)} rows requested but the bitmask has {mask_rows}")
    for r in rows:
        if not 0 <= r < logit_rows:
            raise BitmaskError(f"logits row {r} is out of range for batch size {logit_rows}")


def _apply_torch(torch: Any, logits: Any, bitmask: Any, vocab_size: Optional[int], indices: Any) -> None:
    if not isinstance(bitmask, torch.Tensor):
        bitmask = torch.from_numpy(_numpy_mask(bitmask))
    if bitmask.dtype != torch.int32:
        raise BitmaskError(f"bitmask dtype must be torch.int32, got {bitmask.dtype}")
    _check_ndim("bitmask", bitmask.dim())
    _check_ndim("logits", logits.dim())
    if not logits.dtype.is_floating_point:
        raise BitmaskError(f"logits must be floating point to hold -inf, got dtype {logits.dtype}")
    if logits.requires_grad and logits.is_leaf and torch.is_grad_enabled():
        # autograd refuses in-place writes to a leaf that requires grad (a non-leaf is masked
        # by the torch path, which autograd follows)
        raise BitmaskError("logits require grad: mask them under torch.no_grad() or pass logits.detach()")
    rows2d = logits if logits.dim() == 2 else logits.unsqueeze(0)
    mask2d = bitmask if bitmask.dim() == 2 else bitmask.unsqueeze(0)
    rows = _rows(indices, mask2d.shape[0])
    _check_rows(rows, mask2d.shape[0], rows2d.shape[0])
    if rows2d.shape[0] > 1 and rows2d.stride(0) == 0:
        raise BitmaskError("the logits rows share their memory (an expanded tensor): pass logits.clone()")
    width = rows2d.shape[1]
    kind = _torch_kind(torch, rows2d.dtype)
    # (is_cpu, not .device.type: this runs at every decoding step, and making the device
    # object costs microseconds)
    if (
        kind is not None
        and rows2d.is_cpu
        and mask2d.is_cpu
        and rows2d.stride(1) == 1
        and not rows2d.requires_grad
    ):
        words = mask2d if mask2d.is_contiguous() else mask2d.contiguous()
        step = rows2d.stride(0) * rows2d.element_size()
        _apply_native(
            rows2d.data_ptr(), step, width, kind, words.data_ptr(), words.shape[1], rows, vocab_size
        )
        return
    try:
        _apply_torch_fallback(torch, rows2d, mask2d, rows, width, vocab_size)
    except (RuntimeError, NotImplementedError, TypeError) as e:  # a dtype or device torch cannot fill
        raise BitmaskError(
            f"cannot mask logits of dtype {rows2d.dtype} on {rows2d.device} in place: {type(e).__name__}: {e}"
        ) from None


def _apply_torch_fallback(
    torch: Any, rows2d: Any, mask2d: Any, rows: List[int], width: int, vocab_size: Optional[int]
) -> None:
    """Mask rows with torch operations: logits that are not on the CPU, not contiguous in a row,
    or of a dtype the C path lacks."""
    n = min(width, mask2d.shape[1] * 32, vocab_size if vocab_size is not None else width)
    allowed = torch.zeros((len(rows), width), dtype=torch.bool, device=rows2d.device)
    if rows2d.device.type == "cpu" and mask2d.device.type == "cpu":
        allowed[:, :n] = torch.from_numpy(_unpack(mask2d[: len(rows)].numpy(), n))
    else:  # unpacked on the device: only the packed words travel
        mask2d = mask2d[: len(rows)].to(rows2d.device, non_blocking=True)
        shifts = torch.arange(32, device=rows2d.device, dtype=torch.int32)
        bits = (mask2d.unsqueeze(-1) >> shifts) & 1
        allowed[:, :n] = bits.reshape(len(rows), -1)[:, :n].bool()
    index = torch.as_tensor(rows, device=rows2d.device, dtype=torch.long)
    sub = rows2d.index_select(0, index)
    sub.masked_fill_(~allowed, float("-inf"))
    rows2d.index_copy_(0, index, sub)
