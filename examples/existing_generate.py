"""Adding grammar constraints to a ``generate()`` call you already have.

What it shows: an existing batched, sampling ``model.generate()`` call (two prompts, left padding)
gains ``logits_processor=[processor]`` and ``eos_token_id=list(vocab.stop_token_ids)`` and
nothing else changes. Each prompt gets its own grammar (a list of compiled grammars, one per
prompt); every row is then checked against its grammar.

Run::

    python examples/existing_generate.py
    python examples/existing_generate.py --model /path/to/local/model --seed 3
"""

from __future__ import annotations

import argparse
from typing import List, Literal

import torch
from _model import RANDOM_NOTE, add_model_argument, chat_prompt, load
from pydantic import BaseModel, Field

from agentgrammar import Compiler, Grammar, Vocabulary
from agentgrammar.hf import GrammarLogitsProcessor


class Sentiment(BaseModel):
    """The sentiment of a review."""

    label: Literal["positive", "neutral", "negative"]
    confidence: int = Field(ge=0, le=100)


def main() -> None:
    parser = argparse.ArgumentParser(description="Wire GrammarLogitsProcessor into generate().")
    add_model_argument(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()

    loaded = load(args.model)
    model, tok = loaded.model, loaded.tokenizer
    vocab = Vocabulary.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiler = Compiler(vocab)

    # One grammar per prompt: a yes/no answer, and a JSON object for the second prompt.
    grammars: List[Grammar] = [
        Grammar.from_ebnf('root ::= ("yes" | "no") "." '),
        Grammar.from_json_schema(Sentiment.model_json_schema(), whitespace="compact", strict=True),
    ]
    prompts = [
        chat_prompt(tok, "Is Oslo the capital of Norway? Answer yes or no."),
        chat_prompt(tok, "Rate the sentiment of: 'The soup was cold but the staff were lovely.'"),
    ]
    inputs = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    processor = GrammarLogitsProcessor([compiler.compile(g) for g in grammars])

    torch.manual_seed(args.seed)
    with torch.no_grad():
        out = model.generate(
            **inputs,
            do_sample=True,  # the call as it was: sampling ...
            temperature=0.9,
            top_p=0.95,
            max_new_tokens=args.max_new_tokens,
            pad_token_id=tok.pad_token_id,
            logits_processor=[processor],  # ... plus the grammar
            eos_token_id=list(vocab.stop_token_ids),  # ... and every stop token the grammar uses
        )

    new_tokens = out[:, inputs["input_ids"].shape[1] :]
    all_valid = True
    for row, (grammar, ids) in enumerate(zip(grammars, new_tokens)):
        text = tok.decode(ids, skip_special_tokens=True)
        valid = grammar.accepts(text)
        all_valid &= valid
        print(f"row {row}: {text!r}  in its grammar: {valid}")
    sentiment = Sentiment.model_validate_json(tok.decode(new_tokens[1], skip_special_tokens=True))
    print(f"validated: {sentiment!r}")
    if loaded.random:
        print(RANDOM_NOTE)
    print(f"valid: {all_valid}")


if __name__ == "__main__":
    main()
