"""The structured deltas of a streamed assistant turn: ``TurnDeltas`` turns the labelled pieces of
``RegionTracker`` into ``ReasoningDelta`` s, ``TextDelta`` s, ``ToolCallNamed`` and
``ToolCallArgumentsDelta`` s, as text arrives.

Boundaries come from the format's markers, the same strings the request grammar writes, matched
exactly: a piece of text is reported only once it is known what it is (text that may still be the
start of a marker, or whitespace that ``parse`` would strip, is held back until the next piece
decides). A tool name is complete when the character after it arrives (names are letters, digits,
``_ . -``; every layout writes a marker or a quote after one), the arguments' JSON when its
brackets close, an xml value when its end marker is complete. So, on text the grammar accepts,
the deltas are exact: joined they give what ``AgentFormat.parse`` reads from the whole turn. Text
that strays from the format (unconstrained generation) stops the call deltas at the first
character that does not fit; the parsed calls are reported after the turn all the same.

Example:
    >>> from agentgrammar.formats import get
    >>> deltas = TurnDeltas(get("tags"))
    >>> text = '<think>Hm.</think>\\n<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    >>> events = [e for k in range(0, len(text), 7) for e in deltas.feed(text[k : k + 7])]
    >>> events += deltas.finish()
    >>> [type(e).__name__ for e in events][:3]
    ['ReasoningDelta', 'ToolCallNamed', 'ToolCallArgumentsDelta']
    >>> "".join(e.text for e in events if type(e).__name__ == "ToolCallArgumentsDelta")
    '{"a": 1}'
    >>> deltas.arguments_texts
    ['{"a": 1}']
"""

from __future__ import annotations

import json
from typing import Callable, List, Optional, Sequence, Tuple, Union

from ..formats import AgentFormat
from ..formats.call_ids import CallIdForm, CallIndexForm
from ..formats.styled_parse import StyledParseError, read_arguments
from ..registry import ToolCall
from .events import (
    AgentEvent,
    ReasoningDelta,
    TextDelta,
    TokenEvent,
    ToolCallArgumentsDelta,
    ToolCallNamed,
)
from .nesting import Nesting
from .regions import RegionTracker

__all__ = ["CallScanner", "TurnDeltas", "call_arguments_texts"]

_WS = " \t\r\n"
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_WAIT = -1  # _match_marker: the text so far may still be any of several markers
_LOST = -2  # _match_marker: the text is none of them


def _match_marker(buf: str, markers: Sequence[str], final: bool) -> int:
    """Which of ``markers`` ``buf`` starts with: the index of the longest one once no longer
    marker is still possible (``final``: no more text comes), ``_WAIT`` while ``buf`` is a
    proper prefix of one, ``_LOST`` when it is none of them."""
    if not final and any(len(m) > len(buf) and m.startswith(buf) for m in markers):
        return _WAIT
    full = [(len(m), k) for k, m in enumerate(markers) if buf.startswith(m)]
    return max(full)[1] if full else _LOST


