"""``GrammarLogitsProcessor.early_masks``: the next step's masks computed while the model runs its
forward pass give exactly the generations of the plain processor, and errors still surface."""

from __future__ import annotations

import time
from typing import Any, List

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgrammar import Compiler, Grammar, MatcherError, Vocabulary  # noqa: E402
from agentgrammar.hf import EarlyMasks, GrammarLogitsProcessor, early_masks  # noqa: E402
from agentgrammar.hf.early_masks import early_masks_pay  # noqa: E402
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
    model: Any, tok: Any, processor: GrammarLogitsProcessor, prompts: List[str], early: Any, **kw: Any
) -> Any:
    """``early``: False (no criterion), True (every step's masks early) or the criterion."""
    inputs = tok(prompts, return_tensors="pt", padding=True)
    criterion = EarlyMasks(processor, mode="always") if early is True else early
    extra = {"stopping_criteria": [criterion]} if criterion else {}
    kw.setdefault("logits_processor", [processor])
    kw.setdefault("max_new_tokens", 40)
    with torch.no_grad():
        out = model.generate(**inputs, pad_token_id=tok.eos_token_id, **kw, **extra)
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
    assert isinstance(processor.early_masks, EarlyMasks)
    early = EarlyMasks(processor, mode="always")
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
    EarlyMasks(processor, mode="always")(torch.tensor([[0, 0, 0]]), None)
    with pytest.raises(MatcherError, match="input_ids changed"):
        processor(torch.tensor([[0, 0, 0, 1]]), torch.zeros(1, 32))


def test_reset_waits_for_a_pending_step_and_forgets_it():
    processor = GrammarLogitsProcessor(_tiny())
    processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    early = EarlyMasks(processor, mode="always")
    early(torch.tensor([[0, 0, 2]]), None)  # a step that fails
    processor.reset()
    processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    early(torch.tensor([[0, 0, 0]]), None)
    scores = processor(torch.tensor([[0, 0, 0]]), torch.zeros(1, 32))
    assert sorted(torch.isfinite(scores[0]).nonzero().flatten().tolist()) == [1, 3]


def test_before_the_first_call_the_criterion_does_nothing():
    processor = GrammarLogitsProcessor(_tiny())
    early = EarlyMasks(processor, mode="always")
    assert early(torch.zeros(1, 2, dtype=torch.long), None).tolist() == [False]
    assert early.prefetched == 0
    scores = processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 32))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [0]


