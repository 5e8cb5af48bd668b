"""A small byte-level BPE tokenizer of our own, trained on the demo corpus.

Byte-level (every byte string has an encoding, and ``Vocabulary.from_huggingface`` reads its
tokens as bytes), no pre-tokenizer regex (merges may cross spaces and punctuation, so the
constant tools block of the prompt becomes a few long tokens and training stays cheap), and
two special tokens: ``<|eos|>`` (end of turn) and ``<|pad|>``. Format markers such as
``<tool_call>`` are ordinary text, so the grammar constrains them like any other text.

Example:
    >>> tok = train_tokenizer(["<tool_call>{\\"name\\": \\"calculate\\"}</tool_call>"] * 50, vocab_size=300)
    >>> text = '<tool_call>{"a": "é€"}'
    >>> tok.decode(tok.encode(text)) == text, tok.eos_token, tok.pad_token
    (True, '<|eos|>', '<|pad|>')
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["EOS", "PAD", "TOKENIZER_VERSION", "train_tokenizer"]

EOS = "<|eos|>"
PAD = "<|pad|>"
TOKENIZER_VERSION = 1
"""Bumped whenever the tokenizer's training changes (part of the model cache key)."""


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 1024, max_token_length: int = 24) -> Any:
    """Train the BPE on ``texts`` and wrap it as a ``transformers.PreTrainedTokenizerFast`` with
    ``eos_token`` and ``pad_token`` set (deterministic for the same texts)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=max_token_length,
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token=EOS, pad_token=PAD, clean_up_tokenization_spaces=False
    )
