"""Inputs found by ``tools/fuzz.py``, kept as regression tests.

The contract: every input either succeeds or raises an ``AgentGrammarError`` (never another
exception, a crash or a hang). Findings that are still open bugs are ``xfail(strict=True)`` with
the bug described; when one is fixed the test passes unexpectedly and the mark must go.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import pytest

from agentgrammar import (
    AgentGrammarError,
    Compiler,
    Grammar,
    GrammarError,
    Matcher,
    SchemaError,
    StructuralTagError,
    TokenIdError,
    Vocabulary,
    VocabularyError,
)


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


# --------------------------------------------------------------------------- open bugs


@pytest.mark.xfail(
    strict=True,
    raises=UnicodeEncodeError,
    reason="Vocabulary: a str token holding a lone surrogate ('\\ud800') raises UnicodeEncodeError from "
    "engine/decoding.py (decode_tokens: token.encode('utf-8')) instead of VocabularyError",
)
@pytest.mark.parametrize("vocab_type", ["raw", "byte_level", "byte_fallback"])
def test_vocabulary_lone_surrogate_token(vocab_type: str) -> None:
    with pytest.raises(VocabularyError):
        Vocabulary(["a", "\ud800", "</s>"], vocab_type=vocab_type, stop_token_ids=[2])


@pytest.mark.xfail(
    strict=True,
    raises=UnicodeEncodeError,
    reason="Vocabulary.from_huggingface: a tokenizer whose get_vocab() has a lone-surrogate token raises "
    "UnicodeEncodeError (engine/decoding.py) instead of VocabularyError",
)
def test_from_huggingface_lone_surrogate_token() -> None:
    class Tok:
        eos_token_id = 1

        def get_vocab(self) -> dict:
            return {"a": 0, "</s>": 1, "\ud800x": 2}

    contract(lambda: Vocabulary.from_huggingface(Tok()))


@pytest.mark.xfail(
    strict=True,
    raises=UnicodeEncodeError,
    reason="Grammar.from_structural_tag: a lone surrogate in a string field (const_string value, tag begin; "
    "also reachable from JSON text '\\ud800') raises UnicodeEncodeError instead of StructuralTagError "
    "(grammar/structural_tag.py encodes with 'utf-8'); EBNF, regex and JSON Schema accept the same text",
)
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


@pytest.mark.xfail(
    strict=True,
    raises=OverflowError,
    reason="Matcher.accept_token / rollback / Matcher(stop_token_ids=...) with an int that does not fit in "
    "32 bits (2**31) raise cffi's OverflowError instead of TokenIdError (engine/matcher.py passes the "
    "int straight to the C call); -1 and other out-of-range ids give TokenIdError",
)
@pytest.mark.parametrize("call", ["accept_token", "rollback", "stop_token_ids"])
def test_token_ids_beyond_int32(call: str) -> None:
    vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+'))
    with pytest.raises(TokenIdError):
        if call == "stop_token_ids":
            Matcher(compiled, stop_token_ids=[2**31])
        else:
            getattr(Matcher(compiled), call)(2**31)


@pytest.mark.xfail(
    strict=True,
    reason="Matcher(stop_token_ids=[i]) with a padding id (num_tokens <= i < vocab_size) is accepted; the "
    "mask then allows that padding id and accept_token(i) terminates, although Vocabulary documents "
    "padding ids as always masked off (engine/matcher.py / csrc ag_matcher_new check only vocab_size)",
)
def test_matcher_stop_token_in_padding_is_masked_off() -> None:
    try:
        matcher = matcher_for('root ::= "a"+', ["a", "b", "</s>"], [2], 40, stop_token_ids=[5])
    except AgentGrammarError:
        return  # refusing the id is a fine fix
    matcher.accept_token(0)
    assert 5 not in matcher.allowed_token_ids()


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema: a string pattern with a long chain of states used where a CharDFA is built "
    "(propertyNames / contains / not with pattern 'a{1000}') raises RecursionError from the mutual "
    "recursion ref() -> body() in grammar/char_dfa.py CharDFA.to_ir (one level per DFA state); "
    "via 'contains' or 'not' it also takes 15-40 s before failing",
)
def test_json_schema_long_pattern_dfa_to_ir() -> None:
    contract(lambda: Grammar.from_json_schema({"type": "object", "propertyNames": {"pattern": "a{1000}"}}))


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema: a schema dict nested ~1000 levels (items/properties/anyOf/additionalProperties) "
    "raises RecursionError from json.dumps in grammar/json_schema.py _Converter.sub (the memo key) "
    "before the 100-level limit (_MAX_LEVEL) is checked; 'not' is refused properly",
)
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


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema given as JSON text nested 5000 levels: json.loads raises RecursionError, which "
    "grammar/json_schema.py _load does not turn into SchemaError (it catches ValueError only)",
)
def test_json_schema_deep_json_text() -> None:
    with pytest.raises(SchemaError):
        shallow(lambda: Grammar.from_json_schema("[" * 5000 + "]" * 5000))


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema: a $ref cycle through a sub-path of itself ('#/$defs/a' -> "
    "'#/$defs/a/properties/x' -> '#/$defs/a', with sibling keywords) recurses in "
    "grammar/json_schema.py deref()/merge() until RecursionError instead of SchemaError",
)
@pytest.mark.parametrize("options", [{}, {"lenient": True}])
def test_json_schema_ref_cycle_through_subpath(options: dict) -> None:
    schema = {
        "$defs": {"a": {"$ref": "#/$defs/a/properties/x", "properties": {"x": {"$ref": "#/$defs/a"}}}},
        "$ref": "#/$defs/a",
    }
    contract(lambda: Grammar.from_json_schema(schema, **options))


@pytest.mark.xfail(
    strict=True,
    raises=(TypeError, AttributeError),
    reason="JSON Schema: a malformed keyword value next to allOf (minLength: [1], properties: [1]) reaches "
    "grammar/json_schema.py merge() unchecked and raises TypeError ('>' between int and list) or "
    "AttributeError ('list' has no 'get') instead of SchemaError; alone the same values give SchemaError",
)
@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"type": "string", "minLength": 2}], "minLength": [1]},
        {"allOf": [{"type": "object"}], "properties": [1]},
    ],
)
def test_json_schema_malformed_keyword_merged_with_all_of(schema: dict) -> None:
    contract(lambda: Grammar.from_json_schema(schema))


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema: {'$ref': '#', 'maximum': 1} or {'allOf': [{'$ref': '#'}, {'type': 'string'}]} "
    "(a root self-reference merged with other keywords) recurses in grammar/json_schema.py deref()/merge() until RecursionError instead of SchemaError",
)
@pytest.mark.parametrize(
    "schema", [{"$ref": "#", "maximum": 1}, {"allOf": [{"$ref": "#"}, {"type": "string"}]}]
)
def test_json_schema_root_self_ref_with_sibling(schema: dict) -> None:
    contract(lambda: Grammar.from_json_schema(schema))


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema: {'type': 'object', 'minProperties': 1, 'maxProperties': 1000} raises "
    "RecursionError (grammar/json_schema.py counted members -> ir.fresh_name) instead of building the "
    "grammar or refusing it with SchemaError (_MAX_COUNTED_RULES)",
)
def test_json_schema_max_properties_1000() -> None:
    contract(lambda: Grammar.from_json_schema({"type": "object", "minProperties": 1, "maxProperties": 1000}))


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="JSON Schema: {'type': 'string', 'maxLength': 10**400} runs ~18 s and then raises RecursionError "
    "instead of a quick SchemaError (10**6 is fine)",
)
def test_json_schema_huge_max_length() -> None:
    contract(lambda: Grammar.from_json_schema({"type": "string", "maxLength": 10**400}))


@pytest.mark.xfail(
    strict=True,
    raises=TypeError,
    reason="JSON Schema: a non-string 'pattern' in a oneOf branch ({'oneOf': [True, {'pattern': 5}]}) is "
    "not validated before oneOf negates the branch: TypeError 'a pattern must be a str, not int' from "
    "grammar/json_values.py pattern_chars (via json_schema.py _pattern_dfa) instead of SchemaError; "
    "{'type': 'string', 'pattern': 5} alone gives SchemaError",
)
def test_json_schema_non_string_pattern_in_one_of() -> None:
    contract(lambda: Grammar.from_json_schema({"oneOf": [True, {"pattern": 5}]}))


@pytest.mark.xfail(
    strict=True,
    raises=TypeError,
    reason="JSON Schema: {'anyOf': [{'type': 'null'}, {'oneOf': [False, True]}], 'contains': 's'} (a "
    "malformed 'contains' merged into anyOf branches, one a oneOf of booleans) raises TypeError "
    "\"'bool' object is not iterable\" from grammar/json_schema.py merge() instead of SchemaError",
)
def test_json_schema_malformed_contains_merged_into_any_of() -> None:
    contract(
        lambda: Grammar.from_json_schema(
            {"anyOf": [{"type": "null"}, {"oneOf": [False, True]}], "contains": "s"}
        )
    )


@pytest.mark.xfail(
    strict=True,
    raises=(TypeError, AttributeError),
    reason="JSON Schema: keyword values of the wrong type are not validated everywhere; they reach "
    "grammar/json_schema.py (merge(), array(), ...) and raise TypeError / AttributeError instead of "
    "SchemaError: minItems None, 'type': 5 inside allOf, {'type': 'object', 'if': False} (a valid schema: "
    "'if' may be a boolean), "
    "properties as a list next to anyOf, maxLength as a list next to allOf",
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


@pytest.mark.xfail(
    strict=True,
    raises=UnicodeEncodeError,
    reason="Grammar.from_regex: a \\N{...} escape whose name holds a lone surrogate ('\\N{BULL\\ud800ET}') "
    "raises UnicodeEncodeError from unicodedata.lookup in grammar/regex.py code_point_escape (only "
    "KeyError is caught) instead of GrammarError",
)
def test_regex_named_escape_with_surrogate() -> None:
    contract(lambda: Grammar.from_regex("\\N{BULL\ud800ET}"))


def _at_depth(n: int, call: Callable[[], Any]) -> Any:
    """``call()`` from ``n`` Python frames further down the stack."""
    return call() if n == 0 else _at_depth(n - 1, call)


@pytest.mark.xfail(
    strict=True,
    raises=RecursionError,
    reason="EBNF / regex parsers: MAX_NESTING (200) is checked by recursive descent that spends ~4 "
    "frames per level, so it only protects callers near the bottom of the stack; called ~250 frames "
    "deep (e.g. a regex inside a deeply nested structural tag, found that way) 201 nested groups "
    "raise RecursionError instead of GrammarError (grammar/regex.py alternation/sequence/atom/group, "
    "grammar/ebnf.py)",
)
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


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason='performance: for a chain of n rules (r_i ::= r_{i+1} | "x") the first token mask costs '
    "about n**2.5 (n=400: 0.45 s, 800: 2.7 s, 1000: 5-7 s, 2000: over 20 s, on a 2-core box); the "
    "Earley prediction / mask cache in the C core (csrc/ag_earley.c, ag_mask_cache.c) is superlinear "
    "in the depth of nested rule references",
)
def test_rule_chain_mask_time() -> None:
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    compiler = Compiler(vocab)
    t0 = time.perf_counter()
    Matcher(compiler.compile(Grammar.from_ebnf(_rule_chain(1000)))).allowed_token_ids()
    assert time.perf_counter() - t0 < 2.0


# --------------------------------------------------------------------------- fixed / refused properly


def test_rule_chain_small_is_fine() -> None:
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
    ids = Matcher(Compiler(vocab).compile(Grammar.from_ebnf(_rule_chain(100)))).allowed_token_ids()
    assert ids == [ord("x"), ord("y")]


@pytest.mark.slow
def test_deeply_nested_structural_tag_hits_the_dfa_limit() -> None:
    """Found as a 'slow' input (4-7 s): ~50 nested optional/star/plus/tag formats; the C core's
    determinization limit refuses it with a GrammarError (AG_DFA_MAX_SET_WORDS)."""
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
    with pytest.raises(GrammarError):
        Compiler(Vocabulary(["a", "</s>"], stop_token_ids=[1])).compile(
            Grammar.from_ebnf('root ::= "a"{0,100001}')
        )


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
