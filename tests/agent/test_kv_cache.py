"""Reusing the key/value cache across an agent run's turns (``agent.kv_cache``): the cache keeps
exactly the prompt's shared prefix, greedy runs with and without reuse are identical, and each
turn encodes only what the turn before did not."""

from __future__ import annotations

import copy
from typing import Any, List, Literal

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgrammar import Agent, ToolRegistry  # noqa: E402
from agentgrammar.agent import AgentError  # noqa: E402
from agentgrammar.agent.kv_cache import (  # noqa: E402
    ConversationCache,
    common_prefix_length,
    reusable_length,
    supports_cache_reuse,
)
from tests.agent.test_agent_loop import ANSWER, CALL_OSLO  # noqa: E402
from tests.hf_models import tiny_llama_config  # noqa: E402
from tests.kit import CANONICAL_MESSAGES, kit_case, kit_template, kit_tokenizer, token_ids  # noqa: E402
from tests.scripted_model import scripted_model  # noqa: E402


def test_prefix_lengths() -> None:
    assert common_prefix_length([], [1]) == 0
    assert common_prefix_length([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix_length([1, 2, 3], [1, 5, 3]) == 1
    assert reusable_length([1, 2, 3], [1, 2, 3, 4]) == 3
    assert reusable_length([1, 2, 3, 4], [1, 2, 3]) == 2  # one token is left to encode
    assert reusable_length([7], [1, 2]) == 0


def test_the_cache_is_cropped_to_the_shared_prefix(tok) -> None:
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(tiny_llama_config(tok)).eval()
    ids = tok.encode("The cat sat on the mat and looked around.")
    kv = ConversationCache(model)
    cache, reused = kv.prepare(ids)
    assert reused == 0 and cache.get_seq_length() == 0
    out = model.generate(
        input_ids=torch.tensor([ids]), max_new_tokens=5, do_sample=False, pad_token_id=0, **{kv.kwarg: cache}
    )
    sequence = out[0].tolist()
    kv.update(sequence)
    assert kv.ids == sequence[:-1]  # the last token sampled was never encoded
    # a prompt that goes on from the whole sequence keeps all of it
    longer = sequence + tok.encode(" Then", add_special_tokens=False)
    cache, reused = kv.prepare(longer)
    assert reused == len(sequence) - 1 and cache.get_seq_length() == reused
    # one that parts from it after 4 tokens keeps 4
    other = ids[:4] + tok.encode(" dog", add_special_tokens=False)
    cache, reused = kv.prepare(other)
    assert reused == 4 and cache.get_seq_length() == 4 and kv.ids == other[:4]
    # the cropped cache gives the logits of a fresh forward pass
    fresh = model(torch.tensor([other])).logits[0, -1]
    cached = model(torch.tensor([other[4:]]), **{kv.kwarg: cache}).logits[0, -1]
    assert torch.allclose(fresh, cached, atol=1e-5)
    kv.clear()
    assert kv.ids == [] and kv.prepare(ids)[1] == 0


def test_the_option(tiny_llama, tok, registry, compiler) -> None:
    assert supports_cache_reuse(tiny_llama) and not supports_cache_reuse(object())
    assert Agent(tiny_llama, tok, registry, compiler=compiler).reuse_cache
    assert not Agent(tiny_llama, tok, registry, compiler=compiler, reuse_cache=False).reuse_cache

    class NoCache:  # generate() of its own, no transformers cache
        config = None

        def generate(self, **kwargs: Any) -> Any:  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(AgentError, match="reuse_cache=True"):
        Agent(NoCache(), tok, registry, compiler=compiler, reuse_cache=True)
    assert not Agent(NoCache(), tok, registry, compiler=compiler).reuse_cache


def _summary(run: Any) -> List[Any]:
    return [(s.text, s.n_prompt_tokens, s.n_new_tokens, s.error) for s in run.steps]


def test_a_scripted_run_is_the_same_with_reuse_and_encodes_only_the_new_tokens(
    scripted, tok, registry, compiler
) -> None:
    runs, models = {}, {}
    for reuse in (False, True):
        models[reuse] = model = scripted([[CALL_OSLO], [CALL_OSLO], [ANSWER]])
        agent = Agent(model, tok, registry, compiler=compiler, reuse_cache=reuse)
        runs[reuse] = agent.run("Weather in Oslo?", max_new_tokens=60)
    assert runs[True].response == "Sunny." and len(runs[True].steps) == 3
    assert _summary(runs[True]) == _summary(runs[False])
    assert models[True].prompts == models[False].prompts  # generate() still gets the whole prompt
    assert [s.prefill_tokens for s in runs[False].steps] == [s.n_prompt_tokens for s in runs[False].steps]
    steps = runs[True].steps
    assert steps[0].prefill_tokens == steps[0].n_prompt_tokens
    for k in (1, 2):
        # turn k encodes what follows the text the turn before encoded: the tool result and
        # the next header, plus the tokens where the plain layout writes the turn back
        # differently from how it was generated
        before = tok.encode(models[True].prompts[k - 1], add_special_tokens=False)
        now = tok.encode(models[True].prompts[k], add_special_tokens=False)
        turn = tok.encode(steps[k - 1].text, add_special_tokens=False)
        assert 0 < steps[k].prefill_tokens < steps[k].n_prompt_tokens - len(before)
        assert steps[k].prefill_tokens <= steps[k].n_prompt_tokens - len(before) - len(turn) + 8
        assert len(now) == steps[k].n_prompt_tokens


def _eager_model(tok: Any, end_token: int) -> Any:
    """A tiny random Llama over ``tok`` that leans to ``end_token`` (so its turns end where the
    grammar allows it): still random everywhere else."""

    class EagerToEnd(transformers.LlamaForCausalLM):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            out = super().forward(*args, **kwargs)
            out.logits[..., end_token] += 8.0
            return out

    torch.manual_seed(0)
    return EagerToEnd(tiny_llama_config(tok, hidden_size=32, max_positions=2048)).eval()


def _choice_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def get_weather(city: Literal["Oslo", "Paris"], days: Literal[1, 2]) -> str:
        """The weather in a city."""
        return f"18 C and sunny in {city} for {days} days"

    return registry


def _recorded_run(agent: Agent, prompt: Any, **options: Any) -> Any:
    """``agent.run(prompt, **options)``, and the ids each ``generate()`` got and returned."""
    model, seen, returned = agent.model, [], []
    generate = model.generate

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["input_ids"][0].tolist())
        out = generate(*args, **kwargs)
        returned.append(out[0].tolist())
        return out

    model.generate = recording
    try:
        return agent.run(prompt, **options), seen, returned
    finally:
        del model.generate


def test_a_random_model_under_a_real_template_runs_the_same_with_reuse() -> None:
    # Qwen3 without thinking: the generation prompt writes an empty think block (the grammar's
    # prefix tokens), and the template writes the earlier turn back without it, so reuse stops
    # where the two renders part.
    case = kit_case("qwen3-no-thinking")
    tok = kit_tokenizer(case.folder)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    model = _eager_model(tok, end)
    template = {"chat_template": kit_template(case.folder, case.variant), **case.template_kwargs}
    runs, prompts, sequences = {}, {}, {}
    for reuse in (False, True):
        agent = Agent(model, tok, _choice_registry(), template_kwargs=template, reuse_cache=reuse)
        runs[reuse], prompts[reuse], sequences[reuse] = _recorded_run(
            agent,
            copy.deepcopy(CANONICAL_MESSAGES[:2]),
            tool_choice="required",
            reasoning="disabled",
            parallel_tool_calls=False,
            max_new_tokens=48,
            max_turns=3,
        )
    assert len(runs[True].steps) >= 2, runs[True].summary()
    assert runs[True].steps[0].tool_calls, runs[True].summary()
    assert _summary(runs[True]) == _summary(runs[False])
    assert prompts[True] == prompts[False]
    empty_think = token_ids(case, "<think>\n\n</think>\n\n")
    assert prompts[True][0][-len(empty_think) :] == empty_think
    steps = runs[True].steps
    for k in range(1, len(steps)):
        # exactly the positions the cache held (the turn before's prompt and tokens but its
        # last) that the new prompt starts with
        held = sequences[True][k - 1][:-1]  # the last token sampled was never encoded
        reused = reusable_length(held, prompts[True][k])
        assert steps[k].prefill_tokens == steps[k].n_prompt_tokens - reused
        assert steps[k].prefill_tokens < steps[k].n_prompt_tokens // 2


def test_a_scripted_kit_run_with_reasoning_is_the_same_with_reuse() -> None:
    case = kit_case("qwen3")
    tok = kit_tokenizer(case.folder)
    template = {"chat_template": kit_template(case.folder, case.variant)}
    stops = [tok.convert_tokens_to_ids("<|im_end|>")]
    call = "<think>\nOslo, then.\n</think>\n\n" + (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 1}}\n</tool_call><|im_end|>'
    )
    answer = "<think>\nDone.\n</think>\n\nSunny.<|im_end|>"
    runs, models = {}, {}
    for reuse in (False, True):
        model = scripted_model(tok, stops).script([token_ids(case, call)] * 2 + [token_ids(case, answer)])
        agent = Agent(model, tok, _choice_registry(), template_kwargs=template, reuse_cache=reuse)
        runs[reuse] = agent.run(copy.deepcopy(CANONICAL_MESSAGES[:2]), max_new_tokens=80)
        models[reuse] = model
    assert runs[True].response == "Sunny." and len(runs[True].steps) == 3
    assert _summary(runs[True]) == _summary(runs[False])
    assert models[True].prompts == models[False].prompts
    for k in (1, 2):
        held = models[True].prompts[k - 1] + models[True].outputs[k - 1][:-1]
        expected = len(models[True].prompts[k]) - reusable_length(held, models[True].prompts[k])
        assert runs[True].steps[k].prefill_tokens == expected < runs[True].steps[k].n_prompt_tokens // 2
