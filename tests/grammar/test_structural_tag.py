"""Structural tags: the same texts as xgrammar accepts, bit-identical masks along walks, and
clear errors with JSON paths."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from agentgrammar import Grammar, StructuralTagError
from agentgrammar import structural_tag as st
from agentgrammar.grammar.ir import Embed, Literal, Repeat, RuleRef, Seq, TagDispatch

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string as xgr_accepts  # noqa: E402

from tests.engine.test_xgrammar_differential import differential_walk, env  # noqa: E402, F401


def tag(begin: str, content: Dict[str, Any], end: Any) -> Dict[str, Any]:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def const(value: str) -> Dict[str, Any]:
    return {"type": "const_string", "value": value}


def schema(properties: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"type": "object", "properties": properties, "required": required},
    }


WEATHER = schema({"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, ["city"])
ADD = schema({"a": {"type": "integer"}, "b": {"type": "number"}}, ["a", "b"])
T = [tag("<t>", const("X"), "</t>")]
CALLS = [
    tag('<tool_call>{"name": "weather", "arguments": ', WEATHER, "}</tool_call>"),
    tag('<tool_call>{"name": "add", "arguments": ', ADD, "}</tool_call>"),
]

CASES: List[Any] = [
    ({"type": "triggered_tags", "triggers": ["<t>"], "tags": T, "at_least_one": True},
     ["", "a", "<t>X</t>", "a<t>X</t>", "<t>X</t>b", "<t>X</t><t>X</t>"]),
    ({"type": "triggered_tags", "triggers": ["<t>"], "tags": T, "stop_after_first": True},
     ["", "a", "<t>X</t>", "a<t>X</t>", "<t>X</t>b", "<t>X</t><t>X</t>"]),
    ({"type": "triggered_tags", "triggers": ["<t>"], "tags": T, "stop_after_first": True, "at_least_one": True},
     ["", "a", "<t>X</t>", "a<t>X</t>", "<t>X</t>b"]),
    ({"type": "triggered_tags", "triggers": ["<t>"], "tags": T, "excludes": ["</s>"]},
     ["a</s>", "a</s", "<t>X</t></s>", "<t>X</s></t>", "x<t>X</t>y<t", "<t<t>X</t>"]),
    (tag("<think>", {"type": "any_text"}, "</think>"),
     ["<think></think>", "<think>a</think>", "<think>a</think>b</think>", "<think>a</thin</think>", "<think>"]),
    ({"type": "any_text", "excludes": ["ab"]}, ["", "a", "ab", "xaby", "b a", "aab"]),
    ({"type": "sequence", "elements": [{"type": "any_text"}, const("END")]}, ["END", "aEND", "aENDbEND", "aEN"]),
    ({"type": "tags_with_separator", "tags": T, "separator": ","},
     ["", "<t>X</t>", "<t>X</t>,<t>X</t>", "<t>X</t>,"]),
    ({"type": "tags_with_separator", "tags": T, "separator": ",", "at_least_one": True}, ["", "<t>X</t>"]),
    ({"type": "tags_with_separator", "tags": T, "separator": ",", "stop_after_first": True},
     ["", "<t>X</t>", "<t>X</t>,<t>X</t>"]),
    ({"type": "dispatch", "rules": [["<a>", const("1")], ["<b>", const("2")]]},
     ["", "x<a>1y", "<a>2", "<b>2<a>1", "x<a", "<a>1<a>"]),
    ({"type": "dispatch", "rules": [["<a>", const("1")]], "loop": False}, ["", "x<a>1", "x<a>1y", "x<a>1<a>1"]),
    ({"type": "triggered_tags", "triggers": ["<t"], "tags": [tag("<ta>", const("1"), "</ta>"), tag("<tb>", const("2"), "</tb>")]},
     ["<ta>1</ta>", "<tb>2</tb>", "<tc>", "x<t", "x<ta>1</ta>y"]),
    ({"type": "regex", "pattern": "a+b"}, ["ab", "aab", "b"]),
    ({"type": "grammar", "grammar": 'root ::= "x" "y"*'}, ["x", "xyy", "y"]),
    ({"type": "repeat", "min": 1, "max": 2, "content": const("a")}, ["", "a", "aa", "aaa"]),
    ({"type": "repeat", "min": 2, "max": -1, "content": const("a")}, ["", "a", "aa", "aaaaa"]),
    (tag("<a>", {"type": "any_text", "excludes": ["</"]}, "</a>"), ["<a>x</a>", "<a>x</b</a>", "<a></a>", "<a><</a>", "<a>x</"]),
    (tag("<a>", {"type": "any_text", "excludes": ["x<", "/a"]}, "</a>"), ["<a>x</a>", "<a>x<</a>", "<a>/a</a>", "<a>/</a>"]),
    (tag("<a>", {"type": "any_text", "excludes": ["</"]}, ["</a>", "<end>"]), ["<a>q</a>", "<a>q<end>", "<a>q</b<end>"]),
    (tag("<a>", {"type": "any_text", "excludes": ["ab"]}, "aab"), ["<a>aab", "<a>aaab", "<a>abaab", "<a>b"]),
    (tag("", {"type": "any_text", "excludes": ["<think>", "</think>"]}, "</think>"),
     ["x</think>", "</think>", "<think></think>", "a</thinkb</think>", "<thin</think>", "x</think>y", "x"]),
    (tag("<a>", {"type": "any_text", "excludes": ["x</a>", "q"]}, "</a>"), ["<a>x</a>", "<a>xx</a>", "<a>q</a>", "<a></a>"]),
    # an exclude that begins the end (Kimi-K3's "<|close|>" before "<|close|>think<|sep|>")
    (tag("<a>", {"type": "any_text", "excludes": ["<|c|>", "<|o|>"]}, "<|c|>t<|s|>"),
     ["<a>x<|c|>t<|s|>", "<a><|c|>t<|s|>", "<a>x<|c|>y", "<a>x<|o|><|c|>t<|s|>", "<a>x<|c<|c|>t<|s|>",
      "<a><|c|<|c|>t<|s|>", "<a>x<|c|>t<|s|>z", "<a>x<|c|>t<|s", "<a>x<|c|>t<|c|>t<|s|>"]),
    (tag("<a>", {"type": "any_text", "excludes": ["<|c|>", "q<|c|>", "<|c|>t"]}, "<|c|>t<|s|>"),
     ["<a>x<|c|>t<|s|>", "<a>q<|c|>t<|s|>", "<a>q<|c|t<|s|>"]),
    # the same with a prefix that has a border ("aba"): an occurrence may run into the end
    (tag("<a>", {"type": "any_text", "excludes": ["aba"]}, "abaX"), ["<a>ababaX", "<a>abaX", "<a>xabaX", "<a>abX"]),
    ({"type": "or", "elements": [const("a"), const("b")]}, ["a", "b", "ab", ""]),
    ({"type": "optional", "content": const("a")}, ["", "a", "aa"]),
    ({"type": "plus", "content": const("ab")}, ["", "ab", "abab", "aba"]),
    ({"type": "star", "content": const("ab")}, ["", "ab", "abab", "aba"]),
    ({"type": "plus", "content": {"type": "repeat", "min": 100001, "max": 100033, "content": {"type": "any_text"}}},
     ["", "x", "any text <a>"]),
    ({"type": "sequence", "elements": [{"type": "repeat", "min": 0, "max": 0, "content": {"type": "any_text"}}, const("a")]},
     ["a", "xa", ""]),
    ({"type": "plus", "content": {"type": "any_text", "excludes": ["ab"]}}, ["", "a", "ab", "xaby"]),
    (tag("<t>", {"type": "any_text"}, ["</t>", "<end>"]), ["<t>a</t>", "<t>a<end>", "<t>a", "<t>a</t>b<end>"]),
    ({"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": CALLS},
     ['Hi <tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call> ok',
      '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2.5}}</tool_call>',
      '<tool_call>{"name": "add", "arguments": {"a": 1.5, "b": 2}}</tool_call>',
      '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2, "c": 3}}</tool_call>',
      '<tool_call>{"name": "weather", "arguments": {"unit": "c"}}</tool_call>',
      '<tool_call>{"name": "nope", "arguments": {}}</tool_call>']),
    (schema({"a": {"type": "integer"}}, []), ['{"a": 1}', '{"a": -0}', '{}', '{"b": 1}', " {}", '{ "a" :1 }']),
    ({"type": "json_schema", "json_schema": {"type": "object"}}, ['{"q": 1}', "{}", "[]"]),
    ({"type": "json_schema", "json_schema": {"properties": {"a": {"type": "integer"}}}}, ['{"a": 1}', "3"]),
]  # fmt: skip


def _xgrammar(fmt: Dict[str, Any]) -> Any:
    return xgr.Grammar.from_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))


@pytest.mark.parametrize("fmt, texts", CASES, ids=[f"{c[0]['type']}-{i}" for i, c in enumerate(CASES)])
def test_accepts_what_xgrammar_accepts(fmt: Dict[str, Any], texts: List[str]) -> None:
    ours, theirs = Grammar.from_structural_tag(fmt), _xgrammar(fmt)
    for text in texts:
        assert ours.accepts(text) == xgr_accepts(theirs, text), text


def test_an_exclude_holding_the_end_is_dropped_and_the_text_stays_one_tag_dispatch() -> None:
    # Qwen-3's builtin think block: content runs to the first "</think>", so it never holds
    # that exclude; kept, it would clash with the end and the text become parser-checked rules.
    grammar = Grammar.from_structural_tag(
        tag("", {"type": "any_text", "excludes": ["<think>", "</think>"]}, "</think>")
    )
    rules = list(grammar.rules)
    for rule in rules:  # the think text is an embedded part, the same in every request
        if isinstance(rule.body, Embed):
            rules.extend(rule.body.grammar.rules)
    texts = [r.body for r in rules if isinstance(r.body, TagDispatch)]
    assert [(t.stop_str, t.excludes) for t in texts] == [((b"</think>",), (b"<think>",))]
    assert [r.name for r in rules if not isinstance(r.body, (Embed, TagDispatch, RuleRef))] == []


def test_an_exclude_that_begins_the_end_stops_the_text_and_the_rest_of_the_end_follows() -> None:
    # Kimi-K3's builtin think block. Written as a byte automaton instead, each mask after a "<"
    # in the think text was worked out by the parser token by token (15 ms on Llama-3.2).
    end = "<|close|>think<|sep|>"
    grammar = Grammar.from_structural_tag(
        tag("", {"type": "any_text", "excludes": ["<|open|>", "<|close|>"]}, end)
    )
    (root,) = grammar.rules
    assert isinstance(root.body, Seq) and root.body.items[1] == Literal(b"think<|sep|>")
    text = root.body.items[0]  # the text is an embedded part, the same in every request
    assert isinstance(text, Embed)
    assert [
        (r.body.stop_str, r.body.excludes) for r in text.grammar.rules if isinstance(r.body, TagDispatch)
    ] == [((b"<|close|>",), (b"<|open|>",))]
    assert len(text.grammar.rules) == 2  # the dispatch and its root: no byte automaton
    assert grammar.accepts("a <b> c " + end) and grammar.accepts(end)
    assert not grammar.accepts("a <|close|> " + end) and not grammar.accepts("a <|open|> " + end)
    assert not grammar.accepts("a" + end + "b" + end)


def _first_end_language(text: str, end: str, excludes: List[str]) -> bool:
    """xgrammar's semantics of a tag's any_text: content up to the first end, holding no
    exclude (an occurrence running into the end is allowed)."""
    at = text.find(end)
    return at >= 0 and at + len(end) == len(text) and not any(x in text[:at] for x in excludes)


@pytest.mark.parametrize(
    "end, excludes",
    [("<c>t", ["<c>"]), ("<c>t", ["<c>", "<o"]), ("abc", ["ab", "b"]), ("abc", ["a", "cab"]), ("aab", ["aa"]),
     ("aba", ["ab"]), ("abab", ["aba"]), ("ab", ["a", "b"])],
)  # fmt: skip
def test_any_text_up_to_an_end_its_excludes_clash_with_is_the_first_end_language(
    end: str, excludes: List[str]
) -> None:
    # every text over the words' characters up to 7 long, against the definition
    grammar = Grammar.from_structural_tag(tag("", {"type": "any_text", "excludes": excludes}, end))
    alphabet = sorted(set(end + "".join(excludes)) | {"z"})
    texts = [""]
    for _ in range(7):
        texts = [t + c for t in texts for c in alphabet]
        for text in texts:
            assert grammar.accepts(text) == _first_end_language(text, end, excludes), text


def test_a_repeat_of_free_text_without_excludes_is_that_text_written_once() -> None:
    # Counted, the copies would split the text in every way: accepting a token grew with the
    # text written (a fuzzer's plus of 100,001 copies: tens of ms a token after 40 tokens).
    text: Dict[str, Any] = {"type": "any_text"}
    for fmt in (
        {"type": "plus", "content": {"type": "repeat", "min": 100001, "max": 100033, "content": text}},
        {"type": "star", "content": {"type": "optional", "content": text}},
        {"type": "repeat", "min": 3, "max": -1, "content": text},
    ):
        rules = Grammar.from_structural_tag(fmt).rules
        assert [type(r.body) for r in rules] == [RuleRef, TagDispatch], fmt
    # an exclude may be spelled across two copies ("a" then "b"): the repeat stays
    repeated = Grammar.from_structural_tag(
        {"type": "plus", "content": {"type": "any_text", "excludes": ["ab"]}}
    )
    assert type(repeated.rules[0].body) is Repeat
    assert repeated.accepts("ab")


def test_models_dicts_and_json_text_are_the_same() -> None:
    model = st.StructuralTag(
        format=st.TriggeredTags(
            triggers=["<t>"], tags=[st.Tag(begin="<t>", content=st.ConstString(value="X"), end="</t>")]
        )
    )
    as_dict = model.model_dump()
    for form in (model, as_dict, json.dumps(as_dict), as_dict["format"]):
        g = Grammar.from_structural_tag(form)
        assert g.accepts("a<t>X</t>b") and not g.accepts("a<t>Y</t>")


def test_calls_among_other_tags_share_their_tail_and_the_others_stay() -> None:
    """Two calls with JSON arguments and a free-text tag behind one trigger: the calls' shared
    tail (">") moves into their parts, the free-text tag is kept as it is; converting the same
    model again (the calls found per tag) gives the same grammar."""
    model = st.StructuralTag(
        format=st.TriggeredTags(
            triggers=["<f="],
            tags=[
                st.Tag(begin="<f=a>", content=st.JSONSchema(json_schema={"type": "integer"}), end="</f>"),
                st.Tag(begin="<f=b>", content=st.JSONSchema(json_schema={"type": "boolean"}), end="</f>"),
                st.Tag(begin="<f=c>", content=st.AnyText(), end="</f>"),
            ],
        )
    )
    first, again = Grammar.from_structural_tag(model), Grammar.from_structural_tag(model)
    assert first.to_bytes() == again.to_bytes() and len(first.parts) == 2
    assert all(p.rules[0].body.items[0] == Literal(b">") for p in first.parts)
    for g in (first, again):
        assert g.accepts("x<f=a>12</f>y<f=c>hi there</f><f=b>true</f>")
        assert not g.accepts("<f=a>true</f>") and not g.accepts("<f=d>1</f>") and not g.accepts("<f=b>1</f>")


def test_split_calls_come_with_what_each_stage_would_find_of_them() -> None:
    """The pieces of split calls carry their references, normalization and parts, filled in
    when made: the same as the stages work out for the same expressions unmarked."""
    from agentgrammar.grammar import pieces
    from agentgrammar.grammar.ir import Seq, _embeds_in
    from agentgrammar.grammar.normalize import normal_already
    from agentgrammar.grammar.validate import _check_expr

    args = [Grammar.from_json_schema({"type": "integer"}), Grammar.from_regex("[ab]+")]
    tags = [
        st.Tag(begin=f"<f={n}>", content=st.GrammarText(grammar=g), end="</f>") for n, g in zip("xy", args)
    ]
    g = Grammar.from_structural_tag(st.TriggeredTags(triggers=["<f="], tags=tags))
    calls = next(r.body for r in g.rules if r.name.startswith("tag")).items
    assert len(calls) == 2
    for call in calls:
        info, plain = pieces.info(call), Seq(tuple(call.items))  # an equal expression, no piece
        refs: List[str] = []
        _check_expr(plain, "tag", refs)
        assert info.refs == tuple(refs) == ()
        assert info.unchanged is normal_already(plain, False) is True
        assert info.embeds == tuple(_embeds_in([plain])) == (call.items[1].grammar,)
    assert g.accepts("a<f=x>12</f>b<f=y>ab</f>") and not g.accepts("<f=y>12</f>")


def test_a_text_tag_no_trigger_opens_is_a_part_every_request_shares() -> None:
    """A think block before the calls is the same in every request: it converts to one part,
    so the second request's matcher finds the classes of the think block's states that the
    first request's walked, and walks only what comes after it."""
    from agentgrammar import Compiler, Matcher, Vocabulary

    think = st.Tag(begin="<think>", content=st.AnyText(), end="</think>")

    def request(name: str) -> Grammar:
        call = st.Tag(begin="<call>", content=st.ConstString(value=name), end="</call>")
        return Grammar.from_structural_tag(
            st.StructuralTag(
                format=st.Sequence(elements=[think, st.TriggeredTags(triggers=["<call>"], tags=[call])])
            )
        )

    first, second = request("alpha"), request("beta")
    shared = [p for p in first.parts if p in second.parts]
    assert len(shared) == 1 and shared[0].accepts("<think>why not</think>")
    assert not shared[0].accepts("<think>a</think>b") and not shared[0].accepts("<thin")
    pieces = ["<", "think", ">", "</", "think>", "why", " not", "<call>", "alpha", "beta", "</call>", "\n"]
    compiler = Compiler(Vocabulary([*pieces, "</s>"], stop_token_ids=[len(pieces)]), background=False)
    before = {}
    for grammar, name in ((first, "alpha"), (second, "beta")):
        compiled = compiler.compile(grammar)
        matcher = Matcher(compiled)
        before[name] = compiled.cache_stats.walked
        for text in ("<", "think", ">", "why", " not", "</", "think>"):
            matcher.allowed_token_ids()
            assert matcher.accept_string(text), text
        before[name] = compiled.cache_stats.walked - before[name]
        assert matcher.accept_string(f"<call>{name}</call>") and matcher.is_completed()
        assert not Matcher(compiled).accept_string("<think>a</think>b<call>gamma</call>")
    assert before["alpha"] > 0 and before["beta"] == 0, before


