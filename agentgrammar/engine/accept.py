"""Whether a grammar accepts a text: the engine side of ``Grammar.accepts``.

The grammar layer cannot import the engine (the engine builds on it), so the package root hands
this function to ``grammar.grammar.set_acceptor``; ``Grammar.accepts(text)`` calls it.

Example:
    >>> from agentgrammar import Grammar
    >>> accepts(Grammar.from_regex("a+b"), "aab"), accepts(Grammar.from_regex("a+b"), b"ab!")
    (True, False)
"""

from __future__ import annotations

from typing import Union

from ..grammar import Grammar
from .compiler import byte_compiler
from .matcher import Matcher

__all__ = ["accepts"]


def accepts(grammar: Grammar, text: Union[str, bytes]) -> bool:
    """True when ``text`` (UTF-8 for ``str``) is a complete sentence of ``grammar``, run by the
    C engine over a one-byte-per-token vocabulary. The shared byte compiler keeps the grammars
    it compiled recently (by content), so checking many texts compiles the grammar once."""
    matcher = Matcher(byte_compiler().compile(grammar))
    return matcher.accept_string(text) and matcher.is_completed()
