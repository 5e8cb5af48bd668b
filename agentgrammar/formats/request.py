"""The structural tag of one request (``AgentFormat.structural_tag``): the think block, then the
tool calls (the cached per-tool pieces of ``call_pieces``) and the response or the free text,
as ``tool_choice`` (``tools.resolve_choice``'s mode), ``parallel_tool_calls`` and ``reasoning``
allow, the way xgrammar's builtin model tags do.

Example:
    >>> from agentgrammar import Tool
    >>> from agentgrammar.formats import get
    >>> now = Tool("now", "", {"type": "object", "properties": {}})
    >>> request_tag(get("hermes"), [now], "named", parallel=True, reasoning="enabled", any_order=False).format.type
    'tags_with_separator'
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, List, Optional, Tuple

from ..grammar import Grammar
from ..grammar import structural_tag as st
from ..grammar.ir import CharClass, Choice, Literal, Rule, RuleRef, Seq, TagDispatch
from ..grammar.memo import register_lru
from ..grammar.token_markers import encode_text, markers_in_text, plain_text
from ..registry import Tool
from .reasoning import check_reasoning_budget
from .tools import cached_pieces

if TYPE_CHECKING:  # pragma: no cover
    from .format import AgentFormat

__all__ = ["request_tag"]

_REASONING = ("enabled", "disabled", "auto")
_WS = " \t\r\n"


@functools.lru_cache(maxsize=64)
def _text_not_opening(first_chars: str, excludes: Tuple[str, ...]) -> Grammar:
    """Free text, possibly empty, whose first character is none of ``first_chars`` and that
    never holds one of ``excludes``. A grammar of its own, made once per format: every request
    embeds the same object, so its token masks (the first mask of every turn) are computed once
    rather than per request. A token marker in an exclude is kept out as the token and as its
    text (as the structural-tag builder does for free text)."""
    words: List[bytes] = []
    for w in excludes:
        words.append(encode_text(w))
        words += [encode_text(plain_text(w)), *(m.encode("utf-8") for m in markers_in_text(w))]
    words = list(dict.fromkeys(w for w in words if w))
    first = CharClass(tuple(sorted((ord(c), ord(c)) for c in set(first_chars))), negated=True)
    text = TagDispatch(excludes=tuple(words))
    root = Choice((Seq(()), Seq((first, RuleRef("text")))))
    return Grammar.from_rules([Rule("root", root), Rule("text", text)])


@functools.lru_cache(maxsize=64)
def _optional_words(words: Tuple[str, ...]) -> Grammar:
    """Nothing or one of ``words``: a grammar of its own, made once, whose token masks every
    request shares (in a request's own rules they were computed again for each request)."""
    return Grammar.from_rules([Rule("root", Choice((Seq(()), *(Literal(encode_text(w)) for w in words))))])


# one per format: small, but counted with the other caches (their grammars' share of the bytes)
register_lru("free-text grammars", _text_not_opening, entry_bytes=8192)
register_lru("optional-word grammars", _optional_words, entry_bytes=2048)


def _tag_groups(fmt: "AgentFormat", tools: List[Tool], any_order: bool) -> List[Tuple[st.Tag, ...]]:
    """The call tags of a request's tools, a tuple per tool (cached pieces, found in one pass)."""
    key = (*fmt._layout_key(), bool(any_order))
    return cached_pieces(tools, key, lambda tool: fmt._build_call_tags(tool, bool(any_order)))


def _optional_prefixes(fmt: "AgentFormat") -> List[str]:
    """The call openings that only prefix the canonical call (Llama's ``<|python_tag|>``) when
    the canonical call has no opening of its own; else none."""
    heads = fmt._heads()
    if fmt._wrapped or fmt.call_begin or any(end != fmt.name_end for _, end in heads):
        return []
    return [begin for begin, _ in heads if begin]


def _text_excludes(fmt: "AgentFormat") -> List[str]:
    # a think marker with whitespace around it (GLM's "\n<think>") also without: parse reads
    # the block with other whitespace, so free text never holds the marker's core either
    marks = [m for m in (fmt.think_begin, fmt.think_end) if m]
    return list(dict.fromkeys([*marks, *(m.strip(_WS) for m in marks if m.strip(_WS))]))


def _think_format(fmt: "AgentFormat", reasoning: str, budget: Optional[int] = None) -> Optional[st.Format]:
    if reasoning not in _REASONING:
        raise ValueError(f"reasoning must be one of {_REASONING}, got {reasoning!r}")
    if not fmt.has_think or reasoning == "disabled":
        return None
    assert fmt.think_begin is not None and fmt.think_end is not None
    text = st.AnyText(max_tokens=check_reasoning_budget(budget))  # a token budget (formats/reasoning.py)
    block: st.Format = st.Tag(begin=fmt.think_begin, content=text, end=fmt.think_end)
    if fmt.think_suffix:
        block = st.Sequence(elements=[block, st.ConstString(value=fmt.think_suffix)])
    return st.OptionalFormat(content=block) if reasoning == "auto" else block


def _wrapper_tags(fmt: "AgentFormat", tags: List[st.Tag], parallel: bool) -> List[st.Tag]:
    """The calls block, once per way it may open (``calls_begin`` and its variants)."""
    calls = st.TagsWithSeparator(
        tags=tags, separator=fmt.call_separator, at_least_one=True, stop_after_first=not parallel
    )
    return [st.Tag(begin=b, content=calls, end=fmt.calls_end) for b in fmt._openers()]


def _calls_block(fmt: "AgentFormat", tags: List[st.Tag], parallel: bool) -> st.Format:
    """One or more calls separated by ``call_separator`` (inside ``calls_begin`` ... ``calls_end``)."""
    if fmt._wrapped:
        wrappers = _wrapper_tags(fmt, tags, parallel)
        return wrappers[0] if len(wrappers) == 1 else st.Or(elements=list(wrappers))
    return st.TagsWithSeparator(
        tags=tags, separator=fmt.call_separator, at_least_one=True, stop_after_first=not parallel
    )


def _free_text(fmt: "AgentFormat") -> st.Format:
    """Free text where no call is made: never a trigger nor a think marker; with
    ``calls_or_text``, also never starting like a call (so ``parse`` reads it as text)."""
    triggers = fmt.triggers()
    # a call's opening marker (Llama's <|python_tag|>) is not text either
    begins = [b for b, _ in fmt._heads() if b and not any(t in b for t in triggers)]
    excludes = list(dict.fromkeys([*triggers, *begins, *_text_excludes(fmt)]))
    if not fmt.calls_or_text:
        return st.AnyText(excludes=excludes)
    first = "".join(dict.fromkeys([*_WS, *(plain_text(t)[0] for t in triggers)]))
    return st.GrammarText(grammar=_text_not_opening(first, tuple(excludes)))


def _one_call(fmt: "AgentFormat", groups: List[Tuple[st.Tag, ...]], tags: List[st.Tag]) -> st.Format:
    """Exactly one call, where no trigger opens it. An opening that only prefixes the canonical
    call is an optional prefix there, rather than a second tag per tool (half the heads)."""
    prefixes = _optional_prefixes(fmt)
    if not prefixes:
        return _calls_block(fmt, tags, False)
    canonical = [g[0] for g in groups]
    prefix = st.GrammarText(grammar=_optional_words(tuple(prefixes)))
    return st.Sequence(elements=[prefix, _calls_block(fmt, canonical, False)])


def _body(fmt: "AgentFormat", tools: List[Tool], mode: str, parallel: bool, any_order: bool) -> st.Format:
    groups = _tag_groups(fmt, tools, any_order) if mode != "none" else []
    tags = [g[0] for g in groups] if groups and len(groups[0]) == 1 else [t for g in groups for t in g]
    named = mode == "named"  # exactly one call, then the turn ends
    parallel = parallel and not named
    if fmt.has_response:
        assert fmt.response_begin is not None and fmt.response_end is not None
        response = st.Tag(begin=fmt.response_begin, content=st.AnyText(), end=fmt.response_end)
        if not tags:
            return response
        if fmt.response_first:  # the response, then the calls (Kimi-K3)
            block: st.Format = _calls_block(fmt, tags, parallel)
            if fmt.block_separator:
                block = st.Sequence(elements=[st.ConstString(value=fmt.block_separator), block])
            after = block if mode in ("required", "named") else st.OptionalFormat(content=block)
            return st.Sequence(elements=[response, after])
        calls = _calls_block(fmt, tags, parallel)
        if fmt.response_after_calls and not named:
            after = st.Sequence(elements=[st.ConstString(value=fmt.block_separator), response])
            calls = st.Sequence(elements=[calls, st.OptionalFormat(content=after)])
        return calls if mode in ("required", "named") else st.Or(elements=[response, calls])
    if not tags:
        return _free_text(fmt)
    if named or fmt.calls_or_text:
        calls = _calls_block(fmt, tags, parallel) if parallel else _one_call(fmt, groups, tags)
        return calls if named or mode == "required" else st.Or(elements=[calls, _free_text(fmt)])
    if fmt._wrapped:
        tags, stop_after_first = _wrapper_tags(fmt, tags, parallel), True
    else:
        stop_after_first = not parallel
    return st.TriggeredTags(
        triggers=fmt.triggers(),
        tags=tags,
        at_least_one=mode == "required",
        stop_after_first=stop_after_first,
        excludes=_text_excludes(fmt),
    )


def request_tag(
    fmt: "AgentFormat",
    tools: List[Tool],
    mode: str,
    *,
    parallel: bool,
    reasoning: str,
    any_order: bool,
    reasoning_budget: Optional[int] = None,
) -> st.StructuralTag:
    """The structural tag of a turn of ``fmt`` calling ``tools`` in ``mode`` (``"none"``,
    ``"auto"``, ``"required"`` or ``"named"``); ``parallel``: more than one call allowed;
    ``reasoning_budget``: the think block's ``max_tokens`` (``formats/reasoning.py``).

    Example:
        >>> from agentgrammar.formats import get
        >>> request_tag(get("hermes"), [], "none", parallel=True, reasoning="enabled", any_order=False).format.type
        'any_text'
    """
    think = _think_format(fmt, reasoning, reasoning_budget)
    body = _body(fmt, tools, mode, parallel, any_order)
    if fmt.turn_end:
        body = st.Sequence(elements=[body, st.ConstString(value=fmt.turn_end)])
    return st.StructuralTag(format=body if think is None else st.Sequence(elements=[think, body]))
