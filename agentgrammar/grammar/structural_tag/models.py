"""Structural tags: typed models of the JSON format xgrammar uses to describe tool-calling output.

A structural tag is ``{"type": "structural_tag", "format": <format>}``; a format is one of the
models below, told apart by its ``type``. ``Grammar.from_structural_tag`` accepts these models,
the same thing as a dict, or as JSON text, and behaves as xgrammar does on the same input.

Example:
    >>> from agentgrammar import Grammar
    >>> from agentgrammar.grammar.structural_tag import ConstString, JSONSchema, StructuralTag, Tag, TriggeredTags
    >>> call = Tag(begin="<tool_call>", content=JSONSchema(json_schema={"type": "object"}), end="</tool_call>")
    >>> tag = StructuralTag(format=TriggeredTags(triggers=["<tool_call>"], tags=[call]))
    >>> g = Grammar.from_structural_tag(tag)
    >>> g.accepts('Let me look. <tool_call>{"q": 1}</tool_call> Done.'), g.accepts("<tool_call>oops")
    (True, False)
"""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Union

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from ..grammar import Grammar

__all__ = [
    "AnyText",
    "AnyTokens",
    "ConstString",
    "Dispatch",
    "ExcludeToken",
    "Format",
    "GrammarText",
    "JSONSchema",
    "OptionalFormat",
    "Or",
    "Plus",
    "Regex",
    "Repeat",
    "Sequence",
    "Star",
    "StructuralTag",
    "Tag",
    "TagsWithSeparator",
    "Token",
    "TokenDispatch",
    "TokenTriggeredTags",
    "TriggeredTags",
]


