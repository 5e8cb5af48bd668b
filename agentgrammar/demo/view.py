"""The demo's live view (rich): each run's tokens as they are generated, coloured by region
(think / text / tool call / response), the tool calls as they execute, and the summary table.

Example:
    >>> import io
    >>> from rich.console import Console
    >>> from agentgrammar.demo.runner import DemoSummary
    >>> console = Console(record=True, width=100, file=io.StringIO())
    >>> console.print(summary_table(DemoSummary(model="tiny", format="tags", runs=0)))
    >>> "valid with grammar" in console.export_text()
    True
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .runner import DemoSummary, RunRecord

__all__ = ["REGION_STYLES", "LiveView", "summary_table"]

REGION_STYLES = {
    "think": "italic magenta",
    "text": "white",
    "tool_call": "bold yellow",
    "response": "bold green",
}
"""The colour of each region of the output."""


class LiveView:
    """Prints the runs as they happen on ``console``: ``start_run`` returns the ``on_event``
    handler of one run, ``end_run`` prints its verdict."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def legend(self) -> Text:
        """One line naming the region colours."""
        out = Text("regions: ")
        for region, style in REGION_STYLES.items():
            out.append(region, style=style).append("  ")
        return out

    def start_run(self, index: int, prompt: str, constrained: bool) -> Callable[[Any], None]:
        mode = "[green]with grammar[/]" if constrained else "[red]without grammar[/]"
        self.console.rule(f"run {index + 1} · {mode}", align="left")
        self.console.print(Text("user: ", style="bold") + Text(prompt))
        return self._on_event

    def _on_event(self, event: Any) -> None:
        kind = type(event).__name__
        if kind == "TokenEvent":
            self.console.print(
                Text(event.text, style=REGION_STYLES.get(event.region, "")), end="", soft_wrap=True
            )
        elif kind == "ToolCallStarted":
            args = json.dumps(event.call.arguments, ensure_ascii=False)
            self.console.print()
            self.console.print(Text(f"  ⚙ {event.call.name}({args})", style="cyan"))
        elif kind == "ToolCallFinished":
            if event.error is None:
                self.console.print(Text(f"  → {event.result!r}", style="cyan"))
            else:
                self.console.print(Text(f"  ✗ {event.error}", style="red"))
        elif kind == "TurnFinished":
            self.console.print()

    def end_run(self, rec: RunRecord) -> None:
        if rec.valid:
            self.console.print(Text("✓ valid", style="bold green"))
        else:
            self.console.print(Text(f"✗ invalid: {rec.error}", style="bold red"))


def _k_of_n(k: int, n: int) -> str:
    return f"{k}/{n}" + (f" ({100 * k / n:.0f}%)" if n else "")


def _num(value: Optional[float], unit: str) -> str:
    return "–" if value is None else f"{value:,.1f} {unit}".rstrip().rstrip()


def summary_table(summary: DemoSummary) -> Table:
    """The summary table: validity with and without the grammar, grammar and mask times."""
    data = summary.to_json()
    table = Table(title=f"agentgrammar demo · {summary.model} · format {summary.format}", show_lines=False)
    table.add_column("")
    table.add_column("with grammar", justify="right", style="green")
    table.add_column("without grammar", justify="right", style="red")
    w, wo = summary.with_grammar, summary.without_grammar
    table.add_row("runs", str(w.runs), str(wo.runs))
    table.add_row("valid runs", _k_of_n(w.valid, w.runs), _k_of_n(wo.valid, wo.runs))
    table.add_row(
        "valid tool calls",
        _k_of_n(w.valid_tool_calls, w.tool_calls),
        _k_of_n(wo.valid_tool_calls, wo.tool_calls),
    )
    table.add_row("tokens / s", _num(w.tokens_per_s, ""), _num(wo.tokens_per_s, ""))
    build = f"{_num(data['grammar_build_ms_first'], '')} / {_num(data['grammar_build_ms_mean'], 'ms')}"
    mask = f"{_num(data['mask_us_mean'], '')} / {_num(data['mask_us_p99'], 'µs')}"
    table.add_row("grammar build (first / mean)", build, "–")
    table.add_row("mask per token (mean / p99)", mask, "–")
    table.caption = (
        "valid with grammar: "
        + _k_of_n(w.valid, w.runs)
        + " · valid without grammar: "
        + _k_of_n(wo.valid, wo.runs)
    )
    return table
