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

A request's choice of hundreds of pieces (one call per tool) is new in every request, but what
each stage needs of it is what it needs of the pieces: ``group`` gathers that from the pieces'
information once, so no stage walks the choice item by item again.

Example:
    >>> from agentgrammar.grammar.ir import Literal, Seq
    >>> e = Seq((Literal(b"a"), Literal(b"b")))
    >>> info(e) is None, mark(e) is e, info(e) is not None
    (True, True, True)
"""

from __future__ import annotations

import weakref
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from .memo import IdentityMemo

__all__ = ["GROUPS_KEPT", "PieceInfo", "group", "info", "mark"]


class PieceInfo:
    """What the stages derived from one piece, each filled the first time it is needed:
    ``refs`` (the rule names it references, after validation), ``productive`` (it derives some
    finite string whatever the rules it references derive), ``unchanged`` (normalization
    leaves it as it is), ``embeds`` (the grammars it embeds, in order) and ``chunk`` (its
    serialized nodes, ``serialize._Chunk``), ``word`` (its entry in a group's SWITCH node, or
    False when it is not a literal then an embedded grammar). ``group``: for a choice of pieces
    made by ``group``, its items' information, from which the serializer writes it (it has no
    chunk of its own); None for any other piece."""

    __slots__ = ("chunk", "embeds", "group", "productive", "refs", "unchanged", "word")

    def __init__(self, group: Optional[Tuple["PieceInfo", ...]] = None) -> None:
        self.refs: Optional[Tuple[str, ...]] = None
        self.productive: Optional[bool] = None
        self.unchanged: Optional[bool] = None
        self.embeds: Optional[Tuple[Any, ...]] = None
        self.chunk: Any = None
        self.word: Any = None
        self.group = group


_PIECES: "IdentityMemo[PieceInfo]" = IdentityMemo("IR pieces", limit=32768)

#: Look up the piece information of an expression (None when it is not a piece).
info = _PIECES.get


def mark(e: Any, found: Optional[PieceInfo] = None) -> Any:
    """Mark expression ``e`` as a piece (it must never change: IR is immutable); returns it.
    ``found``: its information from before (a constant piece that its owner keeps, marked
    again after ``memo.clear_memos``), so that no stage works it out again."""
    if _PIECES.get(e) is None:
        _PIECES.put(e, found if found is not None else PieceInfo())
    return e


#: How many ``group`` choices stay pieces: they are made per request and matter only while the
#: request's grammar is built, so older ones are dropped rather than crowding out the pieces.
GROUPS_KEPT = 16
# The latest groups, weakly: after ``memo.clear_memos`` nothing here keeps them (and every piece
# and grammar they reach) alive.
_GROUPS: "Deque[weakref.ref[Any]]" = deque()


def group(e: Any, infos: Optional[Sequence[Optional[PieceInfo]]] = None) -> Any:
    """Mark choice ``e``, whose items are all pieces, as a group: a piece whose references,
    normalization and embedded grammars are gathered from its items' (those the stages have
    worked out already; the rest each stage works out as for any piece). ``infos``: the items'
    information when the caller has it at hand (``info`` of each item). Returns ``e``; a choice
    with an item that is not a piece stays as it is.

    Example:
        >>> from agentgrammar.grammar.ir import Choice, Literal, Seq
        >>> a, b = mark(Seq((Literal(b"a"), Literal(b"1")))), mark(Seq((Literal(b"b"), Literal(b"2"))))
        >>> len(info(group(Choice((a, b)))).group), info(group(Choice((a, Literal(b"c"))))) is None
        (2, True)
    """
    if infos is None:
        get = _PIECES.get
        infos = [get(x) for x in e.items]
    refs: Optional[List[str]] = []
    embeds: Optional[Dict[int, Any]] = {}
    unchanged = True
    for i in infos:  # one pass: a request's calls are hundreds of objects, each touched once
        if i is None:
            return e
        if refs is not None:
            if i.refs is None:
                refs = None
            elif i.refs:
                refs.extend(i.refs)
        if embeds is not None:
            if i.embeds is None:
                embeds = None
            else:
                for g in i.embeds:
                    embeds.setdefault(id(g), g)
        unchanged = unchanged and i.unchanged is True
    found = PieceInfo(group=tuple(infos))  # type: ignore[arg-type]
    found.refs = None if refs is None else tuple(refs)
    found.unchanged = True if unchanged else None
    found.embeds = None if embeds is None else tuple(embeds.values())
    _PIECES.put(e, found)
    _GROUPS.append(weakref.ref(e))
    while len(_GROUPS) > GROUPS_KEPT:
        old = _GROUPS.popleft()()
        if old is not None:
            _PIECES.discard(old)
    return e
