"""Run MaskBench (JSONSchemaBench schemas with valid and invalid instances) through agentgrammar.

For every ``*.json`` file of FOLDER (each holds ``schema`` and ``tests``), the schema is compiled
against the Llama-3.2 vocabulary with the default (spec) semantics; every test instance,
serialized with ``json.dumps``, is tokenized and fed token by token. With masks on (the
default) the mask is filled before each token, timed, and the token must be in it.

Defaults follow the spec (``Grammar.from_json_schema`` defaults: properties in schema order,
additional properties allowed); ``--any-order`` accepts properties in any order. A file with
no test instances passes when its schema compiles. A file *passes* when every valid instance is accepted to completion and every invalid one is
rejected. Otherwise it is a *compile error* (the schema raised, e.g. an unsupported keyword),
a *validation error* (a valid instance was rejected), an *invalidation error* (an invalid
instance was accepted: a soundness bug), a *crash* (any other exception, or the worker died)
or a *timeout* (the file took longer than ``--timeout`` seconds).

    python tools/maskbench.py ../shared/data/maskbench
    python tools/maskbench.py FOLDER --no-masks --jobs 2 --limit 500
    python tools/maskbench.py FOLDER --write-ratchet tools/maskbench_ratchet.json
    python tools/maskbench.py FOLDER --ratchet tools/maskbench_ratchet.json

Prints a table per source (the part of the file name before ``---`` or the last ``_``), a
table per schema feature (``meta.features``), and the timing distributions: time to first
mask (compile + first mask) and time between masks.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

OUTCOMES = ("passed", "compile_error", "validation_error", "invalidation_error", "crash", "timeout")


@dataclass
class FileResult:
    """The outcome of one MaskBench file, with its mask timings in microseconds."""

    name: str
    outcome: str
    detail: str = ""
    features: List[str] = field(default_factory=list)
    compile_us: float = 0.0
    first_mask_us: Optional[float] = None
    mask_us: List[float] = field(default_factory=list)


def source_of(name: str) -> str:
    """The benchmark source a file belongs to: ``Github_easy---x`` -> ``Github_easy``."""
    if "---" in name:
        return name.split("---", 1)[0]
    stem = name[: -len(".json")] if name.endswith(".json") else name
    head, _, tail = stem.rpartition("_")
    return head if head and tail.isdigit() else stem


class _Runner:
    """Compiles and checks files inside one worker process; holds the vocabulary."""

    def __init__(self, masks: bool, any_order: bool = False) -> None:
        from agentgrammar import Compiler, allocate_token_bitmask
        from agentgrammar.engine.tokenizers import load_llama32_tokenizer
        from agentgrammar.engine.vocabulary import Vocabulary
        from agentgrammar.errors import VocabularyError

        try:
            self.tokenizer = load_llama32_tokenizer()
        except VocabularyError as e:
            raise SystemExit(str(e)) from None
        self.vocab = Vocabulary.from_huggingface(self.tokenizer)
        self.compiler = Compiler(self.vocab)
        self.masks = masks
        self.options = {"any_order": True} if any_order else {}
        self.bitmask = allocate_token_bitmask(1, self.vocab.vocab_size, backend="numpy")

    def run(self, path: Path) -> FileResult:
        from agentgrammar import Grammar
        from agentgrammar.errors import AgentGrammarError

        data = json.loads(path.read_text(encoding="utf-8"))
        result = FileResult(path.name, "passed", features=list(data.get("meta", {}).get("features", [])))
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = self.compiler.compile(Grammar.from_json_schema(data["schema"], **self.options))
        except (AgentGrammarError, RecursionError) as e:
            result.outcome, result.detail = "compile_error", f"{type(e).__name__}: {e}"[:300]
            return result
        result.compile_us = (time.perf_counter() - start) * 1e6
        for i, test in enumerate(data["tests"]):
            ok, note = self._feed(compiled, json.dumps(test["data"]), result)
            if ok != test["valid"]:
                result.outcome = "validation_error" if test["valid"] else "invalidation_error"
                result.detail = f"test {i}: {note or 'accepted'}: {json.dumps(test['data'])[:200]}"
                break
        return result

    def _feed(self, compiled: Any, text: str, result: FileResult) -> Tuple[bool, str]:
        """Feed ``text`` token by token; whether it is accepted to completion, and why not."""
        from agentgrammar import Matcher

        ids = self.tokenizer.encode(text, add_special_tokens=False)
        matcher = Matcher(compiled)
        for pos, token in enumerate([*ids, self.vocab.stop_token_ids[0]]):
            if self.masks:
                start = time.perf_counter()
                matcher.fill_next_token_bitmask(self.bitmask)
                elapsed = (time.perf_counter() - start) * 1e6
                if result.first_mask_us is None:
                    result.first_mask_us = elapsed
                else:
                    result.mask_us.append(elapsed)
                allowed = bool((int(self.bitmask[0, token >> 5]) >> (token & 31)) & 1)
            accepted = matcher.accept_token(token)
            if self.masks and allowed != accepted:
                raise RuntimeError(f"mask and accept_token disagree on token {token} at position {pos}")
            if not accepted:
                end = "the end" if pos == len(ids) else repr(self._text([token]))
                return False, f"rejected {end} after {self._text(ids[:pos])[-60:]!r}"
        return True, ""

    def _text(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), clean_up_tokenization_spaces=False)


def _worker(conn: Connection, masks: bool, any_order: bool) -> None:
    runner = _Runner(masks, any_order)
    conn.send("ready")
    while True:
        path = conn.recv()
        if path is None:
            return
        try:
            result = runner.run(Path(path))
        except Exception as e:  # a crash of ours: reported, not fatal to the run
            tb = traceback.format_exc(limit=3).replace("\n", " | ")
            result = FileResult(Path(path).name, "crash", f"{type(e).__name__}: {e} :: {tb}"[:600])
        conn.send(result)


class _Pool:
    """Worker processes fed one file at a time, so one that hangs or dies can be replaced."""

    def __init__(self, jobs: int, masks: bool, timeout: float, any_order: bool = False) -> None:
        self.ctx = mp.get_context("spawn")
        self.masks, self.timeout, self.any_order = masks, timeout, any_order
        self.workers = [self._spawn() for _ in range(jobs)]

    def _spawn(self) -> Dict[str, Any]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child, self.masks, self.any_order), daemon=True)
        proc.start()
        child.close()
        parent.recv()  # "ready": the tokenizer load is not charged to the first file
        return {"proc": proc, "conn": parent, "job": None, "start": 0.0}

    def run(self, paths: Sequence[Path], on_result: Any) -> None:
        todo = list(reversed(paths))
        while todo or any(w["job"] for w in self.workers):
            for w in self.workers:
                if w["job"] is None and todo:
                    w["job"], w["start"] = todo.pop(), time.monotonic()
                    w["conn"].send(str(w["job"]))
            busy = [w for w in self.workers if w["job"]]
            ready = wait([w["conn"] for w in busy], timeout=0.2)
            for i, w in enumerate(self.workers):
                if w["job"] is None:
                    continue
                if w["conn"] in ready:
                    try:
                        on_result(w["conn"].recv())
                    except EOFError:  # the worker died: a crash in native code
                        on_result(FileResult(w["job"].name, "crash", f"worker died ({w['proc'].exitcode})"))
                        self.workers[i] = self._spawn()
                        continue
                    w["job"] = None
                elif time.monotonic() - w["start"] > self.timeout:
                    w["proc"].kill()
                    on_result(FileResult(w["job"].name, "timeout", f"over {self.timeout:g} s"))
                    self.workers[i] = self._spawn()

    def close(self) -> None:
        for w in self.workers:
            w["conn"].send(None)
            w["proc"].join(timeout=5)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values`` by nearest rank; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarize(results: Sequence[FileResult]) -> Dict[str, Any]:
    """Totals, per-source and per-feature counts, and timing distributions (µs)."""
    by_source: Dict[str, Counter] = defaultdict(Counter)
    by_feature: Dict[str, Counter] = defaultdict(Counter)
    for r in results:
        by_source[source_of(r.name)][r.outcome] += 1
        for f in r.features:
            by_feature[f][r.outcome] += 1
    ttfm = [r.compile_us + r.first_mask_us for r in results if r.first_mask_us is not None]
    between = [t for r in results for t in r.mask_us]
    timing = {
        "time_to_first_mask_us": _dist(ttfm),
        "time_between_masks_us": _dist(between),
        "compile_us": _dist([r.compile_us for r in results if r.outcome != "compile_error" and r.compile_us]),
    }
    return {
        "totals": dict(Counter(r.outcome for r in results)),
        "files": len(results),
        "by_source": {k: dict(v) for k, v in sorted(by_source.items())},
        "by_feature": {k: dict(v) for k, v in sorted(by_feature.items())},
        "timing": timing,
    }


def _dist(values: Sequence[float]) -> Dict[str, float]:
    mean = sum(values) / len(values) if values else float("nan")
    return {
        "n": len(values),
        "mean": mean,
        "p50": percentile(values, 0.5),
        "p99": percentile(values, 0.99),
        "p99.9": percentile(values, 0.999),
        "max": max(values) if values else float("nan"),
    }


def _print_report(summary: Dict[str, Any], console: Any) -> None:
    from rich.table import Table

    def counts_table(title: str, rows: Dict[str, Dict[str, int]]) -> Table:
        table = Table(title=title)
        table.add_column(title.split()[-1])
        for k in (*OUTCOMES, "pass %"):
            table.add_column(k.replace("_", " "), justify="right")
        for name, c in rows.items():
            n = sum(c.values())
            table.add_row(name, *(str(c.get(k, 0)) for k in OUTCOMES), f"{100 * c.get('passed', 0) / n:.1f}")
        return table

    console.print(counts_table("MaskBench by source", summary["by_source"]))
    console.print(counts_table("MaskBench by feature", summary["by_feature"]))
    console.print(counts_table("MaskBench total", {"all": summary["totals"]}))
    table = Table(title="Timing (µs)")
    table.add_column("measure")
    for k in ("n", "mean", "p50", "p99", "p99.9", "max"):
        table.add_column(k, justify="right")
    for name, d in summary["timing"].items():
        table.add_row(
            name,
            *(f"{d[k]:.0f}" if k != "n" else str(d[k]) for k in ("n", "mean", "p50", "p99", "p99.9", "max")),
        )
    console.print(table)


def check_ratchet(results: Sequence[FileResult], ratchet: Sequence[str]) -> List[str]:
    """The files the ratchet records as passing that no longer pass (among those run)."""
    outcome = {r.name: r.outcome for r in results}
    return sorted(n for n in ratchet if n in outcome and outcome[n] != "passed")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder of MaskBench *.json files")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per file")
    parser.add_argument("--limit", type=int, help="run only the first N files (sorted by name)")
    parser.add_argument("--match", help="run only files whose name contains this")
    parser.add_argument("--no-masks", action="store_true", help="only accept tokens; no mask timing")
    parser.add_argument(
        "--any-order", action="store_true", help="compile with any_order=True (properties in any order)"
    )
    parser.add_argument("--json", type=Path, help="write the summary and per-file results here")
    parser.add_argument("--ratchet", type=Path, help="fail if a file this ratchet lists no longer passes")
    parser.add_argument("--write-ratchet", type=Path, help="write the passing file names here")
    parser.add_argument(
        "--show",
        default="validation_error,invalidation_error,crash,timeout",
        help="outcomes whose files are listed with a reason ('' for none)",
    )
    args = parser.parse_args(argv)

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    paths = sorted(p for p in args.folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if args.match:
        paths = [p for p in paths if args.match in p.name]
    paths = paths[: args.limit] if args.limit else paths
    console = Console(width=150, stderr=False)
    results: List[FileResult] = []
    pool = _Pool(max(1, args.jobs), not args.no_masks, args.timeout, args.any_order)
    columns = (
        TextColumn("maskbench"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task("", total=len(paths))

        def on_result(r: FileResult) -> None:
            results.append(r)
            passed = sum(x.outcome == "passed" for x in results)
            progress.update(task, advance=1, description=f"{100 * passed / len(results):.1f}% passing")

        pool.run(paths, on_result)
    pool.close()
    results.sort(key=lambda r: r.name)
    summary = summarize(results)
    _print_report(summary, console)
    shown = {s for s in args.show.split(",") if s}
    for r in results:
        if r.outcome in shown:
            print(f"{r.outcome.upper()}: {r.name}: {r.detail}")
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "files": [r.__dict__ for r in results]}, indent=1)
        )
    if args.write_ratchet:
        names = [r.name for r in results if r.outcome == "passed"]
        args.write_ratchet.write_text(json.dumps(names, indent=0) + "\n")
    status = 0
    if args.ratchet:
        lost = check_ratchet(results, json.loads(args.ratchet.read_text()))
        for name in lost:
            print(f"RATCHET: {name} passed before and does not now")
        status = 1 if lost else 0
    bad = summary["totals"].get("invalidation_error", 0) + summary["totals"].get("crash", 0)
    return 1 if bad else status


if __name__ == "__main__":
    sys.exit(main())