class _Slow:
    """A logits processor placed before the grammar's that makes the forward pass look long."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        time.sleep(self.seconds)
        return scores


@pytest.mark.parametrize("do_sample", [False, True])
def test_eight_rows_early_equal_plain_with_rows_that_finish_first(model, tok, compiler, do_sample):
    # eight rows, filled on the C pool by the worker thread; the yes/no rows end after a token
    # or two and are padded while the JSON rows go on, and the last row spends its tokens
    grammars = [
        compiler.compile(Grammar.from_json_schema(SCHEMA, whitespace="compact")),
        compiler.compile(Grammar.from_ebnf('root ::= "yes" | "no"')),
        compiler.compile(Grammar.from_ebnf('root ::= "a" [a-z ]*')),
        compiler.compile(Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}})),
    ] * 2
    prompts = [f"Row {k}: the weather in Oslo, {'yes or no' if k % 4 == 1 else 'as JSON'}?" for k in range(8)]
    runs = []
    for criterion in (False, "always"):
        torch.manual_seed(11)
        processor = GrammarLogitsProcessor(grammars, batch_size=8)
        early = EarlyMasks(processor, mode="always") if criterion else False
        out = _generate(model, tok, processor, prompts, early, do_sample=do_sample, max_new_tokens=24)
        runs.append((out, processor, early))
    (plain, _, _), (overlapped, processor, early) = runs
    assert torch.equal(plain, overlapped)
    assert early.prefetched == plain.shape[1]  # every step after the first, and one past the end
    finished = [m.is_terminated() for m in processor.matchers]
    assert finished[1] and finished[5]  # the yes/no rows ended, and were padded after
    assert (overlapped[1] == tok.eos_token_id).any()
    assert not all(finished)  # the free-text rows ran out of tokens first


def test_auto_mode_decides_from_what_it_measures(model, tok, compiler, monkeypatch):
    compiled = compiler.compile(Grammar.from_json_schema(SCHEMA, whitespace="compact"))
    prompts = ["The weather in Oslo:", "In Lima:"]
    monkeypatch.setattr(early_masks, "EARLY_MIN_MASK_S", 0.0)  # this grammar's masks are cheap

    def run(forward_s: float, min_forward_s: float) -> Any:
        monkeypatch.setattr(early_masks, "EARLY_MIN_FORWARD_S", min_forward_s)
        processor = GrammarLogitsProcessor(compiled)
        processor._cpus = torch.get_num_threads() + 1  # a CPU left over, whatever runs the test
        criterion = processor.early_masks
        assert criterion.mode == "auto"
        out = _generate(
            model, tok, processor, prompts, criterion, logits_processor=[_Slow(forward_s), processor]
        )
        return out, criterion.prefetched

    slow, started = run(0.004, 0.002)  # a 4 ms "forward pass": masks start early from the 3rd step
    assert 0 < started < slow.shape[1]  # the first steps measure, in the processor's call
    fast, never = run(0.0, 10.0)
    assert never == 0
    assert torch.equal(slow, fast)
    monkeypatch.setattr(early_masks, "EARLY_MIN_FORWARD_S", 0.002)
    processor = GrammarLogitsProcessor(compiled)
    processor._cpus = torch.get_num_threads()  # torch's threads take every CPU: none left over
    criterion = processor.early_masks
    busy = _generate(model, tok, processor, prompts, criterion, logits_processor=[_Slow(0.004), processor])
    assert criterion.prefetched == 0
    assert torch.equal(busy, slow)


def test_early_masks_pay_needs_mask_work_and_a_longer_forward_pass():
    assert not early_masks_pay(None, 0.001) and not early_masks_pay(0.05, None)
    assert early_masks_pay(0.05, 0.001)
    assert not early_masks_pay(0.05, early_masks.EARLY_MIN_MASK_S / 2)
    assert not early_masks_pay(early_masks.EARLY_MIN_FORWARD_S / 2, 0.001)
    assert not early_masks_pay(0.05, 0.04)  # the mask as long as the forward pass: little to hide


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be 'auto' or 'always'"):
        EarlyMasks(GrammarLogitsProcessor(_tiny()), mode="sometimes")


class _Prefer:
    """A logits processor after the grammar's that makes greedy search pick ``token`` wherever
    the grammar allows it (a masked token stays ``-inf``)."""

    def __init__(self, token: int) -> None:
        self.token = token

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores[:, self.token] += 1e4
        return scores


def test_a_stop_token_generate_does_not_stop_on_gets_the_forced_eos_early_too(model, tok, vocab, compiler):
    # the rows end with a stop token that generate() is not told about: the processor then
    # allows only its eos_token_id, one step later, whether that step's masks came early or not
    stops = list(vocab.stop_token_ids)
    assert len(stops) >= 2
    compiled = compiler.compile(Grammar.from_ebnf('root ::= "yes" | "no"'))
    outs = []
    for early in (False, True):
        processor = GrammarLogitsProcessor(compiled, eos_token_id=stops[0])
        out = _generate(
            model,
            tok,
            processor,
            ["Is it raining?", "Is it snowing in Oslo today?"],
            early,
            logits_processor=[processor, _Prefer(stops[1])],
            eos_token_id=stops[0],
            max_new_tokens=12,
        )
        outs.append(out)
        for row in out.tolist():
            end = row.index(stops[1])
            assert row[end + 1] == stops[0]  # the forced eos right after the unknown stop token
        assert all(m.is_terminated() for m in processor.matchers)
    assert torch.equal(outs[0], outs[1])
