"""``RegionTracker``: which region of the format (think, text, tool call, response) each piece
of an assistant turn's text is in, computed incrementally.

``RegionTracker`` only needs an ``AgentFormat``, so a command line can reuse it on any text
stream. Text that may be the start of a marker is held back until it is known (so a piece can
arrive a token late); ``flush()`` releases it at the end.

Example:
    >>> from agentgrammar.formats import get
    >>> tracker = RegionTracker(get("tags"))
    >>> pieces = []
    >>> for chunk in ["<thi", "nk>Hm.</think>\\n<tool", '_call>{"name": "f", ', '"arguments": {"s": "</tool_call>"}}',
    ...               "</tool_call>\\n<response>Done", ".</response>"]:
    ...     pieces += tracker.feed(chunk)
    >>> pieces += tracker.flush()
    >>> for text, region in pieces:
    ...     print(f"{region:9} {text!r}")
    think     '<think>Hm.</think>'
    text      '\\n'
    tool_call '<tool_call>{"name": "f", '
    tool_call '"arguments": {"s": "</tool_call>"}}'
    tool_call '</tool_call>'
    text      '\\n'
    response  '<response>Done'
    response  '.</response>'
    >>> tracker.think
    'Hm.'
"""

from __future__ import annotations

from typing import Collection, List, Optional, Tuple

from ..formats import AgentFormat
from .nesting import Nesting

__all__ = ["RegionTracker"]

Piece = Tuple[str, str]


def _held_suffix(text: str, markers: Collection[str]) -> int:
    """The length of the longest suffix of ``text`` that is a proper prefix of a marker."""
    best = 0
    for m in markers:
        for n in range(min(len(m) - 1, len(text)), best, -1):
            if text.endswith(m[:n]):
                best = n
                break
    return best


