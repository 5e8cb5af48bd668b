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

import hashlib
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .._gc_pause import pauses_gc
from ..errors import GrammarError, SchemaError
from .builtin import json_rules
from .checked_words import converted_words
from .ebnf import parse_ebnf
from .ir import (
    GrammarBase,
    Literal,
    Rule,
    RuleRef,
    embedded_grammars,
    fresh_name,
    seq,
)
from .json_schema import schema_rules_and_parts
from .memo import GRAMMAR_BYTES_PER_WORD, CountedOnce
from .normalize import normalize_rules
from .printer import to_ebnf
from .regex import parse_regex
from .serialize import serialize
from .validate import _validate, validate_rules

__all__ = [
    "Grammar",
    "content_digests",
    "normalize_rules",
    "set_acceptor",
    "set_structural_tag_converter",
    "validate_rules",
]

#: What ``Grammar.accepts`` runs: the engine's ``accepts``, which the package root hands to
#: ``set_acceptor`` (``agentgrammar/__init__.py``). The grammar layer never imports the engine,
#: which builds on it.
_acceptor: Optional[Callable[["Grammar", Union[str, bytes]], bool]] = None


def set_acceptor(accepts: Callable[["Grammar", Union[str, bytes]], bool]) -> None:
    """Make ``Grammar.accepts(text)`` call ``accepts(grammar, text)``: the package root passes
    the engine's ``agentgrammar.engine.accept.accepts`` when it is imported.

    Example:
        >>> from agentgrammar.engine.accept import accepts
        >>> set_acceptor(accepts)  # what ``import agentgrammar`` did already
        >>> Grammar.from_regex("a+").accepts("aa")
        True
    """
    global _acceptor
    _acceptor = accepts


#: What ``Grammar.from_structural_tag`` converts with: the structural-tag front-end's
#: ``structural_tag_rules``, which builds on this module (it embeds grammars made here), handed
#: over by the package ``agentgrammar.grammar`` when it is imported.
_structural_tag_rules: Optional[Callable[[Any], Tuple[Sequence[Rule], str]]] = None


def set_structural_tag_converter(convert: Callable[[Any], Tuple[Sequence[Rule], str]]) -> None:
    """Make ``Grammar.from_structural_tag(tag)`` build its rules with ``convert(tag)`` (the
    package ``agentgrammar.grammar`` passes ``structural_tag.structural_tag_rules``)."""
    global _structural_tag_rules
    _structural_tag_rules = convert


