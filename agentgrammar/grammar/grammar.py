"""The public ``Grammar``: validated, immutable grammar IR with EBNF / regex / JSON constructors.

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> g = Grammar.from_ebnf('root ::= "yes" | "no"')
    >>> print(g)
    root ::= "yes" | "no"
    >>> g.root, [r.name for r in g.rules]
    ('root', ['root'])
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, Iterable, Iterator, List, Set, Tuple, Union

from .._gc_pause import pauses_gc
from ..errors import GrammarError, SchemaError
from . import pieces
from .builtin import json_rules
from .ebnf import MAX_REPEAT, parse_ebnf, quote_names
from .ir import (
    MAX_CODE_POINT,
    ByteClass,
    CharClass,
    Choice,
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
    fresh_name,
    seq,
)
from .json_schema import schema_rules_and_parts
from .printer import to_ebnf
from .regex import parse_regex
from .serialize import serialize
from .utf8 import complement_ranges, normalize_ranges

__all__ = ["Grammar", "normalize_rules", "validate_rules"]


# --------------------------------------------------------------------------- validation


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
        for label, bound in (("min", e.min), ("max", e.max)):
            if bound is None and label == "max":
                continue
            if not isinstance(bound, int) or isinstance(bound, bool):
                raise GrammarError(f"rule '{rule}': Repeat {label} must be an int, not {bound!r}")
            if bound < 0:
                raise GrammarError(f"rule '{rule}': Repeat {label} must not be negative (got {bound})")
            if bound > MAX_REPEAT:
                raise GrammarError(
                    f"rule '{rule}': Repeat {label} {bound} is too large (the limit is {MAX_REPEAT})"
                )
        if e.max is not None and e.min > e.max:
            raise GrammarError(f"rule '{rule}': Repeat min {e.min} is larger than max {e.max}")
        stack.append(e.item)
    elif isinstance(e, TagDispatch):
        refs.extend(_check_dispatch(e, rule))
    elif isinstance(e, Embed):
        if not isinstance(e.grammar, Grammar):
            raise GrammarError(f"rule '{rule}': Embed needs a Grammar, not {type(e.grammar).__name__}")
    else:
        raise GrammarError(f"rule '{rule}': not a grammar expression: {e!r}")


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


def _refs_of(body: Expr, rule: str) -> Tuple[List[str], bool, bool]:
    """The rule names ``body`` references, its nodes not checked: IR that a converter of this
    package built (EBNF, regex, JSON Schema) has the right types by construction. A node of
    any other type is checked in full. A body that is a piece (a converter's shared helper
    rule, in every grammar it builds) is walked once, then looked up. Also, found on the same
    walk, whether ``normalize_rules`` leaves the body as it is (``_normal_already``) and
    whether it derives some finite string once the rules it references do (``_walk_refs``)."""
    piece = pieces.info(body) if type(body) is Seq or type(body) is Choice else None
    if piece is not None:
        if piece.refs is None:
            refs, normal, _ = _walk_refs(body, rule)
            piece.refs = tuple(refs)
            if piece.unchanged is None:
                piece.unchanged = normal
        return list(piece.refs), _piece_unchanged(piece, body), _productive_alone(body)
    return _walk_refs(body, rule)


def _walk_refs(body: Expr, rule: str) -> Tuple[List[str], bool, bool]:
    """``_refs_of`` of a body that is no piece: its references, whether normalization leaves
    it as it is, and whether it has no node that may derive nothing by itself (an empty or
    negated class, an empty choice, a dispatch), so that it derives some finite string once
    the rules it references do."""
    refs: List[str] = []
    normal = True  # no counted repeat copies an item of more than one edge
    plain = True  # no node that may derive nothing whatever the references derive
    # Depth first in source order, one iterator per open node: the leaves, most of the
    # nodes, are handled where they are met instead of pushed and popped one by one.
    stack: List[Iterator[Expr]] = [iter((body,))]
    seen: Set[int] = set()
    while stack:
        for e in stack[-1]:
            t = type(e)
            if t is RuleRef:
                refs.append(e.name)  # type: ignore[union-attr]
            elif t is Literal:
                pass
            elif t is Seq or t is Choice:
                if id(e) not in seen:
                    seen.add(id(e))
                    items = e.items  # type: ignore[union-attr]
                    if not items and t is Choice:
                        plain = False
                    stack.append(iter(items))
                    break
            elif t is CharClass:
                if e.negated or not e.ranges:  # type: ignore[union-attr]
                    plain = False
            elif t is KeyTrie:
                stack.append(iter(e.parts))  # type: ignore[union-attr]  # not its items: never made here
                break
            elif t is Repeat:
                item = e.item  # type: ignore[union-attr]
                if normal and (e.min > 1 or (e.max is not None and e.max > 1)):  # type: ignore[union-attr]
                    normal = _is_single_edge(item)
                stack.append(iter((item,)))
                break
            elif t is ByteClass:
                plain = plain and bool(e.ranges)  # type: ignore[union-attr]
            else:
                _check_expr(e, rule, refs)
                normal = normal and _normal_already(e)
                plain = plain and t is Embed  # a validated grammar derives some string
        else:  # this node's items are done
            stack.pop()
    return refs, normal, plain


def _class_is_empty(e: Expr) -> bool:
    if isinstance(e, CharClass):
        ranges = complement_ranges(e.ranges) if e.negated else normalize_ranges(e.ranges)
        return not ranges
    assert isinstance(e, ByteClass)
    return not e.ranges


# The IR node types, the most frequent first (``_productive`` dispatches on them).
_KINDS = (Literal, Seq, RuleRef, Choice, CharClass, ByteClass, Repeat, Embed, TagDispatch)


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


def _productive_alone(body: Expr) -> bool:
    """Whether a piece ``body`` derives some finite string whatever the rules it references
    derive (worked out once, ``PieceInfo.productive``); False for any other body."""
    piece = pieces.info(body) if type(body) is Seq or type(body) is Choice else None
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


def _validate(rules: Iterable[Rule], root: str, check_nodes: bool) -> Tuple[Tuple[Rule, ...], bool]:
    """``validate_rules``, and whether ``normalize_rules`` would leave every kept rule as it
    is (known only with ``check_nodes=False``, where the walk that finds the references tells;
    else False)."""
    rules = tuple(rules)
    if not isinstance(root, str):
        raise GrammarError(f"the root rule name must be a str, not {type(root).__name__}")
    if not rules:
        raise GrammarError("the grammar is empty: it has no rules")
    by_name: Dict[str, Rule] = {}
    refs: Dict[str, List[str]] = {}
    normal: Dict[str, bool] = {}
    plain = not check_nodes  # every body derives some string once its references do (_walk_refs)
    for r in rules:
        if not isinstance(r, Rule):
            raise GrammarError(f"expected a Rule, got {r!r}")
        if not isinstance(r.name, str) or not r.name:
            raise GrammarError(f"a rule name must be a non-empty str, got {r.name!r}")
        if r.name in by_name:
            raise GrammarError(f"rule '{r.name}' is defined twice")
        by_name[r.name] = r
        if check_nodes:
            refs[r.name], normal[r.name] = _checked_refs(r.body, r.name), False
        else:
            refs[r.name], normal[r.name], alone = _refs_of(r.body, r.name)
            plain = plain and alone
    if root not in by_name:
        raise GrammarError(f"the root rule '{root}' is not defined (defined rules: {quote_names(by_name)})")
    for r in rules:
        for name in refs[r.name]:
            if name not in by_name:
                raise GrammarError(f"rule '{name}' is not defined (referenced in rule '{r.name}')")

    # Keep only what the root can reach; `after` lists them each after those it references
    # (depth first, post-order), but where a cycle closes.
    reachable: Set[str] = {root}
    after: List[Rule] = []
    stack = [(root, iter(refs[root]))]
    open_ = {root}  # the rules on the stack: a reference to one closes a cycle
    cyclic = False
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
            after.append(by_name[name])
    kept = tuple(r for r in rules if r.name in reachable)
    if plain and not cyclic:  # by induction along `after`, every rule derives some string
        return kept, all(normal[r.name] for r in kept)

    # Least fixed point: which rules derive some finite string. In `after` order one pass
    # settles a grammar without recursion, instead of a pass per level of references.
    known = {r.name: False for r in kept}
    changed = True
    while changed:
        changed = False
        for r in after:
            if not known[r.name] and (_productive_alone(r.body) or _productive(r.body, known)):
                known[r.name] = True
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
    return kept, all(normal[r.name] for r in kept)


# --------------------------------------------------------------------------- normalization


def _is_single_edge(e: Expr) -> bool:
    return isinstance(e, (Literal, CharClass, ByteClass, RuleRef, Embed))


def _normal_already(e: Expr, use_pieces: bool = False) -> bool:
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
            if not _piece_unchanged(piece, x):
                return False
        elif isinstance(x, Repeat):
            copies = x.min > 1 or (x.max is not None and x.max > 1)
            if copies and not _is_single_edge(x.item):
                return False
            stack.append(x.item)
    return True


def _piece_unchanged(piece: pieces.PieceInfo, e: Expr) -> bool:
    """``_normal_already`` of piece ``e``, worked out once (``PieceInfo.unchanged``)."""
    if piece.unchanged is None:
        piece.unchanged = _normal_already(e, True)
    return piece.unchanged


def _body_normal_already(body: Expr, use_pieces: bool) -> bool:
    """``_normal_already`` of a rule's body; a body that is a piece is answered for once,
    pieces looked up or not inside."""
    piece = pieces.info(body) if type(body) is Seq or type(body) is Choice else None
    return _normal_already(body, use_pieces) if piece is None else _piece_unchanged(piece, body)


def normalize_rules(rules: Iterable[Rule], use_pieces: bool = True) -> List[Rule]:
    """Prepare rules for the C core: the item of a counted repeat that may be copied (a bound
    above 1) becomes a rule of its own when it is more than one edge, so that unrolling copies
    one rule reference per repetition instead of a whole subtree. Aux rules are named
    ``<rule>_repeat_<n>`` and appended after the existing rules. ``use_pieces``: look pieces
    up (``pieces.mark``) to work on each once; the output is the same without.

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
    # an item that several repeats copy, such as the blocks of a long string's length split
    # (``json_values.repeat``), is one rule, so its automaton is built and its masks are
    # classified once, and its parallel parses meet in the same Earley items
    hoisted: Dict[int, str] = {}
    piece_info = pieces.info

    def walk(e: Expr, base: str, counter: List[int]) -> Expr:
        found = done.get(id(e))
        if found is None:
            piece = piece_info(e) if use_pieces and type(e) in (Seq, Choice) else None
            if piece is not None:
                if _piece_unchanged(piece, e):
                    return e
            found = done[id(e)] = rewrite(e, base, counter)
        return found

    def rewrite(e: Expr, base: str, counter: List[int]) -> Expr:
        if type(e) is KeyTrie:  # its parts are single edges and a star: nothing to hoist
            return e
        if isinstance(e, (Seq, Choice)):
            items = tuple(walk(x, base, counter) for x in e.items)
            # unchanged subtrees stay the same objects, so the serializer writes them once
            return e if all(a is b for a, b in zip(items, e.items)) else type(e)(items)
        if isinstance(e, Repeat):
            item = walk(e.item, base, counter)
            copies = e.min > 1 or (e.max is not None and e.max > 1)
            if copies and not _is_single_edge(item):
                name = hoisted.get(id(item))
                if name is None:
                    name = hoisted[id(item)] = fresh(base, counter)
                    extra.append(Rule(name, item))
                item = RuleRef(name)
            return e if item is e.item else Repeat(item, e.min, e.max)
        return e

    out = []
    for r in rules:  # most bodies need nothing: one cheap scan tells, and the rule stays as it is
        body = r.body if _body_normal_already(r.body, use_pieces) else walk(r.body, r.name, [0])
        out.append(r if body is r.body else Rule(r.name, body))
    return out + extra


