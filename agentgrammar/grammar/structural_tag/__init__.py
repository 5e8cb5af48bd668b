"""Structural tags: xgrammar's JSON format for tool-calling output, as typed models
(``models``) and their conversion to grammar IR (``builder``, with one module per concern).

Example:
    >>> from agentgrammar import Grammar
    >>> from agentgrammar.grammar.structural_tag import JSONSchema, StructuralTag, Tag, TriggeredTags
    >>> call = Tag(begin="<tool_call>", content=JSONSchema(json_schema={"type": "object"}), end="</tool_call>")
    >>> g = Grammar.from_structural_tag(StructuralTag(format=TriggeredTags(triggers=["<tool_call>"], tags=[call])))
    >>> g.accepts('Hi <tool_call>{"q": 1}</tool_call>'), g.accepts("<tool_call>oops")
    (True, False)
"""

from .budgets import token_budgets
from .builder import structural_tag_rules
from .models import *  # noqa: F403 (the models are this package's public names)
from .models import __all__ as _model_names
from .parse import MAX_TAG_DEPTH, parse_structural_tag

# The converter's bounded caches, named here so that the compiler's memory accounting
# (``engine/compiler.py``, which walks this module's names) and the benchmarks' cold starts
# find them.
from .schemas import _ebnf_grammar as _ebnf_grammar
from .schemas import _schema_grammars as _schema_grammars
from .schemas import _text_tag as _text_tag
from .schemas import compact_schema_grammar

__all__ = [
    *_model_names,
    "MAX_TAG_DEPTH",
    "compact_schema_grammar",
    "parse_structural_tag",
    "structural_tag_rules",
    "token_budgets",
]
