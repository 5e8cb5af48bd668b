"""The demo model: a tiny Llama trained on first use on synthetic transcripts, and its cache.

``load_demo_model(format_name)`` returns ``(model, tokenizer)``: from the cache when a model for
this format, tool set and training recipe is there, else trained now (tokenizer and model, well
under a minute on two CPU cores, with a progress bar) and saved with ``save_pretrained`` so that
the cached model loads exactly like a local Hugging Face model (``load_local_model``).

Training stops early on purpose (200 steps of 16 examples): the model has learnt the layout and
roughly what to call, but left to itself, sampled at temperature 1 as the demo does, it mostly
writes broken calls (missing keys or values, unclosed strings, wrong types), which is what the
grammar is there to prevent. With the grammar the same samples are valid, and short enough to
end well within the demo's token budget.

Training cost is kept down by the prompt layout: every prompt starts with the same tools block,
so each step runs that prefix once without gradients and trains on the rest over its cached
keys and values (with a byte-level BPE that merges across words, the prefix is ~180 tokens and
the rest of an example ~20-80).

The cache directory is ``$AGENTGRAMMAR_CACHE`` if set, else ``$XDG_CACHE_HOME/agentgrammar``,
else ``~/.cache/agentgrammar``.

Example:
    >>> cache_dir({"AGENTGRAMMAR_CACHE": "/tmp/ag"}) == Path("/tmp/ag")
    True
    >>> cache_dir({"XDG_CACHE_HOME": "/tmp/xdg"}) == Path("/tmp/xdg/agentgrammar")
    True
    >>> TrainConfig(steps=10).key("tags") == TrainConfig(steps=10).key("tags")
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Mapping, Optional, Tuple

from ..formats import AgentFormat, get
from .corpus import CORPUS_VERSION, Example, make_corpus, render_prompt
from .tokenizer import TOKENIZER_VERSION, train_tokenizer
from .tools import demo_registry

__all__ = [
    "MODEL_VERSION",
    "TrainConfig",
    "cache_dir",
    "load_demo_model",
    "load_local_model",
    "model_dir",
    "train_demo_model",
]

MODEL_VERSION = 1
"""Bumped whenever the model or its training changes (part of the cache key)."""

ProgressFn = Callable[[int, int, float], None]
"""``progress(step, total_steps, loss)``, called after each training step."""


@dataclass(frozen=True)
class TrainConfig:
    """The training recipe (every field is part of the cache key).

    ``steps`` is the training budget: the default stops early on purpose (see the module
    docstring); a smaller one gives a faster, weaker model (the tests use one).
    """

    episodes: int = 2000
    vocab_size: int = 1024
    max_token_length: int = 16
    hidden_size: int = 128
    intermediate_size: int = 384
    layers: int = 2
    heads: int = 4
    steps: int = 200
    batch_size: int = 16
    lr: float = 3e-3
    seed: int = 0

    def key(self, format_name: str) -> str:
        """The cache key: a hash of the recipe, the versions, the format, the tools and the
        prompt layout."""
        fmt = get(format_name)
        registry = demo_registry()
        sample = render_prompt(fmt, registry, [{"role": "user", "content": "Hi."}])
        blob = json.dumps(
            {
                "versions": [CORPUS_VERSION, TOKENIZER_VERSION, MODEL_VERSION],
                "config": dataclasses.asdict(self),
                "format": format_name,
                "tools": registry.to_openai(),
                "prompt": sample,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def cache_dir(environ: Optional[Mapping[str, str]] = None) -> Path:
    """Where trained demo models are kept (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get("AGENTGRAMMAR_CACHE"):
        return Path(env["AGENTGRAMMAR_CACHE"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "agentgrammar"
    return Path.home() / ".cache" / "agentgrammar"


def model_dir(format_name: str, config: TrainConfig = TrainConfig()) -> Path:
    """The cache folder of the demo model for ``format_name`` and ``config``."""
    return cache_dir() / "demo-models" / f"{format_name}-{config.key(format_name)}"


def load_local_model(path: "os.PathLike[str] | str") -> Tuple[Any, Any]:
    """``(model, tokenizer)`` from a local Hugging Face model folder, offline, in eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    model.eval()
    return model, tokenizer


def _common_prefix(data: List[Tuple[List[int], List[int]]]) -> int:
    """The number of leading prompt tokens all examples share (the tools block), leaving at
    least one prompt token of each example after it."""
    first = data[0][0]
    n = min(len(p) for p, _ in data) - 1
    for p, _ in data:
        k = 0
        while k < n and p[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


def _batches(
    data: List[Tuple[List[int], List[int]]], batch_size: int, steps: int, pad_id: int, rng: random.Random
) -> Any:
    """``(ids, mask, labels)`` batches of the examples (shared prefix cut off), padded right,
    with labels on the completions only."""
    import torch

    queue: List[List[int]] = []
    for _ in range(steps):
        if not queue:  # a new epoch: batches of similar lengths (little padding), in random order
            order = list(range(len(data)))
            rng.shuffle(order)
            order.sort(key=lambda i: len(data[i][0]) + len(data[i][1]))
            queue = [order[k : k + batch_size] for k in range(0, len(order) - batch_size + 1, batch_size)]
            rng.shuffle(queue)
        picked = [data[i] for i in queue.pop()]
        rows = len(picked)
        width = max(len(p) + len(c) for p, c in picked)
        ids = torch.full((rows, width), pad_id, dtype=torch.long)
        labels = torch.full((rows, width), -100, dtype=torch.long)
        mask = torch.zeros((rows, width), dtype=torch.long)
        for row, (p, c) in enumerate(picked):
            seq = p + c
            ids[row, : len(seq)] = torch.tensor(seq)
            labels[row, len(p) : len(seq)] = torch.tensor(c)
            mask[row, : len(seq)] = 1
        yield ids, mask, labels


def _cache_of(output: Any) -> Any:
    """The key/value cache of a model output (``cache`` in newer transformers)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _encode(tokenizer: Any, examples: List[Example]) -> List[Tuple[List[int], List[int]]]:
    """Prompt and completion tokenized apart (as the agent tokenizes the prompt and the model
    then writes the turn), the completion closed by the end-of-turn token."""
    prompts = tokenizer([e.prompt for e in examples], add_special_tokens=False)["input_ids"]
    completions = tokenizer([e.completion for e in examples], add_special_tokens=False)["input_ids"]
    return [(p, c + [tokenizer.eos_token_id]) for p, c in zip(prompts, completions)]


def train_demo_model(
    fmt: AgentFormat, config: TrainConfig = TrainConfig(), progress: Optional[ProgressFn] = None
) -> Tuple[Any, Any, dict]:
    """Train the tokenizer and the tiny Llama for ``fmt``: ``(model, tokenizer, stats)``
    (``stats``: seconds spent, final loss, sizes). Deterministic for a config."""
    import torch

    threads = torch.get_num_threads()
    # One thread: the model is tiny, and on a small shared machine more threads mostly wait.
    torch.set_num_threads(1)
    try:
        return _train(fmt, config, progress)
    finally:
        torch.set_num_threads(threads)


def _train(fmt: AgentFormat, config: TrainConfig, progress: Optional[ProgressFn]) -> Tuple[Any, Any, dict]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    t0 = time.perf_counter()
    examples = make_corpus(fmt, config.episodes, seed=config.seed)
    # The prompts share the long tools block: a few dozen of them teach the BPE all of it.
    texts = [e.prompt for e in examples[:60]] + [e.completion for e in examples]
    tokenizer = train_tokenizer(texts, vocab_size=config.vocab_size, max_token_length=config.max_token_length)
    data = _encode(tokenizer, examples)
    t_tok = time.perf_counter() - t0

    torch.manual_seed(config.seed)
    longest = max(len(p) + len(c) for p, c in data)
    model_config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.heads,
        max_position_embeddings=max(1024, 2 * longest),
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(model_config)
    model.train()
    optim = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    warmup = max(1, config.steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda s: min(1.0, (s + 1) / warmup) * max(0.1, 1 - s / config.steps)
    )
    loss_value = float("nan")
    rng = random.Random(config.seed)
    # Every prompt starts with the same tools block: run it once per step, without gradients,
    # and train on the rest (the user's request, the turn) over its cached keys and values.
    # That is most of the prompt, so training is several times faster.
    n_prefix = _common_prefix(data)
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    prefix = torch.tensor([data[0][0][:n_prefix]])
    rest = [(p[n_prefix:], c) for p, c in data]
    for step, (ids, mask, labels) in enumerate(
        _batches(rest, config.batch_size, config.steps, tokenizer.pad_token_id, rng), start=1
    ):
        with torch.no_grad():
            cache = _cache_of(model(input_ids=prefix, use_cache=True))
        cache.batch_repeat_interleave(ids.shape[0])
        full_mask = torch.cat([torch.ones((ids.shape[0], n_prefix), dtype=mask.dtype), mask], dim=1)
        loss = model(input_ids=ids, attention_mask=full_mask, labels=labels, **{cache_arg: cache}).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        optim.zero_grad(set_to_none=True)
        loss_value = float(loss.detach())
        if progress is not None:
            progress(step, config.steps, loss_value)
    model.eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    stats = {
        "format": fmt.name,
        "tokenizer_s": round(t_tok, 2),
        "train_s": round(time.perf_counter() - t0 - t_tok, 2),
        "final_loss": round(loss_value, 4),
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "examples": len(data),
        "shared_prefix_tokens": n_prefix,
    }
    return model, tokenizer, stats


def load_demo_model(
    format_name: str,
    config: TrainConfig = TrainConfig(),
    *,
    progress: Optional[ProgressFn] = None,
    on_train: Optional[Callable[[], None]] = None,
) -> Tuple[Any, Any, dict]:
    """``(model, tokenizer, info)`` for the demo in ``format_name``: the cached model, or one
    trained now and cached (``on_train()`` is called first, e.g. to show a progress bar).
    ``info`` has the training stats, ``"cached"`` and ``"path"``."""
    target = model_dir(format_name, config)
    if (target / "demo.json").is_file():
        model, tokenizer = load_local_model(target)
        info = json.loads((target / "demo.json").read_text(encoding="utf-8"))
        return model, tokenizer, {**info, "cached": True, "path": str(target)}
    if on_train is not None:
        on_train()
    model, tokenizer, stats = train_demo_model(get(format_name), config, progress)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(tmp)
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    tokenizer.save_pretrained(tmp)
    (tmp / "demo.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
    try:
        tmp.rename(target)
    except OSError:  # another process finished first: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)
    model, tokenizer = load_local_model(target)
    return model, tokenizer, {**stats, "cached": False, "path": str(target)}
