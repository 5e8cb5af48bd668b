"""Shared parts (``Grammar._shared_part``): their C grammar is loaded once per process, kept by
the engine (not on the grammar) while the grammar lives, and bound by every compiler."""

from __future__ import annotations

import gc

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from agentgrammar.engine import shared_parts
from agentgrammar.grammar.ir import Embed, Literal, Rule, Seq

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


def test_a_grammar_holds_no_engine_state() -> None:
    part = Grammar._shared_part([Rule("value", Literal(b"x"))], "value")
    grammar = around(part)
    Compiler(vocab()).compile(grammar)
    assert grammar.accepts("<x>")
    slots = set(Grammar.__slots__)
    assert not slots & {"_kept", "_key", "_compiled_bytes"}
    assert part._shared and not grammar._shared
