"""The token budgets of a structural tag: each tag around ``any_text`` or ``any_tokens`` with
``max_tokens``.

The grammar itself does not count tokens (as in xgrammar, ``accept_string`` spends no budget);
a ``Matcher`` given these budgets (``Matcher(compiled, token_budgets=...)``) allows only the
tag's end once its content has spent them.

Example:
    >>> token_budgets({"type": "tag", "begin": "<think>",
    ...     "content": {"type": "any_text", "max_tokens": 64}, "end": "</think>"})
    [TokenBudget(begin=b'<think>', ends=(b'</think>',), max_tokens=64)]
"""

from __future__ import annotations

from typing import Any, List

from pydantic import BaseModel

from ..token_budget import TokenBudget
from ..token_markers import encode_text
from . import models as st
from .parse import parse_structural_tag
from .text import _tag_text

__all__ = ["token_budgets"]


def token_budgets(tag: Any) -> List[Any]:
    """The ``TokenBudget`` of each tag of ``tag`` (a model, dict or JSON text) whose content is
    ``any_text`` or ``any_tokens`` with ``max_tokens``, in the order they are met."""

    out: List[Any] = []
    stack: List[Any] = [parse_structural_tag(tag).format]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
        elif isinstance(node, st.Tag) and isinstance(node.content, (st.AnyText, st.AnyTokens)):
            if node.content.max_tokens is not None:
                ends = node.end if isinstance(node.end, list) else [node.end]
                ends = [] if ends == [""] else ends  # the end "": the region runs to the output's end
                out.append(
                    TokenBudget(
                        encode_text(_tag_text(node.begin, "$")),
                        tuple(encode_text(_tag_text(e, "$")) for e in ends),
                        node.content.max_tokens,
                    )
                )
        elif isinstance(node, BaseModel) and not isinstance(node, (st.JSONSchema, st.GrammarText)):
            stack.extend(reversed([getattr(node, k) for k in type(node).model_fields]))
    return out
