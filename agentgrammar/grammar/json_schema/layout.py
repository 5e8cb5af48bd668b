"""The bytes between JSON tokens: flexible whitespace, fixed separators, or ``indent=``."""

from __future__ import annotations

from typing import (
    Any,
    Dict,
    Optional,
    Tuple,
    Union,
)

from ...errors import SchemaError
from ..ir import (
    EMPTY,
    CharClass,
    Expr,
    Literal,
    Repeat,
    RuleRef,
    seq,
)

#: Nesting depth past which ``indent=`` output falls back to flexible whitespace.
INDENT_DEPTH_LIMIT = 16


class _Layout:
    """The bytes between tokens: flexible whitespace, fixed separators, or pretty-printing."""

    def __init__(
        self,
        whitespace: str,
        indent: Optional[Union[int, str]],
        separators: Optional[Tuple[str, str]],
        max_whitespace: Optional[int],
    ) -> None:
        if whitespace not in ("flexible", "compact"):
            raise SchemaError(f"whitespace must be 'flexible' or 'compact', not {whitespace!r}")
        if indent is not None:
            if isinstance(indent, bool) or not isinstance(indent, (int, str)):
                raise SchemaError(f"indent must be an int or a str, not {indent!r}")
            self.indent: Optional[str] = " " * indent if isinstance(indent, int) else indent
            if any(c not in " \t\n\r" for c in self.indent):
                raise SchemaError(f"indent must be whitespace, not {indent!r}")
            self.mode = "indent"
        else:
            self.indent = None
            self.mode = whitespace
        if separators is None:
            separators = (",", ": ") if self.mode == "indent" else (", ", ": ")
        if (
            not isinstance(separators, (tuple, list))
            or len(separators) != 2
            or not all(isinstance(s, str) for s in separators)
        ):
            raise SchemaError(f"separators must be a pair of strings, not {separators!r}")
        for s, tok in zip(separators, ",:"):
            if s.strip(" \t\n\r") != tok:
                raise SchemaError(f"separator {s!r} must be {tok!r} with optional whitespace around it")
        self.item_sep = separators[0].encode()
        self.key_sep = separators[1].encode()
        if max_whitespace is not None and (
            isinstance(max_whitespace, bool) or not isinstance(max_whitespace, int) or max_whitespace < 0
        ):
            raise SchemaError(f"max_whitespace must be a non-negative int, not {max_whitespace!r}")
        self.sig = (self.mode, self.indent, self.item_sep, self.key_sep, max_whitespace)
        self.ws: Expr = Repeat(CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20))), 0, max_whitespace)
        self.ws_ref = RuleRef("ws")
        # The separators, made once: every member and item of every schema asks for one (IR is
        # immutable, so one object serves them all, and later stages meet the same object).
        ws = self.ws_ref
        self._ws_sep, self._ws_colon = seq([ws, Literal(b","), ws]), seq([ws, Literal(b":"), ws])
        self._ws_empty = {b: seq([Literal(b[:1]), ws, Literal(b[1:])]) for b in (b"{}", b"[]")}
        self._item_sep, self._key_sep = Literal(self.item_sep), Literal(self.key_sep)
        self._brackets = {b: (Literal(b[:1]), Literal(b[1:])) for b in (b"{}", b"[]")}

    def flexible_at(self, depth: int) -> bool:
        return self.mode == "flexible" or (self.mode == "indent" and depth >= INDENT_DEPTH_LIMIT)

    def key(self, depth: int) -> int:
        """Depth as far as the layout cares (for memoization)."""
        if self.mode != "indent":
            return 0
        return min(depth, INDENT_DEPTH_LIMIT)

    def _nl(self, depth: int) -> Literal:
        assert self.indent is not None
        return Literal(("\n" + self.indent * depth).encode())

    def open(self, depth: int) -> Expr:
        """After ``{`` / ``[`` of a non-empty container at ``depth``."""
        if self.flexible_at(depth):
            return self.ws_ref
        return self._nl(depth + 1) if self.mode == "indent" else EMPTY

    def close(self, depth: int) -> Expr:
        if self.flexible_at(depth):
            return self.ws_ref
        return self._nl(depth) if self.mode == "indent" else EMPTY

    def sep(self, depth: int) -> Expr:
        if self.flexible_at(depth):
            return self._ws_sep
        if self.mode == "indent":
            return seq([self._item_sep, self._nl(depth + 1)])
        return self._item_sep

    def colon(self, depth: int) -> Expr:
        if self.flexible_at(depth):
            return self._ws_colon
        return self._key_sep

    def empty(self, depth: int, brackets: bytes) -> Expr:
        if self.flexible_at(depth):
            return self._ws_empty[brackets]
        return Literal(brackets)

    def container(self, depth: int, brackets: bytes, content: Expr) -> Expr:
        found = self._brackets.get(brackets)
        start, end = found if found is not None else (Literal(brackets[:1]), Literal(brackets[1:]))
        if self.mode == "flexible":  # (the usual layout: whitespace on both sides)
            return seq([start, self.ws_ref, content, self.ws_ref, end])
        return seq([start, self.open(depth), content, self.close(depth), end])


_LAYOUTS: Dict[Any, _Layout] = {}


def _layout(whitespace: str, indent: Any, separators: Any, max_whitespace: Any) -> _Layout:
    """The layout of these options, made once per distinct options (a layout never changes
    once made): keyed by their ``repr``, which tells ``True`` from ``1`` and a bad option from
    a good one, so that a bad one still reaches ``_Layout``'s checks."""
    if indent is None and separators is None and max_whitespace is None and type(whitespace) is str:
        key: Any = (whitespace,)  # the usual options, without a repr (a tuple: no repr equals it)
    else:
        key = repr((whitespace, indent, separators, max_whitespace))
    found = _LAYOUTS.get(key)
    if found is None:
        found = _Layout(whitespace, indent, separators, max_whitespace)
        if len(_LAYOUTS) < 64:
            _LAYOUTS[key] = found
    return found
