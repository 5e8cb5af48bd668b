"""Rendering an ``AgentOutput`` the way the model writes it (``AgentFormat.render``), with the
checks that make ``parse(render(x)) == x``: no text holds a marker that ``parse`` would read.

Example:
    >>> from agentgrammar.formats import AgentFormat, AgentOutput
    >>> render_output(AgentFormat(), AgentOutput(text="Hi."))
    'Hi.'
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..errors import ToolError
from ..registry import Tool, ToolCall, check_tool_name
from .arguments import order_like
from .call_ids import check_call_id, id_in_head
from .errors import RenderError
from .output import AgentOutput
from .parsing import starts_like_call
from .pythonic import render_arguments
from .styled_call import render_styled_call
from .tools import ToolsArg, tool_list
from .xml_params import check_param_name, fits_raw, is_raw_string

if TYPE_CHECKING:
    from .format import AgentFormat

__all__ = [
    "check_span",
    "dumps",
    "json_name_end",
    "param_markers",
    "render_call",
    "render_output",
    "text_markers",
]

_WS = " \t\r\n"


def dumps(fmt: "AgentFormat", value: Any) -> str:
    """``value`` as JSON in the format's compact layout (its separators, no ASCII escapes)."""
    return json.dumps(value, ensure_ascii=False, separators=fmt.separators, allow_nan=False)


def json_name_end(fmt: "AgentFormat") -> str:
    """The xml layout's name end before a value written as JSON."""
    return fmt.param_name_end if fmt.param_name_end_json is None else fmt.param_name_end_json


def param_markers(fmt: "AgentFormat") -> Tuple[str, ...]:
    """The xml layout's markers, the parameter ones first (what a parameter name never holds)."""
    return (fmt.param_begin, fmt.param_name_end, fmt.param_end, *fmt.markers())


def text_markers(fmt: "AgentFormat") -> List[Tuple[str, str]]:
    """The markers free text never holds, each with what ``parse`` would read it as: the
    triggers and every call opening (what the grammar's free text excludes), the think
    markers and the response's start."""
    out: List[Tuple[str, str]] = [(t, "the start of tool calls") for t in fmt.triggers()]
    out += [(b, "the start of a tool call") for b, _ in fmt._heads() if b]
    out += [(m, "a think marker") for m in (fmt.think_begin, fmt.think_end) if m]
    # parse reads a think marker with other whitespace around it: its core is one too
    out += [(m.strip(_WS), "a think marker") for m in (fmt.think_begin, fmt.think_end) if m and m.strip(_WS)]
    if fmt.response_begin:
        out.append((fmt.response_begin, "the start of the response"))
    first: Dict[str, Tuple[str, str]] = {}
    for marker, what in out:
        first.setdefault(marker, (marker, what))
    return list(first.values())


def check_span(
    fmt: "AgentFormat", text: str, start: int, end: int, markers: Sequence[Tuple[str, str]], what: str
) -> None:
    """``RenderError`` when one of ``markers`` occurs in ``text`` overlapping ``[start,
    end)``: inside the span, or across one of its edges (the span's end and the marker
    after it spelling a marker early)."""
    for marker, role in markers:
        at = text.find(marker, max(0, start - len(marker) + 1), end + len(marker) - 1)
        if at >= 0:
            raise RenderError(
                f"the {what} holds {marker!r} (at offset {max(at, start) - start}), which the "
                f"{fmt.name} format reads as {role}: it cannot be written in the {what}",
                marker=marker,
            )


def render_call(fmt: "AgentFormat", call: ToolCall, tool: Optional[Tool], position: int = 0) -> str:
    """One call as the model writes it (``position``: its index in the turn, for ``call_id_form``)."""
    try:
        check_tool_name(call.name)
    except ToolError:
        raise RenderError(
            f"cannot write a call to {call.name!r}: not a valid tool name (a letter or '_', then "
            "up to 63 letters, digits, '_', '.' or '-')"
        ) from None
    args: Any = call.arguments
    if tool is not None:
        args = order_like(args, tool.parameters)
    if fmt.id_begin is not None and call.id is not None:
        check_call_id(fmt, call.id)
        head = fmt.call_begin + call.name + fmt.id_begin + call.id + fmt.name_end
        return head + dumps(fmt, args) + fmt._call_tail()
    if fmt.call_id_form is not None:
        head = fmt.call_begin + id_in_head(fmt, call, position) + fmt.name_end
        return head + dumps(fmt, args) + fmt._call_tail()
    if fmt.call_layout == "styled":
        return render_styled_call(fmt, call, args, tool, position)
    if fmt.call_layout == "pythonic":
        try:
            return fmt._call_head(call.name) + render_arguments(args) + fmt._call_tail()
        except ValueError as e:
            raise RenderError(f"cannot write the call to {call.name!r}: {e}") from None
    if fmt.call_layout != "xml":
        text = fmt._call_head(call.name) + dumps(fmt, args)
        if fmt.id_key is not None and call.id is not None:
            check_call_id(fmt, call.id)
            item, key = fmt.separators
            text += item + _json_str(fmt.id_key) + key + dumps(fmt, call.id)
        return text + fmt._call_tail()
    props = tool.parameters.get("properties", {}) if tool is not None else {}
    parts = [fmt._call_head(call.name)]
    for key, value in args.items():
        problem = check_param_name(key, param_markers(fmt))
        if problem is not None:
            raise RenderError(f"argument {key!r} of {call.name!r}: {problem}")
        raw = is_raw_string(props.get(key)) if tool is not None else isinstance(value, str)
        text = value if raw and isinstance(value, str) else dumps(fmt, value)
        if not fits_raw(text, fmt.param_end):
            raise RenderError(
                f"argument {key!r} of {call.name!r} cannot be written before {fmt.param_end!r}",
                marker=fmt.param_end,
            )
        name_end = fmt.param_name_end if raw and isinstance(value, str) else json_name_end(fmt)
        parts.append(fmt.param_begin + key + name_end + text + fmt.param_end)
    parts.append(fmt.call_end)
    return "".join(parts)


