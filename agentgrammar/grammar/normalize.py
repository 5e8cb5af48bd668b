"""Normalization of grammar IR for the C core: the item of a counted repeat that is copied
becomes a rule of its own, so unrolling copies one reference, not a subtree.

Example:
    >>> from agentgrammar.grammar.ir import Rule, Literal, Repeat
    >>> [r.name for r in normalize_rules([Rule("root", Repeat(Literal(b"ab"), 2, 3))])]
    ['root']
"""

from __future__ import annotations

from operator import is_
from typing import AbstractSet, Dict, Iterable, List, Optional

from . import pieces
from .ir import (
    ByteClass,
    CharClass,
    Choice,
    CountedText,
    Embed,
    Expr,
    KeyTrie,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
)

__all__ = ["normalize_rules"]


#: The node types that are one edge (normalization leaves them as they are), for a lookup by
#: exact type before ``is_single_edge`` (which takes their subclasses too).
SINGLE_EDGE_TYPES = frozenset((Literal, CharClass, ByteClass, RuleRef, Embed))
_SINGLE_EDGE_CLASSES = tuple(SINGLE_EDGE_TYPES)


def is_single_edge(e: Expr) -> bool:
    return isinstance(e, _SINGLE_EDGE_CLASSES)


def copies(lo: int, hi: Optional[int]) -> bool:
    """Whether a repeat of ``lo..hi`` (None: unbounded) may copy its item: a bound above 1.
    Normalization makes such an item a rule of its own unless it is one edge."""
    return lo > 1 or (hi is not None and hi > 1)


def hoists(e: Repeat) -> bool:
    """Whether ``normalize_rules`` makes the item of ``e`` a rule of its own."""
    return copies(e.min, e.max) and type(e.item) not in SINGLE_EDGE_TYPES and not is_single_edge(e.item)


def normal_already(e: Expr, use_pieces: bool = False) -> bool:
    """Whether ``normalize_rules`` leaves ``e`` as it is: no counted repeat in it copies an
    item of more than one edge. With ``use_pieces``, a piece inside ``e`` is answered for
    once (``PieceInfo.unchanged``) and then looked up."""
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Seq or t is Choice:
            piece = pieces.info(x) if use_pieces and x is not e else None
            if piece is None:
                stack.extend(x.items)  # type: ignore[union-attr]
                continue
            if not piece_unchanged(piece, x):
                return False
        elif isinstance(x, Repeat):
            if hoists(x):
                return False
            stack.append(x.item)
        elif t is CountedText:  # counted by the core whole: only what is inside may change
            stack.extend((x.body, x.char))  # type: ignore[union-attr]
    return True


def piece_unchanged(piece: pieces.PieceInfo, e: Expr) -> bool:
    """``normal_already`` of piece ``e``, worked out once (``PieceInfo.unchanged``)."""
    if piece.unchanged is None:
        piece.unchanged = normal_already(e, True)
    return piece.unchanged


def _body_normal_already(body: Expr, use_pieces: bool) -> bool:
    """``normal_already`` of a rule's body; a body that is a piece is answered for once,
    pieces looked up or not inside."""
    piece = pieces.info(body) if type(body) is Seq or type(body) is Choice else None
    return normal_already(body, use_pieces) if piece is None else piece_unchanged(piece, body)


def normalize_rules(
    rules: Iterable[Rule], use_pieces: bool = True, changing: Optional[AbstractSet[str]] = None
) -> List[Rule]:
    """Prepare rules for the C core: the item of a counted repeat that may be copied (a bound
    above 1) becomes a rule of its own when it is more than one edge, so that unrolling copies
    one rule reference per repetition instead of a whole subtree. Aux rules are named
    ``<rule>_repeat_<n>`` and appended after the existing rules. ``use_pieces``: look pieces
    up (``pieces.mark``) to work on each once; the output is the same without. ``changing``:
    the names of exactly the rules that are not normal already (``validate._validate`` found
    them), so that the others are kept without a scan; None: each rule is scanned.

    Example:
        >>> from agentgrammar.grammar.ir import Rule, Seq, Literal, Repeat
        >>> for r in normalize_rules([Rule("root", Repeat(Seq((Literal(b"a"), Literal(b"b"))), 2, 3))]):
        ...     print(r)
        Rule(name='root', body=Repeat(item=RuleRef(name='root_repeat_1'), min=2, max=3))
        Rule(name='root_repeat_1', body=Seq(items=(Literal(value=b'a'), Literal(value=b'b'))))
    """
    rules = list(rules)
    taken = {r.name for r in rules}
    extra: List[Rule] = []

    def fresh(base: str, counter: List[int]) -> str:
        while True:
            counter[0] += 1
            name = f"{base}_repeat_{counter[0]}"
            if name not in taken:
                taken.add(name)
                return name

    done: Dict[int, Expr] = {}  # by identity: front-ends share subtrees, walk each once
    # the rule each hoisted item became, by the identity of the item (kept alive by `extra`):
    # an item that several repeats copy, such as the blocks of a pattern's long repeat split
    # (``json_values.repeat``), is one rule, so its automaton is built and its masks are
    # classified once, and its parallel parses meet in the same Earley items
    hoisted: Dict[int, str] = {}
    piece_info = pieces.info

    def walk(e: Expr, base: str, counter: List[int]) -> Expr:
        found = done.get(id(e))
        if found is None:
            piece = piece_info(e) if use_pieces and type(e) in (Seq, Choice) else None
            if piece is not None:
                if piece_unchanged(piece, e):
                    return e
            found = done[id(e)] = rewrite(e, base, counter)
        return found

    def rewrite(e: Expr, base: str, counter: List[int]) -> Expr:
        if type(e) is KeyTrie:  # its parts are single edges and a star: nothing to hoist
            return e
        if isinstance(e, (Seq, Choice)):
            old = e.items
            # a leaf (most items) stays as it is: not walked
            items = tuple([x if type(x) in SINGLE_EDGE_TYPES else walk(x, base, counter) for x in old])
            # unchanged subtrees stay the same objects, so the serializer writes them once
            return e if all(map(is_, items, old)) else type(e)(items)
        if isinstance(e, Repeat):
            item = e.item
            if type(item) not in SINGLE_EDGE_TYPES:
                item = walk(item, base, counter)
            if copies(e.min, e.max) and not is_single_edge(item):
                name = hoisted.get(id(item))
                if name is None:
                    name = hoisted[id(item)] = fresh(base, counter)
                    extra.append(Rule(name, item))
                item = RuleRef(name)
            return e if item is e.item else Repeat(item, e.min, e.max)
        if type(e) is CountedText:
            body, char = walk(e.body, base, counter), walk(e.char, base, counter)
            return e if body is e.body and char is e.char else CountedText(body, char, e.min, e.max)
        return e

    out = []
    for r in rules:  # most bodies need nothing: one cheap scan tells, and the rule stays as it is
        if changing is None:
            normal = _body_normal_already(r.body, use_pieces)
        else:
            normal = r.name not in changing
        body = r.body if normal else walk(r.body, r.name, [0])
        out.append(r if body is r.body else Rule(r.name, body))
    return out + extra