@pytest.mark.parametrize("at_least_one", [False, True])
def test_the_same_tags_in_another_order_make_the_same_grammar(at_least_one: bool) -> None:
    """A choice's alternatives are put in the order of their begins, so the same calls
    offered in another order convert to the same grammar (the same bytes), which a Compiler
    hands back compiled, its token-mask cache warm; the language is the one given."""
    from agentgrammar import Compiler, Matcher, Vocabulary

    names = ["zeta", "alpha", "mid", "beta"]

    def request(order: List[str]) -> Grammar:
        calls = [st.Tag(begin=f"<call={n}>", content=st.ConstString(value=n), end="</call>") for n in order]
        tags = st.TriggeredTags(triggers=["<call="], tags=calls, at_least_one=at_least_one)
        return Grammar.from_structural_tag(st.StructuralTag(format=tags))

    grammars = [request(names), request(names[::-1]), request(sorted(names))]
    assert grammars[0].to_bytes() == grammars[1].to_bytes() == grammars[2].to_bytes()
    for g in grammars:
        assert all(g.accepts(f"<call={n}>{n}</call>") for n in names)
        assert not g.accepts("<call=zeta>alpha</call>")
    pieces = ["<call=", *names, "</call>", ">"]
    compiler = Compiler(Vocabulary([*pieces, "</s>"], stop_token_ids=[len(pieces)]))
    first = compiler.compile(grammars[0])
    assert compiler.compile(grammars[1]) is first
    assert Matcher(first).accept_string("<call=mid>mid</call>")


