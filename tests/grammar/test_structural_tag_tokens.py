"""Token-level structural-tag formats (``token`` by id, ``exclude_token``, ``any_tokens``,
``token_triggered_tags``, ``token_dispatch``): what they accept on a small vocabulary, how they
refuse bad input, and their masks against xgrammar 0.2.9's token by token along walks on the
kit's Qwen3 vocabulary (special and stop tokens compared apart, as in the builtin-tag test)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, GrammarError, Matcher, StructuralTagError, Vocabulary
from agentgrammar.engine.compiler import token_markers_of
from agentgrammar.grammar.structural_tag import token_budgets


def T(t: Any) -> Dict[str, Any]:
    return {"type": "token", "token": t}


def S(v: str) -> Dict[str, Any]:
    return {"type": "const_string", "value": v}


# ---- a small vocabulary -----------------------------------------------------------------------

WORDS = ["<a>", "</a>", "x", "y", "</", "a>", "<", "</s>"]
A, END_A, X, Y, SLASH, A_GT, LT, EOS = range(8)


def _matcher(fmt: Dict[str, Any], **kw: Any) -> Matcher:
    g = Grammar.from_structural_tag(fmt)
    vocab = Vocabulary(WORDS, stop_token_ids=[EOS]).with_token_markers(token_markers_of(g))
    return Matcher(Compiler(vocab).compile(g), **kw)


def test_any_tokens_in_a_token_tag_runs_until_the_end_token() -> None:
    m = _matcher({"type": "tag", "begin": T("<a>"), "content": {"type": "any_tokens", "exclude_tokens": ["x"]},
                  "end": T("</a>")})  # fmt: skip
    assert m.allowed_token_ids() == [A]
    assert m.accept_tokens([A, Y, SLASH, A_GT])  # "</a>" written as text does not end it
    assert m.allowed_token_ids() == [A, END_A, Y, SLASH, A_GT, LT]  # x excluded
    assert not m.accept_token(X)
    assert m.accept_token(END_A) and m.allowed_token_ids() == [EOS]


def test_a_token_by_id_and_exclude_token() -> None:
    m = _matcher(
        {
            "type": "sequence",
            "elements": [T(A), {"type": "exclude_token", "exclude_tokens": [X, "y"]}, S("x")],
        }
    )
    assert m.accept_token(A)
    assert m.allowed_token_ids() == [A, END_A, SLASH, A_GT, LT]  # one token, any but x and y
    assert m.accept_token(LT) and m.allowed_token_ids() == [X]  # exactly one: then the text
    m.rollback(1)
    assert not m.accept_token(X) and m.accept_token(A_GT)


def test_exclude_token_in_a_tag_excludes_its_end_token() -> None:
    m = _matcher({"type": "tag", "begin": "x", "content": {"type": "exclude_token"}, "end": T("</a>")})
    assert m.accept_token(X) and END_A not in m.allowed_token_ids()
    assert m.accept_token(A) and m.allowed_token_ids() == [END_A]


def test_token_triggered_tags_and_token_dispatch() -> None:
    tag = {"type": "tag", "begin": T("<a>"), "content": S("y"), "end": T("</a>")}
    m = _matcher({"type": "token_triggered_tags", "trigger_tokens": ["<a>"], "tags": [tag],
                  "exclude_tokens": ["<"]})  # fmt: skip
    assert LT not in m.allowed_token_ids() and m.accept_tokens([X, SLASH, A_GT])
    assert m.accept_token(A) and m.allowed_token_ids() == [Y]
    assert m.accept_tokens([Y, END_A, X, EOS])
    first = _matcher({"type": "token_triggered_tags", "trigger_tokens": ["<a>"], "tags": [tag],
                      "at_least_one": True, "stop_after_first": True})  # fmt: skip
    assert first.allowed_token_ids() == [A] and first.accept_tokens([A, Y, END_A])
    assert first.allowed_token_ids() == [EOS]
    d = _matcher(
        {"type": "token_dispatch", "rules": [["<a>", S("y")]], "loop": False, "exclude_tokens": ["</a>"]}
    )
    assert END_A not in d.allowed_token_ids()
    assert d.accept_tokens([X, A, Y]) and d.allowed_token_ids() == [EOS]


def test_any_tokens_budget() -> None:
    fmt = {
        "type": "tag",
        "begin": T("<a>"),
        "content": {"type": "any_tokens", "max_tokens": 2},
        "end": T("</a>"),
    }
    m = _matcher(fmt, token_budgets=token_budgets(fmt))
    assert m.accept_tokens([A, X, Y]) and m.allowed_token_ids() == [END_A]


def test_token_formats_refuse_bad_input_with_a_path() -> None:
    bad = [
        ({"type": "token_triggered_tags", "trigger_tokens": ["<a>"], "tags": [
            {"type": "tag", "begin": "<a>", "content": S("y"), "end": "</a>"}]}, "$.format.tags[0].begin"),
        ({"type": "token_triggered_tags", "trigger_tokens": ["<a>"], "tags": [
            {"type": "tag", "begin": T("x"), "content": S("y"), "end": "</a>"}]}, "$.format.tags[0].begin"),
        ({"type": "token_dispatch", "rules": [["<a>", S("y")], ["<a>", S("x")]]}, "$.format.rules"),
        ({"type": "exclude_token", "exclude_tokens": [""]}, "$.format.exclude_tokens[0]"),
        ({"type": "any_tokens", "max_tokens": 3}, "$.format.max_tokens"),
    ]  # fmt: skip
    for fmt, path in bad:
        with pytest.raises(StructuralTagError) as info:
            Grammar.from_structural_tag(fmt)
        assert info.value.path == path, fmt
    with pytest.raises(GrammarError, match="not one token"):
        _matcher({"type": "exclude_token", "exclude_tokens": ["zz"]})


# ---- against xgrammar on Qwen3 ----------------------------------------------------------------

xgr = pytest.importorskip("xgrammar")

CALL = {"type": "tag", "begin": T("<tool_call>"), "content": {"type": "json_schema", "json_schema": {
    "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}, "end": T("</tool_call>")}  # fmt: skip
CASES = [
    ("any_tokens", {"type": "sequence", "elements": [
        {"type": "tag", "begin": T("<think>"), "content": {"type": "any_tokens", "exclude_tokens": ["<tool_call>"]},
         "end": T("</think>")}, S("ok")]}, "<think>hi <tool_call there</think>ok"),
    ("token_by_id", {"type": "sequence", "elements": [T(151667), S("a b"), T(151668)]}, "<think>a b</think>"),
    ("exclude_token", {"type": "sequence", "elements": [
        T("<think>"), {"type": "exclude_token", "exclude_tokens": ["</think>", 9707]}, {"type": "exclude_token"},
        T("</think>")]}, "<think> hello world</think>"),
    ("token_triggered_tags", {"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"], "tags": [CALL],
        "exclude_tokens": ["<think>"]}, 'Let me see. <tool_call>{"q": "x"}</tool_call> done'),
    ("token_triggered_first", {"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"], "tags": [CALL],
        "at_least_one": True}, '<tool_call>{"q": "x"}</tool_call> and'),
    ("token_triggered_once", {"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"], "tags": [CALL],
        "stop_after_first": True}, 'so <tool_call>{"q": "x"}</tool_call>'),
    ("token_dispatch", {"type": "token_dispatch", "rules": [["<tool_call>", S(" x")]],
        "exclude_tokens": ["</tool_call>"]}, "a <tool_call> x b <tool_call> x"),
    ("token_dispatch_once", {"type": "token_dispatch", "rules": [[151667, S("y")]], "loop": False}, "a<think>y"),
    ("tag_in_tag", {"type": "tag", "begin": "[", "content": {"type": "sequence", "elements": [
        {"type": "any_tokens"}, T("<tool_call>")]}, "end": T("</tool_call>")}, "[ a b<tool_call></tool_call>"),
]  # fmt: skip


@pytest.fixture(scope="module")
def qenv() -> Any:
    from tests.grammar.test_structural_tag_builtin import qwen3_env

    return qwen3_env()


_compilers: Dict[Any, Compiler] = {}


def marked_compiler(env: Any, grammar: Grammar) -> Compiler:
    """A compiler over the kit vocabulary marked for ``grammar``'s token markers (kept per set)."""
    markers = tuple(token_markers_of(grammar))
    if not markers:
        return env.compiler
    if markers not in _compilers:
        _compilers[markers] = Compiler(env.vocab.with_token_markers(markers))
    return _compilers[markers]


