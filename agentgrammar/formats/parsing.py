"""Reading an assistant turn back: ``AgentFormat.parse`` (``parse_output`` here) reads every form
that the format's grammar accepts (each way a call or a calls block may open), tolerates other
whitespace around markers, and rejects what the grammar never writes: a call cut off, a key given
twice in a call's JSON (at any depth) or a parameter given twice, text after the call of a
``calls_or_text`` format. Model output is hostile input: JSON that a tool must never get (NaN,
numbers past the float range, integers past ``MAX_INT_DIGITS``, nesting past ``MAX_JSON_DEPTH``,
lone surrogates; see ``arguments``) and a raw lone surrogate anywhere in the text are a
``FormatParseError`` with the offset of the problem.

Example:
    >>> from agentgrammar.formats import get
    >>> parse_output(get("llama3"), '<|python_tag|>{"name": "now", "parameters": {}}', None).tool_calls
    [ToolCall(name='now', arguments={}, id=None)]
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..errors import ToolError
from ..registry import Tool, ToolCall
from .arguments import MAX_JSON_DEPTH, DuplicateKeyError, JSONLimitError, decode_strict, loads_strict
from .call_ids import CallIdForm
from .errors import FormatParseError
from .output import AgentOutput
from .pythonic_parse import PythonLiteralError, read_arguments
from .styled_call import read_styled_call
from .tools import ToolsArg, tool_list
from .xml_params import PYTHON_LITERALS, is_raw_string

if TYPE_CHECKING:  # pragma: no cover
    from .format import AgentFormat

__all__ = ["parse_output", "starts_like_call"]

_WS = " \t\r\n"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _error(message: str, offset: int) -> Exception:
    return FormatParseError(message, offset=offset)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _match(text: str, pos: int, marker: str) -> Optional[int]:
    """The position after ``marker`` at ``pos``, whitespace around the marker allowed to
    differ; None when it is not there."""
    if text.startswith(marker, pos):
        return pos + len(marker)
    core = marker.strip(_WS)
    p = _skip_ws(text, pos)
    if not core:
        return p
    if text.startswith(core, p):
        p += len(core)
        return _skip_ws(text, p) if marker[-1] in _WS else p
    return None


def _expect(text: str, pos: int, marker: str, what: str) -> int:
    found = _match(text, pos, marker)
    if found is None:
        raise _error(f"expected {what} {marker!r}, found {text[pos : pos + 20]!r}", pos)
    return found


def _match_first(text: str, pos: int, markers: Sequence[str]) -> Optional[Tuple[str, int]]:
    """The longest of ``markers`` found at ``pos`` (exactly, else with other whitespace), and
    the position after it."""
    ordered = sorted(dict.fromkeys(markers), key=len, reverse=True)
    for m in ordered:
        if m and text.startswith(m, pos):
            return m, pos + len(m)
    for m in ordered:
        found = _match(text, pos, m) if m else None
        if found is not None:
            return m, found
    return None


def _json_at(text: str, pos: int, what: str) -> Tuple[Any, int]:
    pos = _skip_ws(text, pos)
    try:
        return decode_strict(text, pos)
    except DuplicateKeyError as e:
        raise _error(f"{what} names the key {e.key!r} twice", pos) from None
    except JSONLimitError as e:
        raise _error(f"{what} holds {e.problem}", e.offset) from None
    except json.JSONDecodeError as e:
        raise _error(f"{what} is not valid JSON: {e.msg}", e.pos) from None


def starts_like_call(fmt: "AgentFormat", text: str, pos: int) -> bool:
    """Whether ``text`` at ``pos`` (after whitespace) opens tool calls of ``fmt``: one of its
    openers, or, where a call opens with its JSON object, ``{`` then the name key (any
    whitespace).

    Example:
        >>> from agentgrammar.formats import get
        >>> starts_like_call(get("llama3"), ' { "name" : "x"', 0), starts_like_call(get("llama3"), "Hi", 0)
        (True, False)
    """
    p = _skip_ws(text, pos)
    for opener in fmt._openers():
        core = opener.strip(_WS)
        if core and text.startswith(core, p):
            return True
    if fmt.call_layout == "json_object" and not fmt.calls_begin and any(not b for b, _ in fmt._heads()):
        return re.match(r"\{\s*" + re.escape(json.dumps(fmt.name_key)) + r"\s*:", text[p:]) is not None
    return False


def _name_at(text: str, pos: int, ends: Sequence[str], what: str = "tool name") -> Tuple[str, int, str]:
    """The name at ``pos``, up to the first of ``ends`` (the longest at the same place); the
    stripped name, the position after the end, and the end."""
    best: Optional[Tuple[int, int, str]] = None
    for e in ends:
        at = text.find(e, pos)
        if at >= 0 and (best is None or (at, -len(e)) < (best[0], best[1])):
            best = (at, -len(e), e)
    if best is None:
        ended = " or ".join(repr(e) for e in dict.fromkeys(ends))
        raise _error(f"a {what} that is not followed by {ended}", pos)
    at, _, end = best
    return text[pos:at].strip(), at + len(end), end


def _json_value_end(text: str, pos: int, end: str) -> Optional[int]:
    """Where the JSON value at ``pos`` ends when ``end`` follows it directly (whitespace around
    the value allowed) and the value spans an ``end``; else None (the first ``end`` ends it)."""
    first = text.find(end, pos)
    if first < 0 or text[pos : pos + 1].strip(_WS) not in ('"', "[", "{"):
        return None
    try:
        _, after = decode_strict(text, _skip_ws(text, pos))
    except ValueError:  # not JSON, or past a limit: read as before, up to the first marker
        return None
    after = _skip_ws(text, after) if not end[:1].isspace() else after
    return after if after > first and text.startswith(end, after) else None


def _id_head_at(fmt: "AgentFormat", text: str, pos: int, ends: Sequence[str]) -> Tuple[str, str, int]:
    """The name and the id of a ``call_id_form`` head after its call begin, and the position
    after the head."""
    assert fmt.call_id_form is not None
    form = CallIdForm.parse(fmt.call_id_form)
    if not text.startswith(form.prefix, pos):
        raise _error(f"expected the call id's {form.prefix!r}, found {text[pos : pos + 20]!r}", pos)
    name, after, _ = _name_at(text, pos + len(form.prefix), [form.middle])
    digits = re.match("[0-9]+", text[after:])
    if digits is None:
        raise _error(f"the call id of {name!r} has no index after {form.middle!r}", after)
    after += digits.end()
    found = _match_first(text, after, [form.suffix + e for e in ends])
    if found is None:
        raise _error(
            f"expected the end of the call's head after its id, found {text[after : after + 20]!r}", after
        )
    return name, form.prefix + name + form.middle + digits.group() + form.suffix, found[1]


def _xml_params(fmt: "AgentFormat", text: str, pos: int, tool: Optional[Tool]) -> Tuple[Dict[str, Any], int]:
    props = tool.parameters.get("properties", {}) if tool is not None else {}
    args: Dict[str, Any] = {}
    # where raw strings and JSON values have name ends of their own, the end says which it is
    typed = fmt.param_name_end_json is not None and fmt.param_name_end_json != fmt.param_name_end
    name_ends = [fmt.param_name_end, *([fmt.param_name_end_json] if typed else [])]
    while text.startswith(fmt.param_begin, pos):
        key, value_at, name_end = _name_at(text, pos + len(fmt.param_begin), name_ends, "parameter name")
        if key in args:
            raise _error(f"the parameter {key!r} is given twice", pos)
        # a family that marks raw strings apart says so in the name's end (DSML's string="true")
        marked_raw = typed and name_end == fmt.param_name_end
        raw_string = marked_raw or (not typed and tool is not None and is_raw_string(props.get(key)))
        # A JSON value may hold the end marker where it has no line break (MiMo's
        # "</parameter>" inside a JSON string): a JSON value that ends right before the marker
        # is read whole; else the value ends at the first marker.
        json_end = None if raw_string else _json_value_end(text, value_at, fmt.param_end)
        value_end = json_end if json_end is not None else text.find(fmt.param_end, value_at)
        if value_end < 0:
            raise _error(f"parameter {key!r} is not closed", pos)
        raw = text[value_at:value_end]
        if raw_string:
            args[key] = raw
        else:
            try:
                # one level less: the value sits in the arguments object
                args[key] = loads_strict(raw, max_depth=MAX_JSON_DEPTH - 1)
            except DuplicateKeyError as e:
                raise _error(
                    f"the value of parameter {key!r} names the key {e.key!r} twice", value_at
                ) from None
            except JSONLimitError as e:
                if typed or e.kind != "constant":  # JSON past a limit (NaN is a word: text, below)
                    raise _error(
                        f"the value of parameter {key!r} holds {e.problem}", value_at + e.offset
                    ) from None
                args[key] = raw
            except ValueError:  # a string after all (validation, if any, reports it)
                # Qwen3-Coder's template writes booleans and null the Python way (True, None).
                if raw.strip() in PYTHON_LITERALS:
                    args[key] = PYTHON_LITERALS[raw.strip()]
                elif typed:  # the family marked it as JSON (DeepSeek's string="false")
                    raise _error(
                        f"the value of parameter {key!r} is marked as JSON but is not", value_at
                    ) from None
                else:
                    args[key] = raw
        pos = value_end + len(fmt.param_end)
    return args, pos


def _parse_call(
    fmt: "AgentFormat", text: str, pos: int, tools: Optional[Dict[str, Tool]]
) -> Tuple[ToolCall, int]:
    start = pos
    heads = fmt._heads()
    found = _match_first(text, pos, [b for b, _ in heads if b])
    if found is not None:
        begin, pos = found
    elif any(not b for b, _ in heads):
        begin = ""
    else:
        raise _error(f"expected the call marker {fmt.call_begin!r}, found {text[pos : pos + 20]!r}", pos)
    call_id: Optional[str] = None
    if fmt.call_layout == "styled":
        name, call_id, args, pos = read_styled_call(fmt, text, pos, tools)
    elif fmt.call_layout == "json_object":
        obj, pos = _json_at(text, pos, "the tool call")
        if not isinstance(obj, dict) or not isinstance(obj.get(fmt.name_key), str):
            raise _error(f"a tool call without a {fmt.name_key!r} string", start)
        name, args = obj[fmt.name_key], obj.get(fmt.arguments_key, {})
        if not isinstance(args, dict):
            raise _error(f"the arguments of {name!r} are not a JSON object", start)
        known = {fmt.name_key, fmt.arguments_key, *([fmt.id_key] if fmt.id_key is not None else [])}
        if set(obj) - known:
            raise _error(f"unexpected keys {sorted(set(obj) - known)} in a tool call", start)
        if fmt.id_key is not None and fmt.id_key in obj:
            call_id = obj[fmt.id_key]
            if not isinstance(call_id, str):
                raise _error(f"the call id {fmt.id_key!r} of {name!r} is not a string", start)
    else:
        ends = [e for b, e in heads if b == begin]
        if fmt.call_id_form is not None:
            name, call_id, pos = _id_head_at(fmt, text, pos, ends)
        elif not all(ends):  # xml without a name end: the name ends where a parameter or the end starts
            name, _, found = _name_at(text, pos, [fmt.param_begin, fmt.call_end])
            pos = text.find(found, pos)
        else:
            name, pos, found = _name_at(text, pos, [*ends, *([fmt.id_begin] if fmt.id_begin else [])])
            if found == fmt.id_begin:  # the call's id, up to the name's end
                call_id, pos, _ = _name_at(text, pos, ends)
        if fmt.call_layout == "pythonic":
            try:
                args, pos = read_arguments(text, pos)
            except PythonLiteralError as e:
                raise _error(f"the arguments of {name!r}: {e.problem}", e.offset) from None
        elif fmt.call_layout == "name_then_json":
            args, pos = _json_at(text, pos, f"the arguments of {name!r}")
            if not isinstance(args, dict):
                raise _error(f"the arguments of {name!r} are not a JSON object", start)
        else:
            args, pos = _xml_params(fmt, text, pos, tools.get(name) if tools is not None else None)
    if not name:
        raise _error("a tool call without a name", start)
    if fmt.call_end:
        pos = _expect(text, pos, fmt.call_end, "the end of the call")
    return ToolCall(name, args, call_id), pos


def _parse_calls(
    fmt: "AgentFormat", text: str, pos: int, tools: Optional[Dict[str, Tool]], out: List[ToolCall]
) -> int:
    if not fmt._wrapped:
        call, pos = _parse_call(fmt, text, pos, tools)
        out.append(call)
        return pos
    opened = _match_first(text, pos, fmt._openers())
    if opened is None:
        raise _error(
            f"expected the tool calls marker {fmt.calls_begin!r}, found {text[pos : pos + 20]!r}", pos
        )
    pos = opened[1]
    prefixes = [p for p in dict.fromkeys(fmt._call_prefix(b).strip(_WS) for b, _ in fmt._heads()) if p]
    while True:
        call, pos = _parse_call(fmt, text, pos, tools)
        out.append(call)
        sep = fmt.call_separator
        after = pos + len(sep) if sep and text.startswith(sep, pos) else pos
        nxt = _skip_ws(text, after)
        if fmt.call_layout == "pythonic" and not prefixes:  # a call opens with its name
            if sep.strip(_WS) and _match(text, pos, sep) is not None:
                pos = _match(text, pos, sep)  # type: ignore[assignment]
                continue
            break
        if any(text.startswith(p, nxt) for p in prefixes):
            pos = after
            continue
        break
    return _expect(text, pos, fmt.calls_end, "the end of the tool calls") if fmt.calls_end else pos


def _validated(call: ToolCall, tools: Dict[str, Tool]) -> ToolCall:
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(repr(n) for n in tools) or "none"
        raise ToolError(f"the output calls unknown tool {call.name!r} (tools: {known})", tool=call.name)
    return ToolCall(call.name, tool.validate(call.arguments), call.id)


def parse_output(fmt: "AgentFormat", text: str, tools: Optional[ToolsArg]) -> AgentOutput:
    """``fmt.parse(text, tools=tools)`` (see ``AgentFormat.parse``).

    Example:
        >>> from agentgrammar.formats import get
        >>> parse_output(get("hermes"), "Hello", None).text
        'Hello'
    """
    if not isinstance(text, str):
        raise TypeError(f"parse takes a str, got {type(text).__name__}")
    bad = _SURROGATE.search(text)
    if bad is not None:  # no tokenizer writes one; it would reach a tool, then the next prompt
        raise _error(f"the text holds the lone surrogate {bad.group()!r} (not Unicode text)", bad.start())
    for s in fmt.stop:
        if s and text.endswith(s):
            text = text[: -len(s)]
            break
    if fmt.turn_end:  # the grammar ends every turn with it: a turn without it was cut off
        if not text.rstrip(_WS).endswith(fmt.turn_end):
            raise _error(f"the turn does not end with {fmt.turn_end!r} (cut off?)", len(text))
        text = text.rstrip(_WS)[: -len(fmt.turn_end)]
    by_name = {t.name: t for t in tool_list(tools)} if tools is not None else None
    pos, think = 0, None
    if fmt.think_begin is not None and fmt.think_end is not None:
        start = _skip_ws(text, 0)
        # other whitespace around the marker too (GLM's think_begin is "\n<think>")
        body = _match(text, 0, fmt.think_begin)
        if body is not None:
            end = text.find(fmt.think_end, body)
            if end < 0:
                raise _error("the think block is not closed", start)
            think = text[body:end].strip(_WS)
            pos = end + len(fmt.think_end)
            if fmt.think_suffix and text.startswith(fmt.think_suffix, pos):
                pos += len(fmt.think_suffix)
    calls: List[ToolCall] = []
    if fmt.calls_or_text:  # the whole turn is the calls, or text
        start = _skip_ws(text, pos)
        free: Optional[str] = None
        if starts_like_call(fmt, text, start):
            pos = _parse_calls(fmt, text, start, by_name, calls)
            if text[pos:].strip(_WS):
                raise _error(f"text after the tool call: {text[pos : pos + 20].strip(_WS)!r}", pos)
        else:
            free = text[start:].strip(_WS) or None
        if by_name is not None:
            calls = [_validated(c, by_name) for c in calls]
        return AgentOutput(think=think, tool_calls=calls, text=free)
    openers = [(t, "calls") for t in fmt.triggers()]
    if fmt.response_begin is not None:
        openers.append((fmt.response_begin, "response"))
    segments: List[str] = []
    response: Optional[str] = None
    while True:
        hits = [(text.find(m, pos), -len(m), kind) for m, kind in openers]
        hits = [h for h in hits if h[0] >= 0]
        if not hits:
            segments.append(text[pos:])
            break
        at, _, kind = min(hits)
        segments.append(text[pos:at])
        if kind == "calls":
            pos = _parse_calls(fmt, text, at, by_name, calls)
        else:
            assert fmt.response_begin is not None and fmt.response_end is not None
            if response is not None:
                raise _error("a second response block", at)
            body = at + len(fmt.response_begin)
            end = text.find(fmt.response_end, body)
            if end < 0:
                raise _error("the response block is not closed", at)
            response = text[body:end].strip(_WS)
            pos = end + len(fmt.response_end)
    # Between blocks, the separators the format writes there are not free text.
    glue = {"", fmt.call_separator.strip(_WS), fmt.block_separator.strip(_WS)}
    pieces = [s.strip(_WS) for s in segments]
    joined = "\n".join(p for i, p in enumerate(pieces) if p and (i == 0 or p not in glue))
    if by_name is not None:
        calls = [_validated(c, by_name) for c in calls]
    if fmt.response_first and not response:  # the block is always there, empty for no response
        response = None
    return AgentOutput(think=think, tool_calls=calls, response=response, text=joined or None)
