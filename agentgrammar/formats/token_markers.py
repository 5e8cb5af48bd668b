"""A format's markers as its model's own tokens.

A family's markers are single tokens of its vocabulary (Qwen's ``<tool_call>``, gpt-oss's
``<|channel|>`` and ``<|call|>``, Llama's ``<|python_tag|>``), some of them special, some stop
tokens. ``marker_tokens(fmt, vocab)`` finds them; ``with_token_markers(fmt, tokens)`` is the
format whose grammar writes each of them as a token marker
(:mod:`agentgrammar.grammar.token_markers`): exactly that token, never its text spelled in
pieces, and never that text in free text. Compile such a grammar for
``vocab.with_token_markers(tokens)``. Rendering and parsing stay with the format itself: the
model's tokens decode to the markers' text.

Example:
    >>> from agentgrammar import Tool, Vocabulary
    >>> from agentgrammar.formats import AgentFormat
    >>> vocab = Vocabulary(["<tool_call>", "</tool_call>", "{", "}", "</s>"], stop_token_ids=[4],
    ...                    special_token_ids=[0, 1])
    >>> fmt = AgentFormat()
    >>> marker_tokens(fmt, vocab)
    ['</tool_call>', '<tool_call>']
    >>> tokens_fmt = with_token_markers(fmt, marker_tokens(fmt, vocab))
    >>> tokens_fmt.trigger == token_marker("<tool_call>")
    True
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, List, Sequence

from ..grammar.token_markers import MARKER_CLOSE, token_marker
from .format import AgentFormat

__all__ = ["marker_tokens", "token_marker", "with_token_markers"]


def _token_texts(vocab: Any) -> List[str]:
    """The texts of the tokens a marker can be made of: added, special and stop tokens."""
    ids = set(vocab.added_token_ids) | set(vocab.special_token_ids) | set(vocab.stop_token_ids)
    out = []
    for i in sorted(ids):
        raw = vocab.decode([i])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text.strip():
            out.append(text)
    return out


def marker_tokens(fmt: AgentFormat, vocab: Any) -> List[str]:
    """The texts of ``vocab``'s added, special and stop tokens that occur in ``fmt``'s
    markers (``AgentFormat.markers()``), longest first where one holds another.

    Example:
        >>> from agentgrammar import Vocabulary
        >>> v = Vocabulary(["<|python_tag|>", "{", "</s>"], stop_token_ids=[2], special_token_ids=[0])
        >>> from agentgrammar.formats import get
        >>> marker_tokens(get("llama3"), v)
        ['<|python_tag|>']
    """
    markers = [m for m in fmt.markers() if m]
    found = [t for t in _token_texts(vocab) if any(t in m for m in markers)]
    return sorted(dict.fromkeys(found), key=lambda t: (-len(t), t))


def _replacer(tokens: Sequence[str]) -> Any:
    pattern = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))
    return lambda s: pattern.sub(lambda m: token_marker(m.group(0)), s)


def _marked(value: Any, replace: Any) -> Any:
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return tuple(replace(v) for v in value)
    return value


def with_token_markers(fmt: AgentFormat, tokens: Iterable[str]) -> AgentFormat:
    """``fmt`` with each of ``tokens`` written as a token marker wherever it occurs in the
    format's strings, for building grammars (not for rendering or parsing). A trigger holding
    a marker ends with the first one: free text never holds a marker, so that marker decides.

    Example:
        >>> from agentgrammar.formats import get
        >>> f = with_token_markers(get("qwen3"), ["<think>", "</think>", "<tool_call>", "</tool_call>"])
        >>> f.think_begin == token_marker("<think>"), f.call_begin == token_marker("<tool_call>") + "\\n"
        (True, True)
    """
    tokens = [t for t in dict.fromkeys(tokens) if t]
    if not tokens:
        return fmt
    replace = _replacer(tokens)
    changes = {}
    for f in dataclasses.fields(fmt):
        if f.name in ("name", "name_key", "arguments_key", "id_key", "separators", "trigger"):
            continue
        value = getattr(fmt, f.name)
        new = _marked(value, replace)
        if new != value:
            changes[f.name] = new
    trigger = replace(fmt.trigger or "")
    cut = trigger.find(MARKER_CLOSE)
    changes["trigger"] = trigger if cut < 0 else trigger[: cut + 1]
    return dataclasses.replace(fmt, **changes)
