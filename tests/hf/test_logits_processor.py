"""GrammarLogitsProcessor with transformers generate(): a tiny random Llama and the real Llama-3.2
tokenizer, all offline.

CUDA is not tested here (these machines have no GPU); the processor's masking is the same code
path, with the bitmask copied to the scores' device by ``apply_token_bitmask_inplace``.
"""

from __future__ import annotations

import functools
from typing import Any, FrozenSet, List

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgrammar import Compiler, Grammar, Matcher, MatcherError, Vocabulary  # noqa: E402
from agentgrammar.engine.compiler import byte_compiler  # noqa: E402
from agentgrammar.hf import GrammarLogitsProcessor  # noqa: E402
from tests.hf_models import tiny_llama  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 8}, "n": {"type": "integer"}},
    "required": ["city", "n"],
    "additionalProperties": False,
}
# The same with a bounded integer: a random model would otherwise write digits forever.
BOUNDED_SCHEMA = {
    **SCHEMA,
    "properties": {**SCHEMA["properties"], "n": {"type": "integer", "minimum": 0, "maximum": 999}},
}
MAX_NEW = 40  # enough for BOUNDED_SCHEMA: 11 + ≤10 + 6 + ≤3 + 1 characters, then EOS


@pytest.fixture(scope="module")
def model(tok: Any, vocab: Vocabulary) -> Any:
    # a padded model vocabulary, wider than the tokenizer's
    return tiny_llama(tok, vocab, vocab_size=len(tok) + 63, hidden_size=64, max_positions=256)


@pytest.fixture(scope="module")
def json_grammar() -> Grammar:
    return Grammar.from_json_schema(SCHEMA, whitespace="compact")


@pytest.fixture(scope="module")
def bounded_grammar() -> Grammar:
    return Grammar.from_json_schema(BOUNDED_SCHEMA, whitespace="compact")


@pytest.fixture(scope="module")
def yes_no() -> Grammar:
    return Grammar.from_ebnf('root ::= "yes" | "no"')


def _encode(tok: Any, prompts: List[str]) -> Any:
    return tok(prompts, return_tensors="pt", padding=True)


def _generate(model: Any, tok: Any, processor: Any, prompts: List[str], **kwargs: Any) -> Any:
    inputs = _encode(tok, prompts)
    kwargs.setdefault("max_new_tokens", MAX_NEW)
    with torch.no_grad():
        out = model.generate(**inputs, logits_processor=[processor], pad_token_id=tok.eos_token_id, **kwargs)
    return out[:, inputs["input_ids"].shape[1] :]


@functools.lru_cache(maxsize=None)
def _stop_ids(tok: Any) -> FrozenSet[int]:
    return frozenset(Vocabulary.from_huggingface(tok).stop_token_ids)


def _check_row(tok: Any, grammar: Grammar, new_ids: List[int], *, must_end: bool) -> str:
    """The row's text; asserts it is in the grammar (and stop-ended) or a valid unfinished prefix."""
    stops = _stop_ids(tok)
    ends = [k for k, t in enumerate(new_ids) if t in stops]
    if ends:
        cut = ends[0]
        assert all(t == tok.eos_token_id for t in new_ids[cut + 1 :]), new_ids  # then only padding
        text = tok.decode(new_ids[:cut], clean_up_tokenization_spaces=False)
        assert grammar.accepts(text), text
        return text
    assert not must_end, f"no EOS in {new_ids}"
    text = tok.decode(new_ids, clean_up_tokenization_spaces=False)
    assert Matcher(byte_compiler().compile(grammar)).accept_string(text), text
    return text


def test_greedy_json_schema(model, tok, compiler, bounded_grammar, json_grammar):
    for grammar, must_end in ((bounded_grammar, True), (json_grammar, False)):
        processor = GrammarLogitsProcessor(compiler.compile(grammar))
        new = _generate(model, tok, processor, ["The weather in Paris:"])
        text = _check_row(tok, grammar, new[0].tolist(), must_end=must_end)
        assert text.startswith('{"city": "')
        assert processor.call_times_s and len(processor.call_times_s) <= MAX_NEW


def test_greedy_yes_no_ends_with_eos(model, tok, compiler, yes_no):
    processor = GrammarLogitsProcessor(compiler.compile(yes_no))
    new = _generate(model, tok, processor, ["Is it raining?"], max_new_tokens=8)[0].tolist()
    text = _check_row(tok, yes_no, new, must_end=True)
    assert text in ("yes", "no")
    # generate() stops right after sampling the stop token, so the processor never sees it.
    assert processor.matchers[0].is_completed()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampling(model, tok, compiler, bounded_grammar, seed):
    torch.manual_seed(seed)
    processor = GrammarLogitsProcessor(compiler.compile(bounded_grammar))
    new = _generate(model, tok, processor, ["Weather:"], do_sample=True, top_k=50)
    _check_row(tok, bounded_grammar, new[0].tolist(), must_end=True)


