"""The helper rules every conversion shares (``ws``, ``json_string``, ``json_value``, the
format rules, ...), made once per layout and kept across conversions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Tuple

from .. import json_values, pieces
from ..ir import (
    EMPTY,
    CharClass,
    Choice,
    Expr,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    referenced_rules,
    seq,
)
from .excludes import filtered_string
from .formats import _format_rule_body
from .lexical import _DQ, _SHORT_ESCAPE_CLASS, _SURROGATE_PAIR_TAIL, _hex4_in, _opt, choice

if TYPE_CHECKING:
    from .convert import Converter


#: Base rule bodies (``json_string``, ``json_value_3``, ...), the names they reference and their
#: piece information (``pieces.PieceInfo``), by (layout signature, name): they depend on nothing
#: else, so conversions share them, and what the stages derived from them (their checks and
#: serialized nodes) is kept with them, as constants, across ``memo.clear_memos``.
_BASE_CACHE: Dict[Tuple[Any, str], Tuple[Expr, Tuple[str, ...], pieces.PieceInfo]] = {}


def _from_cache(conv: Converter, name: str) -> bool:
    """Install base rule ``name`` (and what it references) from the module cache."""
    if conv.excludes:  # filtered strings: their rules are the conversion's (not cached)
        return False
    found = _BASE_CACHE.get((conv.layout.sig, name))
    if found is None:
        return False
    body, deps, info = found
    conv.taken.add(name)
    conv.base_rules[name] = pieces.mark(body, info)  # marked again after clear_memos()
    for dep in deps:
        if dep not in conv.base_rules:
            if dep.startswith("json_value"):
                value_rule(conv, int(dep.rsplit("_", 1)[1]) if dep != "json_value" else 0)
            else:
                base(conv, dep)
    return True


def _to_cache(conv: Converter, name: str, body: Expr) -> None:
    deps = referenced_rules(body)
    if len(_BASE_CACHE) < 4096 and not conv.excludes:
        # a piece: every grammar that installs it from the cache has the same body object,
        # so its checks, normalization and serialized nodes are derived once
        body = pieces.mark(body)
        _BASE_CACHE[(conv.layout.sig, name)] = (body, tuple(deps), pieces.info(body))


#: The base rules most grammars hold, put last in a grammar's rules in this order (the largest
#: last): the serializer writes the last rule first, so each lands where it did in the grammar
#: before, and its nodes are copied from there (``serialize._Chunk.placed``).
_LAST = ("json_string", "json_plain_escape", "json_any_char")
_LAST_RANK = {name: i + 1 for i, name in enumerate(_LAST)}  # 0: every other rule


def base_rule_list(conv: Converter) -> List[Rule]:
    """The conversion's base rules as rules, by name (those of ``_LAST`` last): one installed
    from the module cache comes before the rules it references, one built here after them,
    and a grammar's words (its digest) must not depend on which (on what the process
    converted before)."""
    names = sorted(conv.base_rules, key=lambda n: (_LAST_RANK.get(n, 0), n))
    return [Rule(n, conv.base_rules[n]) for n in names]


#: A reference to each base rule, made once (IR is immutable): every string member asks for one.
_BASE_REFS: Dict[str, RuleRef] = {}


def base(conv: Converter, name: str) -> RuleRef:
    """Shared helper rules (created on first use)."""
    if name not in conv.base_rules and not _from_cache(conv, name):
        if name.startswith("json_format_"):
            body = _format_body(conv, name)
        else:
            body = _BODIES[name](conv)
        conv.taken.add(name)
        conv.base_rules[name] = body
        _to_cache(conv, name, body)
    ref = _BASE_REFS.get(name)
    if ref is None:
        ref = _BASE_REFS[name] = RuleRef(name)
    return ref


def _ws(conv: Converter) -> Expr:
    return conv.layout.ws


def _any_char(conv: Converter) -> Expr:
    # any JSON string character; a surrogate escape only as a high-low pair (a lone one is no
    # character: docs/limits.md): exact for unconstrained strings
    return json_values.JSON_STRING_CHAR


def _plain_escape(conv: Converter) -> Expr:
    # an escape spelling one character that is not printable ASCII (a short escape, a control
    # character, or anything from U+0080 on, surrogate pairs included)
    escaped = choice(
        [
            CharClass(_SHORT_ESCAPE_CLASS),
            seq([Literal(b"u"), _hex4_in([(0, 0x1F), (0x80, 0xD7FF), (0xE000, 0xFFFF)])]),
            _SURROGATE_PAIR_TAIL,
        ]
    )
    return seq([Literal(b"\\"), escaped])


def _string(conv: Converter) -> Expr:
    if conv.excludes:
        return filtered_string(conv)
    return seq([_DQ, Repeat(base(conv, "json_any_char"), 0, None), _DQ])


def _integer(conv: Converter) -> Expr:  # as xgrammar's: no "-0"
    nonzero = seq(
        [_opt(Literal(b"-")), CharClass(((0x31, 0x39),)), Repeat(CharClass(((0x30, 0x39),)), 0, None)]
    )
    return Choice((Literal(b"0"), nonzero))


def _number(conv: Converter) -> Expr:
    digits = Repeat(CharClass(((0x30, 0x39),)), 1, None)
    nonzero = seq([CharClass(((0x31, 0x39),)), Repeat(CharClass(((0x30, 0x39),)), 0, None)])
    exponent = seq(
        [CharClass(((0x45, 0x45), (0x65, 0x65))), _opt(CharClass(((0x2B, 0x2B), (0x2D, 0x2D)))), digits]
    )
    return seq(
        [
            _opt(Literal(b"-")),  # "-0" and "-0.5" are numbers (not integers)
            Choice((Literal(b"0"), nonzero)),
            _opt(seq([Literal(b"."), digits])),
            _opt(exponent),
        ]
    )


def _format_body(conv: Converter, name: str) -> Expr:
    body = _format_rule_body(name)
    for dep in referenced_rules(body):  # the rules its counted repeats use
        base(conv, dep)
    return body


#: The body of each helper rule but the format rules (``_format_body``).
_BODIES: Dict[str, Callable[[Converter], Expr]] = {
    "ws": _ws,
    "json_any_char": _any_char,
    "json_plain_escape": _plain_escape,
    "json_string": _string,
    "json_integer": _integer,
    "json_number": _number,
}


def value_rule(conv: Converter, depth: int) -> RuleRef:
    """Any JSON value at ``depth`` as a base rule of this grammar (``json_value``, or
    ``json_value_<depth>`` with indentation), with the base rules it references."""
    d = conv.layout.key(depth)
    name = "json_value" if conv.layout.mode != "indent" else f"json_value_{d}"
    if name in conv.base_rules or _from_cache(conv, name):
        return RuleRef(name)
    conv.taken.add(name)
    conv.base_rules[name] = EMPTY  # placeholder for recursion
    lay = conv.layout
    nxt = value_rule(conv, depth + 1)
    member = seq([base(conv, "json_string"), lay.colon(depth), nxt])
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
            base(conv, "json_number"),
            base(conv, "json_string"),
            obj,
            arr,
        ]
    )
    assert body is not None
    conv.base_rules[name] = body
    _to_cache(conv, name, body)
    return RuleRef(name)
