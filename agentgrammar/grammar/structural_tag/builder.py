"""Convert a structural tag (``agentgrammar.grammar.structural_tag.models``) into grammar IR.

The semantics are xgrammar's, so that a structural tag written for xgrammar accepts the same
texts here (``tests/grammar/test_structural_tag.py`` checks both engines side by side):

* ``triggered_tags``: free text in which no trigger (and no exclude) occurs; the first
  occurrence of a trigger commits to one of the tags whose ``begin`` starts with it; after the
  tag's end, free text again. ``at_least_one``: the output *starts* with a tag;
  ``stop_after_first``: nothing may follow the first tag. ``dispatch`` is the same with a format
  in place of the rest of a tag.
* ``tag`` whose content is ``any_text``: the content runs up to the first occurrence of an end
  string (it cannot contain one); any other content is followed by one of the ends.
* ``any_text`` elsewhere: any text without the excludes. ``json_schema``: the JSON Schema
  grammar with flexible whitespace and no additional properties (``strict=True``).

Free text is any bytes, as in xgrammar. Each piece of free text (with its triggers, end strings
and excludes) is one ``TagDispatch`` rule, which the C core runs as an Aho–Corasick automaton:
every token is checked exactly, including tokens that run across the start of a trigger, and
tokens that cannot complete any word are accepted without being simulated.

Example:
    >>> rules, root = structural_tag_rules({"type": "structural_tag",
    ...     "format": {"type": "const_string", "value": "hi"}})
    >>> rules[0]
    Rule(name='root', body=Literal(value=b'hi'))
"""

from __future__ import annotations

import json
from typing import Any, List, Optional, Tuple

from ...errors import GrammarError, StructuralTagError
from ..grammar import Grammar
from ..ir import EMPTY, CharClass, Embed, Expr, Literal, Repeat, Rule, RuleRef, TagDispatch, choice, seq
from ..regex import parse_regex
from ..token_markers import encode_text
from . import models as st
from .parse import parse_structural_tag
from .schemas import _ebnf_grammar, _schema_grammars
from .tags import TagFormats
from .text import _check_any_text, _markers_of, _named_tokens, _tag_text
from .token_items import TokenFormats
from .xml_styles import xml_style_expr

__all__ = ["structural_tag_rules"]

_CHARS = ((0, 0xD7FF), (0xE000, 0x10FFFF))  # any Unicode scalar value: what max_chars counts


class _Builder(TokenFormats, TagFormats):
    """The formats of a structural tag, each to IR (tags and free text in ``TagFormats``,
    token-level formats in ``TokenFormats``)."""

    def fmt_const_string(self, f: st.ConstString, path: str) -> Optional[Expr]:
        return Literal(encode_text(f.value))

    def fmt_token(self, f: st.Token, path: str) -> Optional[Expr]:
        return Literal(encode_text(_tag_text(f, path)))

    def fmt_json_schema(self, f: st.JSONSchema, path: str) -> Optional[Expr]:
        if f.style != "json":
            return xml_style_expr(self, f, path)
        try:
            key = json.dumps(f.json_schema)  # key order is property order: not sorted
        except (TypeError, ValueError) as e:
            raise StructuralTagError(f"the schema is not JSON: {e}", path=path + ".json_schema") from None
        try:
            options = (
                ("strict", True),
                ("any_order", f.any_order),
                ("max_whitespace", f.max_whitespace_cnt),
                ("xgrammar_types", True),
                ("loose_lengths", True),
                *((("excludes", tuple(dict.fromkeys(x for x in f.excludes if x))),) if f.excludes else ()),
            )
            return Embed(_schema_grammars.get(f.json_schema, key, options))
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path + ".json_schema") from None

    def fmt_any_text(self, f: st.AnyText, path: str) -> Optional[Expr]:
        _check_any_text(f, path)
        if f.max_chars is not None:  # at most max_chars characters, as in xgrammar (no excludes)
            return Repeat(CharClass(_CHARS), 0, f.max_chars) if f.max_chars else EMPTY
        words = self.words(f.excludes)
        text = self.dispatch("any_text", TagDispatch(excludes=words))
        if not words:
            self.all_text.add(text.name)
        return text

    def fmt_regex(self, f: st.Regex, path: str) -> Optional[Expr]:
        try:
            return self.rule("regex", parse_regex(f.pattern))
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path + ".pattern") from None

    def fmt_grammar(self, f: st.GrammarText, path: str) -> Optional[Expr]:
        try:
            grammar = f.grammar
            return Embed(grammar if isinstance(grammar, Grammar) else _ebnf_grammar(grammar))
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path + ".grammar") from None

    def fmt_sequence(self, f: st.Sequence, path: str) -> Optional[Expr]:
        parts = [self.convert(e, f"{path}.elements[{i}]") for i, e in enumerate(f.elements)]
        return None if any(p is None for p in parts) else seq([p for p in parts if p is not None])

    def fmt_or(self, f: st.Or, path: str) -> Optional[Expr]:
        return choice([self.convert(e, f"{path}.elements[{i}]") for i, e in enumerate(f.elements)])

    def fmt_optional(self, f: st.OptionalFormat, path: str) -> Optional[Expr]:
        inner = self.convert(f.content, path + ".content")
        return EMPTY if inner is None else self._repeated(inner, 0, 1)

    def fmt_plus(self, f: st.Plus, path: str) -> Optional[Expr]:
        inner = self.convert(f.content, path + ".content")
        return None if inner is None else self._repeated(inner, 1, None)

    def fmt_star(self, f: st.Star, path: str) -> Optional[Expr]:
        inner = self.convert(f.content, path + ".content")
        return EMPTY if inner is None else self._repeated(inner, 0, None)

    def fmt_repeat(self, f: st.Repeat, path: str) -> Optional[Expr]:
        upper = None if f.max == -1 else f.max  # xgrammar's "no upper bound"
        if upper is not None and f.min > upper:
            raise StructuralTagError(f"min {f.min} is larger than max {f.max}", path=path)
        inner = self.convert(f.content, path + ".content")
        if inner is None:
            return EMPTY if f.min == 0 else None
        return self._repeated(inner, f.min, upper)

    def _repeated(self, inner: Expr, lo: int, hi: Optional[int]) -> Expr:
        """``inner`` ``lo`` to ``hi`` times. Free text without excludes is any text, which any
        number of its copies spells too: its repeat is it, written once (counted, the copies
        would split the text in every way, and accepting a token would grow with the text)."""
        if type(inner) is RuleRef and inner.name in self.all_text:
            return EMPTY if hi == 0 else inner
        return Repeat(inner, lo, hi)


def structural_tag_rules(obj: Any) -> Tuple[List[Rule], str]:
    """Grammar rules (root first) for a structural tag given as a model, a dict or JSON text."""
    tag = parse_structural_tag(obj)
    try:
        b = _Builder(sorted(_markers_of(tag.format), key=str), sorted(_named_tokens(tag.format), key=str))
        body = b.convert(tag.format, "$.format")
    except RecursionError:  # models built in Python, nested past what the builder can walk
        raise StructuralTagError("the structural tag nests too deeply", path="$.format") from None
    except UnicodeEncodeError as e:
        bad = e.object[e.start : e.end] if isinstance(e.object, str) else "?"
        raise StructuralTagError(
            f"a string of the tag is not valid Unicode: it holds the lone surrogate {bad!r}", path="$.format"
        ) from None
    if body is None:
        raise StructuralTagError("the structural tag accepts no text", path="$.format")
    return [Rule("root", body), *(Rule(n, x) for n, x in b.rules.items())], "root"