def render_output(fmt: "AgentFormat", output: AgentOutput, tools: Optional[ToolsArg] = None) -> str:
    """The text of ``output`` in ``fmt``'s layout: ``AgentFormat.render`` (which documents it)."""
    calls = output.tool_calls
    by_name = {t.name: t for t in tool_list(tools)}
    if len(calls) > 1 and not fmt.parallel_calls:
        raise RenderError(f"the {fmt.name} format makes at most one tool call per turn")
    if fmt.calls_or_text and calls and output.text:
        raise RenderError(f"the {fmt.name} format writes either tool calls or text in a turn, not both")
    parts: List[str] = []
    # (what, start, end, markers): texts checked once the whole output is written, since a
    # marker may also start in a text and end in what follows it
    spans: List[Tuple[str, int, int, Sequence[Tuple[str, str]]]] = []

    def body(what: str, text: str, markers: Sequence[Tuple[str, str]]) -> None:
        at = sum(map(len, parts))
        parts.append(text)
        spans.append((what, at, at + len(text), markers))

    def block(begin: Optional[str], text: str, end: Optional[str], what: str) -> None:
        assert begin is not None and end is not None
        parts.append(begin + fmt.block_pad)
        body(f"{what} text", text, [(end, f"the {what} block's end marker")])
        parts.append(fmt.block_pad + end)

    if output.think is not None:
        if not fmt.has_think:
            raise RenderError(f"the {fmt.name} format has no think block")
        block(fmt.think_begin, output.think, fmt.think_end, "think")
        parts.append(fmt.think_suffix)
    if fmt.response_first:  # the response block opens the turn, even when empty
        block(fmt.response_begin, output.response or "", fmt.response_end, "response")
        if calls:
            parts.append(fmt.block_separator)
    if output.text:
        if fmt.has_response:  # as in the grammar: the response block is the only text
            raise RenderError(f"the {fmt.name} format has no free text: put the text in `response`")
        if fmt.calls_or_text and starts_like_call(fmt, output.text, 0):
            head = output.text.lstrip(_WS)
            opener = next((o for o in fmt._openers() if o.strip(_WS) and head.startswith(o.strip(_WS))), None)
            raise RenderError(
                f"the free text starts like a tool call of the {fmt.name} format", marker=opener or "{"
            )
        body("free text", output.text, text_markers(fmt))
        if calls or output.response is not None:
            parts.append(fmt.block_separator)
    if calls:
        rendered = fmt.call_separator.join(
            render_call(fmt, c, by_name.get(c.name), i) for i, c in enumerate(calls)
        )
        parts.append(fmt.calls_begin + rendered + fmt.calls_end if fmt._wrapped else rendered)
    if output.response is not None and not fmt.response_first:
        if not fmt.has_response:
            raise RenderError(f"the {fmt.name} format has no response block: put the text in `text`")
        if calls:
            if not fmt.response_after_calls:
                raise RenderError(f"the {fmt.name} format has no response after tool calls")
            parts.append(fmt.block_separator)
        block(fmt.response_begin, output.response, fmt.response_end, "response")
    parts.append(fmt.turn_end)
    out = "".join(parts)
    for what, start, end, markers in spans:
        check_span(fmt, out, start, end, markers, what)
    for stop in fmt.stop:  # parse drops a stop string that ends the turn
        if stop and out.endswith(stop) and spans and spans[-1][2] == len(out):
            raise RenderError(
                f"the {spans[-1][0]} ends the turn with the stop string {stop!r}, which parse drops",
                marker=stop,
            )
    return out
