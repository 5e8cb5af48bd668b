"""Typed final output: ``Agent.run(..., output_type=T)`` constrains the final response to the JSON
Schema of ``T`` (a Pydantic model, or any type Pydantic's ``TypeAdapter`` takes) and returns the
validated value as ``AgentRun.output``.

Where the answer goes: inside the family's response block (``<response>`` ... ``</response>``,
Harmony's final channel) in a format with one, whose content becomes the schema's compact JSON
rather than free text; in a format without one, the turn's text itself: a turn is then either
tool calls or the JSON answer (free text before calls is given up). Tool calls stay allowed as
``tool_choice`` says; a turn that must call (``"required"``, a named tool) keeps its grammar.

Example:
    >>> from pydantic import BaseModel
    >>> class City(BaseModel):
    ...     name: str
    ...     population: int
    >>> spec = OutputSpec(City)
    >>> spec.validate('{"name": "Oslo", "population": 709000}')
    City(name='Oslo', population=709000)
    >>> from agentgrammar.formats import get
    >>> tag = spec.constrain(get("tags").structural_tag([], reasoning="disabled"), get("tags"), reasoning="disabled")
    >>> tag.format.content.type
    'grammar'
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from ..errors import AgentError
from ..formats import AgentFormat
from ..formats.tools import resolve_choice
from ..grammar import Grammar
from ..grammar.structural_tag import compact_schema_grammar
from ..grammar.structural_tag import models as st
from ..registry import Tool

__all__ = ["OutputSpec", "OutputValidationError"]


class OutputValidationError(AgentError):
    """The final response is not a valid value of the run's ``output_type`` (a validator the
    schema cannot express, or unconstrained output). ``text``: the response; ``errors``:
    Pydantic's error list; ``run``: the ``AgentRun`` (``output`` is ``None``).

    Example:
        >>> err = OutputValidationError("bad", text="{}", errors=[], run=None)
        >>> isinstance(err, AgentError), err.text
        (True, '{}')
    """

    def __init__(self, message: str, *, text: str, errors: List[Any], run: Any) -> None:
        super().__init__(message)
        self.text = text
        self.errors = errors
        self.run = run


class OutputSpec:
    """The schema of ``output_type`` and its validation.

    ``schema``: its JSON Schema (``TypeAdapter(output_type).json_schema()``).
    ``constrain(tag, fmt, ...)``: a turn's structural tag with the answer made that JSON.
    ``validate(text)``: the validated value (``OutputValidationError`` when invalid).
    """

    def __init__(self, output_type: Any) -> None:
        from pydantic import TypeAdapter

        try:
            self.adapter = TypeAdapter(output_type)
            self.schema = self.adapter.json_schema()
        except Exception as e:  # pydantic's errors for types it cannot describe
            raise AgentError(f"output_type {output_type!r} has no JSON Schema: {e}") from None
        self.output_type = output_type

    def grammar(
        self,
        fmt: AgentFormat,
        tools: Sequence[Tool],
        *,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        reasoning: str = "enabled",
        reasoning_budget: Optional[int] = None,
    ) -> Grammar:
        """``fmt.grammar(tools, ...)`` with the answer made the schema's JSON (see the module
        docstring): in a free-text format, a turn that must call keeps its grammar, and an
        ``"auto"`` turn is the calls or the JSON.

        Example:
            >>> from agentgrammar.formats import get
            >>> g = OutputSpec(int).grammar(get("hermes"), [])
            >>> g.accepts("42"), g.accepts("Forty-two")
            (True, False)
        """
        options: Dict[str, Any] = dict(parallel_tool_calls=parallel_tool_calls, reasoning=reasoning)
        if reasoning_budget is not None:
            options["reasoning_budget"] = reasoning_budget
        tag = fmt.structural_tag(tools, tool_choice=tool_choice, **options)
        selected, mode = resolve_choice(list(tools), tool_choice)
        if mode in ("required", "named") and not fmt.has_response:
            return Grammar.from_structural_tag(tag)  # this turn calls: no answer in it
        calls = None
        if mode == "auto" and not fmt.has_response:
            calls = fmt.structural_tag(selected, tool_choice="required", **options)
        return Grammar.from_structural_tag(self.constrain(tag, fmt, reasoning=reasoning, calls=calls))

    def json_format(self, fmt: AgentFormat) -> st.Format:
        """The answer's grammar: the schema's JSON in the format's compact layout."""
        return st.GrammarText(grammar=compact_schema_grammar(self.schema, fmt.separators))

    def constrain(
        self,
        tag: st.StructuralTag,
        fmt: AgentFormat,
        *,
        reasoning: str,
        calls: Optional[st.StructuralTag] = None,
    ) -> st.StructuralTag:
        """``tag`` (a turn of ``fmt``, as ``AgentFormat.structural_tag`` builds it) with its
        answer made the schema's JSON. In a format with a response block, every response
        block's content. Else the body after the think block becomes the JSON, or, given
        ``calls`` (the same turn with ``tool_choice="required"``), those calls or the JSON."""
        answer = self.json_format(fmt)
        if fmt.has_response:
            if fmt.response_first:  # the block opens every turn: empty where the turn calls
                answer = st.Or(elements=[st.ConstString(value=""), answer])
            return st.StructuralTag(format=_with_response(tag.format, fmt, answer))
        body: st.Format = answer
        if calls is not None:
            body = st.Or(elements=[_body(calls.format, fmt, reasoning), answer])
        if fmt.has_think and reasoning != "disabled":
            assert isinstance(tag.format, st.Sequence)  # request_tag: [think block, body]
            return st.StructuralTag(format=st.Sequence(elements=[tag.format.elements[0], body]))
        return st.StructuralTag(format=body)

    def validate(self, text: str, run: Any = None) -> Any:
        """The value written in ``text``, validated; ``OutputValidationError`` when invalid."""
        from pydantic import ValidationError

        try:
            return self.adapter.validate_json(text)
        except ValidationError as e:
            errors = e.errors(include_url=False)
            first = errors[0]["msg"] if errors else str(e)
            raise OutputValidationError(
                f"the final response is not a valid {_type_name(self.output_type)}: {first} "
                f"({len(errors)} error{'s' if len(errors) != 1 else ''}): {json.dumps(text[:200])}",
                text=text,
                errors=errors,
                run=run,
            ) from None


def _type_name(t: Any) -> str:
    return getattr(t, "__name__", None) or repr(t)


def _body(fmt_tag: st.Format, fmt: AgentFormat, reasoning: str) -> st.Format:
    if fmt.has_think and reasoning != "disabled":
        assert isinstance(fmt_tag, st.Sequence)
        return fmt_tag.elements[-1]
    return fmt_tag


def _with_response(node: Any, fmt: AgentFormat, answer: st.Format) -> Any:
    """``node`` with the content of each response block (a ``Tag`` between the format's
    response markers) replaced by ``answer``."""
    if isinstance(node, st.Tag) and node.begin == fmt.response_begin and node.end == fmt.response_end:
        return node.model_copy(update={"content": answer})
    if isinstance(node, list):
        return [_with_response(x, fmt, answer) for x in node]
    if not isinstance(node, st._Format):
        return node
    update = {}
    for name in type(node).model_fields:
        value = getattr(node, name)
        if isinstance(value, (st._Format, list)):
            new = _with_response(value, fmt, answer)
            if new is not value:
                update[name] = new
    return node.model_copy(update=update) if update else node
