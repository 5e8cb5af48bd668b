"""Tiny randomly initialised Llama models on the real Llama-3.2 tokenizer, for the tests that
drive ``generate()``: their text is nonsense, but every grammar must still hold."""

from __future__ import annotations

import copy
from typing import Any, Optional

from agentgrammar import Vocabulary
from tests.hf_tokenizers import llama32_tokenizer


def padded_llama32_tokenizer() -> Any:
    """A copy of the Llama-3.2 tokenizer that pads on the left with EOS (the shared, cached
    tokenizer keeps its own settings for other tests)."""
    t = copy.deepcopy(llama32_tokenizer())
    t.padding_side = "left"
    t.pad_token = t.eos_token
    return t


def tiny_llama_config(
    tok: Any,
    *,
    vocab_size: Optional[int] = None,
    hidden_size: int = 32,
    layers: int = 2,
    heads: int = 4,
    max_positions: int = 512,
) -> Any:
    """A small ``LlamaConfig`` for ``tok`` (``vocab_size`` past the tokenizer's: a padded model)."""
    import transformers

    return transformers.LlamaConfig(
        vocab_size=vocab_size if vocab_size is not None else len(tok),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.eos_token_id,
    )


def tiny_llama(tok: Any, vocab: Vocabulary, *, seed: int = 0, **config: Any) -> Any:
    """A random ``LlamaForCausalLM`` (see ``tiny_llama_config``) whose ``generate()`` pads with
    EOS and stops on every stop token of ``vocab``, as Llama-3.2-Instruct's generation config
    does with <|end_of_text|> and <|eot_id|> (otherwise a row ending with <|eot_id|> would get
    one more token, the processor's forced EOS)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    m = transformers.LlamaForCausalLM(tiny_llama_config(tok, **config)).eval()
    m.generation_config.pad_token_id = tok.eos_token_id
    m.generation_config.eos_token_id = list(vocab.stop_token_ids)
    return m
