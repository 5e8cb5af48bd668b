"""Shared parts (``Grammar._shared_part``): their C grammar is loaded once per process, kept by
the engine (not on the grammar) while the grammar lives, and bound by every compiler."""

from __future__ import annotations

import gc
import sys
from typing import Any, List

import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from agentgrammar.engine import shared_parts
from agentgrammar.grammar.ir import Embed, Literal, Rule, Seq
from agentgrammar.grammar.json_schema import json_schema_rules

TOKENS = ["<", ">", "x", "y", "</s>"]


def vocab() -> Vocabulary:
    return Vocabulary(TOKENS, stop_token_ids=[len(TOKENS) - 1])


def around(part: Grammar) -> Grammar:
    return Grammar.from_rules([Rule("root", Seq((Literal(b"<"), Embed(part), Literal(b">"))))])


def test_a_shared_part_is_loaded_once_for_every_compiler() -> None:
    part = Grammar._shared_part([Rule("value", Literal(b"xy"))], "value")
    one = Compiler(vocab()).compile(around(part))
    two = Compiler(vocab()).compile(around(part))
    assert one._parts[0]._grammar_handle == two._parts[0]._grammar_handle
    assert shared_parts._LOADED[id(part)][1] == one._parts[0]._grammar_handle
    for compiled in (one, two):  # both compilers' masks work over the one loaded grammar
        matcher = Matcher(compiled)
        assert matcher.accept_string("<xy>") and matcher.is_completed()


def test_an_unshared_part_is_loaded_by_each_compiler() -> None:
    part = Grammar.from_rules([Rule("value", Literal(b"xy"))], "value")
    one = Compiler(vocab()).compile(around(part))
    two = Compiler(vocab()).compile(around(part))
    assert one._parts[0]._grammar_handle != two._parts[0]._grammar_handle
    assert id(part) not in shared_parts._LOADED


def test_the_loaded_grammar_goes_with_its_grammar() -> None:
    part = Grammar._shared_part([Rule("value", Literal(b"x"))], "value")
    loads = []
    first = shared_parts.loaded_shared_part(part, lambda: loads.append(1) or "handle")
    again = shared_parts.loaded_shared_part(part, lambda: loads.append(2) or "other")
    assert (first, again, loads) == ("handle", "handle", [1])
    key = id(part)
    del part
    gc.collect()
    assert key not in shared_parts._LOADED


def test_a_grammar_collected_at_interpreter_exit_is_forgotten_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At exit the module's globals are cleared before the last grammars are collected: the
    callback printed "Exception ignored in: ... 'NoneType' object has no attribute 'get'"."""
    part = Grammar._shared_part([Rule("value", Literal(b"y"))], "value")
    shared_parts.loaded_shared_part(part, lambda: "handle")
    table, key = shared_parts._LOADED, id(part)
    monkeypatch.setattr(shared_parts, "_LOADED", None)  # as the interpreter's exit leaves it
    unraisable: List[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    del part
    gc.collect()
    assert unraisable == [] and key not in table


def test_a_grammar_holds_no_engine_state() -> None:
    part = Grammar._shared_part([Rule("value", Literal(b"x"))], "value")
    grammar = around(part)
    Compiler(vocab()).compile(grammar)
    assert grammar.accepts("<x>")
    slots = set(Grammar.__slots__)
    assert not slots & {"_kept", "_key", "_compiled_bytes"}
    assert part._shared and not grammar._shared


FORMAT_SCHEMA = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "format": "date-time"},
        "who": {"type": "string", "format": "email"},
    },
    "required": ["when", "who"],
}
FORMAT_VALUE = '{"when": "2020-02-29T10:00:00.5+01:00", "who": "jo.x@example.com"}'


def _masks_along(compiled, text: str) -> List[List[int]]:
    matcher = Matcher(compiled)
    out = []
    for i in range(len(text)):
        out.append(matcher.allowed_token_ids())
        assert matcher.accept_string(text[i]), text[: i + 1]
    out.append(matcher.allowed_token_ids())
    return out


def test_a_format_is_a_shared_part_with_the_masks_of_the_format_inline() -> None:
    from tests.engine.test_threads import make_vocab

    embedded = Grammar.from_json_schema(FORMAT_SCHEMA)
    other = Grammar.from_json_schema({"type": "array", "items": {"type": "string", "format": "email"}})
    inline = Grammar.from_rules(*json_schema_rules(FORMAT_SCHEMA))  # no parts: every rule its own
    assert not inline.parts and {p.root for p in embedded.parts} >= {
        "json_format_date_time",
        "json_format_email",
    }
    one, two = Compiler(make_vocab()), Compiler(make_vocab())
    compiled, again = one.compile(embedded), two.compile(other)
    handles = {p.grammar.root: p._grammar_handle for p in compiled._parts}
    # two schemas, two fresh compilers: one C grammar of email, loaded once
    assert [p._grammar_handle for p in again._parts if p.grammar.root == "json_format_email"] == [
        handles["json_format_email"]
    ]
    assert _masks_along(compiled, FORMAT_VALUE) == _masks_along(one.compile(inline), FORMAT_VALUE)
