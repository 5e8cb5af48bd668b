"""The grammar pieces of one tool's calls in a format (``AgentFormat.call_tags``): the argument
grammar of its layout, the optional call-id member, and one structural tag per way a call may
open. ``AgentFormat`` caches them per tool (``tools.cached_piece``); the grammars made here are
also shared by the tools with equal schemas, so that their compiled parts and token masks are.

Example:
    >>> from agentgrammar import Tool
    >>> from agentgrammar.formats import get
    >>> tags = build_call_tags(get("harmony"), Tool("now", "", {"type": "object", "properties": {}}))
    >>> [t.begin for t in tags]
    [' to=functions.now', '<|channel|>commentary to=functions.now']
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..errors import GrammarError, ToolError
from ..grammar import Grammar
from ..grammar import structural_tag as st
from ..grammar.ir import CharClass, Choice, Embed, Literal, Repeat, Rule, Seq
from ..grammar.memo import BoundedCache
from ..grammar.structural_tag import compact_schema_grammar
from ..grammar.token_markers import encode_text
from ..registry import Tool
from .call_ids import MAX_INDEX_DIGITS, CallIdForm
from .pythonic import arguments_grammar
from .styled_call import styled_call_tags
from .xml_params import params_content

if TYPE_CHECKING:  # pragma: no cover
    from .format import AgentFormat

__all__ = ["build_call_tags", "json_format"]

_ALNUM_RANGES = ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A))


# (id of the argument grammar, member head, id length) -> (that grammar, the grammar with the
# id member): tools with equal schemas share one argument grammar, and so one of these. Bounded
# in entries and, with the other memos, in bytes (``memo.trim_memos``).
_WITH_ID: "BoundedCache[Tuple[Grammar, Grammar]]" = BoundedCache("call id grammars", limit=4096)


def _with_id(args: Grammar, head: str, length: Optional[int]) -> Grammar:
    """``args`` then, optionally, ``head`` and a JSON string id (``length`` letters and digits)."""
    key = (id(args), head, length)
    found = _WITH_ID.get(key)
    if found is None or found[0] is not args:
        if length is not None:
            value: Any = Seq((Literal(b'"'), _id_chars(length), Literal(b'"')))
        else:
            value = Embed(compact_schema_grammar({"type": "string"}, (", ", ": ")))
        member = Repeat(Seq((Literal(encode_text(head)), value)), 0, 1)
        grammar = Grammar.from_rules([Rule("root", Seq((Embed(args), member)))])
        found = _WITH_ID.put(key, (args, grammar))
    return found[1]


# (name ends, id of the argument grammar, id marker, id length) -> (that grammar, what follows
# the name: an optional id, one of the ends, the arguments).
_AFTER_NAME: "BoundedCache[Tuple[Grammar, Grammar]]" = BoundedCache("after-name grammars", limit=4096)


def _id_chars(length: Optional[int]) -> Any:
    """A call id: ``length`` ASCII letters and digits, or (None) one or more of them."""
    return Repeat(CharClass(_ALNUM_RANGES), length or 1, length)


def _after_name(
    ends: Tuple[str, ...], args: Grammar, id_begin: Optional[str] = None, id_length: Optional[int] = None
) -> Grammar:
    """What follows a tool's name where several name ends may, or an id may: optionally
    ``id_begin`` and an id, then one of ``ends``, then ``args`` (one grammar per argument
    grammar, shared by the tools with equal schemas)."""
    key = (ends, id(args), id_begin, id_length)
    found = _AFTER_NAME.get(key)
    if found is None or found[0] is not args:
        choice = Choice(tuple(Literal(encode_text(e)) for e in ends))
        items: Tuple[Any, ...] = (choice, Embed(args))
        if id_begin is not None:
            items = (Repeat(Seq((Literal(encode_text(id_begin)), _id_chars(id_length))), 0, 1), *items)
        grammar = Grammar.from_rules([Rule("root", Seq(items))])
        found = _AFTER_NAME.put(key, (args, grammar))
    return found[1]


# (end, id of the argument grammar) -> (that grammar, what follows the name in a call_id_form
# head: the index's digits, the end, the arguments).
_AFTER_INDEX: "BoundedCache[Tuple[Grammar, Grammar]]" = BoundedCache("after-index grammars", limit=4096)


def _after_index(end: str, args: Grammar) -> Grammar:
    """One or more ASCII digits (a call's index), ``end``, then ``args`` (one grammar per
    argument grammar, shared by the tools with equal schemas)."""
    key = (end, id(args))
    found = _AFTER_INDEX.get(key)
    if found is None or found[0] is not args:
        digits = Repeat(CharClass(((0x30, 0x39),)), 1, MAX_INDEX_DIGITS)
        grammar = Grammar.from_rules([Rule("root", Seq((digits, Literal(encode_text(end)), Embed(args))))])
        found = _AFTER_INDEX.put(key, (args, grammar))
    return found[1]


def _id_form_tags(fmt: "AgentFormat", tool: Tool, content: st.Format) -> Tuple[st.Tag, ...]:
    """The tags of a call whose head holds its id (``call_id_form``): per opening, the head up
    to the index, then the index, the rest of the head and the arguments."""
    assert fmt.call_id_form is not None
    form = CallIdForm.parse(fmt.call_id_form)
    args = _as_grammar(tool, content)
    tags = []
    for begin, end in fmt._heads():
        after = form.suffix + end
        if args is not None:
            body: st.Format = st.GrammarText(grammar=_after_index(after, args))
        else:
            index = st.Regex(pattern=f"[0-9]{{1,{MAX_INDEX_DIGITS}}}")
            body = st.Sequence(elements=[index, st.ConstString(value=after), content])
        head = begin + form.prefix + tool.name + form.middle
        tags.append(st.Tag(begin=head, content=body, end=fmt._call_tail()))
    return tuple(tags)


# (schema JSON, max whitespace, any_order) -> the flexible-whitespace argument grammar, with the
# options the structural-tag builder gives a json_schema format.
_FLEXIBLE: "BoundedCache[Grammar]" = BoundedCache("flexible argument grammars", limit=4096)


def _flexible_grammar(schema: Any, max_whitespace: Optional[int], any_order: bool) -> Grammar:
    key = (json.dumps(schema), max_whitespace, any_order)
    return _FLEXIBLE.get_or_make(
        key,
        lambda: Grammar.from_json_schema(
            schema,
            strict=True,
            any_order=any_order,
            max_whitespace=max_whitespace,
            xgrammar_types=True,
            loose_lengths=True,
        ),
    )


def json_format(fmt: "AgentFormat", tool: Tool, schema: Any, any_order: bool = False) -> st.Format:
    """The argument grammar of ``schema`` in ``fmt``'s JSON layout (compact: a grammar, shared by
    equal schemas; flexible: xgrammar's ``json_schema`` format); ``ToolError`` naming ``tool``
    when the schema cannot be converted.

    Example:
        >>> from agentgrammar import AgentFormat
        >>> json_format(AgentFormat(), Tool("t", "", {"type": "object"}), {"type": "integer"}).type
        'grammar'
    """
    if fmt.whitespace == "flexible":
        return st.JSONSchema(json_schema=schema, max_whitespace_cnt=fmt.max_whitespace, any_order=any_order)
    try:
        if any_order:  # the compact layout's options, in any order (cached with the tool)
            g = Grammar.from_json_schema(
                schema,
                whitespace="compact",
                separators=fmt.separators,
                strict=True,
                any_order=True,
                loose_lengths=True,
            )
        else:
            g = compact_schema_grammar(schema, fmt.separators)
    except GrammarError as e:
        raise ToolError(f"tool {tool.name!r}: cannot build its argument grammar: {e}", tool=tool.name) from e
    return st.GrammarText(grammar=g)  # dumped as EBNF text; converted as the grammar itself


def _as_grammar(tool: Tool, content: st.Format) -> Optional[Grammar]:
    """The grammar of an argument content (a flexible-whitespace schema converted here); None
    for other contents (the xml layout's parameters)."""
    if isinstance(content, st.GrammarText) and isinstance(content.grammar, Grammar):
        return content.grammar
    if not isinstance(content, st.JSONSchema):
        return None
    try:
        return _flexible_grammar(content.json_schema, content.max_whitespace_cnt, content.any_order)
    except GrammarError as e:
        raise ToolError(f"tool {tool.name!r}: cannot build its argument grammar: {e}", tool=tool.name) from e


def _with_id_member(fmt: "AgentFormat", content: st.Format) -> st.Format:
    """The arguments, then the optional call-id member (``id_key``)."""
    assert fmt.id_key is not None
    item, key = fmt.separators
    head = item + _json_str(fmt.id_key) + key
    if isinstance(content, st.GrammarText) and isinstance(content.grammar, Grammar):
        # one grammar per argument grammar: a tag around it converts without rules of its
        # own, so requests reuse its conversion (as for calls without an id)
        return st.GrammarText(grammar=_with_id(content.grammar, head, fmt.call_id_length))
    if fmt.call_id_length is not None:
        value: st.Format = st.Regex(pattern=f'"[A-Za-z0-9]{{{fmt.call_id_length}}}"')
    else:
        value = st.JSONSchema(json_schema={"type": "string"})
    member = st.Sequence(elements=[st.ConstString(value=head), value])
    return st.Sequence(elements=[content, st.OptionalFormat(content=member)])


def build_call_tags(fmt: "AgentFormat", tool: Tool, any_order: bool = False) -> Tuple[st.Tag, ...]:
    """The structural tags of one call of ``tool`` in ``fmt``, one per text that may open it
    before the name, the canonical one first (the name ends that may follow one opening are a
    choice inside its tag).

    Example:
        >>> from agentgrammar.formats import get
        >>> [t.begin for t in build_call_tags(get("llama3"), Tool("now", "", {"type": "object"}))]
        ['{"name": "now", "parameters": ', '<|python_tag|>{"name": "now", "parameters": ']
    """
    if fmt.call_layout == "styled":  # the arguments in one of xgrammar's XML parameter styles
        return styled_call_tags(fmt, tool, any_order)
    if fmt.call_layout == "xml":
        content = params_content(
            tool,
            param_begin=fmt.param_begin,
            param_name_end=fmt.param_name_end,
            param_end=fmt.param_end,
            param_name_end_json=fmt.param_name_end_json,
            json_format=lambda schema: json_format(fmt, tool, schema, any_order),
            any_order=any_order,
            markers=fmt.markers(),
        )
    elif fmt.call_layout == "pythonic":  # keyword arguments in schema order (any_order: a subset)
        content = st.GrammarText(grammar=arguments_grammar(tool))
    else:
        content = json_format(fmt, tool, tool.parameters, any_order)
    if fmt.id_key is not None:
        content = _with_id_member(fmt, content)
    if fmt.call_id_form is not None:
        return _id_form_tags(fmt, tool, content)
    tail = fmt._call_tail()
    # One tag per way the call opens before the name; the name ends that may follow one
    # opening are a choice inside its tag (fewer tags: gpt-oss has 2 per tool, not 6).
    ends_of: Dict[str, List[str]] = {}
    for begin, end in fmt._heads():
        ends_of.setdefault(begin, []).append(end)
    tags = []
    for begin, ends in ends_of.items():
        if len(ends) == 1 and fmt.id_begin is None:
            tags.append(st.Tag(begin=fmt._call_head(tool.name, begin, ends[0]), content=content, end=tail))
            continue
        args = _as_grammar(tool, content)
        if args is not None:  # one grammar: the tag converts without rules of its own
            after = _after_name(tuple(ends), args, fmt.id_begin, fmt.call_id_length)
            body: st.Format = st.GrammarText(grammar=after)
        else:
            body = st.Sequence(elements=[st.Or(elements=[st.ConstString(value=e) for e in ends]), content])
        tags.append(st.Tag(begin=fmt._call_head(tool.name, begin, ""), content=body, end=tail))
    return tuple(tags)
