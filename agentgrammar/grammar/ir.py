"""The grammar IR: what every front-end produces and what the C core loads.

A grammar is a list of named rules; each rule has a body expression built from
the node types below. Character classes are kept at the Unicode level here (so
that a grammar prints back as readable EBNF) and lowered to UTF-8 byte ranges
only when the grammar is serialized for the C core (see ``serialize.py``).

Example:
    >>> from agentgrammar.grammar.ir import Rule, Seq, Literal, RuleRef
    >>> Rule("root", Seq((Literal(b"a"), RuleRef("root"))))
    Rule(name='root', body=Seq(items=(Literal(value=b'a'), RuleRef(name='root'))))
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from . import pieces
from .utf8 import MAX_CODE_POINT as MAX_CODE_POINT  # the bound of a CharClass, kept importable here
from .utf8 import cut_points

_set = object.__setattr__  # how a node's __init__ fills its slots past its __setattr__


class _Node:
    """The base of the node types that converters make most (hundreds per JSON Schema): plain
    classes with ``__slots__`` that behave as frozen dataclasses (the same ``==``, ``hash``
    and ``repr``; assigning a field raises ``FrozenInstanceError``), whose ``__init__`` is
    cheaper than a frozen dataclass's. ``_fields``: a node's fields, in order."""

    __slots__ = ()
    _fields: Tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:  # pickle and copy go through __init__
        return (type(self), tuple(getattr(self, name) for name in self._fields))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"


class Literal(_Node):
    """An exact byte string (UTF-8 for text)."""

    __slots__ = ("__weakref__", "value")
    _fields = ("value",)
    value: bytes

    def __init__(self, value: bytes) -> None:
        _set(self, "value", value)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self.value == other.value  # type: ignore[attr-defined,no-any-return]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.value,))


@dataclass(frozen=True)
class CharClass:
    """One Unicode character from ``ranges`` (inclusive), or outside them if ``negated``.

    Ranges are code points; a negated class matches any code point in
    ``[0, 0x10FFFF]`` not covered by ``ranges``.
    """

    ranges: Tuple[Tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True)
class ByteClass:
    """One raw byte from ``ranges`` (inclusive, 0..255). Used for non-UTF-8 grammars."""

    ranges: Tuple[Tuple[int, int], ...]


class Seq(_Node):
    """The items one after the other. ``Seq(())`` is the empty string."""

    __slots__ = ("__weakref__", "items")
    _fields = ("items",)
    items: Tuple["Expr", ...]

    def __init__(self, items: Tuple["Expr", ...]) -> None:
        _set(self, "items", items)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self.items == other.items  # type: ignore[attr-defined,no-any-return]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.items,))


@dataclass(frozen=True)
class Choice:
    """Exactly one of the alternatives."""

    # a dataclass, not a _Node: KeyTrie, a subclass, makes its items when first asked
    # (__getattr__), and a walk over slots (memo.sizes) would ask

    items: Tuple["Expr", ...]


class RuleRef(_Node):
    """A reference to another rule by name."""

    __slots__ = ("__weakref__", "name")
    _fields = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        _set(self, "name", name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self.name == other.name  # type: ignore[attr-defined,no-any-return]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.name,))


class Repeat(_Node):
    """``item`` repeated between ``min`` and ``max`` times (``max=None``: unbounded)."""

    __slots__ = ("__weakref__", "item", "max", "min")
    _fields = ("item", "min", "max")
    item: "Expr"
    min: int
    max: Optional[int]

    def __init__(self, item: "Expr", min: int, max: Optional[int]) -> None:
        _set(self, "item", item)
        _set(self, "min", min)
        _set(self, "max", max)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.item, self.min, self.max) == (other.item, other.min, other.max)  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.item, self.min, self.max))


class CountedText(_Node):
    """The strings of ``body`` that are ``min`` to ``max`` (None: no bound) copies of ``char``:
    a pattern's string under length bounds, its characters counted by the C core in the
    pattern's own automaton, so that its size does not grow with the bounds. ``body`` is a
    bytes-only expression, or one whose rule references are right-linear (each the last thing
    its rule matches, as ``CharDFA.to_ir`` writes a pattern's states) to rules of bytes;
    ``char`` is one character (a JSON string's), a bytes-only expression that no longer
    character starts with. The C core refuses a body whose lengths may have gaps near a way
    out (``"(ab)+"``): a converter checks ``counted_text.counts_in_own_states`` first.

    Example:
        >>> t = CountedText(RuleRef("digits"), RuleRef("char"), 1, 300)
        >>> (t.min, t.max)
        (1, 300)
    """

    __slots__ = ("__weakref__", "body", "char", "max", "min")
    _fields = ("body", "char", "min", "max")
    body: "Expr"
    char: "Expr"
    min: int
    max: Optional[int]

    def __init__(self, body: "Expr", char: "Expr", min: int, max: Optional[int]) -> None:
        _set(self, "body", body)
        _set(self, "char", char)
        _set(self, "min", min)
        _set(self, "max", max)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.body, self.char, self.min, self.max) == (
                other.body,  # type: ignore[attr-defined]
                other.char,  # type: ignore[attr-defined]
                other.min,  # type: ignore[attr-defined]
                other.max,  # type: ignore[attr-defined]
            )
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.body, self.char, self.min, self.max))


@dataclass(frozen=True)
class TagDispatch:
    """Free text watched for words, as xgrammar's ``TagDispatch``; the C core runs it as one
    Aho–Corasick automaton.

    The text is bytes in which the first occurrence of a word decides what follows: a trigger
    ``(word, rule)`` continues with that rule, then free text again (``loop_after_dispatch``)
    or the end; a ``stop_str`` ends the text right after it; an ``excludes`` word is never
    allowed. With ``stop_eos`` the text may also end anywhere in free text. Words are
    non-empty; where a trigger or stop and an exclude end at the same byte, the exclude wins and
    the text is rejected (as in xgrammar).

    Example:
        >>> d = TagDispatch(triggers=((b"<call>", "call"),), excludes=(b"</think>",))
        >>> d.words()
        [b'<call>', b'</think>']
    """

    triggers: Tuple[Tuple[bytes, str], ...] = ()
    stop_eos: bool = True
    stop_str: Tuple[bytes, ...] = ()
    loop_after_dispatch: bool = True
    excludes: Tuple[bytes, ...] = ()

    def words(self) -> List[bytes]:
        """Every word the automaton watches: triggers, stop strings, then excludes."""
        return [t for t, _ in self.triggers] + list(self.stop_str) + list(self.excludes)


class GrammarBase:
    """The base class of ``agentgrammar.grammar.Grammar``, a validated, complete grammar: what
    an ``Embed`` holds. Declared here so that the IR names it without importing the Grammar
    facade, which builds on the IR.

    Example:
        >>> from agentgrammar.grammar import Grammar
        >>> isinstance(Grammar.from_regex("a"), GrammarBase)
        True
    """

    __slots__ = ()


@dataclass(frozen=True, eq=False)
class Embed:
    """The language of another, complete ``Grammar`` (its root rule), used as one part.

    The compiler builds an embedded grammar once and links it into every grammar that embeds
    the same object: a tool's argument grammar costs nothing in the next request, and its
    token masks, once computed, serve every request. Compared by identity.

    Example:
        >>> from agentgrammar.grammar import Grammar
        >>> args = Grammar.from_regex("[0-9]+")
        >>> g = Grammar.from_rules([Rule("root", Seq((Literal(b"n="), Embed(args))))])
        >>> g.accepts("n=42"), g.parts == (args,)
        (True, True)
    """

    grammar: Any  # an agentgrammar.grammar.Grammar (a GrammarBase: grammar.py imports this module)


class KeyTrie(Choice):
    """The rest of a JSON object key, after its opening quote, that spells none of ``names``
    (non-empty, printable ASCII that JSON writes raw): an object's other keys, as one node.

    Along a trie of the names, each prefix may take the closing quote (unless it is a name),
    the next character of a name, or a character that continues no name and then ``tail``
    (the rest of any string). That character is raw, from ``raw`` less the names' next
    characters, or ``escape`` (an escape that spells no printable ASCII); past a whole name it
    is ``any_char``. Stages that know the node work from the names (the serializer writes
    one node of them, from which the C core builds the trie); its ``items``, the same trie
    as plain IR, are made when anything else first asks for them. Built as IR up front, the
    trie was most of the conversion and serialization of a typical schema, whose objects
    allow other keys.

    Example:
        >>> tail = Seq((Repeat(RuleRef("char"), 0, None), Literal(b'"')))
        >>> t = KeyTrie(("id",), tail, RuleRef("esc"), RuleRef("char"), ((0x20, 0x21), (0x23, 0x7E)))
        >>> [type(x).__name__ for x in t.items]
        ['Literal', 'Seq', 'Seq']
    """

    names: Tuple[str, ...]
    tail: "Expr"
    escape: "Expr"
    any_char: "Expr"
    raw: Tuple[Tuple[int, int], ...]

    def __init__(
        self,
        names: Tuple[str, ...],
        tail: "Expr",
        escape: "Expr",
        any_char: "Expr",
        raw: Tuple[Tuple[int, int], ...],
    ) -> None:
        for key, value in (
            ("names", names),
            ("tail", tail),
            ("escape", escape),
            ("any_char", any_char),
            ("raw", raw),
        ):
            object.__setattr__(self, key, value)

    @property
    def parts(self) -> Tuple["Expr", "Expr", "Expr"]:
        """The expressions it holds besides its names: ``tail``, ``escape``, ``any_char``."""
        return (self.tail, self.escape, self.any_char)

    def __getattr__(self, name: str) -> Any:
        if name != "items":
            raise AttributeError(name)
        items = self._expand().items  # type: ignore[union-attr]
        object.__setattr__(self, "items", items)
        return items

    def subtries(self) -> List[Dict[str, Any]]:
        """The trie of the names, each node a dict from a character to the subtrie after it
        (in the order of the names; the key ``""`` marks the end of a name), listed with
        every subtrie before the one holding it: the root is last. Stages that build on the
        trie go through this list, not by recursion, so a name may be as long as a key may."""
        root: Dict[str, Any] = {}
        for name in self.names:
            node = root
            for c in name:
                node = node.setdefault(c, {})
            node[""] = None
        order, stack = [], [root]
        while stack:  # parents before their subtries, then reversed
            node = stack.pop()
            order.append(node)
            for c, child in node.items():
                if c:
                    stack.append(child)
        order.reverse()
        return order

    def _expand(self) -> "Expr":
        made: Dict[int, Expr] = {}  # by the id of a subtrie: all stay alive until the end
        nodes = self.subtries()
        for node in nodes:
            kids = [(c, made[id(child)]) for c, child in node.items() if c]
            alts: List[Expr] = [] if "" in node else [Literal(b'"')]
            if kids:
                raw = CharClass(tuple(cut_points(self.raw, [ord(c) for c, _ in kids])))
                alts.append(Seq((Choice((raw, self.escape)), self.tail)))
            else:
                alts.append(Seq((self.any_char, self.tail)))
            for c, rest in kids:
                head = Literal(c.encode("ascii"))
                alts.append(Seq((head, *rest.items)) if type(rest) is Seq else Seq((head, rest)))  # type: ignore[union-attr]
            made[id(node)] = alts[0] if len(alts) == 1 else Choice(tuple(alts))
        return made[id(nodes[-1])]


Expr = Union[Literal, CharClass, ByteClass, Seq, Choice, RuleRef, Repeat, CountedText, TagDispatch, Embed]

#: The empty string.
EMPTY = Seq(())


class Rule(_Node):
    """A named rule."""

    __slots__ = ("__weakref__", "body", "name")
    _fields = ("name", "body")
    name: str
    body: Expr

    def __init__(self, name: str, body: Expr) -> None:
        _set(self, "name", name)
        _set(self, "body", body)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.name, self.body) == (other.name, other.body)  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.name, self.body))


def seq(items: Sequence[Expr]) -> Expr:
    """A sequence, flattened, with adjacent literals merged and empty ones dropped.

    Example:
        >>> seq([Literal(b"a"), Seq((Literal(b"b"), RuleRef("x"))), Literal(b"")])
        Seq(items=(Literal(value=b'ab'), RuleRef(name='x')))
    """
    merged: List[Expr] = []
    last: Optional[Literal] = None  # merged[-1] when it is a literal
    # every JSON object's members pass here: an item that is no sequence, the usual one,
    # takes a branch of its own, without the loop over a sequence's items
    for x in items:
        t = type(x)
        if t is Literal:
            if not x.value:  # type: ignore[union-attr]
                continue
            if last is not None:
                last = merged[-1] = Literal(last.value + x.value)  # type: ignore[union-attr]
                continue
            last = x  # type: ignore[assignment]
            merged.append(x)
            continue
        if t is not Seq:
            last = None
            merged.append(x)
            continue
        for y in x.items:  # type: ignore[union-attr]
            if type(y) is not Literal:
                last = None
            elif not y.value:  # type: ignore[union-attr]
                continue
            elif last is not None:
                last = merged[-1] = Literal(last.value + y.value)  # type: ignore[union-attr]
                continue
            else:
                last = y  # type: ignore[assignment]
            merged.append(y)
    return merged[0] if len(merged) == 1 else Seq(tuple(merged))


def choice(items: Sequence[Optional[Expr]]) -> Optional[Expr]:
    """A choice of the items that are not None, flattened; None when there are none. Equal
    leaves are dropped (comparing deep trees would cost more than the duplicate does).

    Example:
        >>> choice([Literal(b"a"), None, Choice((Literal(b"a"), Literal(b"b")))])
        Choice(items=(Literal(value=b'a'), Literal(value=b'b')))
    """
    alts: List[Expr] = []
    for x in items:
        if x is None:
            continue
        for y in x.items if type(x) is Choice else (x,):
            if not (type(y) in (Literal, CharClass) and y in alts):
                alts.append(y)
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else Choice(tuple(alts))


def referenced_rules(e: Expr) -> List[str]:
    """The names of the rules ``e`` references, each once, in no particular order.

    Example:
        >>> sorted(referenced_rules(Seq((RuleRef("a"), Repeat(RuleRef("b"), 0, None), RuleRef("a")))))
        ['a', 'b']
    """
    out: Dict[str, None] = {}
    stack = [e]
    while stack:
        x = stack.pop()
        if type(x) is RuleRef:
            out[x.name] = None  # type: ignore[union-attr]
        elif type(x) is KeyTrie:
            stack.extend(x.parts)  # type: ignore[union-attr]
        elif type(x) in (Seq, Choice):
            stack.extend(x.items)  # type: ignore[union-attr]
        elif type(x) is Repeat:
            stack.append(x.item)  # type: ignore[union-attr]
        elif type(x) is CountedText:
            stack.extend((x.body, x.char))  # type: ignore[union-attr]
        elif type(x) is TagDispatch:
            for _, name in x.triggers:  # type: ignore[union-attr]
                out[name] = None
    return list(out)


def fresh_name(base: str, taken: Set[str], counters: Dict[str, int]) -> str:
    """A rule name not in ``taken`` (which it joins): ``base``, then ``base_2``, ``base_3``, ...
    ``counters`` remembers where each base left off, so naming n rules after one base costs
    O(n), not O(n**2).

    Example:
        >>> taken, counters = {"x"}, {}
        >>> [fresh_name("x", taken, counters) for _ in range(2)], fresh_name("y", taken, counters)
        (['x_2', 'x_3'], 'y')
    """
    n = counters.get(base, 1)
    name = base if n == 1 else f"{base}_{n}"
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    counters[base] = n + 1
    taken.add(name)
    return name


def rename(e: Expr, names: Dict[str, str], embeds: Optional[Dict[int, str]] = None) -> Expr:
    """``e`` with rule references (and TagDispatch triggers' rules) renamed by ``names``; with
    ``embeds`` (``id(grammar)`` -> rule name), each ``Embed`` becomes a reference to that rule.

    Example:
        >>> rename(Seq((RuleRef("a"), Literal(b"x"))), {"a": "b"})
        Seq(items=(RuleRef(name='b'), Literal(value=b'x')))
    """
    t = type(e)
    if t is RuleRef:
        return RuleRef(names.get(e.name, e.name))  # type: ignore[union-attr]
    if t is Seq:
        return Seq(tuple(rename(x, names, embeds) for x in e.items))  # type: ignore[union-attr]
    if t is Choice:
        return Choice(tuple(rename(x, names, embeds) for x in e.items))  # type: ignore[union-attr]
    if t is Repeat:
        return Repeat(rename(e.item, names, embeds), e.min, e.max)  # type: ignore[union-attr]
    if t is CountedText:
        c: CountedText = e  # type: ignore[assignment]
        return CountedText(rename(c.body, names, embeds), rename(c.char, names, embeds), c.min, c.max)
    if t is TagDispatch:
        d: TagDispatch = e  # type: ignore[assignment]
        triggers = tuple((w, names.get(r, r)) for w, r in d.triggers)
        return TagDispatch(triggers, d.stop_eos, d.stop_str, d.loop_after_dispatch, d.excludes)
    if t is Embed and embeds is not None:
        return RuleRef(embeds[id(e.grammar)])  # type: ignore[union-attr]
    if t is KeyTrie:
        k: KeyTrie = e  # type: ignore[assignment]
        return KeyTrie(k.names, *(rename(x, names, embeds) for x in k.parts), k.raw)
    return e


def embedded_grammars(rules: Sequence[Rule]) -> List[Any]:
    """The grammars that ``rules`` embed directly, each once, in order of first appearance."""
    return _embeds_in([r.body for r in rules])


def _embeds_in(roots: Sequence[Expr]) -> List[Any]:
    """``embedded_grammars`` of expressions; a piece's (``pieces.mark``) are found once, then
    looked up."""
    out: Dict[int, Any] = {}
    for root in roots:
        stack = [root]
        while stack:
            x = stack.pop()
            t = type(x)
            if t is Embed:
                out.setdefault(id(x.grammar), x.grammar)  # type: ignore[union-attr]
            elif t is Seq or t is Choice:
                piece = pieces.info(x)
                if piece is None:
                    stack.extend(reversed(x.items))  # type: ignore[union-attr]
                    continue
                if piece.embeds is None:
                    piece.embeds = tuple(_embeds_in(x.items))  # type: ignore[union-attr]
                for g in piece.embeds:
                    out.setdefault(id(g), g)
            elif t is Repeat:
                stack.append(x.item)  # type: ignore[union-attr]
            elif t is CountedText:
                stack.extend((x.body, x.char))  # type: ignore[union-attr]
    return list(out.values())


def flatten_embeds(rules: Sequence[Rule]) -> List[Rule]:
    """Equivalent rules without ``Embed``: each embedded grammar's rules are appended once,
    renamed apart, and its embeds become references to its root.

    Example:
        >>> from agentgrammar.grammar import Grammar
        >>> digits = Grammar.from_regex("[0-9]+")
        >>> [r.name for r in flatten_embeds([Rule("root", Embed(digits))])]
        ['root', 'root_2']
    """
    out = list(rules)
    taken = {r.name for r in out}
    bodies = {r.name: r.body for r in out}
    counters: Dict[str, int] = {}
    embeds: Dict[int, str] = {}
    queue = embedded_grammars(out)
    for g in queue:  # grows as embedded grammars reveal their own embeds
        if id(g) in embeds:
            continue
        same = _same_rules(g.rules, bodies)
        names = {r.name: r.name if r.name in same else fresh_name(r.name, taken, counters) for r in g.rules}
        embeds[id(g)] = names[g.root]
        added = [Rule(names[r.name], rename(r.body, names)) for r in g.rules if r.name not in same]
        out.extend(added)
        bodies.update((r.name, r.body) for r in added)
        queue.extend(x for x in embedded_grammars(g.rules) if id(x) not in embeds)
    return [Rule(r.name, rename(r.body, {}, embeds)) for r in out]


def _same_rules(rules: Sequence[Rule], bodies: Dict[str, Expr]) -> Set[str]:
    """The rules that are already among ``bodies`` (same name, the very same body object, as a
    converter's shared base rules are) and reference only such rules: they need no copy."""
    same = {r.name for r in rules if bodies.get(r.name) is r.body}
    refs = {r.name: referenced_rules(r.body) for r in rules if r.name in same}
    changed = True
    while changed:  # drop those that reference a rule that is copied under a new name
        changed = False
        for name in list(same):
            if any(ref not in same and ref in bodies for ref in refs[name]):
                same.discard(name)
                changed = True
    return same
