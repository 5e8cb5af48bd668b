"""Convert a JSON Schema into grammar IR: the JSON texts that are instances of the schema.

Entry point: ``json_schema_rules(schema, ...) -> (rules, root_name)``; ``Grammar.from_json_schema``
wraps it. ``schema`` is a dict, a JSON string, or a Pydantic model class.

Semantics follow draft 2020-12 (with the older spellings ``definitions``, ``items`` as an array +
``additionalItems`` and draft-4 boolean ``exclusiveMinimum`` / ``exclusiveMaximum``).

Supported: boolean schemas; ``type`` (a name or a list); ``enum`` / ``const`` (each value in
its JSON serialization with the chosen layout; strings in both their raw-UTF-8 and their
``ensure_ascii`` spellings); ``properties`` (in schema order), ``required``,
``additionalProperties`` (true / false / a schema; default true unless ``strict=True``; extra
members come after the declared ones and their keys can never spell a declared name, escapes
included), ``patternProperties`` (up to four patterns: keys are split by the set of patterns they
match, each class an automaton), ``propertyNames`` (string constraints on keys),
``minProperties`` / ``maxProperties`` (members counted, one rule per position and count); ``items``, ``prefixItems``, older ``items: [...]`` + ``additionalItems``,
``minItems`` / ``maxItems``, ``uniqueItems: false``, ``contains`` with ``minContains`` /
``maxContains`` (without ``prefixItems`` or item counts; ``contains`` must be negatable); ``minLength`` / ``maxLength`` (code points:
a surrogate-pair escape counts as one, lone surrogate escapes are not generated);
``pattern`` / ``format`` and numeric bounds through ``json_values``, and any combination of
``pattern``, ``format``, lengths and negated patterns or values through ``char_dfa`` (refused
past ``char_dfa.PRODUCT_LIMIT`` states or ``char_dfa.MAX_WORK`` steps); ``anyOf``; ``oneOf`` when the branches are provably
disjoint (by type, or by a required property with disjoint constants) or when each branch can
be negated (each branch and not the others); ``allOf`` (merged into one schema, siblings of
``$ref`` / ``anyOf`` / ``oneOf`` too); ``not`` of the common forms (``type``, ``enum`` / ``const`` of scalars, ``required``, ``properties``,
length / item / property / numeric bounds, ``pattern``, ``anyOf``, nested ``not``);
``if`` / ``then`` / ``else`` when ``if`` can be negated; ``dependentRequired``,
``dependentSchemas`` and draft-7 ``dependencies``; ``$ref`` to ``#``, ``#/$defs/..``,
``#/definitions/..`` and any JSON pointer (``~0`` ``~1`` and %-escapes), recursion included
(each referenced schema becomes one shared rule); ``nullable``.

Keywords outside every draft's vocabulary (``x-...``, draft-4 ``id``, tool extensions) and
formats the specification does not define are annotations: they constrain nothing. Anything
else raises ``SchemaError`` naming the keyword and its JSON pointer (member counts needing more
than 4,096 rules, ``uniqueItems: true``,
fractional ``multipleOf``, ``unevaluated*``, ``$dynamicRef``, the ``regex`` / ``idn-*`` /
``uri-template`` formats, external or anchor ``$ref``s, negations and ``oneOf``s beyond the forms
above, ...); with ``lenient=True`` a warning is issued instead and the constraint is
over-approximated (ignored, or for ``oneOf`` treated as ``anyOf``) so that no valid instance is
lost. Unsatisfiable schemas raise ``SchemaError``.

Soundness comes first: no text is accepted whose value is not valid. The known
under-approximations (valid values in spellings or orders that are rejected): declared
property names and string constants only in their raw-UTF-8 and ``ensure_ascii`` spellings;
additional members only after the declared ones (declared ones in schema order); where an
additional key could still spell a declared name, ``\\u`` escapes of printable ASCII are not
generated; integers only as ``-?(0|[1-9][0-9]*)`` (not ``1.0``); numbers under ``multipleOf``
only in that integer spelling, and numbers under a negated ``integer`` type or a negated numeric
``enum`` / ``const`` only without exponent or trailing fraction zeros; numeric constants in their
``json.dumps`` spelling (and ``2`` for ``2.0``); lone surrogate escapes only in strings without
length constraints. ``format`` is asserted (the spec makes it an annotation by default).

Layout: ``whitespace="flexible"`` allows JSON whitespace ``[ \\t\\n\\r]*`` between tokens
(at most ``max_whitespace`` characters per run when given), ``"compact"`` exactly ``separators``
(default ``(", ", ": ")``, as ``json.dumps``), ``indent=N`` the ``json.dumps(indent=N)`` layout
(separators default ``(",", ": ")``); past ``INDENT_DEPTH_LIMIT`` levels of nesting the
indented layout falls back to flexible whitespace (recursive schemas nest without bound).
No whitespace is allowed before or after the top-level value.

Example:
    >>> rules, root = json_schema_rules({"type": "object", "properties": {"a": {"type": "boolean"}},
    ...                                  "required": ["a"], "additionalProperties": False},
    ...                                 whitespace="compact")
    >>> root, [r.name for r in rules]
    ('root', ['root'])
"""

from __future__ import annotations

import json
import math
import re
import warnings
from decimal import Decimal
from functools import lru_cache
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union
from urllib.parse import unquote

from ..errors import GrammarError, SchemaError
from . import json_values, pieces
from .char_dfa import PRODUCT_LIMIT, CharDFA
from .ir import (
    EMPTY,
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
    fresh_name,
    referenced_rules,
    seq,
)
from .regex import parse_regex
from .utf8 import cut_points, normalize_ranges

__all__ = ["ANY_ORDER_LIMIT", "INDENT_DEPTH_LIMIT", "json_schema_rules", "schema_rules_and_parts"]


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(x, separators=(",", ":"))``, its C encoder made once: sub() keys every
    sub-schema by its compact JSON text, hundreds of times per tool registry, and making the
    encoder was most of the cost of encoding a small sub-schema. Without the circular-reference
    check: ``_check_depth`` has refused a document that contains itself."""
    encoder = json.JSONEncoder(separators=(",", ":"))
    make = getattr(json.encoder, "c_make_encoder", None)
    try:  # the arguments JSONEncoder.iterencode passes it
        c_encode = make(None, encoder.default, _json_str, None, ":", ",", False, False, True)  # type: ignore[misc]
    except TypeError:  # no C accelerator (None), or one of another signature
        return encoder.encode
    return lambda x: "".join(c_encode(x, 0))


_compact_json = _compact_encoder()


def choice(items: Sequence[Optional[Expr]]) -> Optional[Expr]:
    """``ir.choice`` (flattened, None dropped, equal leaves dropped), in linear time: an
    ``enum`` of ten thousand values is one choice, and a list scan per value is quadratic."""
    alts: List[Expr] = []
    leaves: Set[Expr] = set()
    for x in items:
        if x is None:
            continue
        for y in x.items if type(x) is Choice else (x,):  # type: ignore[attr-defined]
            if type(y) in (Literal, CharClass):
                try:
                    if y in leaves:
                        continue
                    leaves.add(y)
                except TypeError:  # unhashable (ranges not a tuple): compared the slow way
                    if y in alts:
                        continue
            alts.append(y)
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else Choice(tuple(alts))


#: The most declared properties an object may have for ``any_order=True`` (2**n rules).
ANY_ORDER_LIMIT = 8

#: Nesting depth past which ``indent=`` output falls back to flexible whitespace.
INDENT_DEPTH_LIMIT = 16
_MAX_LEVEL = 100  # nested sub-schema conversions (guards recursion through merged '$ref's)

_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "example",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "$anchor",
        "$vocabulary",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "discriminator",
        "xml",
        "externalDocs",
    }
)
_OBJECT_KW = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
    }
)
_MAX_PATTERN_PROPERTIES = 4  # keys are split by which patterns they match: 2**n classes
_ARRAY_KW = frozenset(
    {
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
    }
)
_MAX_CONTAINS = 256  # minContains / maxContains are counted with one rule per count
# Array keywords whose meaning depends on each other within one schema object.
_POSITIONAL_KW = frozenset({"items", "prefixItems", "additionalItems"})


def _has_positional(s: Dict[str, Any]) -> bool:
    return any(k in s for k in _POSITIONAL_KW)


def _positions(s: Dict[str, Any], conv: Any, path: str) -> Tuple[List[Any], Any]:
    """(schemas of the leading positions, schema of every later element) of one schema,
    accepting both the 2020-12 spelling and the older ``items: [...]`` + ``additionalItems``."""
    items = s.get("items", True)
    if isinstance(items, list):
        return list(items), s.get("additionalItems", True)
    prefix = s.get("prefixItems", [])
    if not isinstance(prefix, list):
        raise conv.fail("'prefixItems' must be an array", path, "prefixItems")
    return list(prefix), items


# Internal keywords that ``not`` is rewritten into: strings matching none of the patterns,
# strings equal to none of the values.
_NOT_PATTERNS = "$agentgrammar:notPatterns"
_NOT_STRINGS = "$agentgrammar:notStrings"
_AND_PATTERNS = "$agentgrammar:patterns"  # more patterns that must all match (from allOf merges)
_NOT_INTEGER = "$agentgrammar:notInteger"  # a number with a non-zero fraction (no exponent)
_NOT_NUMBERS = "$agentgrammar:notNumbers"  # numbers equal to none of these
_INTERNAL_KW = (_NOT_PATTERNS, _NOT_STRINGS, _AND_PATTERNS, _NOT_NUMBERS)
_STRING_KW = frozenset({"minLength", "maxLength", "pattern", "format", *_INTERNAL_KW})
_NUMBER_KW = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", _NOT_INTEGER, _NOT_NUMBERS}
)
_MAX_MODULUS = 2_000  # multipleOf k for integers is a DFA of k + 3 states
_GENERIC_KW = frozenset({"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable", "not"})
# Keywords rewritten into anyOf / allOf / not before conversion.
_REWRITTEN_KW = frozenset({"if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas"})
_MAX_COUNTED_RULES = 4_096  # min/maxProperties: one rule per (member position, count)
_MAX_ONE_OF = 8  # oneOf branches made exclusive by negating the others (n * (n - 1) negations)
_KNOWN = _ANNOTATIONS | _OBJECT_KW | _ARRAY_KW | _STRING_KW | _NUMBER_KW | _GENERIC_KW | _REWRITTEN_KW
# Validation keywords of some draft that are not (or not yet) converted here: a schema that
# uses one raises SchemaError (or, lenient, warns). Keywords outside every draft's vocabulary
# ("x-...", "id" of draft 4, tool-specific extensions, typos) are annotations by the spec:
# they constrain nothing, so they are ignored.
_UNSUPPORTED = frozenset(
    {
        "divisibleBy",
        "unevaluatedProperties",
        "unevaluatedItems",
        "$dynamicRef",
        "$recursiveRef",
        "disallow",
        "extends",
    }
)


#: The largest count a length or size keyword may give (larger ones could never be generated).
MAX_COUNT = 2**31 - 1


def _count(schema: Dict[str, Any], keyword: str, conv: Any, path: str) -> Optional[int]:
    """A count keyword's value (``2.0`` reads as 2); SchemaError unless a non-negative integer
    up to ``MAX_COUNT``."""
    x = schema.get(keyword)
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
        raise conv.fail(f"'{keyword}' must be a non-negative integer", path, keyword)
    if x is not None and x > MAX_COUNT:
        raise conv.fail(f"'{keyword}' is {x}; the largest supported is {MAX_COUNT}", path, keyword)
    return x


def _bounds(schema: Dict[str, Any]) -> Optional[Tuple[int, Optional[int]]]:
    """A string schema's ``minLength`` and ``maxLength``; None when either is malformed."""
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    for x in (lo, hi):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_COUNT):
            return None
    return (lo, hi) if lo is not None else None


_MAX_UNION_LEAVES = 256  # string schemas united into one automaton (string_union)


