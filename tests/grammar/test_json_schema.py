"""JSON Schema front-end: realistic tool schemas through the real engine, a property test
against ``jsonschema``, and the error / lenient behaviour of what is not supported.

Every instance is serialized with ``json.dumps`` (its default ``ensure_ascii`` spelling and
separators, or ``indent=``) and fed to a ``Matcher`` over a byte vocabulary; "accepted" means
accepted to completion.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from typing import Any, Dict, List, Optional

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from agentgrammar.errors import GrammarError, SchemaError
from agentgrammar.grammar.ir import Rule
from agentgrammar.grammar.json_schema import json_schema_rules
from agentgrammar.grammar.normalize import normalize_rules

VOCAB = Vocabulary([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])
COMPILER = Compiler(VOCAB)

try:
    from agentgrammar.grammar import json_values  # noqa: F401

    HAVE_JSON_VALUES = True
except ImportError:
    HAVE_JSON_VALUES = False


class Checker:
    """Compiles a schema once; ``accepts(text)`` = the whole text is accepted to completion."""

    def __init__(self, schema: Any, **options: Any) -> None:
        self.grammar = Grammar.from_json_schema(schema, **options)
        self.compiled = COMPILER.compile(self.grammar)

    def accepts(self, text: str) -> bool:
        m = Matcher(self.compiled)
        return m.accept_string(text) and m.is_completed()


def dumps(value: Any, layout: str) -> str:
    if layout == "indent":
        return json.dumps(value, indent=2)
    return json.dumps(value)


# --------------------------------------------------------------------------- realistic schemas

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
    },
    "required": ["city"],
    "additionalProperties": False,
}

SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "engine": {"enum": ["google", "bing", "ddg"]},
        "safe": {"type": "boolean"},
        "lang": {"const": "en"},
    },
    "required": ["query", "engine"],
    "additionalProperties": False,
}

OPTIONAL_EVERYWHERE = {
    "type": "object",
    "properties": {k: {"type": "integer"} for k in "abcde"},
    "required": ["c"],
    "additionalProperties": False,
}

ALL_OPTIONAL = {
    "type": "object",
    "properties": {k: {"type": "string"} for k in ("x", "y", "z")},
    "additionalProperties": False,
}

NESTED = {
    "type": "object",
    "properties": {
        "user": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "zip": {"type": ["string", "null"]}},
                    "required": ["street"],
                    "additionalProperties": False,
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["user"],
    "additionalProperties": False,
}

ARRAYS = {
    "type": "object",
    "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
    },
    "required": ["ids"],
    "additionalProperties": False,
}

TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["value"],
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}

NULLABLE_ANYOF = {
    "type": "object",
    "properties": {
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "note": {"type": ["string", "null"]},
    },
    "required": ["limit"],
    "additionalProperties": False,
}

OPEN_OBJECT = {  # additionalProperties defaults to true
    "type": "object",
    "properties": {"id": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["id"],
}

ADDITIONAL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "additionalProperties": {"type": "integer"},
}

DISCRIMINATED = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
            "required": ["kind", "r"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "rect"}, "w": {"type": "number"}, "h": {"type": "number"}},
            "required": ["kind", "w", "h"],
            "additionalProperties": False,
        },
    ]
}

ALLOF = {
    "properties": {"a": True, "b": True},
    "allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
    ],
    "additionalProperties": False,
}

OLD_ARRAYS = {  # draft 7: items as an array + additionalItems
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "old": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "boolean"}}
    },
}

POINTER_REFS = {
    "definitions": {"a/b": {"type": "integer"}, "t~x": {"enum": [1, 2]}},
    "type": "array",
    "prefixItems": [{"$ref": "#/definitions/a~1b"}, {"$ref": "#/definitions/t~0x"}],
    "items": False,
}

CASES = [
    (
        "weather",
        WEATHER,
        [{"city": "Paris"}, {"city": "Paris", "days": 3}, {"city": "Zürich", "unit": "celsius", "days": -2}],
        [
            {},
            {"unit": "celsius"},
            {"city": "Paris", "unit": "kelvin"},
            {"city": "P", "x": 1},
            {"city": 3},
            {"city": "P", "days": 1.5},
            [],
            "Paris",
        ],
    ),
    (
        "search",
        SEARCH,
        [{"query": "q", "engine": "bing"}, {"query": "☃ snow", "engine": "ddg", "safe": True, "lang": "en"}],
        [
            {"query": "", "engine": "bing"},
            {"query": "q", "engine": "yahoo"},
            {"query": "q"},
            {"query": "q", "engine": "bing", "lang": "fr"},
            {"query": "q", "engine": "bing", "safe": "yes"},
        ],
    ),
    (
        "optional_everywhere",
        OPTIONAL_EVERYWHERE,
        [
            {"c": 1},
            {"a": 1, "c": 2},
            {"c": 1, "e": 5},
            {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5},
            {"b": 0, "c": 0, "d": 0},
        ],
        [{}, {"a": 1}, {"a": 1, "b": 2, "d": 4, "e": 5}, {"c": "1"}, {"c": 1, "f": 1}],
    ),
    (
        "all_optional",
        ALL_OPTIONAL,
        [{}, {"x": "1"}, {"y": "2"}, {"z": "3"}, {"x": "1", "z": "3"}, {"x": "", "y": "", "z": ""}],
        [{"w": "1"}, {"x": 1}, {"x": "1", "q": "2"}],
    ),
    (
        "nested",
        NESTED,
        [
            {"user": {"name": "Ann"}},
            {"user": {"name": "Ann", "address": {"street": "Main", "zip": None}}, "tags": ["a", "b"]},
            {"user": {"name": "Bob", "address": {"street": "x", "zip": "123"}}, "tags": []},
        ],
        [
            {"user": {}},
            {"user": {"name": "Ann", "address": {"zip": "1"}}},
            {"user": {"name": "A"}, "tags": [1]},
            {"tags": []},
        ],
    ),
    (
        "arrays",
        ARRAYS,
        [
            {"ids": [1]},
            {"ids": [1, 2, 3]},
            {"ids": [0], "point": [1.5, -2]},
            {"ids": [4], "point": []},
            {"ids": [1, 2], "point": [3]},
        ],
        [{"ids": []}, {"ids": [1, 2, 3, 4]}, {"ids": [1], "point": [1, 2, 3]}, {"ids": [1], "point": ["a"]}],
    ),
    (
        "old_arrays",
        OLD_ARRAYS,
        [{"old": ["s", True, False]}, {"old": []}, {"old": ["s"]}],
        [{"old": [1]}, {"old": ["s", "t"]}],
    ),
    (
        "tree",
        TREE,
        [
            {"value": 1},
            {"value": 1, "children": []},
            {"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": 4}]}]},
        ],
        [
            {},
            {"value": 1, "children": [{}]},
            {"value": 1, "children": [{"value": 2, "children": [{"v": 3}]}]},
        ],
    ),
    (
        "nullable_anyof",
        NULLABLE_ANYOF,
        [{"limit": None}, {"limit": 5}, {"limit": 5, "note": None}, {"limit": 5, "note": "n"}],
        [{}, {"limit": "5"}, {"limit": 1, "note": 3}],
    ),
    (
        "open_object",
        OPEN_OBJECT,
        [
            {"id": "a"},
            {"id": "a", "count": 1},
            {"id": "a", "extra": [1, {"k": None}]},
            {"id": "a", "count": 2, "idx": "s", "coun": True},
        ],
        [{"count": 1}, {"id": 1}, {"id": "a", "count": "x"}],
    ),
    (
        "additional_schema",
        ADDITIONAL_SCHEMA,
        [{}, {"name": "n"}, {"name": "n", "age": 3}, {"x": 1, "y": 2}, {"é": 1}],
        [{"name": 1}, {"name": "n", "age": "3"}, {"x": "s"}],
    ),
    (
        "discriminated_oneof",
        DISCRIMINATED,
        [{"kind": "circle", "r": 1.5}, {"kind": "rect", "w": 1, "h": 2}],
        [{"kind": "circle", "w": 1, "h": 2}, {"kind": "square", "r": 1}, {"kind": "rect", "w": 1}],
    ),
    (
        "allof",
        ALLOF,
        [{"a": "x", "b": True}],
        [{"a": "x"}, {"b": True}, {"a": "x", "b": True, "c": 1}, {"a": 1, "b": True}],
    ),
    (
        "pointer_refs",
        POINTER_REFS,
        [[1], [7, 2], []],
        [[1.5], [1, 3], [1, 2, 3]],
    ),
]


@pytest.mark.parametrize("layout", ["compact", "indent", "flexible"])
@pytest.mark.parametrize("name,schema,valid,invalid", CASES, ids=[c[0] for c in CASES])
def test_realistic_schemas(
    name: str, schema: Dict[str, Any], valid: List[Any], invalid: List[Any], layout: str
) -> None:
    for v in valid:
        jsonschema.validate(v, schema)  # the test data itself is right
    for v in invalid:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(v, schema)
    options: Dict[str, Any] = {"whitespace": "compact"} if layout == "compact" else {}
    if layout == "indent":
        options["indent"] = 2
    checker = Checker(schema, **options)
    for v in valid:
        texts = (
            [dumps(v, layout)]
            if layout != "flexible"
            else [json.dumps(v), json.dumps(v, indent=3), json.dumps(v, separators=(",", ":"))]
        )
        for text in texts:
            assert checker.accepts(text), (name, text)
    for v in invalid:
        assert not checker.accepts(dumps(v, layout if layout != "flexible" else "compact")), (name, v)


def test_compact_is_exact() -> None:
    c = Checker(WEATHER, whitespace="compact")
    assert c.accepts('{"city": "a", "days": 1}')
    assert not c.accepts('{"city":"a","days":1}')
    assert not c.accepts('{"city": "a",  "days": 1}')
    c2 = Checker(WEATHER, whitespace="compact", separators=(",", ":"))
    assert c2.accepts('{"city":"a","days":1}')
    assert not c2.accepts('{"city": "a", "days": 1}')


def test_flexible_and_max_whitespace() -> None:
    c = Checker(WEATHER)
    assert c.accepts('{ \n\t"city" :"a" ,\r\n  "days":1 }')
    assert not c.accepts(' {"city": "a"}')  # nothing around the top-level value
    c2 = Checker(WEATHER, max_whitespace=2)
    assert c2.accepts('{  "city":  "a"  }')
    assert not c2.accepts('{   "city": "a"}')


def test_indent_layout_matches_json_dumps() -> None:
    c = Checker(NESTED, indent=4)
    v = {"user": {"name": "Ann", "address": {"street": "Main", "zip": None}}, "tags": ["a", "b"]}
    assert c.accepts(json.dumps(v, indent=4))
    assert not c.accepts(json.dumps(v, indent=2))
    assert not c.accepts(json.dumps(v))
    assert c.accepts(json.dumps({"user": {"name": "A"}, "tags": []}, indent=4))
    # enum / const values nested in containers follow the indentation too
    c2 = Checker({"const": {"a": [1, 2], "b": {}}}, indent=2)
    assert c2.accepts(json.dumps({"a": [1, 2], "b": {}}, indent=2))
    # recursion deeper than the indentation limit falls back to flexible whitespace
    deep: Dict[str, Any] = {"value": 0}
    for i in range(25):
        deep = {"value": i, "children": [deep]}
    assert Checker(TREE, indent=1).accepts(json.dumps(deep, indent=1))


def test_string_lengths_count_code_points() -> None:
    c = Checker({"type": "string", "minLength": 2, "maxLength": 3})
    assert c.accepts(json.dumps("ab"))
    assert c.accepts(json.dumps("\U0001f600\U0001f600"))  # two surrogate-pair escapes: 2 code points
    assert c.accepts(json.dumps("\U0001f600\U0001f600", ensure_ascii=False))
    assert not c.accepts(json.dumps("\U0001f600"))
    assert not c.accepts(json.dumps("abcd"))
    assert c.accepts('"a\\n"')
    assert not c.accepts('"\\ud800x"')  # a lone surrogate escape is never generated


def test_additional_keys_never_spell_a_declared_name() -> None:
    c = Checker({"type": "object", "properties": {"city": {"type": "string"}}})
    assert c.accepts('{"city": "x", "cit": 1, "cityy": 2, "x": 3}')
    for key in ('"\\u0063ity"', '"ci\\u0074y"', '"cit\\u0079"', '"\\u0043ity"'):
        text = "{%s: 1}" % key
        valid = jsonschema.Draft202012Validator({"properties": {"city": {"type": "string"}}}).is_valid(
            json.loads(text)
        )
        assert c.accepts(text) == valid or not c.accepts(text), key
    assert not c.accepts('{"\\u0063ity": 1}')
    assert c.accepts('{"cit\\u00e9": 1}') and c.accepts('{"\\u00e9": 1}')  # other keys, escaped
    assert c.accepts('{"City": 1}')


def test_allof_keeps_additional_properties_semantics() -> None:
    # additionalProperties: false next to allOf sees no 'properties' of its own: a and b are
    # additional there, so with both required nothing is valid.
    schema = {
        "type": "object",
        "allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}],
        "additionalProperties": False,
    }
    assert not jsonschema.Draft202012Validator(schema).is_valid({"a": "x"})
    with pytest.raises(SchemaError, match="accepts no value"):
        Grammar.from_json_schema(schema)
    c = Checker({"allOf": [{"properties": {"a": {"type": "string"}}}], "additionalProperties": False})
    assert c.accepts("{}") and not c.accepts('{"a": "x"}')


COMPOSITION = [
    (  # recursion through "#", pretty-printed (one rule per depth)
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "sub": {"$ref": "#"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        [{"name": "a"}, {"name": "a", "sub": {"name": "b", "sub": {"name": "c"}}}, {"name": "a", "sub": {}}],
    ),
    (  # allOf with a $ref branch
        {
            "$defs": {"B": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
            "allOf": [{"$ref": "#/$defs/B"}, {"properties": {"y": {"type": "string"}}, "required": ["y"]}],
        },
        [{"x": 1, "y": "a"}, {"x": 1}, {"y": "a"}, {"x": 1, "y": "a", "z": None}],
    ),
    (  # siblings of $ref
        {
            "$ref": "#/$defs/B",
            "properties": {"y": {"type": "string"}},
            "required": ["y"],
            "$defs": {"B": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
        },
        [{"x": 1, "y": "a"}, {"x": 1}, {"y": "a"}],
    ),
    (  # siblings of anyOf
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            "additionalProperties": False,
        },
        [{"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {}],
    ),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}, [1, "a", None, 1.5, True]),
    # oneOf of constants with distinct values: disjoint (each branch with its description)
    (
        {
            "type": "number",
            "oneOf": [{"const": 1, "title": "one"}, {"const": 2.5}, {"enum": [3, [1], {"a": True}]}],
        },
        [1, 2.5, 3, 4, "1", True, [1], {"a": True}],  # (a constant is written as it is spelled)
    ),
    ({"oneOf": [{"enum": [1, 2]}, {"enum": [2.0, 3]}]}, [1, 2, 3, 4]),  # 2 is in both: refused
    ({"oneOf": [{"const": True}, {"const": 1}, {"enum": [False, 0]}]}, [True, 1, False, 0, None]),
    # a tagged union without "type": "object": a non-object matches every branch
    (
        {
            "oneOf": [
                {"required": ["kind"], "properties": {"kind": {"enum": ["a"]}, "x": {"type": "integer"}}},
                {"required": ["kind"], "properties": {"kind": {"const": "b"}}},
                {"required": ["kind", "y"], "properties": {"kind": {"enum": ["c", "d"]}}},
            ]
        },
        [
            {"kind": "a", "x": 1},
            {"kind": "a", "x": "s"},
            {"kind": "b", "x": "s"},
            {"kind": "c", "y": 0},
            {"kind": "d"},
            {"kind": "e"},
            {},
            "a",
            1,
            None,
            [],
        ],
    ),
    (  # only one branch a non-object matches: those are valid
        {
            "oneOf": [
                {"required": ["kind"], "properties": {"kind": {"const": "a"}}},
                {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "b"}}},
            ]
        },
        [{"kind": "a"}, {"kind": "b"}, {"kind": "c"}, "a", 1, None],
    ),
    (  # keys of one pattern and no other key: the pattern's string, counted
        {
            "type": "object",
            "patternProperties": {"^[a-z_]{1,3}$": {"type": "integer"}},
            "additionalProperties": False,
        },
        [{"ab": 1}, {"ab": "x"}, {"abcd": 1}, {}, {"A": 1}, {"ab": 1, "c_": 2}, {"": 1}],
    ),
    (  # patterns whose values are anything, and any additional property: any member
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "patternProperties": {"^x": {}, "y$": True},
        },
        [{"xa": 1, "b": [1]}, {"n": 1, "zy": None}, {"n": "s"}, "s"],
    ),
    (  # siblings that allow non-objects: they match both branches, so they are refused
        {
            "type": ["object", "string"],
            "oneOf": [
                {"required": ["k"], "properties": {"k": {"const": 1}}},
                {"required": ["k"], "properties": {"k": {"const": 2}}},
            ],
        },
        [{"k": 1}, {"k": 2}, {"k": 3}, "s", 1],
    ),
    (  # enum values filtered by the sibling keywords (with a $ref among them)
        {
            "$defs": {"S": {"type": "integer"}},
            "enum": [{"a": 1}, {"a": "x"}, 3],
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/S"}},
        },
        [{"a": 1}, {"a": "x"}, 3],
    ),
    ({"type": ["integer", "string"], "minLength": 2}, [1, "ab", "a"]),
    (
        {"type": "object", "properties": {"é": {"type": "integer"}, "a/b": {"type": "string"}}},
        [{"é": 1}, {"a/b": "x"}, {"é": "x"}, {"e": "x"}, {"éé": "x"}],
    ),
    (  # negated anyOfs merged pairwise: branches whose types conflict are dropped, not counted
        {
            "if": {"anyOf": [{"enum": [None]}, {"const": 0}]},
            "then": {"type": "string"},
            "else": {"not": {"anyOf": [{"const": None}, {"enum": [False]}]}},
        },
        [None, 0, False, True, 1, "a", [], {}],
    ),
]


@pytest.mark.parametrize("schema,instances", COMPOSITION)
@pytest.mark.parametrize("layout", ["compact", "indent"])
def test_composition_matches_jsonschema(schema: Dict[str, Any], instances: List[Any], layout: str) -> None:
    checker = Checker(schema, **({"indent": 2} if layout == "indent" else {"whitespace": "compact"}))
    validator = jsonschema.Draft202012Validator(schema)
    for inst in instances:
        assert checker.accepts(dumps(inst, layout)) == validator.is_valid(inst), inst


def test_oneof_lenient_is_anyof() -> None:
    schema = {"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "array", "minItems": 1}]}
    with pytest.raises(SchemaError, match="oneOf"):  # 'items' cannot be negated: not exclusive
        Grammar.from_json_schema(schema)
    with pytest.warns(UserWarning, match="oneOf"):
        c = Checker(schema, lenient=True)
    assert c.accepts("[1]") and c.accepts("[]") and c.accepts('["a"]') and not c.accepts("1")


def test_oneof_of_overlapping_types_is_exact() -> None:
    c = Checker({"oneOf": [{"type": "integer"}, {"type": "number"}]})  # 1 matches both branches
    assert c.accepts("1.5") and not c.accepts("1") and not c.accepts('"1"')


def test_nullable() -> None:
    # OpenAPI's nullable (unknown to jsonschema, so checked here directly)
    c = Checker(
        {
            "type": "object",
            "properties": {"n": {"type": "string", "nullable": True}, "e": {"enum": ["a"], "nullable": True}},
            "additionalProperties": False,
        }
    )
    assert c.accepts('{"n": null, "e": null}') and c.accepts('{"n": "x", "e": "a"}')
    assert not c.accepts('{"n": 1}') and not c.accepts('{"e": "b"}')


def test_boolean_schemas_and_inputs() -> None:
    assert Checker(True).accepts('{"a": [1, "x", null]}')
    assert Checker({}).accepts("3.5e2")
    with pytest.raises(SchemaError):
        Grammar.from_json_schema(False)
    assert Checker(json.dumps(WEATHER)).accepts('{"city": "x"}')
    c = Checker({"type": "object", "properties": {"a": False, "b": True}})
    assert c.accepts('{"b": 1}') and not c.accepts('{"a": 1}')


def test_pydantic_model() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        street: str
        zip: Optional[str] = None

    class Person(pydantic.BaseModel):
        name: str
        tags: List[str] = pydantic.Field(default_factory=list)
        address: Address

    c = Checker(Person, whitespace="compact")
    p = Person(name="A", address=Address(street="S"))
    assert c.accepts(json.dumps(p.model_dump()))
    assert not c.accepts(json.dumps({"name": "A"}))


def test_shared_rules_and_names() -> None:
    addr = {
        "type": "object",
        "properties": {"street": {"type": "string"}},
        "required": ["street"],
        "additionalProperties": False,
    }
    schema = {"type": "object", "properties": {"home": addr, "work": addr}, "additionalProperties": False}
    rules, root = json_schema_rules(schema)
    names = [r.name for r in rules]
    assert root == "root" and names[0] == "root"
    assert "root_prop_home" in names and "root_prop_work" not in names  # shared
    rules, _ = json_schema_rules(TREE)
    assert "defs_node" in [r.name for r in rules]


def test_conversion_is_deterministic() -> None:
    # (its speed is measured by tools/bench/json_schema.py, not asserted in a unit test)
    first, _ = json_schema_rules(WEATHER)
    again, _ = json_schema_rules(WEATHER)
    assert [(r.name, r.body) for r in first] == [(r.name, r.body) for r in again]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "schema,keyword,pointer",
    [
        ({"type": "array", "contains": {"type": "integer"}, "minItems": 2}, "contains", "#/contains"),
        (
            {"type": "object", "properties": {"a~/b": {"type": "number", "multipleOf": 0.5}}},
            "multipleOf",
            "#/properties/a~0~1b/multipleOf",
        ),
        ({"properties": {"x": {"not": {"items": {"type": "string"}}}}}, "items", "#/properties/x/not/items"),
        (
            {"type": "object", "patternProperties": {c: {"type": "integer"} for c in "abcde"}},
            "patternProperties",
            "#/patternProperties",
        ),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems", "#/uniqueItems"),
        ({"oneOf": [{"items": {"type": "string"}}, {"minItems": 2}]}, "oneOf", "#/oneOf"),
        ({"type": "object", "minProperties": 5000}, "minProperties", "#/minProperties"),
        (  # a discriminator without "type": "object": a non-object matches both branches
            {
                "oneOf": [
                    {"properties": {"k": {"const": {"a": 1}}}, "required": ["k"]},
                    {"properties": {"k": {"const": {"a": 2}}}},
                ]
            },
            "oneOf",
            "#/oneOf",
        ),
        (
            {
                "$defs": {"a": {"if": {"items": {"type": "integer"}}, "then": {"minItems": 1}}},
                "$ref": "#/$defs/a",
            },
            "items",
            "#/$defs/a/if/items",
        ),
    ],
)
def test_unsupported_keywords(schema: Dict[str, Any], keyword: str, pointer: str) -> None:
    with pytest.raises(SchemaError) as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == keyword and info.value.pointer == pointer
    assert keyword in str(info.value) and pointer in str(info.value)
    with pytest.warns(UserWarning, match=keyword):
        g = Grammar.from_json_schema(schema, lenient=True)
    assert isinstance(g, Grammar)


@pytest.mark.skipif(not HAVE_JSON_VALUES, reason="needs agentgrammar.grammar.json_values")
@pytest.mark.parametrize(
    "schema,keyword,lenient_accepts",
    [
        ({"type": "string", "pattern": "(?=a)b"}, "pattern", '"zzz"'),
    ],
)
def test_unsupported_string_constraints(schema: Dict[str, Any], keyword: str, lenient_accepts: str) -> None:
    with pytest.raises(SchemaError) as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == keyword and info.value.pointer == "#/" + keyword
    with pytest.warns(UserWarning, match=keyword):
        c = Checker(schema, lenient=True)
    assert c.accepts(lenient_accepts) and not c.accepts("1")


@pytest.mark.skipif(not HAVE_JSON_VALUES, reason="needs agentgrammar.grammar.json_values")
@pytest.mark.parametrize(
    "schema,keyword,valid,invalid,over_max",
    [
        # pydantic's HttpUrl: minLength kept, maxLength dropped
        (
            {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083},
            "format",
            ["https://example.com/a?b=c", "urn:isbn:0451450523"],
            ["", "not a uri", "https://exa mple.com"],
            "https://example.com/" + "a" * 2100,
        ),
        (
            {"type": "string", "format": "email", "minLength": 6, "maxLength": 64},
            "format",
            ["ab@c.io", "john.doe@example.com"],
            ["a@b.c", "nope", "a b@c.io"],
            "a" * 60 + "@example.com",
        ),
    ],
)
def test_constraints_past_the_product_limit_under_length_bounds(
    schema: Dict[str, Any], keyword: str, valid: List[str], invalid: List[str], over_max: str
) -> None:
    """A pattern or format whose product with a large ``maxLength`` is past the automata's
    limit: strict, a SchemaError naming the keyword, the bounds and what lenient keeps;
    lenient, or with ``loose_lengths`` (which loosens nothing else), the pattern or format and
    ``minLength`` stay exact and only ``maxLength`` goes."""
    with pytest.raises(SchemaError, match="length bounds") as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == keyword and info.value.pointer == "#/" + keyword
    assert f"maxLength {schema['maxLength']}" in str(info.value) and "with lenient=True" in str(info.value)
    for option, said in (("lenient", "lenient: over-approximated"), ("loose_lengths", "loose_lengths")):
        with pytest.warns(UserWarning, match="length bounds") as caught:
            c = Checker(schema, **{option: True})
        assert any(said in str(w.message) for w in caught)
        for text in valid:
            assert jsonschema.Draft202012Validator(schema, format_checker=None).is_valid(text)
            assert c.accepts(json.dumps(text)), text
        for text in invalid:
            assert not c.accepts(json.dumps(text)), text
        assert c.accepts(json.dumps(over_max))  # the over-approximation: maxLength is not enforced
    for other in (
        {"type": "array", "uniqueItems": True},
        {"type": "string", "pattern": "(?=a)b", "maxLength": 9},
    ):
        with pytest.raises(SchemaError):  # what loose_lengths does not loosen
            Grammar.from_json_schema(other, loose_lengths=True)


@pytest.mark.skipif(not HAVE_JSON_VALUES, reason="needs agentgrammar.grammar.json_values")
def test_a_pattern_under_a_bound_past_the_product_limit_is_counted_exactly() -> None:
    """``^a.*b$`` under ``maxLength: 30000``: its product with the count is past the automata's
    limit, so the core counts the characters in the pattern's own states (``ir.CountedText``),
    exact at any bound."""
    c = Checker({"type": "string", "pattern": "^a.*b$", "minLength": 3, "maxLength": 30000})
    for text in ("axb", "a" * 29999 + "b", "a\u00e9b"):
        assert c.accepts(json.dumps(text)), len(text)
    for text in ("ab", "a" * 30000 + "b", "axyba", "zzz"):
        assert not c.accepts(json.dumps(text)), len(text)


def _exact_lengths(dfa: Any) -> Any:
    """The fewest and most characters of the strings ``dfa`` accepts (None: no bound), by a
    breadth-first search and a longest path (None where a cycle is reachable)."""
    d = dfa.trimmed()  # (its start reaches acceptance)
    level, seen, shortest = {0}, {0}, 0
    while not any(d.accepting[s] for s in level):
        level = {t for s in level for _, _, t in d.edges[s]} - seen
        seen |= level
        shortest += 1
    # the longest path by Kahn's order (every state is reachable): a state left out is on a cycle
    into = [0] * len(d.edges)
    for row in d.edges:
        for _, _, t in row:
            into[t] += 1
    order = [q for q in range(len(d.edges)) if not into[q]]
    for q in order:
        for _, _, t in d.edges[q]:
            into[t] -= 1
            if not into[t]:
                order.append(t)
    if len(order) < len(d.edges):
        return shortest, None
    most = [0] * len(d.edges)
    for q in reversed(order):
        most[q] = max((1 + most[t] for _, _, t in d.edges[q]), default=0)
    return shortest, most[0]


@pytest.mark.skipif(not HAVE_JSON_VALUES, reason="needs agentgrammar.grammar.json_values")
def test_each_formats_lengths_hold_every_string_of_the_format() -> None:
    """``format_lengths`` (from the format's regex) never says more than the fewest characters
    nor less than the most that the format's automaton accepts; where these are finite, bounds
    around them are dropped as constraining nothing."""
    from agentgrammar.grammar import json_values
    from agentgrammar.grammar.json_schema.formats import format_dfa
    from agentgrammar.grammar.json_schema.lengths import format_lengths

    finite = []
    for name in sorted(json_values.SUPPORTED_FORMATS):
        shortest, longest = format_lengths(name)
        exact_shortest, exact_longest = _exact_lengths(format_dfa(name))
        assert shortest <= exact_shortest, name
        assert longest is None or (exact_longest is not None and longest >= exact_longest), name
        if longest is not None:
            finite.append(name)
    assert {"uuid", "ipv4", "ipv6", "date", "hostname"} <= set(finite)


@pytest.mark.skipif(not HAVE_JSON_VALUES, reason="needs agentgrammar.grammar.json_values")
def test_length_bounds_around_a_formats_lengths_leave_its_own_string() -> None:
    """A format under bounds that all its strings meet is the format's string (no product of
    its automaton with a count: 15-30 ms for a hostname or an email); bounds inside its range
    stay exact; a maximum alone over a small format is counted in the format's own states; past
    the product limit with ``loose_lengths``, the format's string."""
    from agentgrammar.grammar.json_schema.lengths import format_lengths

    def digest(schema: Dict[str, Any], **options: Any) -> bytes:
        return Grammar.from_json_schema({"type": "string", **schema}, **options).digest

    for name, extra in [
        ("hostname", {"maxLength": 253}),
        ("ipv6", {"maxLength": 45, "minLength": 2}),
        ("uuid", {"minLength": 36, "maxLength": 36}),
        ("date", {"maxLength": 10}),
        ("email", {"minLength": 3}),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # exact: nothing said
            assert digest({"format": name, **extra}) == digest({"format": name}), name
    shortest, longest = format_lengths("ipv6")
    widest = "1111:2222:3333:4444:5555:6666:255.255.255.255"
    assert len(widest) == longest == 45
    inside = Checker({"type": "string", "format": "ipv6", "maxLength": 44})
    assert not inside.accepts(json.dumps(widest)) and inside.accepts(json.dumps(widest[:-2]))
    assert Checker({"type": "string", "format": "ipv6", "maxLength": 45}).accepts(json.dumps(widest))
    assert not Checker({"type": "string", "format": "ipv6", "minLength": 3}).accepts('"::"')
    # a maximum alone over a small format (a URI's 179 states): counted in the format's own
    # states (ir.CountedText), exact at any bound
    bounded = Checker({"type": "string", "format": "uri", "maxLength": 100})
    assert bounded.accepts(json.dumps("https://example.com/" + "a" * 70))  # 90 characters
    assert not bounded.accepts(json.dumps("https://example.com/" + "a" * 90))  # 110
    # past the product limit (an email's 1,236 states are never counted), loose_lengths drops it
    with pytest.warns(UserWarning, match="loose_lengths"):
        loose = digest({"format": "email", "maxLength": 254}, loose_lengths=True)
    assert loose == digest({"format": "email"})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    ],
)
def test_the_words_do_not_depend_on_what_was_converted_before(
    schema: Dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper rule built by a conversion comes after the rules it references; installed from
    the module cache by a later one, before them. Its order in the grammar was that, so the
    first conversion of a schema in a process had another digest than the next ones (another
    compile), for 2 of 553 MaskBench schemas converted in two orders."""
    import agentgrammar.grammar.json_schema.base_rules as base_rules

    # as in a new process: the helper rules are built here (and the others' cache is left as it is)
    monkeypatch.setattr(base_rules, "_BASE_CACHE", {})
    first = Grammar.from_json_schema(schema)
    again = Grammar.from_json_schema(schema)  # the helper rules from the cache
    assert [r.name for r in first.rules] == [r.name for r in again.rules]
    assert first.digest == again.digest


def test_the_any_value_part_does_not_depend_on_what_was_converted_before() -> None:
    """The grammar of any JSON value, which schema grammars embed, is made once per process from
    the helper rules it finds: in a process that converted other schemas first, some came from
    the module cache, and its words (its digest) differed from a fresh process's."""
    first = "g = Grammar.from_json_schema({'type': 'array'})"
    others = (
        "[Grammar.from_json_schema(s) for s in ({'type': 'object', 'properties': {'a': {'type': "
        "'string'}}, 'additionalProperties': True}, {'type': 'number'})]"
    )
    show = "print([p.digest.hex() for p in g.parts])"
    digests = [
        subprocess.run(
            [sys.executable, "-c", "; ".join(["from agentgrammar import Grammar", *before, first, show])],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for before in ([], [others])
    ]
    assert digests[0] == digests[1] and len(digests[0]) > 10


def test_lenient_over_approximates() -> None:
    schema = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = Checker(schema, lenient=True)
    assert c.accepts("[1, 2]") and c.accepts("[1, 1]")  # over-approximation: valid ones all kept
    assert not c.accepts('["a"]')


@pytest.mark.parametrize(
    "schema,keyword",
    [
        ({"type": "array", "minItems": 2**63}, "minItems"),
        ({"type": "array", "items": {"type": "integer"}, "maxItems": 2**31}, "maxItems"),
        ({"type": "array", "minItems": -1}, "minItems"),
        ({"type": "array", "maxItems": "3"}, "maxItems"),
        ({"type": "string", "maxLength": 2**40}, "maxLength"),
        ({"type": "object", "minProperties": 2**40}, "minProperties"),
    ],
)
def test_counts_beyond_the_repeat_limit_name_the_keyword(schema: Dict[str, Any], keyword: str) -> None:
    """A count the C core cannot hold is a SchemaError at its keyword, not an overflow when
    the grammar is serialized (the fuzzer found minItems: 2**63)."""
    with pytest.raises(SchemaError) as info:
        Grammar.from_json_schema(schema).to_bytes()
    assert info.value.pointer == "#/" + keyword and keyword in str(info.value)


def test_array_counts_may_be_integral_floats() -> None:
    g = Grammar.from_json_schema({"type": "array", "minItems": 2.0, "maxItems": 3})
    assert g.accepts("[1, 2]") and not g.accepts("[1]") and not g.accepts("[1, 2, 3, 4]")


def test_malformed_schemas() -> None:
    for bad in (
        {"type": "strung"},
        {"$ref": "#/$defs/missing"},
        {"$ref": "other.json#/a"},
        {"required": "a"},
        "{not json",
        3,
        {"anyOf": []},
    ):
        with pytest.raises(SchemaError):
            Grammar.from_json_schema(bad)
    # an empty list is named, not merged into an unsatisfiable schema
    with pytest.raises(SchemaError, match="'anyOf' must be a non-empty array"):
        Grammar.from_json_schema({"allOf": [{"anyOf": []}, {"anyOf": [{"type": "string"}]}]})
    assert issubclass(SchemaError, GrammarError)


@pytest.mark.parametrize(
    "schema, keyword",
    [
        ({"type": "string", "minLength": None}, "minLength"),
        ({"anyOf": [{"type": "string", "minLength": None}, {"type": "string", "pattern": "a"}]}, "minLength"),
        ({"type": "integer", "multipleOf": json.loads("1e400")}, "multipleOf"),  # read as infinity
        ({"type": "integer", "multipleOf": float("nan")}, "multipleOf"),
    ],
)
def test_malformed_bounds_are_named(schema: Dict[str, Any], keyword: str) -> None:
    """A null ``minLength`` and an infinite ``multipleOf`` (found by the json_schema fuzz
    harness) raised TypeError and OverflowError."""
    with pytest.raises(SchemaError, match=keyword):
        Grammar.from_json_schema(schema)


def test_needs_json_values_or_delegates() -> None:
    schema = {"type": "integer", "minimum": 0, "maximum": 10}
    if not HAVE_JSON_VALUES:
        with pytest.raises(SchemaError, match="json_values"):
            Grammar.from_json_schema(schema)
        return
    c = Checker(schema)
    assert c.accepts("0") and c.accepts("10") and not c.accepts("11") and not c.accepts("-1")
    # draft 4 boolean exclusiveMinimum
    c = Checker({"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 3})
    assert not c.accepts("0") and c.accepts("1")


# --------------------------------------------------------------------------- property test

_NAMES = ["a", "b", "ab", "c"]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-20, 20),
    st.sampled_from([0.5, -1.25, 2.0]),
    # no final "\n": Python's "$" (jsonschema) matches before it, ECMA-262's does not
    st.text(alphabet='ab"\\é\U0001f600\n', max_size=3).filter(lambda t: not t.endswith("\n")),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_NAMES + ["x"]), inner, max_size=3)
    ),
    max_leaves=6,
)