def test_grammar_text_may_hold_a_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GrammarText holding a Grammar converts to that very grammar (no printing, no parsing)
    and dumps as its EBNF text, which converts to the same language."""
    inner = Grammar.from_ebnf('root ::= "x" ("," "y")*')
    tag = st.Tag(begin="<a>", content=st.GrammarText(grammar=inner), end="</a>")
    monkeypatch.setattr(Grammar, "from_ebnf", lambda *a, **k: pytest.fail("the text was parsed"))
    g = Grammar.from_structural_tag(tag)
    assert g.parts == (inner,)
    monkeypatch.undo()
    dumped = tag.model_dump()
    assert dumped["content"]["grammar"] == str(inner)
    assert json.loads(tag.model_dump_json())["content"]["grammar"] == str(inner)
    again = Grammar.from_structural_tag(dumped)
    for text in ("<a>x</a>", "<a>x,y,y</a>", "<a>y</a>", "<a>x,</a>"):
        assert g.accepts(text) == again.accepts(text) == (text in ("<a>x</a>", "<a>x,y,y</a>"))
    with pytest.raises(StructuralTagError):
        Grammar.from_structural_tag({"type": "grammar", "grammar": 3})


@pytest.mark.parametrize(
    "fmt, path, words",
    [
        ({"type": "tagg"}, "$.format", "does not match"),
        ({"type": "sequence", "elements": [const("a"), {"type": "const_string"}]}, "$.format.elements[1].value", "required"),
        ({"type": "triggered_tags", "triggers": ["<a>"], "tags": [tag("<b>", const("x"), "</b>")]},
         "$.format.tags[0].begin", "none of the triggers"),
        ({"type": "triggered_tags", "triggers": ["<a", "<ab"], "tags": [tag("<ab>", const("x"), "</ab>")]},
         "$.format.tags[0].begin", "two triggers"),
        ({"type": "triggered_tags", "triggers": ["<a>", "<b>"], "tags": [tag("<a>", const("x"), "</a>")]},
         "$.format.triggers[1]", "begins none of the tags"),
        ({"type": "regex", "pattern": "(a"}, "$.format.pattern", ""),
        ({"type": "repeat", "min": 3, "max": 1, "content": const("a")}, "$.format", "larger than max"),
        ({"type": "sequence", "elements": [{"type": "json_schema", "json_schema": {"type": "string", "format": "regex"}}]},
         "$.format.elements[0].json_schema", "format"),
    ],
)  # fmt: skip
def test_errors_name_the_json_path(fmt: Dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(StructuralTagError) as info:
        Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    assert info.value.path == path and words in str(info.value)


def test_not_json_is_an_error() -> None:
    with pytest.raises(StructuralTagError, match="not valid JSON"):
        Grammar.from_structural_tag("{oops")


@pytest.mark.parametrize("shape", ["deep", "cyclic"])
def test_a_schema_too_deep_to_key_is_a_schema_error(shape: str) -> None:
    from agentgrammar.errors import SchemaError
    from agentgrammar.grammar.structural_tag import compact_schema_grammar

    schema: Dict[str, Any] = {"type": "array"}
    if shape == "deep":  # past Python's recursion limit: json.dumps raised RecursionError here
        inner = schema
        for _ in range(3000):
            inner["items"] = {"type": "array"}
            inner = inner["items"]
    else:
        schema["items"] = schema
    with pytest.raises(SchemaError, match="nests more than"):
        compact_schema_grammar(schema, (", ", ": "))


# ---- masks, bit for bit ----------------------------------------------------------------------

MASK_TAGS = [
    ("tool_calls", {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": CALLS}),
    ("think_then_calls", {"type": "sequence", "elements": [
        tag("<think>", {"type": "any_text"}, "</think>"),
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": CALLS, "excludes": ["<think>"]}]}),
    ("separated", {"type": "tags_with_separator", "tags": CALLS, "separator": "\n", "at_least_one": True}),
    ("dispatch", {"type": "dispatch", "rules": [["<a>", ADD], ["<b>", const("done")]], "excludes": ["<c>"]}),
    ("exclude_in_end", {"type": "sequence", "elements": [
        tag("<think>", {"type": "any_text", "excludes": ["</", "<tool"]}, "</think>"), const("ok")]}),
    ("nested", tag("<x>", {"type": "or", "elements": [{"type": "repeat", "min": 0, "max": 3, "content": const("ab")},
                                                     {"type": "optional", "content": WEATHER}]}, "</x>")),
]  # fmt: skip


@pytest.mark.parametrize("name, fmt", MASK_TAGS, ids=[n for n, _ in MASK_TAGS])
def test_masks_equal_xgrammar(env, name: str, fmt: Dict[str, Any]) -> None:  # noqa: F811
    ours = env.compiler.compile(Grammar.from_structural_tag(fmt))
    theirs = env.xcompiler.compile_grammar(_xgrammar(fmt))
    for seed in (0, 1):
        differential_walk(env, ours, theirs, seed, steps=40, label=name)


# ---- xgrammar's own model templates ----------------------------------------------------------

OPENAI_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}},
]  # fmt: skip
MODELS = ["qwen_3", "llama", "deepseek_r1", "kimi", "harmony"]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_xgrammar_model_templates_give_identical_masks(env, model: str, tool_choice: str) -> None:  # noqa: F811
    """The structural tags xgrammar builds for its model families compile here to the same masks."""
    tag = xgr.get_model_structural_tag(model, tools=OPENAI_TOOLS, tool_choice=tool_choice).model_dump()
    ours = env.compiler.compile(Grammar.from_structural_tag(tag))
    theirs = env.xcompiler.compile_grammar(xgr.Grammar.from_structural_tag(json.dumps(tag)))
    differential_walk(env, ours, theirs, seed=MODELS.index(model), steps=40, label=f"{model}/{tool_choice}")


def test_xml_styles_compile_and_unknown_styles_are_refused_with_a_path() -> None:
    tag = xgr.get_model_structural_tag("qwen_3_coder", tools=OPENAI_TOOLS).model_dump()
    call = "hmm</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>"
    theirs = xgr.Grammar.from_structural_tag(json.dumps(tag))
    assert xgr_accepts(theirs, call) and Grammar.from_structural_tag(tag).accepts(call)
    bad = {"type": "json_schema", "json_schema": {"type": "object"}, "style": "yaml"}
    with pytest.raises(StructuralTagError, match=r"\.style"):
        Grammar.from_structural_tag(bad)


def test_pieces_with_clashing_rule_names_stay_apart() -> None:
    """Two EBNF pieces both define a helper rule 'item' (and one named like the converter's own
    rules): each keeps its own meaning."""
    a = {"type": "grammar", "grammar": 'root ::= item item\nitem ::= "a"'}
    b = {"type": "grammar", "grammar": 'root ::= item dispatch\nitem ::= "b"\ndispatch ::= "!"'}
    fmt = {"type": "dispatch", "rules": [["<a>", a], ["<b>", b]]}
    g = Grammar.from_structural_tag(fmt)
    assert g.accepts("x<a>aa y<b>b!") and not g.accepts("<a>ab") and not g.accepts("<b>a!")
    again = Grammar.from_structural_tag(fmt)  # from the piece cache
    assert again.accepts("<b>b!<a>aa") and not again.accepts("<b>bb")
