"""Token budgets in generate(): ``GrammarLogitsProcessor(token_budgets=...)`` with one row (each
row's Matcher fills its mask) and several (``BatchMatcher`` fills them), and a format's
reasoning budget counted from a think block the prompt opened (``prefix_token_ids``)."""

from __future__ import annotations

from typing import Any, List

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentgrammar import Compiler, Grammar, Vocabulary  # noqa: E402
from agentgrammar.formats import AgentFormat, reasoning_budget  # noqa: E402
from agentgrammar.grammar.structural_tag import token_budgets  # noqa: E402
from agentgrammar.hf import GrammarLogitsProcessor  # noqa: E402
from tests.hf_models import tiny_llama  # noqa: E402

THINK = {"type": "sequence", "elements": [
    {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_tokens": 5}, "end": "</think>"},
    {"type": "const_string", "value": "ok"}]}  # fmt: skip


@pytest.fixture(scope="module")
def model(tok: Any, vocab: Vocabulary) -> Any:
    return tiny_llama(tok, vocab, vocab_size=len(tok), hidden_size=64, max_positions=256)


def _spent_inside(tok: Any, ids: List[int], begin: str, end: str, before: str = "") -> int:
    """Tokens after the one that completes ``begin`` and before the one that starts ``end``
    (the text decoded token by token; ``before``: text already written, the prompt's part)."""
    text, opened, count = before, begin in before, 0
    for t in ids:
        piece = tok.decode([t], clean_up_tokenization_spaces=False)
        if opened and (
            end in text + piece or any((text + piece).endswith(end[:k]) for k in range(1, len(end)))
        ):
            return count
        text += piece
        if opened:
            count += 1
        opened = opened or begin in text
    raise AssertionError(f"the block never ended: {text!r}")


@pytest.mark.parametrize("rows", [1, 3], ids=["one_row", "batch"])
def test_a_budget_ends_the_think_block(model: Any, tok: Any, compiler: Compiler, rows: int) -> None:
    processor = GrammarLogitsProcessor(
        compiler.compile(Grammar.from_structural_tag(THINK)),
        token_budgets=token_budgets(THINK),
        max_threads=2,
    )
    inputs = tok(["Question:"] * rows, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**inputs, logits_processor=[processor], pad_token_id=tok.eos_token_id,
                             max_new_tokens=40, do_sample=True, top_k=50)  # fmt: skip
    for row in out[:, inputs["input_ids"].shape[1] :].tolist():
        text = tok.decode(row, clean_up_tokenization_spaces=False)
        assert "</think>ok" in text, text  # a random model closes the block only when made to
        assert _spent_inside(tok, row, "<think>", "</think>") <= 5, text


def test_reasoning_budget_counts_the_prompts_part_of_the_block(
    model: Any, tok: Any, compiler: Compiler
) -> None:
    fmt = AgentFormat(think_begin="<think>", think_end="</think>", think_suffix="\n")
    grammar = fmt.grammar([], tool_choice="none", reasoning_budget=6)
    tag = fmt.structural_tag([], tool_choice="none", reasoning_budget=6)
    assert token_budgets(tag) == [reasoning_budget(fmt, 6)]
    prefix = tok.encode("<think> I see a", add_special_tokens=False)  # the prompt opened the block
    processor = GrammarLogitsProcessor(
        compiler.compile(grammar), token_budgets=[reasoning_budget(fmt, 6)], prefix_token_ids=prefix
    )
    ids = torch.tensor([tok.encode("Question:") + prefix])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    with torch.no_grad():
        out = model.generate(**inputs, logits_processor=[processor], pad_token_id=tok.eos_token_id,
                             max_new_tokens=30, do_sample=True, top_k=50)  # fmt: skip
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    in_prompt = len(prefix) - len(tok.encode("<think>", add_special_tokens=False))
    spent = _spent_inside(tok, new, "<think>", "</think>", before="<think> I see a")
    assert in_prompt + spent <= 6, tok.decode(new)
    with pytest.raises(ValueError, match="int >= 0"):
        fmt.grammar([], reasoning_budget=-1)