class Grammar(GrammarBase, CountedOnce):
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
        "__weakref__",  # the engine keeps what it derives from a grammar in weak maps of its own
        "_bytes",
        "_changing",
        "_digest",
        "_link",
        "_normalized",
        "_parts",
        "_pieces",
        "_shared",
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
        # a converter's rules are written now and checked from the words (checked_words.py);
        # where that cannot vouch for them, validated as any rules
        data = converted_words(rules, root, *_part_index(_parts, len(rules))) if _converted else None
        if data is None:
            kept, changing = _validate(rules, root, check_nodes=not _converted)
        else:
            kept, changing = rules, frozenset()
        if _parts and len(kept) < len(rules):  # an embed may have been in a dropped rule
            names = {r.name for r in kept}
            if embedded_grammars([r for r in rules if r.name not in names]):  # most drop none
                _parts = tuple(embedded_grammars(kept))
        object.__setattr__(self, "rules", kept)
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "_bytes", data)
        object.__setattr__(self, "_normalized", None if changing is None or changing else kept)
        object.__setattr__(self, "_changing", changing)  # for normalize_rules, until it ran
        object.__setattr__(self, "_parts", _parts if _converted else None)
        object.__setattr__(self, "_pieces", not _converted)  # pieces looked up inside rule bodies
        object.__setattr__(self, "_link", None)
        object.__setattr__(self, "_digest", None)  # see digest, once computed
        object.__setattr__(self, "_shared", False)  # see _shared_part

    @classmethod
    def _shared_part(cls, rules: Iterable[Rule], root: str) -> "Grammar":
        """A converter's grammar that many grammars embed (any JSON value): validated like
        converted rules, and marked as shared, so that the engine loads its C automata once per
        process for every compiler that links it, and keeps them while the grammar lives
        (``engine.shared_parts``)."""
        g = cls(rules, root, _converted=True)
        object.__setattr__(g, "_shared", True)
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
        rules, root, parts = schema_rules_and_parts(schema, make_part=Grammar._shared_part, **options)
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
        if _structural_tag_rules is None:
            raise GrammarError(
                "structural tags need agentgrammar.grammar.structural_tag: import agentgrammar first"
            )
        rules, root = _structural_tag_rules(tag)
        return cls(rules, root)

    @classmethod
    def union(cls, *grammars: "Grammar") -> "Grammar":
        """The texts of any one of ``grammars`` (see ``grammar.combine``).

        Example:
            >>> g = Grammar.union(Grammar.from_regex("a+"), Grammar.from_ebnf('root ::= "b"'))
            >>> g.accepts("aa"), g.accepts("b"), g.accepts("ab")
            (True, True, False)
        """
        from .combine import combine_rules

        return cls(*combine_rules(grammars, union=True))

    @classmethod
    def concat(cls, *grammars: "Grammar") -> "Grammar":
        """A text of each of ``grammars``, in order (see ``grammar.combine``).

        Example:
            >>> g = Grammar.concat(Grammar.from_regex("a+"), Grammar.from_ebnf('root ::= "b"'))
            >>> g.accepts("aab"), g.accepts("b")
            (True, False)
        """
        from .combine import combine_rules

        return cls(*combine_rules(grammars, union=False))

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
            use_pieces = self._pieces and bool(self.parts)
            found = tuple(normalize_rules(self.rules, use_pieces, self._changing))
            object.__setattr__(self, "_normalized", found)
            object.__setattr__(self, "_changing", None)
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
            ("_changing", None),
            ("_normalized", (rule, *own)),
            ("_parts", self._parts),  # the new rule embeds nothing
            ("_pieces", self._pieces),
            ("_link", None),
            ("_digest", None),
            ("_shared", False),
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
        return _part_index(self.parts, len(self.normalized_rules))[0]

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

    @property
    def digest(self) -> bytes:
        """A 20-byte digest of what the C core loads: the serialized form and, in order, the
        parts' digests (computed once). Grammars with equal digests compile alike: the
        ``Compiler`` keys what it keeps by it.

        Example:
            >>> Grammar.from_regex("a|b").digest == Grammar.from_ebnf('root ::= "a" | "b"').digest
            True
            >>> len(Grammar.from_regex("a").digest)
            20
        """
        found = self._digest
        if found is None:
            h = hashlib.blake2b(self.to_bytes(), digest_size=20)
            if self.parts:
                h.update(b"".join(content_digests(self.parts)))  # the same digest as one update per part
            found = h.digest()
            object.__setattr__(self, "_digest", found)
        return found

    def counted_bytes(self) -> int:
        """The estimated bytes of Python objects this grammar keeps (its IR, normalized rules,
        link tables and serialized words), for the caches' byte budget (``memo.grammar_bytes``):
        ``GRAMMAR_BYTES_PER_WORD`` per byte of its serialized form, or 2 KiB per rule before
        it is serialized.

        Example:
            >>> g = Grammar.from_rules([Rule("root", Literal(b"a"))])
            >>> g.counted_bytes() == 2048 * len(g.rules)  # not serialized yet
            True
            >>> words = g.to_bytes()
            >>> g.counted_bytes() == GRAMMAR_BYTES_PER_WORD * len(words)
            True
        """
        words = self._bytes
        if words is None:  # not serialized yet (never compiled): its rules, roughly
            return 2048 * len(self.rules)
        return GRAMMAR_BYTES_PER_WORD * len(words)

    def counted_parts(self) -> Tuple["Grammar", ...]:
        """The parts counted with this grammar in the caches' byte budget: those found so far
        (``parts`` is not computed for it)."""
        return self._parts or ()

    def accepts(self, text: Union[str, bytes]) -> bool:
        """True when ``text`` (UTF-8 for ``str``) is a complete sentence of this grammar.

        Runs the C engine over a one-byte-per-token vocabulary (``engine.accept.accepts``, set
        by the package root: see ``set_acceptor``); handy for checking outputs.

        Example:
            >>> g = Grammar.from_regex("a+b")
            >>> g.accepts("aab"), g.accepts("ab!"), g.accepts(b"b")
            (True, False, False)
        """
        if _acceptor is None:
            raise GrammarError("Grammar.accepts needs the engine: import agentgrammar first")
        return _acceptor(self, text)

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


def _part_index(parts: Sequence[Grammar], base: int) -> Tuple[Callable[[Any], int], int]:
    """The rule index of each part's root when its rules follow ``base`` rules and the parts
    before it (by the part), and the rules the parts add."""
    index: Dict[int, int] = {}
    start = base
    for part in parts:  # a request's hundreds of parts: their sizes read in place
        n_rules, root = part._link if part._link is not None else part._link_sizes()
        index[id(part)] = base + root
        base += n_rules
    return (lambda g: index[id(g)]), base - start


def content_digests(grammars: Sequence[Grammar]) -> List[bytes]:
    """``digest`` of each grammar: a request's hundreds of parts, their digests read in place.

    Example:
        >>> g = Grammar.from_regex("a")
        >>> content_digests([g, g]) == [g.digest, g.digest]
        True
    """
    return [g._digest if g._digest is not None else g.digest for g in grammars]
