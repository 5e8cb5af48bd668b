"""``Grammar.accepts`` runs the engine's ``accepts``, wired by the package root: the grammar
layer does not import the engine."""

from __future__ import annotations

import agentgrammar  # noqa: F401  (the root wires Grammar.accepts)
from agentgrammar import Grammar
from agentgrammar.engine.accept import accepts
from agentgrammar.engine.compiler import byte_compiler
from agentgrammar.grammar import grammar as grammar_module


def test_the_root_wires_the_engine_check() -> None:
    assert grammar_module._acceptor is accepts


def test_accepts_whole_texts_only() -> None:
    g = Grammar.from_regex("[0-9]+(\\.[0-9]+)?")
    assert accepts(g, "12.5") and accepts(g, b"7")
    assert not accepts(g, "12.") and not accepts(g, "") and not accepts(g, "1a")
    assert [g.accepts(t) for t in ("3", "3.", "3.1")] == [True, False, True]


def test_utf8_text_is_checked_byte_by_byte() -> None:
    g = Grammar.from_regex("[α-ω]+")
    assert g.accepts("αβ") and g.accepts("αβ".encode())
    assert not g.accepts("αβ".encode()[:-1])  # a character cut in half


def test_repeated_checks_reuse_the_compiled_grammar() -> None:
    g = Grammar.from_regex("ab+")
    assert g.accepts("abb")
    first = byte_compiler().compile(g)
    assert g.accepts("ab") and not g.accepts("a")
    assert byte_compiler().compile(g) is first
