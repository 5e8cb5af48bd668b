"""Whole-string acceptance over grammar IR for the grammar tests, backed by the reference matcher.

The grammar tests only need "is this string a sentence of these rules?"; the Earley
recognizer in ``tests/reference_matcher.py`` answers that independently of the engine.
"""

from __future__ import annotations

from typing import Iterable, Union

from agentgrammar.grammar.ir import Rule
from tests.reference_matcher import accepts


class IRMatcher:
    """Whole-string acceptance for ``rules`` rooted at ``root``."""

    def __init__(self, rules: Iterable[Rule], root: str = "root") -> None:
        self.rules = tuple(rules)
        self.root = root

    def matches(self, data: Union[str, bytes]) -> bool:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        return accepts((self.rules, self.root), data)


def matches(rules: Iterable[Rule], text: Union[str, bytes], root: str = "root") -> bool:
    return IRMatcher(rules, root).matches(text)
