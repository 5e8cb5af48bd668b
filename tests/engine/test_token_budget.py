"""Token budgets (``any_text.max_tokens``): once spent, only the tag's end; rollback restores
the budget; the masks equal xgrammar's along a think block on the kit's Qwen3 vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, StructuralTagError, Vocabulary
from agentgrammar.grammar.structural_tag import token_budgets

THINK = {"type": "sequence", "elements": [
    {"type": "tag", "begin": "<t>", "content": {"type": "any_text", "max_tokens": 2}, "end": "</t>"},
    {"type": "const_string", "value": "ok"}]}  # fmt: skip


def test_a_spent_budget_allows_only_the_end_and_rollback_restores_it() -> None:
    vocab = Vocabulary(["<t>", "a", "</t>", "</", "t>", "ok", "</s>"], stop_token_ids=[6])
    m = Matcher(
        Compiler(vocab).compile(Grammar.from_structural_tag(THINK)), token_budgets=token_budgets(THINK)
    )
    assert m.accept_tokens([0, 1, 1])
    assert m.allowed_token_ids() == [2, 3]
    m.rollback(1)
    assert 1 in m.allowed_token_ids()
    assert m.accept_tokens([1, 3]) and m.allowed_token_ids() == [4]  # the rest of the end
    assert m.accept_tokens([4]) and m.allowed_token_ids() == [5]
    assert m.accept_string("ok")  # accept_string spends no budget, as in xgrammar


def test_max_tokens_outside_a_tag_is_refused_with_a_path() -> None:
    with pytest.raises(StructuralTagError, match="only as a tag's content") as info:
        Grammar.from_structural_tag({"type": "any_text", "max_tokens": 3})
    assert info.value.path == "$.format.max_tokens"


def test_budget_masks_equal_xgrammar() -> None:
    xgr = pytest.importorskip("xgrammar")
    from tests.grammar.test_structural_tag_builtin import qwen3_env

    env = qwen3_env()
    fmt = {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_tokens": 3}, "end": "</think>"},
        {"type": "const_string", "value": "ok"}]}  # fmt: skip
    ours = Matcher(env.compiler.compile(Grammar.from_structural_tag(fmt)), token_budgets=token_budgets(fmt))
    xfmt = json.dumps({"type": "structural_tag", "format": fmt})
    theirs = xgr.GrammarMatcher(env.xcompiler.compile_grammar(xgr.Grammar.from_structural_tag(xfmt)))
    V = env.vocab.vocab_size
    keep = np.ones(V, dtype=bool)
    keep[env.stops + list(env.vocab.special_token_ids)] = False  # compared apart (see the differential test)
    ids = env.tok.encode("<think>hello world and</think>ok", add_special_tokens=False)
    spent = 0
    for t in ids:
        a = np.zeros((1, (V + 31) // 32), dtype=np.int32)
        b = xgr.allocate_token_bitmask(1, V)
        ours.fill_next_token_bitmask(a)
        theirs.fill_next_token_bitmask(b)
        ab = np.unpackbits(a[0].view(np.uint8), bitorder="little")[:V].astype(bool)
        bb = np.unpackbits(b[0].numpy().view(np.uint8), bitorder="little")[:V].astype(bool)
        assert np.array_equal(ab[keep], bb[keep]), env.tok.decode([t])
        spent += ab.sum() < 10
        assert ours.accept_token(t) and theirs.accept_token(t)
    assert spent >= 2  # the first mask and the spent budget's: only the end
