"""The entry points: a schema document loaded, checked and converted into grammar rules."""

from __future__ import annotations

import json
from typing import (
    Any,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ...errors import SchemaError
from ..ir import (
    EMPTY,
    Rule,
)
from .base_rules import base, base_rule_list
from .convert import Converter, MakePart
from .excludes import check_excludes
from .layout import _layout

#: How deep a schema document may nest (objects and arrays), checked before converting it.
MAX_SCHEMA_DEPTH = 256


def _check_depth(doc: Any) -> None:
    """``SchemaError`` for a document nested deeper than ``MAX_SCHEMA_DEPTH`` (iteratively: a deep
    document must not exhaust the Python stack before the converter's own limits apply)."""
    # level by level (no (node, depth) pair per node), each level's containers in one pass
    level: List[Any] = [doc] if isinstance(doc, (dict, list)) else []
    depth = 1
    while level:
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"the schema nests more than {MAX_SCHEMA_DEPTH} levels")
        level = [
            c
            for node in level
            for c in (node.values() if isinstance(node, dict) else node)
            if type(c) is not str and isinstance(c, (dict, list))  # (strings: most values)
        ]
        depth += 1


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
    excludes: Sequence[str] = (),
    loose_lengths: bool = False,
    make_part: Optional[MakePart] = None,
) -> Tuple[List[Rule], str, Tuple[Any, ...]]:
    """Grammar rules (root first) for the JSON texts valid against ``schema``, the root name, and
    the grammars the rules embed (``Grammar.parts``, known here without a walk of the rules).

    Raises ``SchemaError`` for what cannot be expressed exactly (``lenient=True``: a warning and
    an over-approximation instead) and for malformed schemas. ``any_order=True`` accepts the
    declared properties of an object in any order (objects of up to ``ANY_ORDER_LIMIT`` declared
    properties, member counts held; larger ones keep schema order, a sound subset), extra
    members anywhere. ``strict=True`` forbids undeclared members in objects that declare
    ``properties``, ``required`` or ``patternProperties`` (a bare ``{"type": "object"}`` is any
    object) and items past ``prefixItems`` (or an ``items`` array) unless ``items`` (or
    ``additionalItems``) allows them, as xgrammar's ``strict_mode``.
    ``xgrammar_types=True`` reads a schema without ``type`` but with object (or array) keywords
    as an object (or array) schema, as xgrammar does inside structural tags.
    ``excludes``: substrings no string may hold as written (xgrammar's ``excludes`` of a
    ``json_schema`` item; see ``excludes.py`` for which strings and how).
    ``loose_lengths=True``: a ``pattern`` or ``format`` whose automaton cannot be combined with
    its string's ``maxLength`` (past ``char_dfa.PRODUCT_LIMIT``: pydantic's ``HttpUrl``, a URI of
    at most 2,083 characters) stays exact, with ``minLength`` where that fits, and the bound is
    dropped with a ``UserWarning`` instead of a ``SchemaError``; everything else stays exact.
    Tools and structural tags' ``json_schema`` items convert so (a tool's call is validated
    against its schema when it is parsed).

    Where any value is allowed and ``make_part`` is given (``Grammar.from_json_schema`` gives
    ``Grammar._shared_part``), the rules embed (``ir.Embed``) one grammar of any JSON value that
    ``make_part(rules, root)`` made once per layout (``_value_embed``); without it, or with
    ``indent``, any value is rules of this grammar instead.

    Example:
        >>> rules, root, parts = schema_rules_and_parts({"enum": ["a", 1, None]})
        >>> rules[0], parts
        (Rule(name='root', body=Choice(items=(Literal(value=b'"a"'), Literal(value=b'1'), Literal(value=b'null')))), ())
        >>> make_part = lambda rules, root: (root, len(rules))
        >>> [part for part in schema_rules_and_parts({"type": "array"}, make_part=make_part)[2]]
        [('json_value', 5)]
    """
    doc = _load(schema)
    _check_depth(doc)
    layout = _layout(whitespace, indent, separators, max_whitespace)
    conv = Converter(
        doc,
        layout,
        strict=strict,
        lenient=lenient,
        any_order=any_order,
        xgrammar=xgrammar_types,
        make_part=make_part,
        excludes=check_excludes(excludes),
        loose_lengths=loose_lengths,
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
        base(conv, "ws")  # referenced by the layout's separators (unused ones are dropped by Grammar)
    rules = [Rule(n, b) for n, b in conv.rules.items()]
    rules += base_rule_list(conv)
    embeds = ([] if conv.value_embed is None else [conv.value_embed]) + list(conv.format_embeds.values())
    return rules, "root", tuple(e.grammar for e in embeds)