@lru_cache(maxsize=1)
def _canonical_number_dfa() -> CharDFA:
    return CharDFA.from_expr(parse_regex(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?"))


def _number_spellings(v: Any) -> List[str]:
    """The spellings of number ``v`` in the canonical language (two for zero: ``0``, ``-0``)."""
    d = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    if d == 0:
        return ["0", "-0"]
    text = format(d.normalize(), "f")
    return [text.rstrip("0").rstrip(".") if "." in text else text]


@lru_cache(maxsize=1)
def _fraction_dfa() -> CharDFA:
    return CharDFA.from_expr(parse_regex(r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*"))


@lru_cache(maxsize=64)
def _remainder_dfa(k: int) -> CharDFA:
    """JSON integers ``0|-?[1-9][0-9]*`` that ``k`` divides: one state per remainder."""
    start, minus, zero = k, k + 1, k + 2  # remainders are states 0..k-1 (0 accepting)
    edges: List[List[Tuple[int, int, int]]] = [[] for _ in range(k + 3)]
    for r in range(k):
        edges[r] = [(0x30 + d, 0x30 + d, (r * 10 + d) % k) for d in range(10)]
    edges[start] = [(0x2D, 0x2D, minus), (0x30, 0x30, zero)] + [
        (0x30 + d, 0x30 + d, d % k) for d in range(1, 10)
    ]
    edges[minus] = [(0x30 + d, 0x30 + d, d % k) for d in range(1, 10)]
    accepting = [r == 0 for r in range(k)] + [False, False, True]
    order = [start, *range(k), minus, zero]  # the start must be state 0
    new = {old: i for i, old in enumerate(order)}
    remapped = [[(lo, hi, new[t]) for lo, hi, t in edges[old]] for old in order]
    return CharDFA(remapped, [accepting[old] for old in order]).minimized()


@lru_cache(maxsize=512)
def _pattern_dfa(pattern: str) -> CharDFA:
    return CharDFA.from_expr(json_values.pattern_chars(pattern))


@lru_cache(maxsize=None)
def _format_dfa(name: str) -> CharDFA:
    expr = json_values.format_chars(name)
    assert expr is not None
    return CharDFA.from_expr(expr)


def _is_annotation(keyword: str) -> bool:
    """Whether ``keyword`` constrains nothing: a known annotation, or outside the vocabulary."""
    return keyword in _ANNOTATIONS or (keyword not in _KNOWN and keyword not in _UNSUPPORTED)


_TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
_ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")

# --------------------------------------------------------------------------- lexical pieces

_DQ = Literal(b'"')
_HEX_UPPER = {d: "0123456789ABCDEF"[d] for d in range(16)}


def _hex_digits(lo: int, hi: int) -> CharClass:
    """One hex digit with value in [lo, hi], either case."""
    ranges = []
    for d in range(lo, hi + 1):
        ranges.append((ord("0123456789abcdef"[d]),) * 2)
        if d >= 10:
            ranges.append((ord(_HEX_UPPER[d]),) * 2)
    return CharClass(tuple(normalize_ranges(ranges)))


def _minus(ranges: Sequence[Tuple[int, int]], points: Iterable[int]) -> List[Tuple[int, int]]:
    """``ranges`` without the code points ``points``."""
    return cut_points(normalize_ranges(ranges), points)


def _opt(e: Expr) -> Expr:
    return Repeat(e, 0, 1)


@lru_cache(maxsize=None)
def _hex_fixed(lo: int, hi: int, width: int) -> Expr:
    """``width`` hex digits (either case) spelling a number in [lo, hi]."""
    if width == 0:
        return EMPTY
    p = 16 ** (width - 1)
    lo_d, hi_d = divmod(lo, p)[0], divmod(hi, p)[0]
    if lo_d == hi_d:
        return seq([_hex_digits(lo_d, lo_d), _hex_fixed(lo % p, hi % p, width - 1)])
    alts: List[Optional[Expr]] = []
    first_full, last_full = lo_d, hi_d
    if lo % p:
        alts.append(seq([_hex_digits(lo_d, lo_d), _hex_fixed(lo % p, p - 1, width - 1)]))
        first_full += 1
    last = None
    if hi % p != p - 1:
        last = seq([_hex_digits(hi_d, hi_d), _hex_fixed(0, hi % p, width - 1)])
        last_full -= 1
    if first_full <= last_full:
        alts.append(seq([_hex_digits(first_full, last_full), _hex_fixed(0, p - 1, width - 1)]))
    alts.append(last)
    out = choice(alts)
    assert out is not None
    return out


def _hex4_in(ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
    return choice([_hex_fixed(lo, hi, 4) for lo, hi in normalize_ranges(ranges)])


#: Characters a JSON string holds raw: not ``"``, ``\\``, a control character or a surrogate.
_RAW_RANGES = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))  # normalized
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SHORT_ESCAPE_CLASS = tuple(normalize_ranges((ord(k), ord(k)) for k in _SHORT_ESCAPES))
#: After a backslash: ``u`` + high surrogate, ``\\u`` + low surrogate (one character).
_SURROGATE_PAIR_TAIL = Seq(
    (Literal(b"u"), _hex_fixed(0xD800, 0xDBFF, 4), Literal(b"\\u"), _hex_fixed(0xDC00, 0xDFFF, 4))
)


@lru_cache(maxsize=4096)
def _char_not_in(excluded: FrozenSet[str]) -> Expr:
    """One JSON string character (raw or escaped) whose decoded code point is not in ``excluded``.

    A surrogate-pair escape is one character; lone surrogate escapes are never generated. When
    ``excluded`` holds a character outside the BMP, surrogate-pair escapes are left out
    entirely (an under-approximation: keys spelled that way are rejected, never wrongly accepted).
    """
    cps = {ord(c) for c in excluded}
    alts: List[Optional[Expr]] = [CharClass(tuple(_minus(_RAW_RANGES, cps)))]
    shorts = [k for k, v in _SHORT_ESCAPES.items() if ord(v) not in cps]
    esc: List[Optional[Expr]] = []
    if shorts:
        esc.append(CharClass(tuple(normalize_ranges((ord(k), ord(k)) for k in shorts))))
    bmp = _minus([(0, 0xD7FF), (0xE000, 0xFFFF)], [c for c in cps if c <= 0xFFFF])
    h = _hex4_in(bmp)
    if h is not None:
        esc.append(seq([Literal(b"u"), h]))
    if not any(c > 0xFFFF for c in cps):
        esc.append(_SURROGATE_PAIR_TAIL)
    e = choice(esc)
    if e is not None:
        alts.append(seq([Literal(b"\\"), e]))
    out = choice(alts)
    assert out is not None
    return out


def _char_is(c: str) -> Expr:
    """Every spelling of the one JSON string character ``c`` (raw, short escape, ``\\u``)."""
    cp = ord(c)
    alts: List[Optional[Expr]] = []
    if any(lo <= cp <= hi for lo, hi in _RAW_RANGES):
        alts.append(Literal(c.encode("utf-8")))
    for k, v in _SHORT_ESCAPES.items():
        if v == c:
            alts.append(Literal(b"\\" + k.encode()))
    if cp <= 0xFFFF:
        alts.append(seq([Literal(b"\\u"), _hex_fixed(cp, cp, 4)]))
    else:
        v = cp - 0x10000
        hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
        alts.append(seq([Literal(b"\\u"), _hex_fixed(hi, hi, 4), Literal(b"\\u"), _hex_fixed(lo, lo, 4)]))
    out = choice(alts)
    assert out is not None
    return out


@lru_cache(maxsize=4096)
def _string_literal(s: str) -> Expr:
    """The JSON string ``s``: its raw-UTF-8 spelling and its ``ensure_ascii`` spelling."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return Literal(b'"' + s.encode("ascii") + b'"')  # one spelling, nothing escaped
    asc = json.dumps(s).encode("ascii")
    try:
        raw = json.dumps(s, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the escaped spelling exists
        return Literal(asc)
    return Literal(raw) if raw == asc else Choice((Literal(raw), Literal(asc)))


class _Trie:
    __slots__ = ("children", "end")

    def __init__(self) -> None:
        self.children: Dict[str, "_Trie"] = {}
        self.end = False


#: Printable ASCII that ``json.dumps`` never escapes (all but ``"``, ``\\`` and ``/``, which
#: have short escapes): key names made of these get a compact exclusion grammar.
_PLAIN_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\", "/"}


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


# --------------------------------------------------------------------------- helpers


def _ptr(path: str, *segments: Union[str, int]) -> str:
    for s in segments:
        s = str(s)
        path += "/" + (s.replace("~", "~0").replace("/", "~1") if "~" in s or "/" in s else s)
    return path


def _show(path: str) -> str:
    return "#" + path


_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")


def _sanitize(s: str) -> str:
    return _UNSAFE_NAME_CHARS.sub("_", s) or "_"


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise SchemaError(f"not a JSON value: {v!r}")


def _json_equal(a: Any, b: Any) -> bool:
    ta, tb = _type_of(a), _type_of(b)
    num = ("integer", "number")
    if ta in num and tb in num:
        return bool(a == b)
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _values_key(v: Any) -> str:
    # a string (most enum values) as json.dumps spells it, without its Python wrapper
    return _json_str(v) if type(v) is str else json.dumps(v, sort_keys=True)


# --------------------------------------------------------------------------- layout


class _Layout:
    """The bytes between tokens: flexible whitespace, fixed separators, or pretty-printing."""

    def __init__(
        self,
        whitespace: str,
        indent: Optional[Union[int, str]],
        separators: Optional[Tuple[str, str]],
        max_whitespace: Optional[int],
    ) -> None:
        if whitespace not in ("flexible", "compact"):
            raise SchemaError(f"whitespace must be 'flexible' or 'compact', not {whitespace!r}")
        if indent is not None:
            if isinstance(indent, bool) or not isinstance(indent, (int, str)):
                raise SchemaError(f"indent must be an int or a str, not {indent!r}")
            self.indent: Optional[str] = " " * indent if isinstance(indent, int) else indent
            if any(c not in " \t\n\r" for c in self.indent):
                raise SchemaError(f"indent must be whitespace, not {indent!r}")
            self.mode = "indent"
        else:
            self.indent = None
            self.mode = whitespace
        if separators is None:
            separators = (",", ": ") if self.mode == "indent" else (", ", ": ")
        if (
            not isinstance(separators, (tuple, list))
            or len(separators) != 2
            or not all(isinstance(s, str) for s in separators)
        ):
            raise SchemaError(f"separators must be a pair of strings, not {separators!r}")
        for s, tok in zip(separators, ",:"):
            if s.strip(" \t\n\r") != tok:
                raise SchemaError(f"separator {s!r} must be {tok!r} with optional whitespace around it")
        self.item_sep = separators[0].encode()
        self.key_sep = separators[1].encode()
        if max_whitespace is not None and (
            isinstance(max_whitespace, bool) or not isinstance(max_whitespace, int) or max_whitespace < 0
        ):
            raise SchemaError(f"max_whitespace must be a non-negative int, not {max_whitespace!r}")
        self.sig = (self.mode, self.indent, self.item_sep, self.key_sep, max_whitespace)
        self.ws: Expr = Repeat(CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))), 0, max_whitespace)
        self.ws_ref = RuleRef("ws")
        # The separators, made once: every member and item of every schema asks for one (IR is
        # immutable, so one object serves them all, and later stages meet the same object).
        ws = self.ws_ref
        self._ws_sep, self._ws_colon = seq([ws, Literal(b","), ws]), seq([ws, Literal(b":"), ws])
        self._ws_empty = {b: seq([Literal(b[:1]), ws, Literal(b[1:])]) for b in (b"{}", b"[]")}
        self._item_sep, self._key_sep = Literal(self.item_sep), Literal(self.key_sep)

    def flexible_at(self, depth: int) -> bool:
        return self.mode == "flexible" or (self.mode == "indent" and depth >= INDENT_DEPTH_LIMIT)

    def key(self, depth: int) -> int:
        """Depth as far as the layout cares (for memoization)."""
        if self.mode != "indent":
            return 0
        return min(depth, INDENT_DEPTH_LIMIT)

    def _nl(self, depth: int) -> Literal:
        assert self.indent is not None
        return Literal(("\n" + self.indent * depth).encode())

    def open(self, depth: int) -> Expr:
        """After ``{`` / ``[`` of a non-empty container at ``depth``."""
        if self.flexible_at(depth):
            return self.ws_ref
        return self._nl(depth + 1) if self.mode == "indent" else EMPTY

    def close(self, depth: int) -> Expr:
        if self.flexible_at(depth):
            return self.ws_ref
        return self._nl(depth) if self.mode == "indent" else EMPTY

    def sep(self, depth: int) -> Expr:
        if self.flexible_at(depth):
            return self._ws_sep
        if self.mode == "indent":
            return seq([self._item_sep, self._nl(depth + 1)])
        return self._item_sep

    def colon(self, depth: int) -> Expr:
        if self.flexible_at(depth):
            return self._ws_colon
        return self._key_sep

    def empty(self, depth: int, brackets: bytes) -> Expr:
        if self.flexible_at(depth):
            return self._ws_empty[brackets]
        return Literal(brackets)

    def container(self, depth: int, brackets: bytes, content: Expr) -> Expr:
        return seq(
            [Literal(brackets[:1]), self.open(depth), content, self.close(depth), Literal(brackets[1:])]
        )


_LAYOUTS: Dict[str, _Layout] = {}


def _layout(whitespace: str, indent: Any, separators: Any, max_whitespace: Any) -> _Layout:
    """The layout of these options, made once per distinct options (a layout never changes
    once made): keyed by their ``repr``, which tells ``True`` from ``1`` and a bad option from
    a good one, so that a bad one still reaches ``_Layout``'s checks."""
    key = repr((whitespace, indent, separators, max_whitespace))
    found = _LAYOUTS.get(key)
    if found is None:
        found = _Layout(whitespace, indent, separators, max_whitespace)
        if len(_LAYOUTS) < 64:
            _LAYOUTS[key] = found
    return found


# --------------------------------------------------------------------------- converter

#: An ``Embed`` of the grammar of any JSON value (``json_value`` and the base rules it
#: references), by layout signature (layouts without indentation): made once, kept like
#: ``_BASE_CACHE``, the grammar marked to keep its loaded automata (``Grammar._shared_part``).
_VALUE_GRAMMARS: Dict[Tuple[Any, ...], Embed] = {}


def _value_embed(layout: "_Layout") -> Embed:
    """An ``Embed`` of the grammar of any JSON value in ``layout``, made once."""
    found = _VALUE_GRAMMARS.get(layout.sig)
    if found is None:
        from .grammar import Grammar  # it imports this module

        conv = _Converter(True, layout, strict=False, lenient=False, embed_values=False)
        conv.value_rule(0)
        if layout.mode != "compact":
            conv.base("ws")
        rules = [Rule(n, b) for n, b in conv.base_rules.items()]
        grammar = Grammar._shared_part(rules, "json_value")
        found = _VALUE_GRAMMARS.setdefault(layout.sig, Embed(grammar))
    return found


#: Base rule bodies (``json_string``, ``json_value_3``, ...), the names they reference and their
#: piece information (``pieces.PieceInfo``), by (layout signature, name): they depend on nothing
#: else, so conversions share them, and what the stages derived from them (their checks and
#: serialized nodes) is kept with them, as constants, across ``memo.clear_memos``.
_BASE_CACHE: Dict[Tuple[Any, str], Tuple[Expr, Tuple[str, ...], pieces.PieceInfo]] = {}


#: The base rule of each supported format's JSON string (``json_format_date_time``, ...).
_FORMAT_RULES = {f: "json_format_" + f.replace("-", "_") for f in json_values.SUPPORTED_FORMATS}
_FORMAT_OF_RULE = {rule: f for f, rule in _FORMAT_RULES.items()}
# Their bodies, and those of the rules their counted repeats use, by rule name (_format_rule_body).
_FORMAT_BODIES: Dict[str, Expr] = {}


def _format_rule_body(name: str) -> Expr:
    """The body of format rule ``name`` (``_FORMAT_RULES``) or of one of its repeat rules.

    A format's string is large (``date-time``: exact month lengths and leap years) and the
    same in every schema, so it is a base rule: its checks and serialized nodes are derived
    once, however many properties and schemas use it. It is normalized here, once: its counted
    repeats' items become rules of their own (``<name>_repeat_<n>``, base rules too), which
    the normalization of every grammar using it would otherwise redo and serialize anew.
    """
    if name not in _FORMAT_BODIES:  # a format's own rule (its repeat rules come with it)
        from .normalize import normalize_rules

        body = json_values.format_string(_FORMAT_OF_RULE[name])
        assert body is not None
        for r in normalize_rules([Rule(name, body)], use_pieces=False):
            _FORMAT_BODIES[r.name] = r.body
    return _FORMAT_BODIES[name]


class _Converter:
    def __init__(
        self,
        root: Any,
        layout: _Layout,
        *,
        strict: bool,
        lenient: bool,
        any_order: bool = False,
        xgrammar: bool = False,
        embed_values: bool = True,
    ) -> None:
        self.root = root
        self.embed_values = embed_values  # any value as an Embed (any_value), not a rule
        self.value_embed: Optional[Embed] = None  # the Embed of any value, once used
        self.layout = layout
        self.strict = strict
        self.lenient = lenient
        self.any_order = any_order
        self.xgrammar = xgrammar
        self.rules: Dict[str, Expr] = {}
        self.memo: Dict[Tuple[str, int], Expr] = {}
        self.ref_memo: Dict[Tuple[str, int], str] = {}
        self.taken: Set[str] = set()
        self.counters: Dict[str, int] = {}
        self.dead_refs: Set[Tuple[str, int]] = set()
        self.level = 0  # nesting of convert() calls
        self.validator: Any = None  # a jsonschema validator of the root (enum filtering)
        self.base_rules: Dict[str, Expr] = {}
        self.char_rules: Dict[Tuple[Tuple[int, int], ...], Optional[Expr]] = {}
        self.merge_memo: Dict[Tuple[int, int], Tuple[Any, Any, Any]] = {}
        self.deref_memo: Dict[int, Tuple[Any, Any]] = {}  # id(schema) -> (schema, its deref)
        self.resolved: Dict[str, Tuple[Any, str]] = {}  # see resolve
        self.key_rules: Dict[Tuple[str, ...], RuleRef] = {}

    # ---- errors ---------------------------------------------------------------------------

    def unsupported(self, keyword: str, path: str, why: str = "is not supported") -> None:
        """Raise SchemaError, or warn when lenient (the caller then over-approximates)."""
        where = _show(_ptr(path, keyword))
        msg = f"JSON Schema keyword '{keyword}' at {where} {why}"
        if not self.lenient:
            raise SchemaError(msg, keyword=keyword, pointer=where)
        warnings.warn(msg + " (lenient: over-approximated)", UserWarning, stacklevel=4)

    def fail(self, msg: str, path: str, keyword: Optional[str] = None) -> SchemaError:
        where = _show(_ptr(path, keyword) if keyword else path)
        return SchemaError(f"{msg} (at {where})", keyword=keyword, pointer=where)

    # ---- names and shared rules ------------------------------------------------------------

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.taken, self.counters)

    def json_char(self, ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
        """Every JSON spelling of one code point from ``ranges``, as a reference to one shared
        rule per set of ranges: the automata of string constraints spell the same classes in
        many states, and a rule is checked and compiled once where an inline copy is not."""
        key = tuple(ranges)
        if key not in self.char_rules:
            body = json_values.json_char_of(ranges)
            if body is None:
                self.char_rules[key] = None
            else:
                name = self.fresh("char")
                self.rules[name] = body
                self.char_rules[key] = RuleRef(name)
        return self.char_rules[key]

    def _from_cache(self, name: str) -> bool:
        """Install base rule ``name`` (and what it references) from the module cache."""
        found = _BASE_CACHE.get((self.layout.sig, name))
        if found is None:
            return False
        body, deps, info = found
        self.taken.add(name)
        self.base_rules[name] = pieces.mark(body, info)  # marked again after clear_memos()
        for dep in deps:
            if dep not in self.base_rules:
                if dep.startswith("json_value"):
                    self.value_rule(int(dep.rsplit("_", 1)[1]) if dep != "json_value" else 0)
                else:
                    self.base(dep)
        return True

    def _to_cache(self, name: str, body: Expr) -> None:
        deps = referenced_rules(body)
        if len(_BASE_CACHE) < 4096:
            # a piece: every grammar that installs it from the cache has the same body object,
            # so its checks, normalization and serialized nodes are derived once
            body = pieces.mark(body)
            _BASE_CACHE[(self.layout.sig, name)] = (body, tuple(deps), pieces.info(body))

    def base(self, name: str) -> RuleRef:
        """Shared helper rules (created on first use)."""
        if name not in self.base_rules and not self._from_cache(name):
            lay = self.layout
            if name == "ws":
                body = lay.ws
            elif name == "json_any_char":
                # any JSON string character; a surrogate escape only as a high-low pair (a lone
                # one is no character: docs/limits.md): exact for unconstrained strings
                body = json_values.JSON_STRING_CHAR
            elif name == "json_plain_escape":
                # an escape spelling one character that is not printable ASCII (a short escape,
                # a control character, or anything from U+0080 on, surrogate pairs included)
                body = seq(
                    [
                        Literal(b"\\"),
                        choice(
                            [
                                CharClass(_SHORT_ESCAPE_CLASS),
                                seq([Literal(b"u"), _hex4_in([(0, 0x1F), (0x80, 0xD7FF), (0xE000, 0xFFFF)])]),
                                _SURROGATE_PAIR_TAIL,
                            ]
                        ),
                    ]
                )
            elif name == "json_string":
                body = seq([_DQ, Repeat(self.base("json_any_char"), 0, None), _DQ])
            elif name == "json_integer":  # as xgrammar's: no "-0"
                body = Choice(
                    (
                        Literal(b"0"),
                        seq(
                            [
                                _opt(Literal(b"-")),
                                CharClass(((0x31, 0x39),)),
                                Repeat(CharClass(((0x30, 0x39),)), 0, None),
                            ]
                        ),
                    )
                )
            elif name == "json_number":
                digits = Repeat(CharClass(((0x30, 0x39),)), 1, None)
                body = seq(
                    [
                        _opt(Literal(b"-")),  # "-0" and "-0.5" are numbers (not integers)
                        Choice(
                            (
                                Literal(b"0"),
                                seq(
                                    [CharClass(((0x31, 0x39),)), Repeat(CharClass(((0x30, 0x39),)), 0, None)]
                                ),
                            )
                        ),
                        _opt(seq([Literal(b"."), digits])),
                        _opt(
                            seq(
                                [
                                    CharClass(((0x45, 0x45), (0x65, 0x65))),
                                    _opt(CharClass(((0x2B, 0x2B), (0x2D, 0x2D)))),
                                    digits,
                                ]
                            )
                        ),
                    ]
                )
            elif name.startswith("json_format_"):
                body = _format_rule_body(name)
                for dep in referenced_rules(body):  # the rules its counted repeats use
                    self.base(dep)
            else:  # pragma: no cover
                raise AssertionError(name)
            self.taken.add(name)
            self.base_rules[name] = body
            self._to_cache(name, body)
        return RuleRef(name)

    def any_value(self, depth: int) -> Expr:
        """Any JSON value at ``depth``. Without indentation it is the same at every depth, and
        it is embedded (``ir.Embed``) from one grammar per layout (``_value_embed``), whose
        automata the C core builds once per process and links into every grammar that embeds
        it, and whose token masks one compiler computes once for all of them: ``{"type":
        "object"}``, ``additionalProperties`` and ``items`` left open are in most schemas."""
        if self.embed_values and self.layout.mode != "indent":
            self.value_embed = _value_embed(self.layout)
            return self.value_embed
        return self.value_rule(depth)

    def value_rule(self, depth: int) -> RuleRef:
        """Any JSON value at ``depth`` as a base rule of this grammar (``json_value``, or
        ``json_value_<depth>`` with indentation), with the base rules it references."""
        d = self.layout.key(depth)
        name = "json_value" if self.layout.mode != "indent" else f"json_value_{d}"
        if name in self.base_rules or self._from_cache(name):
            return RuleRef(name)
        self.taken.add(name)
        self.base_rules[name] = EMPTY  # placeholder for recursion
        lay = self.layout
        nxt = self.value_rule(depth + 1)
        member = seq([self.base("json_string"), lay.colon(depth), nxt])
        obj = choice(
            [
                lay.empty(depth, b"{}"),
                lay.container(depth, b"{}", seq([member, Repeat(seq([lay.sep(depth), member]), 0, None)])),
            ]
        )
        arr = choice(
            [
                lay.empty(depth, b"[]"),
                lay.container(depth, b"[]", seq([nxt, Repeat(seq([lay.sep(depth), nxt]), 0, None)])),
            ]
        )
        body = choice(
            [
                Literal(b"null"),
                Literal(b"true"),
                Literal(b"false"),
                self.base("json_number"),
                self.base("json_string"),
                obj,
                arr,
            ]
        )
        assert body is not None
        self.base_rules[name] = body
        self._to_cache(name, body)
        return RuleRef(name)

    def sub(self, schema: Any, path: str, depth: int, hint: str) -> Optional[Expr]:
        """The expression of a sub-schema, shared through a rule when it is not trivial."""
        # annotations (descriptions, mostly: the bulk of a tool's schema text) constrain
        # nothing, so they are left out of the key, and sub-schemas that differ only there share
        keyed = schema
        if type(schema) is dict and not _ANNOTATIONS.isdisjoint(schema):
            keyed = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
        try:
            key = (_compact_json(keyed), self.layout.key(depth))
        except (TypeError, ValueError) as e:
            raise self.fail(f"the schema is not JSON ({e})", path) from None
        if key in self.memo:
            return self.memo[key]
        expr = self.convert(schema, path, depth, hint)
        if (
            expr is None
            or isinstance(expr, (RuleRef, Literal, CharClass, Embed))
            or (
                isinstance(expr, Seq)
                and len(expr.items) <= 3
                and all(isinstance(x, (RuleRef, Literal, Embed)) for x in expr.items)
            )
            or (
                isinstance(expr, Choice)
                and len(expr.items) <= 4
                and all(isinstance(x, Literal) for x in expr.items)
            )
        ):
            self.memo[key] = expr  # type: ignore[assignment]
            return expr
        name = self.fresh(hint)
        self.rules[name] = expr
        self.memo[key] = RuleRef(name)
        return RuleRef(name)

    # ---- $ref ----------------------------------------------------------------------------

    def resolve(self, ref: Any, path: str) -> Tuple[Any, str]:
        """The node ``ref`` points to, and its decoded fragment; each reference is looked up
        once (a schema with shared definitions resolves the same few many times)."""
        found = self.resolved.get(ref) if isinstance(ref, str) else None
        if found is None:
            found = self.resolved[ref] = self._resolve(ref, path)
        return found

    def _resolve(self, ref: Any, path: str) -> Tuple[Any, str]:
        if not isinstance(ref, str):
            raise self.fail("'$ref' must be a string", path, "$ref")
        if not ref.startswith("#"):
            raise SchemaError(
                f"JSON Schema keyword '$ref' at {_show(_ptr(path, '$ref'))}: only references inside "
                f"the schema ('#...') are supported, not {ref!r}",
                keyword="$ref",
                pointer=_show(_ptr(path, "$ref")),
            )
        frag = unquote(ref[1:])
        if frag and not frag.startswith("/"):
            raise SchemaError(
                f"JSON Schema keyword '$ref' at {_show(_ptr(path, '$ref'))}: anchors ({ref!r}) are not supported",
                keyword="$ref",
                pointer=_show(_ptr(path, "$ref")),
            )
        node = self.root
        for seg in frag.split("/")[1:]:
            seg = seg.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and seg in node:
                node = node[seg]
            elif isinstance(node, list) and seg.isdigit() and int(seg) < len(node):
                node = node[int(seg)]
            else:
                raise self.fail(f"'$ref' {ref!r} points to nothing", path, "$ref")
        return node, frag

    def ref_rule(self, ref: str, path: str, depth: int) -> Optional[Expr]:
        target, frag = self.resolve(ref, path)
        if target is False:
            return None
        key = (frag, self.layout.key(depth))
        if key in self.dead_refs:
            return None
        name = self.ref_memo.get(key)
        if name is not None:
            return RuleRef(name)
        segs = [s.replace("~1", "/").replace("~0", "~") for s in frag.split("/")[1:]]
        if not segs:
            hint = "root"
        elif len(segs) == 2 and segs[0] in ("$defs", "definitions"):
            hint = "defs_" + _sanitize(segs[1])
        else:
            hint = "ref_" + _sanitize("_".join(segs))
        if self.layout.mode == "indent" and key[1]:
            hint += f"_d{key[1]}"
        name = self.fresh(hint)
        self.ref_memo[key] = name
        self.rules[name] = EMPTY  # placeholder (recursion)
        expr = self.convert(target, frag, depth, name)
        if expr is None:
            # An unsatisfiable definition: a rule that matches nothing (recursive references to
            # it may exist already), and the reference contributes nothing.
            self.rules[name] = Choice(())
            self.dead_refs.add(key)
            return None
        self.rules[name] = expr
        return RuleRef(name)

    # ---- allOf merging -------------------------------------------------------------------

    def deref(self, s: Any, path: str, guard: int = 0) -> Any:
        """Replace a top-level ``$ref`` by its target merged with the siblings. Remembered per
        schema object: the siblings are a new dict each time, so the merge memo (by identity)
        would never see the same pair again, and merges that deref the same schemas along
        every path (allOf over shared definitions) would merge them anew each time."""
        if not (isinstance(s, dict) and "$ref" in s):
            return s
        found = self.deref_memo.get(id(s))
        if found is not None and found[0] is s:
            return found[1]
        original = s
        while isinstance(s, dict) and "$ref" in s:
            if guard > 32:
                raise self.fail("'$ref' chain too deep (a reference cycle with no structure)", path, "$ref")
            target, _ = self.resolve(s["$ref"], path)
            rest = {k: v for k, v in s.items() if k != "$ref"}
            s = self.merge(target, rest, path) if rest else target
            guard += 1
        self.deref_memo[id(original)] = (original, s)
        return s

    def merge(self, a: Any, b: Any, path: str) -> Any:
        """The schema of the instances valid against both ``a`` and ``b`` (simple cases)."""
        if a is False or b is False:
            return False
        if a is True or a == {}:
            return b
        if b is True or b == {}:
            return a
        if not isinstance(a, dict) or not isinstance(b, dict):
            raise self.fail("a schema must be an object or a boolean", path)
        # Merges recurse into properties and '$ref's; the same pair recurs once per path that
        # reaches it (allOf of shared definitions: quadratic or worse). Memoized by identity
        # (the memo holds both, so their ids stay theirs); results are never mutated.
        key = (id(a), id(b))
        found = self.merge_memo.get(key)
        if found is not None:
            return found[2]
        out = self._merge(a, b, path)
        self.merge_memo[key] = (a, b, out)
        return out

    def _merge(self, a: Dict[str, Any], b: Dict[str, Any], path: str) -> Any:
        a = self.deref(a, path)
        b = self.deref(b, path)
        if a is False or b is False:
            return False
        if a is True or b is True:
            return b if a is True else a
        a = self.flatten_all_of(a, path)
        b = self.flatten_all_of(b, path)
        if a is False or b is False:
            return False
        out: Dict[str, Any] = {}
        keys = list(a) + [k for k in b if k not in a]
        for k in keys:
            if _is_annotation(k) or (k in _POSITIONAL_KW and _has_positional(a) and _has_positional(b)):
                continue
            if k not in b:
                out[k] = a[k]
                continue
            if k not in a:
                out[k] = b[k]
                continue
            x, y = a[k], b[k]
            if k in ("properties", "additionalProperties") or k in _POSITIONAL_KW:
                continue  # handled below
            if x == y:
                out[k] = x
            elif k == "type":
                tx = [x] if isinstance(x, str) else list(x)
                ty = [y] if isinstance(y, str) else list(y)
                both = [t for t in tx if t in ty]
                if "integer" in tx and "number" in ty and "integer" not in both:
                    both.append("integer")
                if "integer" in ty and "number" in tx and "integer" not in both:
                    both.append("integer")
                if not both:
                    return False
                out[k] = both
            elif k == "required":
                out[k] = list(dict.fromkeys(list(x) + list(y)))
            elif k in ("minimum", "minLength", "minItems", "minProperties"):
                out[k] = max(x, y)
            elif k in ("maximum", "maxLength", "maxItems", "maxProperties"):
                out[k] = min(x, y)
            elif (
                k in ("exclusiveMinimum", "exclusiveMaximum")
                and not isinstance(x, bool)
                and not isinstance(y, bool)
            ):
                out[k] = max(x, y) if k == "exclusiveMinimum" else min(x, y)
            elif k in ("enum", "const"):
                xs = x if k == "enum" else [x]
                ys = y if k == "enum" else [y]
                common = [v for v in xs if any(_json_equal(v, w) for w in ys)]
                out.pop("const", None)
                out["enum"] = common
            elif k in ("anyOf", "oneOf"):
                # a pair whose types conflict merges to False: drop it, so that negated
                # 'anyOf's (one branch per type) stay near one branch per type
                merged = [self.merge(p, q, path) for p in x for q in y]
                out[k] = [m for m in merged if m is not False]
                if merged and not out[k]:  # (an empty list stays: the checks name it)
                    return False
                if len(out[k]) > 256:
                    raise self.fail(f"merging two '{k}' lists gives too many branches", path, k)
                if k == "oneOf":
                    self.unsupported(k, path, "appears in two allOf branches (cannot be merged exactly)")
                    out["anyOf"] = out.pop(k)
            elif k == "uniqueItems":
                out[k] = bool(x or y)
            elif k == "multipleOf" and all(
                isinstance(z, int) and not isinstance(z, bool) and z > 0 for z in (x, y)
            ):
                out[k] = x * y // math.gcd(x, y)  # multiples of both: multiples of the lcm
            elif k == "not":  # neither x nor y: not (x or y)
                out[k] = {"anyOf": [x, y]}
            elif k in _INTERNAL_KW:
                out[k] = list(dict.fromkeys([*x, *y]))
            elif k == "pattern" and isinstance(x, str) and isinstance(y, str):
                out[k] = x  # both must match: the other joins the patterns intersected
                out[_AND_PATTERNS] = list(dict.fromkeys([*out.get(_AND_PATTERNS, []), y]))
            else:
                self.unsupported(k, path, "differs between allOf branches and cannot be merged")
                out[k] = x  # lenient: keep one side (a superset of the intersection)
        if _has_positional(a) and _has_positional(b):
            out.update(self.merge_positions(a, b, path))
        if "enum" in out and "const" in out:
            out["enum"] = [v for v in out.pop("enum") if _json_equal(v, out["const"])]
            del out["const"]
        if (
            "properties" in a
            or "properties" in b
            or "additionalProperties" in a
            or "additionalProperties" in b
        ):
            if "patternProperties" in a or "patternProperties" in b:
                self.unsupported("patternProperties", path, "cannot be merged in allOf")
            pa, pb = a.get("properties", {}), b.get("properties", {})
            aa = a.get("additionalProperties", True)
            ab = b.get("additionalProperties", True)
            props: Dict[str, Any] = {}
            for name in list(pa) + [n for n in pb if n not in pa]:
                props[name] = self.merge(pa.get(name, aa), pb.get(name, ab), path)
            out["properties"] = props
            add = self.merge(aa, ab, path)
            if add is not True:
                out["additionalProperties"] = add
        return out

    def merge_positions(self, a: Dict[str, Any], b: Dict[str, Any], path: str) -> Dict[str, Any]:
        """Merge the array keywords of two schemas position by position.

        In each schema ``items`` applies only past its own ``prefixItems``, so the merged
        schema for index i is the merge of what each side says about index i.
        """
        pa, ra = _positions(a, self, path)
        pb, rb = _positions(b, self, path)
        n = max(len(pa), len(pb))
        prefix = [
            self.merge(pa[i] if i < len(pa) else ra, pb[i] if i < len(pb) else rb, path) for i in range(n)
        ]
        out: Dict[str, Any] = {}
        if prefix:
            out["prefixItems"] = prefix
        rest = self.merge(ra, rb, path)
        if rest is not True:
            out["items"] = rest
        return out

    def flatten_all_of(self, s: Dict[str, Any], path: str) -> Any:
        if "allOf" not in s:
            return s
        branches = s["allOf"]
        if not isinstance(branches, list) or not branches:
            raise self.fail("'allOf' must be a non-empty array", path, "allOf")
        acc: Any = {k: v for k, v in s.items() if k != "allOf"}
        for b in branches:
            acc = self.merge(acc, b, _ptr(path, "allOf"))
        return acc

    # ---- the conversion ------------------------------------------------------------------

    def convert(self, schema: Any, path: str, depth: int, hint: str) -> Optional[Expr]:
        self.level += 1
        try:
            if self.level > _MAX_LEVEL:
                raise self.fail(
                    f"the schema nests more than {_MAX_LEVEL} levels (or recurses through a '$ref' "
                    "merged with sibling keywords, which cannot be expressed)",
                    path,
                )
            return self._convert(schema, path, depth, hint)
        finally:
            self.level -= 1

    def _convert(self, schema: Any, path: str, depth: int, hint: str) -> Optional[Expr]:
        if schema is True:
            return self.any_value(depth)
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise self.fail(f"a schema must be an object or a boolean, not {type(schema).__name__}", path)
        unknown = [k for k in schema if k in _UNSUPPORTED]
        if unknown:
            for k in unknown:
                self.unsupported(k, path)
            # lenient: the constraints are ignored (an over-approximation)
            schema = {k: v for k, v in schema.items() if k not in _UNSUPPORTED}
        if "$ref" in schema:
            rest = {k: v for k, v in schema.items() if not _is_annotation(k) and k != "$ref"}
            if not rest:
                return self.ref_rule(schema["$ref"], path, depth)
            schema = self.deref(schema, path)
            return self.convert(schema, path, depth, hint)
        if "allOf" in schema:
            return self.convert(self.flatten_all_of(schema, path), path, depth, hint)
        if _REWRITTEN_KW & set(schema):
            return self.convert(self.rewrite(schema, path), path, depth, hint)
        if "not" in schema and "enum" not in schema and "const" not in schema:
            # (with enum / const, the values are filtered by a validator instead: exact)
            rest = {k: v for k, v in schema.items() if k != "not"}
            positive = self.negate(schema["not"], _ptr(path, "not"))
            return self.convert(self.merge(rest, positive, path), path, depth, hint)
        for kw in ("anyOf", "oneOf"):
            if kw in schema:
                branches = schema[kw]
                if not isinstance(branches, list) or not branches:
                    raise self.fail(f"'{kw}' must be a non-empty array", path, kw)
                rest = {k: v for k, v in schema.items() if k != kw and not _is_annotation(k)}
                if kw == "oneOf" and not self.disjoint(branches, rest, path):
                    exclusive = self.exclusive(branches, path)
                    if exclusive is not None:
                        branches = exclusive
                    else:
                        self.unsupported(
                            "oneOf",
                            path,
                            "has branches that are neither provably disjoint nor negatable "
                            "(only those are exact); use anyOf",
                        )
                if rest:
                    branches = [self.merge(rest, b, _ptr(path, kw, i)) for i, b in enumerate(branches)]
                united, expr = self.string_union(branches, path, hint)
                if united:
                    return expr
                alts = [
                    self.sub(b, _ptr(path, kw, i), depth, f"{hint}_{kw.lower()}_{i}")
                    for i, b in enumerate(branches)
                ]
                return choice(alts)

        types = self.types(schema, path)
        if schema.get("nullable") is True and "null" not in types and "type" in schema:
            types.append("null")
        if "enum" in schema or "const" in schema:
            return self.enum(schema, types, path, depth)

        alts: List[Optional[Expr]] = []
        for t in types:
            if t == "null":
                alts.append(Literal(b"null"))
            elif t == "boolean":
                alts.append(Choice((Literal(b"true"), Literal(b"false"))))
            elif t == "string":
                alts.append(self.string(schema, path, hint))
            elif t == "integer":
                alts.append(self.number(schema, path, integer=True))
            elif t == "number":
                alts.append(self.number(schema, path, integer=False))
            elif t == "object":
                alts.append(self.object(schema, path, depth, hint))
            elif t == "array":
                alts.append(self.array(schema, path, depth, hint))
        return choice(alts)

    def rewrite(self, schema: Dict[str, Any], path: str) -> Any:
        """``if``/``then``/``else`` and the dependency keywords as anyOf / allOf / not."""
        rest = {k: v for k, v in schema.items() if k not in _REWRITTEN_KW}
        clauses: List[Any] = []
        cond = schema.get("if", True)
        then, otherwise = schema.get("then", True), schema.get("else", True)
        if "if" not in schema or (then is True and otherwise is True):
            pass  # without then/else, if constrains nothing
        elif isinstance(cond, bool):
            clauses.append(then if cond else otherwise)
        else:
            negated = self.negate(cond, _ptr(path, "if"))
            clauses.append(
                {
                    "anyOf": [
                        {"allOf": [cond, then]},
                        {"allOf": [negated, otherwise]},
                    ]
                }
            )
        for kw in ("dependencies", "dependentRequired", "dependentSchemas"):
            deps = schema.get(kw, {})
            if not isinstance(deps, dict):
                raise self.fail(f"'{kw}' must be an object", path, kw)
            for name, dep in deps.items():
                if isinstance(dep, list):
                    dep = {"required": dep}
                if dep is True or dep == {}:
                    continue
                # absent, or present and the dependency holds (objects only, as both forms say)
                clauses.append(
                    {"anyOf": [{"properties": {name: False}}, {"allOf": [{"required": [name]}, dep]}]}
                )
        return {"allOf": [rest, *clauses]} if clauses else rest

    def exclusive(self, branches: List[Any], path: str) -> Optional[List[Any]]:
        """oneOf's branches made disjoint: each branch and the negation of every other one;
        None when some branch cannot be negated exactly."""
        if len(branches) > _MAX_ONE_OF:
            return None
        lenient, self.lenient = self.lenient, False
        try:
            negated = [self.negate(b, _ptr(path, "oneOf", i)) for i, b in enumerate(branches)]
        except SchemaError:
            return None
        finally:
            self.lenient = lenient
        return [{"allOf": [b, *(n for j, n in enumerate(negated) if j != i)]} for i, b in enumerate(branches)]

    def negate(self, schema: Any, path: str) -> Any:
        """A schema of exactly the instances that ``schema`` rejects, for the common forms of
        ``not`` (type, enum / const of strings, booleans and null, required, properties,
        string / number / array / object bounds, pattern, anyOf, nested not); otherwise
        unsupported (lenient: ``true``, which over-approximates)."""
        self.level += 1
        try:
            if self.level > _MAX_LEVEL:
                raise self.fail(f"'not' nests more than {_MAX_LEVEL} levels (a recursive schema?)", path)
            return self._negate(schema, path)
        finally:
            self.level -= 1

    def _negate(self, schema: Any, path: str) -> Any:
        if isinstance(schema, dict):
            schema = self.deref(schema, path)
        if isinstance(schema, dict):
            schema = self.flatten_all_of(schema, path)
        if schema is True or (isinstance(schema, dict) and all(_is_annotation(k) for k in schema)):
            return False
        if schema is False:
            return True
        if not isinstance(schema, dict):
            raise self.fail("a schema must be an object or a boolean", path)
        parts: List[Any] = []
        for k, v in schema.items():
            if _is_annotation(k):
                continue
            part = self.negate_keyword(k, v, schema, path)
            if part is None:
                self.unsupported(k, path, "inside 'not' cannot be negated exactly")
                return True
            if part is not False:
                parts.append(part)
        if not parts:
            return False
        return parts[0] if len(parts) == 1 else {"anyOf": parts}

    def negate_keyword(self, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
        """The instances that fail keyword ``k`` alone (False: none; None: not supported)."""

        def only(applies_to: str, *fails: Dict[str, Any]) -> Any:
            # instances of other types pass the keyword: only those of its type can fail it
            branches = [{"type": applies_to, **a} for a in fails]
            return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}

        if k == "type":
            types = self.types({"type": v}, path)
            rest = [t for t in _ALL_TYPES if t not in types and not (t == "number" and "integer" in types)]
            branches: List[Any] = [{"type": rest}] if rest else []
            if "integer" in types:  # numbers that are not integers (those written with a fraction)
                branches.append({"type": "number", _NOT_INTEGER: True})
            return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}
        if k in ("enum", "const"):
            vals = v if k == "enum" else [v]
            if not isinstance(vals, list):
                return None
            if {_type_of(x) for x in vals} - {"string", "null", "boolean", "integer", "number"}:
                return None  # objects and arrays have too many spellings to leave out
            strings = [x for x in vals if isinstance(x, str)]
            numbers = [x for x in vals if isinstance(x, (int, float)) and not isinstance(x, bool)]
            branches: List[Any] = [
                {"type": ["object", "array"]},
                {"type": "string", _NOT_STRINGS: strings} if strings else {"type": "string"},
                {"type": "number", _NOT_NUMBERS: numbers} if numbers else {"type": "number"},
            ]
            if None not in vals:
                branches.append({"type": "null"})
            bools = [b for b in (True, False) if not any(x is b for x in vals)]
            if bools:
                branches.append({"enum": bools})
            return {"anyOf": branches}
        if k == "not":
            return v
        if k == "anyOf" and isinstance(v, list):
            return {"allOf": [self.negate(b, _ptr(path, "anyOf", i)) for i, b in enumerate(v)]}
        if k == "pattern":
            return only("string", {_NOT_PATTERNS: [v]})
        bounds = {
            "minLength": ("string", "maxLength", -1),
            "maxLength": ("string", "minLength", 1),
            "minItems": ("array", "maxItems", -1),
            "maxItems": ("array", "minItems", 1),
            "minProperties": ("object", "maxProperties", -1),
            "maxProperties": ("object", "minProperties", 1),
        }
        if k in bounds and isinstance(v, int) and not isinstance(v, bool):
            kind, opposite, step = bounds[k]
            return only(kind) if v + step < 0 else only(kind, {opposite: v + step})
        numeric = {
            "minimum": "exclusiveMaximum",
            "maximum": "exclusiveMinimum",
            "exclusiveMinimum": "maximum",
            "exclusiveMaximum": "minimum",
        }
        if k in numeric and isinstance(v, (int, float)) and not isinstance(v, bool):
            if isinstance(schema.get("exclusiveMinimum"), bool) or isinstance(
                schema.get("exclusiveMaximum"), bool
            ):
                return None  # draft-4 booleans change the meaning of minimum / maximum
            return only("number", {numeric[k]: v})
        if k in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(v, bool):
            return False if not v else None
        if k == "required" and isinstance(v, list):
            if not v:
                return False
            return only("object", *({"properties": {name: False}} for name in v))
        if (
            k == "properties"
            and isinstance(v, dict)
            and not ({"additionalProperties", "patternProperties"} & set(schema))
        ):
            branches = [
                {
                    "type": "object",
                    "required": [name],
                    "properties": {name: self.negate(s, _ptr(path, "properties", name))},
                }
                for name, s in v.items()
            ]
            branches = [b for b in branches if b["properties"][b["required"][0]] is not False]
            return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}
        return None

    def types(self, schema: Dict[str, Any], path: str) -> List[str]:
        t = schema.get("type")
        if t is None and self.xgrammar:  # xgrammar reads object / array keywords as the type
            if any(k in schema for k in _OBJECT_KW):
                return ["object"]
            if any(k in schema for k in ("items", "prefixItems", "additionalItems")):
                return ["array"]
        if t is None:
            return list(_ALL_TYPES)
        ts = [t] if isinstance(t, str) else t
        if not isinstance(ts, list) or not ts or not all(isinstance(x, str) for x in ts):
            raise self.fail("'type' must be a type name or a non-empty array of them", path, "type")
        for x in ts:
            if x not in _TYPES:
                raise self.fail(f"unknown type {x!r}", path, "type")
        out = list(dict.fromkeys(ts))
        if "number" in out and "integer" in out:
            out.remove("integer")
        return out

    def disjoint(self, branches: List[Any], rest: Dict[str, Any], path: str) -> bool:
        """Whether no instance can match two of ``branches`` (by type, or by a constant property)."""
        sets = []
        resolved = []
        for b in branches:
            try:
                b = self.deref(b, path) if isinstance(b, dict) else b
            except SchemaError:
                return False
            resolved.append(b)
            if not isinstance(b, dict):
                if b is False:
                    sets.append(set())
                    continue
                return False
            if "enum" in b or "const" in b:
                vals = b["enum"] if "enum" in b else [b["const"]]
                s = {_type_of(v) for v in vals}
            elif "type" in b:
                ts = [b["type"]] if isinstance(b["type"], str) else b["type"]
                s = set(ts)
                if b.get("nullable") is True:
                    s.add("null")
            else:
                s = set(_TYPES)
            if "number" in s:
                s.add("integer")
            sets.append(s)
        if all(not (sets[i] & sets[j]) for i in range(len(sets)) for j in range(i)):
            return True

        # A discriminator: objects only (else a non-object matches every branch), and a
        # property required in every branch, with pairwise distinct constants.
        def objects_only(b: Dict[str, Any]) -> bool:
            return any(x.get("type") in ("object", ["object"]) for x in (b, rest))

        if all(isinstance(b, dict) and objects_only(b) for b in resolved):
            common: Optional[Set[str]] = None
            for b in resolved:
                req = set(b.get("required", [])) | set(rest.get("required", []))
                common = req if common is None else common & req
            for prop in sorted(common or ()):
                vals = []
                for b in resolved:
                    ps = b.get("properties", {}).get(prop)
                    ps = self.deref(ps, path) if isinstance(ps, dict) else ps
                    if not isinstance(ps, dict) or not ("const" in ps or "enum" in ps):
                        break
                    vals.append(ps["enum"] if "enum" in ps else [ps["const"]])
                else:
                    ok = all(
                        not any(_json_equal(x, y) for x in vals[i] for y in vals[j])
                        for i in range(len(vals))
                        for j in range(i)
                    )
                    if ok:
                        return True
        return False

    # ---- enum / const --------------------------------------------------------------------

    def enum(self, schema: Dict[str, Any], types: List[str], path: str, depth: int) -> Optional[Expr]:
        if "enum" in schema:
            vals = schema["enum"]
            if not isinstance(vals, list):
                raise self.fail("'enum' must be an array", path, "enum")
        else:
            vals = [schema["const"]]
        if "const" in schema and "enum" in schema:
            vals = [v for v in vals if _json_equal(v, schema["const"])]
        if schema.get("nullable") is True and "type" not in schema and "enum" in schema:
            vals = vals + [None]
        kept = []
        seen: Set[str] = set()
        others = {
            k: v
            for k, v in schema.items()
            if not _is_annotation(k) and k not in ("enum", "const", "type", "nullable")
        }
        validator = None
        if others:
            import jsonschema

            if self.validator is None:
                root = self.root if isinstance(self.root, (dict, bool)) else {}
                self.validator = jsonschema.Draft202012Validator(root)
            validator = self.validator.evolve(
                schema={k: v for k, v in others.items() if k not in (*_INTERNAL_KW, _NOT_INTEGER)}
            )  # '$ref's resolve against the root
        for v in vals:
            t = _type_of(v)
            ok = t in types or (t == "integer" and "number" in types)
            if ok and isinstance(v, (int, float)) and not isinstance(v, bool):
                if others.get(_NOT_INTEGER) and float(v).is_integer():
                    ok = False
                if any(_json_equal(v, w) for w in others.get(_NOT_NUMBERS, ())):
                    ok = False
            if ok and isinstance(v, str):  # the internal keywords, which a validator ignores
                ok = (
                    v not in others.get(_NOT_STRINGS, ())
                    and not any(_pattern_dfa(p).matches(v) for p in others.get(_NOT_PATTERNS, ()))
                    and all(_pattern_dfa(p).matches(v) for p in others.get(_AND_PATTERNS, ()))
                )
            if ok and validator is not None:
                try:
                    ok = validator.is_valid(v)
                except Exception as e:  # e.g. an unresolvable $ref
                    self.unsupported("enum", path, f"cannot be checked against its sibling keywords ({e})")
                    ok = True  # lenient: keep the value
            key = _values_key(v) if ok else None
            if key is not None and key not in seen:
                seen.add(key)
                kept.append(v)  # equal numbers spelled differently (1 and 1.0) are both kept
        return choice([self.value(v, depth) for v in kept])

    def value(self, v: Any, depth: int) -> Expr:
        """One JSON value, spelled with the layout at ``depth``."""
        lay = self.layout
        if v is None or isinstance(v, bool):
            return Literal(json.dumps(v).encode())
        if isinstance(v, int):
            return Literal(str(v).encode())
        if isinstance(v, float):
            forms = [json.dumps(v)]
            if v.is_integer() and abs(v) < 1e16:
                forms.append(str(int(v)))
            out = choice([Literal(f.encode()) for f in forms])
            assert out is not None
            return out
        if isinstance(v, str):
            return _string_literal(v)
        if isinstance(v, list):
            if not v:
                return lay.empty(depth, b"[]")
            items: List[Expr] = []
            for i, x in enumerate(v):
                if i:
                    items.append(lay.sep(depth))
                items.append(self.value(x, depth + 1))
            return lay.container(depth, b"[]", seq(items))
        if isinstance(v, dict):
            if not v:
                return lay.empty(depth, b"{}")
            items = []
            for i, (k, x) in enumerate(v.items()):
                if i:
                    items.append(lay.sep(depth))
                items += [_string_literal(str(k)), lay.colon(depth), self.value(x, depth + 1)]
            return lay.container(depth, b"{}", seq(items))
        raise SchemaError(f"not a JSON value: {v!r}")

    # ---- strings and numbers -------------------------------------------------------------

    def string(self, schema: Dict[str, Any], path: str, hint: str) -> Optional[Expr]:
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength")
        for k, x in (("minLength", lo), ("maxLength", hi)):
            if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
                raise self.fail(f"'{k}' must be a non-negative integer", path, k)
            if x is not None and x > MAX_COUNT:
                raise self.fail(f"'{k}' is {x}; the largest supported is {MAX_COUNT}", path, k)
        if hi is not None and lo > hi:
            return None
        pattern, fmt = schema.get("pattern"), schema.get("format")
        if pattern is not None and not isinstance(pattern, str):
            raise self.fail("'pattern' must be a string", path, "pattern")
        if fmt is not None and not isinstance(fmt, str):
            raise self.fail("'format' must be a string", path, "format")
        if fmt in json_values.UNSUPPORTED_SPEC_FORMATS:
            self.unsupported("format", path, f"{fmt!r} is not a supported format")
            fmt = None
        elif fmt is not None and fmt not in json_values.SUPPORTED_FORMATS:
            # A format the specification does not define is an annotation: it constrains nothing.
            fmt = None
        internal = any(schema.get(k) for k in _INTERNAL_KW)
        constraints = [c for c in (pattern, fmt) if c is not None]
        if internal or len(constraints) > 1 or (constraints and (lo or hi is not None)):
            return self.string_by_automaton(schema, path, hint)
        if pattern is not None:
            try:
                return json_values.pattern_string(pattern)
            except SchemaError:
                raise
            except Exception as e:
                self.unsupported("pattern", path, f"({pattern!r}) cannot be converted: {e}")
                return self.base("json_string")
        if fmt is not None:
            return self.base(_FORMAT_RULES[fmt])
        if lo == 0 and hi is None:
            return self.base("json_string")
        # Code points counted exactly; large bounds are nested rather than unrolled.
        return json_values.string_expr(lo, hi)

    def string_by_automaton(self, schema: Dict[str, Any], path: str, hint: str) -> Optional[Expr]:
        """A string under several character-level constraints at once (pattern, format,
        length, excluded patterns and values): the intersection of their automata."""
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        keyword = "pattern" if "pattern" in schema else "format" if "format" in schema else "not"
        try:
            dfa = self.string_dfa(schema)
            return self.automaton_string(dfa, lo, hi, hint)
        except GrammarError as e:
            self.unsupported(keyword, path, f"cannot be combined with the other string keywords: {e}")
            return self.base("json_string")

    def string_union(self, branches: List[Any], path: str, hint: str) -> Tuple[bool, Optional[Expr]]:
        """anyOf / oneOf branches that are all strings under automaton constraints (nested
        anyOfs, ``not`` and ``$ref`` included) as one automaton, the union of theirs: it is
        (True, the expression). Converted apart, each branch's automaton becomes its own rules,
        although most of their states are alike (the same pattern, the same length bounds
        merged into every branch): ``anyOf`` of 16 patterns under ``minLength``/``maxLength``
        makes 13,000 rules apart and 1,500 united. (False, None) when some branch is not such
        a string, or the union would have more states than the branches' automata together:
        the caller converts the branches one by one then, exactly as without this."""
        leaves: List[Dict[str, Any]] = []
        lenient, self.lenient = self.lenient, False  # anything over-approximated: not here
        try:
            if not all(self.string_leaves(b, path, leaves, 0) for b in branches) or len(leaves) < 2:
                return False, None
            bounds = {(s.get("minLength", 0), s.get("maxLength")) for s in leaves}
            if len(bounds) == 1:  # the usual case: the bounds were merged into every branch
                (lo, hi), dfas = bounds.pop(), [self.string_dfa(s) for s in leaves]
            else:
                lo, hi = 0, None
                dfas = [self.string_dfa(s).intersect(CharDFA.length(*_bounds(s))) for s in leaves]
            apart = sum(d.num_states for d in dfas)
            united = dfas[0]
            for d in dfas[1:]:
                united = united.union(d, max(PRODUCT_LIMIT, apart))
                if united.num_states > apart:
                    return False, None
            return True, self.automaton_string(united, lo, hi, hint)
        except (GrammarError, RecursionError):
            return False, None
        finally:
            self.lenient = lenient

    def string_leaves(self, schema: Any, path: str, out: List[Dict[str, Any]], level: int) -> bool:
        """Collect in ``out`` the string schemas whose union ``schema`` is, each one that
        ``string`` builds an automaton for; False when ``schema`` is anything else (another
        type, an enum, ...). Schemas that admit nothing add nothing."""
        if level > _MAX_LEVEL or len(out) > _MAX_UNION_LEAVES:
            return False
        if schema is False:
            return True
        if not isinstance(schema, dict):
            return False
        schema = self.deref(schema, path)
        if isinstance(schema, dict) and "allOf" in schema:
            schema = self.flatten_all_of(schema, path)
        if schema is False:
            return True
        if (
            not isinstance(schema, dict)
            or _REWRITTEN_KW & set(schema)
            or "enum" in schema
            or "const" in schema
        ):
            return False
        if "not" in schema:
            rest = {k: v for k, v in schema.items() if k != "not"}
            positive = self.negate(schema["not"], _ptr(path, "not"))
            return self.string_leaves(self.merge(rest, positive, path), path, out, level + 1)
        if "oneOf" in schema:
            return False
        if "anyOf" in schema:
            branches = schema["anyOf"]
            if not isinstance(branches, list) or not branches:
                return False
            rest = {k: v for k, v in schema.items() if k != "anyOf" and not _is_annotation(k)}
            if rest:
                branches = [self.merge(rest, b, path) for b in branches]
            return all(self.string_leaves(b, path, out, level + 1) for b in branches)
        if any(k not in _STRING_KW and k != "type" and not _is_annotation(k) for k in schema):
            return False
        if self.types(schema, path) != ["string"]:
            return False
        bounds = _bounds(schema)
        if bounds is None:
            return False  # malformed: the usual conversion says why
        lo, hi = bounds
        if hi is not None and lo > hi:
            return True
        pattern, fmt = schema.get("pattern"), schema.get("format")
        if (pattern is not None and not isinstance(pattern, str)) or (
            fmt is not None and (not isinstance(fmt, str) or fmt in json_values.UNSUPPORTED_SPEC_FORMATS)
        ):
            return False
        if fmt not in json_values.SUPPORTED_FORMATS:
            fmt = None
        constraints = [c for c in (pattern, fmt) if c is not None]
        if not (
            any(schema.get(k) for k in _INTERNAL_KW)
            or len(constraints) > 1
            or (constraints and (lo or hi is not None))
        ):
            return False  # built without an automaton (a pattern alone, a length alone)
        out.append(schema)
        return True

    def string_dfa(self, schema: Dict[str, Any]) -> CharDFA:
        """The automaton of a string schema's character constraints, its length bounds apart
        (GrammarError past the automata's limits)."""
        parts = [
            _pattern_dfa(p)
            for p in [
                *([schema["pattern"]] if "pattern" in schema else []),
                *schema.get(_AND_PATTERNS, []),
            ]
        ]
        if schema.get("format") in json_values.SUPPORTED_FORMATS:
            parts.append(_format_dfa(schema["format"]))
        dfa = parts[0] if parts else CharDFA.length(0, None)  # (no product with "any string")
        for part in parts[1:]:
            dfa = dfa.intersect(part)
        for p in schema.get(_NOT_PATTERNS, []):
            dfa = dfa.minus(_pattern_dfa(p))
        if schema.get(_NOT_STRINGS):
            dfa = dfa.minus(CharDFA.literal_set(schema[_NOT_STRINGS]))
        return dfa

    def automaton_string(self, dfa: CharDFA, lo: int, hi: Optional[int], hint: str) -> Optional[Expr]:
        """A JSON string whose content ``dfa`` accepts, of ``lo..hi`` characters (GrammarError
        past the automata's limits)."""
        loop = dfa.single_loop()
        if loop is not None and (lo or hi is not None):
            # C* under a length bound is C{lo,hi}: counted, not a product automaton
            ch = json_values.json_char_of(loop)
            if ch is None:  # no character can be spelled: only the empty string
                return None if lo else seq([_DQ, _DQ])
            return seq([_DQ, json_values.repeat(ch, lo, hi), _DQ])
        if lo or hi is not None:
            dfa = dfa.intersect(CharDFA.length(lo, hi))
        content = dfa.to_ir(self.json_char, self.rules, self.fresh, f"{hint}_str")
        return None if content is None else seq([_DQ, content, _DQ])

    def number(self, schema: Dict[str, Any], path: str, *, integer: bool) -> Optional[Expr]:
        if integer and schema.get(_NOT_INTEGER):
            return None
        expr = self.number_in_bounds(schema, path, integer=integer)
        if expr is None or not (
            "multipleOf" in schema or schema.get(_NOT_INTEGER) or schema.get(_NOT_NUMBERS)
        ):
            return expr
        keyword = "multipleOf" if "multipleOf" in schema else "not"
        try:
            dfa = CharDFA.from_expr(expr)
            if "multipleOf" in schema:
                dfa = dfa.intersect(self.multiples(schema["multipleOf"], path))
            if schema.get(_NOT_INTEGER):
                dfa = dfa.intersect(_fraction_dfa())
            if schema.get(_NOT_NUMBERS):
                # one spelling per value (no exponent, no trailing fraction zeros): then leaving
                # out the values' spellings leaves out the values
                dfa = dfa.intersect(_canonical_number_dfa()).minus(
                    CharDFA.literal_set([sp for v in schema[_NOT_NUMBERS] for sp in _number_spellings(v)])
                )
        except GrammarError as e:
            self.unsupported(keyword, path, f"cannot be expressed: {e}")
            return expr
        return dfa.to_ir(lambda ranges: CharClass(tuple(ranges)), self.rules, self.fresh, "number")

    def multiples(self, step: Any, path: str) -> CharDFA:
        """JSON integers that an integer ``step`` divides, by a remainder automaton over the
        digits. Numbers are limited to the integer spelling (``4.0`` and ``4e0`` are not
        generated): sound, and the same under exact and floating-point arithmetic. A fractional
        step is refused: validators that divide binary floats call ``3`` no multiple of ``0.1``,
        so no grammar can agree with them all."""
        if isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0:
            raise self.fail("'multipleOf' must be a number above 0", path, "multipleOf")
        if step != int(step):
            raise GrammarError(f"only integer steps are supported, not {step!r}")
        if step > _MAX_MODULUS:
            raise GrammarError(f"a step above {_MAX_MODULUS} needs too large an automaton")
        return _remainder_dfa(int(step))

    def number_in_bounds(self, schema: Dict[str, Any], path: str, *, integer: bool) -> Optional[Expr]:
        mn, mx = schema.get("minimum"), schema.get("maximum")
        emn, emx = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        for k, x in (("minimum", mn), ("maximum", mx), ("exclusiveMinimum", emn), ("exclusiveMaximum", emx)):
            if x is not None and not isinstance(x, (int, float)):
                raise self.fail(f"'{k}' must be a number", path, k)
        # draft 4: boolean exclusive* qualify minimum / maximum
        if isinstance(emn, bool):
            emn, mn = (mn, None) if emn else (None, mn)
        if isinstance(emx, bool):
            emx, mx = (mx, None) if emx else (None, mx)
        if mn is None and mx is None and emn is None and emx is None:
            if "multipleOf" in schema or _NOT_INTEGER in schema or _NOT_NUMBERS in schema:
                # automata need the expression, not a rule
                return parse_regex(r"0|-?[1-9][0-9]*") if integer else json_values.ANY_NUMBER
            return self.base("json_integer" if integer else "json_number")
        fn = json_values.integer_expr if integer else json_values.number_expr
        try:
            return fn(mn, mx, emn, emx)
        except SchemaError:
            raise
        except GrammarError as e:
            if "lies in the range" in str(e) or "empty" in str(e):
                return None  # no number of this type is in range: this type contributes nothing
            kw = next(
                k for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema
            )
            raise self.fail(f"'{kw}': {e}", path, kw) from None

    # ---- objects -------------------------------------------------------------------------

    def object(self, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
        lay = self.layout
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise self.fail("'properties' must be an object", path, "properties")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise self.fail("'required' must be an array of strings", path, "required")
        req = set(required)
        patterns = schema.get("patternProperties", {})
        if not isinstance(patterns, dict):
            raise self.fail("'patternProperties' must be an object", path, "patternProperties")
        # strict closes the objects that declare members; {"type": "object"} stays any object
        declared = any(k in schema for k in ("properties", "required", "patternProperties"))
        addl = schema.get("additionalProperties", False if self.strict and declared else True)
        names_dfa = self.property_names_dfa(schema.get("propertyNames", True), _ptr(path, "propertyNames"))
        props = dict(props)
        # A required name declares a member too: strict's own closing does not forbid it.
        given = schema.get("additionalProperties", True)
        for r in required:
            if r not in props:
                props[r] = given if not any(self.pattern_dfa(p, path).matches(r) for p in patterns) else True
        for k in list(props):
            if names_dfa is not None and not names_dfa.matches(k):
                if k in req:
                    return None
                del props[k]
                continue
            for p, ps in patterns.items():
                if self.pattern_dfa(p, path).matches(k):
                    props[k] = self.merge(props[k], ps, _ptr(path, "patternProperties", p))
        members: List[Tuple[Optional[Expr], bool]] = []
        for k, s in props.items():
            v = self.sub(s, _ptr(path, "properties", k), depth + 1, f"{hint}_prop_{_sanitize(k)}")
            if v is None:
                if k in req:
                    return None
                continue
            members.append((seq([_string_literal(k), lay.colon(depth), v]), k in req))
        if patterns or names_dfa is not None:
            add = self.extra_members(props, patterns, addl, names_dfa, path, depth, hint)
        else:
            add = self.additional_members(props, addl, path, depth, hint)
        n_req = len(req)
        mnp, mxp = (_count(schema, k, self, path) for k in ("minProperties", "maxProperties"))
        mnp = mnp or 0
        if mxp is not None and (mxp < n_req or mxp < mnp):
            return None
        allow_empty = n_req == 0 and mnp == 0
        counted = mnp > max(n_req, 1) or (mxp is not None and (add is not None or mxp < len(members)))
        if counted and (len(members) + 2) * ((mxp if mxp is not None else mnp) + 1) > _MAX_COUNTED_RULES:
            self.unsupported(
                "maxProperties" if mxp is not None else "minProperties",
                path,
                f"needs more than {_MAX_COUNTED_RULES} rules to count the members",
            )
            counted, allow_empty = False, n_req == 0  # lenient: the count is not enforced
        if counted:
            nonempty = self.members_counted(members, add, lay.sep(depth), mnp, mxp, hint)
            alts = [lay.empty(depth, b"{}") if allow_empty else None]
            if nonempty is not None:
                alts.append(lay.container(depth, b"{}", nonempty))
            return choice(alts)
        sep = lay.sep(depth)
        # after[i]: the members from i on, when one was already written (each preceded by sep).
        # first(i - 1) and after[i - 1] both use after[i] for i <= first_req + 1 (the members up
        # to the first required one). Up to there, after[i] is sep and then pick[i], the next
        # member written (m_i, or any later one up to the first required, or an extra one),
        # optional when no required member is ahead: the separator comes before the choice, so
        # after a value only sep is expected, not a chain of nullable rules, one per optional
        # member left, each predicted (and classified) at once. pick[i] from 2 on are rules,
        # each referring to the next, so the size stays linear.
        n = len(members)
        tail: Expr = Repeat(seq([sep, add]), 0, None) if add is not None else EMPTY
        first_req = next((i for i, (_, r) in enumerate(members) if r), n)
        pieces = [seq([sep, m]) if r else _opt(seq([sep, m])) for m, r in members]
        after: List[Expr] = [EMPTY] * (n + 1)
        shared = min(first_req + 1, n)
        after[shared] = seq(pieces[shared:] + [tail])
        if shared >= 2 and type(after[shared]) not in (RuleRef, Literal) and after[shared] != EMPTY:
            name = self.fresh(f"{hint}_rest_{shared}")  # used twice below: one rule
            self.rules[name] = after[shared]
            after[shared] = RuleRef(name)
        # pick[shared]: an extra member, the only choice left once the declared ones are past
        pick: Optional[Expr] = seq([add, tail]) if add is not None and shared == n else None
        for i in range(shared - 1, 0, -1):
            m, r = members[i]
            here = seq([m, after[i + 1]])
            body = here if r else choice([here, pick])
            assert body is not None
            if i >= 2 and type(body) not in (RuleRef, Literal):
                name = self.fresh(f"{hint}_pick_{i}")
                self.rules[name] = body
                body = RuleRef(name)
            pick = body
            after[i] = seq([sep, pick]) if first_req < n else _opt(seq([sep, pick]))
        # first(i): nothing written yet; members from i on, at least one member in total:
        # first(i) = here(i) | first(i + 1), or here(i) alone for a required member. The
        # alternatives are gathered from the last and made one choice: choosing at each step
        # re-flattened the growing choice, quadratic in the optional members.
        firsts: List[Optional[Expr]] = [seq([add, tail]) if add is not None else None]
        for i in range(min(first_req, n - 1) if n else -1, -1, -1):
            m, r = members[i]
            here = seq([m, after[i + 1]])
            if r:
                firsts.clear()
            firsts.append(here)
        nonempty = choice(firsts[::-1])
        if self.any_order and 2 <= n <= ANY_ORDER_LIMIT:
            nonempty = self.members_any_order(members, add, sep, hint)
        alts: List[Optional[Expr]] = []
        if allow_empty:
            alts.append(lay.empty(depth, b"{}"))
        if nonempty is not None:
            alts.append(lay.container(depth, b"{}", nonempty))
        return choice(alts)

    def members_counted(
        self,
        members: List[Tuple[Expr, bool]],
        add: Optional[Expr],
        sep: Expr,
        lo: int,
        hi: Optional[int],
        hint: str,
    ) -> Optional[Expr]:
        """Object content (at least one member) with ``lo..hi`` members in all: the declared
        members in schema order, then extra ones, counted by one rule per (position, count).
        Counts past ``lo`` are all alike when there is no ``hi``."""
        n = len(members)
        cap = hi if hi is not None else lo
        names: Dict[Tuple[int, int], str] = {}

        def at(i: int, c: int) -> Optional[Expr]:
            """The members from position i on (n: the extra ones), c members written so far."""
            key = (i, c)
            if key in names:
                return RuleRef(names[key])
            names[key] = self.fresh(f"{hint}_count")
            lead = [sep] if c else []
            more = min(c + 1, cap) if hi is None else c + 1
            alts: List[Optional[Expr]] = []
            if i < n:
                m, required = members[i]
                if more <= cap or hi is None:
                    nxt = at(i + 1, more)
                    alts.append(None if nxt is None else seq([*lead, m, nxt]))
                if not required:
                    alts.append(at(i + 1, c))
            else:
                if add is not None and (hi is None or c < hi):
                    nxt = RuleRef(names[key]) if more == c else at(n, more)
                    alts.append(None if nxt is None else seq([*lead, add, nxt]))
                if c >= max(lo, 1):
                    alts.append(EMPTY)
            body = choice(alts)
            if body is None:
                del names[key]
                return None
            self.rules[names[key]] = body
            return RuleRef(names[key])

        return at(0, 0)

    def members_any_order(
        self, members: List[Tuple[Expr, bool]], add: Optional[Expr], sep: Expr, hint: str
    ) -> Optional[Expr]:
        """Object content with the declared members in any order, each at most once and every
        required one present, and extra members anywhere: one rule per set of members written."""
        n = len(members)
        need = sum(1 << i for i, (_, r) in enumerate(members) if r)
        names: Dict[int, str] = {}

        def rest(done: int) -> Expr:  # what may follow once the members in ``done`` are written
            if done not in names:
                names[done] = self.fresh(f"{hint}_any_{done}")
                alts: List[Optional[Expr]] = [
                    seq([sep, members[i][0], rest(done | 1 << i)]) for i in range(n) if not done >> i & 1
                ]
                if add is not None:
                    alts.append(seq([sep, add, RuleRef(names[done])]))
                if done & need == need:
                    alts.append(EMPTY)
                body = choice(alts)
                self.rules[names[done]] = body if body is not None else EMPTY
            return RuleRef(names[done])

        firsts: List[Optional[Expr]] = [seq([m, rest(1 << i)]) for i, (m, _) in enumerate(members)]
        if add is not None:
            firsts.append(seq([add, rest(0)]))
        return choice(firsts)

    def additional_members(
        self, props: Dict[str, Any], addl: Any, path: str, depth: int, hint: str
    ) -> Optional[Expr]:
        """A member whose key is none of ``props`` and whose value is valid against ``addl``."""
        if addl is False:
            return None
        v = self.sub(addl, _ptr(path, "additionalProperties"), depth + 1, f"{hint}_addl")
        if v is None:
            return None
        names = tuple(props)
        key = self.key_rules.get(names)
        if key is None:  # one rule per set of names: objects reached by several paths share it
            # the tail (characters, closing quote) spelled out, not a rule of its own: a
            # reference is a rule edge one character into the key, and at a key position
            # nearly every token would run past it into the parser; spelled out, the key is
            # one byte automaton whose states take every plain token at once
            # (csrc/ag_plain_tokens.h)
            tail = seq([Repeat(self.base("json_any_char"), 0, None), _DQ])
            escape, any_char = self.base("json_plain_escape"), self.base("json_any_char")
            if names and all(n and set(n) <= _PLAIN_ASCII for n in names):  # the usual names
                body = seq([_DQ, KeyTrie(names, tail, escape, any_char, _RAW_RANGES)])
            else:
                body = _key_not_in(names, tail, escape, any_char)
            key = RuleRef(self.fresh(f"{hint}_other_key"))
            self.rules[key.name] = body
            self.key_rules[names] = key
        name = self.fresh(f"{hint}_addl_member")
        self.rules[name] = seq([key, self.layout.colon(depth), v])
        return RuleRef(name)

    def extra_members(
        self,
        props: Dict[str, Any],
        patterns: Dict[str, Any],
        addl: Any,
        names_dfa: Optional[CharDFA],
        path: str,
        depth: int,
        hint: str,
    ) -> Optional[Expr]:
        """A member whose key is none of ``props``, under ``patternProperties`` and
        ``propertyNames``: keys are split by the set of patterns they match, and each class
        gets the merge of those patterns' schemas (``additionalProperties`` when none)."""
        if len(patterns) > _MAX_PATTERN_PROPERTIES:
            self.unsupported(
                "patternProperties",
                path,
                f"with more than {_MAX_PATTERN_PROPERTIES} patterns is not supported",
            )
            patterns = {}
            addl = True
        try:
            keys = CharDFA.literal_set(list(props)).complement()
            if names_dfa is not None:
                keys = keys.intersect(names_dfa)
            dfas = [self.pattern_dfa(p, path) for p in patterns]
            alts: List[Expr] = []
            for mask in range(1 << len(dfas)):
                chosen = [i for i in range(len(dfas)) if mask >> i & 1]
                value: Any = addl if not chosen else True
                for i in chosen:
                    p = list(patterns)[i]
                    value = self.merge(value, patterns[p], _ptr(path, "patternProperties", p))
                if value is False:
                    continue
                cls = keys
                for i, d in enumerate(dfas):
                    cls = cls.intersect(d) if mask >> i & 1 else cls.minus(d)
                if cls.is_empty():
                    continue
                where = _ptr(path, "patternProperties") if chosen else _ptr(path, "additionalProperties")
                v = self.sub(value, where, depth + 1, f"{hint}_pp{mask}")
                if v is None:
                    continue
                key = cls.to_ir(self.json_char, self.rules, self.fresh, f"{hint}_key{mask}")
                if key is not None:
                    alts.append(seq([_DQ, key, _DQ, self.layout.colon(depth), v]))
        except GrammarError as e:
            self.unsupported("patternProperties", path, f"cannot be converted: {e}")
            return self.additional_members(props, True, path, depth, hint)
        body = choice(alts)
        if body is None:
            return None
        name = self.fresh(f"{hint}_extra_member")
        self.rules[name] = body
        return RuleRef(name)

    def pattern_dfa(self, pattern: Any, path: str) -> CharDFA:
        if not isinstance(pattern, str):
            raise self.fail("a pattern must be a string", path, "patternProperties")
        try:
            return _pattern_dfa(pattern)
        except GrammarError as e:
            raise self.fail(
                f"the pattern {pattern!r} cannot be converted: {e}", path, "patternProperties"
            ) from None

    def property_names_dfa(self, schema: Any, path: str) -> Optional[CharDFA]:
        """The automaton of the keys ``propertyNames`` allows; None when it allows every key."""
        schema = self.deref(schema, path) if isinstance(schema, dict) else schema
        if schema is True or (isinstance(schema, dict) and all(_is_annotation(k) for k in schema)):
            return None
        if schema is False:
            return CharDFA.literal_set([])
        if not isinstance(schema, dict):
            raise self.fail("a schema must be an object or a boolean", path)
        allowed = {"type", "enum", "const", "pattern", "format", "minLength", "maxLength"}
        other = [k for k in schema if k not in allowed and not _is_annotation(k)]
        if other:
            self.unsupported(other[0], path, "inside 'propertyNames' is not supported")
            return None
        types = schema.get("type", "string")
        if "string" not in ([types] if isinstance(types, str) else types):
            return CharDFA.literal_set([])
        try:
            dfa = CharDFA.length(schema.get("minLength", 0), schema.get("maxLength"))
            if "pattern" in schema:
                dfa = dfa.intersect(self.pattern_dfa(schema["pattern"], path))
            if schema.get("format") in json_values.SUPPORTED_FORMATS:
                dfa = dfa.intersect(_format_dfa(schema["format"]))
            values = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
            if values is not None:
                dfa = dfa.intersect(CharDFA.literal_set([v for v in values if isinstance(v, str)]))
        except GrammarError as e:
            self.unsupported("propertyNames", path, f"cannot be converted: {e}")
            return None
        return dfa

    # ---- arrays --------------------------------------------------------------------------

    def array(self, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
        lay = self.layout
        items = schema.get("items")
        prefix: List[Any] = []
        if "prefixItems" in schema:
            prefix = schema["prefixItems"]
            if not isinstance(prefix, list):
                raise self.fail("'prefixItems' must be an array", path, "prefixItems")
            rest = items if items is not None else True
            rest_path = _ptr(path, "items")
            prefix_kw = "prefixItems"
        elif isinstance(items, list):
            prefix = items
            rest = schema.get("additionalItems", True)
            rest_path = _ptr(path, "additionalItems")
            prefix_kw = "items"
        else:
            rest = items if items is not None else True
            rest_path = _ptr(path, "items")
            prefix_kw = "items"
        if schema.get("uniqueItems") not in (None, False):
            self.unsupported("uniqueItems", path)
        if "contains" in schema and not (schema.get("minContains") == 0 and "maxContains" not in schema):
            return self.array_contains(schema, rest, path, depth, hint, positional=bool(prefix))
        lo = _count(schema, "minItems", self, path) or 0
        hi = _count(schema, "maxItems", self, path)
        if hi is not None and lo > hi:
            return None
        k = len(prefix)
        pexprs = [
            self.sub(s, _ptr(path, prefix_kw, i), depth + 1, f"{hint}_item_{i}") for i, s in enumerate(prefix)
        ]
        rexpr = self.sub(rest, rest_path, depth + 1, f"{hint}_items")
        sep = lay.sep(depth)
        # Items at positions >= limit cannot exist.
        limit = k if rexpr is None else None
        for i, p in enumerate(pexprs):
            if p is None:
                limit = i
                break
        if hi is not None:
            limit = hi if limit is None else min(limit, hi)
        if limit is not None and lo > limit:
            return None

        def tail(i: int) -> Optional[Expr]:
            """Items from position i (>= 1) on, each preceded by the separator."""
            if limit is not None and i >= limit:
                return EMPTY
            if i < k:
                p = pexprs[i]
                assert p is not None
                nxt = tail(i + 1)
                assert nxt is not None
                piece = seq([sep, p, nxt])
                return piece if i < lo else _opt(piece)
            assert rexpr is not None
            rmin = max(lo - i, 0)
            rmax = None if limit is None else limit - i
            return Repeat(seq([sep, rexpr]), rmin, rmax)

        alts: List[Optional[Expr]] = []
        if lo == 0:
            alts.append(lay.empty(depth, b"[]"))
        if limit is None or limit > 0:
            first = pexprs[0] if k else rexpr
            assert first is not None
            t = tail(1)
            assert t is not None
            alts.append(lay.container(depth, b"[]", seq([first, t])))
        return choice(alts)

    def array_contains(
        self, schema: Dict[str, Any], items: Any, path: str, depth: int, hint: str, *, positional: bool
    ) -> Optional[Expr]:
        """Arrays with ``minContains..maxContains`` items valid against ``contains``: every item
        is either a *yes* item (items and contains) or a *no* item (items and not contains),
        so counting the yes items is exact. One rule per count; needs ``contains`` negatable."""
        lo_c, hi_c = schema.get("minContains", 1), schema.get("maxContains")
        for k, x in (("minContains", lo_c), ("maxContains", hi_c)):
            if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
                raise self.fail(f"'{k}' must be a non-negative integer", path, k)
        if hi_c is not None and lo_c > hi_c:
            return None
        if positional or "minItems" in schema or "maxItems" in schema:
            self.unsupported(
                "contains", path, "together with prefixItems, minItems or maxItems is not supported"
            )
            return self.array(
                {k: v for k, v in schema.items() if k not in ("contains", "minContains", "maxContains")},
                path,
                depth,
                hint,
            )
        if max(lo_c, hi_c or 0) > _MAX_CONTAINS:
            self.unsupported(
                "minContains" if lo_c > _MAX_CONTAINS else "maxContains",
                path,
                f"above {_MAX_CONTAINS} is not supported",
            )
            return self.base_array(depth)
        contains = schema["contains"]
        yes = self.sub(self.merge(items, contains, path), _ptr(path, "contains"), depth + 1, f"{hint}_yes")
        no = self.sub(
            self.merge(items, self.negate(contains, _ptr(path, "contains")), path),
            _ptr(path, "items"),
            depth + 1,
            f"{hint}_no",
        )
        if yes is None and lo_c > 0:
            return None
        lay = self.layout
        sep = lay.sep(depth)
        top = hi_c if hi_c is not None else lo_c  # counts past lo_c are all alike when unbounded
        names = [self.fresh(f"{hint}_contains_{n}") for n in range(top + 1)]
        for n in range(top + 1):  # after(n): what may follow once n yes items are written
            more_yes = n + 1 if n < top else (n if hi_c is None else None)
            alts: List[Optional[Expr]] = [
                seq([sep, no, RuleRef(names[n])]) if no is not None else None,
                seq([sep, yes, RuleRef(names[more_yes])])
                if yes is not None and more_yes is not None
                else None,
                EMPTY if n >= lo_c else None,
            ]
            self.rules[names[n]] = choice(alts) or EMPTY  # (None only once n >= lo_c: see below)
        first: List[Optional[Expr]] = []
        if no is not None:
            first.append(seq([no, RuleRef(names[0])]))
        if yes is not None and top >= 1:
            first.append(seq([yes, RuleRef(names[min(1, top)])]))
        out: List[Optional[Expr]] = [lay.empty(depth, b"[]")] if lo_c == 0 else []
        body = choice(first)
        if body is not None:
            out.append(lay.container(depth, b"[]", body))
        return choice(out)

    def base_array(self, depth: int) -> Optional[Expr]:
        """Any array (the lenient fallback)."""
        return self.array({"type": "array"}, "", depth, "any_array")


# --------------------------------------------------------------------------- entry point


#: How deep a schema document may nest (objects and arrays), checked before converting it.
MAX_SCHEMA_DEPTH = 256


def _check_depth(doc: Any) -> None:
    """``SchemaError`` for a document nested deeper than ``MAX_SCHEMA_DEPTH`` (iteratively: a deep
    document must not exhaust the Python stack before the converter's own limits apply)."""
    level, depth = [doc], 1  # level by level: no (node, depth) pair per node
    while level:
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"the schema nests more than {MAX_SCHEMA_DEPTH} levels")
        below: List[Any] = []
        for node in level:
            children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
            below += [c for c in children if isinstance(c, (dict, list))]
        level, depth = below, depth + 1


def _load(schema: Any) -> Any:
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    if isinstance(schema, (str, bytes)):
        try:
            return json.loads(schema)
        except ValueError as e:
            raise SchemaError(f"the schema is not valid JSON: {e}") from None
        except RecursionError:
            raise SchemaError(f"the schema JSON nests more than {MAX_SCHEMA_DEPTH} levels") from None
    if isinstance(schema, (dict, bool)):
        return schema
    raise SchemaError(
        f"a schema must be a dict, a bool, a JSON string or a Pydantic model class, not {type(schema).__name__}"
    )


def json_schema_rules(schema: Any, **options: Any) -> Tuple[List[Rule], str]:
    """Grammar rules (root first) for the JSON texts valid against ``schema``, and the root name:
    ``schema_rules_and_parts`` (the same options) without the parts.

    Example:
        >>> rules, root = json_schema_rules({"enum": ["a", 1, None]})
        >>> rules[0]
        Rule(name='root', body=Choice(items=(Literal(value=b'"a"'), Literal(value=b'1'), Literal(value=b'null'))))
    """
    rules, root, _ = schema_rules_and_parts(schema, **options)
    return rules, root


def schema_rules_and_parts(
    schema: Any,
    *,
    whitespace: str = "flexible",
    indent: Optional[Union[int, str]] = None,
    separators: Optional[Tuple[str, str]] = None,
    strict: bool = False,
    any_order: bool = False,
    max_whitespace: Optional[int] = None,
    lenient: bool = False,
    xgrammar_types: bool = False,
) -> Tuple[List[Rule], str, Tuple[Any, ...]]:
    """Grammar rules (root first) for the JSON texts valid against ``schema``, the root name, and
    the grammars the rules embed (``Grammar.parts``, known here without a walk of the rules).

    Raises ``SchemaError`` for what cannot be expressed exactly (``lenient=True``: a warning and
    an over-approximation instead) and for malformed schemas. ``any_order=True`` accepts the
    declared properties of an object in any order (objects of up to ``ANY_ORDER_LIMIT`` declared
    properties; larger ones keep schema order, a sound subset), extra members anywhere.
    ``strict=True`` forbids undeclared members in objects that declare ``properties``,
    ``required`` or ``patternProperties`` (a bare ``{"type": "object"}`` is any object).
    ``xgrammar_types=True`` reads a schema without ``type`` but with object (or array) keywords
    as an object (or array) schema, as xgrammar does inside structural tags.

    Where any value is allowed, the rules embed (``ir.Embed``) one grammar of any JSON value,
    made once per layout (``_value_embed``); with ``indent``, rules of their own instead.

    Example:
        >>> rules, root, parts = schema_rules_and_parts({"enum": ["a", 1, None]})
        >>> rules[0], parts
        (Rule(name='root', body=Choice(items=(Literal(value=b'"a"'), Literal(value=b'1'), Literal(value=b'null')))), ())
        >>> [g.root for g in schema_rules_and_parts({"type": "array"})[2]]
        ['json_value']
    """
    doc = _load(schema)
    _check_depth(doc)
    layout = _layout(whitespace, indent, separators, max_whitespace)
    conv = _Converter(
        doc, layout, strict=strict, lenient=lenient, any_order=any_order, xgrammar=xgrammar_types
    )
    conv.taken.add("root")
    conv.ref_memo[("", 0)] = "root"
    conv.rules["root"] = EMPTY
    try:
        expr = conv.convert(doc, "", 0, "root")
    except RecursionError:
        # $ref chains that merge into themselves, or automata too long to lower recursively
        raise SchemaError(
            "the schema is too deeply nested or recursive to convert (a $ref cycle merged with "
            "sibling keywords, or a pattern automaton too long)",
            pointer="#",
        ) from None
    except (TypeError, AttributeError, KeyError, IndexError) as e:
        # A keyword value of the wrong type that no check caught: still a malformed schema.
        raise SchemaError(f"malformed schema: {type(e).__name__}: {e}", pointer="#") from None
    if expr is None:
        raise SchemaError("the schema accepts no value (it is false or unsatisfiable)", pointer="#")
    conv.rules["root"] = expr
    if layout.mode != "compact":
        conv.base("ws")  # referenced by the layout's separators (unused ones are dropped by Grammar)
    rules = [Rule(n, b) for n, b in conv.rules.items()]
    rules += [Rule(n, b) for n, b in conv.base_rules.items()]
    return rules, "root", () if conv.value_embed is None else (conv.value_embed.grammar,)
