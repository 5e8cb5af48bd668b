"""Per-step overhead of ``GrammarLogitsProcessor`` against xgrammar's HF processor in ``generate()``.

Both processors run in the same ``model.generate()`` loop: a tiny random ``LlamaForCausalLM``, the
Llama-3.2 tokenizer, greedy search, one torch thread. Each processor's ``__call__`` is wrapped
with a timer, so "per step" is exactly the processor's share of a decoding step (accepting the
last token, filling and applying the mask). Grammars (both engines compile the same input):

* ``json``: a JSON Schema (compact layout on both sides);
* ``tools``: the Hermes tool-call structural tag of three tools (``AgentFormat.structural_tag``,
  compiled by ``Grammar.from_structural_tag`` here and ``compile_structural_tag`` in xgrammar).

For each grammar: one untimed warm-up ``generate()`` per processor, then ``--repeats`` timed
runs each of: no processor, ours (``agentgrammar.hf.GrammarLogitsProcessor``, ``reset()``
between runs) and xgrammar's (``xgrammar.contrib.hf.LogitsProcessor``, a new one per run as its
docstring asks). Prints medians and the ratio ours / xgrammar; ``--json`` prints the figures as
JSON instead. ``ms/token`` is a whole ``generate()`` over its new tokens (prefill included), so
runs that stop at different lengths compare only roughly there; the per-step columns are exact. The random model's output is nonsense, but the two processors allow the same
tokens, so greedy search writes the same text under both (checked, and reported).

A fourth row, ``ag+early``, runs ours with ``stopping_criteria=[EarlyMasks(processor,
mode="always")]``: each step's masks are computed during the next forward pass, so its per-step
column is what is left on the critical path. Issue 41's target (a constrained step's wall time
over an unconstrained one's, the same tokens forced in both) is measured by
``tools/bench/hf_steps.py``. ``--model 100m`` (about 92M parameters) gives a forward pass of realistic
length, ``--batch 8`` eight left-padded rows; the last line of each grammar is the time per token
of each row against no processor.

    python -m tools.bench.hf --repeats 5 --max-new-tokens 64
    python -m tools.bench.hf --model 100m --batch 8 --threads 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .stats import fmt, print_table

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 24},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "days", "unit"],
    "additionalProperties": False,
}


def _tools() -> List[Any]:
    from agentgrammar import Tool

    obj = {"type": "object", "additionalProperties": False}
    return [
        Tool(
            "get_weather",
            "Current weather.",
            {**obj, "properties": {"city": {"type": "string"}}, "required": ["city"]},
        ),
        Tool(
            "set_timer",
            "Start a timer.",
            {**obj, "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]},
        ),
        Tool(
            "search",
            "Search the web.",
            {
                **obj,
                "properties": {"query": {"type": "string"}, "mode": {"enum": ["web", "news"]}},
                "required": ["query", "mode"],
            },
        ),
    ]


class Timed:
    """Wraps a logits processor and records the seconds of each ``__call__``."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.times: List[float] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        start = time.perf_counter()
        out = self.processor(input_ids, scores)
        self.times.append(time.perf_counter() - start)
        return out


#: Model shapes: ``tiny`` isolates the processor's cost; ``100m`` (about 92M parameters with the
#: Llama-3.2 vocabulary) gives a forward pass of a realistic length for the overlap to hide in.
MODEL_SHAPES: Dict[str, Dict[str, int]] = {
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4},
    "100m": {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8},
}


def _model(vocab_size: int, tok: Any, stop_ids: List[int], shape: str = "tiny") -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    dims = MODEL_SHAPES[shape]
    config = transformers.LlamaConfig(
        vocab_size=vocab_size,
        **dims,
        num_key_value_heads=dims["num_attention_heads"],
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=stop_ids[0],
        pad_token_id=stop_ids[0],
    )
    model = transformers.LlamaForCausalLM(config).eval()
    model.generation_config.eos_token_id = stop_ids
    model.generation_config.pad_token_id = stop_ids[0]
    return model


def _identity(input_ids: Any, scores: Any) -> Any:
    """The baseline "processor": leaves the scores alone (so the loop runs the same code path)."""
    return scores


def _run(
    model: Any, inputs: Dict[str, Any], processor: Timed, max_new: int, criteria: List[Any]
) -> Dict[str, Any]:
    import torch

    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            **inputs,
            logits_processor=[processor],
            stopping_criteria=criteria,
            max_new_tokens=max_new,
            do_sample=False,
        )
    total = time.perf_counter() - start
    new = out[:, inputs["input_ids"].shape[1] :].tolist()
    return {"total_s": total, "tokens": len(new[0]), "ids": new}


def _median_ms(values: List[float]) -> float:
    return statistics.median(values) * 1e3 if values else float("nan")


