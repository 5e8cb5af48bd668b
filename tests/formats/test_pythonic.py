"""``formats.pythonic`` and ``formats.pythonic_parse``: the pythonic layout's argument grammar per
JSON Schema, its literal writer, and the reader that takes literals back without evaluating
anything."""

from __future__ import annotations

import ast
import json
import random
import warnings
from typing import Any, Dict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar import Tool, ToolError
from agentgrammar.formats.arguments import MAX_INT_DIGITS, MAX_JSON_DEPTH
from agentgrammar.formats.pythonic import arguments_grammar, python_literal, render_arguments
from agentgrammar.formats.pythonic_parse import PythonLiteralError, read_arguments


def _tool(properties: Dict[str, Any], required: Any = (), **extra: Any) -> Tool:
    schema = {"type": "object", "properties": properties, "required": list(required), **extra}
    return Tool("t", "", schema)


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (
            {"type": "string"},
            ['"Oslo"', '"a\\"b\\\\c\\n"', '"é"', '""'],
            ["'Oslo'", "Oslo", '"a\nb"', "None"],
        ),
        ({"type": "string", "maxLength": 2}, ['"ab"', '"\\u00e9x"'], ['"abc"']),
        ({"type": "string", "pattern": "^[0-9]+$"}, ['"123"'], ['"12a"']),
        ({"type": "string", "format": "date"}, ['"2024-02-29"'], ['"2023-02-29"']),
        ({"type": "integer", "minimum": 1, "maximum": 14}, ["1", "14"], ["0", "15", "1.0", "True"]),
        ({"type": "number"}, ["-1.5e3", "0", "2.25"], ["1_000", "0x1", "inf", "NaN", "+1"]),
        ({"type": "boolean"}, ["True", "False"], ["true", "1"]),
        ({"type": "null"}, ["None"], ["null"]),
        ({"type": ["string", "null"]}, ['"x"', "None"], ["1"]),
        (
            {"enum": ["a", 1, True, None, [1], {"k": "v"}]},
            ['"a"', "1", "True", "None", "[1]", '{"k": "v"}'],
            ['"b"', "true"],
        ),
        ({"const": {"on": False}}, ['{"on": False}'], ['{"on": false}', "{}"]),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, ["3", '"3"'], ["3.5", "None"]),
        (
            {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
            ["[1]", "[1, 2]"],
            ["[]", "[1, 2, 3]", "[1,2]", "(1, 2)"],
        ),
        ({"type": "array"}, ["[]", '[1, "a", [None], {"k": True}]'], ["[1,]"]),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["b"],
            },
            ['{"b": "x"}', '{"a": 1, "b": "x"}'],
            ['{"a": 1}', '{"b": "x", "a": 1}', '{"b": "x", "c": 1}', "{'b': 'x'}"],
        ),
        ({"type": "object"}, ["{}", '{"any": [1, {"x": None}]}'], ["{1: 2}"]),
        (  # a pattern with lengths: one automaton of both
            {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4},
            ['"ab"', '"abcd"'],
            ['"a"', '"abcde"', '"ab1"'],
        ),
        ({}, ['"s"', "1", "None", '{"k": [True]}'], ["x", "true"]),
    ],
)
def test_each_schema_value_is_a_python_literal_of_it(schema: Any, good: list, bad: list) -> None:
    g = arguments_grammar(_tool({"v": schema}, ["v"]))
    for value in good:
        assert g.accepts(f"v={value}"), value
        args, _ = read_arguments(f"v={value})", 0)
        assert args["v"] == ast.literal_eval(value)  # the reader agrees with Python here
    for value in bad:
        assert not g.accepts(f"v={value}"), value


def test_a_format_under_a_bound_past_the_automata_limit_keeps_the_format() -> None:
    with warnings.catch_warnings():  # the dropped bound's (converted once per process)
        warnings.simplefilter("ignore")
        g = arguments_grammar(
            _tool({"url": {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083}}, ["url"])
        )
    assert g.accepts('url="https://example.com/a?b=c"')
    assert not g.accepts('url="not a uri"') and not g.accepts('url=""')


