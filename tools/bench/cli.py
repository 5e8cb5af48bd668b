"""One command for every performance workload: agentgrammar against xgrammar and llguidance.

    python tools/bench.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl ../shared/data/maskbench

    python tools/bench.py WHEEL MASKBENCH_DIR [--workloads agentic maskbench hf] [--sizes 10 100 500]
        [--requests N] [--maskbench-sample N] [--tokenizer llama3|qwen3|gpt-oss|PATH] [--json]

Everything runs in one process, one thread (``torch.set_num_threads(1)``, xgrammar
``max_threads=1``, llguidance's single-threaded mask fill, ``RAYON_NUM_THREADS=1``), on one
vocabulary (``--tokenizer``: the Llama-3.2 128k one by default; ``qwen3`` (151k) and
``gpt-oss`` (o200k_harmony, 200k) from the offline model kit, or a tokenizer folder or
file), every engine on the same inputs and interleaved, so machine noise
hits all alike. Engines: ``ours`` (agentgrammar), ``xgr`` (xgrammar 0.2.x, default eager
``GrammarCompiler``: every token mask precomputed at compile time), ``xgr-jit`` (the same with
``enable_dynamic_compilation=True``: masks built on first use; xgrammar's on-demand mode) and
``llg`` (llguidance, lazy by design). Workloads:

1. ``agentic``: a registry of the first ``--registry`` (500) BFCL tools both grammar engines
   accept (loaded by ``tools/bench/request.py``); per request a random subset of each size.
   The request is the Qwen-3 format with reasoning: ours ``formats.get("qwen3").grammar(
   registry.select(subset))`` + ``Compiler.compile``; xgrammar ``get_model_structural_tag(
   "qwen_3", tools=subset)`` (its think tag given the ``<think>`` opener ours expects, so both
   read the same text) + ``compile_structural_tag``; llguidance a Lark grammar with the same
   structure (lazy think / trigger lexemes and ``%json`` arguments, as ``llguidance.StructTag``
   writes them) + ``LLMatcher``. *cold*: a fresh compiler (made outside the timing), our
   per-tool caches cleared (as ``tools/bench/request.py`` does); xgrammar's fresh compiler keeps its
   default, empty cache (``cache_enabled=False``, as in ``request``, also drops the
   sharing of identical rules inside one grammar: about 4x slower at 100 tools); *warm*: one compiler per engine kept for the
   whole run, every tool already compiled once (the full registry as a warm-up; ours also
   warmed with the format, ``Compiler.warm_up``, as an ``Agent`` does when made), a new subset;
   ours is timed warm before cold, and the full registry is built again (untimed) after each
   cold request, whose clearing of our process-wide per-tool caches no serving process does,
   and the memo accounting measures what it rebuilt (untimed, as the registry's first build
   did; else the next timed warm request measured it);
   what the rebuild leaves alive is frozen out of the cyclic collector's reach, as setup is.
   Times are build + compile, and build + compile + first mask ("ttfm"). Then, along a
   realistic output (think text, a sentence, two tool calls with valid arguments made from the
   tools' schemas, a closing response, the stop token) tokenized by the ``--tokenizer``, the
   time of ``fill_next_token_bitmask`` + ``accept_token`` per token (mean, p50, p99, max).
2. ``maskbench``: ``--maskbench-sample`` (200) MaskBench files drawn with a fixed seed; per
   schema, cold (fresh compilers, our caches of schemas and tools cleared; what depends on no
   schema, such as the converter's helper rules for strings and numbers and the grammar of
   any value, whose automata are loaded once per process, stays converted, as in any process
   after its first schema; a fresh compiler of ours has empty caches over the
   vocabulary's token tables, built once per ``Vocabulary`` as the peers' tokenizer info is
   once per tokenizer), time to first mask (compile + first mask: ``--maskbench-repeats`` (3)
   cold compiles per schema and engine, the engines' order rotated from one to the next, the
   fastest kept, as ``timeit`` keeps the run the machine disturbed least) and,
   walking each valid instance
   (``json.dumps``, tokenized, then the stop token), time between masks. Only schemas every
   engine compiles and instances every engine accepts are compared; the rest are counted.
3. ``hf``: per-step logits-processor time in the same ``generate()`` loop (tiny random
   ``LlamaForCausalLM``), ours ``GrammarLogitsProcessor`` against xgrammar's HF processor: run by
   ``tools/bench/hf.py`` (its JSON-schema and tool-call grammars).
4. ``batch``: the one multi-threaded workload: a serving batch of ``--batch-rows`` agentic
   requests walked in lock step, one batch fill per step, ours ``BatchMatcher`` against
   xgrammar's ``BatchGrammarMatcher``, with 1 and ``--batch-threads`` threads.

The agentic workload also runs ours alone in a child process to report peak RSS for its
largest size and the compiler's own cache count (``Compiler.cache_size_bytes``).

Each table shows medians (and the distribution columns named) and "ours/best", our figure
over the best peer's. ``--json`` prints every figure as JSON instead of the tables.
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from .agentic import print_agentic, run_agentic
from .batch import print_batch, run_batch
from .hf import print_hf, run_hf
from .maskbench import print_maskbench, run_maskbench
from .walkers import Setup


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bfcl", type=Path, help="the bfcl-eval wheel, or a folder holding its data files")
    parser.add_argument("maskbench", type=Path, help="a folder of MaskBench *.json files")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=["agentic", "maskbench", "hf", "batch"],
        default=["agentic", "maskbench", "hf", "batch"],
    )
    parser.add_argument("--batch-rows", type=int, default=16, help="rows of the batch workload")
    parser.add_argument(
        "--batch-threads", type=int, default=min(8, os.cpu_count() or 1), help="threads of the batch workload"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--requests", type=int, default=5, help="random subsets (requests) per size")
    parser.add_argument("--registry", type=int, default=500, help="BFCL tools in the registry")
    parser.add_argument("--maskbench-sample", type=int, default=200)
    parser.add_argument(
        "--maskbench-repeats",
        type=int,
        default=3,
        help="cold compiles per schema and engine, engine order rotated; the fastest is kept",
    )
    parser.add_argument("--hf-repeats", type=int, default=5)
    parser.add_argument("--hf-max-new-tokens", type=int, default=64)
    parser.add_argument("--hf-prompt", default="Weather in Paris for the next three days, as JSON:")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--forward-ms",
        type=float,
        default=0.0,
        help="agentic: untimed pause before each mask (a forward pass)",
    )
    parser.add_argument(
        "--no-background",
        dest="background",
        action="store_false",
        help="ours without background classification (Compiler(background=False))",
    )
    parser.add_argument(
        "--tokenizer",
        default="llama3",
        help="the vocabulary of every engine and workload but hf: llama3 (default), qwen3, gpt-oss "
        "(the model kit's folders) or a tokenizer folder / tokenizer.json",
    )
    parser.add_argument("--json", action="store_true", help="print every figure as JSON instead of tables")
    args = parser.parse_args(argv)
    if args.maskbench_repeats < 1:
        parser.error("--maskbench-repeats must be at least 1")

    import torch
    import xgrammar as xgr

    torch.set_num_threads(1)
    setup = Setup(args.tokenizer)
    # As a server would: what setup loaded (tokenizers, vocabularies, torch) is moved out of
    # the cyclic collector's reach, so a full collection (hundreds of ms with 128k-token
    # vocabularies in memory) does not land inside some engine's timed mask.
    gc.collect()
    gc.freeze()
    out: Dict[str, Any] = {
        "threads": 1,
        "tokenizer": setup.label,
        "vocab_size": setup.vocab.vocab_size,
        "xgrammar_jit": "GrammarCompiler(enable_dynamic_compilation=True)",
        "versions": {
            "xgrammar": getattr(xgr, "__version__", _version("xgrammar")),
            "llguidance": _version("llguidance"),
            "torch": torch.__version__,
        },
    }
    for name in args.workloads:
        start = time.perf_counter()
        if name == "agentic":
            out["agentic"] = run_agentic(setup, args)
        elif name == "maskbench":
            out["maskbench"] = run_maskbench(setup, args)
        elif name == "batch":
            out["batch"] = run_batch(setup, args)
        else:
            out["hf"] = run_hf(args)
        out.setdefault("wall_s", {})[name] = round(time.perf_counter() - start, 1)
        print(f"[{name}] {out['wall_s'][name]} s", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=1, default=str))
        return out
    print(
        f"Single thread, {setup.label} vocabulary ({setup.vocab.vocab_size} tokens); xgrammar {out['versions']['xgrammar']} "
        f"(xgr = eager, xgr-jit = enable_dynamic_compilation=True), llguidance {out['versions']['llguidance']}; "
        "ours/best = ours over the best peer (< 1: ours faster)"
    )
    if "agentic" in out:
        print_agentic(out["agentic"])
    if "maskbench" in out:
        print_maskbench(out["maskbench"])
    if "hf" in out:
        print_hf(out["hf"])
    if "batch" in out:
        print_batch(out["batch"])
    return out


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"
