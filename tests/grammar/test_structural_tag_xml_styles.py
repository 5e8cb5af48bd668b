"""xgrammar's XML parameter styles (``json_schema`` with ``style``), side by side with xgrammar
0.2.9: for each style and several schemas, the strings each style's writer makes
(``tests/grammar/xml_style_writers.py``) and mutations of them are accepted here exactly when
xgrammar accepts them, and the token masks agree along random walks on the kit's Qwen3
vocabulary.
"""

from __future__ import annotations

import json
import random
from typing import Any, Dict, List, Tuple

import pytest

from agentgrammar import Grammar, StructuralTagError
from tests.grammar.xml_style_writers import DSML, M3, QUOTE, write

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

STYLES = ["qwen_xml", "minimax_xml", "glm_xml", "deepseek_xml", "deepseek_v4_1_xml", "kimi_k3_xml",
          "cohere_xml", "gemma", "minimax_m3_xml"]  # fmt: skip

# (schema, arguments to write); strings that stress the raw layout: markup, quotes, line breaks.
CASES: Dict[str, Tuple[Dict[str, Any], List[Dict[str, Any]]]] = {
    "plain": (
        {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
         "ok": {"type": "boolean"}}, "required": ["name", "age"]},
        [{"name": "Bob", "age": 3}, {"name": 'a <b> "c"\n</x>', "age": -12, "ok": True}, {"name": "", "age": 0}],
    ),
    "bounded": (
        {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
         "unit": {"enum": ["c", "f"]}, "days": {"type": "integer"}}, "required": ["city"]},
        [{"city": "Oslo"}, {"city": "Paris", "unit": "f", "days": 2}, {"city": "", "unit": "c"}],
    ),
    "pattern": (
        {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
         "note": {"type": "string"}}, "required": ["code"]},
        [{"code": "OSL"}, {"code": "ABC", "note": "x > y"}],
    ),
    "nested": (
        {"type": "object", "properties": {"loc": {"type": "object", "properties": {"lat": {"type": "number"},
         "name": {"type": "string"}}, "required": ["lat"]}, "tags": {"type": "array", "items": {"type": "string"}}},
         "required": ["loc"]},
        [{"loc": {"lat": 1.5}}, {"loc": {"lat": -2, "name": "N"}, "tags": ["a", "b c"]}, {"loc": {"lat": 0}, "tags": []}],
    ),
    "optional": (
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}},
        [{}, {"a": "x"}, {"b": 2.5}, {"a": "y", "b": 1}],
    ),
}  # fmt: skip
# xgrammar refuses these (constrained strings in minimax_m3_xml): both must.
REFUSED = {("minimax_m3_xml", "bounded"), ("minimax_m3_xml", "pattern")}
END_MARKERS = ["</parameter>", "</arg_value>", f"</{DSML}parameter>", "<|close|>argument<|sep|>",
               "</cofl:value>", QUOTE, M3, '"', "<", ">", "{", "}", ",", ":", "\n", " ", "x", "1", "[", "]"]  # fmt: skip


def _tag(style: str, schema: Dict[str, Any], **options: Any) -> Dict[str, Any]:
    return {
        "type": "structural_tag",
        "format": {"type": "json_schema", "json_schema": schema, "style": style, **options},
    }


def _mutations(text: str, rng: random.Random, n: int) -> List[str]:
    out = []
    for _ in range(n):
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(4)
        if op == 0 and text:
            j = min(len(text), i + rng.randrange(1, 4))
            out.append(text[:i] + text[j:])
        elif op == 1:
            out.append(text[:i] + rng.choice(END_MARKERS) + text[i:])
        elif op == 2:
            out.append(text[:i])
        else:
            j = min(len(text), i + rng.randrange(1, 12))
            out.append(text[:i] + text[i:j] + text[i:])
    return out


def _pair(style: str, schema: Dict[str, Any], **options: Any) -> Tuple[Grammar, Any]:
    tag = _tag(style, schema, **options)
    return Grammar.from_structural_tag(tag), xgr.Grammar.from_structural_tag(json.dumps(tag))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("style", STYLES)
def test_accepts_what_xgrammar_accepts(style: str, case: str) -> None:
    schema, arg_sets = CASES[case]
    if (style, case) in REFUSED:
        with pytest.raises(RuntimeError, match="minimax_m3_xml"):
            xgr.Grammar.from_structural_tag(json.dumps(_tag(style, schema)))
        with pytest.raises(StructuralTagError):
            Grammar.from_structural_tag(_tag(style, schema))
        return
    ours, theirs = _pair(style, schema)
    rng = random.Random(f"{style}/{case}")
    rejected = 0
    for args in arg_sets:
        for trial in range(3):
            text = write(style, schema, args, rng, ws=trial > 0)
            assert _is_grammar_accept_string(theirs, text), f"the writer is wrong for xgrammar: {text!r}"
            assert ours.accepts(text), f"{style}/{case}: refused {text!r}"
            for bad in _mutations(text, rng, 25):
                expected = _is_grammar_accept_string(theirs, bad)
                rejected += not expected
                assert ours.accepts(bad) == expected, f"{style}/{case}: {bad!r}: xgrammar says {expected}"
    assert rejected > 0


