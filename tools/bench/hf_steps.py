"""Wall time per generated step of constrained ``generate()`` over unconstrained ``generate()``.

Issue 41's target: on a random ~100M-parameter Llama on the CPU, at batch 1 and 8, with a
JSON-schema grammar and a tool-call (TagDispatch) grammar, a step of constrained ``generate()``
takes at most 1.03x a step of unconstrained ``generate()`` on the same model and prompts.

Every run writes exactly the same tokens: a scripted logits processor (last in the list) adds a
large constant to each row's next scripted token, so greedy search picks it, with or without the
grammar's mask before it. The script is a valid document per row (rows differ, so they end at
different steps and the early ones are padded); every token is checked against the grammar
before timing. A clock stopping criterion stamps the end of each step; a run's step time is the
median interval between stamps (the prefill and first step excluded, so every run times the same
steps; the median, as one step preempted by another job on a shared machine would move a mean).

Variants, interleaved within each repeat (so drifts in machine load hit all alike):

* ``none``: the script alone (unconstrained ``generate()``);
* ``plain``: ``GrammarLogitsProcessor`` in ``logits_processor`` only;
* ``early``: the same with ``stopping_criteria=[processor.early_masks]`` (masks computed on a
  worker thread during the forward pass);
* ``auto``: ``processor.early_masks`` left to choose at run time (``EarlyMasks(mode="auto")``).

Prints, per variant, the median step time over repeats, the median over repeats of its step
time over the same repeat's ``none`` step time (paired ratios: less noise on a shared machine)
and the ratio of the fastest repeats (the runs the machine disturbed least, as ``timeit``),
and for ``early`` and ``auto`` how many steps had their masks computed early (median);
``--json`` prints the figures.

``--processor-only`` times the processor's calls over the same scripted tokens with no model
(its own share of a step).

    python -m tools.bench.hf_steps --model 100m --batch 1 8 --threads 1 2 --repeats 5
    python -m tools.bench.hf_steps --processor-only --batch 1 8 --repeats 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Dict, List, Optional, Sequence

from .hf import MODEL_SHAPES, SCHEMA, _model, _tools

VARIANTS = ("none", "plain", "early", "auto")
_CITIES = ["Paris", "Oslo", "San Francisco", "Reykjavik", "Ho Chi Minh City", "Lima", "Nairobi", "Kyoto"]


def documents(kind: str, rows: int) -> List[str]:
    """One valid text per row for the grammar ``kind`` (``json``: the schema's objects, as
    JSON in ``json.dumps``'s default layout; ``tools``: Hermes tool calls), of a few different lengths."""
    if kind == "json":
        return [
            json.dumps(
                {
                    "city": _CITIES[k % 8][:24],
                    "days": 1 + (k * 5) % 14,
                    "unit": ["celsius", "fahrenheit"][k % 2],
                },
            )
            for k in range(rows)
        ]
    from agentgrammar import AgentOutput, ToolCall
    from agentgrammar.formats import get

    fmt = get("hermes")
    out = []
    for k in range(rows):
        calls = [
            ToolCall("search", {"query": f"weather in {_CITIES[k % 8]} this week", "mode": "news"}),
            ToolCall("get_weather", {"city": _CITIES[(k + 3) % 8]}),
        ][: 1 + k % 2]
        out.append(fmt.render(AgentOutput(tool_calls=calls), tools=_tools()))
    return out


def script_ids(tok: Any, compiled: Any, texts: Sequence[str], stop: int) -> List[List[int]]:
    """Each text's token ids and ``stop``, checked token by token against ``compiled``."""
    from agentgrammar import Matcher

    scripts = []
    for k, text in enumerate(texts):
        ids = list(tok(text, add_special_tokens=False)["input_ids"]) + [stop]
        m = Matcher(compiled)
        for t in ids:
            if not m.accept_token(t):
                raise ValueError(f"row {k}: the grammar rejects token {t} of the script {text!r}")
        scripts.append(ids)
    return scripts


class Script:
    """A logits processor that makes greedy search pick the scripted tokens (``stop`` past a
    row's end): a large constant added to one score per row, so a masked token stays ``-inf``."""

    def __init__(self, scripts: List[List[int]], prompt_len: int, stop: int) -> None:
        import torch

        steps = max(map(len, scripts))
        self.table = torch.tensor([s + [stop] * (steps - len(s)) for s in scripts], dtype=torch.long)
        self.rows = torch.arange(len(scripts))
        self.prompt_len = prompt_len
        self.steps = steps

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        t = int(input_ids.shape[1]) - self.prompt_len
        scores[self.rows, self.table[:, t]] += 1e4
        return scores


class Clock:
    """A stopping criterion that never stops and stamps the end of each step."""

    def __init__(self) -> None:
        self.stamps: List[float] = []

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.stamps.append(time.perf_counter())
        return torch.zeros(int(input_ids.shape[0]), dtype=torch.bool)


def _generate(
    model: Any, inputs: Dict[str, Any], script: Script, processors: List[Any], criteria: List[Any]
) -> Any:
    import torch

    clock = Clock()
    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            **inputs,
            logits_processor=[*processors, script],
            stopping_criteria=[clock, *criteria],
            max_new_tokens=script.steps,
            do_sample=False,
        )
    total = time.perf_counter() - start
    s = clock.stamps
    gaps = [b - a for a, b in zip(s, s[1:])]
    return {
        "step_ms": statistics.median(gaps) * 1e3,
        "step_mean_ms": statistics.fmean(gaps) * 1e3,
        "total_ms": total * 1e3,
        "steps": len(s),
        "ids": out[:, inputs["input_ids"].shape[1] :],
    }