_leaf_schemas = st.one_of(
    st.sampled_from([{"type": t} for t in ("string", "integer", "number", "boolean", "null")]),
    st.builds(
        lambda lo, extra: {"type": "string", "minLength": lo, "maxLength": lo + extra},
        st.integers(0, 2),
        st.integers(0, 2),
    ),
    st.lists(_scalars, min_size=1, max_size=3).map(lambda vs: {"enum": vs}),
    _scalars.map(lambda v: {"const": v}),
    st.just(True),
    st.builds(
        lambda kind, lo, width, excl: {
            "type": kind,
            ("exclusiveMinimum" if excl else "minimum"): lo,
            "maximum": lo + width,
        },
        st.sampled_from(["integer", "number"]),
        st.sampled_from([-3, 0, 1.5, 2]),
        st.sampled_from([0, 1, 2.5, 4]),
        st.booleans(),
    ),
    st.sampled_from(["^a+$", "b", "^[ab]{2}$", "^(ab|é)*$"]).map(lambda p: {"type": "string", "pattern": p}),
    st.sampled_from(["date", "ipv4", "uuid"]).map(lambda f: {"type": "string", "format": f}),
    st.builds(
        lambda p, n: {"type": "string", "pattern": p, "maxLength": n},
        st.sampled_from(["^a+$", "b", "^(ab|é)*$"]),
        st.integers(0, 3),
    ),
    st.sampled_from([2, 3]).map(lambda k: {"type": "integer", "multipleOf": k}),
    st.lists(
        st.sampled_from(["string", "integer", "null", "boolean"]), min_size=1, max_size=2, unique=True
    ).map(lambda ts: {"type": ts}),
)