def _held(text: str, marker: str) -> int:
    """The length of the longest suffix of ``text`` that is a proper prefix of ``marker``."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:n]):
            return n
    return 0


class _Block:
    """The body of a block between ``begin`` and ``end`` (think, response), stripped of
    whitespace as ``parse`` strips it: leading whitespace is dropped, trailing whitespace and
    what may be the end marker are held back until more text comes."""

    def __init__(self, begin: str, end: str) -> None:
        self.begin, self.end = begin, end
        self.skip = len(begin)
        self.pending = ""
        self.started = False

    def feed(self, text: str) -> str:
        if self.skip:
            cut = min(self.skip, len(text))
            self.skip -= cut
            text = text[cut:]
        self.pending += text
        if not self.started:
            self.pending = self.pending.lstrip(_WS)
        at = self.pending.find(self.end) if self.end else -1
        if at >= 0:  # closed: the rest is the marker
            body, self.pending = self.pending[:at].rstrip(_WS), self.pending[at:]
            return self._out(body)
        # what may be the start of the end marker, and the whitespace before it, wait
        cut = len(self.pending) - (_held(self.pending, self.end) if self.end else 0)
        cut = len(self.pending[:cut].rstrip(_WS))
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return self._out(out)

    def close(self) -> str:
        """The held text once the block is over (without its end marker)."""
        rest, self.pending = self.pending, ""
        if self.end and rest.startswith(self.end):
            return ""
        return self._out(rest.rstrip(_WS))

    def _out(self, text: str) -> str:
        self.started = self.started or bool(text)
        return text


class _Segments:
    """Free text as ``parse`` returns it: the text segments between blocks, each stripped,
    joined with newlines, a segment after the first that is only a separator (``glue``) left
    out."""

    def __init__(self, glue: Sequence[str]) -> None:
        self.glue = [g for g in dict.fromkeys(glue) if g]
        self.index = 0
        self.pending = ""
        self.any_out = False  # a segment has been written
        self.seg_out = False  # this segment has been written

    def feed(self, text: str, final: bool = False) -> str:
        self.pending += text
        if not self.seg_out:
            self.pending = self.pending.lstrip(_WS)
            if not self.pending:
                return ""
            core = self.pending.rstrip(_WS)
            if self.index > 0 and (
                (final and core in self.glue) or (not final and any(g.startswith(core) for g in self.glue))
            ):
                if final:
                    self.pending = ""
                return ""
        body = self.pending.rstrip(_WS)
        self.pending = "" if final else self.pending[len(body) :]
        if not body:
            return ""
        if not self.seg_out and self.any_out:
            body = "\n" + body
        self.seg_out = self.any_out = True
        return body

    def end_segment(self) -> str:
        out = self.feed("", final=True)
        self.index += 1
        self.pending, self.seg_out = "", False
        return out


class CallScanner:
    """Follows the text of a turn's tool-call region (every ``"tool_call"`` piece of the turn,
    in order) through the layout of ``fmt``'s calls and reports each call's name and arguments
    as they are written. ``arguments_texts`` lists the complete calls' arguments text (JSON
    layouts: as written; xml and pythonic: ``None``; styled: the arguments' JSON).

    The styled layout's arguments come as one delta, their JSON, once the call's end arrives
    (their text says a value's type only at its end, and nested values end together)."""

    def __init__(
        self, fmt: AgentFormat, call_id: Optional[Callable[[int, str], Optional[str]]] = None
    ) -> None:
        self.fmt = fmt
        self.call_id = call_id
        self.index = 0  # the current call
        self.arguments_texts: List[Optional[str]] = []
        self._buf = ""
        self._state = "block" if fmt._wrapped else "call"
        self._heads = fmt._heads()
        self._begin = ""
        self._name = ""
        self._id = ""
        self._args: List[str] = []
        self._key = ""
        self._json = Nesting()  # the JSON arguments being read
        self._py = Nesting(quotes="\"'", opens="([{", closes=")]}")  # a pythonic value being read
        item, key = fmt.separators
        self._json_head = "{" + json.dumps(fmt.name_key) + key + '"'
        self._after_name = '"' + item + json.dumps(fmt.arguments_key) + key
        self._id_head = item + json.dumps(fmt.id_key) + key + '"' if fmt.id_key else None
        self._index = CallIndexForm.parse(fmt.call_index) if fmt.call_index is not None else None
        # Kimi-K2's "functions.NAME:IDX": the whole head is the call's id
        self._id_form = CallIdForm.parse(fmt.call_id_form) if fmt.call_id_form is not None else None
        self._args_state = {"xml": "params", "pythonic": "py_key", "styled": "styled_args"}.get(
            fmt.call_layout, "args"
        )
        self._styled_from = 0  # where to look for the call's end next, in the styled arguments

    @property
    def lost(self) -> bool:
        """Whether the text strayed from the layout (no further deltas come)."""
        return self._state == "lost"

    def feed(self, text: str, final: bool = False) -> List[AgentEvent]:
        self._buf += text
        out: List[AgentEvent] = []
        # "done" and "tail" may finish a call without more text
        while self._state != "lost" and (self._buf or self._state in ("done", "tail")):
            if not self._step(out, final):
                break
        return out

    # ---- the states ----------------------------------------------------------------------------

    def _step(self, out: List[AgentEvent], final: bool) -> bool:
        """Advance one state; False when more text is needed."""
        state = self._state
        if state == "block":
            return self._literal(self.fmt._openers(), ["call"] * len(self.fmt._openers()), final)
        if state == "call":
            return self._call_begin(final)
        if state in ("name", "id", "json_id", "lead_id"):
            return self._word(out, final)
        if state == "after_name":
            return self._literal([self._after_name], ["args"], final)
        if state == "name_end":
            return self._name_end(final)
        if state == "args":
            return self._json_args(out)
        if state == "tail":
            return self._tail(final)
        if state == "params":
            ends = [self.fmt.param_begin, self.fmt.call_end]
            return self._literal(ends, ["key", "done"], final)
        if state == "key":
            return self._param_key(final)
        if state == "value":
            return self._param_value(out, final)
        if state == "py_key":
            return self._py_key()
        if state == "py_value":
            return self._py_value(out)
        if state == "styled_args":
            return self._styled_args(out, final)
        if state == "done":
            return self._call_done()
        if state == "between":
            return self._between(final)
        raise AssertionError(state)  # pragma: no cover

    def _literal(self, markers: Sequence[str], states: Sequence[str], final: bool) -> bool:
        k = _match_marker(self._buf, markers, final)
        if k == _WAIT:
            return False
        if k == _LOST:
            self._state = "lost"
            return False
        self._buf = self._buf[len(markers[k]) :]
        self._state = states[k]
        return True

    def _call_begin(self, final: bool) -> bool:
        json_object = self.fmt.call_layout == "json_object"
        begins = [b for b, _ in self._heads]
        markers = [b + self._json_head if json_object else b for b in begins]
        if self._id_form is not None:
            markers = [b + self._id_form.prefix for b in begins]
        k = _match_marker(self._buf, markers, final)
        if k == _WAIT:
            return False
        if k == _LOST:
            self._state = "lost"
            return False
        self._buf = self._buf[len(markers[k]) :]
        self._begin, self._name, self._id, self._args = begins[k], "", "", []
        self._json.reset()
        self._styled_from = 0
        # a head that holds the call's index before the name (Cohere's id="0" name="NAME")
        self._state = "lead_id" if self._index is not None and self._index.index_first else "name"
        return True

    def _word(self, out: List[AgentEvent], final: bool) -> bool:
        """A name or an id: its characters, then the marker after it."""
        chars = _ID_CHARS if self._state != "name" else _NAME_CHARS
        n = 0
        while n < len(self._buf) and self._buf[n] in chars:
            n += 1
        if self._state == "name":
            self._name += self._buf[:n]
        else:
            self._id += self._buf[:n]
        self._buf = self._buf[n:]
        if not self._buf:
            return False
        return self._after_word(out, final)

    def _after_word(self, out: List[AgentEvent], final: bool) -> bool:
        """The character after a name or an id has arrived: the word is complete."""
        fmt, state = self.fmt, self._state
        if state == "json_id":
            return self._literal(['"}' + fmt.call_end], ["done"], final)
        if state == "lead_id":
            assert self._index is not None
            return self._literal([self._index.separator], ["name"], final)
        ends = [e for b, e in self._heads if b == self._begin]
        if self._id_form is not None:
            if state == "name":  # the index follows the name
                return self._literal([self._id_form.middle], ["id"], final)
            ends = [self._id_form.suffix + e for e in ends]
        if state == "id":
            if not self._literal(ends, [self._args_state], final):
                return False
        elif self._index is not None and not self._index.index_first:  # the index follows the name
            return self._literal([self._index.separator], ["id"], final)
        elif fmt.call_layout == "json_object":
            if self._buf[0] != '"':
                self._state = "lost"
                return False
            self._state = "after_name"
        elif fmt.id_begin:  # the id, if any, belongs in the name's event: wait for it
            if not self._literal([*ends, fmt.id_begin], ["args"] * len(ends) + ["id"], final):
                return False
            if self._state == "id":
                return True
        else:
            self._state = "name_end"
        self._named(out)
        return True

    def _name_end(self, final: bool) -> bool:
        ends = [e for b, e in self._heads if b == self._begin]
        return self._literal(ends, [self._args_state] * len(ends), final)

    def _named(self, out: List[AgentEvent]) -> None:
        fmt = self.fmt
        call_id: Optional[str] = self._id or None
        if self._id_form is not None and call_id is not None:
            form = self._id_form
            call_id = form.prefix + self._name + form.middle + call_id + form.suffix
        if call_id is None and fmt.id_key is None and fmt.id_begin is None and self.call_id is not None:
            call_id = self.call_id(self.index, self._name)
        out.append(ToolCallNamed(self.index, self._name, call_id))

    def _json_args(self, out: List[AgentEvent]) -> bool:
        buf, pos = self._buf, 0
        if not self._args:  # before the value: whitespace, then its "{"
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            if pos == len(buf):
                self._buf = ""
                return False
            if buf[pos] != "{":
                self._state = "lost"
                return False
        start = pos
        ended = False
        while pos < len(buf):
            pos += 1
            if self._json.feed(buf[pos - 1]) < 0 and self._json.depth == 0:
                ended = True
                break
        piece = buf[start:pos]
        self._buf = buf[pos:]
        if piece:
            self._args.append(piece)
            out.append(ToolCallArgumentsDelta(self.index, piece))
        if ended:
            self._state = "tail"
        return ended

    def _tail(self, final: bool) -> bool:
        fmt = self.fmt
        if fmt.call_layout == "json_object":
            markers, states = ["}" + fmt.call_end], ["done"]
            if self._id_head is not None:
                markers.append(self._id_head)
                states.append("json_id")
            return self._literal(markers, states, final)
        if not fmt.call_end:
            self._state = "done"
            return True
        if not self._buf:
            return False
        if self._buf[0] in _WS and not fmt.call_end.startswith(self._buf[0]):
            self._buf = self._buf[1:]  # whitespace the flexible layout allows after the JSON
            return True
        return self._literal([fmt.call_end], ["done"], final)

    def _param_key(self, final: bool) -> bool:
        # DSML marks JSON values apart (string="false"): the key ends at either marker
        ends = [e for e in (self.fmt.param_name_end, self.fmt.param_name_end_json) if e]
        hits = [(self._buf.find(e), -len(e), e) for e in ends]
        hits = [h for h in hits if h[0] >= 0]
        if not hits:
            return False
        at, _, end = min(hits)
        self._key = self._buf[:at].strip()
        self._buf = self._buf[at + len(end) :]
        self._state = "value"
        return True

    def _param_value(self, out: List[AgentEvent], final: bool) -> bool:
        end = self.fmt.param_end
        at = self._buf.find(end)
        if at >= 0:
            piece, self._buf, self._state = self._buf[:at], self._buf[at + len(end) :], "params"
        else:
            keep = 0 if final else _held(self._buf, end)
            piece, self._buf = self._buf[: len(self._buf) - keep], self._buf[len(self._buf) - keep :]
        if piece:
            out.append(ToolCallArgumentsDelta(self.index, piece, self._key))
        return at >= 0

    def _py_key(self) -> bool:
        """Pythonic layout: the next keyword (``key=``) or the call's closing parenthesis."""
        buf = self._buf.lstrip(_WS)
        if buf.startswith(self.fmt.call_end):
            self._buf, self._state = buf[len(self.fmt.call_end) :], "done"
            return True
        at = buf.find("=")
        key = buf[:at] if at >= 0 else buf
        if not all(ch in _NAME_CHARS or ch in _WS for ch in key):
            self._state = "lost"
            return False
        if at < 0:
            self._buf = buf
            return False
        self._key, self._buf, self._state = key.strip(), buf[at + 1 :], "py_value"
        self._py.reset()
        return True

    def _py_value(self, out: List[AgentEvent]) -> bool:
        """Pythonic layout: a keyword's value as written, up to the ``,`` or ``)`` after it at
        its own level (outside strings, which may be quoted either way)."""
        buf, pos, ended = self._buf, 0, False
        while pos < len(buf):
            if self._py.at_top and buf[pos] in ",)]}":  # the value's end: a comma or the call's ")"
                ended = True
                break
            self._py.feed(buf[pos])
            pos += 1
        piece = buf[:pos]
        if piece:
            out.append(ToolCallArgumentsDelta(self.index, piece, self._key))
        if ended:  # the comma is the layout's; the parenthesis ends the call (_py_key)
            self._buf = buf[pos + 1 :] if buf[pos] == "," else buf[pos:]
            self._state = "py_key"
        else:
            self._buf = ""
        return ended

    def _styled_args(self, out: List[AgentEvent], final: bool) -> bool:
        """Styled layout: the arguments, complete once the call's end follows text that reads
        as them (a raw value may hold the end marker: each place it occurs is tried)."""
        fmt, buf = self.fmt, self._buf
        assert fmt.argument_style is not None
        at = buf.find(fmt.call_end, self._styled_from)
        while at >= 0:
            try:
                args, end = read_arguments(fmt.argument_style, buf, 0)
            except StyledParseError:
                end = -1
            if 0 <= end <= at and not buf[end:at].strip(_WS):
                text = json.dumps(args, ensure_ascii=False)
                self._args.append(text)
                out.append(ToolCallArgumentsDelta(self.index, text))
                self._buf, self._state = buf[at:], "tail"
                return True
            at = buf.find(fmt.call_end, at + 1)
        self._styled_from = max(0, len(buf) - len(fmt.call_end) + 1)
        if final:
            self._state = "lost"
        return False

    def _call_done(self) -> bool:
        is_json = self.fmt.call_layout not in ("xml", "pythonic")
        self.arguments_texts.append("".join(self._args) if is_json else None)
        self.index += 1
        self._state = "between" if self.fmt._wrapped else "call"
        return True

    def _between(self, final: bool) -> bool:
        """After a call in a calls block: the separator and the next call, or the block's end."""
        fmt = self.fmt
        json_object = fmt.call_layout == "json_object"
        heads = [b + self._json_head if json_object else b for b, _ in self._heads]
        markers = [fmt.call_separator + h for h in heads]
        states = ["call"] * len(markers)
        if fmt.calls_end:
            markers.append(fmt.calls_end)
            states.append("block")
        k = _match_marker(self._buf, markers, final)
        if k == _WAIT:
            return False
        if k == _LOST:
            self._state = "lost"
            return False
        if states[k] == "call":
            self._buf = self._buf[len(fmt.call_separator) :]
        else:
            self._buf = self._buf[len(markers[k]) :]
        self._state = states[k]
        return True


Piece = Tuple[str, str]


class TurnDeltas:
    """The structured deltas of one assistant turn of ``fmt`` (see the module docstring).

    ``feed(text)`` takes the turn's text as it arrives and returns the events now known;
    ``finish()`` the rest at the end of the turn. ``call_id(index, name)``, when given, is the id the
    agent gives the turn's ``index``-th call if the model writes none (``ToolCallNamed.id``).
    ``opened``: the start of the turn that the prompt already wrote (an opened think block): it
    sets where the turn is and is not reported. ``token_events``: also report each labelled
    piece of text as a ``TokenEvent``, before its deltas.
    """

    def __init__(
        self,
        fmt: AgentFormat,
        *,
        call_id: Optional[Callable[[int, str], Optional[str]]] = None,
        opened: str = "",
        token_events: bool = False,
    ) -> None:
        self.fmt = fmt
        self.token_events = False
        self.tracker = RegionTracker(fmt)
        self.calls = CallScanner(fmt, call_id)
        self._region = "text"
        self._think = _Block(fmt.think_begin or "", fmt.think_end or "")
        self._response = _Block(fmt.response_begin or "", fmt.response_end or "")
        glue = [fmt.call_separator.strip(_WS), fmt.block_separator.strip(_WS)]
        self._segments = _Segments([] if fmt.calls_or_text else glue)
        if opened:
            self._pieces(self.tracker.feed(opened))
        self.token_events = token_events

    @property
    def arguments_texts(self) -> List[Optional[str]]:
        """The arguments text of each complete call so far (JSON layouts; ``None`` for xml and pythonic)."""
        return self.calls.arguments_texts

    def feed(self, text: str) -> List[AgentEvent]:
        """The events that ``text`` (and the text held back before it) make known."""
        return self._pieces(self.tracker.feed(text))

    def finish(self) -> List[AgentEvent]:
        """The events of the text held back, at the end of the turn."""
        out = self._pieces(self.tracker.flush())
        out += self._close(self._region)
        out += self.calls.feed("", final=True)
        if not self.fmt.has_response:
            out += self._delta(TextDelta, self._segments.end_segment())
        return out

    def _pieces(self, pieces: List[Piece]) -> List[AgentEvent]:
        out: List[AgentEvent] = []
        for text, region in pieces:
            if region != self._region:
                out += self._close(self._region)
                self._region = region
                if region in ("tool_call", "response") and not self.fmt.has_response:
                    out += self._delta(TextDelta, self._segments.end_segment())  # a block parts segments
            if self.token_events:
                out.append(TokenEvent(text, region))
            out += self._piece(text, region)
        return out

    def _piece(self, text: str, region: str) -> List[AgentEvent]:
        if region == "tool_call":
            return self.calls.feed(text)
        if region == "think":
            return self._delta(ReasoningDelta, self._think.feed(text))
        if region == "response":
            return self._delta(TextDelta, self._response.feed(text))
        if self.fmt.has_response:  # separators between blocks: no content
            return []
        return self._delta(TextDelta, self._segments.feed(text))

    def _close(self, region: str) -> List[AgentEvent]:
        if region == "think":
            return self._delta(ReasoningDelta, self._think.close())
        if region == "response":
            return self._delta(TextDelta, self._response.close())
        return []

    @staticmethod
    def _delta(kind: Union[type, Callable[[str], AgentEvent]], text: str) -> List[AgentEvent]:
        return [kind(text)] if text else []


def call_arguments_texts(fmt: AgentFormat, text: str, calls: Sequence[ToolCall]) -> List[str]:
    """Each of ``calls``' arguments (parsed from the turn ``text``) as JSON text: as written in
    the JSON layouts (what its argument deltas join to), the arguments' JSON in the xml layout
    (or where the text strayed from the layout).

    Example:
        >>> from agentgrammar.formats import get
        >>> text = '<tool_call>\\n{"name": "f", "arguments": {"a":1}}\\n</tool_call>'
        >>> call_arguments_texts(get("hermes"), text, [ToolCall("f", {"a": 1})])
        ['{"a":1}']
    """
    deltas = TurnDeltas(fmt)
    deltas.feed(text)
    deltas.finish()
    written = deltas.arguments_texts
    out = []
    for k, call in enumerate(calls):
        found = written[k] if k < len(written) else None
        out.append(found if found is not None else json.dumps(call.arguments, ensure_ascii=False))
    return out