def bench(kind: str, model: Any, tok: Any, batch: int, repeats: int, prompt: str) -> Dict[str, Any]:
    """The step times of every variant for one grammar and batch size, on ``model``."""
    import torch

    from agentgrammar import Vocabulary
    from agentgrammar.hf import EarlyMasks, GrammarLogitsProcessor

    vocab = Vocabulary.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiled = compile_grammar(kind, vocab)
    stop = vocab.stop_token_ids[0]
    prompts = [prompt + " " * k + "Answer:" * (k % 3) for k in range(batch)]
    inputs = dict(tok(prompts, return_tensors="pt", padding=True))
    script = Script(
        script_ids(tok, compiled, documents(kind, batch), stop), inputs["input_ids"].shape[1], stop
    )
    processor = GrammarLogitsProcessor(compiled, batch_size=batch, eos_token_id=stop)

    def run(variant: str) -> Dict[str, Any]:
        if variant == "none":
            return _generate(model, inputs, script, [], [])
        processor.reset()
        early = {"early": EarlyMasks(processor, mode="always"), "auto": processor.early_masks}.get(variant)
        res = _generate(model, inputs, script, [processor], [early] if early else [])
        res["prefetched"] = early.prefetched if early else 0
        return res

    for variant in VARIANTS:  # warm-up: the grammar's states' first masks, torch's first calls
        run(variant)
    runs: Dict[str, List[Dict[str, Any]]] = {v: [] for v in VARIANTS}
    for _ in range(repeats):
        for variant in VARIANTS:
            runs[variant].append(run(variant))
    same = all(torch.equal(r["ids"], runs["none"][0]["ids"]) for rs in runs.values() for r in rs)
    rows = {
        v: {
            "step_ms": statistics.median(r["step_ms"] for r in rs),
            "step_mean_ms": statistics.median(r["step_mean_ms"] for r in rs),
            "step_min_ms": min(r["step_ms"] for r in rs),
            "total_ms": statistics.median(r["total_ms"] for r in rs),
            # each repeat's step time over the same repeat's unconstrained one, then the median
            "ratio": statistics.median(r["step_ms"] / b["step_ms"] for r, b in zip(rs, runs["none"])),
            # the run least disturbed by the machine's other work, of each (as timeit reports)
            "ratio_min": min(r["step_ms"] for r in rs) / min(b["step_ms"] for b in runs["none"]),
            "prefetched": statistics.median(r.get("prefetched", 0) for r in rs),
        }
        for v, rs in runs.items()
    }
    return {
        "grammar": kind,
        "batch": batch,
        "steps": runs["none"][0]["steps"],
        "same_tokens": same,
        "rows": rows,
    }


