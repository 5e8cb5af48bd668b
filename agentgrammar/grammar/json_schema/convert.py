"""The converter: its state (rules made, memos), errors, and the dispatch of a schema to the
builders of each keyword family."""

from __future__ import annotations

import warnings
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from ...errors import SchemaError
from .. import json_values
from ..ir import (
    CharClass,
    Choice,
    Embed,
    Expr,
    Literal,
    Rule,
    RuleRef,
    Seq,
    fresh_name,
    referenced_rules,
)
from .arrays import array_schema
from .base_rules import base, base_rule_list, value_rule
from .combinators import any_of, rewrite
from .enums import enum_schema
from .formats import _FORMAT_RULES, _format_rule_body
from .instances import _compact_json
from .keywords import (
    _ALL_TYPES,
    _ANNOTATIONS,
    _MAX_LEVEL,
    _OBJECT_KW,
    _REWRITTEN_KW,
    _TYPES,
    _UNEVALUATED_KW,
    _UNSUPPORTED,
    _is_annotation,
    _ptr,
    _show,
)
from .layout import _Layout
from .lexical import choice
from .merge import deref, flatten_all_of, merge
from .negate import negate
from .numbers import number_schema
from .objects import object_schema
from .resolve import ref_rule
from .strings import string_schema
from .unevaluated import without_unevaluated

#: A function that makes a grammar to embed from its rules and root (``Grammar._shared_part``):
#: given by the caller, so that the converter does not import the ``Grammar`` facade.
MakePart = Callable[[Sequence[Rule], str], Any]

#: An ``Embed`` of the grammar of any JSON value (``json_value`` and the base rules it
#: references), by layout signature (layouts without indentation) and part factory: made once,
#: kept like ``_BASE_CACHE``, the grammar marked to keep its loaded automata.
_VALUE_GRAMMARS: Dict[Tuple[Any, ...], Embed] = {}


def _value_embed(layout: _Layout, make_part: MakePart, excludes: Tuple[str, ...] = ()) -> Embed:
    """An ``Embed`` of the grammar of any JSON value in ``layout`` (its strings holding none of
    ``excludes``), made once by ``make_part``."""
    key = (layout.sig, make_part, excludes)
    found = _VALUE_GRAMMARS.get(key)
    if found is None:
        conv = Converter(True, layout, strict=False, lenient=False, excludes=excludes)
        value_rule(conv, 0)
        if layout.mode != "compact":
            base(conv, "ws")
        rules = base_rule_list(conv)
        rules += [Rule(n, b) for n, b in conv.rules.items()]  # a filtered string's automaton
        found = _VALUE_GRAMMARS.setdefault(key, Embed(make_part(rules, "json_value")))
    return found


#: An ``Embed`` of the grammar of each ``format``'s JSON string, by format and part factory:
#: made once, as ``_VALUE_GRAMMARS``.
_FORMAT_GRAMMARS: Dict[Tuple[str, MakePart], Embed] = {}


def _format_embed(fmt: str, make_part: MakePart) -> Embed:
    """An ``Embed`` of the grammar of ``format`` ``fmt``'s JSON string (its rule and the rules
    its counted repeats use), made once by ``make_part``."""
    key = (fmt, make_part)
    found = _FORMAT_GRAMMARS.get(key)
    if found is None:
        name = _FORMAT_RULES[fmt]
        rules: List[Rule] = []
        todo, seen = [name], {name}
        while todo:
            rule = todo.pop()
            body = _format_rule_body(rule)
            rules.append(Rule(rule, body))
            fresh = [dep for dep in referenced_rules(body) if dep not in seen]
            seen.update(fresh)
            todo += fresh
        found = _FORMAT_GRAMMARS.setdefault(key, Embed(make_part(rules, name)))
    return found


#: The keywords ``Converter._convert`` handles before the types: refused ones, ``$ref``, the
#: rewritten ones (``rewritten``) and the combinators.
_RESHAPING_KW = (
    _UNSUPPORTED | _UNEVALUATED_KW | _REWRITTEN_KW | frozenset({"$ref", "allOf", "not", "anyOf", "oneOf"})
)


#: ``Converter.sub``: no memo entry (an entry may be None, a sub-schema with no value).
_MISSING: Any = object()


#: ``Converter.rewritten``: the schema needs no rewriting.
_UNCHANGED: Any = object()


