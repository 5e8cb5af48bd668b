"""Lowering Unicode code-point ranges to UTF-8 byte-range sequences.

The C core works on bytes. A character class such as ``[α-ω]`` becomes a choice of
byte-range sequences, each sequence a product of per-position byte ranges, e.g.
``[\\xCE][\\xB1-\\xBF] | [\\xCF][\\x80-\\x89]``.

Example:
    >>> utf8_sequences(0x41, 0x42)
    [((65, 66),)]
"""

from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

#: The largest Unicode code point.
MAX_CODE_POINT = 0x10FFFF

ByteRange = Tuple[int, int]
ByteSeq = Tuple[ByteRange, ...]

# The last code point of each UTF-8 encoded length: 1, 2, 3 and 4 bytes.
_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF, MAX_CODE_POINT)


def normalize_ranges(ranges: Iterable[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """Sort and merge overlapping or adjacent ranges; drop empty ones."""
    out: List[Tuple[int, int]] = []
    top = -2  # the end of out[-1]
    for lo, hi in sorted(ranges):  # (an empty range sorts where it may, and is dropped)
        if lo > hi:
            continue
        if out and lo <= top + 1:
            if hi > top:
                top = hi
                out[-1] = (out[-1][0], hi)
        else:
            top = hi
            out.append((lo, hi))
    return out


def complement_ranges(ranges: Sequence[Tuple[int, int]], top: int = MAX_CODE_POINT) -> List[Tuple[int, int]]:
    """The ranges of ``[0, top]`` not covered by ``ranges``."""
    out: List[Tuple[int, int]] = []
    nxt = 0
    for lo, hi in normalize_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= top:
        out.append((nxt, top))
    return out


def cut_points(ranges: Sequence[Tuple[int, int]], points: Iterable[int]) -> List[Tuple[int, int]]:
    """Normalized ``ranges`` without the code points ``points``: one pass over both, sorted.

    Example:
        >>> cut_points([(0x61, 0x7A)], [0x61, 0x63])
        [(98, 98), (100, 122)]
    """
    out: List[Tuple[int, int]] = []
    pts = sorted(set(points))
    i, n = 0, len(pts)
    for lo, hi in ranges:
        while i < n and pts[i] < lo:
            i += 1
        while i < n and pts[i] <= hi:
            if lo < pts[i]:
                out.append((lo, pts[i] - 1))
            lo = pts[i] + 1
            i += 1
        if lo <= hi:
            out.append((lo, hi))
    return out


def _encode(cp: int) -> bytes:
    # surrogatepass: a class may legitimately name surrogate code points.
    return chr(cp).encode("utf-8", "surrogatepass")


def _split_same_length(lo: int, hi: int, out: List[ByteSeq]) -> None:
    """Append byte sequences for [lo, hi], both of the same UTF-8 length."""
    a, b = _encode(lo), _encode(hi)
    n = len(a)
    if n == 1:
        out.append(((a[0], b[0]),))
        return
    # Find the first position where the encodings differ.
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    if i == n:
        out.append(tuple((x, x) for x in a))
        return
    # If the tails of lo and hi span the whole continuation range, one product suffices.
    if all(x == 0x80 for x in a[i + 1 :]) and all(x == 0xBF for x in b[i + 1 :]):
        seq = tuple((x, x) for x in a[:i]) + ((a[i], b[i]),) + ((0x80, 0xBF),) * (n - i - 1)
        out.append(seq)
        return
    # Otherwise split at the boundary of the differing position's continuation block.
    shift = 6 * (n - i - 1)
    block = (1 << shift) - 1
    if lo & block:
        mid = lo | block
        _split_same_length(lo, mid, out)
        if mid + 1 <= hi:
            _split_same_length(mid + 1, hi, out)
        return
    if (hi & block) != block:
        mid = (hi & ~block) - 1
        _split_same_length(lo, mid, out)
        _split_same_length(mid + 1, hi, out)
        return
    raise AssertionError("unreachable: aligned range handled above")


def utf8_sequences(lo: int, hi: int) -> List[ByteSeq]:
    """Byte-range sequences whose union is exactly the UTF-8 encodings of [lo, hi]."""
    out: List[ByteSeq] = []
    start = lo
    for limit in _LENGTH_LIMITS:
        if start > hi:
            break
        if start <= limit:
            end = min(hi, limit)
            _split_same_length(start, end, out)
            start = end + 1
    return out


def class_to_sequences(ranges: Sequence[Tuple[int, int]], negated: bool) -> List[ByteSeq]:
    """All byte-range sequences for a (possibly negated) code-point class."""
    cps = complement_ranges(ranges) if negated else normalize_ranges(ranges)
    out: List[ByteSeq] = []
    for lo, hi in cps:
        out.extend(utf8_sequences(lo, hi))
    return _merge_first_byte(out)


def _merge_first_byte(seqs: List[ByteSeq]) -> List[ByteSeq]:
    """Merge adjacent single-byte ranges into one (``[a-c]`` stays one range)."""
    singles = normalize_ranges(s[0] for s in seqs if len(s) == 1)
    multi = [s for s in seqs if len(s) > 1]
    return [((lo, hi),) for lo, hi in singles] + multi
