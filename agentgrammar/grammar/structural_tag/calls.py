"""Calls of known tools inside a request's tags: their IR kept per tag, and the tail their
begins share moved into a part per tool (``_share_tails``), so a request builds only the heads.

Example:
    >>> _in_begin_order([])
    []
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Tuple

from .. import memo, pieces
from ..grammar import Grammar
from ..ir import Choice, Embed, Expr, Literal, Seq
from . import models as st


def _group(e: Optional[Expr], infos: Optional[List[Optional[pieces.PieceInfo]]] = None) -> Optional[Expr]:
    """A choice of tags, as a ``pieces.group`` when its items are pieces (calls of known tools);
    ``infos``: the items' piece information, when at hand."""
    return pieces.group(e, infos) if type(e) is Choice else e


def _in_begin_order(tags: Sequence[st.Tag]) -> List[int]:
    """The indices of ``tags`` by their begins (stable): the order of a choice's alternatives
    changes nothing it accepts, so the same tools offered in another order (a registry's
    subset, tools listed from a set) make the same grammar, and the Compiler hands back the
    one it compiled, token-mask caches warm."""
    return sorted(range(len(tags)), key=lambda i: tags[i].begin)


def _first_start(text: str, starts: Sequence[str]) -> Optional[str]:
    """The first of ``starts`` that ``text`` starts with, or None."""
    for t in starts:
        if text.startswith(t):
            return t
    return None


# The expressions of tags that made no rule (``_Builder.tag_after``), each with its
# ``_call_shape`` (whose ``split`` keeps the call's split forms): tag -> {opened -> (IR, shape)}.
_TAG_IR: "memo.IdentityMemo[Dict[str, Tuple[Expr, Optional[_Split]]]]" = memo.IdentityMemo(
    "tag IR", limit=16384
)
# ``_share_tails``: an argument grammar -> {(tail, end) -> the part of a call's tail}.
_TAIL_PARTS: "memo.IdentityMemo[Dict[Tuple[bytes, bytes], Grammar]]" = memo.IdentityMemo(
    "tail parts", limit=16384
)


class _Split:
    """A call piece ``begin Embed(args) end`` (``_share_tails``): its parts, its begin
    reversed (for the common tail), and its split form per tail."""

    __slots__ = ("args", "begin", "end", "nigeb", "split")

    def __init__(self, begin: bytes, args: Grammar, end: bytes) -> None:
        self.begin, self.args, self.end, self.nigeb = begin, args, end, begin[::-1]
        self.split: Dict[bytes, Tuple[Expr, Optional[pieces.PieceInfo]]] = {}  # tail -> (piece, its info)


def _call_shape(e: Expr) -> Optional[_Split]:
    """A new ``_Split`` of a call piece ``begin Embed(arguments) end``, else None (kept with
    the tag's IR in ``_TAG_IR``)."""
    items = e.items if type(e) is Seq else ()  # type: ignore[union-attr]
    if not 2 <= len(items) <= 3 or type(items[0]) is not Literal or type(items[1]) is not Embed:
        return None
    if len(items) == 3 and type(items[2]) is not Literal:
        return None
    end = items[2].value if len(items) == 3 else b""
    return _Split(items[0].value, items[1].grammar, end)  # type: ignore[union-attr]


def _share_tails(
    alts: List[Optional[Expr]], shapes: List[Optional[_Split]]
) -> Tuple[List[Optional[Expr]], Optional[List[Optional[pieces.PieceInfo]]]]:
    """The alternatives of one trigger's tags, with what follows their distinct heads moved
    into a part per call: ``head tail Embed(args) end`` becomes ``head Embed(P)``, P the grammar
    ``tail args end`` (``Grammar._around``: the arguments' rules and a root around them, one
    grammar to compile, not two), where ``tail`` is the end that every call's begin shares (for
    Hermes calls, ``", "arguments": ``). The language is the same; the request's own
    automaton keeps only the heads (the tool names), which is what a request must build, and
    P, the same in every request offering the tool, is compiled once like the arguments.
    Also returns the piece information of each alternative when every one was split (None
    otherwise), kept with the split form so that ``pieces.group`` need not look it up.
    ``shapes``: the ``_call_shape`` of each alternative (None where it is not a call); the
    calls are not pieces yet: those left whole are marked here."""
    calls = [s for s in shapes if s is not None]
    if len(calls) < 2:
        return _marked(alts, shapes), None
    tail = os.path.commonprefix([c.nigeb for c in calls])[::-1]  # noqa: RUF071 (bytes, byte by byte)
    keep = min(len(tail), min([len(c.begin) for c in calls]) - 1)  # every head keeps a byte
    tail = tail[len(tail) - keep :] if keep > 0 else b""
    if not tail:
        return _marked(alts, shapes), None
    # The split forms made before, in one pass (a request's hundreds of calls of known tools).
    found = [None if s is None else s.split.get(tail) for s in shapes]
    for j, shape in enumerate(shapes):
        if shape is not None and found[j] is None:
            found[j] = _split(shape, tail)
    if len(calls) < len(shapes):  # calls among other alternatives: those stay as they are
        return [a if f is None else f[0] for a, f in zip(alts, found)], None
    return [f[0] for f in found], [f[1] for f in found]  # type: ignore[index]


def _marked(alts: List[Optional[Expr]], shapes: List[Optional[_Split]]) -> List[Optional[Expr]]:
    """``alts`` with each call (a ``shape``) marked as a piece: calls left whole reach the
    grammar as they are (``calls_after`` hands them over unmarked)."""
    for a, s in zip(alts, shapes):
        if s is not None:
            pieces.mark(a)
    return alts


def _split(shape: _Split, tail: bytes) -> Tuple[Expr, Optional[pieces.PieceInfo]]:
    """``shape``'s call as its head then its tail part (``_share_tails``), kept per tail."""
    parts = _TAIL_PARTS.get(shape.args) or _TAIL_PARTS.put(shape.args, {})
    part = parts.get((tail, shape.end))
    if part is None:
        part = parts[(tail, shape.end)] = shape.args._around(tail, shape.end)
    head = Literal(shape.begin[: len(shape.begin) - len(tail)])
    # What validation, normalization and the parts' walk would find of it, known here: it is
    # built of a literal of bytes and an embedded Grammar, so it references no rule, has no
    # repeat to normalize and embeds the part alone (a cold request's calls walked for each).
    info = pieces.PieceInfo()
    info.refs, info.unchanged, info.embeds = (), True, (part,)
    piece = pieces.mark(Seq((head, Embed(part))), info)  # a new object: ``info`` is its information
    found = shape.split[tail] = (piece, info)
    return found