@pytest.mark.parametrize("style", [s for s in STYLES if s not in ("gemma", "minimax_m3_xml")])
def test_any_order_accepts_what_xgrammar_accepts(style: str) -> None:
    schema, arg_sets = CASES["plain"]
    ours, theirs = _pair(style, schema, any_order=True)
    rng = random.Random(style)
    for args in arg_sets:
        for order in (list(args), list(reversed(list(args)))):
            reordered = {"properties": {k: schema["properties"][k] for k in order}}
            text = write(style, reordered, args, rng)
            for s in [text, *_mutations(text, rng, 20)]:
                assert ours.accepts(s) == _is_grammar_accept_string(theirs, s), f"{style}: {s!r}"


EDGE_SCHEMAS = [
    {"type": "object", "properties": {"m": {"enum": ["a", 1, None]}, "h": {"type": ["string", "null"]},
     "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "z": {"type": "null"}}},
    {"type": "object", "properties": {"d": {"type": "string", "format": "date"}, "k": {"type": "string", "minLength": 2}}},
    {"type": "object", "properties": {"r": {"$ref": "#/$defs/R"}}, "required": ["r"], "$defs": {"R": {"type": "string"}}},
    {"type": "object", "properties": {"q": {}, "o": {"type": "object"}, "l": {"type": "array"}}},
    {"type": "object"},
]  # fmt: skip
EDGE_TEXTS = ["a", "1", "null", " 1 ", "2019-12-13", "  ab ", "x\n", '"s"', "[1, 2]", '{"a": 1}', "", "{}", "[]",
              "<cofl:value type=\"raw\">v</cofl:value>", '<cofl:value name="k" type="json">1</cofl:value>']  # fmt: skip


@pytest.mark.parametrize("style", [s for s in STYLES if s != "minimax_m3_xml"])
@pytest.mark.parametrize("index", range(len(EDGE_SCHEMAS)))
def test_edge_schemas_accept_what_xgrammar_accepts(style: str, index: int) -> None:
    """Unions, constants, formats, refs, schemas without constraints: each value text in each
    property's element, as the writer's template for the style spells it."""
    schema = EDGE_SCHEMAS[index]
    ours, theirs = _pair(style, schema)
    keys = list(schema.get("properties", {})) or ["k"]
    checked = 0
    rng = random.Random(index)
    for key in keys:
        for value in EDGE_TEXTS:
            for flag in ("true", "false"):
                texts = _element_texts(style, key, value, flag)
                for text in texts:
                    assert ours.accepts(text) == _is_grammar_accept_string(theirs, text), f"{style}: {text!r}"
                    checked += 1
    assert checked and rng


def _element_texts(style: str, key: str, value: str, flag: str) -> List[str]:
    if style == "gemma":
        return [f"{{{key}:{value}}}", f"{{{key}:{QUOTE}{value}{QUOTE}}}"]
    if style == "cohere_xml":
        return [
            f'<cofl:value name="{key}" type="{t}">{value}</cofl:value>'
            for t in ("raw", "json", "dict", "list")
        ]
    if style == "kimi_k3_xml":
        return [f'<|open|>argument key="{key}" type="{t}"<|sep|>{value}<|close|>argument<|sep|>'
                for t in ("string", "number", "null")]  # fmt: skip
    return [write(style, {"properties": {key: {"type": "string"}}}, {key: value}, random.Random(0), ws=False)
            .replace('string="true"', f'string="{flag}"')]  # fmt: skip


def test_qwen_xml_layout_example() -> None:
    schema = CASES["plain"][0]
    g = Grammar.from_structural_tag(_tag("qwen_xml", schema))
    assert g.accepts("<parameter=name>Bob</parameter>\n<parameter=age>\n3\n</parameter>\n")
    assert not g.accepts('<parameter=name>"Bob"</parameter><parameter=age>"3"</parameter>')
    assert not g.accepts("<parameter=age>3</parameter><parameter=name>Bob</parameter>")


def test_styles_refuse_excludes_and_non_object_schemas() -> None:
    for style in ("cohere_xml", "minimax_m3_xml"):  # as xgrammar: no excludes there
        with pytest.raises(StructuralTagError, match="excludes"):
            Grammar.from_structural_tag(_tag(style, CASES["plain"][0], excludes=["x"]))
        with pytest.raises(RuntimeError, match="excludes"):
            xgr.Grammar.from_structural_tag(json.dumps(_tag(style, CASES["plain"][0], excludes=["x"])))
    with pytest.raises(StructuralTagError, match="whitespace"):
        Grammar.from_structural_tag(_tag("qwen_xml", CASES["plain"][0], excludes=["x "]))
    with pytest.raises(StructuralTagError, match="object schema"):
        Grammar.from_structural_tag(_tag("glm_xml", {"type": "string"}))
    with pytest.raises(StructuralTagError, match="without constraints"):
        Grammar.from_structural_tag(_tag("minimax_m3_xml", {"type": "object", "properties": {"q": {}}}))


@pytest.fixture(scope="module")
def qenv() -> Any:
    from tests.grammar.test_structural_tag_builtin import qwen3_env

    return qwen3_env()  # skips, naming the path, without the kit


@pytest.mark.parametrize("case", ["plain", "nested"])
@pytest.mark.parametrize("style", STYLES)
def test_masks_equal_xgrammar_on_a_token_walk(qenv: Any, style: str, case: str) -> None:
    from tests.engine.test_xgrammar_differential import differential_walk

    schema = CASES[case][0]
    tag = _tag(style, schema)
    ours = qenv.compiler.compile(Grammar.from_structural_tag(tag))
    theirs = qenv.xcompiler.compile_grammar(xgr.Grammar.from_structural_tag(json.dumps(tag)))
    steps = sum(
        differential_walk(qenv, ours, theirs, seed, steps=40, label=f"{style}/{case}") for seed in range(2)
    )
    assert steps > 2


def test_gemma_excludes_accept_what_xgrammar_accepts() -> None:
    """Gemma 4's builtin tag forbids its channel and call markers inside strings."""
    excludes = ["<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>"]
    schema, arg_sets = CASES["nested"]
    ours, theirs = _pair("gemma", schema, excludes=excludes)
    rng = random.Random(7)
    for args in arg_sets:
        text = write("gemma", schema, args, rng)
        for i in range(len(text)):
            for word in excludes:
                bad = text[:i] + word + text[i:]
                assert ours.accepts(bad) == _is_grammar_accept_string(theirs, bad), bad
    with pytest.raises(StructuralTagError, match="whitespace"):
        Grammar.from_structural_tag(_tag("gemma", schema, excludes=[" x"]))


# Kimi-K3's builtin markers, and words that meet names, constants and JSON escapes.
EXCLUDES = ["<|open|>", "<|close|>", "<|sep|>", "ag", "f", "\\n", "Bo"]
FLAT = [s for s in STYLES if s not in ("cohere_xml", "minimax_m3_xml", "gemma")]
EXCLUDE_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "tag": {"type": "integer"}, "unit": {"enum": ["c", "f", "bf"]},
    "city": {"type": "string", "maxLength": 4}, "code": {"type": "string", "pattern": "^[a-z]+$"},
    "loc": {"type": "object", "properties": {"n": {"type": "string"}}, "additionalProperties": {"type": "string"}},
    "tags": {"type": "array", "items": {"type": "string"}}, "any": {}},
    "required": ["name"]}  # fmt: skip