# --------------------------------------------------------------------------- Grammar


class Grammar:
    """A validated grammar: ``rules`` (each named, all references defined, all reachable from
    ``root``) and the ``root`` rule's name. Immutable; build one with a ``from_*`` constructor.

    Example:
        >>> g = Grammar.from_ebnf('root ::= item ("," item)*\\nitem ::= [a-z]+')
        >>> print(g)
        root ::= item ("," item)*
        item ::= [a-z]+
        >>> Grammar.from_regex(r"\\d{3}").root
        'root'
    """

    __slots__ = (
        "_bytes",
        "_compiled_bytes",
        "_kept",
        "_key",
        "_link",
        "_normalized",
        "_parts",
        "_pieces",
        "root",
        "rules",
    )

    rules: Tuple[Rule, ...]
    root: str

    def __init__(
        self,
        rules: Iterable[Rule],
        root: str = "root",
        *,
        _converted: bool = False,
        _parts: Tuple["Grammar", ...] = (),
    ) -> None:
        # ``_converted``: rules from this package's EBNF, regex or JSON Schema converters, whose
        # nodes have the right types by construction, whose pieces are whole rule bodies (the
        # JSON converter's base rules) and which embed ``_parts`` (the converter knows them).
        rules = tuple(rules)
        kept, normal = _validate(rules, root, check_nodes=not _converted)
        if _parts and len(kept) < len(rules):  # an embed may have been in a dropped rule
            _parts = tuple(embedded_grammars(kept))
        object.__setattr__(self, "rules", kept)
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "_bytes", None)
        object.__setattr__(self, "_normalized", kept if normal else None)  # normalize_rules: no change
        object.__setattr__(self, "_compiled_bytes", None)
        object.__setattr__(self, "_parts", _parts if _converted else None)
        object.__setattr__(self, "_pieces", not _converted)  # pieces looked up inside rule bodies
        object.__setattr__(self, "_link", None)
        object.__setattr__(self, "_key", None)  # the Compiler's content digest, once computed
        object.__setattr__(self, "_kept", None)  # see _shared_part

    @classmethod
    def _shared_part(cls, rules: Iterable[Rule], root: str) -> "Grammar":
        """A converter's grammar that many grammars embed (any JSON value): validated like
        converted rules, and marked so that the engine keeps its C automata, built once per
        process, for every compiler that links it (``engine.compiler._load_grammar``)."""
        g = cls(rules, root, _converted=True)
        object.__setattr__(g, "_kept", [])  # its loaded C grammar, once loaded
        return g

    @classmethod
    @pauses_gc
    def from_rules(cls, rules: Iterable[Rule], root: str = "root") -> "Grammar":
        """Validate IR ``rules`` (see ``validate_rules``); rules unreachable from ``root`` are dropped.

        Example:
            >>> from agentgrammar.grammar.ir import Rule, Literal
            >>> Grammar.from_rules([Rule("root", Literal(b"hi"))])
            Grammar(root='root', rules=['root'])
        """
        return cls(rules, root)

    @classmethod
    @pauses_gc
    def from_ebnf(cls, text: str, root: str = "root") -> "Grammar":
        """Parse GBNF / xgrammar-style EBNF (see ``agentgrammar.grammar.ebnf``).

        Example:
            >>> Grammar.from_ebnf('greeting ::= "hi" | "hello"', root="greeting").root
            'greeting'
        """
        return cls(parse_ebnf(text, root), root, _converted=True)

    @classmethod
    @pauses_gc
    def from_regex(cls, pattern: str) -> "Grammar":
        """A one-rule grammar (``root``) matching the strings that fully match ``pattern``.

        Example:
            >>> print(Grammar.from_regex(r"[A-Z][a-z]*"))
            root ::= [A-Z] [a-z]*
        """
        return cls([Rule("root", parse_regex(pattern))], "root", _converted=True)

    @classmethod
    @pauses_gc
    def from_json_schema(cls, schema: Any, **options: Any) -> "Grammar":
        """The JSON texts valid against ``schema`` (a dict, a JSON string or a Pydantic model
        class); ``options`` are those of ``json_schema.schema_rules_and_parts`` (``whitespace``,
        ``indent``, ``separators``, ``strict``, ``any_order``, ``max_whitespace``, ``lenient``). Raises
        ``SchemaError`` for what cannot be expressed exactly (unless ``lenient=True``).

        Example:
            >>> g = Grammar.from_json_schema({"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
            ...                              whitespace="compact")
            >>> g.root
            'root'
        """
        rules, root, parts = schema_rules_and_parts(schema, **options)
        try:
            return cls(rules, root, _converted=True, _parts=parts)
        except SchemaError:
            raise
        except GrammarError as e:  # e.g. a recursive schema with no way out
            raise SchemaError(f"the schema accepts no finite JSON value: {e}") from None

    @classmethod
    @pauses_gc
    def from_structural_tag(cls, tag: Any) -> "Grammar":
        """The texts a structural tag allows: ``tag`` is an ``agentgrammar.structural_tag`` model,
        the same as a dict, or JSON text, in xgrammar's format (``{"type": "structural_tag",
        "format": ...}``, or a bare format). Raises ``StructuralTagError`` with the JSON path of
        what is wrong.

        Example:
            >>> g = Grammar.from_structural_tag({"type": "tag", "begin": "<a>",
            ...     "content": {"type": "any_text"}, "end": "</a>"})
            >>> g.accepts("<a>x</a>"), g.accepts("<a>x</a>y</a>")
            (True, False)
        """
        from .structural_tag import structural_tag_rules  # imports the pydantic models

        rules, root = structural_tag_rules(tag)
        return cls(rules, root)

    @classmethod
    def builtin_json(cls, *, any_value: bool = False) -> "Grammar":
        """JSON text: the same language as xgrammar's built-in JSON grammar (an object or array
        at the top); ``any_value=True`` also allows a scalar at the top.

        Example:
            >>> Grammar.builtin_json().root
            'root'
        """
        found = _JSON_CACHE.get(any_value)
        if found is None:
            found = _JSON_CACHE[any_value] = Grammar(json_rules(any_value=any_value), "root")
        return found if cls is Grammar else cls(found.rules, found.root)

    @property
    def normalized_rules(self) -> Tuple[Rule, ...]:
        """The rules that ``to_bytes()`` serializes: ``rules`` in the same order, then the
        auxiliary rules of ``normalize_rules``. Rule index ``i`` in the C core is
        ``normalized_rules[i]``.

        Example:
            >>> [r.name for r in Grammar.from_ebnf('root ::= ("a" "b"){2}').normalized_rules]
            ['root', 'root_repeat_1']
        """
        found = self._normalized
        if found is None:
            found = tuple(normalize_rules(self.rules, use_pieces=self._pieces and bool(self.parts)))
            object.__setattr__(self, "_normalized", found)
        return found

    @property
    def parts(self) -> Tuple["Grammar", ...]:
        """The grammars this one embeds (``ir.Embed``) directly, each once, in order: the C core
        links them as prebuilt parts (see ``Compiler.compile``).

        Example:
            >>> Grammar.from_regex("a").parts
            ()
        """
        found = self._parts
        if found is None:
            found = tuple(embedded_grammars(self.rules))
            object.__setattr__(self, "_parts", found)
        return found

    def _around(self, head: bytes, end: bytes) -> "Grammar":
        """The texts ``head + s + end`` for each text ``s`` of this grammar: its rules and a new
        root rule, ``head`` then this grammar's root then ``end``. Not validated again: the new
        rule references only the root, which finishes, and this grammar's normalized rules are
        the rest of the new one's (the new rule has no repeat to normalize).

        Unlike ``Embed(self)`` between the two literals, this is one grammar: compiled by itself,
        without a part to compile and link first (``structural_tag`` wraps each tool's argument
        grammar in its call's tail this way).

        Example:
            >>> g = Grammar.from_regex("[0-9]+")._around(b"n=", b";")
            >>> g.accepts("n=42;"), g.accepts("42"), g.parts
            (True, False, ())
        """
        own = self.normalized_rules
        name = fresh_name("call", {r.name for r in own}, {})
        rule = Rule(name, seq([Literal(head), RuleRef(self.root), Literal(end)]))
        out = object.__new__(type(self))
        for slot, value in (
            ("rules", (rule, *self.rules)),
            ("root", name),
            ("_bytes", None),
            ("_normalized", (rule, *own)),
            ("_compiled_bytes", None),
            ("_parts", self._parts),  # the new rule embeds nothing
            ("_pieces", self._pieces),
            ("_link", None),
            ("_key", None),
            ("_kept", None),
        ):
            object.__setattr__(out, slot, value)
        return out

    def _linked_rules(self) -> int:
        """How many rules the C core holds for this grammar: its parts' (first), then its own."""
        return self._link_sizes()[0]

    def _linked_root(self) -> int:
        """The root's rule index in the C core (after the parts' rules)."""
        return self._link_sizes()[1]

    def _link_sizes(self) -> Tuple[int, int]:
        """(``_linked_rules``, ``_linked_root``), computed once: a part's are read by every
        grammar that links it."""
        found = self._link
        if found is None:
            before = sum(p._linked_rules() for p in self.parts)
            names = [r.name for r in self.normalized_rules]
            found = (before + len(names), before + names.index(self.root))
            object.__setattr__(self, "_link", found)
        return found

    def _embed_index(self) -> Any:
        """Rule index of each part's root past this grammar's own rules, for ``serialize``."""
        base = len(self.normalized_rules)
        index: Dict[int, int] = {}
        for part in self.parts:  # a request's hundreds of parts: their sizes read in place
            n_rules, root = part._link if part._link is not None else part._link_sizes()
            index[id(part)] = base + root
            base += n_rules
        return lambda g: index[id(g)]

    def to_bytes(self) -> bytes:
        """The serialized form the C core loads (computed once, then cached).

        Example:
            >>> len(Grammar.from_ebnf('root ::= "a"').to_bytes()) % 4
            0
        """
        data = self._bytes
        if data is None:
            embeds = self._embed_index() if self.parts else None
            data = serialize(
                self.normalized_rules, self.root, embeds, use_pieces=self._pieces and embeds is not None
            )
            object.__setattr__(self, "_bytes", data)
        return data

    def accepts(self, text: Union[str, bytes]) -> bool:
        """True when ``text`` (UTF-8 for ``str``) is a complete sentence of this grammar.

        Runs the C engine over a one-byte-per-token vocabulary; handy for checking outputs.

        Example:
            >>> g = Grammar.from_regex("a+b")
            >>> g.accepts("aab"), g.accepts("ab!"), g.accepts(b"b")
            (True, False, False)
        """
        from ..engine.compiler import byte_compiler  # the engine builds on this module
        from ..engine.matcher import Matcher

        compiled = self._compiled_bytes
        if compiled is None:
            compiled = byte_compiler().compile(self)
            object.__setattr__(self, "_compiled_bytes", compiled)
        matcher = Matcher(compiled)
        return matcher.accept_string(text) and matcher.is_completed()

    def __str__(self) -> str:
        return to_ebnf(self.rules, self.root)

    def __repr__(self) -> str:
        names = [r.name for r in self.rules]
        shown = repr(names) if len(names) <= 8 else repr(names[:8])[:-1] + f", ... ({len(names)} rules)]"
        return f"{type(self).__name__}(root={self.root!r}, rules={shown})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self.root == other.root and self.rules == other.rules

    def __hash__(self) -> int:
        return hash((self.root, self.rules))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> Tuple[object, Tuple[Tuple[Rule, ...], str]]:
        return (type(self).from_rules, (self.rules, self.root))


_JSON_CACHE: Dict[bool, Grammar] = {}
