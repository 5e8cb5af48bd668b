"""The demo tokenizer: byte-level, every text round-trips, and the engine reads it."""

from __future__ import annotations

import pytest

from agentgrammar import Vocabulary
from agentgrammar.demo.corpus import make_corpus
from agentgrammar.demo.tokenizer import EOS, PAD, train_tokenizer
from agentgrammar.formats import get


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    corpus = make_corpus(get("tags"), 200)
    return train_tokenizer([e.prompt for e in corpus[:20]] + [e.completion for e in corpus], vocab_size=600)


TEXTS = [
    '<think>Hm.</think>\n<tool_call>{"name": "calculate", "arguments": {"expression": "1 + 2"}}</tool_call>',
    "Grüße aus Köln — 東京 🌧️ \t\r\n  trailing  ",
    '{"a": "\\u00e9\\n"}',
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip(tokenizer, text: str) -> None:  # type: ignore[no-untyped-def]
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, clean_up_tokenization_spaces=False) == text


def test_special_tokens(tokenizer) -> None:  # type: ignore[no-untyped-def]
    assert tokenizer.eos_token == EOS and tokenizer.pad_token == PAD
    assert tokenizer.encode("<tool_call>", add_special_tokens=False) != [tokenizer.eos_token_id]
    assert tokenizer.encode("x", add_special_tokens=True) == tokenizer.encode("x", add_special_tokens=False)


@pytest.mark.parametrize("text", TEXTS)
def test_vocabulary_bytes_match_the_tokenizer(tokenizer, text: str) -> None:  # type: ignore[no-untyped-def]
    vocab = Vocabulary.from_huggingface(tokenizer)
    assert vocab.vocab_type == "byte_level"
    assert vocab.stop_token_ids == (tokenizer.eos_token_id,)
    assert tokenizer.pad_token_id in vocab.special_token_ids
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert b"".join(vocab.token_bytes[i] for i in ids) == text.encode("utf-8")
    assert vocab.decode(ids) == text.encode("utf-8")


def test_deterministic() -> None:
    texts = [e.completion for e in make_corpus(get("hermes"), 50)]
    assert (
        train_tokenizer(texts, vocab_size=400).get_vocab()
        == train_tokenizer(texts, vocab_size=400).get_vocab()
    )
