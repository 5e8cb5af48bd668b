"""Two small grammars between which a grammar's first masks lie.

A first token is short, and the tokens that begin a JSON value or a tool call stop within the
first key or tag: a large schema's first mask reads its root rule and hardly any of its hundreds
of others. ``first_bounds`` keeps the rules near the start and replaces every other rule they
name by one string of that rule's language (``under``) or by any bytes (``over``). Each
language contains the one before: under's, the grammar's, over's; so do their sets of
prefixes, and so the first masks and whether each may end at once. Where under's and over's
agree, the grammar's are the same: the engine compiles the two small grammars for a first mask
(``Compiler(defer_min_words=...)``) and builds the whole only when a matcher needs more.

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> g = Grammar.from_ebnf('root ::= "{" ("a" item)? "}"\\nitem ::= "b" item | "c"')
    >>> under, over = first_bounds(g, horizon=1)
    >>> under.accepts("{abc}"), under.accepts("{ac}"), g.accepts("{abc}"), over.accepts("{axyz}")
    (False, True, True, True)
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from ..errors import GrammarError
from .grammar import Grammar
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
    embedded_grammars,
)
from .utf8 import class_to_sequences

__all__ = ["HORIZON", "first_bounds"]

#: Bytes from the start (a reference counted as none) within which a rule a derivation enters
#: is kept. The bounds decide whether that was enough; a token that reads further into a rule
#: left out makes them differ, and the whole grammar is compiled at once.
HORIZON = 4

# Any bytes but 0xFF, which the grammars given bounds never hold (it marks special tokens), as
# a rule that names itself: a rule of bytes alone would be inlined where it is named, and a loop
# on any byte inside an object's automaton makes determinizing it blow up (115 ms, not 1).
_ANY_BYTE = ByteClass(((0x00, 0xFE),))
# Rules a witness may pass through, however deep: past it, no witness (a bound is not made).
_WITNESS_DEPTH = 64


def _walk(e: Expr, at: int, out: List[Tuple[str, int]]) -> int:
    """Appends to ``out`` each rule ``e`` names with the fewest bytes before it (``at`` before
    ``e``); returns the fewest bytes ``e`` derives, counting a reference as none."""
    t = type(e)
    if t is Literal:
        return len(e.value)  # type: ignore[union-attr]
    if t is RuleRef:
        out.append((e.name, at))  # type: ignore[union-attr]
        return 0
    if t is Seq:
        n = 0
        for x in e.items:  # type: ignore[union-attr]
            n += _walk(x, at + n, out)
        return n
    if t is KeyTrie:  # its ways out come after a character at least; its items are never made
        for x in e.parts:  # type: ignore[union-attr]
            _walk(x, at + 1, out)
        return 1
    if t is Choice:
        lengths = [_walk(x, at, out) for x in e.items]  # type: ignore[union-attr]
        return min(lengths) if lengths else 0
    if t is Repeat:
        return e.min * _walk(e.item, at, out)  # type: ignore[union-attr]
    if t is CharClass or t is ByteClass:
        return 1
    if t is CountedText:
        _walk(e.body, at, out)  # type: ignore[union-attr]
        _walk(e.char, at, out)  # type: ignore[union-attr]
        return 0
    if t is TagDispatch:
        for word, name in e.triggers:  # type: ignore[union-attr]
            out.append((name, at + len(word)))
        return 0
    if t is Embed:
        return 0
    raise TypeError(f"no bounds for a grammar holding {type(e).__name__}")


def _near_rules(rules: Dict[str, Rule], root: str, horizon: int) -> Tuple[Set[str], List[str]]:
    """The rules a derivation enters within ``horizon`` bytes of the start, and every rule
    their bodies name, in order of first mention."""
    best: Dict[str, int] = {root: 0}
    named: Dict[str, None] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        found: List[Tuple[str, int]] = []
        _walk(rules[name].body, best[name], found)
        for ref, at in found:
            named[ref] = None
            if at < horizon and at < best.get(ref, horizon) and ref in rules:
                best[ref] = at
                todo.append(ref)
    return set(best), list(named)


class _Witness:
    """One string of each rule's language, found by following, in every choice, the first
    alternative that yields one (those with no reference first): the empty object, the empty
    string, ``0``, a key's closing quote, an embedded grammar's own. None where the walk meets
    a node it does not follow (a counted text, a dispatch) or goes too deep."""

    def __init__(self, rules: Dict[str, Rule]) -> None:
        self.rules = rules
        self.found: Dict[str, Optional[bytes]] = {}
        self.open: Set[str] = set()
        self.parts: Dict[int, Optional[bytes]] = {}  # by the embedded grammar's identity

    def rule(self, name: str) -> Optional[bytes]:
        if name in self.found:
            return self.found[name]
        rule = self.rules.get(name)
        if rule is None or name in self.open or len(self.open) >= _WITNESS_DEPTH:
            return None  # a cycle on this path, or too deep: another alternative may do
        self.open.add(name)
        try:
            found = self.expr(rule.body)
        finally:
            self.open.discard(name)
        self.found[name] = found
        return found

    def expr(self, e: Expr) -> Optional[bytes]:
        t = type(e)
        if t is Literal:
            return e.value  # type: ignore[union-attr,no-any-return]
        if t is RuleRef:
            return self.rule(e.name)  # type: ignore[union-attr]
        if t is Seq:
            parts = []
            for x in e.items:  # type: ignore[union-attr]
                w = self.expr(x)
                if w is None:
                    return None
                parts.append(w)
            return b"".join(parts)
        if t is Choice:
            items = sorted(e.items, key=lambda x: type(x) is RuleRef)  # type: ignore[union-attr]
            for x in items:
                w = self.expr(x)
                if w is not None:
                    return w
            return None
        if t is Repeat:
            if e.min == 0:  # type: ignore[union-attr]
                return b""
            w = self.expr(e.item)  # type: ignore[union-attr]
            return None if w is None else w * e.min  # type: ignore[union-attr]
        if t is KeyTrie:  # the key left empty: its closing quote (no name is empty)
            return b'"'
        if t is Embed:  # an embedded grammar (the converter's JSON values): its own root's
            part = e.grammar  # type: ignore[union-attr]
            key = id(part)
            if key not in self.parts:
                self.parts[key] = _Witness({r.name: r for r in part.rules}).rule(part.root)
            return self.parts[key]
        if t is CharClass:
            seqs = class_to_sequences(e.ranges, e.negated)  # type: ignore[union-attr]
            return bytes(lo for lo, _ in seqs[0]) if seqs else None
        if t is ByteClass:
            return bytes([e.ranges[0][0]]) if e.ranges else None  # type: ignore[union-attr]
        return None


def _fresh_name(rules: Dict[str, Rule], base: str) -> str:
    name, k = base, 0
    while name in rules:
        k += 1
        name = f"{base}_{k}"
    return name


def first_bounds(grammar: Grammar, horizon: int = HORIZON) -> Optional[Tuple[Grammar, Grammar]]:
    """``(under, over)``: the rules of ``grammar`` within ``horizon`` bytes of its start, each
    other rule they name replaced by one string of its language and by any bytes; None when
    they name no other rule (nothing would be left out), when a rule left out has no witness
    (``_Witness``), or when ``grammar`` holds a node the walk does not know."""
    rules = {r.name: r for r in grammar.rules}
    try:
        kept, named = _near_rules(rules, grammar.root, horizon)
    except (TypeError, RecursionError):
        return None
    left_out = [name for name in named if name not in kept]
    if not left_out:
        return None
    witness = _Witness(rules)
    strings = []
    for name in left_out:
        try:
            w = witness.rule(name)
        except RecursionError:
            return None
        if w is None:
            return None
        strings.append(w)
    body = [r for r in grammar.rules if r.name in kept]
    parts = tuple(embedded_grammars(body))
    try:
        under = Grammar(
            body + [Rule(name, Literal(w)) for name, w in zip(left_out, strings)],
            grammar.root,
            _converted=True,
            _parts=parts,
        )
        anything = _fresh_name(rules, "first_bounds_any")
        stand_in = RuleRef(anything)
        over = Grammar(
            body
            + [Rule(name, stand_in) for name in left_out]
            + [Rule(anything, Choice((Literal(b""), Seq((_ANY_BYTE, stand_in)))))],
            grammar.root,
            _converted=True,
            _parts=parts,
        )
    except GrammarError:
        return None
    return under, over
