"""The grammar never lets a model write a lone surrogate escape (``"\\ud800"``: no Unicode text,
which ``parse`` refuses and a tokenizer cannot take back), in any JSON string grammar; and
structural tags nested past what can be walked are a ``StructuralTagError``, not a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentgrammar import Grammar, StructuralTagError, Tool
from agentgrammar import structural_tag as st
from agentgrammar.formats import get
from agentgrammar.grammar.ir import Literal, Repeat, Rule, Seq
from agentgrammar.grammar.json_values import JSON_STRING_CHAR, string_expr
from agentgrammar.grammar.structural_tag import MAX_TAG_DEPTH, parse_structural_tag

LONE = [
    "\\ud800",
    "\\uDBFF",
    "\\udc00",
    "\\uDFFF",
    "\\ud83dx",
    "\\ud83d\\u0041",
    "\\ude00\\ud83d",
    "\\ud83d\\ud83d",
]
PAIRS = ["\\ud83d\\ude00", "\\uD83D\\uDE00", "\\udbff\\udfff", "\\uD800\\uDC00"]
OTHER_ESCAPES = [
    "\\u0000",
    "\\u00e9",
    "\\ud7ff",
    "\\ue000",
    "\\uffff",
    "\\uABCD",
    "\\uc000",
    "\\n",
    "\\\\ud800",
]


def _string_grammars() -> Any:
    string = Seq((Literal(b'"'), Repeat(JSON_STRING_CHAR, 0, None), Literal(b'"')))
    return [
        pytest.param(Grammar.builtin_json(any_value=True), lambda s: f"[{s}]", id="builtin_json"),
        pytest.param(Grammar.from_rules([Rule("root", string)]), lambda s: s, id="string_char"),
        pytest.param(Grammar.from_rules([Rule("root", string_expr())]), lambda s: s, id="string_expr"),
        pytest.param(Grammar.from_rules([Rule("root", string_expr(1, 9))]), lambda s: s, id="string_expr_bounded"),
        pytest.param(Grammar.from_json_schema({"type": "string"}), lambda s: s, id="schema_string"),
        pytest.param(Grammar.from_json_schema({}), lambda s: '{"a": [1, ' + s + "]}", id="schema_any"),
        pytest.param(Grammar.from_json_schema({"type": "object"}), lambda s: "{" + s + ": 1}", id="schema_key"),
    ]  # fmt: skip


@pytest.mark.parametrize("grammar, wrap", _string_grammars())
def test_json_strings_take_no_lone_surrogate_escape(grammar: Grammar, wrap: Any) -> None:
    for escape in LONE:
        assert not grammar.accepts(wrap(f'"a{escape}"')), escape
    for escape in PAIRS + OTHER_ESCAPES:
        assert grammar.accepts(wrap(f'"a{escape}b"')), escape


def test_every_string_the_builtin_grammar_takes_is_unicode_text() -> None:
    g = Grammar.builtin_json()
    for first in ["0", "7", "c", "d", "D", "e", "f"]:
        for second in "0123456789abcdefABCDEF":
            text = f'["\\u{first}{second}00"]'
            decoded = json.loads(text)[0]
            assert g.accepts(text) == (not 0xD800 <= ord(decoded) <= 0xDFFF), text


def test_a_tool_call_grammar_takes_no_lone_surrogate_escape() -> None:
    tool = Tool("echo", "Say it back.", {"type": "object", "properties": {"text": {"type": "string"}}})
    grammar = get("hermes").grammar([tool])
    ok = '<tool_call>\n{"name": "echo", "arguments": {"text": "\\ud83d\\ude00"}}\n</tool_call>'
    assert grammar.accepts(ok)
    assert not grammar.accepts(ok.replace("\\ude00", "x"))


# --------------------------------------------------------------------------- structural tags


def _deep_sequence(n: int) -> Any:
    f: Any = {"type": "const_string", "value": "a"}
    for _ in range(n):
        f = {"type": "sequence", "elements": [f]}
    return f


def _deep_schema(n: int) -> Any:
    schema: Any = {}
    for _ in range(n):
        schema = {"items": schema}
    return {"type": "json_schema", "json_schema": schema}


DEEP = 5000  # Python's json and pydantic recurse once or more per level: RecursionError before
DEEP_TEXTS = [
    "[" * DEEP + "]" * DEEP,
    '{"type": "json_schema", "json_schema": ' + '{"items": ' * DEEP + "{}" + "}" * (DEEP + 1),
    '{"type": "sequence", "elements": [' * DEEP + '{"type": "const_string", "value": "a"}' + "]}" * DEEP,
]


def _deep_list(n: int) -> Any:
    out: Any = []
    for _ in range(n):
        out = [out]
    return out


@pytest.mark.parametrize(
    "doc",
    [*DEEP_TEXTS, _deep_schema(DEEP), _deep_sequence(DEEP), _deep_list(DEEP)],
    ids=["text_array", "text_schema", "text_sequence", "dict_schema", "dict_sequence", "list"],
)
def test_deep_structural_tags_are_typed_errors(doc: Any) -> None:
    with pytest.raises(StructuralTagError, match=f"nests more than {MAX_TAG_DEPTH} levels"):
        Grammar.from_structural_tag(doc)


def test_cyclic_structural_tag_dict_is_a_typed_error() -> None:
    schema: Any = {"type": "array"}
    schema["items"] = schema
    with pytest.raises(StructuralTagError, match="nests"):
        Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema})


def test_deep_structural_tag_models_are_typed_errors() -> None:
    f: Any = st.ConstString(value="a")
    for _ in range(3000):
        f = st.Sequence(elements=[f])
    with pytest.raises(StructuralTagError, match="nests too deeply"):
        Grammar.from_structural_tag(f)


def test_structural_tags_within_the_depth_limit_still_work() -> None:
    assert MAX_TAG_DEPTH == 512
    schema = json.loads('{"items": ' * 100 + "{}" + "}" * 100)
    with pytest.raises(StructuralTagError, match="100 levels"):  # the schema front-end's own limit
        Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema})
    assert parse_structural_tag(json.dumps(_deep_sequence(50))).format.type == "sequence"
