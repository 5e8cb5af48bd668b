"""Running the demo: the same prompts through an ``Agent`` with and without the grammar, and the
figures that compare them (``DemoSummary``).

A run is *valid* when every turn followed the format (it parses), every call named a demo tool
with arguments that validate, every call executed without error, and the run ended with a
response (not cut off by ``max_turns``).

Example:
    >>> s = DemoSummary(model="m", format="tags", runs=0)
    >>> s.to_json()["valid_with_grammar"], s.ok
    (0, True)
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

__all__ = ["DemoSummary", "ModeStats", "RunRecord", "is_valid_run", "run_demo"]


@dataclass
class RunRecord:
    """One agent run of the demo: its prompt, mode, validity and figures."""

    prompt: str
    constrained: bool
    valid: bool
    tool_calls: int
    valid_tool_calls: int
    new_tokens: int
    generate_s: float
    grammar_build_s: List[float]
    mask_times_s: List[float]
    stopped_reason: str
    error: Optional[str] = None
    response: Optional[str] = None


@dataclass
class ModeStats:
    """The runs of one mode (with or without the grammar), summed up."""

    runs: int = 0
    valid: int = 0
    tool_calls: int = 0
    valid_tool_calls: int = 0
    new_tokens: int = 0
    generate_s: float = 0.0
    errors: List[str] = field(default_factory=list)

    def add(self, r: RunRecord) -> None:
        self.runs += 1
        self.valid += int(r.valid)
        self.tool_calls += r.tool_calls
        self.valid_tool_calls += r.valid_tool_calls
        self.new_tokens += r.new_tokens
        self.generate_s += r.generate_s
        if r.error:
            self.errors.append(r.error)

    @property
    def tokens_per_s(self) -> Optional[float]:
        return self.new_tokens / self.generate_s if self.generate_s > 0 else None


def _ms(values: List[float], scale: float) -> Optional[float]:
    return round(statistics.fmean(values) * scale, 3) if values else None


@dataclass
class DemoSummary:
    """The demo's figures; ``to_json()`` is the ``--json`` output (stable keys)."""

    model: str
    format: str
    runs: int
    tools: List[str] = field(default_factory=list)
    with_grammar: ModeStats = field(default_factory=ModeStats)
    without_grammar: ModeStats = field(default_factory=ModeStats)
    grammar_build_s: List[float] = field(default_factory=list)
    mask_times_s: List[float] = field(default_factory=list)
    training: Dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def add(self, r: RunRecord) -> None:
        (self.with_grammar if r.constrained else self.without_grammar).add(r)
        self.grammar_build_s.extend(r.grammar_build_s)
        self.mask_times_s.extend(r.mask_times_s)

    @property
    def ok(self) -> bool:
        """Whether every run with the grammar was valid."""
        return self.with_grammar.valid == self.with_grammar.runs

    def mask_p99_s(self) -> Optional[float]:
        times = sorted(self.mask_times_s)
        return times[min(len(times) - 1, int(0.99 * len(times)))] if times else None

    def to_json(self) -> Dict[str, Any]:
        p99 = self.mask_p99_s()
        out: Dict[str, Any] = {
            "model": self.model,
            "format": self.format,
            "tools": self.tools,
            "runs": self.runs,
            "valid_with_grammar": self.with_grammar.valid,
            "valid_without_grammar": self.without_grammar.valid,
            "tool_calls_with_grammar": self.with_grammar.tool_calls,
            "valid_tool_calls_with_grammar": self.with_grammar.valid_tool_calls,
            "tool_calls_without_grammar": self.without_grammar.tool_calls,
            "valid_tool_calls_without_grammar": self.without_grammar.valid_tool_calls,
            "grammar_build_ms_first": round(self.grammar_build_s[0] * 1e3, 3)
            if self.grammar_build_s
            else None,
            "grammar_build_ms_mean": _ms(self.grammar_build_s, 1e3),
            "mask_us_mean": _ms(self.mask_times_s, 1e6),
            "mask_us_p99": round(p99 * 1e6, 1) if p99 is not None else None,
            "masked_tokens": len(self.mask_times_s),
            "tokens_per_s_with_grammar": _round(self.with_grammar.tokens_per_s),
            "tokens_per_s_without_grammar": _round(self.without_grammar.tokens_per_s),
            "errors_without_grammar": self.without_grammar.errors[:5],
            "errors_with_grammar": self.with_grammar.errors[:5],
            "training": self.training,
            "wall_s": round(self.wall_s, 2),
        }
        return out


