"""IR pieces: subtrees that front-ends reuse, request after request, as the same objects.

A structural tag's call of one tool converts to the same expression object in every request
that offers the tool (``structural_tag`` keeps it). Marking such an expression as a *piece*
lets each stage that walks a grammar do its work on it once and remember the result here:
validation (the rules it references), normalization (whether it stays as it is), the grammars
it embeds, and serialization (its nodes, with holes for the rule indices that depend on the
grammar it is written into). A request then walks its own few nodes and looks its pieces up.

The results depend only on the piece itself, never on the grammar around it, so the output of
every stage is the same with or without them (``tests/grammar/test_pieces.py``). Pieces are
kept by identity in a bounded memo (``memo.clear_memos`` empties it).

Example:
    >>> from agentgrammar.grammar.ir import Literal, Seq
    >>> e = Seq((Literal(b"a"), Literal(b"b")))
    >>> info(e) is None, mark(e) is e, info(e) is not None
    (True, True, True)
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .memo import IdentityMemo

__all__ = ["PieceInfo", "info", "mark"]


class PieceInfo:
    """What the stages derived from one piece, each filled the first time it is needed:
    ``refs`` (the rule names it references, after validation), ``unchanged`` (normalization
    leaves it as it is), ``embeds`` (the grammars it embeds, in order) and ``chunk`` (its
    serialized nodes, ``serialize._Chunk``)."""

    __slots__ = ("chunk", "embeds", "refs", "unchanged")

    def __init__(self) -> None:
        self.refs: Optional[Tuple[str, ...]] = None
        self.unchanged: Optional[bool] = None
        self.embeds: Optional[Tuple[Any, ...]] = None
        self.chunk: Any = None


_PIECES: "IdentityMemo[PieceInfo]" = IdentityMemo("IR pieces", limit=32768)

#: Look up the piece information of an expression (None when it is not a piece).
info = _PIECES.get


def mark(e: Any) -> Any:
    """Mark expression ``e`` as a piece (it must never change: IR is immutable); returns it."""
    if _PIECES.get(e) is None:
        _PIECES.put(e, PieceInfo())
    return e