def bench(
    grammar_kind: str, repeats: int, max_new: int, batch_prompt: str, shape: str = "tiny", batch: int = 1
) -> Dict[str, Any]:
    """The figures of one grammar: per-step processor medians and generate totals, for ``batch``
    rows of the prompt (each a little different, left-padded) on the model of ``shape``."""
    import xgrammar as xgr
    from xgrammar.contrib.hf import LogitsProcessor as XgrLogitsProcessor

    from agentgrammar import Compiler, Grammar, Vocabulary
    from agentgrammar.engine.tokenizers import load_llama32_tokenizer
    from agentgrammar.formats import get
    from agentgrammar.hf import EarlyMasks, GrammarLogitsProcessor

    tok = load_llama32_tokenizer()
    vocab = Vocabulary.from_huggingface(tok)
    stop_ids = list(vocab.stop_token_ids)
    model = _model(vocab.vocab_size, tok, stop_ids, shape)
    prompts = [batch_prompt + " " * k + "Answer:" * (k % 3) for k in range(batch)]
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.decode([stop_ids[0]])
    inputs = dict(tok(prompts, return_tensors="pt", padding=True))

    compiler = Compiler(vocab)
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab.vocab_size, stop_token_ids=stop_ids)
    xcompiler = xgr.GrammarCompiler(info, max_threads=1)
    if grammar_kind == "json":
        ours = compiler.compile(Grammar.from_json_schema(SCHEMA, whitespace="compact"))
        theirs = xcompiler.compile_json_schema(SCHEMA, any_whitespace=False)
    else:
        tag = get("hermes").structural_tag(_tools(), tool_choice="required")
        ours = compiler.compile(Grammar.from_structural_tag(tag))
        theirs = xcompiler.compile_structural_tag(tag.model_dump_json())

    ours_proc = GrammarLogitsProcessor(ours)
    # Each maker gives the timed processor and the stopping criteria of its generate().
    makers: Dict[str, Callable[[], Tuple[Timed, List[Any]]]] = {
        "none": lambda: (Timed(_identity), []),
        "agentgrammar": lambda: (ours_proc.reset(), Timed(ours_proc), [])[1:],
        # the next step's masks computed during the forward pass (GrammarLogitsProcessor.early_masks)
        "ag+early": lambda: (ours_proc.reset(), Timed(ours_proc), [EarlyMasks(ours_proc, mode="always")])[1:],
        "xgrammar": lambda: (Timed(XgrLogitsProcessor(theirs)), []),
    }
    for name in ("agentgrammar", "xgrammar"):  # warm-up: first visits of each state, lazy setup
        timed, criteria = makers[name]()
        _run(model, inputs, timed, max_new, criteria)

    runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name in makers}
    steps: Dict[str, List[float]] = {name: [] for name in makers}
    for _ in range(repeats):
        for name, make in makers.items():  # interleaved, so drifts in machine load hit all alike
            timed, criteria = make()
            runs[name].append(_run(model, inputs, timed, max_new, criteria))
            steps[name].extend(timed.times)

    out: Dict[str, Any] = {
        "grammar": grammar_kind,
        "repeats": repeats,
        "max_new_tokens": max_new,
        "model": shape,
        "batch": batch,
    }
    rows: Dict[str, Any] = {}
    base_total = statistics.median(r["total_s"] for r in runs["none"])
    base_tokens = runs["none"][0]["tokens"]
    for name in makers:
        totals = [r["total_s"] for r in runs[name]]
        tokens = runs[name][0]["tokens"]
        total_ms = statistics.median(totals) * 1e3
        per_token_ms = total_ms / max(tokens, 1)
        rows[name] = {
            "tokens": tokens,
            "step_median_ms": _median_ms(steps[name]),
            "step_mean_ms": statistics.fmean(steps[name]) * 1e3 if steps[name] else float("nan"),
            "step_p90_ms": (
                statistics.quantiles(steps[name], n=10)[-1] * 1e3 if len(steps[name]) >= 10 else 0.0
            ),
            "generate_median_ms": total_ms,
            "generate_per_token_ms": per_token_ms,
            "overhead_per_token_ms": per_token_ms - base_total * 1e3 / max(base_tokens, 1),
        }
    out["rows"] = rows
    ours_row, xgr_row = rows["agentgrammar"], rows["xgrammar"]
    out["ratio_step_median"] = ours_row["step_median_ms"] / xgr_row["step_median_ms"]
    out["ratio_step_mean"] = ours_row["step_mean_ms"] / xgr_row["step_mean_ms"]
    out["ratio_generate"] = ours_row["generate_median_ms"] / xgr_row["generate_median_ms"]
    early_row = rows["ag+early"]
    out["ratio_early_step_mean"] = early_row["step_mean_ms"] / ours_row["step_mean_ms"]
    # time per generated token against generate() with no processor (the 1.03x target)
    base = rows["none"]["generate_per_token_ms"]
    out["ratio_per_token_vs_none"] = {name: row["generate_per_token_ms"] / base for name, row in rows.items()}
    out["same_output"] = runs["agentgrammar"][0]["ids"] == runs["xgrammar"][0]["ids"]
    out["same_output_early"] = runs["agentgrammar"][0]["ids"] == runs["ag+early"][0]["ids"]
    out["text"] = tok.decode(runs["agentgrammar"][0]["ids"][0], skip_special_tokens=False)
    return out