def _object_schema(children: Any) -> Any:
    @st.composite
    def build(draw: Any) -> Dict[str, Any]:
        names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=4))
        props = {n: draw(children) for n in names}
        required = [n for n in names if draw(st.booleans())]
        s: Dict[str, Any] = {"type": "object", "properties": props, "required": required}
        addl = draw(st.sampled_from(["absent", False, True, "schema"]))
        if addl == "schema":
            s["additionalProperties"] = draw(_leaf_schemas)
        elif addl != "absent":
            s["additionalProperties"] = addl
        return s

    return build()


def _array_schema(children: Any) -> Any:
    @st.composite
    def build(draw: Any) -> Dict[str, Any]:
        s: Dict[str, Any] = {"type": "array"}
        if draw(st.booleans()):
            s["prefixItems"] = draw(st.lists(children, max_size=2))
        if draw(st.booleans()):
            s["items"] = draw(st.one_of(children, st.just(False)))
        lo = draw(st.integers(0, 2))
        if draw(st.booleans()):
            s["minItems"] = lo
        if draw(st.booleans()):
            s["maxItems"] = lo + draw(st.integers(0, 2))
        return s

    return build()


_inner_schemas = st.recursive(
    _leaf_schemas,
    lambda inner: st.one_of(
        _object_schema(inner),
        _array_schema(inner),
        st.tuples(inner, inner).map(lambda p: {"anyOf": list(p)}),
        st.tuples(inner, inner).map(lambda p: {"oneOf": list(p)}),  # disjoint or negatable
        inner.map(lambda s: {"not": s}),
        st.tuples(inner, inner, inner).map(lambda p: {"if": p[0], "then": p[1], "else": p[2]}),
    ),
    max_leaves=5,
)
# sometimes behind a $ref (and then shared by name)
_schemas = st.one_of(_inner_schemas, _inner_schemas.map(lambda s: {"$defs": {"d": s}, "$ref": "#/$defs/d"}))


