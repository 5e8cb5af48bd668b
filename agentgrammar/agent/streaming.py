"""Streaming an assistant turn: ``make_streamer``, a ``transformers`` streamer that turns the
generated tokens into ``TokenEvent`` s with their region (``regions.RegionTracker``), the turn's
structured deltas (``deltas.TurnDeltas``) and ``ThinkEvent`` s.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Collection, List, Optional

from ..errors import AgentGrammarError
from ..formats import AgentFormat
from .deltas import TurnDeltas
from .events import AgentEvent, ThinkEvent
from .regions import RegionTracker

__all__ = ["RegionTracker", "make_streamer"]


@functools.lru_cache(maxsize=None)
def _streamer_base() -> type:
    try:
        from transformers.generation.streamers import BaseStreamer
    except ImportError:  # pragma: no cover - streaming is only used with transformers
        return object
    return BaseStreamer


def make_streamer(
    tokenizer: Any,
    fmt: AgentFormat,
    on_event: Callable[[AgentEvent], None],
    *,
    stop_token_ids: Collection[int] = (),
    kept_stop_ids: Collection[int] = (),
    opened: str = "",
    call_id: Optional[Callable[[int, str], Optional[str]]] = None,
) -> Any:
    """A ``transformers`` streamer (``generate(streamer=...)``, batch size 1) that reports
    ``TokenEvent`` s with their region, the turn's structured deltas (``agent.deltas``:
    reasoning and text deltas, tool-call names and argument deltas) and a ``ThinkEvent`` when
    the think block closes (or, from ``end()``, when the turn ends with it open).

    The first ``put`` (the prompt) is skipped. The generated ids are decoded as a whole each
    time and only the new suffix is reported, so a character split over tokens comes out whole
    (text ending in an incomplete character waits for the next token). Tokens from the first
    stop token on are ignored, but for ``kept_stop_ids`` (stop tokens that are markers of the
    format, such as ``<|call|>``), which are reported before the stream stops. ``opened``: the
    start of the turn that the prompt already wrote (an opened think block); it sets the regions
    and is not reported. ``call_id``: as for ``TurnDeltas``.
    """
    base = _streamer_base()

    class AgentStreamer(base):  # type: ignore[valid-type, misc]
        def __init__(self) -> None:
            self.deltas = TurnDeltas(fmt, call_id=call_id, opened=opened, token_events=True)
            self.tracker = self.deltas.tracker
            self.ids: List[int] = []
            self.emitted = ""
            self.prompt_seen = False
            self.stopped = False
            self.ended = False
            self.think_reported = False
            self.stop_ids = frozenset(stop_token_ids)
            self.kept_ids = frozenset(kept_stop_ids)

        def put(self, value: Any) -> None:
            shape = tuple(getattr(value, "shape", ()))
            if len(shape) > 1 and shape[0] > 1:
                raise AgentGrammarError("the agent's streamer handles batch size 1 only")
            ids = [int(i) for i in (value.reshape(-1).tolist() if hasattr(value, "reshape") else value)]
            if not self.prompt_seen:
                self.prompt_seen = True
                return
            if self.stopped:
                return
            for i in ids:
                if i in self.stop_ids:
                    self.stopped = True
                    if i in self.kept_ids:
                        self.ids.append(i)
                    break
                self.ids.append(i)
            text = tokenizer.decode(self.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            if text.endswith("\ufffd") or not text.startswith(self.emitted):
                return
            new, self.emitted = text[len(self.emitted) :], text
            self._report(self.deltas.feed(new))

        def end(self) -> None:
            if self.ended:  # generate() ends it; the agent ends it too when generate() raised
                return
            self.ended = True
            self._report(self.deltas.finish())
            tracker = self.tracker
            if not self.think_reported and tracker.think is not None:
                self.think_reported = True
                on_event(ThinkEvent(tracker.think))

        def _report(self, events: List[AgentEvent]) -> None:
            for event in events:
                on_event(event)
            if self.tracker.think_closed and not self.think_reported:
                self.think_reported = True
                on_event(ThinkEvent(self.tracker.think or ""))

    return AgentStreamer()