def compare_walk(env: Any, ours: Matcher, theirs: Any, ids: List[int], label: str) -> None:
    """Masks equal at every step along ``ids`` (special and stop tokens apart: ours allows no
    special token, and a stop token exactly when the grammar can end; a marked vocabulary's
    specials include the tokens holding a raw 0xFF byte, which only markers may write)."""
    V = env.vocab.vocab_size
    special = list(ours.compiled_grammar.vocabulary.special_token_ids)
    keep = np.ones(V, dtype=bool)
    keep[env.stops + special] = False
    marked = {i for ids in ours.compiled_grammar.vocabulary.token_markers.values() for i in ids}
    for step, t in enumerate([*ids, None]):
        a = np.zeros((1, (V + 31) // 32), dtype=np.int32)
        b = xgr.allocate_token_bitmask(1, V)
        ours.fill_next_token_bitmask(a)
        theirs.fill_next_token_bitmask(b)
        ab = np.unpackbits(a[0].view(np.uint8), bitorder="little")[:V].astype(bool)
        bb = np.unpackbits(b[0].numpy().view(np.uint8), bitorder="little")[:V].astype(bool)
        where = f"{label} step {step} before {env.tok.decode([t]) if t is not None else 'the end'!r}"
        diff = np.flatnonzero(keep & (ab != bb))
        # A marked token writes only its private spelling: xgrammar lets it spell its text
        # where text goes (inside a JSON string), this engine does not.
        text_only = set(diff) <= marked and not ab[diff].any()
        assert not len(diff) or text_only, f"{where}: masks differ at {diff[:8].tolist()}"
        assert not ab[special].any(), where
        assert ab[env.stops].tolist() == [ours.is_completed()] * len(env.stops), where
        assert ours.is_completed() == theirs.is_completed(), where
        if t is not None:
            assert ours.accept_token(t) and theirs.accept_token(t), where


@pytest.mark.parametrize("name, fmt, text", CASES, ids=[c[0] for c in CASES])
def test_token_formats_give_xgrammars_masks(qenv: Any, name: str, fmt: Dict[str, Any], text: str) -> None:
    grammar = Grammar.from_structural_tag(fmt)
    ours = Matcher(marked_compiler(qenv, grammar).compile(grammar))
    theirs = xgr.GrammarMatcher(
        qenv.xcompiler.compile_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))
    )
    ids = qenv.tok.encode(text, add_special_tokens=False)
    compare_walk(qenv, ours, theirs, ids, name)