# Values that are spelled the one way the grammar spells them: no integral floats (``2.0`` is an
# integer for JSON Schema), objects with one key (always in schema order).
_plain_scalars = _scalars.filter(lambda v: not (isinstance(v, float) and v.is_integer()))
_plain = st.one_of(
    _plain_scalars,
    st.lists(_plain_scalars, max_size=2),
    st.dictionaries(st.sampled_from(_NAMES + ["x"]), _plain_scalars, max_size=1),
)


@st.composite
def _instance(draw: Any, schema: Any, depth: int = 0) -> Any:
    """Mostly-valid instances in schema order (declared properties, then extra ones)."""
    if depth > 4 or schema is True or draw(st.integers(0, 9)) == 0:
        return draw(_plain)
    if "$ref" in schema:
        return draw(_instance(schema["$defs"]["d"], depth))
    if "not" in schema:  # an instance of the negated schema, or anything
        return draw(st.one_of(_plain, _instance(schema["not"], depth + 1)))
    if "if" in schema:
        return draw(
            _instance(draw(st.sampled_from([schema["if"], schema["then"], schema["else"]])), depth + 1)
        )
    for kw in ("anyOf", "oneOf"):
        if kw in schema:
            return draw(_instance(draw(st.sampled_from(schema[kw])), depth + 1))
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    t = schema["type"]
    if isinstance(t, list):
        t = draw(st.sampled_from(t))
    if t == "string" and "pattern" in schema:
        # no "\n": Python's re (used by jsonschema) lets "$" match before a final newline, ECMA-262 does not
        matching = st.from_regex(schema["pattern"]).filter(lambda x: "\n" not in x)
        return draw(st.one_of(matching, st.text(alphabet="abé", max_size=3)))
    if t == "string" and "format" in schema:
        fmt = schema["format"]
        if fmt == "date":
            valid = st.dates().map(lambda d: d.isoformat())
        elif fmt == "ipv4":
            valid = st.ip_addresses(v=4).map(str)
        else:
            valid = st.uuids().map(str)
        return draw(st.one_of(valid, st.sampled_from(["", "2024-02-30", "1.2.3", "abc"])))
    if t == "string":
        lo = schema.get("minLength", 0)
        return draw(
            st.text(
                alphabet='ab"é\U0001f600', min_size=max(lo - 1, 0), max_size=schema.get("maxLength", 3) + 1
            )
        )
    if t == "integer":
        return draw(st.integers(-5, 7))
    # number: two decimals at most (json.dumps spells them without an exponent); integral
    # values as ints (a const 0 is only generated as "0", while 0.0 equals it)
    if t == "number":
        return draw(
            st.one_of(
                st.integers(-5, 7),
                st.floats(-5, 7).map(lambda x: round(x, 2)).map(lambda x: int(x) if x.is_integer() else x),
            )
        )
    if t == "boolean":
        return draw(st.booleans())
    if t == "null":
        return None
    if t == "object":
        out: Dict[str, Any] = {}
        for k, s in schema["properties"].items():
            if k in schema["required"] or draw(st.booleans()):
                out[k] = draw(_instance(s, depth + 1))
        for k in draw(st.lists(st.sampled_from(["x", "y", "a"]), unique=True, max_size=2)):
            if k not in out and k not in schema["properties"]:
                addl = schema.get("additionalProperties", True)
                out[k] = draw(_instance(addl, depth + 1)) if isinstance(addl, dict) else draw(_plain)
        return out
    if t == "array":
        prefix = schema.get("prefixItems", [])
        n = draw(st.integers(0, 4))
        items = schema.get("items", True)
        out_list = []
        for i in range(n):
            s = prefix[i] if i < len(prefix) else items
            out_list.append(draw(_instance(s, depth + 1)) if isinstance(s, dict) else draw(_plain))
        return out_list
    raise AssertionError(schema)


