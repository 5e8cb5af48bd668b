"""Structured output: make ``generate()`` write JSON that a Pydantic model validates.

What it shows: a plain Pydantic model's JSON Schema (``Model.model_json_schema()``) compiled with
``Compiler.compile_json_schema``, the ``GrammarLogitsProcessor`` in ``model.generate()``, and the
output read back with ``Model.model_validate_json``.

Run (a tiny random model on the Llama-3.2 tokenizer unless you pass a local model)::

    python examples/structured_output.py
    python examples/structured_output.py --model /path/to/Qwen2.5-0.5B-Instruct
"""

from __future__ import annotations

import argparse
import time
from typing import Literal

import torch
from _model import RANDOM_NOTE, add_model_argument, chat_prompt, load
from pydantic import BaseModel, Field

from agentgrammar import Compiler, Vocabulary
from agentgrammar.hf import GrammarLogitsProcessor


class Forecast(BaseModel):
    """Tomorrow's weather in one city."""

    city: str = Field(max_length=16)
    conditions: Literal["sunny", "cloudy", "rain", "snow"]
    high_c: int = Field(ge=-40, le=50)
    windy: bool


def main() -> None:
    parser = argparse.ArgumentParser(description="Pydantic structured output with generate().")
    add_model_argument(parser)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    loaded = load(args.model)
    model, tok = loaded.model, loaded.tokenizer
    # The model's vocabulary may be wider than the tokenizer's (padding rows): say so.
    vocab = Vocabulary.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiler = Compiler(vocab)  # one per process: it caches compiled grammars and token masks

    start = time.perf_counter()
    # compact: no free whitespace between JSON tokens; strict: no keys beyond the model's fields
    # (Pydantic's schema allows extra keys, and a weak model would happily add them forever).
    schema = Forecast.model_json_schema()
    compiled = compiler.compile_json_schema(schema, whitespace="compact", strict=True)
    print(f"compiled the Forecast schema in {1e3 * (time.perf_counter() - start):.1f} ms")

    prompt = chat_prompt(tok, "Give tomorrow's forecast for Oslo as JSON.")
    inputs = tok(prompt, return_tensors="pt", add_special_tokens=False)
    processor = GrammarLogitsProcessor(compiled)
    torch.manual_seed(args.seed)
    with torch.no_grad():
        out = model.generate(
            **inputs,
            logits_processor=[processor],
            eos_token_id=list(vocab.stop_token_ids),  # stop on every token the grammar ends with
            pad_token_id=tok.pad_token_id,
            max_new_tokens=args.max_new_tokens,
            do_sample=False,
        )
    text = tok.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    print(f"generated: {text}")
    if loaded.random:
        print(RANDOM_NOTE)

    forecast = Forecast.model_validate_json(text)  # raises if the output were not valid
    print(f"validated: {forecast!r}")
    steps = processor.call_times_s
    print(f"mask time per step: {1e3 * sum(steps) / max(len(steps), 1):.2f} ms over {len(steps)} steps")


if __name__ == "__main__":
    main()
