"""``Nesting``: the bracket depth and string state of JSON (or Python-literal) text read one
character at a time, as the streaming region tracker and the call deltas follow arguments that
arrive in pieces.

Example:
    >>> n = Nesting()
    >>> [n.feed(ch) for ch in '{"a": "}"}']
    [1, 0, 0, 0, 0, 0, 0, 0, 0, -1]
    >>> n.depth, n.in_string
    (0, False)
"""

from __future__ import annotations

__all__ = ["Nesting"]


class Nesting:
    """Feed characters with ``feed``: it returns 1 for an opening bracket outside strings, -1 for
    a closing one (the depth never goes below 0), else 0. ``quotes``: the characters that open a
    string (JSON: ``"``; Python literals: both quotes, a string closing with its own quote);
    ``opens`` / ``closes``: the brackets."""

    def __init__(self, quotes: str = '"', opens: str = "{[", closes: str = "}]") -> None:
        self.quotes, self.opens, self.closes = quotes, opens, closes
        self.reset()

    def reset(self) -> None:
        self.depth = 0
        self.in_string = False
        self._escape = False
        self._quote = ""

    @property
    def at_top(self) -> bool:
        """Outside every bracket and string."""
        return self.depth == 0 and not self.in_string

    def feed(self, ch: str) -> int:
        if self.in_string:
            if self._escape:
                self._escape = False
            elif ch == "\\":
                self._escape = True
            elif ch == self._quote:
                self.in_string = False
            return 0
        if ch in self.quotes:
            self.in_string, self._quote = True, ch
            return 0
        if ch in self.opens:
            self.depth += 1
            return 1
        if ch in self.closes:
            self.depth = max(0, self.depth - 1)
            return -1
        return 0