class RegionTracker:
    """Follows one assistant turn of ``fmt`` as text arrives and labels each piece with its
    region: ``"think"``, ``"text"``, ``"tool_call"`` or ``"response"`` (markers belong to the
    block they open or close; separators between blocks are ``"text"``).

    The think block is recognised only at the start of the turn (as the format's parser does).
    In JSON call layouts a call's end marker counts only outside JSON strings and brackets, so
    an argument that contains the marker does not end the call; in formats whose calls have no
    end marker (Llama-3's ``<|python_tag|>``) the rest of the turn is ``"tool_call"``.

    ``feed(text)`` returns the pieces that are now known; ``flush()`` the rest at the end.
    ``region`` is the current region, ``think`` the think block's text so far (stripped, no
    markers; ``None`` before one opens) and ``think_closed`` whether it has closed.
    """

    def __init__(self, fmt: AgentFormat) -> None:
        self.fmt = fmt
        self.region = "text"
        self.think: Optional[str] = None
        self.think_closed = False
        self._pending = ""
        self._think_parts: List[str] = []
        self._think_allowed = fmt.has_think
        self._json = fmt.call_layout not in ("xml", "styled")
        # The JSON scan of the current tool-call block.
        self._nest = Nesting()
        self._opened = False
        self._head = False
        if fmt.calls_begin:
            self._call_end = fmt.calls_end
        else:
            self._call_end = fmt.call_end
        # A block without an end marker: wrapped calls run to the end of the turn; a lone JSON
        # call ends when its object closes.
        self._runs_to_end = not self._call_end and bool(fmt.calls_begin)

    # ---- public --------------------------------------------------------------------------------

    def feed(self, text: str) -> List[Piece]:
        """The labelled pieces of ``text`` (plus held-back text) that are now known."""
        out: List[Piece] = []
        buf = self._pending + text
        self._pending = ""
        pos = 0
        while pos < len(buf):
            if self.region == "tool_call":
                pos = self._scan_call(buf, pos, out)
            else:
                pos = self._scan_literal(buf, pos, out)
            if pos < 0:  # the rest is held back
                break
        return out

    def flush(self) -> List[Piece]:
        """The held-back text, in the current region (call at the end of the turn)."""
        rest, self._pending = self._pending, ""
        out: List[Piece] = []
        if rest:
            self._emit(rest, self.region, out)
        return out

    # ---- internals -----------------------------------------------------------------------------

    def _emit(self, text: str, region: str, out: List[Piece]) -> None:
        if not text:
            return
        if region == "think":
            self._think_parts.append(text)
            self._update_think()
        elif region == "text" and self._think_allowed and text.strip():
            self._think_allowed = False
        if region != "text":
            self._think_allowed = self._think_allowed and region == "think"
        if out and out[-1][1] == region:
            out[-1] = (out[-1][0] + text, region)
        else:
            out.append((text, region))

    def _update_think(self) -> None:
        body = "".join(self._think_parts)
        begin, end = self.fmt.think_begin or "", self.fmt.think_end or ""
        if body.startswith(begin):
            body = body[len(begin) :]
        if self.think_closed and end and body.endswith(end):
            body = body[: -len(end)]
        self.think = body.strip()

    def _openers(self) -> List[Tuple[str, str]]:
        fmt = self.fmt
        found: List[Tuple[str, str]] = []
        if self._think_allowed and fmt.think_begin:
            found.append((fmt.think_begin, "think"))
        found.extend((t, "tool_call") for t in fmt.triggers())
        if fmt.response_begin:
            found.append((fmt.response_begin, "response"))
        return found

    def _closer(self) -> str:
        if self.region == "think":
            return self.fmt.think_end or ""
        if self.region == "response":
            return self.fmt.response_end or ""
        return self._call_end

    def _scan_literal(self, buf: str, pos: int, out: List[Piece]) -> int:
        """Text, think, response (and xml calls): the earliest marker wins."""
        if self.region == "text":
            markers = self._openers()
        else:
            closer = self._closer()
            markers = [(closer, "text")] if closer else []
        hits = [(buf.find(m, pos), -len(m), m, region) for m, region in markers]
        hits = [h for h in hits if h[0] >= 0]
        if hits:
            at, _, marker, region = min(hits)
            self._emit(buf[pos:at], self.region, out)
            if self.region == "text":  # an opener belongs to the new block
                self._enter(region)
                self._emit(marker, region, out)
                if region == "tool_call":
                    self._start_call(marker)
            else:  # a closer belongs to the block it closes
                if self.region == "think":
                    self.think_closed = True
                    self._think_allowed = False
                self._emit(marker, self.region, out)
                self._enter("text")
            return at + len(marker)
        held = _held_suffix(buf[pos:], [m for m, _ in markers])
        self._emit(buf[pos : len(buf) - held], self.region, out)
        self._pending = buf[len(buf) - held :]
        return -1

    def _enter(self, region: str) -> None:
        self.region = region
        if region != "think":
            self._think_allowed = False

    def _start_call(self, opener: str) -> None:
        self._nest.reset()
        self._opened = False
        # NAME then JSON: the arguments' JSON starts after the name's end marker.
        self._head = self.fmt.call_layout == "name_then_json"
        if self._json and not self.fmt.calls_begin and not self.fmt.call_begin:
            for ch in opener:  # the trigger is the start of the JSON object itself
                self._json_char(ch)

    def _json_char(self, ch: str) -> None:
        if self._nest.feed(ch) > 0:
            self._opened = True

    def _scan_head(self, buf: str, pos: int, out: List[Piece]) -> int:
        """A call's name up to the end of its name marker (any variant), as the call's text."""
        ends = [e for e in dict.fromkeys((self.fmt.name_end, *self.fmt.name_end_variants)) if e]
        hits = [(buf.find(e, pos), -len(e), e) for e in ends]
        hits = [h for h in hits if h[0] >= 0]
        if hits:
            at, _, marker = min(hits)
            self._emit(buf[pos : at + len(marker)], "tool_call", out)
            self._head = False
            return at + len(marker)
        held = _held_suffix(buf[pos:], ends)
        self._emit(buf[pos : len(buf) - held], "tool_call", out)
        self._pending = buf[len(buf) - held :]
        return -1

    def _scan_call(self, buf: str, pos: int, out: List[Piece]) -> int:
        if not self._json:
            return self._scan_literal(buf, pos, out)
        if self._head:
            return self._scan_head(buf, pos, out)
        end = self._call_end
        start = pos
        while pos < len(buf):
            at_top = self._nest.at_top
            if at_top and end and not self._runs_to_end:
                if buf.startswith(end, pos):
                    self._emit(buf[start : pos + len(end)], "tool_call", out)
                    self._enter("text")
                    return pos + len(end)
                if end.startswith(buf[pos:]):  # maybe the end marker: wait for more
                    self._emit(buf[start:pos], "tool_call", out)
                    self._pending = buf[pos:]
                    return -1
            self._json_char(buf[pos])
            pos += 1
            if not end and not self._runs_to_end and self._opened and self._nest.at_top:
                self._emit(buf[start:pos], "tool_call", out)
                self._enter("text")
                return pos
        self._emit(buf[start:pos], "tool_call", out)
        return pos


# --------------------------------------------------------------------------- the streamer