def test_batch_left_padding_per_row_grammars(model, tok, compiler, bounded_grammar, yes_no):
    prompts = ["Is it?", "A much longer prompt about the weather in a city, as JSON:"]
    inputs = _encode(tok, prompts)
    assert (inputs["attention_mask"][0] == 0).any()  # row 0 is left-padded
    grammars = [yes_no, bounded_grammar]
    processor = GrammarLogitsProcessor([compiler.compile(g) for g in grammars], batch_size=2)
    new = _generate(model, tok, processor, prompts)
    texts = [_check_row(tok, g, row.tolist(), must_end=True) for g, row in zip(grammars, new)]
    assert texts[0] in ("yes", "no")
    assert texts[1].startswith('{"city": "')


def test_num_return_sequences(model, tok, compiler, bounded_grammar, yes_no):
    torch.manual_seed(3)
    shared = GrammarLogitsProcessor(compiler.compile(bounded_grammar))
    new = _generate(model, tok, shared, ["Weather:"], do_sample=True, num_return_sequences=3)
    assert new.shape[0] == 3 and len(shared.matchers) == 3
    for row in new:
        _check_row(tok, bounded_grammar, row.tolist(), must_end=True)

    # One grammar per prompt, repeated for each of its returned sequences.
    grammars = [yes_no, bounded_grammar]
    per_prompt = GrammarLogitsProcessor([compiler.compile(g) for g in grammars])
    new = _generate(
        model, tok, per_prompt, ["Yes?", "Weather as JSON:"], do_sample=True, num_return_sequences=3
    )
    assert new.shape[0] == 6
    for k, row in enumerate(new):
        _check_row(tok, grammars[k // 3], row.tolist(), must_end=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mask_applied_in_place_for_dtypes(compiler, vocab, bounded_grammar, dtype):
    compiled = compiler.compile(bounded_grammar)
    processor = GrammarLogitsProcessor(compiled)
    width = vocab.vocab_size + 100  # padded model vocabulary
    torch.manual_seed(0)
    scores = torch.randn(2, width).to(dtype)
    before = scores.clone()
    prompt = torch.zeros(2, 5, dtype=torch.long)
    out = processor(prompt, scores)
    assert out is scores and out.dtype == dtype

    reference = Matcher(compiled)
    allowed = torch.zeros(width, dtype=torch.bool)
    allowed[reference.allowed_token_ids()] = True
    assert 0 < int(allowed.sum()) < vocab.vocab_size
    for row in range(2):
        assert torch.equal(scores[row][allowed], before[row][allowed])
        assert torch.isneginf(scores[row][~allowed]).all()
        assert torch.isneginf(scores[row][vocab.vocab_size :]).all()

    # A second step: row 0 takes an allowed token, row 1 another; masks follow each row.
    first = reference.allowed_token_ids()
    step = torch.cat([prompt, torch.tensor([[first[0]], [first[-1]]])], dim=1)
    scores = torch.zeros(2, width, dtype=dtype)
    processor(step, scores)
    for row, token in enumerate((first[0], first[-1])):
        m = Matcher(compiled)
        assert m.accept_token(token)
        expected = torch.zeros(width, dtype=torch.bool)
        expected[m.allowed_token_ids()] = True
        assert torch.equal(torch.isfinite(scores[row]), expected)


def test_terminated_row_gets_only_eos_and_ignores_padding(compiler, vocab, tok, yes_no):
    processor = GrammarLogitsProcessor(compiler.compile(yes_no))
    assert processor.eos_token_id == vocab.stop_token_ids[0] == tok.eos_token_id
    (no,) = tok.encode("no", add_special_tokens=False)
    other_stop = vocab.stop_token_ids[-1]
    assert other_stop != processor.eos_token_id
    ids = torch.zeros(1, 3, dtype=torch.long)
    width = vocab.vocab_size
    for token in (no, other_stop, tok.pad_token_id or 0, 17):
        processor(ids, torch.zeros(1, width))
        ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    scores = processor(ids, torch.zeros(1, width))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [processor.eos_token_id]
    assert processor.matchers[0].is_terminated()


def test_reset_and_reuse(model, tok, compiler, yes_no):
    processor = GrammarLogitsProcessor(compiler.compile(yes_no))
    first = _generate(model, tok, processor, ["Is it raining?"], max_new_tokens=8)
    with pytest.raises(MatcherError, match=r"reset\(\)"):
        _generate(model, tok, processor, ["Is it?"], max_new_tokens=8)
    processor.reset()
    assert processor.call_times_s == []
    second = _generate(model, tok, processor, ["Is it raining?"], max_new_tokens=8)
    assert torch.equal(first, second)  # greedy: the same output again
    _check_row(tok, yes_no, second[0].tolist(), must_end=True)
    processor.reset()  # a different number of rows after reset is fine
    new = _generate(model, tok, processor, ["Is it?", "Really?"], max_new_tokens=8)
    for row in new:
        _check_row(tok, yes_no, row.tolist(), must_end=True)


def test_beam_search_is_refused(model, tok, compiler, json_grammar):
    processor = GrammarLogitsProcessor(compiler.compile(json_grammar))
    with pytest.raises(MatcherError, match="does not support beam search"):
        _generate(model, tok, processor, ["Weather:"], num_beams=3, max_new_tokens=30)


def test_rejected_token_names_the_row(compiler, tok, yes_no):
    processor = GrammarLogitsProcessor(compiler.compile(yes_no))
    ids = torch.zeros(2, 4, dtype=torch.long)
    processor(ids, torch.zeros(2, len(tok)))
    (yes,) = tok.encode("yes", add_special_tokens=False)
    (maybe,) = tok.encode(" maybe", add_special_tokens=False)
    step = torch.cat([ids, torch.tensor([[yes], [maybe]])], dim=1)
    with pytest.raises(MatcherError, match=rf"row 1: the grammar rejects token {maybe} \(b' maybe'"):
        processor(step, torch.zeros(2, len(tok)))
    processor.reset()
    processor(ids, torch.zeros(2, len(tok)))
    with pytest.raises(MatcherError, match=r"row 0: token 999999 cannot be accepted"):
        processor(torch.cat([ids, torch.tensor([[999999], [yes]])], dim=1), torch.zeros(2, len(tok)))


def test_argument_errors(compiler, vocab, yes_no, tok):
    compiled = compiler.compile(yes_no)
    with pytest.raises(TypeError, match="CompiledGrammar"):
        GrammarLogitsProcessor(yes_no)
    with pytest.raises(TypeError, match=r"compiled\[1\]"):
        GrammarLogitsProcessor([compiled, yes_no])
    with pytest.raises(ValueError, match="at least one"):
        GrammarLogitsProcessor([])
    with pytest.raises(ValueError, match="batch_size"):
        GrammarLogitsProcessor(compiled, batch_size=0)
    with pytest.raises(ValueError, match="do not fit 2 grammars"):
        GrammarLogitsProcessor([compiled, compiled], batch_size=3)
    with pytest.raises(ValueError, match="eos_token_id"):
        GrammarLogitsProcessor(compiled, eos_token_id=vocab.vocab_size)
    padded = Compiler(Vocabulary.from_huggingface(tok, vocab_size=vocab.vocab_size + 7)).compile(yes_no)
    with pytest.raises(ValueError, match="different vocabulary sizes"):
        GrammarLogitsProcessor([compiled, padded])

    three = GrammarLogitsProcessor([compiled] * 3)
    with pytest.raises(MatcherError, match="4 rows do not fit 3 grammars"):
        three(torch.zeros(4, 2, dtype=torch.long), torch.zeros(4, vocab.vocab_size))
    fixed = GrammarLogitsProcessor(compiled, batch_size=2)
    assert len(fixed.matchers) == 2
    with pytest.raises(MatcherError, match="expected 2 rows"):
        fixed(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, vocab.vocab_size))
    with pytest.raises(MatcherError, match="same rows"):
        fixed(torch.zeros(2, 2, dtype=torch.long), torch.zeros(3, vocab.vocab_size))


def _tiny(grammar: str, n_tokens: int = 40, stop: int = 31) -> Any:
    tokens = [f"t{i}" for i in range(n_tokens)]
    tokens[:4] = ["y", "es", "no", "x"]
    tokens[stop] = "</s>"
    vocab = Vocabulary(tokens, stop_token_ids=[stop])
    return Compiler(vocab).compile(Grammar.from_ebnf(grammar))


def test_forced_eos_in_bit_31_and_failed_state():
    processor = GrammarLogitsProcessor(_tiny('root ::= "no"'))  # EOS is id 31: the sign bit
    ids = torch.zeros(1, 2, dtype=torch.long)
    for token in (2, 31, 0):
        processor(ids, torch.zeros(1, 64))
        ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    scores = processor(ids, torch.zeros(1, 64, dtype=torch.bfloat16))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [31]

    processor.reset()
    processor(ids[:, :2], torch.zeros(1, 64))
    with pytest.raises(MatcherError, match="row 0: the grammar rejects token 3"):
        processor(torch.tensor([[0, 0, 3]]), torch.zeros(1, 64))
    with pytest.raises(MatcherError, match=r"earlier call failed.*reset\(\)"):
        processor(torch.tensor([[0, 0, 3, 3]]), torch.zeros(1, 64))
    processor.reset()
    assert torch.isfinite(processor(ids[:, :2], torch.zeros(1, 64))[0]).nonzero().flatten().tolist() == [2]


def test_row_no_token_can_continue():
    processor = GrammarLogitsProcessor(_tiny('root ::= "zz"'))
    with pytest.raises(MatcherError, match="row 0: no token of the vocabulary can continue"):
        processor(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 40))


