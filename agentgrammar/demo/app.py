"""``agentgrammar demo``: load (or train) the model, run the agent with and without the grammar,
show it live and sum it up.

Both modes run the same prompts (``demo_prompts``: a fixed list) with the same sampling: run
``k`` samples at ``--temperature`` (default 1.0) with seed ``--seed + k``, so the only
difference between a run with the grammar and its twin without is the grammar. ``--temperature
0`` decodes greedily. The exit status is 0 when every run with the grammar is valid.

The command line (``agentgrammar demo``, in ``agentgrammar.cli``, which builds on this module)
turns its flags into ``DemoOptions``.

Example (the whole demo; the first call trains the embedded model, well under a minute)::

    from agentgrammar.demo import demo_registry
    from agentgrammar.demo.app import DemoOptions, run_demo_command
    run_demo_command(DemoOptions(runs=2, json_only=True), demo_registry())  # the summary JSON; 0 when all valid
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import AgentError
from ..registry import ToolRegistry
from .corpus import demo_prompts
from .runner import DemoSummary, run_demo

__all__ = ["DemoOptions", "load_model", "run_demo_command"]


@dataclass(frozen=True)
class DemoOptions:
    """What the demo runs: the ``agentgrammar demo`` flags, one field each (the same defaults).

    Example:
        >>> DemoOptions(runs=2).format, DemoOptions().temperature
        ('tags', 1.0)
    """

    model: Optional[str] = None  # a local Hugging Face model folder; None: the embedded model
    format: str = "tags"  # the output format: a preset name
    tools: Optional[str] = None  # where the offered tools came from, when not the demo's (needs model)
    runs: int = 5  # runs per mode
    json_only: bool = False  # print only the machine-readable summary (JSON)
    prompt: Optional[Sequence[str]] = None  # user prompts, cycled; None: the demo prompts
    max_new_tokens: int = 128
    max_turns: int = 3
    temperature: float = 1.0  # the same in both modes; 0: greedy
    seed: int = 0  # run k samples with seed ``seed + k``
    train_steps: Optional[int] = None  # the embedded model's training budget
    reasoning_budget: Optional[int] = None  # tokens of reasoning per turn (constrained runs)


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


def load_model(options: DemoOptions, console: Any, quiet: bool) -> Tuple[Any, Any, str, Dict[str, Any]]:
    """``(model, tokenizer, model name, training info)`` for the demo's arguments."""
    from .model import TrainConfig, load_demo_model, load_local_model

    if options.model:
        try:
            model, tokenizer = load_local_model(options.model)
        except Exception as e:
            raise AgentError(f"cannot load the model at {options.model!r}: {type(e).__name__}: {e}") from e
        return model, tokenizer, str(options.model), {}
    if options.tools:
        raise AgentError("the embedded model knows only the demo tools: give --model PATH to use --tools")
    config = TrainConfig() if options.train_steps is None else TrainConfig(steps=options.train_steps)
    if quiet:
        model, tokenizer, info = load_demo_model(options.format, config)
    else:
        progress, on_train, on_step = _progress_training(console)
        try:
            model, tokenizer, info = load_demo_model(
                options.format, config, progress=on_step, on_train=on_train
            )
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


def run_demo_command(options: DemoOptions, registry: ToolRegistry) -> int:
    """Run the demo that ``options`` describes with the tools of ``registry``, show it and sum it
    up (``agentgrammar demo``); 0 when every run with the grammar is valid."""
    import torch
    from rich.console import Console

    from ..agent import Agent
    from ..formats import get
    from .view import LiveView, summary_table

    if options.runs < 1:
        raise AgentError("--runs must be at least 1")
    try:
        fmt = get(options.format)
    except ValueError as e:
        raise AgentError(str(e)) from None
    if options.reasoning_budget is not None and not fmt.has_think:
        raise AgentError(f"--reasoning-budget needs a format with a think block; {fmt.name!r} has none")
    start = time.perf_counter()
    console = Console()
    quiet = bool(options.json_only) or not sys.stderr.isatty()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is as fast, and fair to a busy machine
    try:
        model, tokenizer, name, training = load_model(options, Console(stderr=True), quiet)
        agent = Agent(model, tokenizer, registry, format=fmt)
        prompts: List[str] = (
            [options.prompt[k % len(options.prompt)] for k in range(options.runs)]
            if options.prompt
            else demo_prompts(options.runs)
        )
        summary = DemoSummary(
            model=name, format=fmt.name, runs=options.runs, tools=registry.names, training=training
        )
        view = None if options.json_only else LiveView(console)
        if view is not None:
            console.print(_intro(name, fmt.name, options.runs))
            console.print(view.legend())
        run_demo(
            agent,
            prompts,
            summary,
            max_new_tokens=options.max_new_tokens,
            max_turns=options.max_turns,
            do_sample=options.temperature > 0,
            temperature=options.temperature if options.temperature > 0 else 1.0,
            seed=options.seed,
            reasoning_budget=options.reasoning_budget,
            on_run_start=view.start_run if view is not None else None,
            on_run_end=view.end_run if view is not None else None,
        )
    finally:
        torch.set_num_threads(threads)
    summary.wall_s = time.perf_counter() - start
    if options.json_only:
        print(json.dumps(summary.to_json(), ensure_ascii=False, default=str))
    else:
        console.print()
        console.print(summary_table(summary))
        if not summary.ok:
            console.print("[bold red]some runs with the grammar were not valid[/]")
    return 0 if summary.ok else 1
