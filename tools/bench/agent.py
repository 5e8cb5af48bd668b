"""What the agent loop's key/value cache reuse and batched runs save, on a ~100M random Llama.

The model has the shape of ``tools/bench_hf.py``'s ``100m`` (8 layers of 512) over the model
kit's Qwen3 tokenizer and chat template (reasoning off), so prompts are the real template's.
Its weights are random; a script steers it: every conversation calls ``get_weather`` for one
city a turn, then answers, so a run has exactly ``--turns`` turns (the bias is added to the
logits after the forward pass, which runs in full).

* ``reuse``: one ``--turns``-turn run with ``reuse_cache`` off and on: the tokens encoded per
  turn (``AgentStep.prefill_tokens``) and the wall time of the run (median of ``--repeats``).
* ``batch``: ``--batch`` conversations of ``--batch-turns`` turns through ``Agent.run_batch``
  against the same conversations run one by one (reuse off and on): turns and generated
  tokens per second of wall time.

    python -m tools.bench.agent
    python -m tools.bench.agent --batch 16 --batch-turns 3 --threads 2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Dict, List

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# tools/bench_hf.py's "100m" shape (about 100M parameters with a 151k vocabulary)
SHAPE = {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8}
CITIES = ["Oslo", "Paris", "Rome", "Lima", "Cairo", "Tokyo", "Quito", "Dakar"]
KIT = Path(
    os.environ.get("AGENTGRAMMAR_MODEL_KIT", Path(__file__).resolve().parents[3] / "shared/data/models")
)


def _scripted_class() -> Any:
    import transformers

    class ScriptedLlama(transformers.LlamaForCausalLM):  # type: ignore[misc]
        """Writes ``scripts[tag][turn]`` for the conversation whose prompt holds ``tag``."""

        scripts: Dict[str, List[List[int]]]
        end_id: int

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            ids = kwargs["input_ids"]
            self._targets = [self._script_of(row) for row in ids.tolist()]
            self._prompt_len = int(ids.shape[1])
            return super().generate(*args, **kwargs)

        def _script_of(self, row: List[int]) -> List[int]:
            text = self.tok.decode(row, skip_special_tokens=False)
            tag = next(t for t in self.scripts if t in text)
            turn = text.count("<|im_start|>assistant") - 1
            return self.scripts[tag][turn] if turn < len(self.scripts[tag]) else []

        def forward(self, input_ids: Any = None, **kwargs: Any) -> Any:
            cache = kwargs.get("cache", kwargs.get("past_key_values"))
            past = int(cache.get_seq_length()) if cache is not None else 0
            step = past + int(input_ids.shape[1]) - self._prompt_len
            out = super().forward(input_ids=input_ids, **kwargs)
            for r, script in enumerate(self._targets):
                out.logits[r, -1, script[step] if step < len(script) else self.end_id] += 100.0
            return out

    return ScriptedLlama


def _setup(turns: int, n_conversations: int) -> Any:
    import torch
    import transformers

    from agentgrammar import Agent, ToolRegistry

    folder = KIT / "qwen3"
    if not (folder / "tokenizer.json").is_file():
        raise SystemExit(
            f"tools.bench.agent needs the model kit's Qwen3 tokenizer: no {folder}/tokenizer.json"
        )
    tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tok),
        **SHAPE,
        num_key_value_heads=SHAPE["num_attention_heads"],
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=end,
        pad_token_id=end,
    )
    model = _scripted_class()(config).eval()
    model.generation_config.eos_token_id = [end]
    model.generation_config.pad_token_id = end
    model.tok, model.end_id = tok, end

    def script(k: int) -> List[List[int]]:
        calls = [
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "%s"}}\n</tool_call><|im_end|>'
            % CITIES[(k + t) % len(CITIES)]
            for t in range(turns - 1)
        ]
        texts = [*calls, "It is sunny everywhere.<|im_end|>"]
        return [tok.encode(t, add_special_tokens=False) for t in texts]

    model.scripts = {f"#{k} ": script(k) for k in range(n_conversations)}
    registry = ToolRegistry()

    @registry.tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f"18 C and sunny in {city}"

    def agent(reuse: bool) -> Agent:
        return Agent(model, tok, registry, template_kwargs={"enable_thinking": False}, reuse_cache=reuse)

    prompts = [f"#{k} What is the weather in these cities, one at a time?" for k in range(n_conversations)]
    return agent, prompts


OPTIONS = dict(reasoning="disabled", max_new_tokens=64, parallel_tool_calls=False)


def bench_reuse(turns: int, repeats: int) -> Dict[str, Any]:
    make, prompts = _setup(turns, 1)
    out: Dict[str, Any] = {}
    for reuse in (False, True):
        agent = make(reuse)
        agent.run(prompts[0], max_turns=turns, **OPTIONS)  # warm-up
        times, run = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            run = agent.run(prompts[0], max_turns=turns, **OPTIONS)
            times.append(time.perf_counter() - start)
        assert run is not None and len(run.steps) == turns and run.response, run.summary()
        out["on" if reuse else "off"] = {
            "prompt_tokens": [s.n_prompt_tokens for s in run.steps],
            "prefill_tokens": [s.prefill_tokens for s in run.steps],
            "new_tokens": run.n_new_tokens,
            "wall_s": statistics.median(times),
            "texts": [s.text for s in run.steps],
        }
    out["same_texts"] = out["on"].pop("texts") == out["off"].pop("texts")
    return out


def bench_batch(n: int, turns: int) -> Dict[str, Any]:
    make, prompts = _setup(turns, n)
    out: Dict[str, Any] = {}
    make(False).run_batch(prompts[:2], max_turns=turns, **OPTIONS)  # warm-up
    cases = {
        "run_batch": lambda: make(False).run_batch(prompts, max_turns=turns, **OPTIONS),
        "one_by_one": lambda: [make(False).run(p, max_turns=turns, **OPTIONS) for p in prompts],
        "one_by_one_reuse": lambda: [make(True).run(p, max_turns=turns, **OPTIONS) for p in prompts],
    }
    texts = {}
    for name, fn in cases.items():
        start = time.perf_counter()
        runs = fn()
        wall = time.perf_counter() - start
        n_turns = sum(len(r.steps) for r in runs)
        tokens = sum(r.n_new_tokens for r in runs)
        assert all(r.response for r in runs), [r.summary() for r in runs if not r.response]
        texts[name] = [[s.text for s in r.steps] for r in runs]
        out[name] = {
            "wall_s": wall,
            "turns": n_turns,
            "new_tokens": tokens,
            "turns_per_s": n_turns / wall,
            "tokens_per_s": tokens / wall,
            "prefill_tokens": sum(s.prefill_tokens for r in runs for s in r.steps),
        }
    out["same_texts"] = texts["run_batch"] == texts["one_by_one"] == texts["one_by_one_reuse"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=6, help="turns of the reuse run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="conversations of the batch")
    parser.add_argument("--batch-turns", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--skip", choices=["reuse", "batch"], action="append", default=[])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    result: Dict[str, Any] = {"model": dict(SHAPE), "threads": torch.get_num_threads()}
    if "reuse" not in args.skip:
        result["reuse"] = bench_reuse(args.turns, args.repeats)
    if "batch" not in args.skip:
        result["batch"] = bench_batch(args.batch, args.batch_turns)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    if "reuse" in result:
        r = result["reuse"]
        print(f"{args.turns}-turn run (same texts: {r['same_texts']})")
        for key in ("off", "on"):
            x = r[key]
            print(
                f"  reuse {key:3}: {x['wall_s']:.2f} s, prefill per turn {x['prefill_tokens']} "
                f"(prompt {x['prompt_tokens']})"
            )
    if "batch" in result:
        b = result["batch"]
        print(f"{args.batch} conversations of {args.batch_turns} turns (same texts: {b['same_texts']})")
        for key in ("run_batch", "one_by_one", "one_by_one_reuse"):
            x = b[key]
            print(
                f"  {key:17}: {x['wall_s']:.2f} s, {x['turns_per_s']:.2f} turns/s, "
                f"{x['tokens_per_s']:.1f} tokens/s, {x['prefill_tokens']} prefill tokens"
            )


if __name__ == "__main__":
    main()
