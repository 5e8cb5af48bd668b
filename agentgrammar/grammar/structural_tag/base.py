"""The walk over a structural tag's formats: the rules it collects and the names it takes.

Example:
    >>> from agentgrammar.grammar.ir import Literal
    >>> b = BuilderBase()
    >>> b.rule("text", Literal(b"x")), b.rules
    (RuleRef(name='text'), {'text': Literal(value=b'x')})
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Set, Tuple

from ..ir import Expr, RuleRef, TagDispatch, fresh_name
from ..token_markers import token_marker
from .text import _words

__all__ = ["BuilderBase"]


class BuilderBase:
    """Collects rules while walking the format tree; each format's ``fmt_<type>`` method is
    in a subclass."""

    def __init__(self, markers: Sequence[Any] = (), marked: Sequence[Any] = ()) -> None:
        self.rules: Dict[str, Expr] = {}
        self.taken: Set[str] = {"root"}
        self.counters: Dict[str, int] = {}
        self.all_text: Set[str] = set()  # the rules of free text without excludes: any text
        # Free text never holds a token marker of the tag, as the token or as its text, but
        # where the marker ends a trigger or an end ("<｜DSML｜"): an exclude ending on the same
        # byte would kill that word (it wins, as in xgrammar's TagDispatch), so such a marker
        # is not excluded from that text. A marker by id has no text the grammar knows: only
        # its token is excluded.
        self.marker_words = [w for m in markers for w in (token_marker(m), m) if isinstance(w, str)]
        # Every token the tag names (excluded ones too), all marked in the vocabulary: xgrammar
        # reads such a token as its text, so free text that excludes a word of that text
        # excludes the token too (its private spelling holds no text).
        self.marked_texts = [m for m in marked if isinstance(m, str)]

    def words(self, excludes: Sequence[str], words: Sequence[str] = ()) -> Tuple[bytes, ...]:
        """The exclude words of a piece of free text: ``excludes`` and the marker words but
        its own ``words`` (triggers and ends): each marked token whose text holds an excluded
        word, and each marker word but those that end with one of its ``words`` or end one."""
        tokens = [token_marker(m) for m in self.marked_texts if any(x and x in m for x in excludes)]
        tokens = [t for t in tokens if t not in words]
        if not self.marker_words:
            return _words([*excludes, *tokens])
        kept = [
            m for m in self.marker_words if not any(w and (m.endswith(w) or w.endswith(m)) for w in words)
        ]
        return _words([*excludes, *tokens, *kept])

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.taken, self.counters)

    def rule(self, base: str, body: Expr) -> RuleRef:
        name = self.fresh(base)
        self.rules[name] = body
        return RuleRef(name)

    def dispatch(self, base: str, d: TagDispatch) -> RuleRef:
        """Free text as a rule of its own, so that the C core's mask cache recognises it and
        accepts the tokens that cannot complete a word without simulating them. Free text is
        bytes, as in xgrammar: a token may end inside a multi-byte character."""
        return self.rule(base, d)

    # ---- formats ----------------------------------------------------------------------------

    def convert(self, f: Any, path: str) -> Optional[Expr]:
        """IR for format ``f`` at JSON path ``path``; None when it accepts nothing."""
        method = getattr(self, "fmt_" + f.type)
        return method(f, path)
