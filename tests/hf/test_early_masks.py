"""``GrammarLogitsProcessor.early_masks``: the next step's masks computed while the model runs its
forward pass give exactly the generations of the plain processor, and errors still surface."""

from __future__ import annotations

from typing import Any, List

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgrammar import Compiler, Grammar, MatcherError, Vocabulary  # noqa: E402
from agentgrammar.hf import EarlyMasks, GrammarLogitsProcessor  # noqa: E402
from tests.hf_models import tiny_llama  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 8}, "n": {"type": "integer", "maximum": 999}},
    "required": ["city", "n"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def model(tok: Any, vocab: Vocabulary) -> Any:
    return tiny_llama(tok, vocab, vocab_size=len(tok) + 63, hidden_size=64, max_positions=256)


def _generate(
    model: Any, tok: Any, processor: GrammarLogitsProcessor, prompts: List[str], early: bool, **kw: Any
) -> Any:
    inputs = tok(prompts, return_tensors="pt", padding=True)
    extra = {"stopping_criteria": [processor.early_masks]} if early else {}
    with torch.no_grad():
        out = model.generate(
            **inputs,
            logits_processor=[processor],
            pad_token_id=tok.eos_token_id,
            max_new_tokens=40,
            **kw,
            **extra,
        )
    return out[:, inputs["input_ids"].shape[1] :]


@pytest.mark.parametrize("do_sample", [False, True])
def test_generations_equal_the_plain_processor(model, tok, compiler, do_sample):
    grammars = [
        compiler.compile(Grammar.from_json_schema(SCHEMA, whitespace="compact")),
        compiler.compile(Grammar.from_ebnf('root ::= "yes" | "no"')),
    ]
    prompts = ["The weather in Oslo:", "Is it raining?"]
    runs = []
    for early in (False, True):
        torch.manual_seed(7)
        processor = GrammarLogitsProcessor(grammars, batch_size=2)
        runs.append((_generate(model, tok, processor, prompts, early, do_sample=do_sample), processor))
    (plain, _), (overlapped, processor) = runs
    assert torch.equal(plain, overlapped)
    # every step after the first was prefetched: the rows' matchers saw the last sampled token too
    assert len(processor.call_times_s) == plain.shape[1]
    assert processor.matchers[1].is_terminated()


def _tiny() -> Any:
    tokens = ["y", "es", "no", "x"] + [f"t{i}" for i in range(4, 31)] + ["</s>"]
    vocab = Vocabulary(tokens, stop_token_ids=[31])
    return Compiler(vocab).compile(Grammar.from_ebnf('root ::= "y" "es"* "x"'))


def test_a_rejected_token_is_reported_at_the_next_call():
    processor = GrammarLogitsProcessor(_tiny())
    early = processor.early_masks
    assert isinstance(early, EarlyMasks)
    processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    bad = torch.tensor([[0, 0, 2]])  # "no": the grammar wants "y"
    assert early(bad, None).tolist() == [False]  # the criterion itself never raises or stops
    with pytest.raises(MatcherError, match="row 0: the grammar rejects token 2"):
        processor(bad, torch.zeros(1, 32))
    with pytest.raises(MatcherError, match="earlier call failed"):
        processor(torch.tensor([[0, 0, 2, 1]]), torch.zeros(1, 32))
    processor.reset()
    scores = processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [0]


def test_ids_other_than_the_prefetched_ones_are_refused():
    processor = GrammarLogitsProcessor(_tiny())
    processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    processor.early_masks(torch.tensor([[0, 0, 0]]), None)
    with pytest.raises(MatcherError, match="input_ids changed"):
        processor(torch.tensor([[0, 0, 0, 1]]), torch.zeros(1, 32))


def test_reset_waits_for_a_pending_step_and_forgets_it():
    processor = GrammarLogitsProcessor(_tiny())
    processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    processor.early_masks(torch.tensor([[0, 0, 2]]), None)  # a step that fails
    processor.reset()
    processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    processor.early_masks(torch.tensor([[0, 0, 0]]), None)
    scores = processor(torch.tensor([[0, 0, 0]]), torch.zeros(1, 32))
    assert sorted(torch.isfinite(scores[0]).nonzero().flatten().tolist()) == [1, 3]


def test_before_the_first_call_the_criterion_does_nothing():
    processor = GrammarLogitsProcessor(_tiny())
    assert processor.early_masks(torch.zeros(1, 2, dtype=torch.long), None).tolist() == [False]
    scores = processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [0]
