"""Inputs found by ``tools/fuzz.py``, kept as regression tests.

The contract: every input either succeeds or raises an ``AgentGrammarError`` (never another
exception, a crash or a hang). Findings that are still open bugs are ``xfail(strict=True)`` with
the bug described; when one is fixed the test passes unexpectedly and the mark must go.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from agentgrammar import (
    AgentGrammarError,
    Compiler,
    Grammar,
    Matcher,
    SchemaError,
    StructuralTagError,
    TokenIdError,
    Vocabulary,
    VocabularyError,
)
from agentgrammar.engine._native import lib


def shallow(call: Callable[[], Any]) -> Any:
    """``call()``, with a RecursionError re-raised from here: pytest takes seconds to process the
    thousand-frame traceback of the original."""
    try:
        return call()
    except RecursionError as e:
        raise RecursionError(f"{e} (re-raised from a deep traceback)") from None


def contract(call: Callable[[], Any]) -> None:
    """``call()`` succeeds or raises AgentGrammarError; anything else fails the test."""
    try:
        shallow(call)
    except AgentGrammarError:
        pass


def matcher_for(ebnf: str, tokens: list, stop: list, vocab_size: int, **kw: Any) -> Matcher:
    vocab = Vocabulary(tokens, stop_token_ids=stop, vocab_size=vocab_size)
    return Matcher(Compiler(vocab).compile(Grammar.from_ebnf(ebnf)), **kw)


# --------------------------------------------------------------------------- found, then fixed
# (each was a strict xfail until its fix)


@pytest.mark.parametrize("vocab_type", ["raw", "byte_level", "byte_fallback"])
def test_vocabulary_lone_surrogate_token(vocab_type: str) -> None:
    with pytest.raises(VocabularyError):
        Vocabulary(["a", "\ud800", "</s>"], vocab_type=vocab_type, stop_token_ids=[2])


def test_from_huggingface_lone_surrogate_token() -> None:
    class Tok:
        eos_token_id = 1

        def get_vocab(self) -> dict:
            return {"a": 0, "</s>": 1, "\ud800x": 2}

    contract(lambda: Vocabulary.from_huggingface(Tok()))


@pytest.mark.parametrize(
    "tag",
    [
        {"type": "const_string", "value": "\ud800"},
        '{"type": "tag", "begin": "\\ud800", "content": {"type": "any_text"}, "end": "x"}',
    ],
)
def test_structural_tag_lone_surrogate(tag: Any) -> None:
    with pytest.raises(StructuralTagError):
        Grammar.from_structural_tag(tag)


@pytest.mark.parametrize("call", ["accept_token", "rollback", "stop_token_ids"])
def test_token_ids_beyond_int32(call: str) -> None:
    vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+'))
    with pytest.raises(TokenIdError):
        if call == "stop_token_ids":
            Matcher(compiled, stop_token_ids=[2**31])
        else:
            getattr(Matcher(compiled), call)(2**31)


def test_matcher_stop_token_in_padding_is_masked_off() -> None:
    try:
        matcher = matcher_for('root ::= "a"+', ["a", "b", "</s>"], [2], 40, stop_token_ids=[5])
    except AgentGrammarError:
        return  # refusing the id is a fine fix
    matcher.accept_token(0)
    assert 5 not in matcher.allowed_token_ids()


def test_json_schema_long_pattern_dfa_to_ir() -> None:
    contract(lambda: Grammar.from_json_schema({"type": "object", "propertyNames": {"pattern": "a{1000}"}}))


@pytest.mark.parametrize("key", ["items", "properties", "anyOf"])
def test_json_schema_deep_dict(key: str) -> None:
    schema: Any = {"type": "string"}
    for _ in range(1000):
        if key == "items":
            schema = {"type": "array", "items": schema}
        elif key == "properties":
            schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
        else:
            schema = {"anyOf": [schema, {"type": "null"}]}
    with pytest.raises(SchemaError):
        shallow(lambda: Grammar.from_json_schema(schema))


def test_json_schema_deep_json_text() -> None:
    with pytest.raises(SchemaError):
        shallow(lambda: Grammar.from_json_schema("[" * 5000 + "]" * 5000))


@pytest.mark.parametrize("options", [{}, {"lenient": True}])
def test_json_schema_ref_cycle_through_subpath(options: dict) -> None:
    schema = {
        "$defs": {"a": {"$ref": "#/$defs/a/properties/x", "properties": {"x": {"$ref": "#/$defs/a"}}}},
        "$ref": "#/$defs/a",
    }
    contract(lambda: Grammar.from_json_schema(schema, **options))


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"type": "string", "minLength": 2}], "minLength": [1]},
        {"allOf": [{"type": "object"}], "properties": [1]},
    ],
)
def test_json_schema_malformed_keyword_merged_with_all_of(schema: dict) -> None:
    contract(lambda: Grammar.from_json_schema(schema))


@pytest.mark.parametrize(
    "schema", [{"$ref": "#", "maximum": 1}, {"allOf": [{"$ref": "#"}, {"type": "string"}]}]
)
def test_json_schema_root_self_ref_with_sibling(schema: dict) -> None:
    contract(lambda: Grammar.from_json_schema(schema))


def test_json_schema_max_properties_1000() -> None:
    contract(lambda: Grammar.from_json_schema({"type": "object", "minProperties": 1, "maxProperties": 1000}))


@pytest.mark.slow
def test_json_schema_huge_max_length() -> None:
    contract(lambda: Grammar.from_json_schema({"type": "string", "maxLength": 10**400}))


def test_json_schema_non_string_pattern_in_one_of() -> None:
    contract(lambda: Grammar.from_json_schema({"oneOf": [True, {"pattern": 5}]}))


def test_json_schema_malformed_contains_merged_into_any_of() -> None:
    contract(
        lambda: Grammar.from_json_schema(
            {"anyOf": [{"type": "null"}, {"oneOf": [False, True]}], "contains": "s"}
        )
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "minItems": None, "maxItems": 3},
        {"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 5, "type": 5}]},
        {"type": "object", "if": False},
        {"anyOf": [{"type": "string"}, {"type": "null"}], "properties": [{"type": "string"}]},
        {"allOf": [{"type": "string"}, {"maxLength": 5}], "maxLength": [1]},
    ],
)
def test_json_schema_malformed_keyword_values(schema: dict) -> None:
    contract(lambda: Grammar.from_json_schema(schema))


def test_regex_named_escape_with_surrogate() -> None:
    contract(lambda: Grammar.from_regex("\\N{BULL\ud800ET}"))


def _at_depth(n: int, call: Callable[[], Any]) -> Any:
    """``call()`` from ``n`` Python frames further down the stack."""
    return call() if n == 0 else _at_depth(n - 1, call)


@pytest.mark.parametrize("kind", ["regex", "ebnf"])
def test_nesting_limit_deep_in_the_stack(kind: str) -> None:
    if kind == "regex":
        text = "(" * 201 + "a" + ")" * 201
        _at_depth(250, lambda: contract(lambda: Grammar.from_regex(text)))
    else:
        text = "root ::= " + "(" * 201 + '"a"' + ")" * 201
        _at_depth(250, lambda: contract(lambda: Grammar.from_ebnf(text)))


def _rule_chain(n: int) -> str:
    lines = [f'r{i} ::= r{i + 1} | "x"' for i in range(n)] + [f'r{n} ::= "y"']
    return "\n".join(lines).replace("r0 ::=", "root ::=", 1)


# A chain of nested rules used to cost about n**2.8 for its first mask (completions scanned the
# whole origin set: 1,000 rules took 1.5 s, 4,000 took 76 s); an index of the waiting items of
# large sets makes it quadratic (2,000 rules: about 0.4 s). The mask must be right; a hang
# coming back would show as this test never finishing (speed lives in tools/bench.py).
@pytest.mark.slow
def test_rule_chain_mask() -> None:
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    compiler = Compiler(vocab)
    allowed = Matcher(compiler.compile(Grammar.from_ebnf(_rule_chain(2000)))).allowed_token_ids()
    assert allowed and all(0 <= t < 256 for t in allowed)


# --------------------------------------------------------------------------- fixed / refused properly


def test_rule_chain_small_is_fine() -> None:
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    ids = Matcher(Compiler(vocab).compile(Grammar.from_ebnf(_rule_chain(100)))).allowed_token_ids()
    assert ids == [ord("x"), ord("y")]


@pytest.mark.slow
def test_deeply_nested_structural_tag_hits_the_dfa_limit() -> None:
    """Found as a 'slow' input (4-7 s): ~50 nested optional/star/plus/tag formats, which the C
    core's determinization limit refused (AG_DFA_MAX_SET_WORDS) while ``plus`` was two copies of
    its content; one looping copy now (ag_nfa_plus), it builds. Either way: the contract."""
    fmt: Any = {"type": "const_string", "value": "v"}
    kinds = ["optional", "star", "plus", "tag", "tag", "star", "optional", "plus"]
    for i in range(54):
        k = kinds[i % len(kinds)]
        fmt = (
            {"type": "tag", "begin": "<a>", "content": fmt, "end": ""}
            if k == "tag"
            else {"type": k, "content": fmt}
        )
    g = Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    contract(lambda: Compiler(vocab).compile(g))


def test_large_but_valid_inputs_keep_the_contract() -> None:
    """Inputs near the limits that the fuzzers produced: refused cleanly or accepted."""
    contract(lambda: Grammar.from_ebnf('root ::= "a"{2147483648}'))
    contract(lambda: Grammar.from_ebnf("root ::= " + "(" * 201 + '"a"' + ")" * 201))
    contract(lambda: Grammar.from_regex("(" * 201 + "a" + ")" * 201))
    contract(lambda: Grammar.from_json_schema({"type": "integer", "minimum": 10**400}))
    contract(
        lambda: Grammar.from_json_schema(
            {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
        )
    )
    contract(lambda: Grammar.from_json_schema({"type": "array", "items": {"$ref": "#"}}))
    # Past the old unroll limit: counted, not unrolled, so it compiles to a few states.
    m = Matcher(
        Compiler(Vocabulary(["a", "</s>"], stop_token_ids=[1])).compile(
            Grammar.from_ebnf('root ::= "a"{0,100001}')
        )
    )
    assert m.accept_tokens([0] * 100001) and not m.accept_token(0) and m.accept_token(1)


def test_matcher_argument_errors() -> None:
    """Out-of-range ids and rollbacks raise AgentGrammarError subclasses; wrong masks BitmaskError."""
    from agentgrammar import BitmaskError

    matcher = matcher_for('root ::= "a"+', ["a", "b", "</s>"], [2], 40)
    with pytest.raises(TokenIdError):
        matcher.accept_token(-1)
    with pytest.raises(AgentGrammarError):
        matcher.rollback(5)
    with pytest.raises(BitmaskError):
        matcher.fill_next_token_bitmask(np.zeros((1, 1), dtype=np.int64))
    assert matcher.accept_token(3) is False  # a padding id: never allowed


def test_jump_forward_through_a_huge_ambiguous_counted_repeat() -> None:
    """Fuzzer finding: past two copies of ':}' the grammar forces 100,000 more, and each
    forced byte scanned an Earley set holding one item per live count (quadratic: the
    65,536-byte jump-forward never finished). Jump-forward now stops past a work bound
    with the prefix found so far, which is still forced."""
    src = 'root ::= ":}" | root* root{ 100000 , 165535 } root root*'
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    m = Matcher(Compiler(vocab).compile(Grammar.from_ebnf(src)))
    assert m.accept_string(":}:}")
    forced = m.find_jump_forward_string()
    assert forced and forced == ":}" * (len(forced) // 2) + ":" * (len(forced) % 2)
    assert m.accept_string(forced)


def test_structural_tag_of_deeply_nested_optional_repeats_builds_small() -> None:
    """Fuzzer finding (slow, 2.4 s): 100 nested tags, optionals, stars and pluses around free
    text. Each ``plus`` was built as two copies of its content, so every DFA state of the rule
    held many NFA states and the state-set bound (AG_DFA_MAX_SET_WORDS) refused it after about a
    second; built as one looping copy (ag_nfa_plus), it is a few hundred states."""
    kinds = (
        "ttttptottoootttspspppsooptspstsppottsostotttttotto"
        "tsottppsottptooospopsttttptsttttotstsstspttstptttt"
    )  # outermost first: t tag, o optional, s star, p plus
    node: Any = {"type": "any_text"}
    for k in reversed(kinds):
        if k == "t":
            node = {"type": "tag", "begin": "<a>", "content": node, "end": "</a>"}
        else:
            node = {"type": {"o": "optional", "s": "star", "p": "plus"}[k], "content": node}
    vocab = Vocabulary([b"a", b"<", b">", b"/", b"</s>"], stop_token_ids=[4])
    compiled = Compiler(vocab).compile(Grammar.from_structural_tag(node))
    assert lib.ag_grammar_num_states(compiled._grammar_handle) < 1000
    tags = kinds.count("t")
    for text, valid in (
        ("<a>" * tags + "hi" + "</a>" * tags, True),  # every repeat once
        ("<a>" * tags + "hi" + "</a>" * (tags - 1), False),
        ("</a>", False),
    ):
        m = Matcher(compiled)
        assert (m.accept_string(text) and m.is_completed()) == valid, text
