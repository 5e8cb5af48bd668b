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


class MaskTimeoutError(MatcherError):
    """A token mask or an accept ran past the matcher's time budget
    (``Matcher(mask_time_budget_s=..., accept_time_budget_s=...)``); the matcher is unchanged,
    so the caller may retry with a larger budget or drop the row.

    Example:
        >>> issubclass(MaskTimeoutError, MatcherError)
        True
    """


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


class ToolError(AgentGrammarError):
    """A tool cannot be registered, found, validated or run: a duplicate or malformed name, an
    unknown tool, a function or schema that cannot define a tool, arguments that fail
    validation, a tool without a handler, a schema that cannot be compiled, or a handler that
    raised (the handler's exception is ``__cause__``).

    ``tool`` is the name of the tool at fault and ``field`` the argument at fault (a dotted
    path such as ``"address.zip"``), when known.

    Example:
        >>> err = ToolError("tool 'add': argument 'a': field required", tool="add", field="a")
        >>> (err.tool, err.field)
        ('add', 'a')
    """

    def __init__(self, message: str, *, tool: Optional[str] = None, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.tool = tool
        self.field = field


class ToolTimeoutError(ToolError):
    """A tool call ran past its timeout (``Tool.timeout_s``, else the runner's default) and was
    stopped (an async tool is cancelled; a sync tool's thread cannot be interrupted, so it runs
    on and its result is dropped). ``timeout_s`` is the limit it ran past.

    Example:
        >>> err = ToolTimeoutError("tool 'slow' timed out after 2 s", tool="slow", timeout_s=2.0)
        >>> (isinstance(err, ToolError), err.tool, err.timeout_s)
        (True, 'slow', 2.0)
    """

    def __init__(
        self, message: str, *, tool: Optional[str] = None, timeout_s: Optional[float] = None
    ) -> None:
        super().__init__(message, tool=tool)
        self.timeout_s = timeout_s


class StructuralTagError(AgentGrammarError, ValueError):
    """A structural tag is malformed: an unknown ``type``, a missing or ill-typed field, a
    trigger that begins no tag, a tag that two triggers open, ...

    ``path`` is the JSON path of the offending element (``"$.format.tags[2].begin"``) when
    known; it is part of the message.

    Example:
        >>> err = StructuralTagError("unknown type 'tagg'", path="$.format.tags[2]")
        >>> str(err)
        "$.format.tags[2]: unknown type 'tagg'"
        >>> err.path
        '$.format.tags[2]'
    """

    def __init__(self, message: str, *, path: Optional[str] = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path


class AgentError(AgentGrammarError, ValueError):
    """An agent cannot be built or run as asked: an unknown format, a batch of prompts, a
    malformed message or option, a chat template that fails on the conversation.

    Example:
        >>> isinstance(AgentError("no"), ValueError)
        True
    """
