"""The ``styled`` call layout's hooks in ``AgentFormat`` (see ``styled`` for the argument
styles): the checks of its fields, a call's structural tag, its text, and reading a call back.

A call is ``call_begin HEAD name_end ARGUMENTS call_end``, ``HEAD`` the tool's name or, with
``call_index``, the name and the call's index (``CallIndexForm``). The tag of a call whose
index comes first opens with ``call_begin`` alone (every tool's tag the same begin, as in
xgrammar's Cohere tag); the others open with the head up to the index or the arguments.

Example:
    >>> from agentgrammar import Tool, ToolCall
    >>> from agentgrammar.formats import AgentFormat, AgentOutput
    >>> fmt = AgentFormat(call_layout="styled", argument_style="gemma", call_begin="<|tool_call>call:",
    ...                   call_end="<tool_call|>", trigger="<|tool_call>")
    >>> text = fmt.render(AgentOutput(tool_calls=[ToolCall("now", {"tz": "UTC"})]))
    >>> text
    '<|tool_call>call:now{tz:<|"|>UTC<|"|>}<tool_call|>'
    >>> fmt.parse(text).tool_calls
    [ToolCall(name='now', arguments={'tz': 'UTC'}, id=None)]
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from ..errors import ToolError
from ..grammar import structural_tag as st
from ..grammar.json_values import STRING_CONSTRAINTS
from ..registry import Tool, ToolCall, check_tool_name
from .call_ids import CallIndexForm
from .errors import FormatParseError, RenderError
from .styled import STYLES, render_arguments
from .styled_parse import StyledParseError, read_arguments

if TYPE_CHECKING:  # pragma: no cover
    from .format import AgentFormat

__all__ = [
    "check_styled",
    "read_styled_call",
    "render_styled_call",
    "styled_call_tags",
    "styled_call_template",
]

#: The most digits of a call index in the head (a bound, so that a model cannot loop on digits).
MAX_INDEX_DIGITS = 6
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def check_styled(fmt: "AgentFormat") -> None:
    """``ValueError`` for fields of the ``styled`` layout that do not fit together."""
    styled = fmt.call_layout == "styled"
    if styled and fmt.argument_style not in STYLES:
        raise ValueError(
            f"the styled layout needs argument_style, one of {STYLES}, got {fmt.argument_style!r}"
        )
    if not styled and (fmt.argument_style is not None or fmt.call_index is not None):
        raise ValueError("argument_style and call_index are fields of the styled layout")
    if fmt.argument_excludes and fmt.argument_style != "gemma":
        raise ValueError("argument_excludes is for the gemma argument style")
    if fmt.call_index is not None:
        CallIndexForm.parse(fmt.call_index)
        if not fmt.name_end:
            raise ValueError("a head with call_index needs name_end (it ends the head)")
    if styled and not fmt.name_end and fmt.argument_style != "gemma":
        raise ValueError("only the gemma style (arguments open with '{') goes without name_end")
    if fmt.response_first and fmt.response_begin is None:
        raise ValueError("response_first needs a response block (response_begin, response_end)")


def _form(fmt: "AgentFormat") -> Optional[CallIndexForm]:
    return CallIndexForm.parse(fmt.call_index) if fmt.call_index is not None else None


def _plain_strings(schema: Any) -> Any:
    """``schema`` with its strings' pattern, format and length bounds dropped: the
    ``minimax_m3_xml`` style writes no constrained string (as in xgrammar), so its grammar is
    looser there and the call's validation against the tool checks them."""
    if isinstance(schema, list):
        return [_plain_strings(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    kinds = schema.get("type")
    stringy = kinds == "string" or (isinstance(kinds, list) and "string" in kinds)
    return {k: _plain_strings(v) for k, v in schema.items() if not (stringy and k in STRING_CONSTRAINTS)}


def styled_call_tags(fmt: "AgentFormat", tool: Tool, any_order: bool = False) -> Tuple[st.Tag, ...]:
    """The structural tag of one call of ``tool`` (the layout has one way to open a call).

    Example:
        >>> from agentgrammar.formats import get
        >>> [t.begin for t in styled_call_tags(get("cohere"), Tool("now", "", {"type": "object"}))]
        ['<cofl:tool_call id="']
    """
    assert fmt.argument_style is not None
    schema = tool.parameters
    if fmt.argument_style == "minimax_m3_xml":
        schema = _plain_strings(schema)
    args: st.Format = st.JSONSchema(
        json_schema=schema,
        style=fmt.argument_style,
        any_order=any_order,
        max_whitespace_cnt=fmt.max_whitespace,
        excludes=list(fmt.argument_excludes),
    )
    if not tool.parameters.get("properties"):
        # The styles read an object without properties as any object; a tool's arguments are
        # closed (as in the other layouts, and as Tool.validate checks): none at all.
        args = st.ConstString(value="{}" if fmt.argument_style == "gemma" else "")
    form = _form(fmt)
    if form is None:
        return (st.Tag(begin=fmt.call_begin + tool.name + fmt.name_end, content=args, end=fmt.call_end),)
    index = st.Regex(pattern=f"[0-9]{{1,{MAX_INDEX_DIGITS}}}")
    if form.index_first:
        rest = st.ConstString(value=form.separator + tool.name + fmt.name_end)
        body = st.Sequence(elements=[index, rest, args])
        return (st.Tag(begin=fmt.call_begin, content=body, end=fmt.call_end),)
    body = st.Sequence(elements=[index, st.ConstString(value=fmt.name_end), args])
    return (st.Tag(begin=fmt.call_begin + tool.name + form.separator, content=body, end=fmt.call_end),)


def _index_of(fmt: "AgentFormat", call: ToolCall, position: int) -> str:
    """The index a head holds: the call's id where it is one (digits), else its position."""
    if call.id is None:
        return str(position)
    if not re.fullmatch(f"[0-9]{{1,{MAX_INDEX_DIGITS}}}", call.id):
        raise RenderError(
            f"the {fmt.name} format writes the call's index in its head as its id: up to "
            f"{MAX_INDEX_DIGITS} digits, got {call.id!r}"
        )
    return call.id


def render_styled_call(
    fmt: "AgentFormat", call: ToolCall, args: Dict[str, Any], tool: Optional[Tool], position: int
) -> str:
    """The text of ``call`` (``args`` in the order to write them), ``position`` its place in the turn."""
    assert fmt.argument_style is not None
    try:
        check_tool_name(call.name)
    except ToolError:
        raise RenderError(f"cannot write a call to {call.name!r}: not a valid tool name") from None
    form = _form(fmt)
    head = call.name if form is None else form.make(call.name, _index_of(fmt, call, position))
    schema = tool.parameters if tool is not None else None
    try:
        body = render_arguments(fmt.argument_style, args, schema, excludes=fmt.argument_excludes)
    except RenderError as e:
        raise RenderError(f"cannot write the call to {call.name!r}: {e}", marker=e.marker) from None
    if fmt.call_end and fmt.call_end in body:
        raise RenderError(
            f"the arguments of {call.name!r} hold {fmt.call_end!r}, the end of the call", marker=fmt.call_end
        )
    return fmt.call_begin + head + fmt.name_end + body + fmt.call_end


def styled_call_template(fmt: "AgentFormat") -> str:
    """A schematic call, for instructions in prompts."""
    assert fmt.argument_style is not None
    form = _form(fmt)
    head = "<tool-name>" if form is None else form.make("<tool-name>", "<call-index>")
    example = render_arguments(fmt.argument_style, {"key": "value"})
    return fmt.call_begin + head + fmt.name_end + example + fmt.call_end


def _error(message: str, offset: int) -> FormatParseError:
    return FormatParseError(message, offset=offset)


def _name_up_to(text: str, pos: int, end: str) -> Tuple[str, int]:
    at = text.find(end, pos) if end else -1
    if end and at < 0:
        raise _error(f"a tool name that is not followed by {end!r}", pos)
    if not end:  # the name runs to the arguments
        m = _NAME.match(text, pos)
        at = m.end() if m else pos
    name = text[pos:at].strip()
    if not name:
        raise _error("a tool call without a name", pos)
    return name, at + len(end)


def _digits(text: str, pos: int) -> Tuple[str, int]:
    m = re.compile("[0-9]+").match(text, pos)
    if m is None:
        raise _error(f"expected the call's index, found {text[pos : pos + 20]!r}", pos)
    return m.group(), m.end()


def read_styled_call(
    fmt: "AgentFormat", text: str, pos: int, tools: Optional[Dict[str, Tool]]
) -> Tuple[str, Optional[str], Dict[str, Any], int]:
    """The name, id (the index, where the head holds one), arguments of the call whose head
    starts at ``pos`` (after ``call_begin``), and the position after its arguments.
    ``FormatParseError`` for text that does not follow the layout."""
    assert fmt.argument_style is not None
    form = _form(fmt)
    call_id: Optional[str] = None
    if form is None:
        name, pos = _name_up_to(text, pos, fmt.name_end)
    elif form.index_first:
        call_id, pos = _digits(text, pos)
        if not text.startswith(form.separator, pos):
            raise _error(f"expected {form.separator!r} after the call's index", pos)
        name, pos = _name_up_to(text, pos + len(form.separator), fmt.name_end)
    else:
        name, pos = _name_up_to(text, pos, form.separator)
        call_id, pos = _digits(text, pos)
        if not text.startswith(fmt.name_end, pos):
            raise _error(f"expected {fmt.name_end!r} after the call's index", pos)
        pos += len(fmt.name_end)
    tool = tools.get(name) if tools is not None else None
    try:
        args, pos = read_arguments(fmt.argument_style, text, pos, tool.parameters if tool else None)
    except StyledParseError as e:
        raise _error(f"the arguments of {name!r}: {e.problem}", e.offset) from None
    return name, call_id, args, pos