class Converter:
    """One conversion's state: the options, the rules made so far and the memos that share
    them. The builders of each keyword family (``strings``, ``objects``, ...) are functions of
    the converter."""

    def __init__(
        self,
        root: Any,
        layout: _Layout,
        *,
        strict: bool,
        lenient: bool,
        any_order: bool = False,
        xgrammar: bool = False,
        make_part: Optional[MakePart] = None,
        excludes: Tuple[str, ...] = (),
        loose_lengths: bool = False,
    ) -> None:
        self.root = root
        self.make_part = make_part  # any value as an Embed of the part it makes (any_value)
        self.value_embed: Optional[Embed] = None  # the Embed of any value, once used
        self.format_embeds: Dict[str, Embed] = {}  # the Embeds of formats used (format_string)
        self.layout = layout
        self.indented = layout.mode == "indent"  # (only then does a sub-schema's depth key it)
        self.strict = strict
        self.lenient = lenient
        self.loose_lengths = loose_lengths  # see schema_rules_and_parts
        self.any_order = any_order
        self.xgrammar = xgrammar
        self.excludes = excludes  # substrings no string may hold (excludes.py)
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
        # (id of a string automaton, minLength, maxLength) -> (it, its string): the same pattern
        # under the same bounds in sub-schemas whose other keywords differ is built once
        self.string_memo: Dict[Tuple[int, int, Optional[int]], Tuple[Any, Optional[Expr]]] = {}

    def unsupported(self, keyword: str, path: str, why: str = "is not supported") -> None:
        """Raise SchemaError, or warn when lenient (the caller then over-approximates)."""
        where = _show(_ptr(path, keyword))
        msg = f"JSON Schema keyword '{keyword}' at {where} {why}"
        if not self.lenient:
            raise SchemaError(msg, keyword=keyword, pointer=where)
        warnings.warn(msg + " (lenient: over-approximated)", UserWarning, stacklevel=4)

    def loosened(self, keyword: str, path: str, why: str) -> None:
        """Warn that a length bound is dropped under ``loose_lengths`` (the caller then
        over-approximates, as lenient does)."""
        where = _show(_ptr(path, keyword))
        msg = f"JSON Schema keyword '{keyword}' at {where} {why} (loose_lengths: over-approximated)"
        warnings.warn(msg, UserWarning, stacklevel=4)

    def fail(self, msg: str, path: str, keyword: Optional[str] = None) -> SchemaError:
        where = _show(_ptr(path, keyword) if keyword else path)
        return SchemaError(f"{msg} (at {where})", keyword=keyword, pointer=where)

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

    def any_value(self, depth: int) -> Expr:
        """Any JSON value at ``depth``. Without indentation it is the same at every depth, and
        it is embedded (``ir.Embed``) from one grammar per layout (``_value_embed``), whose
        automata the C core builds once per process and links into every grammar that embeds
        it, and whose token masks one compiler computes once for all of them: ``{"type":
        "object"}``, ``additionalProperties`` and ``items`` left open are in most schemas."""
        if self.make_part is not None and self.layout.mode != "indent":
            self.value_embed = _value_embed(self.layout, self.make_part, self.excludes)
            return self.value_embed
        return value_rule(self, depth)

    def format_string(self, fmt: str) -> Expr:
        """A JSON string of ``format`` ``fmt`` (a supported one). Like any value, it is embedded
        from one grammar per format (``_format_embed``): its automata, thousands of states for
        ``email`` or ``date-time``, are built once per process instead of in every grammar,
        and a compiler's token masks of its states serve every grammar that embeds it."""
        if self.make_part is not None and not self.excludes:
            embed = self.format_embeds[fmt] = _format_embed(fmt, self.make_part)
            return embed
        return base(self, _FORMAT_RULES[fmt])

    def sub(self, schema: Any, path: str, depth: int, hint: str) -> Optional[Expr]:
        """The expression of a sub-schema, shared through a rule when it is not trivial."""
        # annotations (descriptions, mostly: the bulk of a tool's schema text) constrain
        # nothing, so they are left out of the key, and sub-schemas that differ only there share
        if schema is True:  # (additionalProperties and items left open: most objects)
            text = "true"
        else:
            keyed = schema
            if type(schema) is dict and not _ANNOTATIONS.isdisjoint(schema):
                keyed = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
            try:
                text = _compact_json(keyed)
            except (TypeError, ValueError) as e:
                raise self.fail(f"the schema is not JSON ({e})", path) from None
        key = (text, self.layout.key(depth) if self.indented else 0)
        found = self.memo.get(key, _MISSING)
        if found is not _MISSING:
            return found
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
        ref = self.memo[key] = RuleRef(name)
        return ref

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
        if not _RESHAPING_KW.isdisjoint(schema):  # (most sub-schemas have none: one set operation)
            schema = self.without_unsupported(schema, path)
            if "$ref" in schema and all(_is_annotation(k) or k == "$ref" for k in schema):
                return ref_rule(self, schema["$ref"], path, depth)
            rewritten = self.rewritten(schema, path)
            if rewritten is not _UNCHANGED:
                return self.convert(rewritten, path, depth, hint)
            for kw in ("anyOf", "oneOf"):
                if kw in schema:
                    return any_of(self, schema, kw, path, depth, hint)
        types = self.types(schema, path)
        if schema.get("nullable") is True and "null" not in types and "type" in schema:
            types.append("null")
        if "enum" in schema or "const" in schema:
            return enum_schema(self, schema, types, path, depth)
        if len(types) == 1:  # one type: choice() would only flatten a plain Choice
            expr = _TYPE_BUILDERS[types[0]](self, schema, path, depth, hint)
            return expr if type(expr) is not Choice else choice([expr])
        return choice([_TYPE_BUILDERS[t](self, schema, path, depth, hint) for t in types])

    def without_unsupported(self, schema: Dict[str, Any], path: str) -> Dict[str, Any]:
        """``schema`` without the keywords that are refused (lenient: warned about, and the
        constraints ignored, an over-approximation)."""
        if _UNSUPPORTED.isdisjoint(schema):  # the usual schema: one set operation
            return schema
        unknown = [k for k in schema if k in _UNSUPPORTED]
        for k in unknown:
            self.unsupported(k, path)
        return {k: v for k, v in schema.items() if k not in _UNSUPPORTED} if unknown else schema

    def without_unevaluated(self, schema: Any, path: str) -> Any:
        """``schema`` with ``unevaluated*`` rewritten away (``unevaluated.py``), for the merges."""
        if isinstance(schema, dict) and not _UNEVALUATED_KW.isdisjoint(schema):
            return without_unevaluated(self, schema, path)
        return schema

    def rewritten(self, schema: Dict[str, Any], path: str) -> Any:
        """A schema of the same instances without a ``$ref`` with siblings, ``allOf``, ``if``
        and the dependency keywords, or ``not``, or ``unevaluated*`` (first: the others keep
        what it needs to see); ``_UNCHANGED`` when ``schema`` has none."""
        if not _UNEVALUATED_KW.isdisjoint(schema):
            return without_unevaluated(self, schema, path)
        if "$ref" in schema:
            return deref(self, schema, path)
        if "allOf" in schema:
            return flatten_all_of(self, schema, path)
        if not _REWRITTEN_KW.isdisjoint(schema):
            return rewrite(self, schema, path)
        if "not" in schema and "enum" not in schema and "const" not in schema:
            # (with enum / const, the values are filtered by a validator instead: exact)
            rest = {k: v for k, v in schema.items() if k != "not"}
            positive = negate(self, schema["not"], _ptr(path, "not"))
            return merge(self, rest, positive, path)
        return _UNCHANGED

    def types(self, schema: Dict[str, Any], path: str) -> List[str]:
        t = schema.get("type")
        if type(t) is str and t in _TYPES:  # the usual schema: one known type
            return [t]
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


def _null(conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
    return Literal(b"null")


def _boolean(conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
    return Choice((Literal(b"true"), Literal(b"false")))


def _string(conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
    return string_schema(conv, schema, path, hint)


def _integer(conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
    return number_schema(conv, schema, path, integer=True)


def _number(conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
    return number_schema(conv, schema, path, integer=False)


#: The builder of each type's instances under a schema's keywords.
_TYPE_BUILDERS: Dict[str, Callable[[Converter, Dict[str, Any], str, int, str], Optional[Expr]]] = {
    "null": _null,
    "boolean": _boolean,
    "string": _string,
    "integer": _integer,
    "number": _number,
    "object": object_schema,
    "array": array_schema,
}
