"""Validation of grammar IR: every node well formed, every reference defined, every rule
reachable from the root able to finish; the checks ``Grammar`` runs on construction.

Example:
    >>> from agentgrammar.grammar.ir import Rule, Literal
    >>> [r.name for r in validate_rules([Rule("root", Literal(b"hi"))])]
    ['root']
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..errors import GrammarError
from . import pieces
from .ir import (
    MAX_CODE_POINT,
    ByteClass,
    CharClass,
    Choice,
    CountedText,
    Embed,
    Expr,
    GrammarBase,
    KeyTrie,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    TagDispatch,
)
from .normalize import SINGLE_EDGE_TYPES, is_single_edge, normal_already, piece_unchanged
from .source_text import MAX_REPEAT, quote_names
from .utf8 import complement_ranges, normalize_ranges

__all__ = ["validate_rules"]


def _check_expr(e: Expr, rule: str, refs: List[str]) -> None:
    """Check one expression tree's node types and values; collect referenced rule names. A
    piece (``pieces.mark``) is checked once; later its references are looked up."""
    stack = [e]
    piece_info = pieces.info
    seen: Set[int] = set()  # shared subtrees (front-ends reuse them) are checked once
    while stack:
        e = stack.pop()
        if type(e) in (Seq, Choice, Repeat):
            if id(e) in seen:
                continue
            seen.add(id(e))
        if type(e) in (Seq, Choice):
            found = piece_info(e)
            if found is not None:
                if found.refs is None:
                    inner: List[str] = []
                    kids: List[Expr] = []
                    _check_node(e, rule, inner, kids)
                    while kids:
                        _check_expr(kids.pop(), rule, inner)
                    found.refs = tuple(inner)
                refs.extend(found.refs)
                continue
        _check_node(e, rule, refs, stack)


def _check_node(e: Expr, rule: str, refs: List[str], stack: List[Expr]) -> None:
    """Check node ``e`` alone; collect the rule names it references and push its children
    on ``stack`` (reversed: they pop in source order)."""
    if isinstance(e, Literal):
        if not isinstance(e.value, bytes):
            raise GrammarError(f"rule '{rule}': Literal value must be bytes, not {type(e.value).__name__}")
    elif isinstance(e, (CharClass, ByteClass)):
        top = MAX_CODE_POINT if isinstance(e, CharClass) else 0xFF
        kind = type(e).__name__
        if not isinstance(e.ranges, tuple):
            raise GrammarError(f"rule '{rule}': {kind} ranges must be a tuple of (lo, hi) pairs")
        for r in e.ranges:  # exact types (a bool is an int): one pass, no generator per range
            if not (type(r) is tuple and len(r) == 2 and type(r[0]) is int and type(r[1]) is int):
                ok = False
            else:
                ok = 0 <= r[0] <= r[1] <= top
            if not ok:
                raise GrammarError(
                    f"rule '{rule}': invalid {kind} range {r!r} (need 0 <= lo <= hi <= {top:#x})"
                )
        if isinstance(e, CharClass) and not isinstance(e.negated, bool):
            raise GrammarError(f"rule '{rule}': CharClass.negated must be a bool")
    elif isinstance(e, (Seq, Choice)):
        if not isinstance(e.items, tuple):
            raise GrammarError(f"rule '{rule}': {type(e).__name__} items must be a tuple")
        stack.extend(reversed(e.items))  # visit in source order
    elif isinstance(e, RuleRef):
        if not isinstance(e.name, str):
            raise GrammarError(f"rule '{rule}': RuleRef name must be a str")
        refs.append(e.name)
    elif isinstance(e, Repeat):
        _check_bounds(e.min, e.max, rule, "Repeat")
        stack.append(e.item)
    elif isinstance(e, CountedText):
        _check_bounds(e.min, e.max, rule, "CountedText")
        stack.extend((e.char, e.body))
    elif isinstance(e, TagDispatch):
        refs.extend(_check_dispatch(e, rule))
    elif isinstance(e, Embed):
        if not isinstance(e.grammar, GrammarBase):  # a Grammar (grammar.py builds on this module)
            raise GrammarError(f"rule '{rule}': Embed needs a Grammar, not {type(e.grammar).__name__}")
    else:
        raise GrammarError(f"rule '{rule}': not a grammar expression: {e!r}")


def _check_bounds(lo: Any, hi: Any, rule: str, kind: str) -> None:
    """Check a repeat's (or counted text's) bounds: ints within ``MAX_REPEAT``, ``hi`` None
    or at least ``lo``."""
    for label, bound in (("min", lo), ("max", hi)):
        if bound is None and label == "max":
            continue
        if not isinstance(bound, int) or isinstance(bound, bool):
            raise GrammarError(f"rule '{rule}': {kind} {label} must be an int, not {bound!r}")
        if bound < 0:
            raise GrammarError(f"rule '{rule}': {kind} {label} must not be negative (got {bound})")
        if bound > MAX_REPEAT:
            raise GrammarError(
                f"rule '{rule}': {kind} {label} {bound} is too large (the limit is {MAX_REPEAT})"
            )
    if hi is not None and lo > hi:
        raise GrammarError(f"rule '{rule}': {kind} min {lo} is larger than max {hi}")


#: The words of one TagDispatch may total this many bytes (the C core's limit).
MAX_DISPATCH_BYTES = 1 << 14


def _check_dispatch(e: TagDispatch, rule: str) -> List[str]:
    """Check a TagDispatch's fields; return the rules its triggers open."""
    where = f"rule '{rule}': TagDispatch"
    for label in ("stop_eos", "loop_after_dispatch"):
        if not isinstance(getattr(e, label), bool):
            raise GrammarError(f"{where} {label} must be a bool")
    if not isinstance(e.triggers, tuple) or not all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[1], str) for t in e.triggers
    ):
        raise GrammarError(f"{where} triggers must be a tuple of (bytes, rule name) pairs")
    for label, words in (
        ("triggers", [t[0] for t in e.triggers]),
        ("stop_str", e.stop_str),
        ("excludes", e.excludes),
    ):
        if not isinstance(words, (tuple, list)) or not all(isinstance(w, bytes) and w for w in words):
            raise GrammarError(f"{where} {label} must be non-empty byte strings")
    total = sum(len(w) for w in e.words())
    if total > MAX_DISPATCH_BYTES:
        raise GrammarError(f"{where} words have {total} bytes in all; the limit is {MAX_DISPATCH_BYTES}")
    return [name for _, name in e.triggers]


