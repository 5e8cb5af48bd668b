"""One cold agentic request, alone: our caches cleared (``clear_ours``) and a fresh ``Compiler``,
then a Qwen-3 request for random BFCL tools built and compiled, as ``agentic.py`` times it
(without the peers, so that a profile shows ours only).

    PYTHONPATH=. python -m tools.bench.cold_profile BFCL_WHEEL --size 100 time
    PYTHONPATH=. python -m tools.bench.cold_profile BFCL_WHEEL --size 100 profile
    PYTHONPATH=. python -m tools.bench.cold_profile BFCL_WHEEL digest > digests.txt
    PYTHONPATH=. python -m tools.bench.cold_profile BFCL_WHEEL --size 10 --registry 1500 --requests 600 warm

(run from the root of the checkout to measure: ``-m`` imports its package).

``warm`` times requests in a process that knows every tool of the registry (each converted
once, by requests of 100): ``--requests`` random requests of ``--size`` tools on one compiler,
their build + compile's p50, p90, p99, max and mean (the tail of a serving process's requests).

``digest`` prints a digest of each serialized request grammar (10 / 100 / 500 tools, three
seeds): equal files from two checkouts mean equal grammars.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import pstats
import random
import time
import warnings
from pathlib import Path
from typing import Any, List

from tools.maskbench import percentile

from .caches import clear_ours
from .request import load_bfcl_tools


def _registry(bfcl: Path, size: int) -> Any:
    """The first ``size`` BFCL tools that the qwen3 format accepts, as a ``ToolRegistry``."""
    from agentgrammar import ToolRegistry, formats

    tools: List[Any] = []
    for tool in load_bfcl_tools(bfcl):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                formats.get("qwen3").grammar([tool])
        except Exception:  # a tool the format refuses: left out, as the bench does
            continue
        tools.append(tool)
        if len(tools) >= size:
            break
    return ToolRegistry.from_openai(tools)


def _warm(fmt: Any, registry: Any, compiler: Any, size: int, requests: int) -> None:
    """Every tool converted once (requests of 100), then ``requests`` random requests of
    ``size`` tools timed on the same compiler."""
    names = registry.names
    for i in range(0, len(names), 100):
        compiler.compile(fmt.grammar(registry.select(names[i : i + 100])))
    rng = random.Random(1)
    times = []
    for _ in range(requests):
        chosen = rng.sample(names, min(size, len(names)))
        start = time.perf_counter()
        compiler.compile(fmt.grammar(registry.select(chosen)))
        times.append(time.perf_counter() - start)
    p50, p90, p99 = (1e3 * percentile(times, q) for q in (0.5, 0.9, 0.99))
    print(
        f"{len(names)} known tools, {requests} warm requests of {size}: build + compile p50 {p50:.2f} ms, "
        f"p90 {p90:.2f}, p99 {p99:.2f}, max {1e3 * max(times):.2f}, mean {1e3 * sum(times) / len(times):.2f}"
    )


def main() -> None:
    from agentgrammar import Compiler, Vocabulary, formats
    from agentgrammar.engine.tokenizers import load_llama32_tokenizer

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bfcl", type=Path)
    p.add_argument("mode", choices=("time", "profile", "digest", "warm"))
    p.add_argument("--size", type=int, default=100, help="tools per request")
    p.add_argument("--requests", type=int, default=9)
    p.add_argument("--registry", type=int, default=500)
    args = p.parse_args()

    vocab = Vocabulary.from_huggingface(load_llama32_tokenizer())
    registry = _registry(args.bfcl, args.registry)
    names = registry.names
    fmt = formats.get("qwen3")
    Compiler(vocab).compile(fmt.grammar(registry.select(names)))  # every table a process has
    gc.collect()
    gc.freeze()  # setup, out of the collector's reach, as in the bench

    if args.mode == "digest":
        for seed in (0, 1, 2):
            rng = random.Random(seed)
            for size in (10, 100, 500):
                clear_ours()
                g = fmt.grammar(registry.select(rng.sample(names, min(size, len(names)))))
                print(seed, size, hashlib.sha256(g.to_bytes()).hexdigest())
        return
    if args.mode == "warm":
        _warm(fmt, registry, Compiler(vocab), args.size, args.requests)
        return
    rng = random.Random(7)
    profile = cProfile.Profile() if args.mode == "profile" else None
    times = []
    for _ in range(args.requests):
        chosen = rng.sample(names, min(args.size, len(names)))
        clear_ours()
        compiler = Compiler(vocab)
        start = time.perf_counter()
        if profile is not None:
            profile.enable()
        compiler.compile(fmt.grammar(registry.select(chosen)))
        if profile is not None:
            profile.disable()
        times.append(time.perf_counter() - start)
    times.sort()
    print(
        f"{args.size} tools: cold build + compile median {1e3 * times[len(times) // 2]:.1f} ms, min {1e3 * times[0]:.1f} ms"
    )
    if profile is not None:
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(50)


if __name__ == "__main__":
    main()
