"""``agentgrammar demo``: load (or train) the model, run the agent with and without the grammar,
show it live and sum it up.

Both modes run the same prompts (``demo_prompts``: a fixed list) with the same sampling: run
``k`` samples at ``--temperature`` (default 1.0) with seed ``--seed + k``, so the only
difference between a run with the grammar and its twin without is the grammar. ``--temperature
0`` decodes greedily. The exit status is 0 when every run with the grammar is valid.

Example (the whole command; the first call trains the embedded model, well under a minute)::

    from agentgrammar.cli import main
    main(["demo", "--runs", "2", "--json"])   # prints the summary JSON; 0 when all valid
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Dict, List, Tuple

from ..errors import AgentError
from ..registry import ToolRegistry
from .corpus import demo_prompts
from .runner import DemoSummary, run_demo

__all__ = ["load_model", "run_demo_command"]


def _progress_training(console: Any) -> Tuple[Any, Any, Any]:
    """A rich progress bar for training: ``(progress, on_train, on_step)``."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("[bold]training the demo model[/] (first use only)"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps · loss {task.fields[loss]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    task: Dict[str, Any] = {}

    def on_train() -> None:
        progress.start()
        task["id"] = progress.add_task("train", total=None, loss="–")

    def on_step(step: int, total: int, loss: float) -> None:
        progress.update(task["id"], completed=step, total=total, loss=f"{loss:.3f}")

    return progress, on_train, on_step


def load_model(args: argparse.Namespace, console: Any, quiet: bool) -> Tuple[Any, Any, str, Dict[str, Any]]:
    """``(model, tokenizer, model name, training info)`` for the demo's arguments."""
    from .model import TrainConfig, load_demo_model, load_local_model

    if args.model:
        try:
            model, tokenizer = load_local_model(args.model)
        except Exception as e:
            raise AgentError(f"cannot load the model at {args.model!r}: {type(e).__name__}: {e}") from e
        return model, tokenizer, str(args.model), {}
    if args.tools:
        raise AgentError("the embedded model knows only the demo tools: give --model PATH to use --tools")
    config = TrainConfig() if args.train_steps is None else TrainConfig(steps=args.train_steps)
    if quiet:
        model, tokenizer, info = load_demo_model(args.format, config)
    else:
        progress, on_train, on_step = _progress_training(console)
        try:
            model, tokenizer, info = load_demo_model(args.format, config, progress=on_step, on_train=on_train)
        finally:
            progress.stop()
    name = f"embedded tiny Llama ({info.get('parameters', 0) / 1e6:.2f}M params)"
    return model, tokenizer, name, {**info, "steps": config.steps}


def _intro(model: str, fmt: str, runs: int) -> str:
    """What the demo is about to show, and what it calls valid."""
    return (
        f"[bold]The same model ({model}), {runs} prompt{'s' if runs != 1 else ''}, twice: with the "
        f"grammar of the {fmt!r} format and without it.[/]\n"
        "A run is [green]valid[/] when every turn follows the format (it parses), every tool call "
        "names a tool with arguments that validate against its schema and runs, and the run ends "
        "with an answer. Valid means well-formed and executable, not correct: a tiny model may "
        "still ask for the wrong city."
    )


def run_demo_command(args: argparse.Namespace, registry: ToolRegistry) -> int:
    """The ``agentgrammar demo`` command (see ``agentgrammar.cli``), with the tools to offer."""
    import torch
    from rich.console import Console

    from ..agent import Agent
    from ..formats import get
    from .view import LiveView, summary_table

    if args.runs < 1:
        raise AgentError("--runs must be at least 1")
    try:
        fmt = get(args.format)
    except ValueError as e:
        raise AgentError(str(e)) from None
    start = time.perf_counter()
    console = Console()
    quiet = bool(args.json) or not sys.stderr.isatty()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is as fast, and fair to a busy machine
    try:
        model, tokenizer, name, training = load_model(args, Console(stderr=True), quiet)
        agent = Agent(model, tokenizer, registry, format=fmt)
        prompts: List[str] = (
            [args.prompt[k % len(args.prompt)] for k in range(args.runs)]
            if args.prompt
            else demo_prompts(args.runs)
        )
        summary = DemoSummary(
            model=name, format=fmt.name, runs=args.runs, tools=registry.names, training=training
        )
        view = None if args.json else LiveView(console)
        if view is not None:
            console.print(_intro(name, fmt.name, args.runs))
            console.print(view.legend())
        run_demo(
            agent,
            prompts,
            summary,
            max_new_tokens=args.max_new_tokens,
            max_turns=args.max_turns,
            do_sample=args.temperature > 0,
            temperature=args.temperature if args.temperature > 0 else 1.0,
            seed=args.seed,
            on_run_start=view.start_run if view is not None else None,
            on_run_end=view.end_run if view is not None else None,
        )
    finally:
        torch.set_num_threads(threads)
    summary.wall_s = time.perf_counter() - start
    if args.json:
        print(json.dumps(summary.to_json(), ensure_ascii=False, default=str))
    else:
        console.print()
        console.print(summary_table(summary))
        if not summary.ok:
            console.print("[bold red]some runs with the grammar were not valid[/]")
    return 0 if summary.ok else 1