# Bodies already checked, by identity: front-ends reuse the same body objects across requests
# (cached tool pieces), so a request re-checks only what is new. Weak values: no leak.
_CHECKED: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
_CHECKED_REFS: Dict[int, List[str]] = {}


def _checked_refs(body: Expr, rule: str) -> List[str]:
    """``_check_expr`` of ``body`` (the names it references), remembered per body object."""
    key = id(body)
    if _CHECKED.get(key) is body:
        return list(_CHECKED_REFS[key])
    refs: List[str] = []
    _check_expr(body, rule, refs)
    try:
        _CHECKED[key] = body
    except TypeError:  # not weak-referenceable: just not remembered
        return refs
    if len(_CHECKED_REFS) > 4 * len(_CHECKED) + 1024:  # forget the ids of collected bodies
        for k in [k for k in _CHECKED_REFS if k not in _CHECKED]:
            del _CHECKED_REFS[k]
    _CHECKED_REFS[key] = refs
    return list(refs)


def _piece_refs(piece: pieces.PieceInfo, body: Expr, rule: str) -> Tuple[Sequence[str], bool, bool]:
    """``_walk_refs`` of a body that is a piece (a converter's shared helper rule, in every
    grammar it builds): walked once, then looked up."""
    if piece.refs is None:
        refs, normal, _ = _walk_refs(body, rule)
        piece.refs = tuple(refs)
        if piece.unchanged is None:
            piece.unchanged = normal
    return piece.refs, piece_unchanged(piece, body), _productive_alone(body, piece)