def _round(x: Optional[float]) -> Optional[float]:
    return round(x, 1) if x is not None else None


def is_valid_run(run: Any) -> bool:
    """Whether an ``AgentRun`` parsed, validated and executed throughout and ended with a
    response (see the module docstring)."""
    return (
        run.stopped_reason == "response"
        and all(s.error is None for s in run.steps)
        and all(r.ok for s in run.steps for r in s.results)
    )


def _short(message: str, limit: int = 160) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _first_error(run: Any) -> Optional[str]:
    """The first thing that went wrong in a run (shortened), or ``None``."""
    found = _find_error(run)
    return None if found is None else _short(found)


def _find_error(run: Any) -> Optional[str]:
    for s in run.steps:
        if s.error is not None:
            return s.error
        for r in s.results:
            if not r.ok:
                return f"{r.call.name}: {r.error}"
    if run.stopped_reason != "response":
        return f"stopped: {run.stopped_reason}"
    return None


def record(prompt: str, constrained: bool, run: Any, trigger: Optional[str] = None) -> RunRecord:
    """A ``RunRecord`` from an ``AgentRun``. ``tool_calls`` counts the calls made plus the
    turns that do not parse but started a call (they hold ``trigger``)."""
    calls = [r for s in run.steps for r in s.results]
    broken = sum(1 for s in run.steps if s.error is not None and trigger and trigger in (s.text or ""))
    return RunRecord(
        prompt=prompt,
        constrained=constrained,
        valid=is_valid_run(run),
        tool_calls=len(calls) + broken,
        valid_tool_calls=sum(1 for r in calls if r.ok),
        new_tokens=run.n_new_tokens,
        generate_s=sum(s.generate_s for s in run.steps),
        grammar_build_s=[
            s.grammar_build_s for s in run.steps if constrained and s.grammar_build_s is not None
        ],
        mask_times_s=[t for s in run.steps for t in (s.mask_times_s or [])],
        stopped_reason=run.stopped_reason,
        error=_first_error(run),
        response=run.response,
    )


def run_demo(
    agent: Any,
    prompts: List[str],
    summary: DemoSummary,
    *,
    max_new_tokens: int = 128,
    max_turns: int = 3,
    do_sample: bool = False,
    temperature: float = 1.0,
    seed: int = 0,
    reasoning_budget: Optional[int] = None,
    on_run_start: Optional[Callable[[int, str, bool], Optional[Callable[[Any], None]]]] = None,
    on_run_end: Optional[Callable[[RunRecord], None]] = None,
) -> DemoSummary:
    """Run every prompt with the grammar, then without it, adding each run to ``summary``.
    ``on_run_start(index, prompt, constrained)`` may return an ``on_event`` handler for that
    run; ``on_run_end(record)`` follows each run. ``reasoning_budget``: the think block's token
    budget in the constrained runs (``Agent.run(reasoning_budget=...)``)."""
    start = time.perf_counter()
    for constrained in (True, False):
        for k, prompt in enumerate(prompts):
            handler = on_run_start(k, prompt, constrained) if on_run_start is not None else None
            run = agent.run(
                prompt,
                constrained=constrained,
                max_new_tokens=max_new_tokens,
                max_turns=max_turns,
                do_sample=do_sample,
                temperature=temperature,
                seed=seed + k,
                on_event=handler,
                **(
                    {"reasoning_budget": reasoning_budget}
                    if constrained and reasoning_budget is not None
                    else {}
                ),
            )
            rec = record(prompt, constrained, run, getattr(getattr(agent, "format", None), "trigger", None))
            summary.add(rec)
            if on_run_end is not None:
                on_run_end(rec)
    summary.wall_s += time.perf_counter() - start
    return summary
