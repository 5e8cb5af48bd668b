"""The errors of a format: text that does not follow it (``FormatParseError``) and an output it
cannot write (``RenderError``). Their own module: the parser raises them and ``AgentFormat``,
which imports the parser, re-exports them.

Example:
    >>> str(FormatParseError("the think block is not closed", offset=7))
    'the think block is not closed (at offset 7)'
"""

from __future__ import annotations

from typing import Optional

from ..errors import AgentGrammarError

__all__ = ["FormatParseError", "RenderError"]


class FormatParseError(AgentGrammarError, ValueError):
    """Text that does not follow the format (a block that is not closed, a call cut off, a
    call that is not JSON, a key given twice). ``offset`` is the character offset in the text.

    Example:
        >>> err = FormatParseError("the think block is not closed", offset=7)
        >>> str(err), err.offset
        ('the think block is not closed (at offset 7)', 7)
    """

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(f"{message} (at offset {offset})")
        self.offset = offset


class RenderError(AgentGrammarError, ValueError):
    """An ``AgentOutput`` that the format cannot write so that ``parse`` reads the same output
    back (nor the grammar accept it): free text or a block's text that holds one of the
    format's markers, a call to an invalid tool name, a parameter name or value the xml layout
    cannot delimit, a block the format does not have. ``marker`` is the marker at fault, when
    one is.

    Example:
        >>> err = RenderError("the text holds '<tool_call>'", marker="<tool_call>")
        >>> isinstance(err, ValueError), err.marker
        (True, '<tool_call>')
    """

    def __init__(self, message: str, *, marker: Optional[str] = None) -> None:
        super().__init__(message)
        self.marker = marker