def _needs(schema: Any) -> str:
    text = json.dumps(schema)
    return "json_values" if any(k in text for k in ('"pattern"', '"format"', 'inimum"', '"maximum"')) else ""


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(schema=_schemas, data=st.data(), layout=st.sampled_from(["compact", "indent", "flexible"]))
def test_accepts_iff_jsonschema_valid(schema: Any, data: Any, layout: str) -> None:
    if not HAVE_JSON_VALUES and "json_values" in _needs(schema):
        return
    options: Dict[str, Any] = {"whitespace": "compact"} if layout == "compact" else {}
    if layout == "indent":
        options["indent"] = 2
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    negated = any(k in json.dumps(schema) for k in ('"not"', '"if"', '"oneOf"'))
    try:
        checker: Optional[Checker] = Checker(schema, **options)
    except SchemaError as e:
        if e.keyword == "oneOf" or "cannot be negated" in str(e):  # refused, as documented
            return
        assert "accepts no value" in str(e)  # e.g. {"type": "array", "items": false, "minItems": 1}
        checker = None
    for _ in range(4):
        inst = data.draw(_instance(schema))
        text = dumps(inst, layout if layout != "flexible" else "indent")
        if checker is None:
            assert not validator.is_valid(inst), (schema, inst)
            continue
        if negated:  # negations add their own members: only soundness (key order may differ)
            assert not checker.accepts(text) or validator.is_valid(inst), (schema, text)
        else:
            assert checker.accepts(text) == validator.is_valid(inst), (schema, text)
    if checker is None:
        return
    # arbitrary JSON (any key order): whatever is accepted is valid
    for _ in range(2):
        inst = data.draw(_json)
        if checker.accepts(dumps(inst, layout if layout != "flexible" else "compact")):
            assert validator.is_valid(inst), (schema, inst)