def _walk_refs(body: Expr, rule: str) -> Tuple[List[str], bool, bool]:
    """The rule names ``body`` references, its nodes not checked: IR that a converter of this
    package built (EBNF, regex, JSON Schema) has the right types by construction. A node of
    any other type is checked in full. Also, found on the same walk, whether
    ``normalize_rules`` leaves the body as it is (``normal_already``), and whether it has no
    node that may derive nothing by itself (an empty or negated class, an empty choice, a
    dispatch), so that it derives some finite string once the rules it references do."""
    refs: List[str] = []
    append = refs.append
    normal = True  # no counted repeat copies an item of more than one edge
    plain = True  # no node that may derive nothing whatever the references derive
    # Depth first in source order, one iterator per open node: the leaves, most of the
    # nodes, are handled where they are met instead of pushed and popped one by one; so is
    # the item of a repeat, most often a leaf or a node to open.
    seen: Set[int] = set()
    see = seen.add
    stack: List[Iterator[Expr]] = []
    push = stack.append
    todo: Iterator[Expr] = iter((body,))
    while True:
        for e in todo:
            t = type(e)
            if t is Repeat:
                item = e.item  # type: ignore[union-attr]
                if normal and (e.min > 1 or (e.max is not None and e.max > 1)):  # type: ignore[union-attr]
                    normal = type(item) in SINGLE_EDGE_TYPES or is_single_edge(item)  # a subclass too
                e = item
                t = type(e)
            if t is RuleRef:
                append(e.name)  # type: ignore[union-attr]
            elif t is Literal:
                pass
            elif t is Seq or t is Choice:
                k = id(e)
                if k not in seen:
                    see(k)
                    items = e.items  # type: ignore[union-attr]
                    if not items and t is Choice:
                        plain = False
                    push(todo)
                    todo = iter(items)
                    break
            elif t is CharClass:
                if e.negated or not e.ranges:  # type: ignore[union-attr]
                    plain = False
            elif t is KeyTrie or t is Repeat:  # a trie's parts (not its items: never made here)
                push(todo)
                todo = iter(e.parts if t is KeyTrie else (e,))  # type: ignore[union-attr]
                break
            elif t is CountedText:  # its bounds may leave no string: not plain
                plain = False
                push(todo)
                todo = iter((e.body, e.char))  # type: ignore[union-attr]
                break
            elif t is Embed:  # a validated grammar derives some string, as one edge
                if not isinstance(e.grammar, GrammarBase):  # type: ignore[union-attr]
                    _check_expr(e, rule, refs)  # raises
            elif t is ByteClass:
                plain = plain and bool(e.ranges)  # type: ignore[union-attr]
            else:
                _check_expr(e, rule, refs)
                normal = normal and normal_already(e)
                plain = False  # a dispatch (a validated embed is met above)
        else:  # this node's items are done
            if not stack:
                return refs, normal, plain
            todo = stack.pop()


def _class_is_empty(e: Expr) -> bool:
    if isinstance(e, CharClass):
        ranges = complement_ranges(e.ranges) if e.negated else normalize_ranges(e.ranges)
        return not ranges
    assert isinstance(e, ByteClass)
    return not e.ranges


# The IR node types, the most frequent first (``_productive`` dispatches on them).
_KINDS = (Literal, Seq, RuleRef, Choice, CharClass, ByteClass, Repeat, CountedText, Embed, TagDispatch)