def test_keyword_arguments_follow_the_schema_order_with_optional_ones_left_out() -> None:
    g = arguments_grammar(
        _tool({"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, ["b"])
    )
    accepted = ["b=2", "a=1, b=2", "b=2, c=3", "a=1, b=2, c=3"]
    refused = ["", "a=1", "b=2, a=1", "b=2,c=3", "b=2, b=2", "b=2, d=4", "b=2, ", "2"]
    assert all(g.accepts(s) for s in accepted)
    assert not any(g.accepts(s) for s in refused)


def test_recursive_refs_nest() -> None:
    node = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
    g = arguments_grammar(_tool({"tree": {"$ref": "#/$defs/node"}}, ["tree"], **{"$defs": {"node": node}}))
    assert g.accepts('tree={"kids": [{"kids": []}, {}]}')
    assert not g.accepts('tree={"kids": [1]}')


def test_schemas_that_cannot_be_written_are_tool_errors() -> None:
    with pytest.raises(ToolError, match="'max-results' cannot be a keyword argument"):
        arguments_grammar(_tool({"max-results": {"type": "integer"}}))
    with pytest.raises(ToolError, match="accepts no value"):
        arguments_grammar(_tool({"x": False}, ["x"]))
    assert arguments_grammar(_tool({"x": False, "y": {"type": "integer"}})).accepts("y=1")  # left out


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_json_values)
def test_written_literals_read_back_and_are_python(value: Any) -> None:
    text = python_literal(value)
    assert ast.literal_eval(text) == value  # a real Python literal of the same value
    args, end = read_arguments(f"v={text})", 0)
    assert args == {"v": value} and end == len(text) + 2
    assert arguments_grammar(_tool({"v": {}}, ["v"])).accepts(f"v={text}")


def test_render_arguments_refuses_what_has_no_keyword_or_literal() -> None:
    with pytest.raises(ValueError, match="not an identifier"):
        render_arguments({"a b": 1})
    with pytest.raises(ValueError):
        render_arguments({"x": float("nan")})
    assert render_arguments({}) == ""


@pytest.mark.parametrize(
    ("text", "problem", "at"),
    [
        ('x=__import__("os").system("true"))', "the name '__import__'", 2),
        ("x=open('f'))", "the name 'open'", 2),
        ("x=[i for i in y])", "the name 'i'", 3),
        ("x=1+1)", "expected ',' or ')'", 3),
        ("x=lambda: 1)", "the name 'lambda'", 2),
        ('x=f"{y}")', "'f'-prefixed string", 2),
        ('x="""a""")', "triple-quoted", 2),
        ("x=(1, 2))", "a tuple", 2),
        ("x={1, 2})", "not a string (or a set)", 3),
        ('x={"a": 1, "a": 2})', "names the key 'a' twice", 11),
        ("x=1, x=2)", "given twice", 5),
        ('"Oslo")', "a positional argument", 0),
        ("x=NaN)", "NaN, which is not a JSON number", 2),
        ("x=-inf)", "-inf, which is not a JSON number", 2),
        ("x=1e400)", "too large for a float", 2),
        ("x=0x10)", "not a decimal literal", 2),
        ("x=007)", "leading zero", 2),
        ("x=1_000)", "not a decimal literal", 2),
        ("x=2j)", "not a decimal literal", 2),
        ('x="\\ud800")', "lone surrogate", 3),
        ('x="\\N{DASH}")', "a named escape", 3),
        ('x="\\x4")', "truncated escape", 3),
        ('x="\\U00110000")', "past the last code point", 3),
        ('x="abc', "not closed on its line", 2),
        ('x="a\nb")', "not closed on its line", 2),
        ("x=[1, 2", "expected ',' or ']'", 7),
        ('x={"a": 1', "expected ',' or '}'", 9),
        ("x=1", "not closed with ')'", 3),
        ("x=", "expected a literal", 2),
    ],
)
def test_hostile_or_garbled_text_is_a_typed_error_never_evaluated(text: str, problem: str, at: int) -> None:
    with pytest.raises(PythonLiteralError) as info:
        read_arguments(text, 0)
    assert problem in info.value.problem and info.value.offset == at


def test_limits_of_json_hold() -> None:
    assert read_arguments(f"x={'9' * MAX_INT_DIGITS})", 0)[0]["x"] == int("9" * MAX_INT_DIGITS)
    with pytest.raises(PythonLiteralError, match=f"more than {MAX_INT_DIGITS} digits"):
        read_arguments(f"x=-{'9' * (MAX_INT_DIGITS + 1)})", 0)
    deep = MAX_JSON_DEPTH - 1
    assert read_arguments("x=" + "[" * deep + "]" * deep + ")", 0)[0]
    for depth in (deep + 1, 20000):  # never a RecursionError
        with pytest.raises(PythonLiteralError, match=f"nested more than {deep} levels") as info:
            read_arguments("x=" + "[" * depth + "]" * depth + ")", 0)
        assert info.value.offset == 2 + deep


def test_other_python_spellings_are_read() -> None:
    args, _ = read_arguments("a = 'it\\'s' , b=[1, 2,], c={'k': .5,}, d=1., e='\\x41\\101\\/\\q',)", 0)
    assert args == {"a": "it's", "b": [1, 2], "c": {"k": 0.5}, "d": 1.0, "e": "AA/\\q"}


def test_random_garbage_is_read_or_refused_never_a_crash() -> None:
    rng = random.Random(7)
    pieces = [
        "a",
        "=",
        "1",
        "'",
        '"',
        "\\",
        "[",
        "]",
        "{",
        "}",
        "(",
        ")",
        ",",
        ":",
        " ",
        "True",
        "1e9",
        "-",
        "\\u",
        "x",
    ]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        try:
            args, end = read_arguments(text, 0)
        except PythonLiteralError as e:
            assert 0 <= e.offset <= len(text)
            continue
        assert text[end] == ")"
        json.dumps(args, allow_nan=False)  # plain JSON data
