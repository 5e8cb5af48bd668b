"""The exception hierarchy: every error agentgrammar raises derives from AgentGrammarError.

Example:
    >>> from agentgrammar import Grammar, GrammarError
    >>> try:
    ...     Grammar.from_ebnf('root ::= "a" | ')
    ... except GrammarError as e:
    ...     print(type(e).__name__)
    GrammarError
"""

from __future__ import annotations

from typing import Optional


class AgentGrammarError(Exception):
    """Base class of every error raised by agentgrammar."""


class GrammarError(AgentGrammarError, ValueError):
    """A grammar (EBNF, regex, IR) is malformed or cannot be compiled.

    ``line`` and ``column`` (1-based) point into the source text when known.
    """

    def __init__(self, message: str, *, line: Optional[int] = None, column: Optional[int] = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class VocabularyError(AgentGrammarError, ValueError):
    """A vocabulary or tokenizer cannot be used (bad tokens, sizes, ids)."""


class MatcherError(AgentGrammarError):
    """A matcher call is not allowed in the matcher's state (e.g. accepting after termination)."""


class TokenIdError(AgentGrammarError, IndexError):
    """A token id is outside the vocabulary."""


class BitmaskError(AgentGrammarError, ValueError):
    """A token bitmask has the wrong shape, dtype or device."""


class SchemaError(GrammarError):
    """A JSON Schema cannot be turned into a grammar exactly (an unsupported keyword, a malformed
    schema, a constraint the engine cannot express).

    ``keyword`` is the keyword at fault (when one is) and ``pointer`` its JSON pointer in the
    schema (``"#/properties/a/minContains"``).
    """

    def __init__(self, message: str, *, keyword: Optional[str] = None, pointer: Optional[str] = None) -> None:
        super().__init__(message)
        self.keyword = keyword
        self.pointer = pointer