def test_rows_reordered_are_refused():
    processor = GrammarLogitsProcessor(_tiny('root ::= ("y" | "no") "es"* "x"'))
    processor(torch.zeros(2, 1, dtype=torch.long), torch.zeros(2, 40))
    processor(torch.tensor([[0, 0], [0, 2]]), torch.zeros(2, 40))
    with pytest.raises(MatcherError, match=r"row 0's earlier tokens changed.*beam search"):
        processor(torch.tensor([[0, 2, 1], [0, 2, 1]]), torch.zeros(2, 40))


def test_jump_forward_writes_forced_text_in_the_fewest_tokens(model, tok, compiler, bounded_grammar):
    compiled = compiler.compile(bounded_grammar)
    plain = GrammarLogitsProcessor(compiled)
    jumping = GrammarLogitsProcessor(compiled, jump_forward=True)
    scores = torch.zeros(1, compiled.vocabulary.vocab_size)
    prompt = _encode(tok, ["The weather in Paris:"])["input_ids"]
    out = jumping(prompt, scores.clone())
    only = torch.isfinite(out[0]).nonzero().flatten().tolist()
    assert len(only) == 1  # the forced '{"city": "' opens with its longest single token
    forced = b'{"city": "'
    spelled = compiled.vocabulary.token_bytes[only[0]]
    assert forced.startswith(spelled)
    assert not any(
        forced.startswith(b) and len(b) > len(spelled) for b in compiled.vocabulary.token_bytes if b
    )
    # without jump_forward the model may start the same text with shorter tokens too
    assert len(torch.isfinite(plain(prompt, scores.clone())[0]).nonzero()) > 1
    # and a whole generation with it stays inside the grammar
    new = _generate(model, tok, GrammarLogitsProcessor(compiled, jump_forward=True), ["Paris:"])
    assert _check_row(tok, bounded_grammar, new[0].tolist(), must_end=True).startswith('{"city": "')


