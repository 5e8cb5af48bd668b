"""Token markers: grammar text that only one token of a marked vocabulary can write."""

from __future__ import annotations

import pickle

import pytest

from agentgrammar import (
    Compiler,
    Grammar,
    GrammarError,
    Matcher,
    StructuralTagError,
    Vocabulary,
    VocabularyError,
)
from agentgrammar import structural_tag as st
from agentgrammar.engine._native import lib
from agentgrammar.grammar.ir import ByteClass, Rule
from agentgrammar.grammar.token_markers import (
    encode_text,
    marker_bytes,
    markers_in_bytes,
    markers_in_text,
    plain_text,
    token_marker,
)

TOKENS = ["a", "b", "{", "}", "<call>", "</call>", b"\xff", "<", "call>", "</s>", "<end>", b"\xf5\xfe"]
A, B, LBRACE, RBRACE, CALL, END_CALL, FF, LT, CALL_TAIL, EOS, END, PRIVATE = range(12)


def _vocab() -> Vocabulary:
    return Vocabulary(TOKENS, stop_token_ids=[EOS, END], special_token_ids=[CALL, END_CALL])


def _calls_tag(begin: str = token_marker("<call>")) -> st.StructuralTag:
    call = st.Tag(
        begin=begin, content=st.JSONSchema(json_schema={"type": "object"}), end=st.Token(token="</call>")
    )
    return st.StructuralTag(format=st.TriggeredTags(triggers=[begin], tags=[call]))


def test_spelling_round_trips_and_holds_no_utf8_byte() -> None:
    spelled = marker_bytes("<|channel|>")
    assert spelled[0] == 0xFF and spelled[-1] == 0xFE
    assert all(b >= 0xF5 for b in spelled)  # no byte of UTF-8 text, so no text word inside it
    s = "x" + token_marker("<|channel|>") + "analysis" + token_marker("<|message|>")
    assert encode_text(s) == b"x" + spelled + b"analysis" + marker_bytes("<|message|>")
    assert markers_in_text(s) == ["<|channel|>", "<|message|>"]
    assert markers_in_bytes([encode_text(s)]) == {"<|channel|>", "<|message|>"}
    assert plain_text(s) == "x<|channel|>analysis<|message|>"


@pytest.mark.parametrize("bad", ["\ud800", "\udcff<open", "\udcff\udcfe", "a\udcfe"])
def test_other_lone_surrogates_are_refused(bad: str) -> None:
    with pytest.raises(UnicodeEncodeError):
        encode_text(bad)
    with pytest.raises(StructuralTagError, match="surrogate"):
        Grammar.from_structural_tag(st.ConstString(value=bad))


def test_vocabulary_marks_the_token_and_bans_every_other_0xff_token() -> None:
    v = _vocab().with_token_markers(["<call>", "</call>", "<end>"])
    assert v.token_bytes[CALL] == marker_bytes("<call>")
    kinds = v.token_kinds()
    assert kinds[CALL] == kinds[END_CALL] == kinds[END] == 0  # special and stop tokens become ordinary
    assert kinds[FF] == 1 and kinds[PRIVATE] == 0  # 0xFF banned; 0xF5 alone cannot start a marker
    assert v.stop_token_ids == (EOS,)
    assert set(v.token_markers) == {"<call>", "</call>", "<end>"}
    assert v.decode([A, CALL, END]) == b"a<call><end>"
    assert v.with_token_markers(["<call>"]) is v
    assert pickle.loads(pickle.dumps(v)).token_markers == v.token_markers
    with pytest.raises(VocabularyError, match="not one token"):
        v.with_token_markers(["<nope>"])
    assert _vocab().single_tokens(["<call>", "ab", "<end>", "<call>"]) == ["<call>", "<end>"]


