"""Keys that spell none of a set of names (an object's undeclared members): a trie of the
names, every spelling of their characters excluded."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import (
    Any,
    Dict,
    FrozenSet,
    List,
    Tuple,
)

from ..ir import (
    CharClass,
    Choice,
    Expr,
    Literal,
    Seq,
    seq,
)
from ..utf8 import cut_points
from .lexical import _DQ, _RAW_RANGES, _char_is, _char_not_in


class _Trie:
    __slots__ = ("children", "end")

    def __init__(self) -> None:
        self.children: Dict[str, "_Trie"] = {}
        self.end = False


#: Printable ASCII that ``json.dumps`` never escapes (all but ``"``, ``\\`` and ``/``, which
#: have short escapes): key names made of these get a compact exclusion grammar.
_PLAIN_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\", "/"}

#: A non-empty name made of ``_PLAIN_ASCII`` only (one match, not a set of its characters).
PLAIN_NAME = re.compile(r"[\x20\x21\x23-\x2e\x30-\x5b\x5d-\x7e]+")


_ASCII_LITERALS = {c: Literal(c.encode()) for c in _PLAIN_ASCII}


@lru_cache(maxsize=4096)
def _other_char(kids: FrozenSet[str], plain_escape: Expr) -> Expr:
    """One JSON string character (any spelling) that decodes to none of ``kids``."""
    if kids <= _PLAIN_ASCII:
        return Choice((CharClass(tuple(cut_points(_RAW_RANGES, [ord(c) for c in kids]))), plain_escape))
    return _char_not_in(kids)


@lru_cache(maxsize=1024)
def _key_not_in(names: Tuple[str, ...], tail: Expr, plain_escape: Expr, any_char: Expr) -> Expr:
    """A JSON string (quotes included) whose decoded value is none of ``names``.

    ``tail`` is the rest of any string (characters, closing quote), ``any_char`` any string
    character, ``plain_escape`` an escape that spells no printable ASCII character. Keys are followed along
    a trie of the names; a key is accepted once it ends off a name or leaves the trie with a
    character that no name continues with (every spelling of the excluded characters is
    excluded). For names of printable ASCII (the usual case) the characters of a name are
    matched raw and ``\\u`` escapes of printable ASCII are not generated where a key could
    still spell a name: an under-approximation (``json.dumps`` never writes those).

    The converter builds this IR only for names that need escapes; for the usual names an
    ``ir.KeyTrie`` node stands for the same trie (its ``items``), written as one node of the names.
    """
    root = _Trie()
    for n in names:
        node = root
        for c in n:
            node = node.children.setdefault(c, _Trie())
        node.end = True

    def walk(node: _Trie) -> Expr:
        kids = [(c, walk(child)) for c, child in node.children.items()]
        # Hash-consed: the subtrie of a name's tail is one object in every set of names that
        # holds the name, and what walks the rules by identity (serializing, normalizing)
        # walks it once, not once per object: 163 sets of names in one schema make 24,000
        # trie nodes, but only a few thousand distinct subtries.
        key = (node.end, tail, plain_escape, any_char, tuple((c, id(e)) for c, e in kids))
        found = _TRIE_EXPRS.get(key)
        if found is not None:
            return found[0]
        alts: List[Expr] = [_DQ] if not node.end else []
        other = _other_char(frozenset(node.children), plain_escape) if node.children else any_char
        alts.append(Seq((other, tail)))
        for c, rest in kids:
            head = _ASCII_LITERALS[c] if c in _PLAIN_ASCII else _char_is(c)
            alts.append(Seq((head, *rest.items)) if type(rest) is Seq else Seq((head, rest)))
        expr = alts[0] if len(alts) == 1 else Choice(tuple(alts))
        if len(_TRIE_EXPRS) >= _TRIE_EXPRS_MAX:
            _TRIE_EXPRS.clear()
        _TRIE_EXPRS[key] = (expr, kids)  # the kids too: their ids in the key stay theirs
        return expr

    return seq([_DQ, walk(root)])


#: Subtries of ``_key_not_in`` by their structure (children by identity), shared by all
#: conversions; cleared when full. The same key always means the same expression, so what a
#: conversion returns never depends on what was converted before.
_TRIE_EXPRS: Dict[Tuple[Any, ...], Tuple[Expr, List[Tuple[str, Expr]]]] = {}


_TRIE_EXPRS_MAX = 1 << 16