def test_prefix_tokens_are_accepted_before_generation() -> None:
    # A generation prompt that opens the grammar's text (a think block): the matchers start after it.
    vocab = Vocabulary(["<t>", "x", "</t>", "ok", "</s>"], stop_token_ids=[4])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "<t>" "x"* "</t>" "ok"'))
    processor = GrammarLogitsProcessor(compiled, prefix_token_ids=[0, 1])
    scores = processor(torch.tensor([[3, 0, 1]]), torch.zeros(1, 5))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [1, 2]  # inside the block
    assert processor.matchers[0].num_accepted_steps == 2  # the prefix, accepted once
    processor.reset()
    scores = processor(torch.tensor([[0, 1]]), torch.zeros(1, 5))
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [1, 2]
    with pytest.raises(MatcherError, match="rejects prefix token 0"):
        GrammarLogitsProcessor(compiled, prefix_token_ids=[3], batch_size=1)


def test_each_grammar_may_have_its_own_prefix_tokens() -> None:
    # Two prompts (one grammar each, two copies each): the first opened the block, the second did not.
    vocab = Vocabulary(["<t>", "x", "</t>", "ok", "</s>"], stop_token_ids=[4])
    compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "<t>" "x"* "</t>" "ok"'))
    processor = GrammarLogitsProcessor([compiled, compiled], prefix_token_ids=[[0], []])
    scores = processor(torch.tensor([[3, 0]] * 4), torch.zeros(4, 5))
    allowed = [torch.isfinite(row).nonzero().flatten().tolist() for row in scores]
    assert allowed == [[1, 2], [1, 2], [0], [0]]
    assert [m.num_accepted_steps for m in processor.matchers] == [1, 1, 0, 0]
    processor.reset()
    assert [m.num_accepted_steps for m in processor.matchers] == [1, 1, 0, 0]
    with pytest.raises(ValueError, match="do not fit"):
        GrammarLogitsProcessor(compiled, prefix_token_ids=[[0], []])
    with pytest.raises(MatcherError, match="row 1: the grammar rejects prefix token 0"):
        GrammarLogitsProcessor([compiled, compiled], prefix_token_ids=[[0], [3]], batch_size=2)