BOUNDED = [
    ("max_chars", {"type": "sequence", "elements": [{"type": "any_text", "max_chars": 5}, S("!")]}, "héllo!"),
    ("end_empty_excludes", {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "excludes": ["x"]},
        "end": ""}, "<think>ab cd"),
    ("max_tokens_end_empty", {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_tokens": 3,
        "excludes": ["x"]}, "end": ""}, "<think>hi there you"),
]  # fmt: skip


@pytest.mark.parametrize("name, fmt, text", BOUNDED, ids=[c[0] for c in BOUNDED])
def test_bounded_free_text_gives_xgrammars_masks(
    qenv: Any, name: str, fmt: Dict[str, Any], text: str
) -> None:
    grammar = Grammar.from_structural_tag(fmt)
    ours = Matcher(qenv.compiler.compile(grammar), token_budgets=token_budgets(fmt))
    theirs = xgr.GrammarMatcher(
        qenv.xcompiler.compile_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))
    )
    compare_walk(qenv, ours, theirs, qenv.tok.encode(text, add_special_tokens=False), name)


def test_max_chars_refusals_name_the_path() -> None:
    for fmt, path in [
        ({"type": "any_text", "max_chars": 3, "excludes": ["x"]}, "$.format.max_chars"),
        ({"type": "tag", "begin": "a", "content": {"type": "any_text", "max_chars": 3}, "end": "b"},
         "$.format.content.max_chars"),
        # as xgrammar 0.2.9: free text without excludes needs a non-empty end, bounded or not
        ({"type": "tag", "begin": "a", "content": {"type": "any_text", "max_tokens": 3}, "end": ""}, "$.format.end"),
    ]:  # fmt: skip
        with pytest.raises(StructuralTagError) as info:
            Grammar.from_structural_tag(fmt)
        assert info.value.path == path


def test_a_tags_named_tokens_are_kept_per_tag_and_handed_out_as_copies() -> None:
    from agentgrammar.grammar.structural_tag.parse import parse_structural_tag
    from agentgrammar.grammar.structural_tag.text import _named_tokens

    inner = {"type": "tag", "begin": T("<b>"), "content": S("y"), "end": "</b>"}
    content = {
        "type": "token_triggered_tags",
        "trigger_tokens": ["<b>"],
        "tags": [inner],
        "exclude_tokens": ["x"],
    }
    tag = parse_structural_tag(
        {"type": "tag", "begin": T("<a>"), "content": content, "end": T("</a>")}
    ).format
    expected = {"<a>", "</a>", "<b>", "x"}  # markers, trigger and excluded tokens, nested ones too
    first = _named_tokens(tag)
    assert first == expected
    first.add("changed by a caller")
    assert _named_tokens(tag) == expected  # met again (a cached tool tag): the same answer
    assert _named_tokens([tag, {"not": "a model"}]) == expected