def test_a_marker_is_written_only_as_its_token() -> None:
    v = _vocab().with_token_markers(["<call>", "</call>"])
    m = Matcher(Compiler(v).compile(Grammar.from_structural_tag(_calls_tag())))
    start = set(m.allowed_token_ids())
    assert CALL in start and END_CALL not in start and FF not in start
    assert m.accept_token(A) and m.accept_token(LT) and not m.accept_token(CALL_TAIL)  # not as text
    m.reset()
    for token in (A, CALL, LBRACE, RBRACE, END_CALL, B):
        assert m.accept_token(token), token
    assert m.is_completed()


def test_a_stop_token_as_a_marker_ends_the_grammar_exactly_there() -> None:
    v = _vocab().with_token_markers(["<end>"])
    tag = st.Tag(begin="", content=st.AnyText(), end=st.Token(token="<end>"))
    m = Matcher(Compiler(v).compile(Grammar.from_structural_tag(tag)))
    assert END in m.allowed_token_ids() and EOS not in m.allowed_token_ids()
    assert m.accept_token(A) and m.accept_token(END) and m.is_completed()


def test_a_trigger_is_cut_after_its_first_marker_and_an_end_after_its_own() -> None:
    # Free text excludes each marker, so a word holding one must end with it.
    v = _vocab().with_token_markers(["<call>", "</call>", "<end>"])
    g = Grammar.from_structural_tag(_calls_tag(token_marker("<call>") + "a"))
    m = Matcher(Compiler(v).compile(g))
    for token in (B, CALL, A, LBRACE, RBRACE, END_CALL):
        assert m.accept_token(token), token
    tag = st.Tag(begin="b", content=st.AnyText(), end=token_marker("<end>") + "a")
    m = Matcher(Compiler(v).compile(Grammar.from_structural_tag(tag)))
    for token in (B, A, END, A):
        assert m.accept_token(token), token
    assert m.is_completed()


def test_a_grammar_with_markers_needs_a_vocabulary_that_marks_them() -> None:
    g = Grammar.from_structural_tag(_calls_tag())
    with pytest.raises(GrammarError, match=r"with_token_markers\(\['</call>', '<call>'\]\)"):
        Compiler(_vocab()).compile(g)
    by_id = Grammar.from_structural_tag({"type": "token", "token": 5})  # marked by id, at compile time
    with pytest.raises(GrammarError, match=r"with_token_markers\(\[5\]\)"):
        Compiler(_vocab()).compile(by_id)
    with pytest.raises(StructuralTagError, match="id >= 0") as info:
        Grammar.from_structural_tag({"type": "token", "token": -1})
    assert info.value.path == "$.format.token"
    with pytest.raises(StructuralTagError, match="begin must be a string"):
        Grammar.from_structural_tag(
            {
                "type": "triggered_tags",
                "triggers": ["<call>"],
                "tags": [
                    {
                        "type": "tag",
                        "begin": {"type": "token", "token": "<call>"},
                        "content": {"type": "any_text"},
                        "end": "x",
                    }
                ],
            }
        )


def test_the_loader_says_which_grammars_may_write_markers() -> None:
    # the compiler walks a grammar's literals for markers only when its loader saw a 0xFF byte
    v = _vocab().with_token_markers(["<call>", "</call>"])
    marked = Compiler(v).compile(Grammar.from_structural_tag(_calls_tag()))
    plain = Compiler(v).compile(
        Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    )
    text = Compiler(v).compile(Grammar.from_ebnf("root ::= [\\x00-\\xff]+"))  # code points: UTF-8
    raw = Compiler(v).compile(Grammar.from_rules([Rule("root", ByteClass(((0xF0, 0xFF),)))]))
    assert lib.ag_grammar_holds_ff(marked._grammar_handle) == 1
    assert lib.ag_grammar_holds_ff(plain._grammar_handle) == 0
    assert lib.ag_grammar_holds_ff(text._grammar_handle) == 0
    assert lib.ag_grammar_holds_ff(raw._grammar_handle) == 1