EXCLUDE_ARGS = [{"name": "Ann"}, {"name": 'a "q"\n<x>', "unit": "c", "city": "Oslo", "code": "abc"},
                {"name": "x", "loc": {"n": "a\nb", "more": "q"}, "tags": ["t", 'u"v'], "any": {"k": [1]}}]  # fmt: skip


@pytest.mark.filterwarnings("ignore:the length bounds")  # checked in test_json_schema_excludes.py
@pytest.mark.parametrize("style", ["json", *FLAT])
def test_excludes_in_strings_accept_what_xgrammar_accepts(style: str) -> None:
    """Excluded words never in a string as written (escapes included: "\\n" is excluded), nor
    in a property name; a constant holding one is dropped, a length bound is ignored, a
    pattern is matched alone (and the excluded "ag" drops the declared property "tag")."""
    ours, theirs = _pair(style, EXCLUDE_SCHEMA, excludes=EXCLUDES)
    rng = random.Random(style)
    texts = [json.dumps(a) if style == "json" else write(style, EXCLUDE_SCHEMA, a, rng) for a in EXCLUDE_ARGS]
    assert all(_is_grammar_accept_string(theirs, t) for t in texts[:1]), texts[0]
    for text in texts:
        cuts = sorted(rng.sample(range(len(text) + 1), min(12, len(text) + 1)))
        for i in cuts:
            for word in [*EXCLUDES, "c", "ab", "\\u0041", "Oslo+"]:
                bad = text[:i] + word + text[i:]
                assert ours.accepts(bad) == _is_grammar_accept_string(theirs, bad), f"{style}: {bad!r}"
        assert ours.accepts(text) == _is_grammar_accept_string(theirs, text), f"{style}: {text!r}"


MALFORMED = [
    {"type": "object", "properties": {"a": {"enum": 5}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5},
    {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
    {"type": "string"},
]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("index", range(len(MALFORMED)))
def test_malformed_schemas_raise_structural_tag_errors_with_a_path(style: str, index: int) -> None:
    with pytest.raises(StructuralTagError) as caught:
        Grammar.from_structural_tag(_tag(style, MALFORMED[index]))
    assert caught.value.path is not None and caught.value.path.startswith("$.format.json_schema")
