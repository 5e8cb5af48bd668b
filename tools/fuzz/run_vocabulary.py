"""Harness body for ``Vocabulary(...)`` and ``Vocabulary.from_huggingface`` with fake tokenizers."""

from __future__ import annotations

import json
import warnings
from typing import Any, Dict, Optional


class _FakeBackend:
    def __init__(self, kind: Optional[str]) -> None:
        self.kind = kind

    def __getattr__(self, name: str) -> Any:
        if self.kind == "raise":
            raise RuntimeError("backend attribute error")
        raise AttributeError(name)

    def to_str(self) -> str:
        if self.kind == "byte_level":
            return json.dumps({"decoder": {"type": "ByteLevel"}})
        if self.kind == "raise":
            raise RuntimeError("to_str failed")
        return "{not json"


class _FakeAdded:
    def __init__(self, special: Any) -> None:
        self.special = special


def make_fake_tokenizer(spec: Dict[str, Any]) -> Any:
    class FakeTokenizer:
        pass

    tok = FakeTokenizer()
    vocab = spec["vocab"]
    if spec["has_get_vocab"]:

        def get_vocab() -> Any:
            if vocab == "raise":
                raise RuntimeError("no vocabulary today")
            return dict(vocab) if isinstance(vocab, dict) else vocab

        tok.get_vocab = get_vocab  # type: ignore[attr-defined]
    tok.eos_token_id = spec["eos"]  # type: ignore[attr-defined]
    added = spec["added"]
    if added == "raise":
        FakeTokenizer.added_tokens_decoder = property(lambda self: 1 / 0)  # type: ignore[attr-defined]
    elif isinstance(added, dict):
        tok.added_tokens_decoder = {k: _FakeAdded(v) for k, v in added.items()}  # type: ignore[attr-defined]
    elif added is not None:
        tok.added_tokens_decoder = added  # type: ignore[attr-defined]
    if spec["backend"] is not None:
        tok.backend_tokenizer = _FakeBackend(spec["backend"])  # type: ignore[attr-defined]
    if spec["sp_model"]:
        tok.sp_model = object()  # type: ignore[attr-defined]
    return tok


def run_vocabulary(inp: Dict[str, Any]) -> None:
    from agentgrammar import Compiler, Grammar, Matcher, Vocabulary

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if inp["kind"] == "plain":
            vocab = Vocabulary(inp["tokens"], **inp["kwargs"])
        else:
            vocab = Vocabulary.from_huggingface(make_fake_tokenizer(inp["spec"]), **inp["kwargs"])
    repr(vocab)
    vocab.decode(range(vocab.num_tokens), skip_special_tokens=True)
    if vocab.vocab_size > 1 << 22:
        return  # a mask of this size is 2**22 / 8 bytes and more: not for a fuzzing loop
    matcher = Matcher(
        Compiler(vocab, reuse_grammars=False).compile(Grammar.from_ebnf('root ::= [a-z<>]* "a"?'))
    )
    matcher.allowed_token_ids()
    matcher.accept_string("a")
    matcher.allowed_token_ids()