def _productive(e: Expr, known: Dict[str, bool]) -> bool:
    """Whether ``e`` derives some finite string, given which rules are known to."""
    t = type(e)  # exact types: every rule of every grammar is checked, node by node
    if t is KeyTrie:  # a name's prefix may end the key, and the empty prefix is none
        return True
    if t not in _KINDS:  # a subclass of a node type: as that type
        t = next((k for k in _KINDS if isinstance(e, k)), t)
    if t is Literal:
        return True
    if t is Seq:
        for x in e.items:  # type: ignore[union-attr]
            if not _productive(x, known):
                return False
        return True
    if t is RuleRef:
        return known[e.name]  # type: ignore[union-attr]
    if t is Choice:
        for x in e.items:  # type: ignore[union-attr]
            if _productive(x, known):
                return True
        return False
    if t is CharClass or t is ByteClass:
        return not _class_is_empty(e)
    if t is Repeat:
        return e.min == 0 or _productive(e.item, known)  # type: ignore[union-attr]
    if t is CountedText:  # an over-approximation (converters build none that is empty)
        return _productive(e.body, known) and _productive(e.char, known)  # type: ignore[union-attr]
    if t is Embed:  # a validated grammar derives some string
        return True
    if t is TagDispatch:  # an over-approximation; the C core decides exactly
        return (
            e.stop_eos  # type: ignore[union-attr]
            or bool(e.stop_str)  # type: ignore[union-attr]
            or (not e.loop_after_dispatch and any(known[name] for _, name in e.triggers))  # type: ignore[union-attr]
        )
    raise TypeError(f"not a grammar expression: {e!r}")


class _NothingKnown(Dict[str, bool]):
    """No rule known to derive a finite string (and none remembered as asked about)."""

    def __missing__(self, name: str) -> bool:
        return False


_NOTHING_KNOWN = _NothingKnown()


def _productive_alone(body: Expr, piece: Optional[pieces.PieceInfo] = None) -> bool:
    """Whether a piece ``body`` derives some finite string whatever the rules it references
    derive (worked out once, ``PieceInfo.productive``); False for any other body. ``piece``:
    the body's piece information when the caller has it."""
    if piece is None and (type(body) is Seq or type(body) is Choice):
        piece = pieces.info(body)
    if piece is None:
        return False
    if piece.productive is None:
        piece.productive = _productive(body, _NOTHING_KNOWN)
    return piece.productive


def validate_rules(rules: Iterable[Rule], root: str = "root", check_nodes: bool = True) -> Tuple[Rule, ...]:
    """Check ``rules`` and return those reachable from ``root``, in their original order.

    Raises ``GrammarError`` for malformed IR, duplicate names, undefined references, a missing
    root, or a root that can never finish (derives no finite string). ``check_nodes=False``
    skips the type checks of each node, for IR this package's converters built.

    Example:
        >>> from agentgrammar.grammar.ir import Rule, Literal, RuleRef
        >>> [r.name for r in validate_rules([Rule("root", Literal(b"a")), Rule("unused", RuleRef("root"))])]
        ['root']
    """
    return _validate(rules, root, check_nodes)[0]