def _print_table(results: List[Dict[str, Any]]) -> None:
    header = (
        f"{'grammar':8} {'processor':13} {'tokens':>6} {'step med ms':>11} {'step mean':>9} "
        f"{'step p90':>8} {'generate ms':>11} {'ms/token':>8} {'overhead/tok':>12}"
    )
    print(header)
    print("-" * len(header))
    for res in results:
        for name, row in res["rows"].items():
            print(
                f"{res['grammar']:8} {name:13} {row['tokens']:>6} {row['step_median_ms']:>11.3f} "
                f"{row['step_mean_ms']:>9.3f} {row['step_p90_ms']:>8.3f} {row['generate_median_ms']:>11.1f} "
                f"{row['generate_per_token_ms']:>8.3f} {row['overhead_per_token_ms']:>12.3f}"
            )
        print(
            f"{res['grammar']:8} ours/xgrammar: per-step median {res['ratio_step_median']:.2f}x, "
            f"mean {res['ratio_step_mean']:.2f}x, generate {res['ratio_generate']:.2f}x; "
            f"same output: {res['same_output']}"
        )
        vs_none = ", ".join(f"{k} {v:.3f}x" for k, v in res["ratio_per_token_vs_none"].items() if k != "none")
        print(
            f"{'':8} early masks: step mean {res['ratio_early_step_mean']:.2f}x of the plain processor's "
            f"(same output: {res['same_output_early']}); time per token vs no processor: {vs_none}"
        )
        print(f"{'':8} text (random model, kept valid by the grammar): {res['text'][:100]!r}")
        print()


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grammar", choices=["json", "tools", "both"], default="both")
    parser.add_argument("--repeats", type=int, default=5, help="timed generate() runs per processor")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompt", default="Weather in Paris for the next three days, as JSON:")
    parser.add_argument("--model", choices=sorted(MODEL_SHAPES), default="tiny", help="random Llama shape")
    parser.add_argument("--batch", type=int, default=1, help="rows per generate() (left-padded)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    kinds = ["json", "tools"] if args.grammar == "both" else [args.grammar]
    results = [
        bench(kind, args.repeats, args.max_new_tokens, args.prompt, args.model, args.batch) for kind in kinds
    ]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), greedy, model {args.model}, batch "
        f"{args.batch}, {args.repeats} repeats, max_new_tokens {args.max_new_tokens}; medians over all "
        "steps / runs"
    )
    _print_table(results)


def run_hf(args: Any) -> Dict[str, Any]:
    """The ``hf`` workload of ``tools/bench.py``: both grammars, as one JSON-ready result."""
    return {
        "source": "tools/bench/hf.py",
        "results": [
            bench(kind, args.hf_repeats, args.hf_max_new_tokens, args.hf_prompt) for kind in ("json", "tools")
        ],
    }


def print_hf(res: Dict[str, Any]) -> None:
    """The ``hf`` table of ``tools/bench.py``."""
    if not res["results"]:
        print(f"\nHF generate(): n/a ({res.get('error')})")
        return
    rows = []
    for r in res["results"]:
        ours, xgr = r["rows"]["agentgrammar"], r["rows"]["xgrammar"]
        for key, label in (
            ("step_median_ms", "processor step p50 ms"),
            ("step_mean_ms", "processor step mean ms"),
            ("step_p90_ms", "processor step p90 ms"),
            ("generate_median_ms", "generate() ms"),
            ("overhead_per_token_ms", "overhead / token ms"),
        ):
            a, b = ours[key], xgr[key]
            ratio = a / b if a > 0 and b > 0 else float("nan")  # overheads under noise can be < 0
            rows.append([r["grammar"], label, f"{a:.3f}", f"{b:.3f}", fmt(ratio, 2)])
        rows.append(
            [
                r["grammar"],
                "tokens / same output",
                str(ours["tokens"]),
                str(xgr["tokens"]),
                str(r["same_output"]),
            ]
        )
    r0 = res["results"][0]
    print_table(
        f"HF generate(): per-step logits-processor time, tiny random Llama, {r0['repeats']} runs of "
        f"{r0['max_new_tokens']} new tokens (via {res['source']})",
        ["grammar", "measure", "ours", "xgr", "ours/best"],
        rows,
    )


if __name__ == "__main__":
    main()
