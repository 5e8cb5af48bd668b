"""Serialize grammar IR into the compact int32 buffer that the C core loads.

Layout (all little-endian int32 words)::

    MAGIC, VERSION, n_rules, root, n_nodes, n_data,
    body[n_rules]          node index of each rule's body
    offset[n_nodes]        start of each node in data
    data[n_data]           the nodes, each [kind, ...payload]

Node kinds and payloads::

    1 LITERAL   len, byte * len
    2 BYTES     n_ranges, (lo, hi) * n_ranges       one byte from the ranges
    3 SEQ       n, child * n
    4 CHOICE    n, child * n
    5 RULEREF   rule index
    6 REPEAT    child, min, max (-1 = unbounded)
    7 DISPATCH  flags, n_words, (rule, len, byte * len) * n_words
                flags: 1 loop after dispatch, 2 may end in free text (stop_eos);
                rule: the rule a trigger opens, -1 a stop string, -2 an exclude
    8 SWITCH    n, (rule, len, byte * len) * n     one of the words (non-empty), then its rule:
                a choice of ``Seq((Literal, Embed))`` pieces (``pieces.group``) in one node
    9 KEYTRIE   tail, other, any_char, n_ranges, (lo, hi) * n_ranges, n_names, (len, byte * len) * n_names
                a ``KeyTrie``: the raw ASCII ranges of its ``raw`` class, ``other`` its wide
                characters or ``escape``; the names sorted
   10 COUNTED_TEXT body, char, min, max (-1 = unbounded)
                a ``CountedText``: body's strings of min..max copies of char

A rule index at or past n_rules names a rule of a linked part (see ``Embed``).

Children always have a smaller node index than their parent (post-order), so the
C loader can check the node graph is acyclic with one comparison per edge.
Character classes are lowered to UTF-8 byte sequences here.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

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
    TagDispatch,
)
from .normalize import hoists, piece_unchanged
from .utf8 import class_to_sequences, complement_ranges, normalize_ranges

MAGIC = 0x52494741  # "AGIR"
VERSION = 1

KIND_LITERAL = 1
KIND_BYTES = 2
KIND_SEQ = 3
KIND_CHOICE = 4
KIND_RULEREF = 5
KIND_REPEAT = 6
KIND_DISPATCH = 7
KIND_SWITCH = 8
KIND_KEYTRIE = 9
KIND_COUNTED_TEXT = 10

DISPATCH_LOOP = 1
DISPATCH_END_IN_TEXT = 2
DISPATCH_STOP = -1
DISPATCH_EXCLUDE = -2


class _CopiedItem(Exception):
    """Raised by a writer that stops at a counted repeat whose item normalization makes a rule."""


class _Writer:
    def __init__(
        self,
        rule_index: Dict[str, int],
        embed_index: Optional[Callable[[Any], int]] = None,
        *,
        class_chunks: bool = True,
        use_pieces: bool = True,
        stop_at_copied: bool = False,
    ) -> None:
        self.rule_index = rule_index
        self.embed_index = embed_index
        self.offsets: List[int] = []
        # the node words, packed once at the end (serialize): a list takes a node's words
        # several times faster than an int32 array, which converts each one on the way in
        self.data: List[int] = []
        self._memo: Dict[Tuple[int, ...], int] = {}
        # the nodes of references and literals, by rule name and by bytes (most of the items
        # written, and a bytes object keeps its hash): found without building their words
        self._refs: Dict[str, int] = {}
        self._literals: Dict[bytes, int] = {}
        self._by_id: Dict[int, int] = {}  # the rules keep every node alive while they are written
        self._class_chunks = class_chunks  # character classes copied from their chunk (_class_chunk)
        # a class split or chunk written already, by identity -> (it, kept alive so that its
        # identity is not reused while this writer runs; its root)
        self._copied: Dict[int, Tuple[Any, int]] = {}
        self._use_pieces = use_pieces
        self._copied_prefix = 0  # the nodes written so far, while every one was copied from a chunk
        # stop (_CopiedItem) at a counted repeat that copies an item of more than one edge, or
        # a piece written whole that holds one: normalize_rules would change the rule. Told
        # where pieces are not looked up inside rule bodies, whose walk meets every other node
        self._stop_at_copied = stop_at_copied

    def _add(self, key: Tuple[int, ...]) -> int:
        """The index of the node of words ``key``, appended unless an equal node was written."""
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = len(self.offsets)
            self.offsets.append(len(self.data))
            self.data += key
        return found

    def byte_seq(self, seq: Sequence[Tuple[int, int]]) -> int:
        parts = [self._add((KIND_BYTES, 1, lo, hi)) for lo, hi in seq]
        return parts[0] if len(parts) == 1 else self._add((KIND_SEQ, len(parts), *parts))

    def expr(self, e: Expr) -> int:
        """The node of ``e``; a subtree object that several rules share is written once, and
        a piece (``pieces.mark``) is copied from its chunk, serialized once."""
        found = self._by_id.get(id(e))
        return found if found is not None else self._write(e)

    def _write(self, e: Expr) -> int:
        """``expr`` of an object not written yet: its node, then kept by identity."""
        t = type(e)
        # sequences and choices, most nodes, by exact type here; other types by _WRITE, and a
        # subclass (KeyTrie) by _WRITE or the isinstance chain of _expr
        if t is Seq or t is Choice:
            piece = pieces.info(e) if self._use_pieces else None
            if piece is None:
                found = self._items(e.items, KIND_SEQ if t is Seq else KIND_CHOICE)  # type: ignore[union-attr]
            else:
                found = self._from_piece(e, piece)
        else:
            write = _WRITE.get(t)
            found = write(self, e) if write is not None else self._expr(e)
        self._by_id[id(e)] = found
        return found

    def rule_body(self, e: Expr) -> int:
        """The node of a rule's body: a piece is copied from its chunk whether or not pieces
        are looked up inside (a converter's shared helper rules are whole-body pieces)."""
        if not self._use_pieces and (type(e) is Seq or type(e) is Choice):
            piece = pieces.info(e)
            if piece is not None:
                if self._stop_at_copied and not piece_unchanged(piece, e):
                    raise _CopiedItem
                found = self._by_id[id(e)] = self._from_piece(e, piece)
                return found
        found = self._by_id.get(id(e))  # expr, inlined
        return found if found is not None else self._write(e)

    def _from_piece(self, e: Expr, piece: pieces.PieceInfo) -> int:
        """Piece ``e``'s nodes, copied from its chunk (serialized on first use); a group
        (``pieces.group``) is written from its items' information (``_switch``)."""
        if piece.group is not None:
            return self._switch(e, piece.group)
        if piece.chunk is None:
            piece.chunk = _Chunk(e)
        return self._copy(piece.chunk)

    def _copy(self, chunk: "_Chunk") -> int:
        """Append ``chunk``'s nodes, its holes filled for these rules; the index of its root."""
        base, at = len(self.offsets), len(self.data)
        # a place is kept only where every node so far was copied from a chunk (a JSON
        # grammar's helper rules, written first): a request's tool pieces land anywhere
        in_prefix = base == self._copied_prefix
        if in_prefix:
            self._copied_prefix += len(chunk.offsets)
        placed = chunk.placed
        if placed is None or placed[0] != base or placed[1] != at:
            words = chunk.words[:]
            for p in chunk.child_pos:
                words[p] += base
            placed = (base, at, words, [o + at for o in chunk.offsets])
            if in_prefix:
                chunk.placed = placed
        data = self.data
        data += placed[2]
        self.offsets += placed[3]
        symbols = chunk.symbols
        if len(symbols) == 1:  # the usual piece: a call, one embedded grammar
            is_embed, key = symbols[0]
            value = self._embed(key) if is_embed else self.rule_index[key]
            for p, _ in chunk.symbol_pos:
                data[at + p] = value
        elif symbols:
            values = [self._embed(key) if is_embed else self.rule_index[key] for is_embed, key in symbols]
            for p, sym in chunk.symbol_pos:
                data[at + p] = values[sym]
        return base + chunk.root

    def _switch(self, e: Any, items: Sequence[pieces.PieceInfo]) -> int:
        """Group ``e`` (``pieces.group``; ``items``, its items' information): one SWITCH node
        when every item is a literal then an embedded grammar (a request's calls, one per
        tool), else its items one by one."""
        words = [KIND_SWITCH, len(items)]
        embed = self.embed_index
        if embed is None:
            return self._expr(e)  # its embeds need the index: _embed says so
        for x, piece in zip(e.items, items):
            word = piece.word
            if word is None:
                word = piece.word = _switch_word(x)
            if not word:
                return self._expr(e)
            words.append(embed(word[1]))
            words += word[0]
        idx = len(self.offsets)
        self.offsets.append(len(self.data))
        self.data += words
        return idx

    def _embed(self, grammar: Any) -> int:
        if self.embed_index is None:
            raise TypeError("an Embed needs the index of its part's root (serialize(..., embed_index=))")
        return self.embed_index(grammar)

    def _items(self, items: Sequence[Expr], kind: int) -> int:
        """The node of a sequence (``kind`` KIND_SEQ) or choice (KIND_CHOICE) of ``items``; one
        item is that item's node. References and literals, most of the items, are written
        here: their nodes are found by rule name and by bytes, without a call per item; so are
        nested sequences and choices when no pieces are looked up (one call less per node)."""
        key = [kind, len(items)]  # the node's words, its children appended
        add = key.append
        refs, literals, by_id = self._refs, self._literals, self._by_id
        nested = not self._use_pieces  # a nested sequence or choice may be written right here
        for x in items:
            t = type(x)
            if t is RuleRef:
                found = refs.get(x.name)  # type: ignore[union-attr]
                if found is None:
                    found = self._ref(x.name)  # type: ignore[union-attr]
            elif t is Literal:
                found = literals.get(x.value)  # type: ignore[union-attr]
                if found is None:
                    found = self._literal(x.value)  # type: ignore[union-attr]
            else:  # a subtree shared by rules, or written once already: found without a call
                found = by_id.get(id(x))
                if found is None:
                    if nested and (t is Seq or t is Choice):  # _write, inlined
                        found = by_id[id(x)] = self._items(x.items, KIND_SEQ if t is Seq else KIND_CHOICE)  # type: ignore[union-attr]
                    elif t is CharClass and self._class_chunks:  # _write and _char_class, inlined
                        split = _class_split(x.ranges, x.negated)  # type: ignore[union-attr]
                        done = self._copied.get(id(split))
                        found = by_id[id(x)] = done[1] if done is not None else self._split_class(split)
                    elif t is Repeat:  # _write and _repeat, inlined
                        if self._stop_at_copied and hoists(x):  # type: ignore[arg-type]
                            raise _CopiedItem
                        found = by_id.get(id(x.item))  # type: ignore[union-attr]
                        if found is None:
                            found = self._write(x.item)  # type: ignore[union-attr]
                        found = by_id[id(x)] = self._add(
                            (KIND_REPEAT, found, x.min, -1 if x.max is None else x.max)
                        )  # type: ignore[union-attr]
                    else:
                        found = self._write(x)
            add(found)
        if len(key) == 3:
            return key[2]
        words = tuple(key)
        found = self._memo.get(words)  # _add, inlined: every sequence and choice passes here
        if found is None:
            found = self._memo[words] = len(self.offsets)
            self.offsets.append(len(self.data))
            self.data += key
        return found

    def _repeat(self, e: Repeat) -> int:
        item = e.item
        if self._stop_at_copied and hoists(e):
            raise _CopiedItem
        child = self._by_id.get(id(item))
        if child is None:
            child = self._write(item)
        return self._add((KIND_REPEAT, child, e.min, -1 if e.max is None else e.max))

    def _counted_text(self, e: CountedText) -> int:
        body, char = self.expr(e.body), self.expr(e.char)
        return self._add((KIND_COUNTED_TEXT, body, char, e.min, -1 if e.max is None else e.max))

    def _rule_ref(self, e: RuleRef) -> int:
        found = self._refs.get(e.name)
        return found if found is not None else self._ref(e.name)

    def _literal_expr(self, e: Literal) -> int:
        found = self._literals.get(e.value)
        return found if found is not None else self._literal(e.value)

    def _ref(self, name: str) -> int:
        found = self._refs[name] = self._add((KIND_RULEREF, self.rule_index[name]))
        return found

    def _literal(self, value: bytes) -> int:
        """A new literal's node (``_literals`` has none for ``value``). Literal nodes are
        written here only, each once by its bytes, so ``_memo`` (hashing every byte again)
        would never find one: it is left out."""
        found = self._literals[value] = len(self.offsets)
        data = self.data
        self.offsets.append(len(data))
        data += (KIND_LITERAL, len(value))
        data += value  # a byte a word: a list takes the ints of bytes without a tuple between
        return found

    def _expr(self, e: Expr) -> int:
        """The node of ``e`` by its kind (subclasses included; ``expr`` finds the exact
        types in ``_WRITE`` first)."""
        if isinstance(e, Seq):
            return self._items(e.items, KIND_SEQ)
        if isinstance(e, Literal):
            return self._literal_expr(e)
        if isinstance(e, RuleRef):
            return self._rule_ref(e)
        if isinstance(e, Choice):
            return self._key_trie(e) if type(e) is KeyTrie else self._items(e.items, KIND_CHOICE)
        if isinstance(e, CharClass):
            return self._char_class(e)
        if isinstance(e, Repeat):
            return self._repeat(e)
        if isinstance(e, ByteClass):
            flat = [x for r in e.ranges for x in r]
            return self._add((KIND_BYTES, len(e.ranges), *flat))
        if isinstance(e, TagDispatch):
            return self._dispatch(e)
        if isinstance(e, Embed):
            return self._add((KIND_RULEREF, self._embed(e.grammar)))
        raise TypeError(f"not a grammar expression: {e!r}")

    def _split_class(self, split: "_SplitClass") -> int:
        """A class as one byte set for its ASCII characters and, beside it, the nodes of its
        wider characters: lowering those to UTF-8 is the costliest part of writing, and
        classes often differ in ASCII only (a string character less a few letters, a key
        trie's prefixes), so each wide part is lowered once and copied once per grammar."""
        done = self._copied.get(id(split))
        if done is not None:
            return done[1]
        kids: List[int] = []
        if split.ascii:
            kids.append(self._add(split.ascii_node))
        if split.wide:
            kids.append(self._wide(split.wide))
        if not kids:  # an empty class matches nothing: an empty byte set
            found = self._add((KIND_BYTES, 0))
        else:
            found = kids[0] if len(kids) == 1 else self._add((KIND_CHOICE, 2, *kids))
        self._copied[id(split)] = (split, found)
        return found

    def _wide(self, wide: Tuple[Tuple[int, int], ...]) -> int:
        """The nodes of code points above 0x7F, lowered to UTF-8 once (``_class_chunk``) and
        copied once per grammar."""
        chunk = _class_chunk(wide, False)
        copied = self._copied.get(id(chunk))
        if copied is None:
            copied = self._copied[id(chunk)] = (chunk, self._copy(chunk))
        return copied[1]

    def _key_trie(self, e: KeyTrie) -> int:
        """One KEYTRIE node: the C core builds the trie from the names. Its raw characters
        are written as ranges, its wider ones join ``escape`` as the node's ``other``."""
        tail, escape, any_char = self.expr(e.tail), self.expr(e.escape), self.expr(e.any_char)
        split = _class_split(e.raw, False)
        other = escape
        if split.wide:
            other = self._add((KIND_CHOICE, 2, self._wide(split.wide), escape))
        words = [KIND_KEYTRIE, tail, other, any_char, len(split.ascii)]
        for lo, hi in split.ascii:
            words += (lo, hi)
        names = sorted(e.names)
        words.append(len(names))
        for name in names:
            words.append(len(name))
            words.extend(name.encode("ascii"))
        return self._add(tuple(words))

    def _dispatch(self, e: TagDispatch) -> int:
        flags = (DISPATCH_LOOP if e.loop_after_dispatch else 0) | (DISPATCH_END_IN_TEXT if e.stop_eos else 0)
        words = [(w, self.rule_index[r]) for w, r in e.triggers]
        words += [(w, DISPATCH_STOP) for w in e.stop_str] + [(w, DISPATCH_EXCLUDE) for w in e.excludes]
        payload: List[int] = [KIND_DISPATCH, flags, len(words)]
        for w, rule in words:
            payload += [rule, len(w), *w]
        return self._add(tuple(payload))

    def _char_class(self, e: CharClass) -> int:
        if self._class_chunks:
            return self._split_class(_class_split(e.ranges, e.negated))
        seqs = _class_sequences(e.ranges, e.negated)
        singles = [s[0] for s in seqs if len(s) == 1]
        kids: List[int] = []
        if singles:
            flat = [x for r in singles for x in r]
            kids.append(self._add((KIND_BYTES, len(singles), *flat)))
        kids.extend(self.byte_seq(s) for s in seqs if len(s) > 1)
        if not kids:  # an empty class matches nothing: an empty byte set
            return self._add((KIND_BYTES, 0))
        return kids[0] if len(kids) == 1 else self._add((KIND_CHOICE, len(kids), *kids))


#: The writer of each node type that ``_Writer.expr`` finds without the isinstance chain
#: of ``_Writer._expr`` (most nodes are of these types).
_WRITE: Dict[type, Callable[[_Writer, Any], int]] = {
    Repeat: _Writer._repeat,
    CountedText: _Writer._counted_text,
    CharClass: _Writer._char_class,
    KeyTrie: _Writer._key_trie,
    RuleRef: _Writer._rule_ref,
    Literal: _Writer._literal_expr,
}


def _switch_word(e: Expr) -> Any:
    """Piece ``e``'s literal as the words ``len, *bytes``, and the grammar it embeds
    after it, when it is ``Seq((Literal, Embed))`` with a non-empty literal; else False."""
    items = e.items if type(e) is Seq else ()  # type: ignore[union-attr]
    if len(items) != 2 or type(items[0]) is not Literal or type(items[1]) is not Embed:
        return False
    head = items[0].value
    return ((len(head), *head), items[1].grammar) if head else False


class _Symbols(Dict[Any, int]):
    """Placeholder rule indices for a chunk: the first use of each rule name (or embedded
    grammar, keyed by identity) gets the next number, recorded in ``symbols``."""

    def __init__(self) -> None:
        super().__init__()
        self.symbols: List[Tuple[bool, Any]] = []
        self._embeds: Dict[int, int] = {}

    def __missing__(self, name: str) -> int:
        self[name] = len(self.symbols)
        self.symbols.append((False, name))
        return self[name]

    def embed(self, grammar: Any) -> int:
        found = self._embeds.get(id(grammar))
        if found is None:
            found = self._embeds[id(grammar)] = len(self.symbols)
            self.symbols.append((True, grammar))
        return found


class _Chunk:
    """A piece's nodes, serialized once: ``words`` (its nodes, numbered from 0, in post-order)
    and ``offsets``; the positions in ``words`` that hold a node index (``child_pos``: add where
    the chunk lands) and those that hold a rule index (``symbol_pos``: (position, symbol), the
    symbol an entry of ``symbols``: (is_embed, rule name or embedded grammar)); ``root``."""

    __slots__ = ("child_pos", "offsets", "placed", "root", "symbol_pos", "symbols", "words")

    def __init__(self, e: Expr) -> None:
        # where the chunk was last copied among the first nodes of a grammar (the writer's node
        # and word counts) and its words and offsets there, holes unfilled: the same place in
        # the next grammar (its helper rules written first, serialize) reuses them instead of
        # moving every child again
        self.placed: Optional[Tuple[int, int, List[int], List[int]]] = None
        names = _Symbols()
        w = _Writer(names, names.embed, class_chunks=not isinstance(e, CharClass))
        self.root = w._expr(e)  # not expr(): that would copy this very piece
        self.words = w.data
        self.offsets = tuple(w.offsets)
        self.symbols = tuple(names.symbols)
        child_pos: List[int] = []
        symbol_pos: List[Tuple[int, int]] = []
        data = w.data
        for o in w.offsets:
            kind = data[o]
            if kind in (KIND_SEQ, KIND_CHOICE):
                child_pos.extend(range(o + 2, o + 2 + data[o + 1]))
            elif kind == KIND_REPEAT:
                child_pos.append(o + 1)
            elif kind == KIND_KEYTRIE:
                child_pos.extend((o + 1, o + 2, o + 3))
            elif kind == KIND_RULEREF:
                symbol_pos.append((o + 1, data[o + 1]))
            elif kind == KIND_DISPATCH:
                at = o + 3
                for _ in range(data[o + 2]):
                    if data[at] >= 0:
                        symbol_pos.append((at, data[at]))
                    at += 2 + data[at + 1]
        self.child_pos = tuple(child_pos)
        self.symbol_pos = tuple(symbol_pos)


class _SplitClass(NamedTuple):
    """A character class's code points: ``ascii`` (ranges below 0x80, one byte each) and
    ``wide`` (the ranges above, two to four bytes each); ``ascii_node``, the words of the
    byte-set node of ``ascii``."""

    ascii: Tuple[Tuple[int, int], ...]
    wide: Tuple[Tuple[int, int], ...]
    ascii_node: Tuple[int, ...]


@lru_cache(maxsize=8192)
def _class_split(ranges: Tuple[Tuple[int, int], ...], negated: bool) -> _SplitClass:
    """The code points of a class (negation applied), cut at 0x80."""
    cps = complement_ranges(ranges) if negated else normalize_ranges(ranges)
    ascii = tuple((lo, min(hi, 0x7F)) for lo, hi in cps if lo <= 0x7F)
    wide = tuple((max(lo, 0x80), hi) for lo, hi in cps if hi >= 0x80)
    return _SplitClass(ascii, wide, (KIND_BYTES, len(ascii), *(x for r in ascii for x in r)))


@lru_cache(maxsize=4096)
def _class_chunk(ranges: Tuple[Tuple[int, int], ...], negated: bool) -> "_Chunk":
    """The nodes of a character class, lowered to UTF-8 once: grammars repeat the same few
    classes (a JSON string's characters) in every schema."""
    return _Chunk(CharClass(ranges, negated))


@lru_cache(maxsize=8192)
def _class_sequences(
    ranges: Tuple[Tuple[int, int], ...], negated: bool
) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """``class_to_sequences``, remembered: grammars repeat the same few classes many times
    (a JSON string's characters), and lowering one to UTF-8 is the costliest part of writing."""
    return tuple(tuple(s) for s in class_to_sequences(ranges, negated))


def serialize(
    rules: Sequence[Rule],
    root: str,
    embed_index: Optional[Callable[[Any], int]] = None,
    *,
    use_pieces: Optional[bool] = None,
) -> bytes:
    """Serialize ``rules`` (names must be unique and every reference defined). An ``Embed`` of
    grammar ``g`` becomes a reference to rule ``embed_index(g)``: an index past ``rules``, into
    the parts the C core links (``ag_grammar_link``). ``use_pieces``: whether pieces are looked
    up inside rule bodies (whole-body pieces always are); by default only with parts."""
    rule_index = {r.name: i for i, r in enumerate(rules)}
    # Pieces come with the parts of structural tags: a grammar without parts looks none up.
    if use_pieces is None:
        use_pieces = embed_index is not None
    return _write_rules(_Writer(rule_index, embed_index, use_pieces=use_pieces), rules, root)


def serialize_converted(
    rules: Sequence[Rule], root: str, embed_index: Optional[Callable[[Any], int]] = None
) -> Optional[bytes]:
    """``serialize`` of a converter's rules as ``Grammar.to_bytes`` writes them (pieces not
    looked up inside rule bodies) when ``normalize_rules`` would leave every rule as it is;
    None, as soon as it is known, when it would not or when two rules have one name. Raises
    KeyError for a reference to an undefined rule (or the root's), as ``serialize``."""
    rule_index = {r.name: i for i, r in enumerate(rules)}
    if len(rule_index) != len(rules):
        return None
    try:
        return _write_rules(
            _Writer(rule_index, embed_index, use_pieces=False, stop_at_copied=True), rules, root
        )
    except _CopiedItem:
        return None


def _write_rules(w: _Writer, rules: Sequence[Rule], root: str) -> bytes:
    """The words of ``rules`` written by ``w``, with the header, packed."""
    rule_index = w.rule_index
    # Last rule first: converters append their helper rules (the JSON converter's base rules,
    # each copied from its chunk), so they land where they did in the grammar before and
    # their copies are reused (_Chunk.placed).
    bodies = [0] * len(rules)
    for i in range(len(rules) - 1, -1, -1):
        bodies[i] = w.rule_body(rules[i].body)
    offsets, data = w.offsets, w.data
    n = 6 + len(bodies) + len(offsets) + len(data)
    # int32 words in native byte order, as the C core reads them (validation bounds every number)
    return struct.pack(
        f"={n}i",
        MAGIC,
        VERSION,
        len(rules),
        rule_index[root],
        len(offsets),
        len(data),
        *bodies,
        *offsets,
        *data,
    )