def _validate(
    rules: Iterable[Rule], root: str, check_nodes: bool
) -> Tuple[Tuple[Rule, ...], Optional[FrozenSet[str]]]:
    """``validate_rules``, and the names of the kept rules that ``normalize_rules`` changes:
    known only with ``check_nodes=False``, where the walk that finds the references tells
    (every other rule it leaves as it is); else None."""
    rules = tuple(rules)
    if not isinstance(root, str):
        raise GrammarError(f"the root rule name must be a str, not {type(root).__name__}")
    if not rules:
        raise GrammarError("the grammar is empty: it has no rules")
    by_name: Dict[str, Rule] = {}
    refs: Dict[str, Sequence[str]] = {}
    not_normal: List[str] = []  # the rules normalization changes (with check_nodes=False)
    plain = not check_nodes  # every body derives some string once its references do (_walk_refs)
    piece_info = pieces.info
    for r in rules:
        if not isinstance(r, Rule):
            raise GrammarError(f"expected a Rule, got {r!r}")
        name = r.name
        if not isinstance(name, str) or not name:
            raise GrammarError(f"a rule name must be a non-empty str, got {name!r}")
        if name in by_name:
            raise GrammarError(f"rule '{name}' is defined twice")
        by_name[name] = r
        body = r.body
        if check_nodes:
            refs[name] = _checked_refs(body, name)
            continue
        piece = piece_info(body) if type(body) is Seq or type(body) is Choice else None
        if piece is None:
            refs[name], normal, alone = _walk_refs(body, name)
        else:
            refs[name], normal, alone = _piece_refs(piece, body, name)
        plain = plain and alone
        if not normal:
            not_normal.append(name)
    if root not in by_name:
        raise GrammarError(f"the root rule '{root}' is not defined (defined rules: {quote_names(by_name)})")
    # Keep only what the root can reach; `after` lists them each after those it references
    # (depth first, post-order), but where a cycle closes. A reference to an undefined rule
    # stops the walk (KeyError): the rules are searched for the first one, for the message.
    reachable: Set[str] = {root}
    after: List[str] = []
    stack = [(root, iter(refs[root]))]
    open_ = {root}  # the rules on the stack: a reference to one closes a cycle
    cyclic = False
    undefined = False
    try:
        while stack:
            name, todo = stack[-1]
            for ref in todo:
                if ref not in reachable:
                    reachable.add(ref)
                    open_.add(ref)
                    stack.append((ref, iter(refs[ref])))
                    break
                cyclic = cyclic or ref in open_
            else:
                stack.pop()
                open_.discard(name)
                after.append(name)
    except KeyError:
        undefined = True
    # the walk met every reference of the rules it reached; those of the others (usually
    # none), one set difference tells
    if undefined or (
        len(reachable) < len(rules)
        and not by_name.keys() >= set().union(*[refs[r.name] for r in rules if r.name not in reachable])
    ):
        for r in rules:
            for name in refs[r.name]:
                if name not in by_name:
                    raise GrammarError(f"rule '{name}' is not defined (referenced in rule '{r.name}')")
    # (names are unique: as many reachable as rules means all of them, the usual case)
    kept = rules if len(reachable) == len(rules) else tuple(r for r in rules if r.name in reachable)
    to_normalize = (
        None if check_nodes else frozenset([n for n in not_normal if n in reachable] if not_normal else ())
    )
    if plain and not cyclic:  # by induction along `after`, every rule derives some string
        return kept, to_normalize

    # Least fixed point: which rules derive some finite string. In `after` order one pass
    # settles a grammar without recursion, instead of a pass per level of references.
    # In a plain grammar a rule whose references all derive a string does too (as above): most
    # rules of a recursive one settle on that without a walk of their body.
    known = {r.name: False for r in kept}
    is_known = known.__getitem__
    changed = True
    while changed:
        changed = False
        for name in after:
            if known[name]:
                continue
            body = by_name[name].body
            if (
                (plain and all(map(is_known, refs[name])))
                or _productive_alone(body)
                or _productive(body, known)
            ):
                known[name] = True
                changed = True
    if not known[root]:
        dead = [r.name for r in kept if not known[r.name]]
        needed = [n for n in dict.fromkeys(refs[root]) if not known[n] and n != root]
        if needed:
            if len(needed) == 1:
                why = f"every alternative needs rule '{needed[0]}', which derives no finite string"
            else:
                why = (
                    f"every alternative needs one of the rules {quote_names(needed)}, "
                    "which derive no finite string"
                )
        elif root in refs[root]:
            why = f"every alternative recurses into '{root}' itself without a way out"
        else:
            why = "it matches nothing (an empty character class or choice)"
        others = [n for n in dead if n != root and n not in needed]
        extra = f" (rules that derive no finite string: {quote_names(dead)})" if others else ""
        raise GrammarError(f"rule '{root}' can never finish: {why}{extra}")
    return kept, to_normalize