class _Format(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConstString(_Format):
    """Exactly ``value``."""

    type: Literal["const_string"] = "const_string"
    value: str


class JSONSchema(_Format):
    """JSON valid against ``json_schema``, with xgrammar's layout inside structural tags: flexible
    whitespace, no properties beyond the declared ones, properties in schema order (or any order).
    A ``style`` other than ``"json"`` writes the object's properties as XML-ish parameters
    (``qwen_xml``: ``<parameter=KEY>VALUE</parameter>``; ``grammar.structural_tag.xml_styles``)."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: Union[bool, Dict[str, Any]]
    style: Literal[
        "json",
        "qwen_xml",
        "minimax_xml",
        "minimax_m3_xml",
        "deepseek_xml",
        "glm_xml",
        "cohere_xml",
        "kimi_k3_xml",
        "deepseek_v4_1_xml",
        "gemma",
    ] = "json"
    any_order: bool = False
    max_whitespace_cnt: Optional[int] = Field(default=None, ge=0)
    excludes: List[str] = []  # substrings no string may hold as written (json_schema/excludes.py)


class Token(_Format):
    """Exactly one token, named by its text (``"<tool_call>"``, ``"<|call|>"``) or its id: the
    grammar writes it as a token marker (``agentgrammar.grammar.token_markers``), so it compiles
    only for a vocabulary marked for it (``Vocabulary.with_token_markers``, which takes ids too)."""

    type: Literal["token"] = "token"
    token: Union[int, str]


class AnyText(_Format):
    """Any text in which none of ``excludes`` occurs. As a tag's content it runs up to the first
    occurrence of the tag's end."""

    type: Literal["any_text"] = "any_text"
    excludes: List[str] = []
    max_tokens: Optional[int] = Field(default=None, ge=0)  # only None is supported
    max_chars: Optional[int] = Field(default=None, ge=0)  # only None is supported


class ExcludeToken(_Format):
    """Exactly one token, any but ``exclude_tokens`` (and a token end of the tag around it);
    see ``structural_tag.token_items``."""

    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: List[Union[int, str]] = []


class AnyTokens(_Format):
    """Any tokens but ``exclude_tokens`` (and a token end of the tag around it), at most
    ``max_tokens`` of them as a tag's content; see ``structural_tag.token_items``."""

    type: Literal["any_tokens"] = "any_tokens"
    exclude_tokens: List[Union[int, str]] = []
    max_tokens: Optional[int] = Field(default=None, ge=0)


class Regex(_Format):
    """Text that fully matches ``pattern``."""

    type: Literal["regex"] = "regex"
    pattern: str


class GrammarText(_Format):
    """Text derived from the EBNF ``grammar`` (its rule ``root``). ``grammar`` may also be a
    ``Grammar`` at hand: it is then used as it is, not printed and parsed back, and it is
    dumped (``model_dump``, ``model_dump_json``) as its EBNF text, as xgrammar expects.

    Example:
        >>> from agentgrammar import Grammar
        >>> GrammarText(grammar=Grammar.from_regex("a+")).model_dump()["grammar"]
        'root ::= "a"+'
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    type: Literal["grammar"] = "grammar"
    grammar: Union[str, Grammar]
    syntax: Literal["ebnf"] = "ebnf"

    @field_serializer("grammar")
    def _grammar_text(self, grammar: Union[str, Grammar]) -> str:
        return grammar if isinstance(grammar, str) else str(grammar)


class Sequence(_Format):
    """Each element in turn."""

    type: Literal["sequence"] = "sequence"
    elements: List["Format"]


class Or(_Format):
    """Exactly one of the elements."""

    type: Literal["or"] = "or"
    elements: List["Format"]


class OptionalFormat(_Format):
    """``content`` or nothing."""

    type: Literal["optional"] = "optional"
    content: "Format"


class Plus(_Format):
    """``content`` one or more times."""

    type: Literal["plus"] = "plus"
    content: "Format"


class Star(_Format):
    """``content`` zero or more times."""

    type: Literal["star"] = "star"
    content: "Format"


class Repeat(_Format):
    """``content`` ``min`` to ``max`` times; ``max=-1``: no upper bound."""

    type: Literal["repeat"] = "repeat"
    min: int = Field(ge=0)
    max: int = Field(ge=-1)
    content: "Format"


class Tag(_Format):
    """``begin``, then ``content``, then ``end`` (or one of several ends)."""

    type: Literal["tag"] = "tag"
    begin: Union[str, Token]
    content: "Format"
    end: Union[str, List[str], Token]


class TriggeredTags(_Format):
    """Free text until one of ``triggers`` appears; the trigger opens the tag whose ``begin`` it
    starts, which must then be completed; then free text again (or the end, with
    ``stop_after_first``). ``at_least_one``: the output starts with a tag. ``excludes`` never
    occur in the free text."""

    type: Literal["triggered_tags"] = "triggered_tags"
    triggers: List[str]
    tags: List[Tag]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: List[str] = []


class TokenTriggeredTags(_Format):
    """``triggered_tags`` on tokens: any tokens but ``exclude_tokens`` until a trigger token,
    which opens the tag whose ``begin`` is that token."""

    type: Literal["token_triggered_tags"] = "token_triggered_tags"
    trigger_tokens: List[Union[int, str]]
    tags: List[Tag]
    exclude_tokens: List[Union[int, str]] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class TagsWithSeparator(_Format):
    """Tags one after another with ``separator`` between them (none at all unless
    ``at_least_one``; only one with ``stop_after_first``)."""

    type: Literal["tags_with_separator"] = "tags_with_separator"
    tags: List[Tag]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


class Dispatch(_Format):
    """Free text until one of the rules' trigger strings appears, then that rule's format; then
    free text again (``loop``) or the end."""

    type: Literal["dispatch"] = "dispatch"
    rules: List[Tuple[str, "Format"]]
    loop: bool = True
    excludes: List[str] = []


class TokenDispatch(_Format):
    """``dispatch`` on tokens: any tokens but ``exclude_tokens`` until one of the rules' tokens,
    then that rule's format; then again (``loop``) or the end."""

    type: Literal["token_dispatch"] = "token_dispatch"
    rules: List[Tuple[Union[int, str], "Format"]]
    loop: bool = True
    exclude_tokens: List[Union[int, str]] = []


Format = Annotated[
    Union[
        ConstString,
        JSONSchema,
        AnyText,
        Token,
        Regex,
        GrammarText,
        Sequence,
        Or,
        OptionalFormat,
        Plus,
        Star,
        Repeat,
        Tag,
        TriggeredTags,
        TagsWithSeparator,
        Dispatch,
        ExcludeToken,
        AnyTokens,
        TokenTriggeredTags,
        TokenDispatch,
    ],
    Field(discriminator="type"),
]

for _model in (
    Sequence,
    Or,
    OptionalFormat,
    Plus,
    Star,
    Repeat,
    Tag,
    TriggeredTags,
    TagsWithSeparator,
    Dispatch,
    TokenTriggeredTags,
    TokenDispatch,
):
    _model.model_rebuild()


class StructuralTag(_Format):
    """The top level: ``{"type": "structural_tag", "format": ...}``."""

    type: Literal["structural_tag"] = "structural_tag"
    format: Format