def compile_grammar(kind: str, vocab: Any) -> Any:
    """The bench's grammar ``kind`` compiled for ``vocab``: the schema, or the three tools' Hermes
    structural tag with a call required."""
    from agentgrammar import Compiler, Grammar
    from agentgrammar.formats import get

    compiler = Compiler(vocab)
    if kind == "json":
        return compiler.compile(Grammar.from_json_schema(SCHEMA, whitespace="compact"))
    tag = get("hermes").structural_tag(_tools(), tool_choice="required")
    return compiler.compile(Grammar.from_structural_tag(tag))


def processor_only(kind: str, tok: Any, batch: int, repeats: int) -> float:
    """The mean ``GrammarLogitsProcessor`` call (accept, fill, apply) in ms, median over
    ``repeats`` runs of the scripted tokens with no model: the processor's own share of a step."""
    import torch

    from agentgrammar import Vocabulary
    from agentgrammar.hf import GrammarLogitsProcessor

    vocab = Vocabulary.from_huggingface(tok)
    compiled = compile_grammar(kind, vocab)
    stop = vocab.stop_token_ids[0]
    scripts = script_ids(tok, compiled, documents(kind, batch), stop)
    table = Script(scripts, 0, stop).table
    processor = GrammarLogitsProcessor(compiled, batch_size=batch, eos_token_id=stop)
    scores = torch.zeros(batch, vocab.vocab_size)
    means = []
    for _ in range(repeats + 1):  # the first run visits the states: not timed
        processor.reset()
        ids = torch.full((batch, 8), stop)
        for t in range(table.shape[1]):
            processor(ids, scores)
            ids = torch.cat([ids, table[:, t : t + 1]], 1)
        means.append(statistics.fmean(processor.call_times_s) * 1e3)
    return statistics.median(means[1:])


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grammar", choices=["json", "tools", "both"], default="both")
    parser.add_argument("--model", choices=sorted(MODEL_SHAPES), default="100m", help="random Llama shape")
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8], help="rows per generate()")
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="torch thread settings to try")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each variant")
    parser.add_argument("--prompt", default="Weather in Paris for the next three days, as JSON:")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--processor-only", action="store_true", help="time the processor's calls alone, with no model"
    )
    args = parser.parse_args(argv)

    import torch

    from agentgrammar.engine.tokenizers import load_llama32_tokenizer

    tok = load_llama32_tokenizer()
    tok.padding_side = "left"
    stops = [
        t for t in (tok.convert_tokens_to_ids(s) for s in ("<|end_of_text|>", "<|eot_id|>")) if t is not None
    ]
    if tok.pad_token is None:
        tok.pad_token = tok.decode([stops[0]])
    from agentgrammar import Vocabulary

    stop_ids = list(Vocabulary.from_huggingface(tok).stop_token_ids)
    kinds = ["json", "tools"] if args.grammar == "both" else [args.grammar]
    if args.processor_only:
        torch.set_num_threads(args.threads[0])
        for batch in args.batch:
            for kind in kinds:
                ms = processor_only(kind, tok, batch, args.repeats)
                print(
                    f"batch {batch}, {kind}: a processor call takes {ms:.3f} ms (mean; median of {args.repeats})"
                )
        return
    model = _model(len(tok), tok, stop_ids, args.model)
    results = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for batch in args.batch:
            for kind in kinds:
                res = bench(kind, model, tok, batch, args.repeats, args.prompt)
                res["threads"] = threads
                results.append(res)
                if not args.json:
                    _print(res, args.model, args.repeats)
    if args.json:
        print(json.dumps(results, indent=2))


def _print(res: Dict[str, Any], model: str, repeats: int) -> None:
    cells = ", ".join(
        f"{v} {row['step_ms']:.2f} ms ({row['ratio']:.3f}x, min {row['ratio_min']:.3f}x"
        + (f", {row['prefetched']:g} early)" if v in ("early", "auto") else ")")
        for v, row in res["rows"].items()
    )
    print(
        f"model {model}, torch threads {res['threads']}, batch {res['batch']}, {res['grammar']}, "
        f"{res['steps']} steps, median of {repeats}: {cells}; same tokens: {res['same_tokens']}",
        flush=True,
    )


if __name__ == "__main__":
    main()