def test_allof_merges_array_positions_not_keywords():
    # items in the outer schema applies from index 0: prefixItems inside allOf does not shift it
    schema = {"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}}
    g = Grammar.from_json_schema(schema)
    assert not g.accepts("[3, 5]")
    assert g.accepts("[5, 5]")
    # both sides positional: index 0 gets both constraints, later indexes both items schemas
    schema = {
        "allOf": [{"prefixItems": [{"type": "integer"}], "items": {"minimum": 2}}, {"items": {"maximum": 4}}]
    }
    g = Grammar.from_json_schema(schema)
    assert g.accepts("[9, 3]") is False  # index 0: integer and <= 4
    assert g.accepts("[1, 3]") and not g.accepts("[1, 5]") and not g.accepts("[1, 1]")


# --------------------------------------------------------------------------- logic keywords

# Values of every type, with the shapes the schemas below tell apart.
POOL: List[Any] = [
    None, True, False, 0, 1, 2, 6, 7, -3, 2.5, -0.5, "", "a", "ab", "abc", "b", "ba", "foo", "a1", "A",
    [], [1], [1, 2], [1, 2, 3], [2, 2], [5, "a", 5], ["a"], ["a", "b"], ["a", "b", "c", "d"], [2.5],
    {}, {"a": 1}, {"a": "x"}, {"b": 1}, {"a": 1, "b": 2},
    {"a": "x", "c": 3}, {"ab": 1}, {"x-1": "v"}, {"B": [1]}, {"foo": [1, 2]}, {"foo": [1]},
]  # fmt: skip

LOGIC_SCHEMAS: List[Dict[str, Any]] = [
    # not: the common forms
    {"not": {"type": "string"}},
    {"not": {"enum": ["a", None, True]}},
    {"not": {"required": ["a"]}},
    {"type": "object", "not": {"required": ["a", "b"]}},
    {"not": {"minLength": 2}},
    {"type": "string", "not": {"pattern": "^a"}},
    {"not": {"minimum": 1}},
    {"not": {"anyOf": [{"type": "string"}, {"maxItems": 1}]}},
    {"not": {"properties": {"a": {"type": "string"}}}},
    {"not": {"not": {"type": "array"}}},
    {"enum": ["a", "b", 1], "not": {"const": "a"}},
    {"type": "string", "not": {"enum": ["a", "ab"]}, "maxLength": 2},
    {"allOf": [{"not": {"type": "null"}}, {"not": {"type": "boolean"}}]},
    # if / then / else and dependencies
    {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "array"}},
    {"if": {"properties": {"a": {"type": "string"}}}, "then": {"required": ["c"]}},
    {"dependentRequired": {"a": ["b"]}},
    {"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}},
    # oneOf whose branches overlap: made exclusive by negation
    {"type": "string", "oneOf": [{"pattern": "a"}, {"pattern": "b"}]},
    {"type": "number", "oneOf": [{"maximum": 2}, {"maximum": 5}]},
    {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    # patternProperties and propertyNames
    {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}},
    {
        "type": "object",
        "properties": {"ab": {"type": "integer"}},
        "patternProperties": {"^a": {"maximum": 1}},
        "additionalProperties": False,
    },
    {"type": "object", "patternProperties": {"f.o": {"minItems": 2}, "^B": {"type": "array"}}},
    {"type": "object", "propertyNames": {"maxLength": 1}},
    {"type": "object", "propertyNames": {"pattern": "^[a-c]+$"}, "required": ["a"]},
    # strings under several constraints at once
    {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 2},
    {"type": "string", "pattern": "b", "maxLength": 2},
    {"type": "string", "pattern": "^[a-z]*$", "maxLength": 400},
    # contains / minContains / maxContains: items split into those that match and those that do not
    {"contains": {"type": "integer", "minimum": 2}},
    {"type": "array", "contains": {"const": 2}, "maxContains": 1},
    {"contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
    {"items": {"type": "integer"}, "contains": {"minimum": 5}},
    # negations of integer and of numeric constants
    {"not": {"type": "integer"}},
    {"not": {"enum": [2, 2.5, 0]}},
    {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
    # minProperties / maxProperties: members counted
    {"type": "object", "minProperties": 2},
    {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"], "maxProperties": 2},
    {"type": "object", "minProperties": 1, "maxProperties": 2, "properties": {"a": {"type": "integer"}}},
    {"not": {"maxProperties": 1}},
    # multipleOf: integer steps, by a remainder automaton
    {"type": "integer", "multipleOf": 3, "minimum": -5, "maximum": 8},
    {"type": "integer", "not": {"const": 6}, "multipleOf": 2},
    {"multipleOf": 2},
    {"allOf": [{"multipleOf": 2}, {"multipleOf": 7}]},
    # keywords outside the vocabulary and formats outside the specification constrain nothing
    {"type": "string", "x-kubernetes-int-or-string": True, "format": "color"},
]


def _validator(schema: Dict[str, Any]) -> Any:
    if "dependencies" in schema:
        return jsonschema.Draft7Validator(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("schema", LOGIC_SCHEMAS, ids=lambda s: json.dumps(s)[:60])
def test_logic_keywords_agree_with_jsonschema(schema: Dict[str, Any]) -> None:
    checker = Checker(schema)
    validator = _validator(schema)
    for value in POOL:
        assert checker.accepts(json.dumps(value)) == validator.is_valid(value), value


def test_dependencies_draft7_spelling() -> None:
    schema = {"dependencies": {"a": ["b"], "c": {"required": ["a"]}}}
    checker = Checker(schema)
    for value in [*POOL, {"c": 1}, {"a": 1, "c": 1}, {"a": 1, "b": 1, "c": 1}]:
        assert checker.accepts(json.dumps(value)) == jsonschema.Draft7Validator(schema).is_valid(value), value


def test_pattern_with_length_accepts_every_spelling() -> None:
    checker = Checker({"type": "string", "pattern": "^[a-z]+$", "maxLength": 3})
    assert checker.accepts('"abc"') and checker.accepts('"\\u0061bc"')
    assert not checker.accepts('"abcd"') and not checker.accepts('"ab1"')


@pytest.mark.parametrize(
    "pattern,lo,hi,texts",
    [
        ("^[a-z0-9-]+$", 0, 255, ["", "a", "a-9", "x" * 255, "x" * 256, "A", "a b"]),
        ("^[1-9][0-9]*$", 3, 5, ["1", "99", "100", "012", "99999", "100000", "1a0"]),
        ("^ab[c-d]*$", 0, 4, ["ab", "abc", "abcd", "abcdc", "a", "abx", ""]),
        ("^a", 0, 30000, ["", "a", "b", "a" + "z" * 29999, "a" + "z" * 30000]),
        ("^(x|y)$", 1, 9, ["x", "y", "xy", ""]),  # a chain alone
        ("^[a-z]+$", 3, None, ["ab", "abc", "é" * 3, "abcdefghijklmnopqrstuvwxyz"]),
        ("^é[à-ÿ]*$", 1, 3, ["é", "éà", "éàÿ", "éàÿà", "e", "\u00e9"]),
    ],
)
def test_pattern_of_a_chain_then_a_loop_under_length_bounds_is_counted(
    pattern: str, lo: int, hi: Optional[int], texts: List[str]
) -> None:
    """A pattern whose automaton is a chain of characters, then one loop (``[a-z]+``,
    ``[1-9][0-9]*``, ``^a``), under length bounds: C1 .. Ck L{lo - k, hi - k}, exact for any
    bound and without a product (its rules are the same few for a maximum of 255 or 30,000)."""
    schema: Dict[str, Any] = {"type": "string", "pattern": pattern, "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exact: nothing loosened
        checker = Checker(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for text in texts:
        assert checker.accepts(json.dumps(text)) == validator.is_valid(text), text
    escaped = json.dumps(texts[-1], ensure_ascii=True).replace("a", "\\u0061")
    assert checker.accepts(escaped) == validator.is_valid(json.loads(escaped)), escaped
    sizes = {len(Grammar.from_json_schema({**schema, "maxLength": top}).rules) for top in (255, 30000)}
    assert len(sizes) == 1


@settings(max_examples=40, deadline=None)
@given(
    pattern=st.sampled_from(["^[ab]+$", "^a[bc]*$", "^ab?$", "b", "^[^a]c*$", "^(a|b)c+$", "^a.*b$"]),
    lo=st.integers(0, 4),
    extra=st.one_of(st.none(), st.integers(0, 4)),
    # no newline: Python's `$`, which jsonschema uses, also matches before a final one
    texts=st.lists(st.text(alphabet="abcé ", max_size=8), min_size=1, max_size=8),
)
def test_pattern_under_length_bounds_agrees_with_jsonschema(
    pattern: str, lo: int, extra: Optional[int], texts: List[str]
) -> None:
    """Whether the pattern is counted (a chain then a loop) or paired with the count, the
    string is the pattern's and its length within the bounds (a character a code point)."""
    schema: Dict[str, Any] = {"type": "string", "pattern": pattern, "minLength": lo}
    if extra is not None:
        schema["maxLength"] = lo + extra
    try:
        checker = Checker(schema)
    except SchemaError:  # no string fits: jsonschema agrees on every text
        assert not any(jsonschema.Draft202012Validator(schema).is_valid(t) for t in texts)
        return
    validator = jsonschema.Draft202012Validator(schema)
    for text in texts:
        assert checker.accepts(json.dumps(text)) == validator.is_valid(text), text


@pytest.mark.parametrize(
    "schema, lo, hi",
    [
        ({"pattern": "^[a-z]+$"}, 1, None),  # the usual "minLength": 1 beside a pattern that needs one
        ({"pattern": "^[0-9]{9}$"}, 9, 9),
        ({"pattern": "^(?:\\S+\\s+){0,99}\\S+$"}, 1, None),
        ({"pattern": "\\S"}, 1, None),  # unanchored: a match has a character, whatever surrounds it
        ({"pattern": "^[0-9]{3}(-[0-9]{4})?$"}, 2, 8),
        ({"format": "date", "pattern": "^2"}, 10, 10),  # the format implies them, the pattern narrows
        ({"pattern": "^[a-z]+$", "not": {"pattern": "b"}}, 1, None),  # a negated pattern too
    ],
)
def test_length_bounds_the_constraints_imply_add_nothing(
    schema: Dict[str, Any], lo: int, hi: Optional[int]
) -> None:
    """Bounds that every string of the pattern or of the format meets are dropped: the grammar is
    the one without them, not an automaton paired with the count."""
    bounded: Dict[str, Any] = {"type": "string", **schema, "minLength": lo}
    if hi is not None:
        bounded["maxLength"] = hi
    alone = Grammar.from_json_schema({"type": "string", **schema})
    assert Grammar.from_json_schema(bounded).digest == alone.digest


@pytest.mark.parametrize("kw", ["anyOf", "oneOf"])
def test_implied_length_bounds_of_string_branches_add_nothing(kw: str) -> None:
    branches = [{"pattern": "^[a-z]+$"}, {"format": "date"}]
    bounded = [{**branches[0], "minLength": 1}, {**branches[1], "maxLength": 10}]
    with_bounds = Grammar.from_json_schema({"type": "string", kw: bounded})
    assert with_bounds.digest == Grammar.from_json_schema({"type": "string", kw: branches}).digest
    assert [with_bounds.accepts(json.dumps(t).encode()) for t in ("abc", "2020-01-01", "", "A")] == [
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize(
    "schema, texts",
    [
        ({"type": "string", "pattern": "^[a-z]+$", "minLength": 2}, ["a", "ab", ""]),
        ({"type": "string", "pattern": "^[0-9]{3}(-[0-9]{4})?$", "maxLength": 7}, ["123", "123-4567"]),
        (
            {"type": "string", "pattern": "a", "maxLength": 3},
            ["a", "xxa", "xxxa", "b"],
        ),  # unanchored: any length
        ({"type": "string", "pattern": "^a*$", "minLength": 1}, ["", "a", "aa"]),  # "" matches the pattern
    ],
)
def test_length_bounds_the_pattern_does_not_imply_still_hold(
    schema: Dict[str, Any], texts: List[str]
) -> None:
    checker, validator = Checker(schema), jsonschema.Draft202012Validator(schema)
    assert {t: checker.accepts(json.dumps(t)) for t in texts} == {t: validator.is_valid(t) for t in texts}


@pytest.mark.parametrize(
    "schema, texts",
    [
        (  # words anywhere: a text with two of them matches two branches
            {
                "type": "string",
                "oneOf": [{"pattern": "customer"}, {"pattern": "maker"}, {"pattern": "admin"}],
            },
            ["customer", "a maker", "customer maker", "admin", "xyz", "admin, customer", ""],
        ),
        (  # siblings' bounds, merged into every branch
            {"type": "string", "maxLength": 4, "oneOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
            ["a", "ab", "b", "axb", "aaaab", "xb", "x", "abab"],
        ),
        (  # each branch's own bounds
            {
                "oneOf": [
                    {"type": "string", "pattern": "^a", "maxLength": 3},
                    {"type": "string", "minLength": 2},
                ]
            },
            ["a", "ab", "abc", "abcd", "bc", "b", ""],
        ),
        (  # a branch that is an anyOf, and one that admits nothing
            {
                "type": "string",
                "oneOf": [
                    {"anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                    {"pattern": "z$"},
                    {"minLength": 3, "maxLength": 1},
                ],
            },
            ["a", "az", "bz", "z", "cz", "c", "b"],
        ),
    ],
)
def test_one_of_strings_agrees_with_jsonschema(schema: Dict[str, Any], texts: List[str]) -> None:
    """oneOf's string branches are one automaton: a string that exactly one branch accepts."""
    checker, validator = Checker(schema), jsonschema.Draft202012Validator(schema)
    assert {t: checker.accepts(json.dumps(t)) for t in texts} == {t: validator.is_valid(t) for t in texts}


def test_one_of_formats_is_exact() -> None:
    """Formats cannot be negated, so a oneOf of formats was refused; as one automaton it is
    exact: a dotted quad is a hostname too, and matches both branches."""
    branches = [{"format": "ipv4"}, {"format": "hostname"}]
    one_of = Checker({"type": "string", "oneOf": branches})
    alone = [Checker({"type": "string", **b}) for b in branches]
    texts = ["1.2.3.4", "example.com", "::1", "a", "999.1.1.1"]
    for text in map(json.dumps, texts):
        assert one_of.accepts(text) == (sum(c.accepts(text) for c in alone) == 1), text
    assert all(c.accepts('"1.2.3.4"') for c in alone) and not one_of.accepts('"1.2.3.4"')


@settings(max_examples=40, deadline=None)
@given(
    patterns=st.lists(
        st.sampled_from(["^a", "b$", "ab", "^[ab]+$", "c", "^.{2}$", "^a.*b$"]), min_size=2, max_size=4
    ),
    top=st.one_of(st.none(), st.integers(0, 5)),
    texts=st.lists(st.text(alphabet="abcé ", max_size=7), min_size=1, max_size=8),
)
def test_one_of_patterns_agrees_with_jsonschema(
    patterns: List[str], top: Optional[int], texts: List[str]
) -> None:
    schema: Dict[str, Any] = {"type": "string", "oneOf": [{"pattern": p} for p in patterns]}
    if top is not None:
        schema["maxLength"] = top
    validator = jsonschema.Draft202012Validator(schema)
    try:
        checker = Checker(schema)
    except SchemaError:  # no string matches exactly one branch: jsonschema agrees
        assert not any(validator.is_valid(t) for t in texts)
        return
    for text in texts:
        assert checker.accepts(json.dumps(text)) == validator.is_valid(text), (schema, text)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^(x|y)$", "minLength": 2},  # the chain is shorter
        {"type": "string", "pattern": "^abc[d]*$", "maxLength": 2},  # the chain is longer
    ],
)
def test_pattern_of_a_chain_then_a_loop_outside_the_bounds_accepts_nothing(schema: Dict[str, Any]) -> None:
    with pytest.raises(SchemaError, match="accepts no value"):
        Grammar.from_json_schema(schema)


def test_the_same_pattern_and_bounds_are_built_once_per_schema() -> None:
    """Sub-schemas with the same pattern and bounds but other keywords (annotations a memo of
    sub-schemas keys on, vendor keywords) share one string automaton's rules."""
    from agentgrammar.grammar.json_schema.schema_rules import schema_rules_and_parts

    leaf = {"type": "string", "pattern": "^([a-z]+):([a-z.]+)$", "maxLength": 40}
    schema = {"type": "object", "properties": {k: {**leaf, "x-vendor": k} for k in "abc"}}
    rules = schema_rules_and_parts(schema)[0]
    automaton = [r.name for r in rules if "_prop_" in r.name]
    assert automaton and all(name.startswith("root_prop_a_str") for name in automaton), automaton
    checker = Checker({"type": "object", "properties": {k: {**leaf, "x-vendor": k} for k in "abc"}})
    assert checker.accepts('{"a": "ab:c.d", "c": "x:y"}')
    assert not checker.accepts('{"b": "ab:c.d' + "e" * 40 + '"}') and not checker.accepts('{"c": "ab"}')


def test_multiple_of_large_values_and_fractional_steps() -> None:
    checker = Checker({"type": "integer", "multipleOf": 7})
    assert checker.accepts(str(7 * 10**30)) and not checker.accepts(str(7 * 10**30 + 1))
    assert checker.accepts("0") and checker.accepts("-14") and not checker.accepts("-15")
    with pytest.raises(SchemaError, match="multipleOf"):  # float validators disagree on 0.1
        Grammar.from_json_schema({"type": "number", "multipleOf": 0.1})


def test_spec_formats_that_are_not_supported_still_raise() -> None:
    with pytest.raises(SchemaError, match="regex"):
        Grammar.from_json_schema({"type": "string", "format": "regex"})


@pytest.mark.parametrize("fmt", ["date-time", "email", "uuid"])
def test_a_format_is_one_shared_grammar_normalized_once(fmt: str) -> None:
    from agentgrammar.grammar import json_values

    schema = {"type": "object", "properties": {k: {"type": "string", "format": fmt} for k in "abc"}}
    g, again = Grammar.from_json_schema(schema), Grammar.from_json_schema(schema)
    rule = "json_format_" + fmt.replace("-", "_")
    # the three properties embed one grammar, the same object in every schema (its automata
    # are loaded once per process), already in the form the C core takes
    (part,) = [p for p in g.parts if p.root == rule]
    assert [p for p in again.parts if p.root == rule] == [part] and part._shared
    assert not any(r.name.startswith(rule) for r in g.rules)
    assert part._normalized is part.rules
    assert sorted(r.name for r in part.rules) == sorted(
        r.name for r in normalize_rules([Rule(rule, json_values.format_string(fmt))], use_pieces=False)
    )
    # with excludes a string is the schema's own: the format stays one of its rules
    excluded = Grammar.from_json_schema(schema, excludes=["zz"])
    assert rule in {r.name for r in excluded.rules} and not any(p.root == rule for p in excluded.parts)
    # the same language as the format's string inline
    inline = Grammar.from_rules([Rule("root", json_values.format_string(fmt))])
    samples = {
        "date-time": ["2020-02-29T10:00:00Z", "2021-02-29T10:00:00Z", "2020-01-01t00:00:00.5+01:00"],
        "email": ["a.b@example.com", "a..b@example.com", "x@[127.0.0.1]"],
        "uuid": ["123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400"],
    }[fmt]
    for value in samples:
        text = json.dumps(value)
        assert g.accepts('{"b": %s}' % text) == inline.accepts(text)
    assert any(inline.accepts(json.dumps(v)) for v in samples)
    assert not all(inline.accepts(json.dumps(v)) for v in samples)


def test_any_order_accepts_every_order_once() -> None:
    import itertools

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["a", "c"],
    }
    ordered, free = Checker(schema), Checker(schema, any_order=True)
    validator = jsonschema.Draft202012Validator(schema)
    items = [("a", 1), ("b", "x"), ("c", True), ("z", None)]
    for k in range(len(items) + 1):
        for combo in itertools.permutations(items, k):
            value = dict(combo)
            assert free.accepts(json.dumps(value)) == validator.is_valid(value), value
    assert not ordered.accepts('{"c": true, "a": 1}') and free.accepts('{"c": true, "a": 1}')
    assert not free.accepts('{"a": 1, "a": 2, "c": true}')  # each declared member at most once


def test_any_order_keeps_schema_order_past_the_limit() -> None:
    from agentgrammar.grammar.json_schema import ANY_ORDER_LIMIT

    props = {f"p{i}": {"type": "integer"} for i in range(ANY_ORDER_LIMIT + 1)}
    checker = Checker({"type": "object", "properties": props}, any_order=True)
    assert checker.accepts('{"p0": 1, "p1": 2}') and not checker.accepts('{"p1": 2, "p0": 1}')


# --------------------------------------------------------------------------- string unions

#: MaskBench's Handwritten---allany22: a pattern and length bounds merged into 16 string
#: branches (through anyOf, not and allOf); apart, their automata made 13,222 rules.
ALLANY = {
    "type": "string",
    "anyOf": [{"$ref": "#/definitions/not1"}, {"$ref": "#/definitions/not2"}, {"$ref": "#/definitions/not3"}],
    "pattern": "[aA][12].*[zZ]",
    "minLength": 10,
    "maxLength": 90,
    "definitions": {
        **{
            f"not{i}": {"not": {"allOf": [{"$ref": f"#/definitions/not{i}{j}"} for j in (1, 2, 3)]}}
            for i in (1, 2, 3)
        },
        **{
            f"not{i}{j}": {"not": {"anyOf": [{"pattern": head}, {"pattern": tail[0]}, {"pattern": tail[1]}]}}
            for i, head, tails in (
                (1, "^....$", (("ab1", "b12"), ("bc1", "c12"), ("ca1", "a12"))),
                (2, "^[\\w]*$", (("\\d\\d", "[a|b]"), ("\\d\\d", "[b|c]"), ("\\d\\d", "[c|a]"))),
                (3, "^[\\w]+", (("1.*2", "ac"), ("1.*2", "a2"), ("1.*2", "a1"))),
            )
            for j, tail in enumerate(tails, 1)
        },
    },
}


def _strings_for_allany(seed: int, count: int) -> List[str]:
    """JSON strings near the edges of ALLANY: lengths about the bounds, the patterns' pieces."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.choice([3, 4, 9, 10, 11, 20, 50, 89, 90, 91])
        s = [rng.choice("aAbBcCzZ12 x_\u00e9-.") for _ in range(n)]
        if rng.random() < 0.8:
            i = rng.randrange(n)
            s[i : i + 2] = list(rng.choice(["a1", "A2", "a2", "ab1", "b12", "c12", "ca1", "12", "ac"]))
        if rng.random() < 0.7:
            s[-1] = rng.choice("zZ")
        out.append("".join(s)[:n])
    return out


def test_string_branches_become_one_automaton(monkeypatch: pytest.MonkeyPatch) -> None:
    united = Checker(ALLANY)
    assert len(united.grammar.rules) < 2_000
    from agentgrammar.grammar.json_schema import combinators

    monkeypatch.setattr(combinators, "string_union", lambda conv, branches, path, hint: (False, None))
    apart = Checker(ALLANY)
    # one string automaton, against a choice of the branches converted one by one
    assert [type(x).__name__ for x in united.grammar.rules[0].body.items] == ["Literal", "RuleRef", "Literal"]
    assert type(apart.grammar.rules[0].body).__name__ == "Choice"
    validator = jsonschema.Draft7Validator(ALLANY)
    accepted = 0
    for s in _strings_for_allany(0, 400):
        text = json.dumps(s)
        expected = validator.is_valid(s)
        assert united.accepts(text) == expected, s
        assert apart.accepts(text) == expected, s
        accepted += expected
    assert 50 < accepted < 350  # both sides of the language are sampled


@pytest.mark.parametrize(
    "schema, instances",
    [
        # bounds that differ between branches: each branch is bounded before the union
        (
            {
                "anyOf": [
                    {"type": "string", "pattern": "^a", "maxLength": 3},
                    {"type": "string", "pattern": "b$", "minLength": 5},
                ]
            },
            ["a", "abc", "abcd", "bbbbb", "xxxxb", "xxb", "ab", ""],
        ),
        # a branch that admits nothing (minLength above maxLength), a nested anyOf, a not
        (
            {
                "type": "string",
                "minLength": 2,
                "maxLength": 4,
                "anyOf": [
                    {"pattern": "x", "minLength": 9},
                    {"anyOf": [{"pattern": "^a"}, {"not": {"pattern": "[a-z]"}}]},
                ],
            },
            ["a", "ab", "abcd", "abcde", "12", "1a", "A1B2", "xx", "x"],
        ),
        # a branch of another type: converted branch by branch, as before
        (
            {"anyOf": [{"type": "string", "pattern": "^a", "maxLength": 3}, {"type": "integer"}]},
            ["a", "abc", "abcd", 5, "b"],
        ),
        # single-loop union under a length bound: a counted repeat
        (
            {
                "type": "string",
                "minLength": 1,
                "maxLength": 3,
                "anyOf": [{"pattern": "^[ab]*$"}, {"pattern": "^[bc]*$"}],
            },
            ["a", "abc", "abab", "cb", "ac", "", "d"],
        ),
    ],
)
def test_string_unions_agree_with_jsonschema(schema: Dict[str, Any], instances: List[Any]) -> None:
    checker = Checker(schema)
    validator = jsonschema.Draft7Validator(schema)
    for x in instances:
        assert checker.accepts(json.dumps(x)) == validator.is_valid(x), x


def test_key_tries_share_subtrees_across_sets_of_names() -> None:
    from agentgrammar.grammar.ir import Choice as IRChoice
    from agentgrammar.grammar.ir import Literal, RuleRef, Seq
    from agentgrammar.grammar.json_schema.key_trie import _key_not_in

    def nodes(e: Any) -> Dict[int, Any]:
        out, stack = {}, [e]
        while stack:
            x = stack.pop()
            if isinstance(x, (Seq, IRChoice)) and id(x) not in out:
                out[id(x)] = x
                stack.extend(x.items)
        return out

    refs = (RuleRef("tail"), RuleRef("esc"), RuleRef("any"))
    a = _key_not_in(("alpha", "beta"), *refs)
    b = _key_not_in(("gamma", "beta"), *refs)
    shared = set(nodes(a)) & set(nodes(b))
    assert shared  # the subtrie of "beta" is one object in both
    # so it is with equal parts that are other objects (a converter builds them per object)
    c = _key_not_in(("delta", "beta"), RuleRef("tail"), RuleRef("esc"), RuleRef("any"))
    beta = [x.items[1] for x in nodes(b).values() if isinstance(x, Seq) and x.items[0] == Literal(b"b")]
    assert beta and all(id(x) in nodes(c) for x in beta)  # the subtrie after "b"
    # objects whose keys differ in additional members: every key is classified right
    schema = {
        "type": "object",
        "properties": {
            "x": {
                "type": "object",
                "properties": {"alpha": {"type": "integer"}, "beta": {"type": "integer"}},
            },
            "y": {
                "type": "object",
                "properties": {"gamma": {"type": "integer"}, "beta": {"type": "integer"}},
            },
        },
    }
    checker = Checker(schema)
    validator = jsonschema.Draft7Validator(schema)
    for inner in ({"beta": 1}, {"beta": "s"}, {"bet": "s"}, {"betax": "s"}, {"alpha": "s"}, {"gamma": "s"}):
        for outer in ("x", "y"):
            value = {outer: inner}
            assert checker.accepts(json.dumps(value)) == validator.is_valid(value), value
    assert Grammar.from_json_schema(schema) == Grammar.from_json_schema(schema)


def test_after_a_member_the_next_optional_members_are_one_choice() -> None:
    """After a value in an object of optional members, the grammar expects the separator and
    then one choice of the next member written. It used to expect a chain of nullable rules,
    one per optional member left, all predicted at once, so the first mask after each value
    classified every one of them (a vocabulary walk each). The language is unchanged: every
    subset of the members, in schema order, and nothing else."""
    names = [f"p{i}" for i in range(12)]
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in names}}
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_json_schema(schema, strict=True))
    matcher = Matcher(compiled)
    assert matcher.accept_string('{"p0": 1')
    before = compiled.cache_stats
    assert matcher.allowed_token_ids()
    after = compiled.cache_stats
    classified = sum(getattr(after, f) - getattr(before, f) for f in ("walked", "derived", "shared"))
    assert classified <= 3, (before, after)
    for picked in ([], ["p3"], ["p0", "p11"], names[5:], names):
        text = json.dumps({k: 1 for k in picked})
        assert Matcher(compiled).accept_string(text), text
    assert not Matcher(compiled).accept_string('{"p3": 1, "p1": 1}')  # out of schema order
    assert not Matcher(compiled).accept_string('{"p3": 1, "p3": 1}')


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=6),
    st.lists(st.integers(0, 310), max_size=8),
)
def test_minus_removes_exactly_the_points(ranges: List[Any], points: List[int]) -> None:
    from agentgrammar.grammar.json_schema.lexical import _minus

    got = _minus(ranges, points)
    want = {c for lo, hi in ranges for c in range(lo, hi + 1)} - set(points)
    assert {c for lo, hi in got for c in range(lo, hi + 1)} == want
    assert all(lo <= hi for lo, hi in got) and all(a[1] < b[0] for a, b in zip(got, got[1:]))


_JSON_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON_DATA)
def test_sub_schema_keys_are_json_dumps_compact(value: Any) -> None:
    from agentgrammar.grammar.json_schema.instances import _compact_json

    assert _compact_json(value) == json.dumps(value, separators=(",", ":"))


def test_json_pointer_segments_escape_only_tilde_and_slash() -> None:
    from agentgrammar.grammar.json_schema.keywords import _ptr

    assert _ptr("/properties", "a/b", "~c", 3, "plain") == "/properties/a~1b/~0c/3/plain"
    assert _ptr("", "~1") == "/~01"


# --------------------------------------------------------------------------- the any-value part


def test_open_values_embed_one_shared_value_grammar() -> None:
    """Where any value is allowed (``true``, an open object, an array without ``items``), the
    rules embed one grammar of any JSON value per layout, the same object in every schema."""
    a = Grammar.from_json_schema({"type": "object", "properties": {"x": {"type": "integer"}}})
    b = Grammar.from_json_schema({"type": "array"})
    assert len(a.parts) == 1 and a.parts == b.parts
    value = a.parts[0]
    assert value.root == "json_value" and "json_value" not in {r.name for r in a.rules}
    assert Grammar.from_json_schema({"type": "array"}, whitespace="compact").parts[0] is not value
    closed = Grammar.from_json_schema(
        {"type": "object", "properties": {"x": {"type": "integer"}}}, strict=True
    )
    assert closed.parts == ()
    checker = Checker({"type": "object", "properties": {"x": {"type": "integer"}}})
    assert checker.accepts('{"x": 1, "y": [true, {"z": null}, "s", -2.5e3]}')
    assert not checker.accepts('{"x": 1, "y": [true,]}')
    assert not checker.accepts('{"x": "1"}')


def test_indented_values_stay_rules_of_the_grammar() -> None:
    """With indentation a value's layout depends on its depth: no shared grammar, rules of its own."""
    g = Grammar.from_json_schema({"type": "array"}, indent=2)
    assert g.parts == ()
    assert any(r.name.startswith("json_value") for r in g.rules)
    assert Checker({"type": "array"}, indent=2).accepts(json.dumps([1, {"a": [2]}], indent=2))


def test_printed_grammar_shows_the_value_rules_once() -> None:
    """The printed grammar names the embedded value grammar's rules as before: the base rules
    it shares with the schema's own (the same bodies) are printed once, not renamed apart."""
    text = str(Grammar.from_json_schema({"type": "object", "properties": {"s": {"type": "string"}}}))
    names = [line.split(" ::= ")[0] for line in text.splitlines()]
    assert len(names) == len(set(names))
    assert {"json_value", "json_string", "ws"} <= set(names)
    assert not any(n.endswith("_2") for n in names), names
    reparsed = Grammar.from_ebnf(text)
    for doc in ('{"s": "a", "t": {"u": [1, 2]}}', '{"s": 1}', '{"t": []}'):
        assert reparsed.accepts(doc) == Checker(
            {"type": "object", "properties": {"s": {"type": "string"}}}
        ).accepts(doc), doc


def test_strict_allows_a_required_member_the_schema_does_not_list() -> None:
    # "required" declares the member (BFCL has such schemas); strict closes the object to others.
    g = Grammar.from_json_schema({"type": "object", "required": ["a"]}, strict=True, whitespace="compact")
    assert g.accepts('{"a": [1]}') and not g.accepts("{}") and not g.accepts('{"a": 1, "b": 2}')
    with pytest.raises(SchemaError, match="accepts no value"):
        Grammar.from_json_schema(
            {"type": "object", "required": ["a"], "additionalProperties": False}, strict=True
        )


@pytest.mark.parametrize("package", ["agentgrammar.grammar.json_schema", "agentgrammar.grammar.json_values"])
def test_every_bounded_cache_of_a_converter_is_counted_with_the_memos(package: str) -> None:
    # the compiler counts the bounded lru_caches it finds in the package's namespace
    import importlib
    import pkgutil

    import agentgrammar.engine.compiler  # noqa: F401  (registers them)
    from agentgrammar.grammar.memo import memo_bytes

    top = importlib.import_module(package)
    modules = [top] + [
        importlib.import_module(f"{package}.{m.name}")
        for m in pkgutil.iter_modules(getattr(top, "__path__", []))
    ]
    counted = set(memo_bytes())
    bounded = {
        f"{package.rsplit('.', 1)[-1]}.{name}"
        for module in modules
        for name, value in vars(module).items()
        if callable(getattr(value, "cache_info", None)) and (value.cache_info().maxsize or 0) >= 256
    }
    assert bounded and bounded <= counted, bounded - counted


def test_a_document_nested_past_the_limit_is_refused_before_converting() -> None:
    """``MAX_SCHEMA_DEPTH`` levels of objects and arrays (the root is level 1) are read; one
    more is refused, wherever the deepest container is (here inside an annotation, which
    the converter never looks at)."""
    from agentgrammar.grammar.json_schema import MAX_SCHEMA_DEPTH

    def nested(levels: int) -> Any:  # `levels` containers, lists and dicts by turns
        doc: Any = 0
        for i in range(levels):
            doc = [doc] if i % 2 else {"k": doc}
        return doc

    ok = {"type": "string", "examples": nested(MAX_SCHEMA_DEPTH - 1)}
    assert json_schema_rules(ok)[0]
    deep = {"type": "string", "examples": nested(MAX_SCHEMA_DEPTH)}
    with pytest.raises(SchemaError, match=f"nests more than {MAX_SCHEMA_DEPTH} levels"):
        json_schema_rules(deep)
    assert json_schema_rules(True)[0] and json_schema_rules("true")[0]  # a root that is no container
