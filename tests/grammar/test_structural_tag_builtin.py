"""xgrammar's builtin model tags (``xgrammar.get_model_structural_tag``): every family, tool
choice, reasoning setting and ``token_markers`` setting, compiled here and by xgrammar on the
kit's Qwen3 vocabulary, masks compared bit for bit along random valid walks (special and stop
tokens compared apart, as in ``tests/engine/test_xgrammar_differential.py``).

A combination xgrammar itself refuses (``token_markers`` for most families) is not a case. One
we refuse raises ``StructuralTagError`` naming what it does not support: the default run checks
that the refused ones are exactly those that use a format we do not have yet (token-level
formats, token budgets, excludes inside a json_schema but for gemma's), so a new refusal fails; the ``slow`` sweep walks them all.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, StructuralTagError, Vocabulary, VocabularyError

xgr = pytest.importorskip("xgrammar")

from tests.engine.test_xgrammar_differential import Env, differential_walk  # noqa: E402
from tests.grammar.test_structural_tag_tokens import marked_compiler  # noqa: E402
from tests.kit import kit_tokenizer  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}},
    {"type": "function", "function": {"name": "note", "description": "Note", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["text"]}}},
]  # fmt: skip
CHOICES: List[Any] = ["none", "auto", "required", {"type": "function", "function": {"name": "add"}}]
FAMILIES = sorted(xgr.builtin_structural_tag._structural_tag_registry)
# Formats this converter does not have yet: a tag using one is refused, naming it.
UNSUPPORTED_TYPES: set = set()


def _cases() -> List[Tuple[str, Any, bool, bool]]:
    return [(m, c, r, t) for m in FAMILIES for c in CHOICES for r in (True, False) for t in (False, True)]


def _tag(model: str, choice: Any, reasoning: bool, markers: bool) -> Dict[str, Any]:
    try:
        tag = xgr.get_model_structural_tag(
            model, tools=TOOLS, tool_choice=choice, reasoning=reasoning, token_markers=markers
        )
    except ValueError as e:  # xgrammar's own refusal (token markers for most families)
        pytest.skip(f"xgrammar refuses it: {e}")
    return tag.model_dump()


def _unsupported(node: Any) -> bool:
    """Whether a tag (as a dict) uses a format or option this converter does not have yet."""
    if isinstance(node, list):
        return any(_unsupported(x) for x in node)
    if not isinstance(node, dict):
        return False
    if node.get("type") in UNSUPPORTED_TYPES:
        return True
    if node.get("type") == "json_schema" and node.get("excludes") and node.get("style") != "gemma":
        return True  # excludes in JSON strings: only gemma's strings (all raw text) have them
    if node.get("max_chars") is not None:
        return True
    return any(_unsupported(v) for k, v in node.items() if k != "json_schema")


@pytest.fixture(scope="module")
def qenv() -> Env:
    return qwen3_env()


def qwen3_env() -> Env:
    """The differential walk's setting on the kit's Qwen3 vocabulary."""
    tok = kit_tokenizer("qwen3")  # skips, naming the path, without the kit
    vocab = Vocabulary.from_huggingface(tok)
    V, stops = vocab.vocab_size, sorted(vocab.stop_token_ids)
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=V, stop_token_ids=stops)
    words = (V + 31) // 32
    bits = np.zeros(words * 32, dtype=np.uint8)
    bits[list(vocab.special_token_ids)] = 1
    special_words = np.packbits(bits, bitorder="little").view(np.uint32)
    bits[:] = 0
    bits[stops] = 1
    stop_words = np.packbits(bits, bitorder="little").view(np.uint32)
    skip = set(vocab.special_token_ids) | set(stops)
    closing = np.array(
        [i not in skip and any(c in t for c in b'"}])\n;>!.,') for i, t in enumerate(vocab.token_bytes)]
    )
    short = np.array([i not in skip and len(t) == 1 for i, t in enumerate(vocab.token_bytes)])
    pad = V - len(closing)
    closing, short = np.pad(closing, (0, pad)), np.pad(short, (0, pad))
    return Env(
        tok,
        vocab,
        info,
        Compiler(vocab),
        xgr.GrammarCompiler(info),
        stops,
        special_words,
        stop_words,
        closing,
        short,
    )


def _check(qenv: Env, model: str, choice: Any, reasoning: bool, markers: bool, seeds: int) -> str:
    """'matched' or 'refused' (what we refuse must use a format we do not have)."""
    tag = _tag(model, choice, reasoning, markers)
    try:
        grammar = Grammar.from_structural_tag(tag)
    except StructuralTagError as e:
        assert _unsupported(tag), f"{model}: refused a tag of supported formats: {e}"
        return "refused"
    try:
        compiler = marked_compiler(qenv, grammar)  # markers: a vocabulary marked for them
    except VocabularyError:  # the family's markers are no tokens of Qwen3's: xgrammar agrees
        with pytest.raises(Exception, match="not found in vocabulary"):
            qenv.xcompiler.compile_structural_tag(json.dumps(tag))
        pytest.skip("the kit's Qwen3 vocabulary does not have the family's marker tokens")
    ours = compiler.compile(grammar)
    if compiler is not qenv.compiler:  # its specials also hold the tokens of a raw 0xFF byte
        qenv = _marked_env(qenv, compiler.vocabulary)
    theirs = qenv.xcompiler.compile_structural_tag(json.dumps(tag))  # token formats need its vocabulary
    label = f"{model}/{choice}/reasoning={reasoning}/markers={markers}"
    for seed in range(seeds):
        differential_walk(qenv, ours, theirs, seed, steps=40, label=label)
    return "matched"


def _marked_env(env: Env, vocab: Vocabulary) -> Env:
    bits = np.zeros(len(env.special_words) * 32, dtype=np.uint8)
    bits[list(vocab.special_token_ids)] = 1
    return dataclasses.replace(env, special_words=np.packbits(bits, bitorder="little").view(np.uint32))


SMALL = [("qwen_3", CHOICES[3], True, True), ("qwen_3", "auto", True, True), ("qwen_3", "auto", True, False), ("llama", "required", False, False), ("harmony", "auto", True, False),
         ("kimi", CHOICES[3], True, False), ("deepseek_r1", "auto", False, False), ("qwen_3_coder", "auto", True, False)]  # fmt: skip


@pytest.mark.parametrize("model, choice, reasoning, markers", SMALL, ids=lambda v: str(v)[:12])
def test_builtin_tags_give_xgrammars_masks(
    qenv: Env, model: str, choice: Any, reasoning: bool, markers: bool
) -> None:
    _check(qenv, model, choice, reasoning, markers, seeds=1)


@pytest.mark.slow
@pytest.mark.parametrize("model, choice, reasoning, markers", _cases(), ids=lambda v: str(v)[:12])
def test_every_builtin_tag_gives_xgrammars_masks(
    qenv: Env, model: str, choice: Any, reasoning: bool, markers: bool
) -> None:
    _check(qenv, model, choice, reasoning, markers, seeds=2)
