"""Fixtures shared by the generate() tests: the Llama-3.2 tokenizer padded on the left, its
vocabulary and a compiler (skipped where torch, transformers or the tokenizer are missing)."""

from __future__ import annotations

from typing import Any

import pytest

from agentgrammar import Compiler, Vocabulary


@pytest.fixture(scope="module")
def tok() -> Any:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.hf_models import padded_llama32_tokenizer

    return padded_llama32_tokenizer()


@pytest.fixture(scope="module")
def vocab(tok: Any) -> Vocabulary:
    return Vocabulary.from_huggingface(tok)


@pytest.fixture(scope="module")
def compiler(vocab: Vocabulary) -> Compiler:
    return Compiler(vocab)
