"""``excludes`` in the JSON Schema converter (``json_schema/excludes.py``): substrings no string
may hold as written, xgrammar's ``JSONSchemaFormat.excludes`` (the structural-tag tests compare
it with xgrammar; these check each rule on its own)."""

from __future__ import annotations

from typing import Any

import pytest

from agentgrammar import Grammar, SchemaError


def _g(schema: Any, excludes: Any = ("ab",), **options: Any) -> Grammar:
    return Grammar.from_json_schema(
        schema, excludes=excludes, whitespace="compact", separators=(",", ":"), **options
    )


def test_a_string_is_filtered_as_written() -> None:
    g = _g({"type": "array", "items": {"type": "string"}}, excludes=["ab", "\\n", '"q'])
    assert g.accepts('["a b","ba","a\\u0062","\\\\q","x\\"r"]')
    for bad in ('["ab"]', '["xaby"]', '["\\n"]', '["a\\"q"]'):
        assert not g.accepts(bad), bad
    assert g.accepts('["q\\""]')  # the closing quote is no part of a match


def test_keys_constants_and_any_values() -> None:
    g = _g({"type": "object", "properties": {"x": {"type": "integer"}, "abc": {"type": "integer"},
            "e": {"enum": ["ab", "c", ["ab"], {"ab": 1}, 2]}}, "additionalProperties": {}})  # fmt: skip
    assert g.accepts('{"x":1,"e":"c","y":{"k":["v"]}}') and g.accepts('{"e":2}')
    for bad in ('{"abc":1}', '{"e":"ab"}', '{"e":["ab"]}', '{"e":{"ab":1}}', '{"yab":1}', '{"y":["ab"]}'):
        assert not g.accepts(bad), bad
    assert not g.accepts('{"x":1,"\\u0078":2}')  # no spelling of a declared name as an extra key


def test_patterns_and_formats_are_not_filtered_lengths_are_dropped() -> None:
    assert _g({"type": "string", "pattern": "^a.*$"}).accepts('"ab"')
    assert _g({"type": "string", "format": "email"}).accepts('"ab@x.io"')
    with pytest.warns(UserWarning, match="length bounds"):
        g = _g({"type": "string", "minLength": 3, "maxLength": 4})
    assert g.accepts('""') and g.accepts('"xxxxxxx"') and not g.accepts('"ab"')


def test_what_is_refused() -> None:
    with pytest.raises(SchemaError, match="patternProperties"):
        _g({"type": "object", "patternProperties": {"^x": {}}})
    with pytest.raises(SchemaError, match="negated"):
        _g({"type": "string", "not": {"pattern": "z"}})
    with pytest.raises(SchemaError, match="non-empty"):
        _g({"type": "string"}, excludes=[""])
    with pytest.raises(SchemaError, match="no value"):  # the required name holds an excluded word
        _g({"type": "object", "properties": {"abc": {}}, "required": ["abc"]})


def test_no_excludes_changes_nothing() -> None:
    assert _g({"type": "string"}, excludes=()).accepts('"ab"')
